//! Gaussian mixture models fitted by EM, with scikit-learn's semantics
//! (`sklearn.mixture.GaussianMixture`, 1.x; Dempster, Laird & Rubin 1977; Bishop 2006 §9.2).
//!
//! - Covariance types full, tied, diag and spherical; `reg_covar` is added to every variance.
//! - Initial responsibilities from k-means (one-hot of its labels), greedy k-means++ or
//!   random-from-data (one-hot on the chosen points only), random (uniform, rows
//!   normalised), given responsibilities, or given means (the one-hot of each point's nearest
//!   mean gives the initial weights and covariances, and the means are the given ones, as
//!   scikit-learn's `means_init`); or a warm start from a fitted model.
//! - Weights `nₖ = Σᵢ rᵢₖ + 10·ε` as scikit-learn; precisions are kept as the Cholesky factor
//!   of the precision matrix (`U = L⁻ᵀ` with `L·Lᵀ = Σ`), through faer.
//! - The E-step works in logs with log-sum-exp; the lower bound is the mean log-likelihood and
//!   EM stops when it changes by less than `tol`; of `n_init` runs the highest lower bound is
//!   kept; a final E-step gives the labels, so `fit` labels equal `predict`.
//! - Non-convergence is reported on the model (`converged`), not as an error; a covariance
//!   that is not positive definite is an error, as scikit-learn's, naming `reg_covar`.
//!
//! Deliberate differences: the diagonal and tied covariances are summed as
//! `Σᵢ rᵢₖ (xᵢ − μₖ)(xᵢ − μₖ)ᵀ` rather than scikit-learn's `E[x²] − μ²`, which avoids
//! cancellation for data far from the origin (results agree to rounding); random draws come
//! from clustr's generator, so only fits from given responsibilities or means reproduce
//! scikit-learn's numbers. Everything is computed in f64; row blocks are reduced in a fixed
//! order, so the result does not depend on the thread count.
//!
//! Files: this one holds the estimator and its EM loop; `mixture.rs` the parameters and the
//! E and M steps' arithmetic; `model.rs` the fitted model and its stored form.

mod mixture;
mod model;
#[cfg(test)]
mod tests;

use crate::comm::{agree, single_process, Communicator, Partition, SharedComm};
use crate::data::validate::{check_finite, check_k, check_magnitude_global, check_slice, Arithmetic};
use crate::error::{Error, Result};
use crate::estimator::shared_setters;
use crate::estimator::{Fit, Progress, ProgressFn};
use crate::kmeans::{greedy_kmeans_plus_plus, random_rows, KMeans};
use crate::linalg::argmax_rows;
use crate::memory::{check_fit, product, MemoryEstimate};
use crate::rng::SeededRng;
pub use mixture::Mixture;
pub use model::{GaussianMixtureModel, StoredGaussianMixture};
use ndarray::{Array1, Array2, Array3, ArrayView2};
use rand::{Rng, SeedableRng};

/// Rows per block of the E- and M-steps (fixed, so sums do not depend on the thread count).
const BLOCK: usize = 1024;

/// The form of each component's covariance matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CovarianceType {
    /// Each component its own general covariance matrix (scikit-learn's default).
    #[default]
    Full,
    /// One general covariance matrix shared by all components.
    Tied,
    /// Each component its own diagonal covariance matrix.
    Diag,
    /// Each component its own single variance.
    Spherical,
}

impl CovarianceType {
    /// The name scikit-learn uses.
    pub fn name(self) -> &'static str {
        match self {
            CovarianceType::Full => "full",
            CovarianceType::Tied => "tied",
            CovarianceType::Diag => "diag",
            CovarianceType::Spherical => "spherical",
        }
    }
}

impl std::str::FromStr for CovarianceType {
    type Err = Error;
    /// scikit-learn's names: `full`, `tied`, `diag`, `spherical`.
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "full" => CovarianceType::Full,
            "tied" => CovarianceType::Tied,
            "diag" => CovarianceType::Diag,
            "spherical" => CovarianceType::Spherical,
            other => {
                return Err(Error::param(
                    "covariance",
                    other,
                    "expected full, tied, diag or spherical",
                ))
            }
        })
    }
}

