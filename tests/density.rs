//! DBSCAN and OPTICS against scikit-learn (tests/fixtures/density/, made by
//! tests/fixtures/make_density_fixtures.py), and invariants.

use clustr::data::{read_labels, read_matrix};
use clustr::density::{Dbscan, Extraction, IndexKind, Optics};
use clustr::{Error, Fit, MetricKind};
use ndarray::Array2;
use serde_json::Value;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/density")
        .join(name)
}

fn meta() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture("reference.json")).unwrap()).unwrap()
}

fn floats(name: &str) -> Vec<f64> {
    read_matrix::<f64>(fixture(name)).unwrap().into_iter().collect()
}

fn ints(name: &str) -> Vec<i64> {
    read_labels(fixture(name)).unwrap()
}

#[test]
fn dbscan_labels_equal_sklearn() {
    for case in meta()["dbscan"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let x: Array2<f64> = read_matrix(fixture(&format!("{name}_x.npy"))).unwrap();
        let metric: MetricKind = case["metric"].as_str().unwrap().parse().unwrap();
        let eps = case["eps"].as_f64().unwrap();
        let ms = case["min_samples"].as_u64().unwrap() as usize;
        let labels = ints(&format!("{name}_labels.npy"));
        let core: Vec<usize> = ints(&format!("{name}_core.npy"))
            .into_iter()
            .map(|v| v as usize)
            .collect();
        let kinds: &[IndexKind] = if metric == MetricKind::Haversine {
            &[IndexKind::Auto, IndexKind::KdTree, IndexKind::BallTree]
        } else {
            &[
                IndexKind::Auto,
                IndexKind::KdTree,
                IndexKind::BallTree,
                IndexKind::Brute,
            ]
        };
        for &kind in kinds {
            let m = Dbscan::new(eps)
                .min_samples(ms)
                .metric(metric)
                .index(kind)
                .fit(&x.view())
                .unwrap();
            assert_eq!(m.labels, labels, "{name} {kind:?}: labels");
            assert_eq!(m.core_sample_indices, core, "{name} {kind:?}: core samples");
            assert_eq!(m.n_clusters as u64, case["n_clusters"].as_u64().unwrap());
        }
    }
}

#[test]
fn optics_equals_sklearn() {
    for case in meta()["optics"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let x: Array2<f64> = read_matrix(fixture(&format!("{name}_x.npy"))).unwrap();
        let max_eps = case["max_eps"].as_f64().unwrap_or(f64::INFINITY);
        let params = Optics::new(case["min_samples"].as_u64().unwrap() as usize)
            .max_eps(max_eps)
            .min_cluster_size(case["min_cluster_size"].as_u64().unwrap() as usize);
        let m = params.fit(&x.view()).unwrap();
        let ordering: Vec<usize> = ints(&format!("{name}_ordering.npy"))
            .into_iter()
            .map(|v| v as usize)
            .collect();
        assert_eq!(m.ordering, ordering, "{name}: ordering");
        for (what, ours, theirs) in [
            (
                "reachability",
                &m.reachability,
                floats(&format!("{name}_reachability.npy")),
            ),
            (
                "core distance",
                &m.core_distances,
                floats(&format!("{name}_core_distances.npy")),
            ),
        ] {
            for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
                assert!(
                    (a.is_infinite() && b.is_infinite()) || (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                    "{name}: {what} of {i}: {a} vs {b}"
                );
            }
        }
        assert_eq!(
            m.predecessor,
            ints(&format!("{name}_predecessor.npy")),
            "{name}: predecessors"
        );
        assert_eq!(m.labels, ints(&format!("{name}_labels.npy")), "{name}: xi labels");
        assert_eq!(m.n_clusters as u64, case["n_clusters"].as_u64().unwrap());
        // DBSCAN extraction equals scikit-learn's, and agrees with DBSCAN on >= 95% of points.
        let eps = case["dbscan_eps"].as_f64().unwrap();
        let ext = params
            .clone()
            .extraction(Extraction::Dbscan(eps))
            .fit(&x.view())
            .unwrap();
        assert_eq!(
            ext.labels,
            ints(&format!("{name}_dbscan_labels.npy")),
            "{name}: dbscan extraction"
        );
        let db = Dbscan::new(eps)
            .min_samples(params.min_samples)
            .fit(&x.view())
            .unwrap();
        let same = relabel_agreement(&ext.labels, &db.labels);
        assert!(same >= 0.95, "{name}: OPTICS-DBSCAN parity {same}");
    }
}

