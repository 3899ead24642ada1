//! Bisecting k-means against scikit-learn's `BisectingKMeans` from the same starts at every
//! split (tests/fixtures/sklearn_reference.json: both strategies, Lloyd and Elkan, sample
//! weights, k = 1): labels, centres, inertia, predictions on new points and `transform`; then
//! the model file, and invariants of seeded fits.

use clustr::kmeans::{Algorithm, BisectingInit, BisectingKMeans, BisectingKMeansModel, BisectingStrategy};
use clustr::model_file::SaveLoad;
use clustr::{Clustering, Fit, Predict};
use ndarray::Array2;
use serde_json::Value;

fn matrix(v: &Value) -> Array2<f64> {
    let rows: Vec<Vec<f64>> = serde_json::from_value(v.clone()).unwrap();
    let (n, d) = (rows.len(), rows[0].len());
    Array2::from_shape_vec((n, d), rows.into_iter().flatten().collect()).unwrap()
}

fn close(a: f64, b: f64, what: &str) {
    assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "{what}: {a} vs {b}");
}

#[test]
fn equals_sklearn_from_the_same_starts() {
    let f: Value = serde_json::from_str(include_str!("fixtures/sklearn_reference.json")).unwrap();
    let cases = f["bisecting_kmeans"].as_array().unwrap();
    assert_eq!(cases.len(), 5);
    let dir = tempfile::tempdir().unwrap();
    for case in cases {
        let name = case["data"].as_str().unwrap();
        let x = matrix(&case["x"]);
        let k = case["k"].as_u64().unwrap() as usize;
        let starts: Vec<Array2<f64>> = case["starts"].as_array().unwrap().iter().map(matrix).collect();
        let mut est = BisectingKMeans::new(k)
            .init(BisectingInit::Given(starts))
            .bisecting_strategy(match case["bisecting_strategy"].as_str().unwrap() {
                "largest_cluster" => BisectingStrategy::LargestCluster,
                _ => BisectingStrategy::BiggestInertia,
            })
            .algorithm(match case["algorithm"].as_str().unwrap() {
                "elkan" => Algorithm::Elkan,
                _ => Algorithm::Lloyd,
            });
        if let Some(w) = case["sample_weight"].as_array() {
            est = est.sample_weight(w.iter().map(|v| v.as_f64().unwrap()).collect());
        }
        let m: BisectingKMeansModel<f64> = est.fit(&x.view()).unwrap();
        let labels: Vec<i64> = serde_json::from_value(case["labels"].clone()).unwrap();
        assert_eq!(m.labels, labels, "{name}: labels");
        assert_eq!(m.n_clusters(), k, "{name}");
        close(
            m.inertia,
            case["inertia"].as_f64().unwrap(),
            &format!("{name}: inertia"),
        );
        let centers = matrix(&case["centers"]);
        for (a, b) in m.centers.iter().zip(centers.iter()) {
            close(*a, *b, &format!("{name}: centres"));
        }
        let new = matrix(&case["new"]);
        let predicted: Vec<i64> = serde_json::from_value(case["predict"].clone()).unwrap();
        assert_eq!(m.predict(&new.view()).unwrap(), predicted, "{name}: predict");
        for (a, b) in m
            .transform(new.view())
            .unwrap()
            .iter()
            .zip(matrix(&case["transform"]).iter())
        {
            close(*a, *b, &format!("{name}: transform"));
        }
        // The model file keeps the tree: the same predictions after a round trip.
        let path = dir.path().join(format!("{name}.json"));
        m.save(&path).unwrap();
        let back = BisectingKMeansModel::<f64>::load(&path).unwrap();
        assert_eq!(
            back.predict(&new.view()).unwrap(),
            predicted,
            "{name}: predict after load"
        );
        assert_eq!(back.centers, m.centers, "{name}: centres after load");
    }
}

/// Seeded fits: the same seed gives the same model; the inertia is the weighted sum of
/// squared distances to the assigned centres; every cluster is used; weights of 4 draw and
/// split as weights of 1 (a power-of-two scale is exact) and multiply the inertia by 4.
#[test]
fn seeded_fits_are_consistent() {
    let x = clustr::datasets::load("iris").unwrap().data;
    for strategy in [
        BisectingStrategy::BiggestInertia,
        BisectingStrategy::LargestCluster,
    ] {
        for init in [BisectingInit::Random, BisectingInit::KMeansPlusPlus] {
            let est = BisectingKMeans::new(5)
                .init(init.clone())
                .bisecting_strategy(strategy)
                .n_init(3)
                .seed(4);
            let a = est.fit(&x.view()).unwrap();
            let b = est.fit(&x.view()).unwrap();
            assert_eq!(a, b);
            assert_eq!(a.n_clusters(), 5);
            let direct: f64 = (0..x.nrows())
                .map(|i| {
                    let c = a.centers.row(a.labels[i] as usize);
                    x.row(i)
                        .iter()
                        .zip(c)
                        .map(|(p, q)| (p - q) * (p - q))
                        .sum::<f64>()
                })
                .sum();
            close(a.inertia, direct, "inertia");
            let ones = est
                .clone()
                .sample_weight(vec![1.0; x.nrows()])
                .fit(&x.view())
                .unwrap();
            let fours = est
                .clone()
                .sample_weight(vec![4.0; x.nrows()])
                .fit(&x.view())
                .unwrap();
            assert_eq!(fours.labels, ones.labels);
            assert_eq!(fours.centers, ones.centers);
            close(fours.inertia, 4.0 * ones.inertia, "weighted inertia");
        }
    }
}

#[test]
fn bad_parameters_are_refused() {
    let x = ndarray::array![[0.0], [1.0], [5.0]];
    assert!(BisectingKMeans::new(0).fit(&x.view()).is_err());
    assert!(BisectingKMeans::new(4).fit(&x.view()).is_err());
    assert!(BisectingKMeans::new(2).n_init(0).fit(&x.view()).is_err());
    assert!(BisectingKMeans::new(2)
        .algorithm(Algorithm::Hamerly)
        .fit(&x.view())
        .is_err());
    let wrong = BisectingInit::Given(vec![ndarray::array![[0.0, 1.0], [2.0, 3.0]]]);
    assert!(BisectingKMeans::new(2).init(wrong).fit(&x.view()).is_err());
    // Three clusters of three distinct points always exist.
    assert_eq!(BisectingKMeans::new(3).fit(&x.view()).unwrap().n_clusters(), 3);
}
