//! A fitted Gaussian mixture ([`GaussianMixtureModel`]): labels, probabilities, scores,
//! sampling, and its stored form.

use super::{CovarianceType, Covariances, Mixture};
use crate::error::{Error, Result};
use crate::estimator::{Clustering, Predict};
use crate::linalg::{argmax_rows, cholesky_lower};
use crate::model_file::{SaveLoad, StoredArray};
use crate::rng::SeededRng;
use ndarray::{Array1, Array2, ArrayView2, Axis};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};

/// A fitted Gaussian mixture.
#[derive(Clone, Debug, PartialEq)]
pub struct GaussianMixtureModel {
    /// The fitted parameters.
    pub mixture: Mixture,
    /// MAP component of each training point (from the final E-step).
    pub labels: Vec<i64>,
    /// Mean log-likelihood of the training data at the last EM iteration of the kept run
    /// (scikit-learn's `lower_bound_`).
    pub lower_bound: f64,
    /// The lower bound after each iteration of the kept run.
    pub lower_bounds: Vec<f64>,
    /// EM iterations of the kept run.
    pub n_iter: usize,
    /// Whether the kept run met the tolerance before `max_iter`.
    pub converged: bool,
}

impl Clustering for GaussianMixtureModel {
    fn labels(&self) -> &[i64] {
        &self.labels
    }
    /// The negative mean log-likelihood (lower is better).
    fn loss(&self) -> Option<f64> {
        Some(-self.lower_bound)
    }
    fn n_iter(&self) -> usize {
        self.n_iter
    }
    fn converged(&self) -> bool {
        self.converged
    }
}

/// The stored form of a Gaussian mixture: weights, means and covariances in the shape of
/// their type (the precisions are recomputed on loading), and the fit's summary.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct StoredGaussianMixture {
    covariance_type: String,
    weights: StoredArray,
    means: StoredArray,
    covariances: StoredArray,
    lower_bound: f64,
    n_iter: usize,
    converged: bool,
}

impl SaveLoad for GaussianMixtureModel {
    const ALGORITHM: &'static str = "gmm";
    type Stored = StoredGaussianMixture;
    fn to_stored(&self) -> StoredGaussianMixture {
        let m = &self.mixture;
        StoredGaussianMixture {
            covariance_type: m.covariance_type.name().into(),
            weights: StoredArray::from_array(&m.weights),
            means: StoredArray::from_array(&m.means),
            covariances: match &m.covariances {
                Covariances::Full(c) => StoredArray::from_array(c),
                Covariances::Tied(c) | Covariances::Diag(c) => StoredArray::from_array(c),
                Covariances::Spherical(c) => StoredArray::from_array(c),
            },
            lower_bound: self.lower_bound,
            n_iter: self.n_iter,
            converged: self.converged,
        }
    }
    /// The model without training labels, its precisions recomputed from the covariances.
    fn from_stored(s: StoredGaussianMixture) -> Result<Self> {
        let c = &s.covariances;
        let covariances = match s.covariance_type.parse::<CovarianceType>()? {
            CovarianceType::Full => Covariances::Full(c.to_array("covariances")?),
            CovarianceType::Tied => Covariances::Tied(c.to_array("covariances")?),
            CovarianceType::Diag => Covariances::Diag(c.to_array("covariances")?),
            CovarianceType::Spherical => Covariances::Spherical(c.to_array("covariances")?),
        };
        let means = s.means.to_matrix("means")?;
        crate::data::validate::check_magnitude(
            means.view(),
            crate::data::validate::Arithmetic::SQUARES,
            "a Gaussian mixture",
        )?;
        let mixture = Mixture::from_parameters(s.weights.to_array("weights")?, means, covariances)?;
        Ok(GaussianMixtureModel {
            lower_bound: s.lower_bound,
            n_iter: s.n_iter,
            converged: s.converged,
            ..GaussianMixtureModel::from_mixture(mixture)
        })
    }
}

impl GaussianMixtureModel {
    /// A model of given parameters that has not been fitted (no labels, lower bound −∞):
    /// for prediction, or as [`super::GmmInit::WarmStart`] to start EM from these parameters.
    pub fn from_mixture(mixture: Mixture) -> Self {
        GaussianMixtureModel {
            mixture,
            labels: Vec::new(),
            lower_bound: f64::NEG_INFINITY,
            lower_bounds: Vec::new(),
            n_iter: 0,
            converged: false,
        }
    }

