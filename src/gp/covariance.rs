//! Covariance functions (the GP literature's kernels, named so here to tell them from the
//! kernel methods of [`crate::kernel`]) on log-parameters with analytic gradients,
//! parameterised as MagmaClustR 1.2.1 (`R/kernels.R`), so that fitted hyper-parameters read
//! the same:
//!
//! - squared exponential `exp(v − ½·e^(−ℓ)·‖x − x'‖²)` (params v, ℓ; the default);
//! - periodic `exp(v − 2·e^(−ℓ)·Σ_d sin²(π|x_d − x'_d| / e^p))` (params v, ℓ, p);
//! - rational quadratic `e^v·(1 + ‖x − x'‖² / (2·e^ℓ·e^a))^(−e^a)` (params v, ℓ, a);
//! - linear `e^s·xᵀx' + e^o` (params s, o);
//! - sums and products of kernels (parameters concatenated, left then right).
//!
//! A noise term `e^n` is added where two inputs coincide (`Σ_d |x_d − x'_d| < 1e-6`, as the
//! reference), through [`Covariance::matrix_with_noise`].

use ndarray::{Array2, ArrayView1, ArrayView2};
use std::f64::consts::PI;

/// A covariance kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum Covariance {
    /// Squared exponential (v, ℓ).
    SquaredExponential,
    /// Periodic (v, ℓ, p).
    Periodic,
    /// Rational quadratic (v, ℓ, a).
    RationalQuadratic,
    /// Linear (s, o).
    Linear,
    /// Sum of two kernels.
    Sum(Box<Covariance>, Box<Covariance>),
    /// Product of two kernels.
    Product(Box<Covariance>, Box<Covariance>),
}

/// MagmaClustR's names: `SE`, `PERIO`, `RQ`, `LIN`, combined with `+` and `*` (`*` binds
/// tighter; both associate to the left), e.g. `SE + PERIO * LIN`.
impl std::str::FromStr for Covariance {
    type Err = crate::error::Error;
    fn from_str(s: &str) -> crate::error::Result<Self> {
        let combine = |parts: Vec<Covariance>, f: fn(Box<Covariance>, Box<Covariance>) -> Covariance| {
            parts
                .into_iter()
                .reduce(|a, b| f(Box::new(a), Box::new(b)))
                .expect("split yields at least one part")
        };
        let sum = s
            .split('+')
            .map(|term| {
                let factors = term
                    .split('*')
                    .map(|name| match name.trim().to_ascii_uppercase().as_str() {
                        "SE" => Ok(Covariance::SquaredExponential),
                        "PERIO" => Ok(Covariance::Periodic),
                        "RQ" => Ok(Covariance::RationalQuadratic),
                        "LIN" => Ok(Covariance::Linear),
                        _ => Err(crate::error::Error::param(
                            "kernel",
                            s,
                            "SE, PERIO, RQ or LIN, combined with + and *",
                        )),
                    })
                    .collect::<crate::error::Result<Vec<_>>>()?;
                Ok(combine(factors, Covariance::Product))
            })
            .collect::<crate::error::Result<Vec<_>>>()?;
        Ok(combine(sum, Covariance::Sum))
    }
}

impl std::fmt::Display for Covariance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Covariance::SquaredExponential => write!(f, "SE"),
            Covariance::Periodic => write!(f, "PERIO"),
            Covariance::RationalQuadratic => write!(f, "RQ"),
            Covariance::Linear => write!(f, "LIN"),
            Covariance::Sum(a, b) => write!(f, "{a} + {b}"),
            Covariance::Product(a, b) => {
                // A sum inside a product cannot be written without brackets, which the
                // names do not have; parsing never builds one.
                write!(f, "{a} * {b}")
            }
        }
    }
}

/// Two inputs are the same point when their coordinates differ by less than this in total.
pub const SAME_INPUT: f64 = 1e-6;

impl Covariance {
    /// Number of log-parameters.
    pub fn n_params(&self) -> usize {
        match self {
            Covariance::SquaredExponential | Covariance::Linear => 2,
            Covariance::Periodic | Covariance::RationalQuadratic => 3,
            Covariance::Sum(a, b) | Covariance::Product(a, b) => a.n_params() + b.n_params(),
        }
    }

