//! The CUDA backend against the CPU backend (feature `cuda`): every metric, f32 and f64,
//! pairwise blocks (streamed in several row blocks) and nearest / second-nearest centres.
//! Without a device the tests say they skipped (stderr) and check the clear error instead.
#![cfg(feature = "cuda")]

use clustr::backend::cuda::{unavailable, CudaBackend};
use clustr::{Backend, BackendChoice, CpuBackend, MetricKind, Scalar};
use ndarray::Array2;
use rand::{rngs::StdRng, Rng, SeedableRng};

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
    let mut rng = StdRng::seed_from_u64(seed);
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
