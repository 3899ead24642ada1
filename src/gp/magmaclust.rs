//! MagmaClust (Leroy, Latouche, Guedj & Gey, JMLR 2023): a mixture of multi-task Gaussian
//! processes fitted by variational EM, following MagmaClustR 1.2.1 (`vem-magmaclust.R`,
//! `elbos.R`, `gradients-elbos.R`; docs/reference-notes.md §3.1).
//!
//! Task i of cluster k is `yᵢ = μₖ(tᵢ) + fᵢ(tᵢ) + εᵢ` with `μₖ ~ GP(mₖ, C_γₖ)`,
//! `fᵢ ~ GP(0, Σ_θᵢ)` and noise variance `e^σᵢ`; `Ψᵢ = Σ_θᵢ(tᵢ, tᵢ) + e^σᵢ I`. On the union
//! grid T of all inputs:
//! - VE: `Ĉₖ = (C_γₖ(T)⁻¹ + Σᵢ τᵢₖ Pᵢᵀ Ψᵢ⁻¹ Pᵢ)⁻¹`, `m̂ₖ = Ĉₖ(C⁻¹ mₖ + Σᵢ τᵢₖ Pᵢᵀ Ψᵢ⁻¹ yᵢ)`, and
//!   `log τ̃ᵢₖ = log πₖ + log N(yᵢ; m̂ₖ(tᵢ), Ψᵢ) − ½ tr(Ψᵢ⁻¹ Ĉₖ(tᵢ, tᵢ))` normalised by
//!   log-sum-exp (not at the first iteration, as the reference: the initial τ is kept).
//! - VM: `πₖ = mean τ.ₖ`; γ and (θ, σ) by L-BFGS on the log-parameters with analytic gradients
//!   (R's `optim` settings: factr 1e13, 25 iterations), per cluster / per task or shared
//!   according to the hypothesis (H00, Hk0, H0i, Hki).
//! - ELBO `= −Σₖ L_γ(k) − Σᵢ L_θ(i) + Σᵢₖ τᵢₖ log(πₖ/τᵢₖ) + Σₖ ½ log|Ĉₖ|`; stop when its
//!   relative change is below 1e-3, or after 25 iterations.
//! - τ starts from k-means (50 starts) on the raw outputs when all tasks share their inputs
//!   (the research code), else on each task's (min, mean, max) outputs (the package).
//!
//! - Prediction (`pred_magmaclust`): the hyper-posterior on the training grid extended by the
//!   new inputs, τ* by the VE formula, the new task's hyper-parameters by `train_gp_clust`'s EM
//!   when they are task-specific, and the mixture of the cluster-specific GP posteriors.
//!
//! Deliberate differences: initial hyper-parameters are fixed (γ = θ = (1, 1), log noise −3,
//! the research code's choice) instead of R's random draws, so fits are reproducible without
//! a seed; the Gaussian normalising constants are kept in the ELBO (a constant shift); Ĉₖ is
//! computed without inverting C_γₖ (same quantity, stable on fine grids); tasks are processed
//! in a canonical order (ID, then content) with their points sorted by input, so results are
//! bit-for-bit independent of the order of the rows. Clusters and tasks are processed in
//! parallel (rayon), with results independent of the thread count.

use crate::error::{Error, Result};
use crate::estimator::Clustering;
use crate::gp::data::Tasks;
use crate::gp::kernel::Kernel;
use crate::gp::lbfgs::{minimize, Lbfgs};
use crate::gp::regression::{cholesky_jitter, inverse_from_cholesky, log_det, solve_lower, solve_upper_t};
use ndarray::{Array1, Array2, ArrayView2};
use rayon::prelude::*;
use std::f64::consts::PI;

/// Parameters of MagmaClust (the estimator).
///
/// ```
/// use clustr::gp::magmaclust::MagmaClust;
/// use clustr::gp::simulate::{Scenario, Simulator};
/// let sim = Simulator { n_tasks: 10, n_points: 8, ..Simulator::new(Scenario::H00) }.generate()?;
/// let mut params = MagmaClust::new(2);
/// params.n_iter_max = 3;
/// let model = params.fit(&sim.tasks)?;
/// assert_eq!(model.labels.len(), 10);
/// # Ok::<(), clustr::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct MagmaClust {
    /// Number of clusters K (1 is Magma).
    pub k: usize,
    /// Kernel of the mean processes (default squared exponential).
    pub kernel_k: Kernel,
    /// Kernel of the tasks (default squared exponential).
    pub kernel_i: Kernel,
    /// Mean-process hyper-parameters shared across clusters (default true).
    pub common_hp_k: bool,
    /// Task hyper-parameters shared across tasks (default true).
    pub common_hp_i: bool,
    /// Constant prior mean of every mean process (default 0).
    pub prior_mean: f64,
    /// Relative ELBO change that stops the EM (default 1e-3).
    pub cv_threshold: f64,
    /// Maximum EM iterations (default 25).
    pub n_iter_max: usize,
    /// Initial jitter of every factorisation (default 1e-10).
    pub pen_diag: f64,
    /// Optimiser of the VM step (default R's: factr 1e13, 25 iterations).
    pub optimiser: Lbfgs,
    /// Initial responsibilities (M × K); default k-means on (min, mean, max) of each task.
    pub init_tau: Option<Array2<f64>>,
    /// Seed of the k-means initialisation.
    pub seed: u64,
}

impl MagmaClust {
    /// MagmaClust with K clusters and the reference's defaults.
    pub fn new(k: usize) -> Self {
        MagmaClust {
            k,
            kernel_k: Kernel::SquaredExponential,
            kernel_i: Kernel::SquaredExponential,
            common_hp_k: true,
            common_hp_i: true,
            prior_mean: 0.0,
            cv_threshold: 1e-3,
            n_iter_max: 25,
            pen_diag: 1e-10,
            optimiser: Lbfgs::reference(),
            init_tau: None,
            seed: 0,
        }
    }
    /// Hypotheses on the hyper-parameters: shared across clusters, shared across tasks.
    pub fn hypotheses(mut self, common_hp_k: bool, common_hp_i: bool) -> Self {
        self.common_hp_k = common_hp_k;
        self.common_hp_i = common_hp_i;
        self
    }
    /// The hypothesis' name: H00, Hk0, H0i or Hki.
    pub fn hypothesis(&self) -> &'static str {
        match (self.common_hp_k, self.common_hp_i) {
            (true, true) => "H00",
            (false, true) => "Hk0",
            (true, false) => "H0i",
            (false, false) => "Hki",
        }
    }
    /// `(common_hp_k, common_hp_i)` of a hypothesis' name.
    pub fn parse_hypothesis(name: &str) -> Result<(bool, bool)> {
        match name {
            "H00" => Ok((true, true)),
            "Hk0" => Ok((false, true)),
            "H0i" => Ok((true, false)),
            "Hki" => Ok((false, false)),
            other => Err(Error::param("hypothesis", other, "H00, Hk0, H0i or Hki")),
        }
    }
    /// Seed.
    pub fn seed(mut self, s: u64) -> Self {
        self.seed = s;
        self
    }
    /// Initial responsibilities.
    pub fn init_tau(mut self, t: Array2<f64>) -> Self {
        self.init_tau = Some(t);
        self
    }
}

