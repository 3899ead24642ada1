//! CUDA backend against the CPU backend in the same run (issue #8; run by
//! scripts/gpu-check.sh on a machine with an NVIDIA GPU). Prints a markdown table:
//!
//! - cuBLAS SGEMM throughput (8192³), the yardstick;
//! - the squared-Euclidean distance matrix, n = 50,000, d = 64, f32 (`--n`): seconds, GB/s
//!   written to host memory and effective GFLOP/s (2·n²·d), CPU (all cores) and CUDA, with the
//!   largest relative difference; then the device's part alone (cuBLAS GEMM and the epilogue,
//!   the output left in device memory) against the SGEMM yardstick;
//! - nearest-centre assignment, 1,000,000 × 32 f32, k = 100;
//! - FasterPAM, n = 20,000 and 50,000 (`--pam-n`), d = 16, k = 100, end to end from the
//!   points (`KMedoids::fit_points`): on the CPU the distance matrix then the swap phase; on
//!   CUDA the dissimilarities and the candidate scans on the device;
//! - RFF-KPKM on 1,000,000 × 16 points (`--rff-n`), D = 256, k = 10, 50 iterations.
//!
//! `--cpu-only` runs the CPU half of the FasterPAM rows alone (on a machine without a GPU,
//! for the acceptance's 2-core baseline on the same data). `--write-ptx FILE [--arch 90]`
//! compiles the kernels with NVRTC and writes the PTX instead (for machines without libnvrtc,
//! through CLUSTR_CUDA_PTX).
//!
//!     cargo run --release --features cuda --example cuda_bench [-- --n 50000 --pam-n 20000,50000]
//!
//! Prints its provenance header first. `--quick` shrinks every size (n = 2,000, FasterPAM
//! n = 1,000, RFF n = 10,000); CI runs `--quick --cpu-only`, as it has no GPU.

use clustr::backend::cuda::{compile_kernels, CudaBackend};
use clustr::kernel::{RffKpkm, Schedule};
use clustr::kmedoids::KMedoids;
use clustr::rng::SeededRng;
use clustr::{AnyBackend, Backend, Clustering, CpuBackend, Fit, MetricKind};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use std::time::Instant;

#[path = "study.rs"]
mod study;
use study::arg;

fn blobs(n: usize, d: usize, k: usize, seed: u64) -> Array2<f32> {
    let mut rng = SeededRng::seed_from_u64(seed);
    let centres: Vec<Vec<f32>> = (0..k)
        .map(|_| (0..d).map(|_| rng.random_range(-10.0..10.0)).collect())
        .collect();
    Array2::from_shape_fn((n, d), |(i, j)| {
        centres[i % k][j] + rng.random_range(-1.0f32..1.0)
    })
}

/// FasterPAM (k = 100) on `x` end to end on `backend` (`KMedoids::fit_points`: on the CPU
/// the distance matrix then the swaps; on CUDA the dissimilarities on the device, no n × n
/// matrix on the host).
struct PamRun {
    seconds: f64,
    loss: f64,
    medoids: Vec<usize>,
    swaps: usize,
}

fn fasterpam_end_to_end(x: &Array2<f32>, backend: &AnyBackend) -> clustr::Result<PamRun> {
    let t = Instant::now();
    let m = KMedoids::fasterpam(100)
        .seed(0)
        .backend(backend.clone())
        .fit_points(x.view(), &MetricKind::Euclidean)?;
    Ok(PamRun {
        seconds: t.elapsed().as_secs_f64(),
        loss: m.loss,
        medoids: m.medoids,
        swaps: m.n_swaps,
    })
}

fn pam_sizes() -> Vec<usize> {
    arg("--pam-n")
        .unwrap_or_else(|| {
            if study::quick() {
                "1000".into()
            } else {
                "20000,50000".into()
            }
        })
        .split(',')
        .map(|v| v.parse().expect("a number"))
        .collect()
}

