//! The CUDA backend against the CPU backend (feature `cuda`): every metric, f32 and f64,
//! pairwise blocks (streamed in several row blocks) and nearest / second-nearest centres.
//! Without a device the tests say they skipped (stderr) and check the clear error instead.
#![cfg(feature = "cuda")]

use clustr::backend::cuda::{unavailable, CudaBackend};
use clustr::rng::SeededRng;
use clustr::{Backend, BackendChoice, CpuBackend, MetricKind, Scalar};
use ndarray::Array2;
use rand::{Rng, SeedableRng};

fn device() -> Option<CudaBackend> {
    match unavailable() {
        Some(why) => {
            eprintln!("SKIPPED (no CUDA device: {why})");
            assert!(BackendChoice::Cuda
                .resolve()
                .unwrap_err()
                .to_string()
                .contains(&why));
            assert_eq!(BackendChoice::Auto.resolve().unwrap().name(), "cpu");
            None
        }
        None => Some(CudaBackend::new(0).expect("a device is present")),
    }
}

const METRICS: [MetricKind; 7] = [
    MetricKind::SqEuclidean,
    MetricKind::Euclidean,
    MetricKind::Manhattan,
    MetricKind::Cosine,
    MetricKind::Minkowski(3.0),
    MetricKind::Minkowski(f64::INFINITY),
    MetricKind::Haversine,
];

fn points<F: Scalar>(n: usize, d: usize, seed: u64) -> Array2<F> {
    let mut rng = SeededRng::seed_from_u64(seed);
    Array2::from_shape_fn((n, d), |(_, j)| {
        let v: f64 = if d == 2 {
            // (latitude, longitude) in degrees for haversine; fine for the others too.
            if j == 0 {
                rng.random_range(-80.0..80.0)
            } else {
                rng.random_range(-180.0..180.0)
            }
        } else {
            rng.random_range(-3.0..3.0)
        };
        F::from_f64_lossy(v)
    })
}

fn check<F: Scalar>(gpu: &CudaBackend, tol: f64) {
    for metric in METRICS {
        let d = if metric == MetricKind::Haversine { 2 } else { 37 };
        let x = points::<F>(301, d, 1);
        let y = points::<F>(203, d, 2);
        let mut a = Array2::<F>::zeros((301, 203));
        let mut b = a.clone();
        CpuBackend::default()
            .pairwise(x.view(), y.view(), &metric, a.view_mut())
            .unwrap();
        let mut small = gpu.clone();
        small.block_bytes = 50 * 203 * std::mem::size_of::<F>(); // several row blocks
        small.pairwise(x.view(), y.view(), &metric, b.view_mut()).unwrap();
        for (p, q) in a.iter().zip(&b) {
            let (p, q) = (p.to_f64_exact(), q.to_f64_exact());
            assert!(
                (p - q).abs() <= tol * p.abs().max(1e-3),
                "{metric} {}: {p} vs {q}",
                F::DTYPE
            );
        }
        let cpu = CpuBackend::default()
            .nearest_two(x.view(), y.slice(ndarray::s![..9, ..]), &metric)
            .unwrap();
        let cuda = gpu
            .nearest_two(x.view(), y.slice(ndarray::s![..9, ..]), &metric)
            .unwrap();
        for (p, q) in cpu.iter().zip(&cuda) {
            assert_eq!(p.first.index, q.first.index, "{metric}");
            assert_eq!(p.second.map(|s| s.index), q.second.map(|s| s.index), "{metric}");
        }
    }
}

#[test]
fn cuda_equals_cpu_in_f64() {
    if let Some(gpu) = device() {
        check::<f64>(&gpu, 1e-12);
        // Column-major points give the same distances (GEMM form included).
        let x = points::<f64>(57, 9, 3);
        let fortran = x.t().as_standard_layout().into_owned().reversed_axes();
        assert!(!fortran.is_standard_layout());
        for metric in [MetricKind::SqEuclidean, MetricKind::Manhattan] {
            let (mut a, mut b) = (Array2::<f64>::zeros((57, 57)), Array2::<f64>::zeros((57, 57)));
            gpu.pairwise(x.view(), x.view(), &metric, a.view_mut()).unwrap();
            gpu.pairwise(fortran.view(), fortran.view(), &metric, b.view_mut())
                .unwrap();
            assert_eq!(a, b, "{metric}");
        }
    }
}

#[test]
fn cuda_equals_cpu_in_f32() {
    if let Some(gpu) = device() {
        check::<f32>(&gpu, 1e-5);
    }
}

