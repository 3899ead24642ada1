//! Pairwise distances: the CPU backend per metric against a naive scalar loop (both on one
//! thread, then the backend on all threads), and the GEMM form of squared Euclidean against
//! the direct SIMD loop by dimension.
//!
//!     cargo bench --bench distances

use clustr::backend::CpuBackend;
use clustr::{Backend, MetricKind};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::Duration;

fn points(n: usize, d: usize, seed: u64) -> Array2<f32> {
    let mut rng = clustr::rng::SeededRng::seed_from_u64(seed);
    Array2::from_shape_fn((n, d), |(_, j)| {
        if d == 2 && j == 0 {
            rng.random_range(-60.0..60.0) // latitude-like, for haversine
        } else {
            rng.random_range(-5.0..5.0)
        }
    })
}

/// The loop one would write without the backend: one pair at a time, scalar arithmetic.
fn naive(kind: MetricKind, x: &Array2<f32>, out: &mut Array2<f32>) {
    for i in 0..x.nrows() {
        for j in 0..x.nrows() {
            let (a, b) = (x.row(i), x.row(j));
            let mut s = 0.0f32;
            out[[i, j]] = match kind {
                MetricKind::Euclidean => {
                    for k in 0..a.len() {
                        s += (a[k] - b[k]) * (a[k] - b[k]);
                    }
                    s.sqrt()
                }
                MetricKind::Manhattan => {
                    for k in 0..a.len() {
                        s += (a[k] - b[k]).abs();
                    }
                    s
                }
                MetricKind::Cosine => {
                    let (mut na, mut nb) = (0.0f32, 0.0f32);
                    for k in 0..a.len() {
                        s += a[k] * b[k];
                        na += a[k] * a[k];
                        nb += b[k] * b[k];
                    }
                    1.0 - s / (na.sqrt() * nb.sqrt())
                }
                _ => unreachable!(),
            };
        }
    }
}

fn one_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(f)
}

fn per_metric(c: &mut Criterion) {
    let n = 2000;
    let x = points(n, 16, 1);
    let mut out = Array2::<f32>::zeros((n, n));
    let mut g = c.benchmark_group("pairwise_2000x2000_d16_f32");
    for kind in [MetricKind::Euclidean, MetricKind::Manhattan, MetricKind::Cosine] {
        g.bench_function(BenchmarkId::new("naive_1_thread", kind), |b| {
            b.iter(|| naive(kind, black_box(&x), &mut out))
        });
        g.bench_function(BenchmarkId::new("backend_1_thread", kind), |b| {
            b.iter(|| {
                one_thread(|| {
                    CpuBackend::default()
                        .pairwise(x.view(), x.view(), &kind, out.view_mut())
                        .unwrap()
                })
            })
        });
        g.bench_function(BenchmarkId::new("backend_all_threads", kind), |b| {
            b.iter(|| {
                CpuBackend::default()
                    .pairwise(x.view(), x.view(), &kind, out.view_mut())
                    .unwrap()
            })
        });
    }
    let geo = points(n, 2, 2);
    for kind in [MetricKind::Haversine, MetricKind::Minkowski(3.0)] {
        g.bench_function(BenchmarkId::new("backend_all_threads", kind), |b| {
            b.iter(|| {
                CpuBackend::default()
                    .pairwise(geo.view(), geo.view(), &kind, out.view_mut())
                    .unwrap()
            })
        });
    }
    g.finish();
}

fn gemm_form(c: &mut Criterion) {
    let n = 2000;
    let mut out = Array2::<f32>::zeros((n, n));
    let mut g = c.benchmark_group("sqeuclidean_gemm_vs_direct_1_thread");
    for d in [4, 8, 16, 64] {
        let x = points(n, d, 3);
        for gemm in [true, false] {
            let backend = CpuBackend {
                gemm,
                ..Default::default()
            };
            g.bench_function(BenchmarkId::new(if gemm { "gemm" } else { "direct" }, d), |b| {
                b.iter(|| {
                    one_thread(|| {
                        backend
                            .pairwise(x.view(), x.view(), &MetricKind::SqEuclidean, out.view_mut())
                            .unwrap()
                    })
                })
            });
        }
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    targets = per_metric, gemm_form
}
criterion_main!(benches);
