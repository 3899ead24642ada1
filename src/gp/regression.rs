//! Single-task Gaussian-process regression (Rasmussen & Williams 2006, Algorithm 2.1): the
//! baseline of the MagmaClust study and the building block of its prediction step.
//! Hyper-parameters (kernel log-parameters and the log noise variance) maximise the marginal
//! likelihood by L-BFGS with the analytic gradient
//! `∂(−log p)/∂θⱼ = −½ tr((ααᵀ − K⁻¹) ∂K/∂θⱼ)`, `α = K⁻¹(y − m)`.
//! Factorisations use Cholesky with adaptive jitter, as MagmaClustR's `chol_inv_jitter`.

use crate::error::{Error, Result};
use crate::gp::covariance::Covariance;
use crate::gp::lbfgs::{minimize, Lbfgs};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};

/// The lower Cholesky factor of `k + jitter·I`, starting at `jitter` and multiplying it by 10
/// until the factorisation succeeds (at most 1e-2 relative to the mean diagonal).
pub fn cholesky_jitter(k: &Array2<f64>, jitter: f64) -> Result<Array2<f64>> {
    if k.iter().any(|v| !v.is_finite()) {
        return Err(Error::Unsupported(
            "covariance matrix has non-finite entries (hyper-parameters out of range)".into(),
        ));
    }
    let scale = (k.diag().mean().unwrap_or(1.0)).abs().max(1e-300);
    let mut pen = jitter.max(f64::MIN_POSITIVE);
    loop {
        let mut m = k.clone();
        m.diag_mut().iter_mut().for_each(|v| *v += pen);
        if let Some(l) = crate::linalg::cholesky_lower(m.view()) {
            return Ok(l);
        }
        pen *= 10.0;
        if pen > 1e-2 * scale {
            return Err(Error::Unsupported(
                "covariance matrix is not positive definite even with jitter 1e-2 x its mean variance".into(),
            ));
        }
    }
}

/// Solves `L·x = b` (L lower triangular).
pub fn solve_lower(l: &Array2<f64>, b: ArrayView1<f64>) -> Array1<f64> {
    let n = b.len();
    let mut x = b.to_owned();
    for i in 0..n {
        let s: f64 = (0..i).map(|j| l[[i, j]] * x[j]).sum();
        x[i] = (x[i] - s) / l[[i, i]];
    }
    x
}

/// Solves `Lᵀ·x = b` (L lower triangular).
pub fn solve_upper_t(l: &Array2<f64>, b: ArrayView1<f64>) -> Array1<f64> {
    let n = b.len();
    let mut x = b.to_owned();
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|j| l[[j, i]] * x[j]).sum();
        x[i] = (x[i] - s) / l[[i, i]];
    }
    x
}

/// `K⁻¹` from the Cholesky factor.
pub fn inverse_from_cholesky(l: &Array2<f64>) -> Array2<f64> {
    let linv = crate::linalg::invert_lower(l.view());
    linv.t().dot(&linv)
}

/// `log|K|` from the Cholesky factor.
pub fn log_det(l: &Array2<f64>) -> f64 {
    2.0 * l.diag().iter().map(|v| v.ln()).sum::<f64>()
}

/// Parameters of GP regression (the estimator).
#[derive(Clone, Debug)]
pub struct GpRegression {
    /// Covariance (default squared exponential).
    pub kernel: Covariance,
    /// Initial kernel log-parameters (default 1 for each, MagmaClustR's research code).
    pub init_params: Option<Vec<f64>>,
    /// Initial log noise variance (default −2).
    pub init_noise: f64,
    /// Constant prior mean (default 0).
    pub prior_mean: f64,
    /// Optimiser settings (default MagmaClustR's: factr 1e13, 25 iterations).
    pub optimiser: Lbfgs,
    /// Initial jitter (default 1e-10).
    pub jitter: f64,
}

impl Default for GpRegression {
    fn default() -> Self {
        GpRegression {
            kernel: Covariance::SquaredExponential,
            init_params: None,
            init_noise: -2.0,
            prior_mean: 0.0,
            optimiser: Lbfgs::reference(),
            jitter: 1e-10,
        }
    }
}

/// A fitted GP.
#[derive(Clone, Debug, PartialEq)]
pub struct GpModel {
    /// Covariance.
    pub kernel: Covariance,
    /// Covariance log-parameters.
    pub params: Vec<f64>,
    /// Log noise variance.
    pub noise: f64,
    /// Prior mean.
    pub prior_mean: f64,
    /// Training inputs.
    pub x: Array2<f64>,
    /// `K⁻¹(y − m)`.
    alpha: Array1<f64>,
    /// Cholesky factor of the training covariance.
    chol: Array2<f64>,
    /// Negative log marginal likelihood at the optimum.
    pub neg_log_likelihood: f64,
}

/// Negative log marginal likelihood and its gradient (kernel params then noise).
fn nll_and_grad(
    kernel: &Covariance,
    theta: &[f64],
    x: ArrayView2<f64>,
    r: ArrayView1<f64>,
    jitter: f64,
    grad: &mut [f64],
) -> f64 {
    let m = kernel.n_params();
    let (k, dks) = kernel.matrix_with_grads(&theta[..m], Some(theta[m]), x);
    let Ok(l) = cholesky_jitter(&k, jitter) else {
        return f64::INFINITY;
    };
    let alpha = solve_upper_t(&l, solve_lower(&l, r).view());
    let kinv = inverse_from_cholesky(&l);
    let n = r.len() as f64;
    for (g, dk) in grad.iter_mut().zip(&dks) {
        // −½ tr((ααᵀ − K⁻¹) dK)
        let mut t = 0.0;
        for i in 0..dk.nrows() {
            for j in 0..dk.ncols() {
                t += (alpha[i] * alpha[j] - kinv[[i, j]]) * dk[[j, i]];
            }
        }
        *g = -0.5 * t;
    }
    0.5 * r.dot(&alpha) + 0.5 * log_det(&l) + 0.5 * n * (2.0 * std::f64::consts::PI).ln()
}

