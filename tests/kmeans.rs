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
    let ari = clustr::eval::adjusted_rand_score(&ds.target, &ten.labels).unwrap();
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
    // Low dimensions.
    assert_eq!(Algorithm::Auto.resolve(100_000, 8, 2), Algorithm::Lloyd);
    assert_eq!(Algorithm::Auto.resolve(10_000, 64, 8), Algorithm::Lloyd);
    assert_eq!(Algorithm::Auto.resolve(100_000, 512, 2), Algorithm::Lloyd);
    assert_eq!(Algorithm::Auto.resolve(100_000, 512, 8), Algorithm::Lloyd);
    assert_eq!(Algorithm::Auto.resolve(100_000, 64, 32), Algorithm::Hamerly);
    assert_eq!(Algorithm::Auto.resolve(100_000, 512, 32), Algorithm::Hamerly);
    assert_eq!(Algorithm::Auto.resolve(100_000, 1024, 8), Algorithm::Hamerly);
}

#[test]
fn weighted_lloyd_matches_sklearn_from_the_same_centres() {
    let f: Value = serde_json::from_str(include_str!("fixtures/sklearn_reference.json")).unwrap();
    let blobs = f["kmeans"].as_array().unwrap()[0]["x"].clone();
    let cases = f["kmeans_weighted"].as_array().unwrap();
    assert_eq!(cases.len(), 12);
    for case in cases {
        let name = case["data"].as_str().unwrap();
        let x = if name == "digits" {
            clustr::datasets::load("digits").unwrap().data
        } else {
            matrix(&blobs)
        };
        let k = case["k"].as_u64().unwrap() as usize;
        let w: Vec<f64> = serde_json::from_value(case["sample_weight"].clone()).unwrap();
        // scikit-learn's elkan gives lloyd's result, as ours: every algorithm against both.
        for alg in [Algorithm::Lloyd, Algorithm::Hamerly, Algorithm::Elkan] {
            let what = format!(
                "{name} k={k} {} weights, sklearn {}, ours {alg:?}",
                case["weights"], case["algorithm"]
            );
            let m = KMeans::new(k)
                .init(KMeansInit::Given(matrix(&case["init"])))
                .algorithm(alg)
                .sample_weight(w.clone())
                .fit(&x.view())
                .unwrap();
            let labels: Vec<i64> = serde_json::from_value(case["labels"].clone()).unwrap();
            assert_eq!(m.labels, labels, "{what}: labels");
            for ((i, j), c) in matrix(&case["centers"]).indexed_iter() {
                assert!(
                    (m.centers[[i, j]] - c).abs() <= 1e-9 * (1.0 + c.abs()),
                    "{what}: centre [{i}][{j}] {} vs {c}",
                    m.centers[[i, j]]
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
        }
    }
}

/// Blobs with integer weights 0..=3, and the same rows repeated that many times.
fn weighted_and_repeated(seed: u64) -> (Array2<f64>, Vec<f64>, Array2<f64>, Vec<usize>) {
    let x = clustr::datasets::Blobs::new(900, 5)
        .n_features(3)
        .cluster_std(1.5)
        .seed(seed)
        .generate()
        .unwrap()
        .data;
    let w: Vec<f64> = (0..x.nrows())
        .map(|i| ((i * 7 + seed as usize) % 4) as f64)
        .collect();
    let rows: Vec<usize> = (0..x.nrows())
        .flat_map(|i| std::iter::repeat_n(i, w[i] as usize))
        .collect();
    let repeated = x.select(ndarray::Axis(0), &rows);
    (x, w, repeated, rows)
}

#[test]
fn integer_weights_equal_repeated_rows() {
    for seed in [1, 2, 3] {
        let (x, w, repeated, rows) = weighted_and_repeated(seed);
        let init = KMeans::new(6)
            .seed(seed)
            .n_init(1)
            .max_iter(1)
            .fit(&x.view())
            .unwrap()
            .centers;
        for alg in [Algorithm::Lloyd, Algorithm::Hamerly, Algorithm::Elkan] {
            let params = KMeans::new(6)
                .init(KMeansInit::Given(init.clone()))
                .algorithm(alg);
            let weighted = params.clone().sample_weight(w.clone()).fit(&x.view()).unwrap();
            let copies = params.fit(&repeated.view()).unwrap();
            let what = format!("seed {seed} {alg:?}");
            let copied_labels: Vec<i64> = rows.iter().map(|&i| weighted.labels[i]).collect();
            assert_eq!(copied_labels, copies.labels, "{what}: labels");
            assert_eq!(weighted.n_iter, copies.n_iter, "{what}: n_iter");
            assert!(
                (weighted.inertia - copies.inertia).abs() <= 1e-9 * copies.inertia,
                "{what}"
            );
            for (a, b) in weighted.centers.iter().zip(&copies.centers) {
                assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "{what}: {a} vs {b}");
            }
        }
    }
}

#[test]
fn weighted_seeding_and_invariants() {
    let (x, w, _, _) = weighted_and_repeated(4);
    for init in [KMeansInit::KMeansPlusPlus, KMeansInit::Random] {
        for seed in 0..20 {
            let m = KMeans::new(6)
                .init(init.clone())
                .n_init(1)
                .max_iter(1)
                .seed(seed)
                .sample_weight(w.clone())
                .fit(&x.view())
                .unwrap();
            // Weighted inertia: Σ wᵢ·‖xᵢ − c(i)‖², with every label its nearest centre.
            let t = m.transform(x.view()).unwrap();
            let mut inertia = 0.0;
            for (i, row) in t.rows().into_iter().enumerate() {
                let best = row.iter().cloned().fold(f64::INFINITY, f64::min);
                assert_eq!(row[m.labels[i] as usize], best);
                inertia += w[i] * best * best;
            }
            assert!(
                (inertia - m.inertia).abs() <= 1e-9 * inertia,
                "{init:?} seed {seed}"
            );
        }
    }
    // Seeding never picks a point of weight 0: with one iteration from k-means++ the centres
    // are weighted means, so check the seeds directly through max_iter 0 instead.
    let seeds_of = |init: KMeansInit, seed: u64| {
        let mut m = KMeans::new(6)
            .init(init)
            .n_init(1)
            .seed(seed)
            .sample_weight(w.clone());
        m.max_iter = 0;
        m.fit(&x.view()).unwrap().centers
    };
    for init in [KMeansInit::KMeansPlusPlus, KMeansInit::Random] {
        for seed in 0..20 {
            for c in seeds_of(init.clone(), seed).rows() {
                let i = x.rows().into_iter().position(|r| r == c).expect("a data point");
                assert!(w[i] > 0.0, "{init:?} seed {seed}: seeded on row {i} of weight 0");
            }
        }
    }
    // From the same centres, all weights 1 is the unweighted fit bit for bit, and scaling the
    // weights changes nothing. (Seeding with weights draws ∝ w, another draw from the same
    // distribution as the unweighted one.)
    for alg in [Algorithm::Lloyd, Algorithm::Hamerly, Algorithm::Elkan] {
        let start = KMeans::new(6).seed(3).max_iter(1).fit(&x.view()).unwrap().centers;
        let given = KMeans::new(6).init(KMeansInit::Given(start)).algorithm(alg);
        let plain = given.fit(&x.view()).unwrap();
        let ones = given
            .clone()
            .sample_weight(vec![1.0; x.nrows()])
            .fit(&x.view())
            .unwrap();
        assert_eq!(plain, ones, "{alg:?}");
        let a = given.clone().sample_weight(w.clone()).fit(&x.view()).unwrap();
        let b = given
            .sample_weight(w.iter().map(|v| v * 1000.0).collect())
            .fit(&x.view())
            .unwrap();
        assert_eq!(a.labels, b.labels);
        assert!((a.inertia * 1000.0 - b.inertia).abs() <= 1e-9 * b.inertia);
    }
    // Any thread count gives the same weighted fit.
    let fit = || {
        KMeans::new(6)
            .seed(5)
            .sample_weight(w.clone())
            .fit(&x.view())
            .unwrap()
    };
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(fit);
    assert_eq!(one, fit());
}

#[test]
fn bad_sample_weights_are_errors() {
    let (x, w, _, _) = weighted_and_repeated(5);
    let fit = |w: Vec<f64>| KMeans::new(3).sample_weight(w).fit(&x.view());
    let mut bad = w.clone();
    bad[10] = -1.0;
    assert!(fit(bad).unwrap_err().to_string().contains("point 10"));
    bad = w.clone();
    bad[3] = f64::NAN;
    assert!(fit(bad).is_err());
    assert!(fit(w[1..].to_vec()).is_err());
    assert!(fit(vec![0.0; x.nrows()]).is_err());
    let mut two = vec![0.0; x.nrows()];
    (two[0], two[1]) = (1.0, 2.0);
    assert!(fit(two).unwrap_err().to_string().contains("at least k = 3"));
}

/// More centres than distinct points, every point on a centre (scikit-learn's
/// test_relocating_with_duplicates): no centre is relocated, the run stops after one
/// iteration with the duplicate's centre left empty.
#[test]
fn centres_on_duplicate_points_are_not_relocated() {
    let x = ndarray::array![[0.0, 0.0], [1.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]];
    for alg in [Algorithm::Lloyd, Algorithm::Elkan, Algorithm::Hamerly] {
        let m = KMeans::new(5)
            .init(KMeansInit::Given(x.clone()))
            .algorithm(alg)
            .fit(&x.view())
            .unwrap();
        assert_eq!(m.n_iter, 1, "{alg:?}");
        assert_eq!(m.labels, vec![0, 1, 1, 3, 4], "{alg:?}");
        assert_eq!(m.centers, x, "{alg:?}");
        let sparse = clustr::data::Csr::from_dense(x.view()).unwrap();
        let s = KMeans::new(5)
            .init(KMeansInit::Given(x.clone()))
            .algorithm(alg)
            .fit(&sparse.view())
            .unwrap();
        assert_eq!(
            (s.n_iter, &s.labels, &s.centers),
            (1, &m.labels, &m.centers),
            "{alg:?} sparse"
        );
    }
}

/// Equal weights give the unweighted fit, seeding included (scikit-learn's
/// test_unit_weights_vs_no_weights), for k-means++ and random starts, dense and sparse.
#[test]
fn equal_weights_give_the_unweighted_fit() {
    let ds = clustr::datasets::Blobs::new(300, 4)
        .n_features(5)
        .seed(2)
        .generate()
        .unwrap();
    let sparse = clustr::data::Csr::from_dense(ds.data.view()).unwrap();
    for init in [KMeansInit::KMeansPlusPlus, KMeansInit::Random] {
        for weight in [1.0, 3.0] {
            let plain = KMeans::new(4).init(init.clone()).seed(42);
            let mut weighted = plain.clone();
            weighted.sample_weight = Some(vec![weight; 300]);
            let (a, b) = (
                plain.fit(&ds.data.view()).unwrap(),
                weighted.fit(&ds.data.view()).unwrap(),
            );
            assert_eq!(a.labels, b.labels, "{init:?} weight {weight}");
            assert!((b.inertia - weight * a.inertia).abs() <= 1e-9 * b.inertia);
            let (s, t) = (
                plain.fit(&sparse.view()).unwrap(),
                weighted.fit(&sparse.view()).unwrap(),
            );
            assert_eq!(s.labels, t.labels, "{init:?} weight {weight} sparse");
        }
    }
}
