//! A Gaussian mixture's parameters ([`Mixture`]) and the EM arithmetic on them: the
//! log-densities in blocks of rows, the E step's responsibilities and the M step's weights,
//! means and covariances of each covariance type, as scikit-learn computes them.

use super::{CovarianceType, Covariances, BLOCK};
use crate::comm::Communicator;
use crate::error::{Error, Result};
use crate::linalg::{cholesky_lower, gemm_abt, gram_add, invert_lower};
use crate::scalar::Scalar;
use ndarray::{s, Array1, Array2, Array3, ArrayView2, Axis, Zip};
use rayon::prelude::*;
use std::f64::consts::PI;

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
        let finite = |v: &f64| v.is_finite();
        let all_finite = match &covariances {
            Covariances::Full(c) => c.iter().all(finite),
            Covariances::Tied(c) | Covariances::Diag(c) => c.iter().all(finite),
            Covariances::Spherical(c) => c.iter().all(finite),
        };
        if !all_finite {
            return Err(Error::param(
                "covariances",
                covariance_type.name(),
                "must be finite",
            ));
        }
        // (given parameters: nothing is being fitted, so the message says what is wrong)
        let precisions_cholesky = precision_cholesky(&covariances).map_err(|_| {
            Error::param(
                "covariances",
                covariance_type.name(),
                "must be symmetric positive definite (variances positive)",
            )
        })?;
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
    pub(super) fn estimate(
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
    pub(super) fn weighted_log_prob(&self, x: ArrayView2<f64>) -> Array2<f64> {
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
    pub(super) fn e_step(&self, x: ArrayView2<f64>) -> (Array2<f64>, Array1<f64>) {
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
pub(super) fn precision_cholesky(cov: &Covariances) -> Result<Covariances> {
    let ill = || {
        Error::Unsupported(
            "Fitting the mixture model failed because some components have ill-defined \
             empirical covariance (for instance caused by singleton or collapsed samples). Try \
             to decrease the number of components, increase reg_covar, or scale the input data."
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
pub(super) fn reduce_blocks<T: Send>(
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
