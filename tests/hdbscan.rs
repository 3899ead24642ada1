//! HDBSCAN against scikit-learn and the `hdbscan` package, single linkage against scipy
//! (tests/fixtures/hdbscan/, made by tests/fixtures/make_hdbscan_fixtures.py), and invariants.

mod common;

use clustr::data::{read_labels, read_matrix};
use clustr::density::hdbscan::{single_linkage, Cut};
use clustr::density::{ClusterSelection, CondensedRow, Edge, Hdbscan, HdbscanModel, HdbscanPredictor};
use clustr::metric::EARTH_RADIUS_KM;
use clustr::{DenseMatrix, Fit, MetricKind};
use ndarray::Array2;
use serde_json::Value;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hdbscan")
        .join(name)
}

fn meta() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture("reference.json")).unwrap()).unwrap()
}

fn matrix(name: &str) -> Array2<f64> {
    read_matrix::<f64>(fixture(name)).unwrap()
}

fn floats(name: &str) -> Vec<f64> {
    matrix(name).into_iter().collect()
}

fn ints(name: &str) -> Vec<i64> {
    read_labels(fixture(name)).unwrap()
}

/// The estimator a fixture's scikit-learn parameters describe.
fn estimator(p: &Value) -> Hdbscan {
    let mut h = Hdbscan::new(p["min_cluster_size"].as_u64().unwrap() as usize);
    h.min_samples = p["min_samples"].as_u64().map(|m| m as usize);
    h.max_cluster_size = p["max_cluster_size"].as_u64().map(|m| m as usize);
    h.alpha = p["alpha"].as_f64().unwrap_or(1.0);
    h.cluster_selection_epsilon = p["cluster_selection_epsilon"].as_f64().unwrap_or(0.0);
    h.allow_single_cluster = p["allow_single_cluster"].as_bool().unwrap_or(false);
    h.cluster_selection_epsilon_max = p["cluster_selection_epsilon_max"]
        .as_f64()
        .unwrap_or(f64::INFINITY);
    h.cluster_selection_persistence = p["cluster_selection_persistence"].as_f64().unwrap_or(0.0);
    if let Some(s) = p["cluster_selection_method"].as_str() {
        h.cluster_selection_method = s.parse().unwrap();
    }
    if p["metric"].as_str() == Some("haversine") {
        h.metric = MetricKind::Haversine;
    }
    h
}

/// The Euclidean distances of 2-d points, computed directly (as scipy's cdist).
fn direct_distances(x: &Array2<f64>) -> Array2<f64> {
    let n = x.nrows();
    Array2::from_shape_fn((n, n), |(i, j)| {
        let (a, b) = (x[[i, 0]] - x[[j, 0]], x[[i, 1]] - x[[j, 1]]);
        (a * a + b * b).sqrt()
    })
}

fn fit_case(p: &Value, x: &Array2<f64>) -> HdbscanModel {
    let h = estimator(p);
    if p["precomputed"].as_bool() == Some(true) {
        h.fit_precomputed(&DenseMatrix::new(direct_distances(x)).unwrap())
            .unwrap()
    } else {
        h.fit(&x.view()).unwrap()
    }
}

