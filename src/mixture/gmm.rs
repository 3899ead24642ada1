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

use crate::comm::{agree, single_process, Communicator, Partition, SharedComm};
use crate::data::validate::{
    check_finite, check_k, check_magnitude_global, check_points, check_same_len, check_slice, Arithmetic,
};
use crate::error::{Error, Result};
use crate::estimator::{Clustering, Fit, Predict, Progress, ProgressFn};
use crate::kmeans::{greedy_kmeans_plus_plus, random_rows, KMeans};
use crate::linalg::{argmax_rows, cholesky_lower, gemm_abt, gram_add, invert_lower};
use crate::memory::{check_fit, product, MemoryEstimate};
use crate::model_file::{SaveLoad, StoredArray};
use crate::rng::SeededRng;
use crate::scalar::Scalar;
use ndarray::{s, Array1, Array2, Array3, ArrayView2, Axis, Zip};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;
use std::f64::consts::PI;

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
    /// The communicator of a distributed run.
    pub fn communicator(mut self, comm: SharedComm) -> Self {
        self.comm = comm;
        self
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
    /// Seed.
    pub fn seed(mut self, s: u64) -> Self {
        self.seed = s;
        self
    }
    /// Progress callback.
    pub fn progress(mut self, p: ProgressFn) -> Self {
        self.progress = Some(p);
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
            None => [log_norm.sum(), log_norm.len() as f64],
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

/// The parameters of a Gaussian mixture.
#[derive(Clone, Debug, PartialEq)]
pub struct Mixture {
    /// Covariance type.
    pub covariance_type: CovarianceType,
    /// Mixture weights (k).
    pub weights: Array1<f64>,
    /// Means (k × d).
    pub means: Array2<f64>,
    /// Covariances, in the shape of the covariance type.
    pub covariances: Covariances,
    /// Cholesky factors of the precision matrices (upper triangular `L⁻ᵀ`), same shapes.
    pub precisions_cholesky: Covariances,
}

impl Mixture {
    /// A mixture from its parameters: k weights (non-negative, summing to 1), k × d means and
    /// covariances in the shape of their type (k × d × d, d × d, k × d or k); the Cholesky
    /// factors of the precisions are computed (scikit-learn's `weights_init`, `means_init`
    /// and `precisions_init` taken together, or a saved model).
    pub fn from_parameters(
        weights: Array1<f64>,
        means: Array2<f64>,
        covariances: Covariances,
    ) -> Result<Mixture> {
        let (k, d) = means.dim();
        let shape_of = |got: &[usize], expected: &[usize], what: &str| -> Result<()> {
            if got != expected {
                return Err(Error::ShapeMismatch {
                    what: what.into(),
                    expected: format!("{expected:?}"),
                    got: format!("{got:?}"),
                });
            }
            Ok(())
        };
        shape_of(weights.shape(), &[k], "mixture weights")?;
        let covariance_type = match &covariances {
            Covariances::Full(c) => {
                shape_of(c.shape(), &[k, d, d], "full covariances")?;
                CovarianceType::Full
            }
            Covariances::Tied(c) => {
                shape_of(c.shape(), &[d, d], "tied covariance")?;
                CovarianceType::Tied
            }
            Covariances::Diag(c) => {
                shape_of(c.shape(), &[k, d], "diagonal covariances")?;
                CovarianceType::Diag
            }
            Covariances::Spherical(c) => {
                shape_of(c.shape(), &[k], "spherical variances")?;
                CovarianceType::Spherical
            }
        };
        crate::data::validate::check_finite(means.view(), "mixture means")?;
        let total = weights.sum();
        if weights.iter().any(|w| !(w.is_finite() && *w >= 0.0)) || (total - 1.0).abs() > 1e-6 {
            return Err(Error::param(
                "weights",
                format!("{weights}"),
                "must be non-negative and sum to 1",
            ));
        }
        let precisions_cholesky = precision_cholesky(&covariances)?;
        Ok(Mixture {
            covariance_type,
            weights,
            means,
            covariances,
            precisions_cholesky,
        })
    }

    /// Number of components.
    pub fn k(&self) -> usize {
        self.means.nrows()
    }

    /// Number of features.
    pub fn d(&self) -> usize {
        self.means.ncols()
    }

    /// The M-step (scikit-learn's `_estimate_gaussian_parameters` and
    /// `_compute_precision_cholesky`): weights (unnormalised, `nₖ`), means and covariances from
    /// responsibilities.
    fn estimate(
        x: ArrayView2<f64>,
        resp: ArrayView2<f64>,
        reg_covar: f64,
        covariance_type: CovarianceType,
        comm: &dyn Communicator,
    ) -> Result<Mixture> {
        let (n, d) = x.dim();
        let k = resp.ncols();
        // Pass 1: nₖ and Σ rᵢₖ xᵢ.
        let (nk, sums) = reduce_blocks(
            n,
            || (Array1::<f64>::zeros(k), Array2::<f64>::zeros((k, d))),
            |(mut nk, mut sums), rows| {
                let (xb, rb) = (x.slice(s![rows.clone(), ..]), resp.slice(s![rows, ..]));
                nk += &rb.sum_axis(Axis(0));
                sums += &rb.t().dot(&xb);
                (nk, sums)
            },
            |(a, b), (c, e)| (a + c, b + e),
        );
        let (mut nk, mut sums) = (nk, sums);
        comm.allreduce_sum(nk.as_slice_mut().expect("contiguous"));
        comm.allreduce_sum(sums.as_slice_mut().expect("standard layout"));
        let nk = nk + 10.0 * f64::EPSILON;
        let means = &sums / &nk.view().insert_axis(Axis(1));
        // Pass 2: scatter about the means.
        let covariances = match covariance_type {
            CovarianceType::Full | CovarianceType::Tied => {
                let mut scatter = reduce_blocks(
                    n,
                    || Array3::<f64>::zeros((k, d, d)),
                    |mut acc, rows| {
                        let xb = x.slice(s![rows.clone(), ..]);
                        let rb = resp.slice(s![rows, ..]);
                        let mut w = Array2::<f64>::zeros(xb.dim());
                        for c in 0..k {
                            let m = means.row(c);
                            let m = m.as_slice().expect("standard layout");
                            for ((mut wr, xr), &r) in
                                w.rows_mut().into_iter().zip(xb.rows()).zip(rb.column(c))
                            {
                                let (wr, xr) = (
                                    wr.as_slice_mut().expect("standard"),
                                    xr.to_slice().expect("standard"),
                                );
                                let sr = r.sqrt();
                                (0..d).for_each(|j| wr[j] = sr * (xr[j] - m[j]));
                            }
                            gram_add(w.view(), acc.index_axis_mut(Axis(0), c));
                        }
                        acc
                    },
                    |a, b| a + b,
                );
                comm.allreduce_sum(scatter.as_slice_mut().expect("standard layout"));
                if covariance_type == CovarianceType::Full {
                    let mut cov = scatter / nk.view().insert_axis(Axis(1)).insert_axis(Axis(2));
                    for mut c in cov.outer_iter_mut() {
                        c.diag_mut().iter_mut().for_each(|v| *v += reg_covar);
                    }
                    Covariances::Full(cov)
                } else {
                    let mut cov = scatter.sum_axis(Axis(0)) / nk.sum();
                    cov.diag_mut().iter_mut().for_each(|v| *v += reg_covar);
                    Covariances::Tied(cov)
                }
            }
            CovarianceType::Diag | CovarianceType::Spherical => {
                let mut sq = reduce_blocks(
                    n,
                    || Array2::<f64>::zeros((k, d)),
                    |mut acc, rows| {
                        let acc_s = acc.as_slice_mut().expect("standard layout");
                        let m = means.as_slice().expect("standard layout");
                        for i in rows {
                            let xr = x.row(i);
                            let xr = xr.to_slice().expect("standard layout");
                            for c in 0..k {
                                let r = resp[[i, c]];
                                let (a, mc) = (&mut acc_s[c * d..(c + 1) * d], &m[c * d..(c + 1) * d]);
                                (0..d).for_each(|j| a[j] += r * (xr[j] - mc[j]) * (xr[j] - mc[j]));
                            }
                        }
                        acc
                    },
                    |a, b| a + b,
                );
                comm.allreduce_sum(sq.as_slice_mut().expect("standard layout"));
                let diag = sq / nk.view().insert_axis(Axis(1)) + reg_covar;
                if covariance_type == CovarianceType::Diag {
                    Covariances::Diag(diag)
                } else {
                    Covariances::Spherical(diag.mean_axis(Axis(1)).expect("d >= 1"))
                }
            }
        };
        let precisions_cholesky = precision_cholesky(&covariances)?;
        Ok(Mixture {
            covariance_type,
            weights: nk,
            means,
            covariances,
            precisions_cholesky,
        })
    }

    /// `log N(xᵢ | μₖ, Σₖ) + log wₖ` for every point and component (n × k).
    fn weighted_log_prob(&self, x: ArrayView2<f64>) -> Array2<f64> {
        let x = crate::data::standard_layout(x);
        let x = x.view();
        let (n, d) = x.dim();
        let k = self.k();
        let log_w = self.weights.mapv(f64::ln);
        let cst = -0.5 * d as f64 * (2.0 * PI).ln();
        // Per component: log det U and the whitening of the means (μₖ·Uₖ).
        let (log_det, whitening): (Array1<f64>, Option<Whitening>) = match &self.precisions_cholesky {
            Covariances::Full(u) => {
                let log_det = u.outer_iter().map(|u| u.diag().mapv(f64::ln).sum()).collect();
                // Rows (c·d + j) of `wt` are the columns of Uₖ, so X·wtᵀ = [X·U₁ … X·Uₖ].
                let mut wt = Array2::<f64>::zeros((k * d, d));
                let mut mu = Array2::<f64>::zeros((k, d));
                for c in 0..k {
                    wt.slice_mut(s![c * d..(c + 1) * d, ..])
                        .assign(&u.index_axis(Axis(0), c).t());
                    mu.row_mut(c)
                        .assign(&self.means.row(c).dot(&u.index_axis(Axis(0), c)));
                }
                (log_det, Some((wt, mu)))
            }
            Covariances::Tied(u) => {
                let log_det = Array1::from_elem(k, u.diag().mapv(f64::ln).sum());
                (log_det, Some((u.t().to_owned(), self.means.dot(u))))
            }
            Covariances::Diag(p) => (p.mapv(f64::ln).sum_axis(Axis(1)), None),
            Covariances::Spherical(p) => (p.mapv(|v| d as f64 * v.ln()), None),
        };
        let mut out = Array2::<f64>::zeros((n, k));
        out.axis_chunks_iter_mut(Axis(0), BLOCK)
            .into_par_iter()
            .zip(x.axis_chunks_iter(Axis(0), BLOCK))
            .for_each(|(mut ob, xb)| {
                let means = self.means.as_slice().expect("standard layout");
                let mean = |c: usize| &means[c * d..(c + 1) * d];
                let rows = ob.rows_mut().into_iter().zip(xb.rows());
                match (&self.precisions_cholesky, &whitening) {
                    (Covariances::Full(_) | Covariances::Tied(_), Some((wt, mu))) => {
                        let mut y = Array2::<f64>::zeros((xb.nrows(), wt.nrows()));
                        gemm_abt(xb, wt.view(), y.view_mut(), 1.0);
                        let mu = mu.as_slice().expect("standard layout");
                        let stride = if wt.nrows() == k * d { d } else { 0 };
                        for (mut o, yr) in ob.rows_mut().into_iter().zip(y.rows()) {
                            let yr = yr.to_slice().expect("standard layout");
                            for c in 0..k {
                                o[c] = f64::sqeuclidean(
                                    &yr[c * stride..c * stride + d],
                                    &mu[c * d..(c + 1) * d],
                                );
                            }
                        }
                    }
                    (Covariances::Diag(p), _) => {
                        let p = p.as_slice().expect("standard layout");
                        for (mut o, xr) in rows {
                            let xr = xr.to_slice().expect("standard layout");
                            for c in 0..k {
                                let pc = &p[c * d..(c + 1) * d];
                                o[c] = (0..d).map(|j| ((xr[j] - mean(c)[j]) * pc[j]).powi(2)).sum();
                            }
                        }
                    }
                    (Covariances::Spherical(p), _) => {
                        for (mut o, xr) in rows {
                            let xr = xr.to_slice().expect("standard layout");
                            for c in 0..k {
                                o[c] = f64::sqeuclidean(xr, mean(c)) * p[c] * p[c];
                            }
                        }
                    }
                    _ => unreachable!("whitening exists exactly for full and tied"),
                }
                for mut o in ob.rows_mut() {
                    Zip::from(&mut o)
                        .and(&log_det)
                        .and(&log_w)
                        .for_each(|v, &ld, &lw| *v = cst - 0.5 * *v + ld + lw);
                }
            });
        out
    }

    /// The E-step: responsibilities (n × k) and the log-likelihood of each point (the
    /// log-sum-exp of its weighted log-probabilities, with one `exp` per entry).
    fn e_step(&self, x: ArrayView2<f64>) -> (Array2<f64>, Array1<f64>) {
        let mut lp = self.weighted_log_prob(x);
        let mut norm = Array1::<f64>::zeros(x.nrows());
        Zip::from(lp.rows_mut())
            .and(&mut norm)
            .par_for_each(|mut row, nm| {
                let row = row.as_slice_mut().expect("standard layout");
                let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let mut sum = 0.0;
                for v in row.iter_mut() {
                    *v = (*v - m).exp();
                    sum += *v;
                }
                row.iter_mut().for_each(|v| *v /= sum);
                *nm = m + sum.ln();
            });
        (lp, norm)
    }

    /// Number of free parameters (scikit-learn's `_n_parameters`).
    pub fn n_parameters(&self) -> usize {
        let (k, d) = (self.k(), self.d());
        let cov = match self.covariance_type {
            CovarianceType::Full => k * d * (d + 1) / 2,
            CovarianceType::Tied => d * (d + 1) / 2,
            CovarianceType::Diag => k * d,
            CovarianceType::Spherical => k,
        };
        cov + k * d + k - 1
    }
}

/// For full and tied covariances: the columns of every `Uₖ` stacked as rows (so that
/// `X·wtᵀ = [X·U₁ … X·Uₖ]`), and the whitened means `μₖ·Uₖ` (k × d).
type Whitening = (Array2<f64>, Array2<f64>);

/// Cholesky factors of the precisions, `U = L⁻ᵀ` (scikit-learn's `_compute_precision_cholesky`).
fn precision_cholesky(cov: &Covariances) -> Result<Covariances> {
    let ill = || {
        Error::Unsupported(
            "fitting the Gaussian mixture failed: a component has an ill-defined covariance \
             (singleton or collapsed points); use fewer components, a larger reg_covar, or \
             scale the data"
                .into(),
        )
    };
    let one = |c: ArrayView2<f64>| -> Result<Array2<f64>> {
        let l = cholesky_lower(c).ok_or_else(ill)?;
        Ok(invert_lower(l.view()).reversed_axes())
    };
    Ok(match cov {
        Covariances::Full(c) => {
            let mut u = Array3::<f64>::zeros(c.dim());
            for (mut u, c) in u.outer_iter_mut().zip(c.outer_iter()) {
                u.assign(&one(c)?);
            }
            Covariances::Full(u)
        }
        Covariances::Tied(c) => Covariances::Tied(one(c.view())?),
        Covariances::Diag(c) => {
            if c.iter().any(|&v| v <= 0.0) {
                return Err(ill());
            }
            Covariances::Diag(c.mapv(|v| 1.0 / v.sqrt()))
        }
        Covariances::Spherical(c) => {
            if c.iter().any(|&v| v <= 0.0) {
                return Err(ill());
            }
            Covariances::Spherical(c.mapv(|v| 1.0 / v.sqrt()))
        }
    })
}

/// Folds fixed row blocks in parallel and combines the partial results in block order.
fn reduce_blocks<T: Send>(
    n: usize,
    init: impl Fn() -> T + Sync,
    fold: impl Fn(T, std::ops::Range<usize>) -> T + Sync,
    combine: impl Fn(T, T) -> T,
) -> T {
    let parts: Vec<T> = (0..n.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| fold(init(), b * BLOCK..((b + 1) * BLOCK).min(n)))
        .collect();
    parts.into_iter().fold(init(), combine)
}

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
        check_finite(means.view(), "means")?;
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
    /// for prediction, or as [`GmmInit::WarmStart`] to start EM from these parameters.
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

    fn check(&self, x: ArrayView2<f64>) -> Result<()> {
        check_points(x)?;
        check_same_len("number of features", self.mixture.d(), x.ncols())
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

const GMM_HINT: &str = "use --covariance diag or spherical, a smaller k, or minibatch-kmeans";

impl Fit<ArrayView2<'_, f64>> for GaussianMixture {
    type Model = GaussianMixtureModel;

    fn fit(&self, x: &ArrayView2<'_, f64>) -> Result<GaussianMixtureModel> {
        let comm = &*self.comm;
        let part = Partition::of(x.nrows(), comm);
        agree(self.validate(*x, part), comm)?;
        check_magnitude_global(*x, part.n_global, self.arithmetic(), "a Gaussian mixture", comm)?;
        check_fit(self, "a Gaussian mixture", x.nrows(), x.ncols(), 8, GMM_HINT)?;
        let x = crate::data::standard_layout(*x);
        let x = x.view();
        let (n_init, start_bound) = match &self.init {
            GmmInit::WarmStart(m) => (1, m.lower_bound),
            _ => (self.n_init, f64::NEG_INFINITY),
        };
        let mut rng = SeededRng::seed_from_u64(self.seed);
        let mut best: Option<(Mixture, f64, Vec<f64>, usize, bool)> = None;
        for _ in 0..n_init {
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
            check_fit(self, "a Gaussian mixture", x.nrows(), x.ncols(), 4, GMM_HINT)?;
        }
        let x64 = x.mapv(f64::from);
        self.fit(&x64.view())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

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
            let mix =
                Mixture::estimate(x.view(), resp.view(), 1e-6, ct, &crate::comm::SingleProcess).unwrap();
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
}
