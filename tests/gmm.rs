//! Gaussian mixtures against scikit-learn's `GaussianMixture` from the same initial
//! responsibilities (tests/fixtures/sklearn_reference.json), and invariants.

use clustr::mixture::{CovarianceType, Covariances, GaussianMixture, GmmInit};
use clustr::{Clustering, Error, Fit, Predict};
use ndarray::Array2;
use serde_json::Value;

fn matrix(v: &Value) -> Array2<f64> {
    let rows: Vec<Vec<f64>> = serde_json::from_value(v.clone()).unwrap();
    let (n, d) = (rows.len(), rows[0].len());
    Array2::from_shape_vec((n, d), rows.into_iter().flatten().collect()).unwrap()
}

/// Every number of a nested JSON array, in order.
fn flat(v: &Value) -> Vec<f64> {
    match v {
        Value::Array(a) => a.iter().flat_map(flat).collect(),
        v => vec![v.as_f64().unwrap()],
    }
}

fn cov_flat(c: &Covariances) -> Vec<f64> {
    match c {
        Covariances::Full(a) => a.iter().copied().collect(),
        Covariances::Tied(a) | Covariances::Diag(a) => a.iter().copied().collect(),
        Covariances::Spherical(a) => a.to_vec(),
    }
}

fn assert_close(ours: &[f64], theirs: &[f64], tol: f64, what: &str) {
    assert_eq!(ours.len(), theirs.len(), "{what}: length");
    for (i, (a, b)) in ours.iter().zip(theirs).enumerate() {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "{what}[{i}]: clustr {a} vs sklearn {b}"
        );
    }
}

fn covariance_type(name: &str) -> CovarianceType {
    match name {
        "full" => CovarianceType::Full,
        "tied" => CovarianceType::Tied,
        "diag" => CovarianceType::Diag,
        "spherical" => CovarianceType::Spherical,
        other => panic!("unknown covariance type {other}"),
    }
}

#[test]
fn em_matches_sklearn_from_the_same_responsibilities() {
    let f: Value = serde_json::from_str(include_str!("fixtures/sklearn_reference.json")).unwrap();
    let cases = f["gmm"].as_array().unwrap();
    assert_eq!(cases.len(), 16);
    for case in cases {
        let data = &f["gmm_inputs"][case["data"].as_str().unwrap()];
        let x = matrix(&data["x"]);
        let resp = matrix(&data[case["init"].as_str().unwrap()]);
        let k = case["k"].as_u64().unwrap() as usize;
        let ct = covariance_type(case["covariance_type"].as_str().unwrap());
        let what = format!("{} {} {}", case["data"], case["init"], ct.name());
        let m = GaussianMixture::new(k)
            .covariance_type(ct)
            .init(GmmInit::Responsibilities(resp))
            .fit(&x.view())
            .unwrap();
        assert_eq!(
            m.n_iter as u64,
            case["n_iter"].as_u64().unwrap(),
            "{what}: n_iter"
        );
        assert_eq!(
            m.converged,
            case["converged"].as_bool().unwrap(),
            "{what}: converged"
        );
        let mix = &m.mixture;
        assert_close(
            mix.weights.as_slice().unwrap(),
            &flat(&case["weights"]),
            1e-6,
            &format!("{what}: weights"),
        );
        assert_close(
            mix.means.as_slice().unwrap(),
            &flat(&case["means"]),
            1e-6,
            &format!("{what}: means"),
        );
        assert_close(
            &cov_flat(&mix.covariances),
            &flat(&case["covariances"]),
            1e-6,
            &format!("{what}: covariances"),
        );
        assert_close(
            &cov_flat(&mix.precisions_cholesky),
            &flat(&case["precisions_cholesky"]),
            1e-6,
            &format!("{what}: precisions_cholesky"),
        );
        assert_close(
            &[m.lower_bound],
            &[case["lower_bound"].as_f64().unwrap()],
            1e-8,
            &format!("{what}: lower bound"),
        );
        let score = m.score(x.view()).unwrap();
        assert_close(
            &[score],
            &[case["score"].as_f64().unwrap()],
            1e-8,
            &format!("{what}: score"),
        );
        assert_close(
            &[m.bic(x.view()).unwrap()],
            &[case["bic"].as_f64().unwrap()],
            1e-8,
            &format!("{what}: bic"),
        );
        assert_close(
            &[m.aic(x.view()).unwrap()],
            &[case["aic"].as_f64().unwrap()],
            1e-8,
            &format!("{what}: aic"),
        );
        let labels: Vec<i64> = serde_json::from_value(case["labels"].clone()).unwrap();
        assert_eq!(m.labels, labels, "{what}: labels");
        let head = x.slice(ndarray::s![..20, ..]);
        let proba = m.predict_proba(head).unwrap();
        assert_close(
            proba.as_slice().unwrap(),
            &flat(&case["proba_head"]),
            1e-6,
            &format!("{what}: proba"),
        );
        let ss = m.score_samples(head).unwrap();
        assert_close(
            ss.as_slice().unwrap(),
            &flat(&case["score_samples_head"]),
            1e-8,
            &format!("{what}: score_samples"),
        );
    }
}

