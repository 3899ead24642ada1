//! MagmaClust's variational EM (Leroy et al. 2022): the steps [`MagmaClust::fit`] runs in
//! order — the starting memberships, the tasks' covariance factors, the mean processes'
//! hyper-posterior (VE), the memberships (VE), the hyper-parameters of the mean processes and
//! of the tasks (VM), and the ELBO — with the Gaussian objectives they share.

use super::{HyperPosterior, MagmaClust};
use crate::error::Result;
use crate::estimator::Fit;
use crate::gp::covariance::Covariance;
use crate::gp::data::Tasks;
use crate::gp::lbfgs::minimize;
use crate::gp::regression::{cholesky_jitter, inverse_from_cholesky, log_det, solve_lower};
use ndarray::{Array1, Array2, ArrayView2};
use rayon::prelude::*;
use std::f64::consts::PI;

/// `½ tr(Σ⁻¹A) + ½ W log|Σ| + ½ W n log 2π` and its gradient in the kernel's log-parameters
/// (and the log noise, when given): the shared form of every VM objective.
pub(super) fn gaussian_objective(
    kernel: &Covariance,
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
pub(super) fn gaussian_objective_plus(
    kernel: &Covariance,
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
pub(super) fn tau_term(l: &Array2<f64>, inv: &Array2<f64>, r: &Array1<f64>, c: &Array2<f64>) -> f64 {
    let z = solve_lower(l, r.view());
    let n = r.len() as f64;
    -0.5 * z.dot(&z) - 0.5 * log_det(l) - 0.5 * n * (2.0 * PI).ln() - 0.5 * (inv * c).sum()
}

/// The submatrix of rows `r` and columns `c`.
pub(super) fn sub(m: &Array2<f64>, r: &[usize], c: &[usize]) -> Array2<f64> {
    Array2::from_shape_fn((r.len(), c.len()), |(a, b)| m[[r[a], c[b]]])
}

/// `y − m̂ₖ` at the grid rows `idx`.
pub(super) fn residual(
    y: ndarray::ArrayView1<f64>,
    mean: ndarray::ArrayView1<f64>,
    idx: &[usize],
) -> Array1<f64> {
    Array1::from_shape_fn(idx.len(), |a| y[a] - mean[idx[a]])
}

/// Tasks grouped by identical input rows (same grid indices in the same order), each group
/// in order of first appearance.
pub(super) fn input_groups(index: &[Vec<usize>]) -> Vec<Vec<usize>> {
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
pub(super) fn softmax(logs: Array1<f64>) -> Array1<f64> {
    let mx = logs.fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let e = logs.mapv(|v| (v - mx).exp());
    &e / e.sum()
}

impl MagmaClust {
    /// One-hot τ from k-means (50 starts): on the raw output vectors when every task has the
    /// same inputs (the research code's choice, which sees the curves' shapes), else on each
    /// task's (min, mean, max) outputs (MagmaClustR's `ini_kmeans`).
    pub(super) fn initial_tau(&self, data: &Tasks) -> Result<Array2<f64>> {
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
    pub(super) fn task_factors(
        &self,
        data: &Tasks,
        hp_i: &[Vec<f64>],
    ) -> Result<Vec<(Array2<f64>, Array2<f64>)>> {
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
    pub(super) fn hyperposterior(
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
}

impl MagmaClust {
    /// VM step for the mean processes: their hyper-parameters (one shared set with
    /// `common_hp_k`) minimising the expected negative log-likelihood of the scatters `a_k`.
    pub(super) fn optimise_hp_k(&self, grid: ArrayView2<f64>, a_k: &[Array2<f64>], hp_k: &mut Vec<Vec<f64>>) {
        let n = grid.nrows();
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
            let all: Vec<usize> = (0..a_k.len()).collect();
            let h = opt_k(&all, &hp_k[0]);
            hp_k.iter_mut().for_each(|v| v.clone_from(&h));
        } else {
            *hp_k = (0..a_k.len())
                .into_par_iter()
                .map(|k| opt_k(&[k], &hp_k[k]))
                .collect();
        }
    }

    /// Task `i`'s objective at hyper-parameters `p` (the kernel's, then the log noise), with
    /// its gradient into `g`.
    pub(super) fn task_objective(&self, s: &TaskScatters, i: usize, p: &[f64], g: &mut [f64]) -> f64 {
        let ni = self.kernel_i.n_params();
        gaussian_objective(
            &self.kernel_i,
            &p[..ni],
            Some(p[ni]),
            s.data.tasks[i].inputs.view(),
            (&s.of(i), s.weight(i)),
            self.pen_diag,
            g,
        )
    }

    /// VM step for the tasks: their hyper-parameters (one shared set with `common_hp_i`).
    pub(super) fn optimise_hp_i(&self, s: &TaskScatters, hp_i: &mut Vec<Vec<f64>>) {
        if !self.common_hp_i {
            *hp_i = (0..hp_i.len())
                .into_par_iter()
                .map(|i| minimize(|p, g| self.task_objective(s, i, p, g), &hp_i[i], &self.optimiser).x)
                .collect();
            return;
        }
        // The objective is linear in (A, W), so tasks with the same inputs (same grid rows in
        // the same order) share one Ψ and their scatters add up exactly.
        let ni = self.kernel_i.n_params();
        let groups = input_groups(&s.data.index);
        let scatter: Vec<(usize, Array2<f64>, f64)> = groups
            .par_iter()
            .map(|members| {
                let a = members
                    .iter()
                    .map(|&i| s.of(i))
                    .reduce(|x, y| x + y)
                    .expect("non-empty group");
                let w: f64 = members.iter().map(|&i| s.weight(i)).sum();
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
                            s.data.tasks[*i].inputs.view(),
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
    }

    /// The evidence lower bound: minus the mean processes' and the tasks' objectives, plus
    /// the memberships' entropy term and half the hyper-posterior's log-determinants.
    pub(super) fn elbo(
        &self,
        grid: ArrayView2<f64>,
        (a_k, hp_k): (&[Array2<f64>], &[Vec<f64>]),
        (s, hp_i): (&TaskScatters, &[Vec<f64>]),
        weights: &Array1<f64>,
        log_dets: &[f64],
    ) -> f64 {
        let mut scratch_k = vec![0.0; self.kernel_k.n_params()];
        let l_gamma: f64 = (0..a_k.len())
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
        let l_theta: f64 = (0..hp_i.len())
            .into_par_iter()
            .map(|i| {
                let mut g = vec![0.0; self.kernel_i.n_params() + 1];
                self.task_objective(s, i, &hp_i[i], &mut g)
            })
            .collect::<Vec<_>>()
            .iter()
            .sum();
        let entropy: f64 = s
            .tau
            .indexed_iter()
            .filter(|(_, &t)| t > 0.0)
            .map(|((_, k), &t)| t * (weights[k].ln() - t.ln()))
            .sum();
        let logdet: f64 = 0.5 * log_dets.iter().sum::<f64>();
        -l_gamma - l_theta + entropy + logdet
    }
}

/// VE step for the memberships: each task's posterior probability of each cluster, from the
/// mixture weights and its fit to each mean process.
pub(super) fn memberships(
    data: &Tasks,
    post: &HyperPosterior,
    psi: &[(Array2<f64>, Array2<f64>)],
    weights: &Array1<f64>,
) -> Array2<f64> {
    let kk = weights.len();
    let rows: Vec<Array1<f64>> = (0..data.len())
        .into_par_iter()
        .map(|i| {
            let idx = &data.index[i];
            let y = &data.tasks[i].outputs;
            let mut logs = Array1::<f64>::zeros(kk);
            for k in 0..kk {
                let r = residual(y.view(), post.mean.row(k), idx);
                let c = sub(&post.cov[k], idx, idx);
                logs[k] = weights[k].max(f64::MIN_POSITIVE).ln() + tau_term(&psi[i].0, &psi[i].1, &r, &c);
            }
            softmax(logs)
        })
        .collect();
    let mut tau = Array2::<f64>::zeros((data.len(), kk));
    for (i, r) in rows.into_iter().enumerate() {
        tau.row_mut(i).assign(&r);
    }
    tau
}

/// Each mean process's expected scatter about the prior mean: (m̂ₖ − m₀)(m̂ₖ − m₀)ᵀ + Ĉₖ.
pub(super) fn mean_scatters(post: &HyperPosterior, prior: &Array1<f64>) -> Vec<Array2<f64>> {
    (0..post.cov.len())
        .map(|k| {
            let d = &post.mean.row(k) - prior;
            let outer = d
                .view()
                .insert_axis(ndarray::Axis(1))
                .dot(&d.view().insert_axis(ndarray::Axis(0)));
            &outer + &post.cov[k]
        })
        .collect()
}

/// The tasks' expected scatters under the current hyper-posterior and memberships.
pub(super) struct TaskScatters<'a> {
    pub data: &'a Tasks,
    pub post: &'a HyperPosterior,
    pub tau: &'a Array2<f64>,
}

impl TaskScatters<'_> {
    /// Task `i`'s scatter Σₖ τᵢₖ [(yᵢ − m̂ₖ)(yᵢ − m̂ₖ)ᵀ + Ĉₖ] on its inputs.
    pub(super) fn of(&self, i: usize) -> Array2<f64> {
        let idx = &self.data.index[i];
        let y = &self.data.tasks[i].outputs;
        let mut a = Array2::<f64>::zeros((idx.len(), idx.len()));
        for k in 0..self.tau.ncols() {
            let w = self.tau[[i, k]];
            if w == 0.0 {
                continue;
            }
            let r = residual(y.view(), self.post.mean.row(k), idx);
            let outer = r
                .view()
                .insert_axis(ndarray::Axis(1))
                .dot(&r.view().insert_axis(ndarray::Axis(0)));
            a = a + w * (&outer + &sub(&self.post.cov[k], idx, idx));
        }
        a
    }

    /// Task `i`'s total membership (1 unless the memberships are partial).
    pub(super) fn weight(&self, i: usize) -> f64 {
        self.tau.row(i).sum()
    }
}