/// The hyper-posterior of the mean processes on the union grid.
#[derive(Clone, Debug, PartialEq)]
pub struct HyperPosterior {
    /// Means m̂ₖ (K × N).
    pub mean: Array2<f64>,
    /// Covariances Ĉₖ (each N × N).
    pub cov: Vec<Array2<f64>>,
}

/// A fitted MagmaClust.
#[derive(Clone, Debug, PartialEq)]
pub struct MagmaClustModel {
    /// Mixture weights π.
    pub weights: Array1<f64>,
    /// Responsibilities τ (M × K).
    pub tau: Array2<f64>,
    /// MAP cluster of each task.
    pub labels: Vec<i64>,
    /// Mean-process log-parameters per cluster.
    pub hp_k: Vec<Vec<f64>>,
    /// Task kernel log-parameters and log noise variance (last) per task.
    pub hp_i: Vec<Vec<f64>>,
    /// The hyper-posterior on the union grid.
    pub hyperpost: HyperPosterior,
    /// ELBO after each iteration.
    pub elbos: Vec<f64>,
    /// Whether the relative ELBO change fell below the threshold.
    pub converged: bool,
    /// The settings it was fitted with.
    pub settings: MagmaClust,
}

impl Clustering for MagmaClustModel {
    fn labels(&self) -> &[i64] {
        &self.labels
    }
    /// The negative ELBO.
    fn loss(&self) -> Option<f64> {
        self.elbos.last().map(|e| -e)
    }
    fn n_iter(&self) -> usize {
        self.elbos.len()
    }
    fn converged(&self) -> bool {
        self.converged
    }
}

/// `½ tr(Σ⁻¹A) + ½ W log|Σ| + ½ W n log 2π` and its gradient in the kernel's log-parameters
/// (and the log noise, when given): the shared form of every VM objective.
fn gaussian_objective(
    kernel: &Kernel,
    params: &[f64],
    noise: Option<f64>,
    x: ArrayView2<f64>,
    (a, w): (&Array2<f64>, f64),
    pen: f64,
    grad: &mut [f64],
) -> f64 {
    gaussian_objective_plus(kernel, params, noise, x, None, (a, w), pen, grad)
}

/// [`gaussian_objective`] with `Σ = K + plus` (a fixed covariance added to the kernel's).
#[allow(clippy::too_many_arguments)]
fn gaussian_objective_plus(
    kernel: &Kernel,
    params: &[f64],
    noise: Option<f64>,
    x: ArrayView2<f64>,
    plus: Option<&Array2<f64>>,
    (a, w): (&Array2<f64>, f64),
    pen: f64,
    grad: &mut [f64],
) -> f64 {
    let (mut sigma, dks) = kernel.matrix_with_grads(params, noise, x);
    if let Some(c) = plus {
        sigma += c;
    }
    let Ok(l) = cholesky_jitter(&sigma, pen) else {
        return f64::INFINITY;
    };
    let inv = inverse_from_cholesky(&l);
    let ia = inv.dot(a);
    let g_mat = &ia.dot(&inv) - &(w * &inv); // Σ⁻¹AΣ⁻¹ − WΣ⁻¹
    for (g, dk) in grad.iter_mut().zip(&dks) {
        *g = -0.5 * (&g_mat * dk).sum();
    }
    let n = x.nrows() as f64;
    0.5 * ia.diag().sum() + 0.5 * w * log_det(&l) + 0.5 * w * n * (2.0 * PI).ln()
}

/// `log N(y; m, Ψ) − ½ tr(Ψ⁻¹ C)` from the Cholesky factor of Ψ and its inverse.
fn tau_term(l: &Array2<f64>, inv: &Array2<f64>, r: &Array1<f64>, c: &Array2<f64>) -> f64 {
    let z = solve_lower(l, r.view());
    let n = r.len() as f64;
    -0.5 * z.dot(&z) - 0.5 * log_det(l) - 0.5 * n * (2.0 * PI).ln() - 0.5 * (inv * c).sum()
}

/// The submatrix of rows `r` and columns `c`.
fn sub(m: &Array2<f64>, r: &[usize], c: &[usize]) -> Array2<f64> {
    Array2::from_shape_fn((r.len(), c.len()), |(a, b)| m[[r[a], c[b]]])
}

/// `y − m̂ₖ` at the grid rows `idx`.
fn residual(y: ndarray::ArrayView1<f64>, mean: ndarray::ArrayView1<f64>, idx: &[usize]) -> Array1<f64> {
    Array1::from_shape_fn(idx.len(), |a| y[a] - mean[idx[a]])
}

/// Tasks grouped by identical input rows (same grid indices in the same order), each group
/// in order of first appearance.
fn input_groups(index: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut first: std::collections::HashMap<&[usize], usize> = std::collections::HashMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, idx) in index.iter().enumerate() {
        let g = *first.entry(idx.as_slice()).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(i);
    }
    groups
}

/// Normalised `exp` of log-weights (log-sum-exp).
fn softmax(logs: Array1<f64>) -> Array1<f64> {
    let mx = logs.fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let e = logs.mapv(|v| (v - mx).exp());
    &e / e.sum()
}

impl MagmaClust {
    fn validate(&self, data: &Tasks) -> Result<()> {
        if self.k == 0 {
            return Err(Error::param("k", 0, "at least one cluster"));
        }
        if self.k > data.len() {
            return Err(Error::param(
                "k",
                self.k,
                format!("more clusters than tasks ({})", data.len()),
            ));
        }
        if let Some(t) = &self.init_tau {
            if t.dim() != (data.len(), self.k) {
                return Err(Error::ShapeMismatch {
                    what: "initial responsibilities".into(),
                    expected: format!("{} x {}", data.len(), self.k),
                    got: format!("{} x {}", t.nrows(), t.ncols()),
                });
            }
        }
        Ok(())
    }

    /// One-hot τ from k-means (50 starts): on the raw output vectors when every task has the
    /// same inputs (the research code's choice, which sees the curves' shapes), else on each
    /// task's (min, mean, max) outputs (MagmaClustR's `ini_kmeans`).
    fn initial_tau(&self, data: &Tasks) -> Result<Array2<f64>> {
        let m = data.len();
        let mut tau = Array2::<f64>::zeros((m, self.k));
        if self.k == 1 {
            tau.fill(1.0);
            return Ok(tau);
        }
        let n = data.grid.nrows();
        let feats = if data.index.iter().all(|idx| idx.len() == n) {
            let mut f = Array2::<f64>::zeros((m, n));
            for (i, idx) in data.index.iter().enumerate() {
                idx.iter()
                    .zip(&data.tasks[i].outputs)
                    .for_each(|(&g, &y)| f[[i, g]] = y);
            }
            f
        } else {
            Array2::from_shape_fn((m, 3), |(i, j)| {
                let y = &data.tasks[i].outputs;
                match j {
                    0 => y.fold(f64::INFINITY, |a, &b| a.min(b)),
                    1 => y.mean().unwrap_or(0.0),
                    _ => y.fold(f64::NEG_INFINITY, |a, &b| a.max(b)),
                }
            })
        };
        let km = crate::kmeans::KMeans::new(self.k)
            .n_init(50)
            .seed(self.seed)
            .fit(&feats.view())?;
        km.labels
            .iter()
            .enumerate()
            .for_each(|(i, &l)| tau[[i, l as usize]] = 1.0);
        Ok(tau)
    }

