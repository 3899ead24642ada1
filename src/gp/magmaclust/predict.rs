//! MagmaClust's prediction for a new task: its hyper-parameters, its memberships from its
//! observations, and the mixture of the clusters' posterior predictions.

use super::em::{gaussian_objective_plus, residual, softmax, sub, tau_term};
use super::{HyperPosterior, MagmaClustModel};
use crate::error::Result;
use crate::gp::data::Tasks;
use crate::gp::lbfgs::minimize;
use crate::gp::regression::{cholesky_jitter, inverse_from_cholesky, solve_lower, solve_upper_t};
use ndarray::{Array1, Array2, ArrayView2};

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
            crate::error::hints::MAGMACLUST_PREDICT,
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
    pub(super) fn mean_task_hyperparameters(&self) -> Vec<f64> {
        let m = self.hp_i.len() as f64;
        (0..self.hp_i[0].len())
            .map(|j| self.hp_i.iter().map(|h| h[j]).sum::<f64>() / m)
            .collect()
    }

    /// τ* of a new task by the VE formula, `πₖ N(y*; m̂ₖ(t*), Ψ*) e^(−½ tr(Ψ*⁻¹ Ĉₖ(t*)))`
    /// normalised, the hyper-posterior given on a grid where the task's inputs are rows `obs`.
    pub(super) fn memberships(
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
    pub(super) fn new_task_hyperparameters(
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