    /// New points as the fit takes them, within range of the means.
    fn check(&self, x: ArrayView2<f64>) -> Result<()> {
        crate::data::validate::check_new_points(
            x,
            self.mixture.means.view(),
            crate::data::validate::Arithmetic::SQUARES,
            "a Gaussian mixture",
        )
    }

    /// Posterior probability of each component for each point (n × k).
    pub fn predict_proba(&self, x: ArrayView2<f64>) -> Result<Array2<f64>> {
        self.check(x)?;
        Ok(self.mixture.e_step(x).0)
    }

    /// Log-likelihood of each point.
    pub fn score_samples(&self, x: ArrayView2<f64>) -> Result<Array1<f64>> {
        self.check(x)?;
        Ok(self.mixture.e_step(x).1)
    }

    /// Mean log-likelihood of the points.
    pub fn score(&self, x: ArrayView2<f64>) -> Result<f64> {
        Ok(self.score_samples(x)?.mean().expect("non-empty"))
    }

    /// Bayesian information criterion `−2·n·score + p·ln n` (lower is better).
    pub fn bic(&self, x: ArrayView2<f64>) -> Result<f64> {
        let n = x.nrows() as f64;
        Ok(-2.0 * self.score(x)? * n + self.mixture.n_parameters() as f64 * n.ln())
    }

    /// Akaike information criterion `−2·n·score + 2p` (lower is better).
    pub fn aic(&self, x: ArrayView2<f64>) -> Result<f64> {
        let n = x.nrows() as f64;
        Ok(-2.0 * self.score(x)? * n + 2.0 * self.mixture.n_parameters() as f64)
    }

    /// `n` points drawn from the mixture, with their components; grouped by component as
    /// scikit-learn's `sample`.
    pub fn sample(&self, n: usize, seed: u64) -> Result<(Array2<f64>, Vec<i64>)> {
        if n == 0 {
            return Err(Error::param("n_samples", 0, "at least one sample"));
        }
        let mix = &self.mixture;
        let (k, d) = (mix.k(), mix.d());
        let mut rng = SeededRng::seed_from_u64(seed);
        let total = mix.weights.sum();
        let mut counts = vec![0usize; k];
        for _ in 0..n {
            let mut r = rng.random::<f64>() * total;
            let c = (0..k)
                .find(|&c| {
                    r -= mix.weights[c];
                    r < 0.0
                })
                .unwrap_or(k - 1);
            counts[c] += 1;
        }
        let factor = |c: usize| -> Result<Array2<f64>> {
            Ok(match &mix.covariances {
                Covariances::Full(cov) => {
                    cholesky_lower(cov.index_axis(Axis(0), c)).expect("fitted covariance")
                }
                Covariances::Tied(cov) => cholesky_lower(cov.view()).expect("fitted covariance"),
                Covariances::Diag(cov) => Array2::from_diag(&cov.row(c).mapv(f64::sqrt)),
                Covariances::Spherical(cov) => Array2::eye(d) * cov[c].sqrt(),
            })
        };
        let mut out = Array2::<f64>::zeros((n, d));
        let mut labels = Vec::with_capacity(n);
        let mut row = 0;
        for (c, &m) in counts.iter().enumerate() {
            let l = factor(c)?;
            for _ in 0..m {
                let z = Array1::from_shape_simple_fn(d, || StandardNormal.sample(&mut rng));
                out.row_mut(row).assign(&(&mix.means.row(c) + &l.dot(&z)));
                labels.push(c as i64);
                row += 1;
            }
        }
        Ok((out, labels))
    }
}

impl Predict<ArrayView2<'_, f64>> for GaussianMixtureModel {
    type Output = Vec<i64>;
    /// The most probable component of each point (ties to the lowest index).
    fn predict(&self, x: &ArrayView2<'_, f64>) -> Result<Vec<i64>> {
        self.check(*x)?;
        Ok(argmax_rows(&self.mixture.weighted_log_prob(*x)))
    }
}