    /// Each task's `Ψᵢ` Cholesky factor and inverse.
    fn task_factors(&self, data: &Tasks, hp_i: &[Vec<f64>]) -> Result<Vec<(Array2<f64>, Array2<f64>)>> {
        let ni = self.kernel_i.n_params();
        (0..data.len())
            .into_par_iter()
            .map(|i| {
                let h = &hp_i[i];
                let s = self
                    .kernel_i
                    .matrix_with_noise(&h[..ni], h[ni], data.tasks[i].inputs.view());
                let l = cholesky_jitter(&s, self.pen_diag)?;
                let inv = inverse_from_cholesky(&l);
                Ok((l, inv))
            })
            .collect()
    }

    /// The VE formulas for the mean processes on `grid`, where task i's observations sit at
    /// rows `index[i]`; also returns each `log|Ĉₖ|`.
    ///
    /// With `C = LLᵀ` and `B = Σᵢ τᵢₖ Pᵢᵀ Ψᵢ⁻¹ Pᵢ`, `Ĉ = (C⁻¹ + B)⁻¹` is computed as
    /// `L (I + LᵀBL)⁻¹ Lᵀ` and `m̂ = m + Ĉ (Σᵢ τᵢₖ Pᵢᵀ Ψᵢ⁻¹ yᵢ − B m)`: the same quantities as
    /// the reference's, without inverting C, whose condition number on a fine grid is beyond
    /// double precision (the explicit inverse made the result depend on the summation order
    /// at the 1e-6 level).
    fn hyperposterior(
        &self,
        grid: ArrayView2<f64>,
        index: &[Vec<usize>],
        data: &Tasks,
        psi: &[(Array2<f64>, Array2<f64>)],
        tau: &Array2<f64>,
        hp_k: &[Vec<f64>],
    ) -> Result<(HyperPosterior, Vec<f64>)> {
        let n = grid.nrows();
        let prior = Array1::from_elem(n, self.prior_mean);
        let clusters: Vec<(Array1<f64>, Array2<f64>, f64)> = (0..tau.ncols())
            .into_par_iter()
            .map(|k| {
                let c = self.kernel_k.matrix(&hp_k[k], grid, grid);
                let l = cholesky_jitter(&c, self.pen_diag)?;
                let mut prec = Array2::<f64>::zeros((n, n));
                let mut b = Array1::<f64>::zeros(n);
                for (i, idx) in index.iter().enumerate() {
                    let w = tau[[i, k]];
                    if w == 0.0 {
                        continue;
                    }
                    let inv = &psi[i].1;
                    let py = inv.dot(&data.tasks[i].outputs);
                    for (a, &ga) in idx.iter().enumerate() {
                        b[ga] += w * py[a];
                        for (bb, &gb) in idx.iter().enumerate() {
                            prec[[ga, gb]] += w * inv[[a, bb]];
                        }
                    }
                }
                let r = &b - &prec.dot(&prior);
                let mut inner = l.t().dot(&prec).dot(&l);
                inner.diag_mut().iter_mut().for_each(|v| *v += 1.0);
                let ri = cholesky_jitter(&inner, 0.0)?;
                let w = l.dot(&crate::linalg::invert_lower(ri.view()).t());
                let cov = w.dot(&w.t());
                let mean = &prior + &cov.dot(&r);
                Ok((mean, cov, log_det(&l) - log_det(&ri)))
            })
            .collect::<Result<_>>()?;
        let mut post = HyperPosterior {
            mean: Array2::zeros((tau.ncols(), n)),
            cov: Vec::with_capacity(tau.ncols()),
        };
        let mut log_dets = Vec::with_capacity(tau.ncols());
        for (k, (mean, cov, ld)) in clusters.into_iter().enumerate() {
            post.mean.row_mut(k).assign(&mean);
            post.cov.push(cov);
            log_dets.push(ld);
        }
        Ok((post, log_dets))
    }

    /// Bytes a fit allocates on `data`: per cluster the N × N prior and posterior covariances
    /// with their factors (N the union grid), per task its Nᵢ × Nᵢ covariance, factor and
    /// inverse, and per thread an N × N scratch.
    pub fn memory_estimate(&self, data: &Tasks) -> u64 {
        use crate::memory::product;
        let n = data.grid.nrows();
        let per_task: u64 = data
            .tasks
            .iter()
            .map(|t| product(&[t.outputs.len(), t.outputs.len(), 3 * 8]))
            .fold(0, u64::saturating_add);
        product(&[self.k, n, n, 4 * 8])
            .saturating_add(per_task)
            .saturating_add(product(&[rayon::current_num_threads(), n, n, 2 * 8]))
    }

    /// Fits the model to the tasks.
    ///
    /// The tasks are processed in a canonical order (by ID, then by content; each task's
    /// points are already sorted by input, see [`Tasks::new`]), so the result does not depend
    /// on the order of the tasks or of their points, bit for bit.
    pub fn fit(&self, data: &Tasks) -> Result<MagmaClustModel> {
        self.validate(data)?;
        let (m, n) = (data.len(), data.grid.nrows());
        crate::memory::check(
            || format!("MagmaClust on {m} tasks over a grid of {n} inputs"),
            self.memory_estimate(data),
            "fit on fewer tasks, or on a coarser grid of inputs (memory grows as K·N² + Σ Nᵢ²)",
        )?;
        let bits = |t: &crate::gp::data::Task| -> Vec<u64> {
            t.inputs.iter().chain(&t.outputs).map(|v| v.to_bits()).collect()
        };
        let mut order: Vec<usize> = (0..data.len()).collect();
        order.sort_by(|&a, &b| {
            let (ta, tb) = (&data.tasks[a], &data.tasks[b]);
            ta.id.cmp(&tb.id).then_with(|| bits(ta).cmp(&bits(tb)))
        });
        if order.iter().enumerate().all(|(i, &o)| i == o) {
            return self.fit_in_order(data, self.init_tau.clone());
        }
        let canonical = Tasks {
            tasks: order.iter().map(|&i| data.tasks[i].clone()).collect(),
            grid: data.grid.clone(),
            index: order.iter().map(|&i| data.index[i].clone()).collect(),
        };
        let init = self.init_tau.as_ref().map(|t| t.select(ndarray::Axis(0), &order));
        let mut model = self.fit_in_order(&canonical, init)?;
        let mut back = vec![0; order.len()];
        order.iter().enumerate().for_each(|(j, &i)| back[i] = j);
        model.tau = model.tau.select(ndarray::Axis(0), &back);
        model.labels = back.iter().map(|&j| model.labels[j]).collect();
        model.hp_i = back.iter().map(|&j| model.hp_i[j].clone()).collect();
        Ok(model)
    }

