//! k-means (Lloyd, Hamerly, Elkan) from the same k-means++ centres, mini-batch k-means, and
//! Gaussian-mixture EM (every covariance type) from the same responsibilities.
//!
//!     cargo bench --bench kmeans
//!
//! The side-by-side comparisons with scikit-learn are paper-repro/kmeans_vs_sklearn.py and
//! paper-repro/gmm_vs_sklearn.py.

use clustr::kmeans::{kmeans_plus_plus, Algorithm, KMeans, KMeansInit, MiniBatchKMeans};
use clustr::mixture::{CovarianceType, GaussianMixture, GmmInit};
use clustr::Fit;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use rand::SeedableRng;
use std::time::Duration;

fn kmeans(c: &mut Criterion) {
    let x = clustr::datasets::Blobs::new(50_000, 32)
        .n_features(16)
        .cluster_std(3.0)
        .seed(1)
        .generate()
        .unwrap()
        .data;
    let mut g = c.benchmark_group("kmeans_n50000_d16");
    for k in [8, 64] {
        let init =
            kmeans_plus_plus(x.view(), k, &mut clustr::rng::SeededRng::seed_from_u64(k as u64)).unwrap();
        for alg in [Algorithm::Lloyd, Algorithm::Hamerly, Algorithm::Elkan] {
            let params = KMeans::new(k)
                .init(KMeansInit::Given(init.clone()))
                .algorithm(alg);
            g.bench_function(BenchmarkId::new(alg.name(), k), |b| {
                b.iter(|| params.fit(&x.view()).unwrap())
            });
        }
        let mb = MiniBatchKMeans::new(k).init(KMeansInit::Given(init.clone()));
        g.bench_function(BenchmarkId::new("minibatch", k), |b| {
            b.iter(|| mb.fit(&x.view()).unwrap())
        });
    }
    g.finish();
}

fn gmm(c: &mut Criterion) {
    let data = clustr::datasets::Blobs::new(5000, 20)
        .n_features(10)
        .cluster_std(4.0)
        .seed(2)
        .generate()
        .unwrap();
    let init = GmmInit::from_labels(&data.target, 20).unwrap();
    let mut g = c.benchmark_group("gmm_n5000_d10_k20_10_iterations");
    for ct in [
        CovarianceType::Full,
        CovarianceType::Tied,
        CovarianceType::Diag,
        CovarianceType::Spherical,
    ] {
        let params = GaussianMixture::new(20)
            .covariance_type(ct)
            .init(init.clone())
            .tol(0.0)
            .max_iter(10);
        g.bench_function(ct.name(), |b| b.iter(|| params.fit(&data.data.view()).unwrap()));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    targets = kmeans, gmm
}
criterion_main!(benches);