/// Covariance matrices, or the Cholesky factors of the precisions, in scikit-learn's shapes.
#[derive(Clone, Debug, PartialEq)]
pub enum Covariances {
    /// k × d × d.
    Full(Array3<f64>),
    /// d × d.
    Tied(Array2<f64>),
    /// k × d.
    Diag(Array2<f64>),
    /// k.
    Spherical(Array1<f64>),
}

/// How EM starts.
#[derive(Clone, Debug, Default)]
pub enum GmmInit {
    /// One-hot responsibilities from the labels of k-means (`n_init = 1`, k-means++ seeding).
    #[default]
    KMeans,
    /// One-hot responsibilities on the points greedy k-means++ picks (the others get none).
    KMeansPlusPlus,
    /// Uniform random responsibilities, each row normalised.
    Random,
    /// One-hot responsibilities on k distinct points drawn at random.
    RandomFromData,
    /// These responsibilities (n × k, non-negative).
    Responsibilities(Array2<f64>),
    /// These means (k × d); each point's nearest mean gives the initial weights and covariances.
    Means(Array2<f64>),
    /// Continue from a fitted model (scikit-learn's `warm_start`): one run, its parameters and
    /// its lower bound as the starting point.
    WarmStart(Box<GaussianMixtureModel>),
}

impl GmmInit {
    /// One-hot responsibilities of given labels (`labels[i]` in `0..k`).
    pub fn from_labels(labels: &[i64], k: usize) -> Result<Self> {
        let mut resp = Array2::<f64>::zeros((labels.len(), k));
        for (i, &l) in labels.iter().enumerate() {
            if l < 0 || l as usize >= k {
                return Err(Error::param(
                    "init labels",
                    l,
                    format!("label of point {i} must be in 0..{k}"),
                ));
            }
            resp[[i, l as usize]] = 1.0;
        }
        Ok(GmmInit::Responsibilities(resp))
    }
}

/// Parameters of a Gaussian mixture fitted by EM (the estimator).
///
/// ```
/// use clustr::prelude::*;
/// let x = clustr::datasets::load("iris")?.data;
/// use clustr::mixture::{CovarianceType, GaussianMixture};
/// let model = GaussianMixture::new(3).covariance_type(CovarianceType::Diag).seed(1).fit(&x.view())?;
/// let proba = model.predict_proba(x.view())?;
/// assert!((proba.row(0).sum() - 1.0).abs() < 1e-12);
/// # Ok::<(), clustr::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct GaussianMixture {
    /// Number of components (scikit-learn's `n_components`).
    pub k: usize,
    /// Covariance type (default full).
    pub covariance_type: CovarianceType,
    /// Initialisation (default k-means).
    pub init: GmmInit,
    /// Added to every variance (default 1e-6).
    pub reg_covar: f64,
    /// Stop when the mean log-likelihood changes by less than this (default 1e-3).
    pub tol: f64,
    /// EM iterations per run (default 100).
    pub max_iter: usize,
    /// Runs, the highest lower bound kept (default 1).
    pub n_init: usize,
    /// Seed.
    pub seed: u64,
    /// Progress callback (after each EM iteration, with the lower bound as objective).
    pub progress: Option<ProgressFn>,
    /// Weight of each point (this process's rows in a distributed run): weighted EM, where an
    /// integer weight counts as that many copies of the row.
    pub sample_weight: Option<Vec<f64>>,
    /// How the processes of a distributed run combine their sufficient statistics (default:
    /// one process); each fits its own slice of the rows (see [`crate::comm`]).
    pub comm: SharedComm,
}