    fn fit_in_order(&self, data: &Tasks, init_tau: Option<Array2<f64>>) -> Result<MagmaClustModel> {
        let (m, kk) = (data.len(), self.k);
        let grid = data.grid.view();
        let n = grid.nrows();
        let mut tau = match init_tau {
            Some(t) => t,
            None => self.initial_tau(data)?,
        };
        let mut weights = tau.mean_axis(ndarray::Axis(0)).expect("M >= 1");
        let nk = self.kernel_k.n_params();
        let ni = self.kernel_i.n_params();
        let mut hp_k = vec![vec![1.0; nk]; kk];
        let mut hp_i: Vec<Vec<f64>> = (0..m)
            .map(|_| {
                let mut v = vec![1.0; ni];
                v.push(-3.0);
                v
            })
            .collect();
        let prior = Array1::from_elem(n, self.prior_mean);
        let mut elbos: Vec<f64> = Vec::new();
        let mut converged = false;
        let mut post = HyperPosterior {
            mean: Array2::zeros((kk, n)),
            cov: vec![Array2::zeros((n, n)); kk],
        };
        for iter in 1..=self.n_iter_max {
            // VE step.
            let psi = self.task_factors(data, &hp_i)?;
            let log_dets;
            (post, log_dets) = self.hyperposterior(grid, &data.index, data, &psi, &tau, &hp_k)?;
            if iter > 1 {
                let rows: Vec<Array1<f64>> = (0..m)
                    .into_par_iter()
                    .map(|i| {
                        let idx = &data.index[i];
                        let y = &data.tasks[i].outputs;
                        let mut logs = Array1::<f64>::zeros(kk);
                        for k in 0..kk {
                            let r = residual(y.view(), post.mean.row(k), idx);
                            let c = sub(&post.cov[k], idx, idx);
                            logs[k] = weights[k].max(f64::MIN_POSITIVE).ln()
                                + tau_term(&psi[i].0, &psi[i].1, &r, &c);
                        }
                        softmax(logs)
                    })
                    .collect();
                for (i, r) in rows.into_iter().enumerate() {
                    tau.row_mut(i).assign(&r);
                }
            }
            // VM step.
            weights = tau.mean_axis(ndarray::Axis(0)).expect("M >= 1");
            let a_k: Vec<Array2<f64>> = (0..kk)
                .map(|k| {
                    let d = &post.mean.row(k) - &prior;
                    let outer = d
                        .view()
                        .insert_axis(ndarray::Axis(1))
                        .dot(&d.view().insert_axis(ndarray::Axis(0)));
                    &outer + &post.cov[k]
                })
                .collect();
            let opt_k = |ks: &[usize], start: &[f64]| -> Vec<f64> {
                let a = ks
                    .iter()
                    .fold(Array2::<f64>::zeros((n, n)), |acc, &k| acc + &a_k[k]);
                let w = ks.len() as f64;
                minimize(
                    |p, g| gaussian_objective(&self.kernel_k, p, None, grid, (&a, w), self.pen_diag, g),
                    start,
                    &self.optimiser,
                )
                .x
            };
            if self.common_hp_k {
                let all: Vec<usize> = (0..kk).collect();
                let h = opt_k(&all, &hp_k[0]);
                hp_k.iter_mut().for_each(|v| v.clone_from(&h));
            } else {
                hp_k = (0..kk).into_par_iter().map(|k| opt_k(&[k], &hp_k[k])).collect();
            }
            let a_i = |i: usize| -> Array2<f64> {
                let idx = &data.index[i];
                let y = &data.tasks[i].outputs;
                let mut a = Array2::<f64>::zeros((idx.len(), idx.len()));
                for k in 0..kk {
                    let w = tau[[i, k]];
                    if w == 0.0 {
                        continue;
                    }
                    let r = residual(y.view(), post.mean.row(k), idx);
                    let outer = r
                        .view()
                        .insert_axis(ndarray::Axis(1))
                        .dot(&r.view().insert_axis(ndarray::Axis(0)));
                    a = a + w * (&outer + &sub(&post.cov[k], idx, idx));
                }
                a
            };
            let objective_i = |i: usize, p: &[f64], g: &mut [f64]| -> f64 {
                let w: f64 = tau.row(i).sum();
                gaussian_objective(
                    &self.kernel_i,
                    &p[..ni],
                    Some(p[ni]),
                    data.tasks[i].inputs.view(),
                    (&a_i(i), w),
                    self.pen_diag,
                    g,
                )
            };
            if self.common_hp_i {
                // The objective is linear in (A, W), so tasks with the same inputs (same grid
                // rows in the same order) share one Ψ and their scatters add up exactly.
                let groups = input_groups(&data.index);
                let scatter: Vec<(usize, Array2<f64>, f64)> = groups
                    .par_iter()
                    .map(|members| {
                        let a = members
                            .iter()
                            .map(|&i| a_i(i))
                            .reduce(|x, y| x + y)
                            .expect("non-empty group");
                        let w: f64 = members.iter().map(|&i| tau.row(i).sum()).sum();
                        (members[0], a, w)
                    })
                    .collect();
                let h = minimize(
                    |p, g| {
                        let parts: Vec<(f64, Vec<f64>)> = scatter
                            .par_iter()
                            .map(|(i, a, w)| {
                                let mut gi = vec![0.0; p.len()];
                                let f = gaussian_objective(
                                    &self.kernel_i,
                                    &p[..ni],
                                    Some(p[ni]),
                                    data.tasks[*i].inputs.view(),
                                    (a, *w),
                                    self.pen_diag,
                                    &mut gi,
                                );
                                (f, gi)
                            })
                            .collect();
                        g.iter_mut().for_each(|v| *v = 0.0);
                        let mut total = 0.0;
                        for (f, gi) in parts {
                            total += f;
                            g.iter_mut().zip(&gi).for_each(|(a, b)| *a += b);
                        }
                        total
                    },
                    &hp_i[0],
                    &self.optimiser,
                )
                .x;
                hp_i.iter_mut().for_each(|v| v.clone_from(&h));
            } else {
                hp_i = (0..m)
                    .into_par_iter()
                    .map(|i| minimize(|p, g| objective_i(i, p, g), &hp_i[i], &self.optimiser).x)
                    .collect();
            }
            // ELBO at the new hyper-parameters.
            let mut scratch_k = vec![0.0; nk];
            let l_gamma: f64 = (0..kk)
                .map(|k| {
                    gaussian_objective(
                        &self.kernel_k,
                        &hp_k[k],
                        None,
                        grid,
                        (&a_k[k], 1.0),
                        self.pen_diag,
                        &mut scratch_k,
                    )
                })
                .sum();
            let l_theta: f64 = (0..m)
                .into_par_iter()
                .map(|i| {
                    let mut g = vec![0.0; ni + 1];
                    objective_i(i, &hp_i[i], &mut g)
                })
                .collect::<Vec<_>>()
                .iter()
                .sum();
            let entropy: f64 = tau
                .indexed_iter()
                .filter(|(_, &t)| t > 0.0)
                .map(|((_, k), &t)| t * (weights[k].ln() - t.ln()))
                .sum();
            let logdet: f64 = 0.5 * log_dets.iter().sum::<f64>();
            let elbo = -l_gamma - l_theta + entropy + logdet;
            let done = elbos
                .last()
                .is_some_and(|&prev| ((elbo - prev) / elbo.abs()).abs() < self.cv_threshold);
            elbos.push(elbo);
            if done {
                converged = true;
                break;
            }
        }
        let labels = crate::linalg::argmax_rows(&tau);
        Ok(MagmaClustModel {
            weights,
            tau,
            labels,
            hp_k,
            hp_i,
            hyperpost: post,
            elbos,
            converged,
            settings: self.clone(),
        })
    }
}

