//! k-means against scikit-learn's `KMeans(algorithm="lloyd")` from the same initial centres
//! (tests/fixtures/sklearn_reference.json), and invariants.

use clustr::kmeans::{Algorithm, KMeans, KMeansInit};
use clustr::{Clustering, Fit, Predict};
use ndarray::Array2;
use serde_json::Value;

fn matrix(v: &Value) -> Array2<f64> {
    let rows: Vec<Vec<f64>> = serde_json::from_value(v.clone()).unwrap();
    let (n, d) = (rows.len(), rows[0].len());
    Array2::from_shape_vec((n, d), rows.into_iter().flatten().collect()).unwrap()
}

#[test]
fn lloyd_matches_sklearn_from_the_same_centres() {
    let f: Value = serde_json::from_str(include_str!("fixtures/sklearn_reference.json")).unwrap();
    for case in f["kmeans"].as_array().unwrap() {
        let name = case["data"].as_str().unwrap();
        let x = if name == "digits" {
            clustr::datasets::load("digits").unwrap().data
        } else {
            matrix(&case["x"])
        };
        let k = case["k"].as_u64().unwrap() as usize;
        for alg in [Algorithm::Lloyd, Algorithm::Auto] {
            let what = format!("{name} k={k} {alg:?}");
            let m = KMeans::new(k)
                .init(KMeansInit::Given(matrix(&case["init"])))
                .algorithm(alg)
                .fit(&x.view())
                .unwrap();
            let labels: Vec<i64> = serde_json::from_value(case["labels"].clone()).unwrap();
            assert_eq!(m.labels, labels, "{what}: labels");
            let centers = matrix(&case["centers"]);
            for ((i, j), c) in centers.indexed_iter() {
                assert!(
                    (m.centers[[i, j]] - c).abs() <= 1e-9 * (1.0 + c.abs()),
                    "{what}: centre [{i}][{j}]"
                );
            }
            let inertia = case["inertia"].as_f64().unwrap();
            assert!(
                (m.inertia - inertia).abs() <= 1e-9 * inertia,
                "{what}: inertia {} vs {inertia}",
                m.inertia
            );
            assert_eq!(
                m.n_iter as u64,
                case["n_iter"].as_u64().unwrap(),
                "{what}: n_iter"
            );
            assert!(m.converged());
        }
    }
}

#[test]
fn invariants_and_errors() {
    let ds = clustr::datasets::Blobs::new(3000, 6)
        .n_features(5)
        .seed(8)
        .generate()
        .unwrap();
    let x = ds.data.view();
    let m = KMeans::new(6).seed(1).fit(&x).unwrap();
    // Labels point to the nearest centre; inertia is the sum of squared distances.
    let t = m.transform(x).unwrap();
    let mut inertia = 0.0;
    for (i, row) in t.rows().into_iter().enumerate() {
        let best = row.iter().cloned().fold(f64::INFINITY, f64::min);
        assert_eq!(row[m.labels[i] as usize], best);
        inertia += best * best;
    }
    assert!((inertia - m.inertia).abs() <= 1e-9 * inertia);
    assert_eq!(m.predict(&x).unwrap(), m.labels);
    // Seeded runs repeat, for any thread count; more runs never give a higher inertia.
    let again = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| KMeans::new(6).seed(1).fit(&x).unwrap());
    assert_eq!(m, again);
    let ten = KMeans::new(6).seed(1).n_init(10).fit(&x).unwrap();
    assert!(ten.inertia <= m.inertia);
    let ari = clustr::eval::adjusted_rand_index(&ds.target, &ten.labels).unwrap();
    assert!(ari > 0.9, "best of 10 runs recovers the blobs: ARI {ari}");
    let random = KMeans::new(6).init(KMeansInit::Random).seed(2).fit(&x).unwrap();
    assert!(random.inertia.is_finite());
    // An empty cluster is re-seeded: two identical initial centres.
    let mut init = m.centers.clone();
    let c0 = init.row(0).to_owned();
    init.row_mut(1).assign(&c0);
    let r = KMeans::new(6).init(KMeansInit::Given(init)).fit(&x).unwrap();
    assert_eq!(r.n_clusters(), 6);
    let mut sizes = [0usize; 6];
    r.labels.iter().for_each(|&l| sizes[l as usize] += 1);
    assert!(sizes.iter().all(|&s| s > 0), "{sizes:?}");
    // Errors.
    assert!(KMeans::new(0).fit(&x).is_err());
    assert!(KMeans::new(6).n_init(0).fit(&x).is_err());
    assert!(KMeans::new(6).tol(-1.0).fit(&x).is_err());
    assert!(KMeans::new(2)
        .init(KMeansInit::Given(Array2::zeros((3, 5))))
        .fit(&x)
        .is_err());
    let nan = ndarray::array![[0.0, f64::NAN]];
    assert!(KMeans::new(1)
        .fit(&nan.view())
        .unwrap_err()
        .to_string()
        .contains("row 0, column 1"));
}

#[test]
fn hamerly_elkan_and_auto_equal_lloyd() {
    for (n, k, d, seed) in [
        (2000, 5, 2, 1),
        (3000, 40, 8, 2),
        (1500, 100, 3, 3),
        (1000, 150, 40, 4),
        (1000, 200, 3, 5),
        (1500, 300, 4, 6),
        (800, 12, 160, 7),
    ] {
        let x = clustr::datasets::Blobs::new(n, k / 2 + 1)
            .n_features(d)
            .cluster_std(2.0)
            .seed(seed)
            .generate()
            .unwrap()
            .data;
        let lloyd = KMeans::new(k)
            .seed(seed)
            .algorithm(Algorithm::Lloyd)
            .fit(&x.view())
            .unwrap();
        assert_eq!(lloyd.algorithm, Algorithm::Lloyd);
        for alg in [Algorithm::Hamerly, Algorithm::Elkan, Algorithm::Auto] {
            let other = KMeans::new(k).seed(seed).algorithm(alg).fit(&x.view()).unwrap();
            let what = format!("{alg:?} n={n} k={k} d={d}");
            assert_eq!(lloyd.labels, other.labels, "{what}");
            assert_eq!(lloyd.n_iter, other.n_iter, "{what}");
            assert_eq!(lloyd.centers, other.centers, "{what}");
            assert_eq!(other.algorithm, alg.resolve(n, k, d), "{what}");
        }
    }
    // The crossover table of the module comment.
    assert_eq!(Algorithm::Auto.resolve(100_000, 16, 256), Algorithm::Lloyd);
    assert_eq!(Algorithm::Auto.resolve(100_000, 64, 256), Algorithm::Hamerly);
    assert_eq!(Algorithm::Auto.resolve(100_000, 1024, 16), Algorithm::Hamerly);
    assert_eq!(Algorithm::Auto.resolve(100_000, 4096, 64), Algorithm::Hamerly);
}
