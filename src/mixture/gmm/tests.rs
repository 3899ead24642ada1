//! Gaussian mixtures' tests.

use super::*;
use crate::estimator::Predict;
use ndarray::array;
use ndarray::Axis;
use std::f64::consts::PI;

/// Every covariance type evaluates the same density as a direct formula.
#[test]
fn log_density_matches_the_formula() {
    let x = array![[0.0, 1.0], [2.0, -1.0], [0.5, 0.5], [3.0, 2.0], [-1.0, 0.0]];
    let resp = array![[1.0, 0.0], [0.3, 0.7], [0.5, 0.5], [0.0, 1.0], [0.9, 0.1]];
    for ct in [
        CovarianceType::Full,
        CovarianceType::Tied,
        CovarianceType::Diag,
        CovarianceType::Spherical,
    ] {
        let mix = Mixture::estimate(x.view(), resp.view(), 1e-6, ct, &crate::comm::SingleProcess).unwrap();
        let lp = mix.weighted_log_prob(x.view());
        for c in 0..2 {
            let cov = match &mix.covariances {
                Covariances::Full(v) => v.index_axis(Axis(0), c).to_owned(),
                Covariances::Tied(v) => v.clone(),
                Covariances::Diag(v) => Array2::from_diag(&v.row(c)),
                Covariances::Spherical(v) => Array2::eye(2) * v[c],
            };
            let det = cov[[0, 0]] * cov[[1, 1]] - cov[[0, 1]] * cov[[1, 0]];
            let inv = array![[cov[[1, 1]], -cov[[0, 1]]], [-cov[[1, 0]], cov[[0, 0]]]] / det;
            for i in 0..x.nrows() {
                let diff = &x.row(i) - &mix.means.row(c);
                let q = diff.dot(&inv.dot(&diff));
                let expected = mix.weights[c].ln() - (2.0 * PI).ln() - 0.5 * det.ln() - 0.5 * q;
                assert!((lp[[i, c]] - expected).abs() < 1e-10, "{ct:?} {i} {c}");
            }
        }
    }
}

/// EM never decreases the log-likelihood, and fit labels equal predict.
#[test]
fn em_is_monotone_and_labels_match_predict() {
    let data = crate::datasets::Blobs::new(300, 3)
        .n_features(3)
        .seed(4)
        .generate()
        .unwrap();
    for ct in [
        CovarianceType::Full,
        CovarianceType::Tied,
        CovarianceType::Diag,
        CovarianceType::Spherical,
    ] {
        let m = GaussianMixture::new(3)
            .covariance_type(ct)
            .init(GmmInit::Random)
            .tol(0.0)
            .max_iter(30)
            .fit(&data.data.view())
            .unwrap();
        assert!(m.lower_bounds.windows(2).all(|w| w[1] >= w[0] - 1e-10), "{ct:?}");
        assert_eq!(m.labels, m.predict(&data.data.view()).unwrap());
        assert!(!m.converged && m.n_iter == 30);
        let proba = m.predict_proba(data.data.view()).unwrap();
        assert!(proba.rows().into_iter().all(|r| (r.sum() - 1.0).abs() < 1e-12));
    }
}