use crate::estimator::Fit;

impl MagmaClustModel {
    /// The variational BIC, `ELBO − ½ (n_hp_k + n_hp_i + K − 1) log M`, counting distinct
    /// hyper-parameter values (MagmaClustR's `select_nb_cluster`); larger is better.
    pub fn vbic(&self) -> f64 {
        let s = &self.settings;
        let (k, m) = (self.weights.len(), self.hp_i.len());
        let n_k = s.kernel_k.n_params() * if s.common_hp_k { 1 } else { k };
        let n_i = (s.kernel_i.n_params() + 1) * if s.common_hp_i { 1 } else { m };
        let elbo = self.elbos.last().copied().unwrap_or(f64::NEG_INFINITY);
        elbo - 0.5 * (n_k + n_i + k - 1) as f64 * (m as f64).ln()
    }
}

/// The outcome of [`select_nb_cluster`].
#[derive(Clone, Debug)]
pub struct ClusterSelection {
    /// The K of largest VBIC.
    pub best_k: usize,
    /// (K, VBIC) for every K tried.
    pub vbic: Vec<(usize, f64)>,
    /// The fitted models, in the same order.
    pub models: Vec<MagmaClustModel>,
}

/// Fits `base` for every K in `ks` (K = 1 is Magma) and returns the K of largest VBIC with
/// every (K, VBIC) and the fitted models, as MagmaClustR's `select_nb_cluster`.
pub fn select_nb_cluster(
    data: &Tasks,
    ks: std::ops::RangeInclusive<usize>,
    base: &MagmaClust,
) -> Result<ClusterSelection> {
    let mut table = Vec::new();
    let mut models = Vec::new();
    for k in ks {
        let m = MagmaClust { k, ..base.clone() }.fit(data)?;
        table.push((k, m.vbic()));
        models.push(m);
    }
    let best = table
        .iter()
        .copied()
        .fold(None, |b: Option<(usize, f64)>, (k, v)| match b {
            Some((_, bv)) if bv >= v => b,
            _ => Some((k, v)),
        })
        .ok_or_else(|| Error::param("grid_nb_cluster", "empty", "at least one K"))?;
    Ok(ClusterSelection {
        best_k: best.0,
        vbic: table,
        models,
    })
}

/// A prediction for a new task.
#[derive(Clone, Debug, PartialEq)]
pub struct MagmaPrediction {
    /// The new task's kernel log-parameters and log noise variance (last).
    pub hp: Vec<f64>,
    /// Membership probabilities τ* of the new task.
    pub tau: Array1<f64>,
    /// Per-cluster predictive means on the prediction grid (K × P).
    pub cluster_means: Array2<f64>,
    /// Per-cluster predictive variances, noise included (K × P).
    pub cluster_vars: Array2<f64>,
    /// Mixture mean `Σₖ τ*ₖ μ̂ₖ`.
    pub mean: Array1<f64>,
    /// Mixture variance `Σₖ τ*ₖ (Varₖ + (μ̂ₖ − mean)²)`.
    pub var: Array1<f64>,
}

impl MagmaClustModel {
    /// Bytes [`MagmaClustModel::predict`] allocates: the hyper-posterior's K covariances on the
    /// training grid extended by the observed and predicted inputs, then per cluster the
    /// prediction covariances (P × P) and cross-covariances (P × observed).
    pub fn predict_memory(&self, train: &Tasks, n_obs: usize, n_pred: usize) -> u64 {
        let grid = train.grid.nrows().saturating_add(n_obs).saturating_add(n_pred);
        let k = self.weights.len();
        crate::memory::product(&[k + 2, grid, grid, 8])
            .saturating_add(crate::memory::product(&[6, n_pred, n_pred, 8]))
            .saturating_add(crate::memory::product(&[4, n_pred, n_obs.max(1), 8]))
    }

    /// Predicts a new task at `t_pred` from its observations `(t_obs, y_obs)` (none: the
    /// π-weighted mixture of the mean processes), as MagmaClustR's `pred_magmaclust`: the
    /// hyper-posterior is recomputed on the training grid extended by both input sets, τ* by
    /// the VE formula, and each cluster's GP posterior conditions on the observations.
    /// With task-specific hyper-parameters (H0i, Hki) the new task's own are learnt first by
    /// an EM as MagmaClustR's `train_gp_clust` (see `new_task_hyperparameters`).
    pub fn predict(
        &self,
        train: &Tasks,
        t_obs: ArrayView2<f64>,
        y_obs: ndarray::ArrayView1<f64>,
        t_pred: ArrayView2<f64>,
    ) -> Result<MagmaPrediction> {
        let s = &self.settings;
        crate::data::validate::check_same_len("observations", t_obs.nrows(), y_obs.len())?;
        crate::data::validate::check_same_len("input dimension", train.grid.ncols(), t_pred.ncols())?;
        let (n_obs, n_pred) = (t_obs.nrows(), t_pred.nrows());
        crate::memory::check(
            || format!("MagmaClust prediction of {n_pred} inputs from {n_obs} observations"),
            self.predict_memory(train, n_obs, n_pred),
            "predict at fewer inputs (memory grows as K·(N + P)² for P inputs on a training grid of N)",
        )?;
        let (grid, old, extra) = crate::gp::data::extend_grid(train.grid.view(), &[t_obs, t_pred]);
        let index: Vec<Vec<usize>> = train
            .index
            .iter()
            .map(|idx| idx.iter().map(|&g| old[g]).collect())
            .collect();
        let psi = s.task_factors(train, &self.hp_i)?;
        let (post, _) = s.hyperposterior(grid.view(), &index, train, &psi, &self.tau, &self.hp_k)?;
        let (obs, pred) = (&extra[0], &extra[1]);
        let ni = s.kernel_i.n_params();
        let kk = self.weights.len();
        let theta = if s.common_hp_i || y_obs.is_empty() {
            self.mean_task_hyperparameters()
        } else {
            self.new_task_hyperparameters(&post, obs, t_obs, y_obs)?
        };
        let psi_star = s.kernel_i.matrix_with_noise(&theta[..ni], theta[ni], t_obs);
        let k_po = s.kernel_i.matrix(&theta[..ni], t_pred, t_obs);
        let k_pp = s.kernel_i.matrix(&theta[..ni], t_pred, t_pred);
        let tau = if y_obs.is_empty() {
            self.weights.clone()
        } else {
            self.memberships(&post, obs, &psi_star, y_obs)?
        };
        let p = pred.len();
        let mut means = Array2::<f64>::zeros((kk, p));
        let mut vars = Array2::<f64>::zeros((kk, p));
        for k in 0..kk {
            let m_p: Array1<f64> = pred.iter().map(|&g| post.mean[[k, g]]).collect();
            let g_pp = &k_pp + &sub(&post.cov[k], pred, pred);
            let (mu, cov) = if y_obs.is_empty() {
                (m_p, g_pp)
            } else {
                let g_oo = &psi_star + &sub(&post.cov[k], obs, obs);
                let g_po = &k_po + &sub(&post.cov[k], pred, obs);
                let l = cholesky_jitter(&g_oo, s.pen_diag)?;
                let r = residual(y_obs, post.mean.row(k), obs);
                let alpha = solve_upper_t(&l, solve_lower(&l, r.view()).view());
                let v = crate::linalg::invert_lower(l.view()).dot(&g_po.t());
                (m_p + g_po.dot(&alpha), g_pp - v.t().dot(&v))
            };
            means.row_mut(k).assign(&mu);
            vars.row_mut(k)
                .assign(&cov.diag().mapv(|v| v.max(0.0) + theta[ni].exp()));
        }
        let mean = tau.dot(&means);
        let var = Array1::from_shape_fn(p, |j| {
            (0..kk)
                .map(|k| tau[k] * (vars[[k, j]] + (means[[k, j]] - mean[j]).powi(2)))
                .sum()
        });
        Ok(MagmaPrediction {
            hp: theta,
            tau,
            cluster_means: means,
            cluster_vars: vars,
            mean,
            var,
        })
    }
}