/// k-means (Lloyd) and mini-batch k-means with their nearest-centre searches on the GPU: the
/// same labels, iterations and centres as on the CPU (f64; well-separated blobs, so no
/// distance ties are at stake).
#[test]
fn kmeans_on_cuda_equals_cpu() {
    use clustr::kmeans::{KMeans, MiniBatchKMeans};
    use clustr::{AnyBackend, Fit};
    let Some(gpu) = device() else { return };
    let x = clustr::datasets::Blobs::new(20_000, 8)
        .n_features(16)
        .seed(3)
        .generate()
        .unwrap()
        .data;
    let cpu = KMeans::new(8).seed(1).fit(&x.view()).unwrap();
    let cuda = KMeans::new(8)
        .seed(1)
        .backend(AnyBackend::Cuda(gpu.clone()))
        .fit(&x.view())
        .unwrap();
    assert_eq!(cuda.labels, cpu.labels);
    assert_eq!(cuda.n_iter, cpu.n_iter);
    assert!((cuda.inertia - cpu.inertia).abs() <= 1e-12 * cpu.inertia);
    let cpu = MiniBatchKMeans::new(8).seed(1).fit(&x.view()).unwrap();
    let cuda = MiniBatchKMeans::new(8)
        .seed(1)
        .backend(AnyBackend::Cuda(gpu))
        .fit(&x.view())
        .unwrap();
    assert_eq!(cuda.labels, cpu.labels);
    assert_eq!(cuda.n_steps, cpu.n_steps);
}