impl GaussianMixture {
    /// A mixture of `k` components with scikit-learn's defaults.
    pub fn new(k: usize) -> Self {
        GaussianMixture {
            k,
            covariance_type: CovarianceType::Full,
            init: GmmInit::KMeans,
            reg_covar: 1e-6,
            tol: 1e-3,
            max_iter: 100,
            n_init: 1,
            seed: 0,
            progress: None,
            sample_weight: None,
            comm: single_process(),
        }
    }
    /// Covariance type.
    pub fn covariance_type(mut self, c: CovarianceType) -> Self {
        self.covariance_type = c;
        self
    }
    /// Initialisation.
    pub fn init(mut self, init: GmmInit) -> Self {
        self.init = init;
        self
    }
    /// Regularisation added to the variances.
    pub fn reg_covar(mut self, r: f64) -> Self {
        self.reg_covar = r;
        self
    }
    /// Tolerance on the mean log-likelihood.
    pub fn tol(mut self, t: f64) -> Self {
        self.tol = t;
        self
    }
    /// Maximum EM iterations.
    pub fn max_iter(mut self, m: usize) -> Self {
        self.max_iter = m;
        self
    }
    /// Number of runs.
    pub fn n_init(mut self, n: usize) -> Self {
        self.n_init = n;
        self
    }
    /// Weights the points (non-negative, not all zero): each point's responsibilities count
    /// `w` times in the M-step and its log-likelihood `w` times in the lower bound. The
    /// default k-means initialisation is unweighted; give `GmmInit::Means` or a warm start for
    /// a start that is the same as repeating the rows.
    pub fn sample_weight(mut self, w: Vec<f64>) -> Self {
        self.sample_weight = Some(w);
        self
    }

    /// What EM computes from the values: squared deviations divided by a variance, which is at
    /// least `reg_covar`.
    pub(crate) fn arithmetic(&self) -> Arithmetic {
        let scale = if self.reg_covar > 0.0 { self.reg_covar } else { 1.0 };
        Arithmetic::Differences { p: 2.0, scale }
    }