impl MagmaClustModel {
    /// The training tasks' hyper-parameters averaged on the log scale (the shared ones under
    /// H00 and Hk0): the new task's, or the start of their optimisation.
    fn mean_task_hyperparameters(&self) -> Vec<f64> {
        let m = self.hp_i.len() as f64;
        (0..self.hp_i[0].len())
            .map(|j| self.hp_i.iter().map(|h| h[j]).sum::<f64>() / m)
            .collect()
    }

    /// τ* of a new task by the VE formula, `πₖ N(y*; m̂ₖ(t*), Ψ*) e^(−½ tr(Ψ*⁻¹ Ĉₖ(t*)))`
    /// normalised, the hyper-posterior given on a grid where the task's inputs are rows `obs`.
    fn memberships(
        &self,
        post: &HyperPosterior,
        obs: &[usize],
        psi_star: &Array2<f64>,
        y_obs: ndarray::ArrayView1<f64>,
    ) -> Result<Array1<f64>> {
        let l = cholesky_jitter(psi_star, self.settings.pen_diag)?;
        let inv = inverse_from_cholesky(&l);
        let logs = Array1::from_shape_fn(self.weights.len(), |k| {
            let r = residual(y_obs, post.mean.row(k), obs);
            self.weights[k].max(f64::MIN_POSITIVE).ln() + tau_term(&l, &inv, &r, &sub(&post.cov[k], obs, obs))
        });
        Ok(softmax(logs))
    }