/// Fraction of points whose label agrees after mapping each DBSCAN cluster to the OPTICS
/// cluster most of its points have (scikit-learn's `test_dbscan_optics_parity`).
fn relabel_agreement(optics: &[i64], dbscan: &[i64]) -> f64 {
    use std::collections::HashMap;
    let mut votes: HashMap<(i64, i64), usize> = HashMap::new();
    for (&o, &d) in optics.iter().zip(dbscan) {
        *votes.entry((d, o)).or_default() += 1;
    }
    let mut best: HashMap<i64, (i64, usize)> = HashMap::new();
    for (&(d, o), &c) in &votes {
        let e = best.entry(d).or_insert((o, 0));
        if c > e.1 || (c == e.1 && o < e.0) {
            *e = (o, c);
        }
    }
    let agree = optics
        .iter()
        .zip(dbscan)
        .filter(|(&o, &d)| if d < 0 { o < 0 } else { best[&d].0 == o })
        .count();
    agree as f64 / optics.len() as f64
}

#[test]
fn dbscan_is_the_same_for_any_thread_count_and_weights_count_points() {
    let x: Array2<f64> = read_matrix(fixture("blobs_noise_x.npy")).unwrap();
    let run = |t: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .unwrap()
            .install(|| Dbscan::new(0.35).min_samples(8).fit(&x.view()).unwrap())
    };
    assert_eq!(run(1), run(2));
    // Unit weights change nothing; weight 8 makes every point core on its own.
    let plain = Dbscan::new(0.35).min_samples(8).fit(&x.view()).unwrap();
    let unit = Dbscan::new(0.35)
        .min_samples(8)
        .sample_weight(vec![1.0; x.nrows()])
        .fit(&x.view())
        .unwrap();
    assert_eq!(plain, unit);
    let heavy = Dbscan::new(0.35)
        .min_samples(8)
        .sample_weight(vec![8.0; x.nrows()])
        .fit(&x.view())
        .unwrap();
    assert_eq!(heavy.core_sample_indices.len(), x.nrows());
    assert!(heavy.labels.iter().all(|&l| l >= 0));
}

/// A brute-force DBSCAN written from the definition, on small random inputs with duplicates.
#[test]
fn dbscan_equals_a_brute_force_oracle() {
    use rand::{Rng, SeedableRng};
    let mut rng = clustr::rng::SeededRng::seed_from_u64(3);
    for trial in 0..20 {
        let n = rng.random_range(1..80);
        let x = Array2::from_shape_fn((n, 2), |_| (rng.random_range(0..12) as f64) * 0.5);
        let (eps, ms) = (rng.random_range(0.4..1.6), rng.random_range(1..6));
        let d =
            |i: usize, j: usize| ((x[[i, 0]] - x[[j, 0]]).powi(2) + (x[[i, 1]] - x[[j, 1]]).powi(2)).sqrt();
        let hood = |i: usize| (0..n).filter(|&j| d(i, j) <= eps).collect::<Vec<_>>();
        let core: Vec<bool> = (0..n).map(|i| hood(i).len() >= ms).collect();
        let mut labels = vec![-1i64; n];
        let mut c = 0;
        for i in 0..n {
            if labels[i] != -1 || !core[i] {
                continue;
            }
            let mut stack = vec![i];
            while let Some(p) = stack.pop() {
                if labels[p] != -1 {
                    continue;
                }
                labels[p] = c;
                if core[p] {
                    stack.extend(hood(p).into_iter().filter(|&j| labels[j] == -1));
                }
            }
            c += 1;
        }
        let m = Dbscan::new(eps).min_samples(ms).fit(&x.view()).unwrap();
        assert_eq!(m.labels, labels, "trial {trial}");
    }
}