fn blobs() -> Array2<f64> {
    clustr::datasets::Blobs::new(400, 3)
        .n_features(2)
        .cluster_std(0.6)
        .seed(11)
        .generate()
        .unwrap()
        .data
}

#[test]
fn every_initialisation_fits_and_recovers_blobs() {
    let x = blobs();
    let truth = clustr::datasets::Blobs::new(400, 3)
        .n_features(2)
        .cluster_std(0.6)
        .seed(11)
        .generate()
        .unwrap()
        .target;
    // Means half a unit off the true ones.
    let near_true_means = Array2::from_shape_fn((3, 2), |(c, j)| {
        let rows: Vec<usize> = (0..truth.len()).filter(|&i| truth[i] == c as i64).collect();
        x.select(ndarray::Axis(0), &rows).column(j).mean().unwrap() + 0.5
    });
    let inits = [
        GmmInit::KMeans,
        GmmInit::KMeansPlusPlus,
        GmmInit::Random,
        GmmInit::RandomFromData,
        GmmInit::Means(near_true_means.clone()),
        GmmInit::from_labels(&truth, 3).unwrap(),
    ];
    for init in inits {
        let name = format!("{init:?}").chars().take(20).collect::<String>();
        // Random responsibilities start every mean at the data mean; EM leaves it slowly.
        let m = GaussianMixture::new(3)
            .init(init)
            .n_init(3)
            .tol(1e-6)
            .max_iter(1000)
            .seed(5)
            .fit(&x.view())
            .unwrap();
        let ari = clustr::eval::adjusted_rand_score(&truth, &m.labels).unwrap();
        assert!(ari > 0.95, "{name}: ARI {ari}");
        assert!((m.mixture.weights.sum() - 1.0).abs() < 1e-12);
    }
}

#[test]
fn same_seed_same_model_for_any_thread_count() {
    let x = blobs();
    let fit = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| GaussianMixture::new(3).n_init(2).seed(9).fit(&x.view()).unwrap())
    };
    assert_eq!(fit(1), fit(2));
}

#[test]
fn warm_start_continues_from_the_model() {
    let x = blobs();
    let first = GaussianMixture::new(3)
        .max_iter(2)
        .tol(0.0)
        .seed(1)
        .fit(&x.view())
        .unwrap();
    assert!(!first.converged() && first.n_iter == 2);
    let cont = GaussianMixture::new(3)
        .init(GmmInit::WarmStart(Box::new(first.clone())))
        .max_iter(3)
        .tol(0.0)
        .fit(&x.view())
        .unwrap();
    let whole = GaussianMixture::new(3)
        .max_iter(5)
        .tol(0.0)
        .seed(1)
        .fit(&x.view())
        .unwrap();
    assert_eq!(cont.lower_bounds[..], whole.lower_bounds[2..]);
    assert_eq!(cont.mixture, whole.mixture);
}

