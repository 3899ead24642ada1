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
//!
//! Files: this one holds the estimator, the EM loop and the selection of K; `em.rs` the EM's
//! named steps; `predict.rs` the prediction for a new task.

mod em;
mod predict;
#[cfg(test)]
mod tests;

use crate::error::{Error, Result};
use crate::estimator::shared_setters;
use crate::estimator::Clustering;
use crate::gp::covariance::Covariance;
use crate::gp::data::Tasks;
use crate::gp::lbfgs::Lbfgs;
use em::{mean_scatters, memberships, TaskScatters};
use ndarray::{Array1, Array2};
pub use predict::MagmaPrediction;

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
    /// Covariance of the mean processes (default squared exponential).
    pub kernel_k: Covariance,
    /// Covariance of the tasks (default squared exponential).
    pub kernel_i: Covariance,
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
            kernel_k: Covariance::SquaredExponential,
            kernel_i: Covariance::SquaredExponential,
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
    /// Initial responsibilities.
    pub fn init_tau(mut self, t: Array2<f64>) -> Self {
        self.init_tau = Some(t);
        self
    }
}

shared_setters!(MagmaClust { seed });

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
            crate::error::hints::MAGMACLUST_FIT,
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

    /// The variational EM of MagmaClust: each pass a VE step (the mean processes'
    /// hyper-posterior, then the tasks' memberships) and a VM step (mixture weights, the mean
    /// processes' and the tasks' hyper-parameters), until the ELBO's relative change falls
    /// below `cv_threshold`.
    fn fit_in_order(&self, data: &Tasks, init_tau: Option<Array2<f64>>) -> Result<MagmaClustModel> {
        let (m, kk) = (data.len(), self.k);
        let grid = data.grid.view();
        let n = grid.nrows();
        let mut tau = match init_tau {
            Some(t) => t,
            None => self.initial_tau(data)?,
        };
        let mut weights = tau.mean_axis(ndarray::Axis(0)).expect("M >= 1");
        let mut hp_k = vec![vec![1.0; self.kernel_k.n_params()]; kk];
        let mut hp_i: Vec<Vec<f64>> = (0..m)
            .map(|_| {
                let mut v = vec![1.0; self.kernel_i.n_params()];
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
                tau = memberships(data, &post, &psi, &weights);
            }
            // VM step.
            weights = tau.mean_axis(ndarray::Axis(0)).expect("M >= 1");
            let a_k = mean_scatters(&post, &prior);
            self.optimise_hp_k(grid, &a_k, &mut hp_k);
            let scatters = TaskScatters {
                data,
                post: &post,
                tau: &tau,
            };
            self.optimise_hp_i(&scatters, &mut hp_i);
            // ELBO at the new hyper-parameters.
            let elbo = self.elbo(grid, (&a_k, &hp_k), (&scatters, &hp_i), &weights, &log_dets);
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