#[test]
fn hdbscan_equals_sklearn() {
    let meta = meta();
    for (name, p) in meta["cases"].as_object().unwrap() {
        let x = matrix(&format!("{name}_x.npy"));
        let m = fit_case(p, &x);
        assert_eq!(m.labels, ints(&format!("{name}_labels.npy")), "{name}: labels");
        let n_clusters = m.labels.iter().max().map_or(0, |&l| l + 1) as usize;
        assert_eq!(m.n_clusters, n_clusters, "{name}");
        for (what, ours, theirs) in [
            (
                "probabilities",
                &m.probabilities,
                floats(&format!("{name}_probabilities.npy")),
            ),
            (
                "outlier scores (hdbscan package)",
                &m.outlier_scores,
                floats(&format!("{name}_outlier_scores.npy")),
            ),
        ] {
            // Ours are finite in [0, 1]; the package's GLOSH is NaN where a finite λ falls
            // under λ_max = ∞ (min_samples identical rows), whose limit, 1, we give.
            assert!(
                ours.iter().all(|v| (0.0..=1.0).contains(v)),
                "{name}: {what} outside [0, 1]"
            );
            let mut worst = 0.0f64;
            for (a, b) in ours.iter().zip(&theirs) {
                if b.is_finite() {
                    worst = worst.max((a - b).abs());
                } else {
                    assert_eq!(*a, 1.0, "{name}: {what}: the package's {b} is the limit 1");
                }
            }
            // (the package's simplified tree holds its λ in single precision, ours in double)
            let tol = if p["cluster_selection_persistence"].is_f64() {
                1e-6
            } else {
                1e-9
            };
            assert!(worst <= tol, "{name}: {what} differ by {worst}");
        }
        // The single-linkage tree: the same merges; heights in km for haversine (radians there).
        let tree = matrix(&format!("{name}_tree.npy"));
        let (scale, tol) = if p["metric"].as_str() == Some("haversine") {
            (EARTH_RADIUS_KM, 1e-9)
        } else {
            (1.0, 1e-12)
        };
        assert_eq!(m.single_linkage_tree.len(), tree.nrows());
        for (i, merge) in m.single_linkage_tree.iter().enumerate() {
            assert_eq!(
                (merge.left as f64, merge.right as f64, merge.size as f64),
                (tree[[i, 0]], tree[[i, 1]], tree[[i, 3]]),
                "{name}: merge {i}"
            );
            let h = tree[[i, 2]] * scale;
            assert!(
                (merge.distance - h).abs() <= tol * h.abs().max(1e-300),
                "{name}: height {i}: {} vs {h}",
                merge.distance
            );
        }
        // Where no two edges of the tree weigh the same, scikit-learn's own fit is that too.
        let heights: Vec<f64> = tree.column(2).to_vec();
        let tied = heights.windows(2).any(|w| w[0] == w[1]);
        let plain = ints(&format!("{name}_plain_labels.npy"));
        if !tied {
            assert_eq!(m.labels, plain, "{name}: no ties, HDBSCAN().fit's labels");
        }
        // scikit-learn's own fit sorts equal-weight edges with numpy's unstable sort: it agrees
        // except where the order of merges at a tied height decides (a point falling out
        // there, or which leaves exist: blobs_leaf differs on 872 of 3,000 labels, ARI 0.94).
        let ari = clustr::eval::adjusted_rand_score(&plain, &m.labels).unwrap();
        let differ = plain.iter().zip(&m.labels).filter(|(a, b)| a != b).count();
        eprintln!(
            "{name}: ARI {ari:.5} with HDBSCAN().fit, {differ} of {} labels differ",
            plain.len()
        );
        // (not where identical rows make many zero-weight edges: there the unstable order
        // decides which leaves exist, duplicates_leaf's ARI is 0.48; the stable order is
        // required above)
        if !name.starts_with("duplicates") {
            assert!(ari >= 0.9, "{name}: ARI {ari}");
        }
    }
}

#[test]
fn results_do_not_depend_on_thread_count() {
    let meta = meta();
    for name in ["blobs", "geo"] {
        let p = &meta["cases"][name];
        let x = matrix(&format!("{name}_x.npy"));
        let one = common::in_pool(1, || fit_case(p, &x));
        let two = common::in_pool(2, || fit_case(p, &x));
        assert_eq!(one.labels, two.labels);
        assert_eq!(one.probabilities, two.probabilities);
        assert_eq!(one.single_linkage_tree, two.single_linkage_tree);
        assert_eq!(one.condensed_tree, two.condensed_tree);
    }
}

/// Flat labels numbered by first appearance, to compare partitions.
fn canonical(labels: &[i64]) -> Vec<i64> {
    let mut seen = std::collections::HashMap::new();
    labels
        .iter()
        .map(|l| {
            let next = seen.len() as i64;
            *seen.entry(*l).or_insert(next)
        })
        .collect()
}

#[test]
fn single_linkage_equals_scipy() {
    let meta = meta();
    for (name, c) in meta["single_linkage"]["cases"].as_object().unwrap() {
        let x = matrix(&format!("single_{name}_x.npy"));
        let metric = match c["metric"].as_str().unwrap() {
            "cityblock" => MetricKind::Manhattan,
            _ => MetricKind::Euclidean,
        };
        // Every index: Borůvka's over either tree, Prim's over every pair, and auto's choice.
        use clustr::density::IndexKind;
        for index in [
            IndexKind::Auto,
            IndexKind::KdTree,
            IndexKind::BallTree,
            IndexKind::Brute,
        ] {
            let cut = Cut::Distance(c["distance"].as_f64().unwrap());
            let (by_distance, tree) = single_linkage(x.view(), metric, index, cut).unwrap();
            let heights = floats(&format!("single_{name}_heights.npy"));
            assert_eq!(tree.len(), heights.len());
            for (m, h) in tree.iter().zip(&heights) {
                assert!(
                    (m.distance - h).abs() <= 1e-12 * h.max(1e-300),
                    "{name} {index:?}: {} vs {h}",
                    m.distance
                );
                assert!(m.left < m.right);
            }
            assert_eq!(
                canonical(&by_distance),
                canonical(&ints(&format!("single_{name}_by_distance.npy"))),
                "{name} {index:?}: distance cut"
            );
            let k = c["n_clusters"].as_u64().unwrap() as usize;
            let (by_count, _) = single_linkage(x.view(), metric, index, Cut::Clusters(k)).unwrap();
            assert_eq!(
                canonical(&by_count),
                canonical(&ints(&format!("single_{name}_by_count.npy"))),
                "{name} {index:?}: count cut"
            );
        }
    }
}

