//! k-medoids swap phases on a precomputed matrix from the same BUILD medoids, and BUILD vs
//! LAB initialisation.
//!
//!     cargo bench --bench kmedoids

use clustr::kmedoids::{build, Clara, Init, KMedoids};
use clustr::{CpuBackend, DenseMatrix, Fit, MetricKind, OnTheFly};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::time::Duration;

fn swap_phases(c: &mut Criterion) {
    let x = clustr::datasets::Blobs::new(2000, 20)
        .n_features(10)
        .seed(1)
        .generate()
        .unwrap()
        .data;
    let d = DenseMatrix::from_points(x.view(), &MetricKind::Euclidean, &CpuBackend::default()).unwrap();
    let mut g = c.benchmark_group("swap_n2000_from_build");
    for k in [10, 50] {
        let start = Init::Given(build(&d, k).unwrap());
        for (name, algo) in [
            ("fastpam1", KMedoids::fastpam1(k)),
            ("fastpam2", KMedoids::fastpam2(k)),
            ("fasterpam", KMedoids::fasterpam(k)),
        ] {
            let algo = algo.init(start.clone());
            g.bench_function(BenchmarkId::new(name, k), |b| b.iter(|| algo.fit(&d).unwrap()));
        }
    }
    g.finish();
    let mut g = c.benchmark_group("init_n2000");
    for k in [10, 50] {
        g.bench_function(BenchmarkId::new("build", k), |b| b.iter(|| build(&d, k).unwrap()));
        let lab = KMedoids::fasterpam(k).init(Init::Lab).max_iter(0);
        g.bench_function(BenchmarkId::new("lab", k), |b| b.iter(|| lab.fit(&d).unwrap()));
    }
    g.finish();
    let big = clustr::datasets::Blobs::new(100_000, 20)
        .n_features(10)
        .seed(2)
        .generate()
        .unwrap()
        .data;
    let otf = OnTheFly::new(big.view(), MetricKind::Euclidean).unwrap();
    let mut g = c.benchmark_group("fasterclara_n100000_on_the_fly");
    g.bench_function("k20", |b| b.iter(|| Clara::fasterclara(20).fit(&otf).unwrap()));
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    targets = swap_phases
}
criterion_main!(benches);
