//! A compact L-BFGS minimiser (Nocedal 1980; Liu & Nocedal 1989): the two-loop recursion
//! over the last `memory` steps and a backtracking line search with the Armijo condition
//! (pairs without positive curvature are skipped). The stopping rule is R's `optim`
//! L-BFGS-B `factr`: stop when the relative decrease `(f_k − f_k+1) / max(|f_k|, |f_k+1|, 1)`
//! falls to `factr · ε`, or the gradient's largest entry to `gtol`, or after `max_iter`
//! iterations. MagmaClustR uses `factr = 1e13`, `maxit = 25`, the defaults of
//! [`Lbfgs::reference`].

/// Options of the minimiser.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lbfgs {
    /// Steps remembered (default 10).
    pub memory: usize,
    /// Maximum iterations.
    pub max_iter: usize,
    /// Relative-decrease tolerance in units of machine epsilon (R's `factr`).
    pub factr: f64,
    /// Stop when every gradient entry is at most this in absolute value.
    pub gtol: f64,
}

impl Lbfgs {
    /// MagmaClustR's settings: `factr = 1e13`, `maxit = 25`.
    pub fn reference() -> Self {
        Lbfgs {
            memory: 10,
            max_iter: 25,
            factr: 1e13,
            gtol: 0.0,
        }
    }

    /// Tight settings (factr 1e7, R's default; 1,000 iterations).
    pub fn tight() -> Self {
        Lbfgs {
            memory: 10,
            max_iter: 1000,
            factr: 1e7,
            gtol: 1e-10,
        }
    }
}

/// The outcome of a minimisation.
#[derive(Clone, Debug, PartialEq)]
pub struct Minimum {
    /// The point reached.
    pub x: Vec<f64>,
    /// The function there.
    pub f: f64,
    /// Iterations run.
    pub n_iter: usize,
    /// Whether a tolerance (not the iteration limit or a failed line search) stopped it.
    pub converged: bool,
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Minimises `f` from `x0`; `f(x, grad)` returns the value and writes the gradient. A
/// non-finite value counts as "too far" for the line search.
pub fn minimize(mut f: impl FnMut(&[f64], &mut [f64]) -> f64, x0: &[f64], opts: &Lbfgs) -> Minimum {
    let n = x0.len();
    let mut x = x0.to_vec();
    let mut g = vec![0.0; n];
    let mut fx = f(&x, &mut g);
    let (mut s_hist, mut y_hist, mut rho): (Vec<Vec<f64>>, Vec<Vec<f64>>, Vec<f64>) =
        (vec![], vec![], vec![]);
    let tol = opts.factr * f64::EPSILON;
    let mut n_iter = 0;
    if !fx.is_finite() {
        return Minimum {
            x,
            f: fx,
            n_iter,
            converged: false,
        };
    }
    while n_iter < opts.max_iter {
        if g.iter().all(|v| v.abs() <= opts.gtol) {
            return Minimum {
                x,
                f: fx,
                n_iter,
                converged: true,
            };
        }
        n_iter += 1;
        // Two-loop recursion: d = −H·g.
        let mut q = g.clone();
        let mut alpha = vec![0.0; s_hist.len()];
        for i in (0..s_hist.len()).rev() {
            alpha[i] = rho[i] * dot(&s_hist[i], &q);
            q.iter_mut()
                .zip(&y_hist[i])
                .for_each(|(qv, yv)| *qv -= alpha[i] * yv);
        }
        let gamma = match (s_hist.last(), y_hist.last()) {
            (Some(s), Some(y)) => dot(s, y) / dot(y, y),
            _ => 1.0 / dot(&g, &g).sqrt().max(1e-300),
        };
        q.iter_mut().for_each(|v| *v *= gamma);
        for i in 0..s_hist.len() {
            let beta = rho[i] * dot(&y_hist[i], &q);
            q.iter_mut()
                .zip(&s_hist[i])
                .for_each(|(qv, sv)| *qv += (alpha[i] - beta) * sv);
        }
        let mut d: Vec<f64> = q.iter().map(|v| -v).collect();
        let mut slope = dot(&g, &d);
        if slope >= 0.0 {
            // Not a descent direction: restart from steepest descent.
            s_hist.clear();
            y_hist.clear();
            rho.clear();
            d = g.iter().map(|v| -v / dot(&g, &g).sqrt().max(1e-300)).collect();
            slope = dot(&g, &d);
        }
        // Backtracking line search (Armijo, c = 1e-4).
        let mut step = 1.0;
        let mut g_new = vec![0.0; n];
        let mut accepted = None;
        for _ in 0..40 {
            let x_new: Vec<f64> = x.iter().zip(&d).map(|(a, b)| a + step * b).collect();
            let f_new = f(&x_new, &mut g_new);
            if f_new.is_finite() && f_new <= fx + 1e-4 * step * slope {
                accepted = Some((x_new, f_new));
                break;
            }
            step *= 0.5;
        }
        let Some((x_new, f_new)) = accepted else {
            return Minimum {
                x,
                f: fx,
                n_iter,
                converged: false,
            };
        };
        let s: Vec<f64> = x_new.iter().zip(&x).map(|(a, b)| a - b).collect();
        let y: Vec<f64> = g_new.iter().zip(&g).map(|(a, b)| a - b).collect();
        let sy = dot(&s, &y);
        if sy > 1e-12 * dot(&y, &y).sqrt() * dot(&s, &s).sqrt() {
            if s_hist.len() == opts.memory {
                s_hist.remove(0);
                y_hist.remove(0);
                rho.remove(0);
            }
            s_hist.push(s);
            y_hist.push(y);
            rho.push(1.0 / sy);
        }
        let decrease = (fx - f_new) / fx.abs().max(f_new.abs()).max(1.0);
        x = x_new;
        g.clone_from(&g_new);
        fx = f_new;
        if decrease <= tol {
            return Minimum {
                x,
                f: fx,
                n_iter,
                converged: true,
            };
        }
    }
    Minimum {
        x,
        f: fx,
        n_iter,
        converged: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_rosenbrock_minimum() {
        let rosen = |x: &[f64], g: &mut [f64]| {
            let (a, b) = (x[0], x[1]);
            g[0] = -2.0 * (1.0 - a) - 400.0 * a * (b - a * a);
            g[1] = 200.0 * (b - a * a);
            (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2)
        };
        let m = minimize(rosen, &[-1.2, 1.0], &Lbfgs::tight());
        assert!(m.converged);
        assert!(
            (m.x[0] - 1.0).abs() < 1e-5 && (m.x[1] - 1.0).abs() < 1e-5,
            "{m:?}"
        );
    }

    #[test]
    fn solves_a_quadratic_and_respects_the_iteration_limit() {
        // f = Σ i·(x_i − i)²
        let quad = |x: &[f64], g: &mut [f64]| {
            let mut f = 0.0;
            for i in 0..x.len() {
                let c = (i + 1) as f64;
                f += c * (x[i] - c).powi(2);
                g[i] = 2.0 * c * (x[i] - c);
            }
            f
        };
        let m = minimize(quad, &[0.0; 6], &Lbfgs::tight());
        assert!(
            m.x.iter()
                .enumerate()
                .all(|(i, v)| (v - (i + 1) as f64).abs() < 1e-6),
            "{m:?}"
        );
        let short = minimize(
            quad,
            &[0.0; 6],
            &Lbfgs {
                max_iter: 2,
                ..Lbfgs::tight()
            },
        );
        assert_eq!(short.n_iter, 2);
        assert!(!short.converged && short.f < quad(&[0.0; 6], &mut [0.0; 6]));
    }
}