#[test]
fn invariants_on_random_data() {
    use rand::{Rng, SeedableRng};
    let mut rng = clustr::rng::SeededRng::seed_from_u64(23);
    for case in 0..20 {
        let n = rng.random_range(30..300);
        let x = Array2::from_shape_fn((n, 3), |_| rng.random_range(-3.0..3.0f64).powi(3));
        let mcs = rng.random_range(2..12);
        for method in [ClusterSelection::Eom, ClusterSelection::Leaf] {
            let m = Hdbscan::new(mcs)
                .cluster_selection_method(method)
                .fit(&x.view())
                .unwrap();
            // Every cluster holds at least min_cluster_size points; probabilities in [0, 1],
            // 0 exactly for noise; outlier scores in [0, 1].
            for c in 0..m.n_clusters as i64 {
                let size = m.labels.iter().filter(|&&l| l == c).count();
                assert!(size >= mcs, "case {case}: cluster {c} has {size} < {mcs}");
            }
            for i in 0..n {
                let p = m.probabilities[i];
                assert!((0.0..=1.0).contains(&p));
                assert_eq!(m.labels[i] == -1, p == 0.0, "case {case}: point {i}");
                assert!((0.0..=1.0).contains(&m.outlier_scores[i]));
            }
            // The tree's heights never decrease; the last merge holds every point.
            let t = &m.single_linkage_tree;
            assert!(t.windows(2).all(|w| w[0].distance <= w[1].distance));
            assert_eq!(t.last().unwrap().size, n);
            // Core distances are the min_samples-th smallest distance, the point itself included.
            let d = direct3(&x);
            for i in (0..n).step_by(7) {
                let mut row: Vec<f64> = (0..n).map(|j| d[[i, j]]).collect();
                row.sort_by(f64::total_cmp);
                assert!((m.core_distances[i] - row[mcs - 1]).abs() <= 1e-12 * row[mcs - 1]);
            }
            // From the matrix the same clusters (Prim's algorithm there).
            let h = Hdbscan::new(mcs).cluster_selection_method(method);
            let dm = h.fit_precomputed(&DenseMatrix::new(d).unwrap()).unwrap();
            let ari = clustr::eval::adjusted_rand_score(&dm.labels, &m.labels).unwrap();
            assert!(ari > 0.99 || dm.labels == m.labels, "case {case}: ARI {ari}");
        }
    }
}

fn direct3(x: &Array2<f64>) -> Array2<f64> {
    let n = x.nrows();
    Array2::from_shape_fn((n, n), |(i, j)| {
        (0..3)
            .map(|c| (x[[i, c]] - x[[j, c]]).powi(2))
            .sum::<f64>()
            .sqrt()
    })
}

#[test]
fn bad_parameters_are_errors() {
    let x = clustr::datasets::load("iris").unwrap().data;
    for (h, what) in [
        (Hdbscan::new(1), "min_cluster_size"),
        (Hdbscan::new(5).min_samples(0), "min_samples"),
        (Hdbscan::new(151), "min_samples"),
        (Hdbscan::new(5).min_samples(151), "min_samples"),
        (Hdbscan::new(5).alpha(0.0), "alpha"),
        (
            Hdbscan::new(5).cluster_selection_epsilon(-1.0),
            "cluster_selection_epsilon",
        ),
    ] {
        let e = h.fit(&x.view()).unwrap_err();
        assert!(e.is_input_error() && e.to_string().contains(what), "{what}: {e}");
    }
    let mut nan = x.clone();
    nan[[3, 1]] = f64::NAN;
    assert!(Hdbscan::new(5).fit(&nan.view()).unwrap_err().is_input_error());
    let e = single_linkage(
        x.view(),
        MetricKind::Euclidean,
        clustr::density::IndexKind::Auto,
        Cut::Clusters(0),
    )
    .unwrap_err();
    assert!(e.is_input_error(), "{e}");
}