impl GpRegression {
    /// Fits the hyper-parameters to `(x, y)` (x: n × d inputs).
    pub fn fit(&self, x: ArrayView2<f64>, y: ArrayView1<f64>) -> Result<GpModel> {
        crate::data::validate::check_points(x)?;
        crate::data::validate::check_same_len("outputs", x.nrows(), y.len())?;
        if let Some((i, v)) = y.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(Error::NonFinite {
                what: "outputs",
                row: i,
                col: 0,
                value: *v,
            });
        }
        let m = self.kernel.n_params();
        let mut theta0 = self.init_params.clone().unwrap_or_else(|| vec![1.0; m]);
        if theta0.len() != m {
            return Err(Error::ShapeMismatch {
                what: "initial kernel parameters".into(),
                expected: m.to_string(),
                got: theta0.len().to_string(),
            });
        }
        theta0.push(self.init_noise);
        let r = y.mapv(|v| v - self.prior_mean);
        let best = minimize(
            |t, g| nll_and_grad(&self.kernel, t, x, r.view(), self.jitter, g),
            &theta0,
            &self.optimiser,
        );
        let k = self.kernel.matrix_with_noise(&best.x[..m], best.x[m], x);
        let chol = cholesky_jitter(&k, self.jitter)?;
        let alpha = solve_upper_t(&chol, solve_lower(&chol, r.view()).view());
        Ok(GpModel {
            kernel: self.kernel.clone(),
            params: best.x[..m].to_vec(),
            noise: best.x[m],
            prior_mean: self.prior_mean,
            x: x.to_owned(),
            alpha,
            chol,
            neg_log_likelihood: best.f,
        })
    }
}

impl GpModel {
    /// Posterior mean and variance (of the latent function, noise excluded) at `xs`.
    pub fn predict(&self, xs: ArrayView2<f64>) -> Result<(Array1<f64>, Array1<f64>)> {
        crate::data::validate::check_same_len("input dimension", self.x.ncols(), xs.ncols())?;
        let kxs = self.kernel.matrix(&self.params, self.x.view(), xs);
        let mean = kxs.t().dot(&self.alpha) + self.prior_mean;
        let var = Array1::from_shape_fn(xs.nrows(), |j| {
            let v = solve_lower(&self.chol, kxs.column(j));
            (self.kernel.eval(&self.params, xs.row(j), xs.row(j)) - v.dot(&v)).max(0.0)
        });
        Ok((mean, var))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    /// The gradient of the marginal likelihood against finite differences.
    #[test]
    fn likelihood_gradient_matches_finite_differences() {
        let x = Array2::from_shape_fn((12, 1), |(i, _)| i as f64 * 0.7);
        let y = x.column(0).mapv(|t| (t * 0.8).sin() * 2.0 + 0.1 * t);
        let k = Covariance::Sum(
            Box::new(Covariance::SquaredExponential),
            Box::new(Covariance::Linear),
        );
        let theta = [0.4, 0.3, -1.0, -0.5, -1.5];
        let mut g = [0.0; 5];
        nll_and_grad(&k, &theta, x.view(), y.view(), 1e-10, &mut g);
        for j in 0..5 {
            let h = 1e-6;
            let (mut up, mut down) = (theta, theta);
            up[j] += h;
            down[j] -= h;
            let mut tmp = [0.0; 5];
            let fd = (nll_and_grad(&k, &up, x.view(), y.view(), 1e-10, &mut tmp)
                - nll_and_grad(&k, &down, x.view(), y.view(), 1e-10, &mut tmp))
                / (2.0 * h);
            assert!(
                (g[j] - fd).abs() < 1e-5 * (1.0 + fd.abs()),
                "param {j}: {} vs {fd}",
                g[j]
            );
        }
    }

    /// A smooth function is recovered between its samples, with small variance there.
    #[test]
    fn interpolates_a_smooth_function() {
        let x = Array2::from_shape_fn((25, 1), |(i, _)| i as f64 * 0.4);
        let y = x.column(0).mapv(f64::sin);
        let gp = GpRegression {
            optimiser: Lbfgs::tight(),
            ..GpRegression::default()
        };
        let m = gp.fit(x.view(), y.view()).unwrap();
        let xs = Array2::from_shape_fn((10, 1), |(i, _)| 0.2 + i as f64 * 0.8);
        let (mean, var) = m.predict(xs.view()).unwrap();
        for i in 0..10 {
            assert!(
                (mean[i] - xs[[i, 0]].sin()).abs() < 0.02,
                "{i}: {} vs {}",
                mean[i],
                xs[[i, 0]].sin()
            );
            assert!(var[i] < 0.01);
        }
        // Far from the data the variance returns to the prior's.
        let (_, far) = m.predict(ndarray::array![[100.0]].view()).unwrap();
        assert!((far[0] - m.params[0].exp()).abs() < 1e-6);
    }
}