fn main() -> clustr::Result<()> {
    study::begin();
    if let Some(path) = arg("--write-ptx") {
        let arch: i32 = arg("--arch").map_or(90, |a| a.parse().expect("e.g. 90"));
        let ptx = compile_kernels(arch / 10, arch % 10)?;
        std::fs::write(&path, ptx.to_src()).map_err(|e| clustr::Error::io(&path, e))?;
        eprintln!("wrote the kernels' PTX for compute_{arch} to {path}");
        return Ok(());
    }
    print!("{}", study::header(rayon::current_num_threads()));
    if study::flag("--cpu-only") {
        let threads = rayon::current_num_threads();
        println!("| FasterPAM, k = 100, d = 16, f32, CPU only | {threads} threads | swaps | loss |\n|---|---|---|---|");
        for n in pam_sizes() {
            let r = fasterpam_end_to_end(&blobs(n, 16, 100, 4), &AnyBackend::default())?;
            println!("| n = {n} | {:.2} s | {} | {:.6e} |", r.seconds, r.swaps, r.loss);
        }
        return Ok(());
    }
    let gpu = CudaBackend::new(0)?;
    let cpu = CpuBackend::default();
    let threads = rayon::current_num_threads();
    println!("# CUDA backend vs CPU backend\n");
    println!("Device: {}; CPU: {threads} threads.\n", gpu.device_name);
    println!("| what | CPU | CUDA | speed-up | notes |\n|---|---|---|---|---|");
    let gemm = gpu.sgemm_gflops(8192)?;
    println!("| cuBLAS SGEMM 8192³ | | {gemm:.0} GFLOP/s | | the yardstick |");

    let n: usize = study::value("--n", if study::quick() { 2_000 } else { 50_000 });
    let d = 64;
    let x = blobs(n, d, 100, 1);
    let mut out_cpu = Array2::<f32>::zeros((n, n));
    let t = Instant::now();
    cpu.pairwise(x.view(), x.view(), &MetricKind::SqEuclidean, out_cpu.view_mut())?;
    let t_cpu = t.elapsed().as_secs_f64();
    let mut out_gpu = Array2::<f32>::zeros((n, n));
    let t = Instant::now();
    gpu.pairwise(x.view(), x.view(), &MetricKind::SqEuclidean, out_gpu.view_mut())?;
    let t_gpu = t.elapsed().as_secs_f64();
    let max_rel = out_cpu
        .iter()
        .zip(&out_gpu)
        .map(|(a, b)| ((a - b).abs() / a.abs().max(1e-3)) as f64)
        .fold(0.0, f64::max);
    drop(out_cpu);
    let bytes = (n * n * 4) as f64;
    let flops = 2.0 * (n * n * d) as f64;
    println!(
        "| sq. Euclidean matrix {n} × {n}, d = {d}, f32 | {t_cpu:.2} s ({:.1} GB/s, {:.0} GFLOP/s) | {t_gpu:.2} s ({:.1} GB/s, {:.0} GFLOP/s) | {:.1}× | max rel. diff {max_rel:.1e}; {:.0} % of SGEMM |",
        bytes / t_cpu / 1e9,
        flops / t_cpu / 1e9,
        bytes / t_gpu / 1e9,
        flops / t_gpu / 1e9,
        t_cpu / t_gpu,
        100.0 * flops / t_gpu / 1e9 / gemm
    );
    drop(out_gpu);
    let t_dev = gpu.sqeuclidean_device_seconds(x.view(), 3)?;
    println!(
        "| the same, on the device only (GEMM + epilogue, output left in device memory) | | {t_dev:.3} s ({:.0} GFLOP/s) | | **{:.0} % of SGEMM** |",
        flops / t_dev / 1e9,
        100.0 * flops / t_dev / 1e9 / gemm
    );

    let pts = blobs(1_000_000, 32, 100, 2);
    let centres = blobs(100, 32, 100, 3);
    let t = Instant::now();
    let a = cpu.nearest(pts.view(), centres.view(), &MetricKind::SqEuclidean)?;
    let t_cpu = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let b = gpu.nearest(pts.view(), centres.view(), &MetricKind::SqEuclidean)?;
    let t_gpu = t.elapsed().as_secs_f64();
    let same = a.iter().zip(&b).filter(|(p, q)| p.index == q.index).count();
    println!(
        "| nearest centre, 1,000,000 × 32, k = 100, f32 | {t_cpu:.3} s | {t_gpu:.3} s | {:.1}× | {same} of 1,000,000 labels equal |",
        t_cpu / t_gpu
    );

    for n in pam_sizes() {
        let x = blobs(n, 16, 100, 4);
        let c = fasterpam_end_to_end(&x, &AnyBackend::Cpu(cpu))?;
        let g = fasterpam_end_to_end(&x, &AnyBackend::Cuda(gpu.clone()))?;
        println!(
            "| FasterPAM n = {n}, d = 16, k = 100, f32, end to end | {:.2} s | {:.2} s | {:.1}× | {} swaps vs {}; medoids {}; loss {:.6e} vs {:.6e} |",
            c.seconds,
            g.seconds,
            c.seconds / g.seconds,
            c.swaps,
            g.swaps,
            if c.medoids == g.medoids { "identical" } else { "DIFFER" },
            c.loss,
            g.loss
        );
    }

    let rff_n: usize = study::value("--rff-n", if study::quick() { 10_000 } else { 1_000_000 });
    let x = blobs(rff_n, 16, 10, 5);
    // One run, as in the CPU-vs-GPU comparison this bench was written for.
    let params = RffKpkm::new(10)
        .n_features(256)
        .n_init(1)
        .seed(0)
        .schedule(Schedule {
            max_iter: 50,
            ..Schedule::default()
        });
    let t = Instant::now();
    let c = params.clone().fit(&x.view())?;
    let t_cpu = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let g = params.backend(AnyBackend::Cuda(gpu)).fit(&x.view())?;
    let t_gpu = t.elapsed().as_secs_f64();
    let same = c.labels().iter().zip(g.labels()).filter(|(p, q)| p == q).count();
    println!(
        "| RFF-KPKM {rff_n} × 16, D = 256, k = 10, 50 iterations, f32 | {t_cpu:.2} s | {t_gpu:.2} s | {:.1}× | {same} of {rff_n} labels equal; objective {:.6e} vs {:.6e} |",
        t_cpu / t_gpu,
        c.loss().unwrap_or(f64::NAN),
        g.loss().unwrap_or(f64::NAN)
    );
    Ok(())
}