/// A min_cluster_size above the number of points selects no cluster: every point is noise, or
/// with allow_single_cluster the root is the one cluster (both as scikit-learn, which only
/// asks min_samples ≤ n); min_samples above n is refused.
#[test]
fn fewer_points_than_min_cluster_size_are_all_noise() {
    use clustr::density::Hdbscan;
    let x = ndarray::array![[1.0, 2.0], [3.0, 4.0]];
    let mut est = Hdbscan::new(5);
    est.min_samples = Some(1);
    let m = est.fit(&x.view()).unwrap();
    assert_eq!(m.labels, vec![-1, -1]);
    assert!(m.probabilities.iter().all(|&p| p == 0.0));
    est.allow_single_cluster = true;
    assert_eq!(est.fit(&x.view()).unwrap().labels, vec![0, 0]);
    let e = Hdbscan::new(5).fit(&x.view()).unwrap_err();
    assert!(e.to_string().contains("min_samples"), "{e}");
}

#[test]
fn a_given_spanning_tree_gives_the_fit_it_came_from() {
    let x = matrix("moons_x.npy");
    let h = Hdbscan::new(15);
    let m = h.fit(&x.view()).unwrap();
    // By decreasing weight (stably: tied edges keep their order, which decides the merges):
    // the tree is sorted (stably) by increasing weight before it is used.
    let mut edges = m.minimum_spanning_tree.clone();
    edges.sort_by(|a, b| b.w.total_cmp(&a.w));
    let again = h
        .fit_spanning_tree(x.nrows(), edges.clone(), m.core_distances.clone())
        .unwrap();
    assert_eq!(again.labels, m.labels);
    assert_eq!(again.probabilities, m.probabilities);
    // Not a tree: a missing edge, a cycle, an end out of range, a negative weight.
    let n = x.nrows();
    let core = m.core_distances.clone();
    assert!(h.fit_spanning_tree(n, edges[1..].to_vec(), core.clone()).is_err());
    let mut cycle = edges.clone();
    cycle[0] = Edge {
        a: cycle[1].a,
        b: cycle[1].b,
        w: 0.5,
    };
    assert!(h.fit_spanning_tree(n, cycle, core.clone()).is_err());
    let mut far = edges.clone();
    far[0].a = n;
    assert!(h.fit_spanning_tree(n, far, core.clone()).is_err());
    let mut negative = edges;
    negative[0].w = -1.0;
    assert!(h.fit_spanning_tree(n, negative, core).is_err());
}

/// The `hdbscan` package's condensed tree of a prediction fixture as clustr's rows.
fn package_tree(name: &str) -> Vec<CondensedRow> {
    matrix(&format!("predict_{name}_condensed.npy"))
        .rows()
        .into_iter()
        .map(|r| CondensedRow {
            parent: r[0] as usize,
            child: r[1] as usize,
            lambda: r[2],
            size: r[3] as usize,
        })
        .collect()
}

fn assert_close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(g.is_finite(), "{what}[{i}] = {g}");
        assert!((g - w).abs() <= tol, "{what}[{i}]: {g} against the package's {w}");
    }
}