    fn validate(&self, x: ArrayView2<f64>, part: Partition) -> Result<()> {
        check_slice(x, part.offset, part.n_global)?;
        check_k(self.k, part.n_global)?;
        if !(self.reg_covar >= 0.0 && self.reg_covar.is_finite()) {
            return Err(Error::param(
                "reg_covar",
                self.reg_covar,
                "must be finite and non-negative",
            ));
        }
        if !(self.tol >= 0.0 && self.tol.is_finite()) {
            return Err(Error::param("tol", self.tol, "must be finite and non-negative"));
        }
        if self.n_init == 0 {
            return Err(Error::param("n_init", 0, "at least one run"));
        }
        if let Some(w) = &self.sample_weight {
            crate::data::validate::check_sample_weight(w, x.nrows(), false)?;
            crate::data::validate::check_positive_weights(w, self.k)?;
        }
        let (n, d) = x.dim();
        let shape = |what: &str, got: (usize, usize), expected: (usize, usize)| {
            if got == expected {
                Ok(())
            } else {
                Err(Error::ShapeMismatch {
                    what: what.into(),
                    expected: format!("{} x {}", expected.0, expected.1),
                    got: format!("{} x {}", got.0, got.1),
                })
            }
        };
        match &self.init {
            GmmInit::Responsibilities(r) => {
                shape("initial responsibilities", r.dim(), (n, self.k))?;
                check_finite(r.view(), "initial responsibilities")?;
                if let Some(v) = r.iter().find(|v| **v < 0.0) {
                    return Err(Error::param(
                        "initial responsibilities",
                        v,
                        "must be non-negative",
                    ));
                }
            }
            GmmInit::Means(m) => {
                shape("initial means", m.dim(), (self.k, d))?;
                check_finite(m.view(), "initial means")?;
            }
            GmmInit::WarmStart(m) => {
                shape("warm-start means", m.mixture.means.dim(), (self.k, d))?;
                if m.mixture.covariance_type != self.covariance_type {
                    return Err(Error::param(
                        "covariance_type",
                        self.covariance_type.name(),
                        format!("the warm-start model is {}", m.mixture.covariance_type.name()),
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The M-step from responsibilities, each row counted with its point's weight; the
    /// mixture weights are left as the (weighted) counts nₖ.
    fn m_step(&self, x: ArrayView2<f64>, mut resp: Array2<f64>, comm: &dyn Communicator) -> Result<Mixture> {
        if let Some(w) = &self.sample_weight {
            for (mut row, &wi) in resp.rows_mut().into_iter().zip(w) {
                row *= wi;
            }
        }
        Mixture::estimate(x, resp.view(), self.reg_covar, self.covariance_type, comm)
    }

    /// The points' total weight over all processes (n without weights).
    fn total_weight(&self, part: Partition, comm: &dyn Communicator) -> f64 {
        match &self.sample_weight {
            Some(w) => {
                let mut total = [w.iter().sum::<f64>()];
                comm.allreduce_sum(&mut total);
                total[0]
            }
            None => part.n_global as f64,
        }
    }

    /// The weighted mean of the points' log-likelihoods over all processes.
    fn lower_bound(&self, log_norm: &Array1<f64>, comm: &dyn Communicator) -> f64 {
        let mut sums = match &self.sample_weight {
            Some(w) => [log_norm.iter().zip(w).map(|(l, w)| l * w).sum(), w.iter().sum()],
            // (summed in the same order as the weighted sum: unit weights give the same bits)
            None => [log_norm.iter().sum(), log_norm.len() as f64],
        };
        comm.allreduce_sum(&mut sums);
        sums[0] / sums[1]
    }

    /// The starting parameters of one run.
    fn initial_mixture(&self, x: ArrayView2<f64>, part: Partition, rng: &mut SeededRng) -> Result<Mixture> {
        let (n, k) = (x.nrows(), self.k);
        let comm = &*self.comm;
        // One-hot responsibilities for global rows (those of this process).
        let one_hot_rows = |rows: &[usize]| {
            let mut r = Array2::<f64>::zeros((n, k));
            rows.iter()
                .enumerate()
                .filter(|(_, &i)| (part.offset..part.offset + n).contains(&i))
                .for_each(|(c, &i)| r[[i - part.offset, c]] = 1.0);
            r
        };
        let resp = match &self.init {
            GmmInit::KMeans => {
                let mut km = KMeans::new(k)
                    .n_init(1)
                    .seed(rng.random())
                    .communicator(self.comm.clone());
                km.sample_weight = self.sample_weight.clone();
                let km = km.fit(&x)?;
                let mut r = Array2::<f64>::zeros((n, k));
                km.labels
                    .iter()
                    .enumerate()
                    .for_each(|(i, &l)| r[[i, l as usize]] = 1.0);
                r
            }
            GmmInit::KMeansPlusPlus => {
                let w = self.sample_weight.as_deref();
                one_hot_rows(&greedy_kmeans_plus_plus(x, w, k, rng, part, comm)?)
            }
            GmmInit::RandomFromData => {
                let w = self.sample_weight.as_deref();
                one_hot_rows(&random_rows(rng, part.n_global, k, w)?)
            }
            GmmInit::Random => {
                // The draws of all rows in order, this process keeping its own.
                for _ in 0..part.offset * k {
                    let _: f64 = rng.random();
                }
                let mut r = Array2::<f64>::from_shape_simple_fn((n, k), || rng.random::<f64>());
                for _ in 0..(part.n_global - part.offset - n) * k {
                    let _: f64 = rng.random();
                }
                r.rows_mut().into_iter().for_each(|mut row| {
                    let s = row.sum();
                    row /= s;
                });
                r
            }
            GmmInit::Responsibilities(r) => r.clone(),
            GmmInit::Means(m) => {
                let mut r = Array2::<f64>::zeros((n, k));
                for (i, p) in x.rows().into_iter().enumerate() {
                    let sq = |c: usize| {
                        p.iter()
                            .zip(m.row(c))
                            .map(|(a, b)| (a - b) * (a - b))
                            .sum::<f64>()
                    };
                    let best = (1..k).fold(0, |b, c| if sq(c) < sq(b) { c } else { b });
                    r[[i, best]] = 1.0;
                }
                r
            }
            GmmInit::WarmStart(m) => return Ok(m.mixture.clone()),
        };
        let mut mix = self.m_step(x, resp, comm)?;
        // As scikit-learn's `_initialize`: the counts over the total weight (which need not
        // sum to 1 when only k points have responsibilities).
        mix.weights /= self.total_weight(part, comm);
        if let GmmInit::Means(m) = &self.init {
            mix.means.assign(m);
        }
        Ok(mix)
    }
}

shared_setters!(GaussianMixture {
    communicator,
    seed,
    progress
});

impl MemoryEstimate for GaussianMixture {
    /// The n × k log-probabilities and responsibilities (three live at once in EM), per-point
    /// norms and labels, the covariances with their Cholesky factors, the f64 copy of f32
    /// data, and the k-means run of the default initialisation.
    fn memory_estimate(&self, n: usize, d: usize, elem: usize) -> u64 {
        let k = self.k;
        let covariances = match self.covariance_type {
            CovarianceType::Full => product(&[3, k, d, d, 8]),
            CovarianceType::Tied => product(&[3, d, d, 8]),
            CovarianceType::Diag | CovarianceType::Spherical => product(&[3, k, d, 8]),
        };
        let copy = if elem < 8 { product(&[n, d, 8]) } else { 0 };
        let init = match self.init {
            GmmInit::KMeans => KMeans::new(k).n_init(1).memory_estimate(n, d, 8),
            _ => 0,
        };
        product(&[n, k + 1, 3 * 8])
            .saturating_add(covariances)
            .saturating_add(copy)
            .saturating_add(init)
    }
}

impl Fit<ArrayView2<'_, f64>> for GaussianMixture {
    type Model = GaussianMixtureModel;

    fn fit(&self, x: &ArrayView2<'_, f64>) -> Result<GaussianMixtureModel> {
        if let Some(w) = self.sample_weight.as_deref() {
            // The same fit with the weights in their overflow-safe form: every quantity of
            // the mixture is a weighted mean, unchanged by the scaling.
            let scaled = crate::data::validate::ScaledWeights::new(w);
            if scaled.exponent != 0 {
                let mut with_scaled = self.clone();
                with_scaled.sample_weight = Some(scaled.weights);
                return with_scaled.fit(x);
            }
        }
        let comm = &*self.comm;
        let part = Partition::of(x.nrows(), comm);
        agree(self.validate(*x, part), comm)?;
        check_magnitude_global(*x, part.n_global, self.arithmetic(), "a Gaussian mixture", comm)?;
        check_fit(
            self,
            "a Gaussian mixture",
            x.nrows(),
            x.ncols(),
            8,
            crate::error::hints::GMM,
        )?;
        let x = crate::data::standard_layout(*x);
        let x = x.view();
        let (n_init, start_bound) = match &self.init {
            GmmInit::WarmStart(m) => (1, m.lower_bound),
            _ => (self.n_init, f64::NEG_INFINITY),
        };
        let mut rng = SeededRng::seed_from_u64(self.seed);
        let mut best: Option<(Mixture, f64, Vec<f64>, usize, bool)> = None;
        for _ in 0..n_init {
            if let Some(p) = &self.progress {
                p.phase("init");
            }
            let mut mix = self.initial_mixture(x, part, &mut rng)?;
            let mut lower_bound = start_bound;
            let mut bounds = Vec::new();
            let mut converged = false;
            for _ in 0..self.max_iter {
                let prev = lower_bound;
                let (resp, log_norm) = mix.e_step(x);
                mix = self.m_step(x, resp, comm)?;
                let total = mix.weights.sum();
                mix.weights /= total;
                lower_bound = self.lower_bound(&log_norm, comm);
                bounds.push(lower_bound);
                if let Some(p) = &self.progress {
                    p.report(&Progress {
                        iteration: bounds.len(),
                        max_iter: Some(self.max_iter),
                        objective: Some(lower_bound),
                    })?;
                }
                if (lower_bound - prev).abs() < self.tol {
                    converged = true;
                    break;
                }
            }
            if best
                .as_ref()
                .is_none_or(|b| lower_bound > b.1 || b.1 == f64::NEG_INFINITY)
            {
                let n_iter = bounds.len();
                best = Some((mix, lower_bound, bounds, n_iter, converged));
            }
        }
        let (mixture, lower_bound, lower_bounds, n_iter, converged) = best.expect("n_init >= 1");
        let labels = argmax_rows(&mixture.e_step(x).0);
        Ok(GaussianMixtureModel {
            mixture,
            labels,
            lower_bound,
            lower_bounds,
            n_iter,
            converged,
        })
    }
}

impl Fit<ArrayView2<'_, f32>> for GaussianMixture {
    type Model = GaussianMixtureModel;
    /// Fits in f64 on a converted copy of the data.
    fn fit(&self, x: &ArrayView2<'_, f32>) -> Result<GaussianMixtureModel> {
        if self.k <= x.nrows() {
            // (a bad k is reported by the f64 fit's validation)
            check_fit(
                self,
                "a Gaussian mixture",
                x.nrows(),
                x.ncols(),
                4,
                crate::error::hints::GMM,
            )?;
        }
        let x64 = x.mapv(f64::from);
        self.fit(&x64.view())
    }
}