    /// A new task's kernel log-parameters and log noise variance under task-specific
    /// hypotheses, by MagmaClustR's `train_gp_clust` EM started from τ* = π: the M step
    /// minimises `Σₖ τ*ₖ [−log N(y*; m̂ₖ(t*), Ψ*_θ + Ĉₖ(t*, t*))]` by L-BFGS, the E step updates
    /// τ* by the VE formula; stop when the objective's relative change is below the training
    /// threshold or after as many iterations as training allows. Differs from the reference in
    /// starting from the training tasks' mean log-parameters instead of a random draw.
    fn new_task_hyperparameters(
        &self,
        post: &HyperPosterior,
        obs: &[usize],
        t_obs: ArrayView2<f64>,
        y_obs: ndarray::ArrayView1<f64>,
    ) -> Result<Vec<f64>> {
        let s = &self.settings;
        let ni = s.kernel_i.n_params();
        let kk = self.weights.len();
        let cov: Vec<Array2<f64>> = (0..kk).map(|k| sub(&post.cov[k], obs, obs)).collect();
        let scatter: Vec<Array2<f64>> = (0..kk)
            .map(|k| {
                let r = residual(y_obs, post.mean.row(k), obs);
                let col = r.view().insert_axis(ndarray::Axis(1));
                col.dot(&col.t())
            })
            .collect();
        let mut theta = self.mean_task_hyperparameters();
        let mut tau = self.weights.clone();
        let mut previous: Option<f64> = None;
        for _ in 0..s.n_iter_max {
            let objective = |p: &[f64], g: &mut [f64]| -> f64 {
                g.iter_mut().for_each(|v| *v = 0.0);
                let mut gk = vec![0.0; p.len()];
                let mut total = 0.0;
                for k in (0..kk).filter(|&k| tau[k] > 0.0) {
                    total += gaussian_objective_plus(
                        &s.kernel_i,
                        &p[..ni],
                        Some(p[ni]),
                        t_obs,
                        Some(&cov[k]),
                        (&(tau[k] * &scatter[k]), tau[k]),
                        s.pen_diag,
                        &mut gk,
                    );
                    g.iter_mut().zip(&gk).for_each(|(a, b)| *a += b);
                }
                total
            };
            let found = minimize(objective, &theta, &s.optimiser);
            theta = found.x;
            let psi_star = s.kernel_i.matrix_with_noise(&theta[..ni], theta[ni], t_obs);
            tau = self.memberships(post, obs, &psi_star, y_obs)?;
            let done = previous.is_some_and(|p| ((found.f - p) / found.f.abs()).abs() < s.cv_threshold);
            previous = Some(found.f);
            if done {
                break;
            }
        }
        Ok(theta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gp::data::Task;
    use crate::gp::simulate::{Scenario, Simulator};

    /// The VM objective's gradient against finite differences.
    #[test]
    fn vm_gradient_matches_finite_differences() {
        let x = Array2::from_shape_fn((8, 1), |(i, _)| i as f64 * 0.9);
        let r = Array1::from_shape_fn(8, |i| (i as f64).sin());
        let a = r
            .view()
            .insert_axis(ndarray::Axis(1))
            .dot(&r.view().insert_axis(ndarray::Axis(0)))
            + Array2::<f64>::eye(8) * 0.1;
        let p = [0.4, 0.2, -1.0];
        let mut g = [0.0; 3];
        gaussian_objective(
            &Kernel::SquaredExponential,
            &p[..2],
            Some(p[2]),
            x.view(),
            (&a, 1.3),
            1e-10,
            &mut g,
        );
        for j in 0..3 {
            let h = 1e-6;
            let (mut up, mut down) = (p, p);
            up[j] += h;
            down[j] -= h;
            let mut t = [0.0; 3];
            let f = |q: &[f64; 3], t: &mut [f64; 3]| {
                gaussian_objective(
                    &Kernel::SquaredExponential,
                    &q[..2],
                    Some(q[2]),
                    x.view(),
                    (&a, 1.3),
                    1e-10,
                    t,
                )
            };
            let fd = (f(&up, &mut t) - f(&down, &mut t)) / (2.0 * h);
            assert!(
                (g[j] - fd).abs() < 1e-5 * (1.0 + fd.abs()),
                "param {j}: {} vs {fd}",
                g[j]
            );
        }
    }

    /// The new task's objective (`Σ = K + Ĉ`) has the right gradient too.
    #[test]
    fn marginal_objective_gradient_matches_finite_differences() {
        let x = Array2::from_shape_fn((6, 1), |(i, _)| i as f64 * 1.3);
        let r = Array1::from_shape_fn(6, |i| (i as f64 * 0.7).cos());
        let a = r
            .view()
            .insert_axis(ndarray::Axis(1))
            .dot(&r.view().insert_axis(ndarray::Axis(0)));
        let plus = Kernel::SquaredExponential.matrix(&[-1.0, 0.5], x.view(), x.view());
        let kernel = Kernel::Sum(Box::new(Kernel::SquaredExponential), Box::new(Kernel::Periodic));
        let p = [0.2, 0.1, -0.3, 0.4, 1.0, -2.0];
        let f = |q: &[f64], g: &mut [f64]| {
            gaussian_objective_plus(
                &kernel,
                &q[..5],
                Some(q[5]),
                x.view(),
                Some(&plus),
                (&a, 0.7),
                1e-10,
                g,
            )
        };
        let mut g = [0.0; 6];
        f(&p, &mut g);
        for j in 0..6 {
            let h = 1e-6;
            let (mut up, mut down) = (p, p);
            up[j] += h;
            down[j] -= h;
            let mut t = [0.0; 6];
            let fd = (f(&up, &mut t) - f(&down, &mut t)) / (2.0 * h);
            assert!(
                (g[j] - fd).abs() < 1e-6 * (1.0 + fd.abs()),
                "param {j}: {} vs {fd}",
                g[j]
            );
        }
    }

    /// Three tasks on irregular inputs.
    fn small_tasks() -> Tasks {
        let task = |id: &str, x: &[f64]| Task {
            id: id.into(),
            inputs: Array2::from_shape_vec((x.len(), 1), x.to_vec()).unwrap(),
            outputs: x
                .iter()
                .map(|t| (t * 0.9).sin() * 3.0 + id.len() as f64)
                .collect(),
        };
        Tasks::new(vec![
            task("a", &[0.0, 1.0, 2.5]),
            task("bb", &[1.0, 3.0]),
            task("c", &[0.5, 2.5, 4.0, 5.0]),
        ])
        .unwrap()
    }

    /// Every observation stacked: the mean process's prior covariance C on the grid, the
    /// selection P of the observed grid rows, `S = P C Pᵀ + blockdiag Ψᵢ` and the outputs y.
    struct Dense {
        c: Array2<f64>,
        p: Array2<f64>,
        s: Array2<f64>,
        y: Array1<f64>,
    }

    fn dense(data: &Tasks, hp_k: &[f64], hp_i: &[Vec<f64>]) -> Dense {
        let rows: Vec<usize> = data.index.concat();
        let c = Kernel::SquaredExponential.matrix(hp_k, data.grid.view(), data.grid.view());
        let p = Array2::from_shape_fn((rows.len(), data.grid.nrows()), |(a, g)| {
            f64::from(u8::from(rows[a] == g))
        });
        let mut s = p.dot(&c).dot(&p.t());
        let mut at = 0;
        for (t, h) in data.tasks.iter().zip(hp_i) {
            let block = Kernel::SquaredExponential.matrix_with_noise(&h[..2], h[2], t.inputs.view());
            let m = block.nrows();
            s.slice_mut(ndarray::s![at..at + m, at..at + m])
                .zip_mut_with(&block, |a, b| *a += b);
            at += m;
        }
        let y = data
            .tasks
            .iter()
            .flat_map(|t| t.outputs.iter().copied())
            .collect();
        Dense { c, p, s, y }
    }

    /// The VE step of one cluster is exact Gaussian conditioning: with `y = P μ + e`,
    /// `e ~ N(0, blockdiag Ψᵢ)`, `μ ~ N(m, C)` on the grid, the posterior of μ is
    /// `m + C Pᵀ S⁻¹ (y − P m)`, `C − C Pᵀ S⁻¹ P C` with `S = P C Pᵀ + blockdiag Ψᵢ`.
    #[test]
    fn ve_step_equals_dense_gaussian_conditioning() {
        let data = small_tasks();
        let mut settings = MagmaClust::new(1);
        settings.prior_mean = 1.5;
        let hp_i: Vec<Vec<f64>> = vec![vec![0.3, 0.2, -2.0], vec![0.1, -0.4, -1.0], vec![-0.2, 0.5, -3.0]];
        let hp_k = vec![vec![1.2, 0.8]];
        let psi = settings.task_factors(&data, &hp_i).unwrap();
        let tau = Array2::ones((3, 1));
        let (post, _) = settings
            .hyperposterior(data.grid.view(), &data.index, &data, &psi, &tau, &hp_k)
            .unwrap();
        let Dense { c, p, s, y } = dense(&data, &hp_k[0], &hp_i);
        let s_inv = inverse_from_cholesky(&cholesky_jitter(&s, 0.0).unwrap());
        let gain = c.dot(&p.t()).dot(&s_inv);
        let mean = &gain.dot(&(&y - 1.5)) + 1.5;
        let cov = &c - &gain.dot(&p).dot(&c);
        assert!(
            (&post.mean.row(0) - &mean).iter().all(|d| d.abs() < 1e-7),
            "{} vs {mean}",
            post.mean
        );
        assert!((&post.cov[0] - &cov).iter().all(|d| d.abs() < 1e-7));
    }

    /// K = 1 is Magma, whose VE step is the exact posterior of the mean process: the ELBO
    /// (plus the entropy constant ½N(1 + log 2π) we drop) is then the exact log evidence
    /// `log N(y; P m, P C Pᵀ + blockdiag Ψᵢ)`, τ ≡ 1 and π = (1).
    #[test]
    fn k1_is_magma_and_its_elbo_is_the_log_evidence() {
        let data = small_tasks();
        let mut settings = MagmaClust::new(1);
        settings.n_iter_max = 1;
        settings.optimiser.max_iter = 0; // evaluate at the initial hyper-parameters
        let model = settings.fit(&data).unwrap();
        assert_eq!(model.tau, Array2::<f64>::ones((3, 1)));
        assert_eq!(model.weights.to_vec(), vec![1.0]);
        let n = data.grid.nrows();
        let Dense { s, y, .. } = dense(&data, &model.hp_k[0], &model.hp_i);
        let l = cholesky_jitter(&s, 0.0).unwrap();
        let evidence = tau_term(&l, &Array2::zeros(s.dim()), &y, &Array2::zeros(s.dim()));
        let elbo = model.elbos[0] + 0.5 * n as f64 * (1.0 + (2.0 * PI).ln());
        assert!(
            (elbo - evidence).abs() < 1e-6 * evidence.abs(),
            "ELBO {elbo} vs log evidence {evidence}"
        );
    }

    /// Without mean-process uncertainty (a mean-process variance e^−40) the prediction is
    /// standard GP regression around the prior mean with the task's hyper-parameters.
    #[test]
    fn prediction_without_mean_uncertainty_is_gp_regression() {
        let data = small_tasks();
        let mut settings = MagmaClust::new(1);
        settings.prior_mean = 2.0;
        let theta = vec![0.5, 0.3, -2.5];
        let model = MagmaClustModel {
            weights: Array1::ones(1),
            tau: Array2::ones((3, 1)),
            labels: vec![0; 3],
            hp_k: vec![vec![-40.0, 0.0]],
            hp_i: vec![theta.clone(); 3],
            hyperpost: HyperPosterior {
                mean: Array2::zeros((1, 0)),
                cov: vec![],
            },
            elbos: vec![],
            converged: true,
            settings,
        };
        let t_obs = Array2::from_shape_vec((4, 1), vec![0.2, 1.1, 2.0, 3.7]).unwrap();
        let y_obs = ndarray::array![2.5, 3.0, 1.0, 0.4];
        let t_pred = Array2::from_shape_vec((3, 1), vec![0.7, 2.9, 4.5]).unwrap();
        let p = model
            .predict(&data, t_obs.view(), y_obs.view(), t_pred.view())
            .unwrap();
        let gp = crate::gp::GpRegression {
            init_params: Some(theta[..2].to_vec()),
            init_noise: theta[2],
            prior_mean: 2.0,
            optimiser: Lbfgs {
                max_iter: 0,
                ..Lbfgs::reference()
            },
            ..Default::default()
        }
        .fit(t_obs.view(), y_obs.view())
        .unwrap();
        let (mean, var) = gp.predict(t_pred.view()).unwrap();
        let noise = theta[2].exp();
        for j in 0..3 {
            assert!((p.mean[j] - mean[j]).abs() < 1e-8, "{} vs {mean}", p.mean);
            assert!((p.var[j] - noise - var[j]).abs() < 1e-8, "{} vs {var}", p.var);
        }
    }

    /// The ELBO does not decrease (beyond the optimiser's looseness: 1e-3 relative), τ rows
    /// sum to 1, under every hypothesis.
    #[test]
    fn elbo_does_not_decrease_and_tau_rows_sum_to_one() {
        for (k_shared, i_shared) in [(true, true), (false, true), (true, false), (false, false)] {
            for seed in 0..2 {
                let sim = Simulator {
                    seed,
                    n_tasks: 20,
                    common_inputs: seed == 1,
                    ..Simulator::new(Scenario::Hki)
                }
                .generate()
                .unwrap();
                let m = MagmaClust::new(3)
                    .hypotheses(k_shared, i_shared)
                    .fit(&sim.tasks)
                    .unwrap();
                for w in m.elbos.windows(2) {
                    assert!(w[1] >= w[0] - 1e-3 * w[0].abs(), "{:?}", m.elbos);
                }
                for r in m.tau.rows() {
                    assert!((r.sum() - 1.0).abs() < 1e-12 && r.iter().all(|&t| (0.0..=1.0).contains(&t)));
                }
            }
        }
    }

    /// Reordering the tasks, or the points inside each task, changes nothing but the order
    /// of the results, bit for bit (k-means initialisation included).
    #[test]
    fn invariant_to_reordering_tasks_and_inputs() {
        for (scenario, common_inputs) in [(Scenario::H00, true), (Scenario::Hki, false)] {
            let sim = Simulator {
                seed: 4,
                n_tasks: 24,
                common_inputs,
                ..Simulator::new(scenario)
            }
            .generate()
            .unwrap();
            let settings =
                MagmaClust::new(3).hypotheses(scenario == Scenario::H00, scenario == Scenario::H00);
            let base = settings.fit(&sim.tasks).unwrap();
            let m = sim.tasks.len();
            let order: Vec<usize> = (0..m).map(|i| (i * 7 + 3) % m).collect();
            let shuffled: Vec<Task> = order
                .iter()
                .map(|&i| {
                    let t = &sim.tasks.tasks[i];
                    let rev: Vec<usize> = (0..t.outputs.len()).rev().collect();
                    Task {
                        id: t.id.clone(),
                        inputs: t.inputs.select(ndarray::Axis(0), &rev),
                        outputs: t.outputs.select(ndarray::Axis(0), &rev),
                    }
                })
                .collect();
            let other = settings.fit(&Tasks::new(shuffled).unwrap()).unwrap();
            let relabelled: Vec<i64> = order.iter().map(|&i| base.labels[i]).collect();
            assert_eq!(relabelled, other.labels);
            assert_eq!(base.tau.select(ndarray::Axis(0), &order), other.tau);
            assert_eq!(base.elbos, other.elbos);
            assert_eq!((&base.hp_k, &base.hyperpost), (&other.hp_k, &other.hyperpost));
        }
    }

    /// On the paper's H00 scenario the clusters are recovered (the paper: mean ARI 0.889,
    /// median 1.0 over 100 runs).
    #[test]
    fn recovers_the_clusters_of_simulated_data() {
        let mut aris = Vec::new();
        for seed in 0..3 {
            let sim = Simulator {
                seed,
                n_tasks: 30,
                ..Simulator::new(Scenario::H00)
            }
            .generate()
            .unwrap();
            let m = MagmaClust::new(3).fit(&sim.tasks).unwrap();
            aris.push(crate::eval::adjusted_rand_index(&sim.clusters, &m.labels).unwrap());
            assert!(m.elbos.iter().all(|e| e.is_finite()));
            assert!((m.weights.sum() - 1.0).abs() < 1e-12);
        }
        let mean = aris.iter().sum::<f64>() / aris.len() as f64;
        assert!(mean > 0.8, "ARIs {aris:?}");
    }

    /// VBIC picks the true K = 3 on simulated H00 data.
    #[test]
    fn vbic_selects_the_number_of_clusters() {
        let mut right = 0;
        for seed in 0..3 {
            let sim = Simulator {
                seed,
                ..Simulator::new(Scenario::H00)
            }
            .generate()
            .unwrap();
            let sel = select_nb_cluster(&sim.tasks, 1..=5, &MagmaClust::new(1)).unwrap();
            eprintln!("seed {seed}: VBIC {:?} -> K = {}", sel.vbic, sel.best_k);
            assert_eq!(sel.vbic.len(), 5);
            assert_eq!(sel.models[0].weights.len(), 1);
            right += usize::from(sel.best_k == 3);
        }
        assert!(right >= 2, "true K chosen on {right} of 3");
    }

    /// A held-out task's last 10 points predicted from its first 20 (the paper's protocol):
    /// far better than single-task GP regression, with the true cluster found.
    #[test]
    fn predicts_a_new_task_from_its_cluster() {
        let (mut mse_magma, mut mse_gp) = (0.0, 0.0);
        for seed in 0..3 {
            let sim = Simulator {
                seed,
                n_tasks: 41,
                ..Simulator::new(Scenario::H00)
            }
            .generate()
            .unwrap();
            let mut tasks = sim.tasks.tasks.clone();
            let test = tasks.remove(0);
            let train = Tasks::new(tasks).unwrap();
            let model = MagmaClust::new(3).fit(&train).unwrap();
            let (obs, fut) = (ndarray::s![..20, ..], ndarray::s![20.., ..]);
            let p = model
                .predict(
                    &train,
                    test.inputs.slice(obs),
                    test.outputs.slice(ndarray::s![..20]),
                    test.inputs.slice(fut),
                )
                .unwrap();
            let truth = test.outputs.slice(ndarray::s![20..]);
            mse_magma += (&p.mean - &truth).mapv(|v| v * v).mean().unwrap();
            assert!((p.tau.sum() - 1.0).abs() < 1e-12 && p.var.iter().all(|&v| v > 0.0));
            let gp = crate::gp::GpRegression::default()
                .fit(test.inputs.slice(obs), test.outputs.slice(ndarray::s![..20]))
                .unwrap();
            let (m, _) = gp.predict(test.inputs.slice(fut)).unwrap();
            mse_gp += (&m - &truth).mapv(|v| v * v).mean().unwrap();
        }
        eprintln!(
            "MSE over 3 held-out tasks: MagmaClust {:.3}, GP {:.3}",
            mse_magma / 3.0,
            mse_gp / 3.0
        );
        assert!(
            mse_magma < 0.5 * mse_gp,
            "MSE MagmaClust {mse_magma} vs GP {mse_gp}"
        );
    }
}