    /// `k(a, b)` at log-parameters `p`.
    pub fn eval(&self, p: &[f64], a: ArrayView1<f64>, b: ArrayView1<f64>) -> f64 {
        match self {
            Covariance::SquaredExponential => (p[0] - 0.5 * (-p[1]).exp() * sq_dist(a, b)).exp(),
            Covariance::Periodic => {
                let s: f64 = a
                    .iter()
                    .zip(b)
                    .map(|(x, y)| (PI * (x - y).abs() / p[2].exp()).sin().powi(2))
                    .sum();
                (p[0] - 2.0 * (-p[1]).exp() * s).exp()
            }
            Covariance::RationalQuadratic => {
                let alpha = p[2].exp();
                p[0].exp() * (1.0 + sq_dist(a, b) / (2.0 * p[1].exp() * alpha)).powf(-alpha)
            }
            Covariance::Linear => p[0].exp() * a.dot(&b) + p[1].exp(),
            Covariance::Sum(l, r) => {
                let m = l.n_params();
                l.eval(&p[..m], a, b) + r.eval(&p[m..], a, b)
            }
            Covariance::Product(l, r) => {
                let m = l.n_params();
                l.eval(&p[..m], a, b) * r.eval(&p[m..], a, b)
            }
        }
    }

    /// `∂k(a, b)/∂pⱼ` for every log-parameter, into `out`; returns `k(a, b)`.
    pub fn grad(&self, p: &[f64], a: ArrayView1<f64>, b: ArrayView1<f64>, out: &mut [f64]) -> f64 {
        match self {
            Covariance::SquaredExponential => {
                let d2 = sq_dist(a, b);
                let k = (p[0] - 0.5 * (-p[1]).exp() * d2).exp();
                out[0] = k;
                out[1] = k * 0.5 * (-p[1]).exp() * d2;
                k
            }
            Covariance::Periodic => {
                let period = p[2].exp();
                let (mut s, mut ds) = (0.0, 0.0);
                for (x, y) in a.iter().zip(b) {
                    let u = PI * (x - y).abs() / period;
                    s += u.sin().powi(2);
                    // d sin²(u)/dp = 2 sin u cos u · (−u)
                    ds += -2.0 * u.sin() * u.cos() * u;
                }
                let c = 2.0 * (-p[1]).exp();
                let k = (p[0] - c * s).exp();
                out[0] = k;
                out[1] = k * c * s;
                out[2] = -k * c * ds;
                k
            }
            Covariance::RationalQuadratic => {
                let (var, l, alpha) = (p[0].exp(), p[1].exp(), p[2].exp());
                let d2 = sq_dist(a, b);
                let base = 1.0 + d2 / (2.0 * l * alpha);
                let k = var * base.powf(-alpha);
                out[0] = k;
                // ∂/∂ℓ: −α·base^(−α−1)·(−d²/(2lα)) = k·(d²/(2l))/base
                out[1] = k * (d2 / (2.0 * l)) / base;
                // ∂/∂a (α = e^a): k·α·(−ln base + (d²/(2lα))/base)
                out[2] = k * alpha * (-base.ln() + (d2 / (2.0 * l * alpha)) / base);
                k
            }
            Covariance::Linear => {
                let dot = a.dot(&b);
                out[0] = p[0].exp() * dot;
                out[1] = p[1].exp();
                out[0] + out[1]
            }
            Covariance::Sum(l, r) => {
                let m = l.n_params();
                let (ol, or) = out.split_at_mut(m);
                l.grad(&p[..m], a, b, ol) + r.grad(&p[m..], a, b, or)
            }
            Covariance::Product(l, r) => {
                let m = l.n_params();
                let (ol, or) = out.split_at_mut(m);
                let kl = l.grad(&p[..m], a, b, ol);
                let kr = r.grad(&p[m..], a, b, or);
                ol.iter_mut().for_each(|g| *g *= kr);
                or.iter_mut().for_each(|g| *g *= kl);
                kl * kr
            }
        }
    }

    /// The covariance matrix between the rows of `x` and of `y`.
    pub fn matrix(&self, p: &[f64], x: ArrayView2<f64>, y: ArrayView2<f64>) -> Array2<f64> {
        Array2::from_shape_fn((x.nrows(), y.nrows()), |(i, j)| self.eval(p, x.row(i), y.row(j)))
    }

    /// The covariance matrix of the rows of `x` plus `e^noise` where inputs coincide, with the
    /// gradient matrices `∂K/∂pⱼ` (and last, when `noise` is given, `∂K/∂noise`).
    pub fn matrix_with_grads(
        &self,
        p: &[f64],
        noise: Option<f64>,
        x: ArrayView2<f64>,
    ) -> (Array2<f64>, Vec<Array2<f64>>) {
        let n = x.nrows();
        let m = self.n_params();
        let n_grads = m + usize::from(noise.is_some());
        let mut k = Array2::<f64>::zeros((n, n));
        let mut grads = vec![Array2::<f64>::zeros((n, n)); n_grads];
        let mut g = vec![0.0; m];
        for i in 0..n {
            for j in 0..=i {
                let mut v = self.grad(p, x.row(i), x.row(j), &mut g);
                for (q, gq) in g.iter().enumerate() {
                    grads[q][[i, j]] = *gq;
                    grads[q][[j, i]] = *gq;
                }
                if let Some(nz) = noise {
                    if same_input(x.row(i), x.row(j)) {
                        v += nz.exp();
                        grads[m][[i, j]] = nz.exp();
                        grads[m][[j, i]] = nz.exp();
                    }
                }
                k[[i, j]] = v;
                k[[j, i]] = v;
            }
        }
        (k, grads)
    }

