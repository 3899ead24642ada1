//! Neighbour indexes (k-d tree, ball tree, brute force), DBSCAN and OPTICS.
//!
//!     cargo bench --bench density
//!
//! The side-by-side comparison with scikit-learn is paper-repro/density_vs_sklearn.py.

use clustr::datasets::{Blobs, GeoHotspots};
use clustr::density::{Dbscan, IndexKind, NeighborIndex, Optics};
use clustr::{Fit, MetricKind};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::time::Duration;

fn density(c: &mut Criterion) {
    let x = Blobs::new(20_000, 10)
        .n_features(3)
        .seed(1)
        .generate()
        .unwrap()
        .data;
    let mut g = c.benchmark_group("radius_queries_n20000_d3");
    for kind in [IndexKind::KdTree, IndexKind::BallTree, IndexKind::Brute] {
        let idx = NeighborIndex::build(x.view(), MetricKind::Euclidean, kind).unwrap();
        g.bench_function(BenchmarkId::new(format!("{kind:?}"), "200 queries"), |b| {
            b.iter(|| {
                (0..200)
                    .map(|i| idx.within(idx.point(i * 97), 0.5).len())
                    .sum::<usize>()
            })
        });
    }
    g.finish();
    let geo = GeoHotspots::new(40, 500, 8_000).seed(1).generate().unwrap().data;
    let mut g = c.benchmark_group("density_geo_n28000");
    g.bench_function("dbscan_haversine_300m", |b| {
        b.iter(|| {
            Dbscan::new(0.3)
                .min_samples(10)
                .metric(MetricKind::Haversine)
                .fit(&geo.view())
                .unwrap()
        })
    });
    g.bench_function("optics_haversine_max_eps_2km", |b| {
        b.iter(|| {
            Optics::new(10)
                .max_eps(2.0)
                .metric(MetricKind::Haversine)
                .fit(&geo.view())
                .unwrap()
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    targets = density
}
criterion_main!(benches);