/// Prediction and soft clustering equal the `hdbscan` package's (approximate_predict with the
/// connecting points, membership_vector, all_points_membership_vectors) within 1e-9, computed
/// from its own condensed tree and selected clusters.
///
/// clustr's own fit is not always the package's condensed tree: with min_samples ≥ 2 the
/// mutual reachability ties many edges, and a point that leaves a cluster at a tied height can
/// leave from the other of two sibling clusters (here in all three cases; in the leaf case the
/// ties also move a few points between leaves). In the excess-of-mass cases its labels are the
/// package's, and so are the new points' labels, strengths and membership vectors and all but
/// a few training points' membership vectors.
#[test]
fn prediction_equals_the_hdbscan_package() {
    let meta = meta();
    let cases = meta["prediction"]["cases"].as_object().unwrap();
    assert_eq!(cases.len(), 3);
    for (name, p) in cases {
        let x = matrix(&format!("predict_{name}_x.npy"));
        let new = matrix(&format!("predict_{name}_new.npy"));
        let package_m = p["min_samples"].as_u64().unwrap() as usize;
        let selected: Vec<usize> = ints(&format!("predict_{name}_selected.npy"))
            .into_iter()
            .map(|c| c as usize)
            .collect();
        let tree = package_tree(name);
        let pr = HdbscanPredictor::new(
            x.clone(),
            MetricKind::Euclidean,
            package_m + 1,
            tree.clone(),
            selected,
        )
        .unwrap();
        let got = pr.approximate_predict(new.view()).unwrap();
        let labels = ints(&format!("predict_{name}_labels.npy"));
        assert_eq!(got.labels, labels, "{name}: labels");
        assert_eq!(
            got.neighbors,
            ints(&format!("predict_{name}_neighbours.npy")),
            "{name}: neighbours"
        );
        let strengths = floats(&format!("predict_{name}_strengths.npy"));
        assert_close(
            &format!("{name}: strengths"),
            &got.probabilities,
            &strengths,
            1e-12,
        );
        assert!(labels.contains(&-1) && labels.iter().any(|&l| l >= 0));
        let membership = matrix(&format!("predict_{name}_membership.npy"));
        let m = pr.membership_vectors(new.view()).unwrap();
        assert_eq!(m.dim(), membership.dim());
        assert_close(
            &format!("{name}: membership"),
            m.as_slice().unwrap(),
            membership.as_slice().unwrap(),
            1e-9,
        );
        let all_points = matrix(&format!("predict_{name}_all_points.npy"));
        let all = pr.all_points_membership_vectors().unwrap();
        assert_eq!(all.dim(), all_points.dim());
        assert_close(
            &format!("{name}: all points"),
            all.as_slice().unwrap(),
            all_points.as_slice().unwrap(),
            1e-9,
        );

        // clustr's own fit, with the package's min_samples + 1
        let mut h = estimator(p);
        h.min_samples = Some(package_m + 1);
        let fit = h.fit(&x.view()).unwrap();
        let own = fit.predictor(x.view(), &h).unwrap();
        if name.starts_with("blobs") {
            assert_eq!(
                fit.labels,
                ints(&format!("predict_{name}_fit_labels.npy")),
                "{name}: fit labels"
            );
            let got = own.approximate_predict(new.view()).unwrap();
            assert_eq!(got.labels, labels, "{name}: labels from clustr's fit");
            assert_close(
                &format!("{name}: strengths from clustr's fit"),
                &got.probabilities,
                &strengths,
                1e-12,
            );
            let m = own.membership_vectors(new.view()).unwrap();
            assert_close(
                &format!("{name}: membership"),
                m.as_slice().unwrap(),
                membership.as_slice().unwrap(),
                1e-9,
            );
            let all = own.all_points_membership_vectors().unwrap();
            let differ = all
                .iter()
                .zip(all_points.iter())
                .filter(|(a, b)| (*a - *b).abs() > 1e-9)
                .count();
            assert!(
                differ * 200 < all.len(),
                "{name}: {differ} of {} entries differ",
                all.len()
            );
        }
    }
}

/// A saved predictor loads back to the same predictions; a tampered tree is refused with a
/// message, never a panic.
#[test]
fn hdbscan_model_files_round_trip_and_refuse_tampering() {
    use clustr::model_file::SaveLoad;
    let x = matrix("predict_blobs_x.npy");
    let new = matrix("predict_blobs_new.npy");
    let h = Hdbscan::new(20).min_samples(6);
    let pr = h.fit(&x.view()).unwrap().predictor(x.view(), &h).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.json");
    pr.save(&path).unwrap();
    let back = HdbscanPredictor::load(&path).unwrap();
    assert_eq!(
        back.approximate_predict(new.view()).unwrap(),
        pr.approximate_predict(new.view()).unwrap()
    );
    assert_eq!(
        back.membership_vectors(new.view()).unwrap(),
        pr.membership_vectors(new.view()).unwrap()
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    type Tamper = fn(&mut Value);
    let tamperings: [(&str, Tamper); 5] = [
        ("a point twice", |m| {
            m["tree_child"]["data"][0] = m["tree_child"]["data"][1].clone()
        }),
        ("a parent below its child", |m| {
            m["tree_parent"]["data"][0] = serde_json::json!(1e9)
        }),
        ("a NaN-free negative λ", |m| {
            m["tree_lambda"]["data"][0] = serde_json::json!(-1.0)
        }),
        ("a cluster id out of range", |m| {
            m["selected"]["data"][0] = serde_json::json!(99999999)
        }),
        ("min_samples 0", |m| m["min_samples"] = serde_json::json!(0)),
    ];
    for (what, tamper) in tamperings {
        let mut t = v.clone();
        tamper(&mut t["model"]);
        std::fs::write(&path, serde_json::to_string(&t).unwrap()).unwrap();
        let e = HdbscanPredictor::load(&path).unwrap_err().to_string();
        assert!(!e.is_empty() && !e.contains('\n'), "{what}: {e}");
    }
    v["model"]["tree_lambda"]["data"] = serde_json::json!("not an array");
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    assert!(HdbscanPredictor::load(&path).is_err());
}