#[test]
fn sampling_follows_the_mixture() {
    let x = blobs();
    let m = GaussianMixture::new(3).seed(2).fit(&x.view()).unwrap();
    let (s, labels) = m.sample(30_000, 3).unwrap();
    assert_eq!(s.nrows(), 30_000);
    assert!(labels.windows(2).all(|w| w[0] <= w[1]), "grouped by component");
    for c in 0..3 {
        let rows: Vec<usize> = (0..labels.len()).filter(|&i| labels[i] == c as i64).collect();
        let frac = rows.len() as f64 / 30_000.0;
        assert!((frac - m.mixture.weights[c]).abs() < 0.015, "weight of {c}");
        let mean = s
            .select(ndarray::Axis(0), &rows)
            .mean_axis(ndarray::Axis(0))
            .unwrap();
        for j in 0..2 {
            assert!((mean[j] - m.mixture.means[[c, j]]).abs() < 0.06, "mean of {c}");
        }
    }
    // The samples are as likely under the model as the training data.
    assert!((m.score(s.view()).unwrap() - m.score(x.view()).unwrap()).abs() < 0.1);
}

#[test]
fn bad_input_is_an_error() {
    let x = blobs();
    let err = |g: GaussianMixture| g.fit(&x.view()).unwrap_err();
    assert!(matches!(
        err(GaussianMixture::new(0)),
        Error::InvalidParameter { .. }
    ));
    assert!(matches!(
        err(GaussianMixture::new(3).reg_covar(-1.0)),
        Error::InvalidParameter { .. }
    ));
    assert!(matches!(
        err(GaussianMixture::new(3).n_init(0)),
        Error::InvalidParameter { .. }
    ));
    assert!(matches!(
        err(GaussianMixture::new(3).init(GmmInit::Means(Array2::zeros((2, 2))))),
        Error::ShapeMismatch { .. }
    ));
    assert!(matches!(
        err(GaussianMixture::new(3).init(GmmInit::Responsibilities(Array2::zeros((5, 3))))),
        Error::ShapeMismatch { .. }
    ));
    // Collapsed points without regularisation: a clear error, not NaN.
    let dup = Array2::<f64>::ones((10, 2));
    let e = GaussianMixture::new(2)
        .reg_covar(0.0)
        .fit(&dup.view())
        .unwrap_err();
    assert!(e.to_string().contains("reg_covar"), "{e}");
    let mut nan = x.clone();
    nan[[3, 1]] = f64::NAN;
    assert!(matches!(
        GaussianMixture::new(2).fit(&nan.view()).unwrap_err(),
        Error::NonFinite { row: 3, col: 1, .. }
    ));
    let m = GaussianMixture::new(2).fit(&x.view()).unwrap();
    assert!(matches!(
        m.predict(&Array2::<f64>::zeros((3, 5)).view()).unwrap_err(),
        Error::ShapeMismatch { .. }
    ));
}