    /// The covariance matrix of the rows of `x` plus `e^noise` where inputs coincide.
    pub fn matrix_with_noise(&self, p: &[f64], noise: f64, x: ArrayView2<f64>) -> Array2<f64> {
        let mut k = self.matrix(p, x, x);
        for i in 0..x.nrows() {
            for j in 0..x.nrows() {
                if same_input(x.row(i), x.row(j)) {
                    k[[i, j]] += noise.exp();
                }
            }
        }
        k
    }
}

fn sq_dist(a: ArrayView1<f64>, b: ArrayView1<f64>) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Whether two inputs are the same point (`Σ_d |a_d − b_d| < 1e-6`).
pub fn same_input(a: ArrayView1<f64>, b: ArrayView1<f64>) -> bool {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f64>() < SAME_INPUT
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn kernels() -> Vec<(Covariance, Vec<f64>)> {
        let se = Covariance::SquaredExponential;
        vec![
            (se.clone(), vec![0.3, -0.2]),
            (Covariance::Periodic, vec![0.1, 0.4, 0.7]),
            (Covariance::RationalQuadratic, vec![0.2, 0.5, -0.3]),
            (Covariance::Linear, vec![-0.5, 0.2]),
            (
                Covariance::Sum(Box::new(se.clone()), Box::new(Covariance::Linear)),
                vec![0.3, -0.2, -0.5, 0.2],
            ),
            (
                Covariance::Product(Box::new(se), Box::new(Covariance::Periodic)),
                vec![0.3, -0.2, 0.1, 0.4, 0.7],
            ),
        ]
    }

    /// Every gradient against central finite differences.
    #[test]
    fn gradients_match_finite_differences() {
        let (a, b) = (array![0.3, -1.2], array![1.1, 0.4]);
        for (k, p) in kernels() {
            let mut g = vec![0.0; k.n_params()];
            let v = k.grad(&p, a.view(), b.view(), &mut g);
            assert!((v - k.eval(&p, a.view(), b.view())).abs() < 1e-14);
            for j in 0..p.len() {
                let h = 1e-6;
                let (mut up, mut down) = (p.clone(), p.clone());
                up[j] += h;
                down[j] -= h;
                let fd = (k.eval(&up, a.view(), b.view()) - k.eval(&down, a.view(), b.view())) / (2.0 * h);
                assert!(
                    (g[j] - fd).abs() < 1e-7 * (1.0 + fd.abs()),
                    "{k:?} param {j}: {} vs {fd}",
                    g[j]
                );
            }
        }
    }

    #[test]
    fn parses_and_prints_the_reference_names() {
        for name in [
            "SE",
            "PERIO",
            "RQ",
            "LIN",
            "SE + PERIO",
            "SE * LIN",
            "SE + PERIO * LIN",
        ] {
            let k: Covariance = name.parse().unwrap();
            assert_eq!(k.to_string(), name);
        }
        let k: Covariance = "se+perio*lin".parse().unwrap();
        assert_eq!(k.n_params(), 2 + 3 + 2);
        assert!(matches!(k, Covariance::Sum(_, _)));
        assert!("SE + MATERN".parse::<Covariance>().is_err());
    }

    #[test]
    fn squared_exponential_is_the_reference_form() {
        // exp(v − ½ e^(−ℓ) d²) with v = ln 2, ℓ = ln 4, d² = 8: 2·exp(−1).
        let k = Covariance::SquaredExponential.eval(
            &[2f64.ln(), 4f64.ln()],
            array![0.0, 0.0].view(),
            array![2.0, 2.0].view(),
        );
        assert!((k - 2.0 * (-1.0f64).exp()).abs() < 1e-15);
        let x = array![[0.0], [1.0], [1.0 + 1e-8]];
        let m = Covariance::SquaredExponential.matrix_with_noise(&[0.0, 0.0], 0.0, x.view());
        // Noise e^0 = 1 on the diagonal and between the two coinciding inputs.
        assert!((m[[0, 0]] - 2.0).abs() < 1e-15 && (m[[1, 2]] - 2.0).abs() < 1e-7 && m[[0, 1]] < 1.0);
        let (k2, g) = Covariance::SquaredExponential.matrix_with_grads(&[0.0, 0.0], Some(0.0), x.view());
        assert_eq!(k2, m);
        assert_eq!(g.len(), 3);
        assert_eq!(g[2][[1, 2]], 1.0);
    }
}