#[test]
fn bad_input_is_an_error() {
    let x = Array2::<f64>::zeros((10, 2));
    assert!(matches!(
        Dbscan::new(-1.0).fit(&x.view()).unwrap_err(),
        Error::InvalidParameter { .. }
    ));
    assert!(matches!(
        Dbscan::new(0.5).min_samples(0).fit(&x.view()).unwrap_err(),
        Error::InvalidParameter { .. }
    ));
    assert!(matches!(
        Dbscan::new(0.5)
            .metric(MetricKind::SqEuclidean)
            .index(IndexKind::KdTree)
            .fit(&x.view())
            .unwrap_err(),
        Error::InvalidParameter { .. }
    ));
    let three = Array2::<f64>::zeros((10, 3));
    assert!(matches!(
        Dbscan::new(1.0)
            .metric(MetricKind::Haversine)
            .fit(&three.view())
            .unwrap_err(),
        Error::ShapeMismatch { .. }
    ));
    assert!(matches!(
        Optics::new(1).fit(&x.view()).unwrap_err(),
        Error::InvalidParameter { .. }
    ));
    assert!(matches!(
        Optics::new(11).fit(&x.view()).unwrap_err(),
        Error::InvalidParameter { .. }
    ));
    assert!(matches!(
        Optics::new(3)
            .max_eps(1.0)
            .extraction(Extraction::Dbscan(2.0))
            .fit(&x.view())
            .unwrap_err(),
        Error::InvalidParameter { .. }
    ));
    let mut nan = x.clone();
    nan[[4, 1]] = f64::NAN;
    assert!(matches!(
        Dbscan::new(0.5).fit(&nan.view()).unwrap_err(),
        Error::NonFinite { row: 4, col: 1, .. }
    ));
}

/// OPTICS with sample weights: all 1 is the unweighted fit; integer weights give each point
/// the core distance of its copies in the repeated data; the core points at eps are weighted
/// DBSCAN's; bad weights are errors.
#[test]
fn weighted_optics_counts_weight_as_dbscan_does() {
    let x = clustr::datasets::Blobs::new(500, 4)
        .n_features(2)
        .cluster_std(0.9)
        .seed(12)
        .generate()
        .unwrap()
        .data;
    let n = x.nrows();
    let w: Vec<f64> = (0..n).map(|i| ((i * 7 + 3) % 4) as f64).collect();
    let plain = Optics::new(6).fit(&x.view()).unwrap();
    let ones = Optics::new(6).sample_weight(vec![1.0; n]).fit(&x.view()).unwrap();
    assert_eq!(plain, ones);
    let weighted = Optics::new(6).sample_weight(w.clone()).fit(&x.view()).unwrap();
    let rows: Vec<usize> = (0..n)
        .flat_map(|i| std::iter::repeat_n(i, w[i] as usize))
        .collect();
    let repeated = Optics::new(6)
        .fit(&x.select(ndarray::Axis(0), &rows).view())
        .unwrap();
    let mut checked = 0;
    for (c, &i) in rows.iter().enumerate() {
        if c == 0 || rows[c - 1] != i {
            assert_eq!(weighted.core_distances[i], repeated.core_distances[c], "row {i}");
            checked += 1;
        }
    }
    assert!(checked > n / 2);
    // Core at eps exactly where weighted DBSCAN finds a core point.
    let eps = 0.4137;
    let db = Dbscan::new(eps)
        .min_samples(6)
        .sample_weight(w.clone())
        .fit(&x.view())
        .unwrap();
    let optics_core: Vec<usize> = (0..n).filter(|&i| weighted.core_distances[i] <= eps).collect();
    assert_eq!(optics_core, db.core_sample_indices);
    // A point of weight min_samples is core at radius 0; one of weight 0 does not count
    // itself, so it needs its 6 nearest others (brute force).
    let mut v = vec![1.0; n];
    (v[0], v[1]) = (6.0, 0.0);
    let m = Optics::new(6).sample_weight(v).fit(&x.view()).unwrap();
    assert_eq!(m.core_distances[0], 0.0);
    let mut d1: Vec<f64> = x
        .rows()
        .into_iter()
        .map(|r| ((r[0] - x[[1, 0]]).powi(2) + (r[1] - x[[1, 1]]).powi(2)).sqrt())
        .collect();
    d1.sort_by(f64::total_cmp);
    assert!(
        (m.core_distances[1] - d1[6]).abs() < 1e-12,
        "{} vs {}",
        m.core_distances[1],
        d1[6]
    );
    assert!((plain.core_distances[1] - d1[5]).abs() < 1e-12);
    for bad in [vec![1.0; n - 1], vec![0.0; n], {
        let mut v = vec![1.0; n];
        v[4] = -1.0;
        v
    }] {
        assert!(Optics::new(6).sample_weight(bad).fit(&x.view()).is_err());
    }
}