/// A mixture rebuilt from a fitted model's weights, means and covariances predicts as the
/// model, and EM started from it (warm start) ends where the fitted run ended; wrong shapes
/// and weights are refused.
#[test]
fn a_mixture_from_its_parameters_predicts_and_warm_starts_as_the_fit() {
    use clustr::mixture::{GaussianMixtureModel, Mixture};
    let x = clustr::datasets::Blobs::new(400, 3)
        .seed(5)
        .generate()
        .unwrap()
        .data;
    for ct in [
        CovarianceType::Full,
        CovarianceType::Tied,
        CovarianceType::Diag,
        CovarianceType::Spherical,
    ] {
        let fitted = GaussianMixture::new(3)
            .covariance_type(ct)
            .fit(&x.view())
            .unwrap();
        let m = &fitted.mixture;
        let rebuilt = GaussianMixtureModel::from_mixture(
            Mixture::from_parameters(m.weights.clone(), m.means.clone(), m.covariances.clone()).unwrap(),
        );
        let (a, b) = (
            fitted.predict_proba(x.view()).unwrap(),
            rebuilt.predict_proba(x.view()).unwrap(),
        );
        assert!(a.iter().zip(&b).all(|(p, q)| (p - q).abs() < 1e-12), "{ct:?}");
        assert_eq!(rebuilt.predict(&x.view()).unwrap(), fitted.labels, "{ct:?}");
        let warm = GaussianMixture::new(3)
            .covariance_type(ct)
            .init(GmmInit::WarmStart(Box::new(rebuilt)))
            .fit(&x.view())
            .unwrap();
        assert!((warm.lower_bound - fitted.lower_bound).abs() < 1e-6, "{ct:?}");
    }
    let m = GaussianMixture::new(2).fit(&x.view()).unwrap().mixture;
    let wrong_weights =
        Mixture::from_parameters(m.weights.clone() * 2.0, m.means.clone(), m.covariances.clone());
    assert!(matches!(wrong_weights, Err(Error::InvalidParameter { .. })));
    let wrong_shape = Mixture::from_parameters(
        m.weights.clone(),
        m.means.clone(),
        Covariances::Spherical(ndarray::Array1::ones(3)),
    );
    assert!(matches!(wrong_shape, Err(Error::ShapeMismatch { .. })));
}

/// Weighted EM: integer weights give the fit of the rows repeated that many times (weight 0:
/// the row left out), from the same start; bad weights are refused.
#[test]
fn integer_weights_equal_repeated_rows() {
    let x = clustr::datasets::Blobs::new(300, 3)
        .seed(8)
        .generate()
        .unwrap()
        .data;
    let w: Vec<f64> = (0..x.nrows()).map(|i| (i * 7 % 4) as f64).collect();
    let rows: Vec<usize> = (0..x.nrows())
        .flat_map(|i| std::iter::repeat_n(i, w[i] as usize))
        .collect();
    let repeated = x.select(ndarray::Axis(0), &rows);
    let means = x.select(ndarray::Axis(0), &[1, 2, 4]);
    for ct in [
        CovarianceType::Full,
        CovarianceType::Tied,
        CovarianceType::Diag,
        CovarianceType::Spherical,
    ] {
        let est = GaussianMixture::new(3)
            .covariance_type(ct)
            .tol(1e-8)
            .init(GmmInit::Means(means.clone()));
        let weighted = est.clone().sample_weight(w.clone()).fit(&x.view()).unwrap();
        let copies = est.fit(&repeated.view()).unwrap();
        assert_eq!(weighted.n_iter, copies.n_iter, "{ct:?}");
        assert!((weighted.lower_bound - copies.lower_bound).abs() < 1e-9, "{ct:?}");
        let close = |a: &[f64], b: &[f64]| {
            a.iter()
                .zip(b)
                .all(|(p, q)| (p - q).abs() < 1e-8 * (1.0 + q.abs()))
        };
        assert!(close(
            weighted.mixture.means.as_slice().unwrap(),
            copies.mixture.means.as_slice().unwrap()
        ));
        assert!(close(
            weighted.mixture.weights.as_slice().unwrap(),
            copies.mixture.weights.as_slice().unwrap()
        ));
        assert!(close(
            &cov_flat(&weighted.mixture.covariances),
            &cov_flat(&copies.mixture.covariances)
        ));
    }
    let n = x.nrows();
    let bad = |w: Vec<f64>| GaussianMixture::new(2).sample_weight(w).fit(&x.view());
    assert!(matches!(bad(vec![1.0; n - 1]), Err(Error::ShapeMismatch { .. })));
    assert!(matches!(bad(vec![0.0; n]), Err(Error::InvalidParameter { .. })));
    let mut negative = vec![1.0; n];
    negative[7] = -1.0;
    assert!(matches!(bad(negative), Err(Error::InvalidParameter { .. })));
    let mut nan = vec![1.0; n];
    nan[3] = f64::NAN;
    assert!(matches!(bad(nan), Err(Error::NonFinite { .. })));
}