/// FastPAM1, FastPAM2 and FasterPAM with their candidate scans on the GPU (cuda/
/// swap_gains.cu), the matrix resident on the device or streamed by candidate rows: the same
/// medoids, passes and swaps as on the CPU, f32 and f64; a non-dense or integer dissimilarity
/// is a clear error.
#[test]
fn kmedoids_swaps_on_cuda_equal_cpu() {
    use clustr::kmedoids::{KMedoids, KMedoidsModel};
    use clustr::{AnyBackend, DenseMatrix, Fit, LowerTriangle};
    let Some(gpu) = device() else { return };
    fn compare<F: Scalar + clustr::kmedoids::KValue<Loss = f64>>(gpu: &CudaBackend) {
        let x = clustr::datasets::Blobs::new(3000, 12)
            .n_features(8)
            .seed(5)
            .generate()
            .unwrap()
            .data
            .mapv(F::from_f64_lossy);
        let d = DenseMatrix::from_points(x.view(), &MetricKind::Euclidean, &CpuBackend::default()).unwrap();
        let mut streamed = gpu.clone();
        streamed.resident_bytes = 0;
        for params in [
            KMedoids::fastpam1(12),
            KMedoids::fastpam2(12),
            KMedoids::fasterpam(12),
            KMedoids::fasterpam(12).shuffle(true),
        ] {
            let cpu: KMedoidsModel<f64> = params.clone().seed(2).fit(&d).unwrap();
            for g in [gpu.clone(), streamed.clone()] {
                let resident = g.resident_bytes > 0;
                let cuda = params
                    .clone()
                    .seed(2)
                    .backend(AnyBackend::Cuda(g))
                    .fit(&d)
                    .unwrap();
                let what = format!("{} {} resident {resident}", params.name(), F::DTYPE);
                assert_eq!(cuda.medoids, cpu.medoids, "{what}");
                assert_eq!((cuda.n_iter, cuda.n_swaps), (cpu.n_iter, cpu.n_swaps), "{what}");
                assert_eq!(cuda.labels, cpu.labels, "{what}");
                assert!((cuda.loss - cpu.loss).abs() <= 1e-9 * cpu.loss, "{what}");
            }
        }
    }
    compare::<f64>(&gpu);
    compare::<f32>(&gpu);
    let tri = LowerTriangle::new(4, vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let err = KMedoids::fasterpam(2)
        .backend(AnyBackend::Cuda(gpu))
        .fit(&tri)
        .unwrap_err();
    assert!(err.to_string().contains("dense dissimilarity matrix"), "{err}");
}

/// The random Fourier feature map on the GPU equals the CPU's (f64 within 1e-12, f32 within
/// 1e-5); RFF-KPKM and power k-means with their iterations on the GPU take the CPU's path:
/// the same labels and iterations, objective within 1e-9 (f64, separated blobs).
#[test]
fn rff_and_power_kmeans_on_cuda_equal_cpu() {
    use clustr::kernel::{PowerKMeans, RandomFourierFeatures, RffKpkm};
    use clustr::{AnyBackend, Clustering, Fit};
    let Some(gpu) = device() else { return };
    let cuda = AnyBackend::Cuda(gpu);
    let x = clustr::datasets::Blobs::new(20_000, 6)
        .n_features(8)
        .seed(7)
        .generate()
        .unwrap()
        .data;
    let rff = RandomFourierFeatures::new(8, 300, 2.0, 1).unwrap();
    let max_diff =
        |a: &Array2<f64>, b: &Array2<f64>| a.iter().zip(b).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
    let on_cpu = rff.transform(x.view()).unwrap();
    let on_gpu = rff.transform_on(x.view(), &cuda).unwrap();
    assert!(
        max_diff(&on_cpu, &on_gpu) <= 1e-12,
        "f64 map: {}",
        max_diff(&on_cpu, &on_gpu)
    );
    let x32 = x.mapv(|v| v as f32);
    let (a, b) = (
        rff.transform(x32.view()).unwrap().mapv(f64::from),
        rff.transform_on(x32.view(), &cuda).unwrap().mapv(f64::from),
    );
    assert!(max_diff(&a, &b) <= 1e-5, "f32 map: {}", max_diff(&a, &b));

    let cpu = RffKpkm::new(6).n_features(200).seed(3).fit(&x.view()).unwrap();
    let gpu = RffKpkm::new(6)
        .n_features(200)
        .seed(3)
        .backend(cuda.clone())
        .fit(&x.view())
        .unwrap();
    assert_eq!(gpu.labels(), cpu.labels());
    assert_eq!(gpu.n_iter(), cpu.n_iter());
    let (p, q) = (cpu.loss().unwrap(), gpu.loss().unwrap());
    assert!((p - q).abs() <= 1e-9 * p.abs(), "RFF-KPKM objective {p} vs {q}");

    let cpu = PowerKMeans::new(6).seed(3).fit(&x.view()).unwrap();
    let gpu = PowerKMeans::new(6).seed(3).backend(cuda).fit(&x.view()).unwrap();
    assert_eq!(gpu.fit.labels, cpu.fit.labels);
    assert_eq!(gpu.fit.n_iter, cpu.fit.n_iter);
    let (p, q) = (cpu.fit.objective, gpu.fit.objective);
    assert!(
        (p - q).abs() <= 1e-9 * p.abs(),
        "power k-means objective {p} vs {q}"
    );
}

/// FasterCLARA on points with the nearest-medoid assignment on the GPU: the same medoids and
/// labels as on the CPU, loss within 1e-9 (f64).
#[test]
fn clara_on_cuda_equals_cpu() {
    use clustr::kmedoids::Clara;
    use clustr::AnyBackend;
    let Some(gpu) = device() else { return };
    let x = clustr::datasets::Blobs::new(30_000, 10)
        .n_features(6)
        .seed(9)
        .generate()
        .unwrap()
        .data;
    for metric in [MetricKind::Euclidean, MetricKind::Manhattan] {
        let cpu = Clara::fasterclara(10)
            .seed(4)
            .fit_points(x.view(), &metric)
            .unwrap();
        let cuda = Clara::fasterclara(10)
            .seed(4)
            .backend(AnyBackend::Cuda(gpu.clone()))
            .fit_points(x.view(), &metric)
            .unwrap();
        assert_eq!(cuda.medoids, cpu.medoids, "{metric}");
        assert_eq!(cuda.labels, cpu.labels, "{metric}");
        assert!((cuda.loss - cpu.loss).abs() <= 1e-9 * cpu.loss, "{metric}");
    }
}

/// `KMedoids::fit_points` on CUDA: FasterPAM and FastPAM2 from the points, the dissimilarities
/// computed on the device (the matrix resident, or each batch's rows computed with the batch)
/// and no n × n matrix on the host: the same medoids as the CPU's matrix, loss within 1e-6
/// (f32) / 1e-12 (f64); Minkowski(3) takes the matrix path.
#[test]
fn kmedoids_from_points_on_cuda_equal_cpu() {
    use clustr::kmedoids::KMedoids;
    use clustr::AnyBackend;
    let Some(gpu) = device() else { return };
    fn compare<F: Scalar + clustr::kmedoids::KValue<Loss = f64>>(gpu: &CudaBackend, tol: f64) {
        let x = clustr::datasets::Blobs::new(4000, 10)
            .n_features(6)
            .seed(8)
            .generate()
            .unwrap()
            .data
            .mapv(F::from_f64_lossy);
        let mut streamed = gpu.clone();
        streamed.resident_bytes = 0;
        for metric in [
            MetricKind::Euclidean,
            MetricKind::Manhattan,
            MetricKind::Cosine,
            MetricKind::Minkowski(3.0),
        ] {
            for params in [KMedoids::fasterpam(10), KMedoids::fastpam2(10)] {
                let cpu = params.clone().seed(6).fit_points(x.view(), &metric).unwrap();
                for g in [gpu.clone(), streamed.clone()] {
                    let what = format!(
                        "{} {metric} {} resident {}",
                        params.name(),
                        F::DTYPE,
                        g.resident_bytes > 0
                    );
                    let cuda = params
                        .clone()
                        .seed(6)
                        .backend(AnyBackend::Cuda(g))
                        .fit_points(x.view(), &metric)
                        .unwrap();
                    assert_eq!(cuda.medoids, cpu.medoids, "{what}");
                    assert!((cuda.loss - cpu.loss).abs() <= tol * cpu.loss, "{what}");
                }
            }
        }
    }
    compare::<f64>(&gpu, 1e-12);
    compare::<f32>(&gpu, 1e-6);
}
