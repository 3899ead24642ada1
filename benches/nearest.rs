//! The nearest-centre kernel alone against a plain GEMM of the same shape (n × d points times
//! the d × k transposed centres, faer through `clustr::linalg::gemm_abt`), single-threaded: the
//! fraction of GEMM throughput the kernel reaches (issue 19).
//!
//!     cargo bench --bench nearest
//!
//! Each case prints `fraction of GEMM throughput` = GEMM time / kernel time after criterion's
//! own report. Shapes: n = 20,000 blobs points, d ∈ {16, 64, 256}, k ∈ {16, 256, 1024, 4096}.

use clustr::{Backend, CpuBackend, MetricKind, Scalar};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ndarray::Array2;
use std::time::{Duration, Instant};

fn data<F: Scalar>(n: usize, d: usize, seed: u64) -> Array2<F> {
    let x = clustr::datasets::uniform(n, d, -1.0, 1.0, seed).unwrap().data;
    x.mapv(F::from_f64_lossy)
}

/// Median seconds of `reps` runs of `f`.
fn median(reps: usize, mut f: impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[reps / 2]
}

fn case<F: Scalar>(c: &mut Criterion, n: usize, d: usize, k: usize) {
    let x = data::<F>(n, d, 1);
    let centres = data::<F>(k, d, 2);
    let backend = CpuBackend::default();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let name = format!("nearest_{}_d{d}", F::DTYPE);
    let mut g = c.benchmark_group(&name);
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    g.bench_function(BenchmarkId::new("kernel", k), |b| {
        b.iter(|| {
            pool.install(|| {
                backend
                    .nearest(x.view(), centres.view(), &MetricKind::SqEuclidean)
                    .unwrap()
            })
        })
    });
    let mut out = Array2::<F>::zeros((n, k));
    g.bench_function(BenchmarkId::new("gemm", k), |b| {
        b.iter(|| clustr::linalg::gemm_abt(x.view(), centres.view(), out.view_mut(), F::one()))
    });
    g.finish();
    let kernel = median(5, || {
        pool.install(|| {
            backend
                .nearest(x.view(), centres.view(), &MetricKind::SqEuclidean)
                .unwrap()
        });
    });
    let gemm = median(5, || {
        clustr::linalg::gemm_abt(x.view(), centres.view(), out.view_mut(), F::one())
    });
    let gflop = 2.0 * (n * d * k) as f64 / 1e9;
    println!(
        "{name} k={k}: kernel {:.1} GFLOPS, GEMM {:.1} GFLOPS, fraction of GEMM throughput {:.2}",
        gflop / kernel,
        gflop / gemm,
        gemm / kernel
    );
}

fn nearest(c: &mut Criterion) {
    for d in [16, 64, 256] {
        for k in [16, 256, 1024, 4096] {
            case::<f32>(c, 20_000, d, k);
            case::<f64>(c, 20_000, d, k);
        }
    }
}

criterion_group!(benches, nearest);
criterion_main!(benches);