/// `IndexKind::Auto` above 16 dimensions measures the data: a ball tree where it prunes (10
/// blobs), brute force where it reads everything (one Gaussian); the neighbours are the same.
#[test]
fn auto_index_above_16_dimensions_follows_the_data() {
    use clustr::density::{IndexKind, NeighborIndex};
    let data = |centres: usize| {
        clustr::datasets::Blobs::new(3000, centres)
            .n_features(32)
            .cluster_std(2.0)
            .seed(4)
            .generate()
            .unwrap()
            .data
    };
    let (blobs, gaussian) = (data(10), data(1));
    for (x, want) in [(&blobs, IndexKind::BallTree), (&gaussian, IndexKind::Brute)] {
        let auto = NeighborIndex::build(x.view(), clustr::MetricKind::Euclidean, IndexKind::Auto).unwrap();
        assert_eq!(auto.kind(), want);
        let brute = NeighborIndex::build(x.view(), clustr::MetricKind::Euclidean, IndexKind::Brute).unwrap();
        for i in (0..3000).step_by(97) {
            assert_eq!(auto.nearest(auto.point(i), 7), brute.nearest(brute.point(i), 7));
        }
    }
    // (Euclidean up to 30 dimensions: the k-d tree when it prunes; other metrics the ball tree)
    let d20 = clustr::datasets::Blobs::new(3000, 10)
        .n_features(20)
        .cluster_std(2.0)
        .seed(4)
        .generate()
        .unwrap()
        .data;
    for (metric, want) in [
        (clustr::MetricKind::Euclidean, IndexKind::KdTree),
        (clustr::MetricKind::Manhattan, IndexKind::BallTree),
    ] {
        assert_eq!(
            NeighborIndex::build(d20.view(), metric, IndexKind::Auto)
                .unwrap()
                .kind(),
            want
        );
    }
    // (up to 16 dimensions: the k-d tree)
    let low = clustr::datasets::Blobs::new(500, 3)
        .n_features(16)
        .seed(4)
        .generate()
        .unwrap()
        .data;
    let auto = NeighborIndex::build(low.view(), clustr::MetricKind::Euclidean, IndexKind::Auto).unwrap();
    assert_eq!(auto.kind(), IndexKind::KdTree);
}

/// The ordering over a tree (offers within a growing radius, nodes skipped by bounds) is the
/// plain one that brute force makes (every processed point offers to every unprocessed one):
/// the same ordering, reachabilities and predecessors, bit for bit, on points with many ties
/// (a small integer grid with duplicates) and without, for an unbounded and a finite max_eps.
#[test]
fn optics_over_a_tree_is_the_plain_ordering() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let grid = Array2::from_shape_fn((900, 2), |_| rng.random_range(0..12) as f64);
    let sparse_grid = Array2::from_shape_fn((400, 2), |_| rng.random_range(0..40) as f64);
    let blobs = clustr::datasets::Blobs::new(900, 4)
        .n_features(3)
        .seed(5)
        .generate()
        .unwrap()
        .data;
    for (name, x) in [("grid", &grid), ("sparse grid", &sparse_grid), ("blobs", &blobs)] {
        for metric in [
            MetricKind::Euclidean,
            MetricKind::Manhattan,
            MetricKind::Minkowski(f64::INFINITY),
        ] {
            for max_eps in [f64::INFINITY, 2.5] {
                let fit = |index| {
                    Optics::new(if name == "sparse grid" { 3 } else { 7 })
                        .max_eps(max_eps)
                        .metric(metric)
                        .index(index)
                        .fit(&x.view())
                        .unwrap()
                };
                let plain = fit(IndexKind::Brute);
                assert!(plain.reachability.iter().filter(|r| r.is_finite()).count() > 300);
                for index in [IndexKind::KdTree, IndexKind::BallTree] {
                    let tree = fit(index);
                    let at = format!("{name} {metric:?} max_eps {max_eps} {index:?}");
                    assert_eq!(tree.ordering, plain.ordering, "{at}: ordering");
                    assert_eq!(tree.predecessor, plain.predecessor, "{at}: predecessors");
                    let bits = |r: &[f64]| r.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                    assert_eq!(
                        bits(&tree.reachability),
                        bits(&plain.reachability),
                        "{at}: reachability"
                    );
                    assert_eq!(tree.labels, plain.labels, "{at}: labels");
                }
            }
        }
    }
}
