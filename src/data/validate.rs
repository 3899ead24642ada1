//! Input validation shared by every algorithm: each check returns the first problem found,
//! in row-major order, as an [`Error`] that names it.

use crate::comm::Communicator;
use crate::error::{Error, Result};
use crate::metric::MetricKind;
use crate::scalar::Scalar;
use ndarray::ArrayView2;
use num_traits::ToPrimitive;
use rayon::prelude::*;

/// Checks the arrays of a CSR matrix of `ncols` columns (see [`crate::data::sparse`]): at
/// least one row, offsets from 0 never decreasing to the number of values, as many indices as
/// values, indices below `ncols` and strictly increasing within each row, values finite. The
/// error names the first row that breaks a rule.
pub fn check_csr<F: Scalar>(ncols: usize, indptr: &[usize], indices: &[u32], data: &[F]) -> Result<()> {
    let bad = |msg: String| Err(Error::MalformedSparse(msg));
    if indptr.len() < 2 {
        return Err(Error::EmptyInput {
            what: "sparse data has 0 rows".into(),
        });
    }
    if ncols == 0 {
        return Err(Error::EmptyInput {
            what: "data has 0 columns".into(),
        });
    }
    if indices.len() != data.len() {
        return bad(format!(
            "{} column indices for {} values",
            indices.len(),
            data.len()
        ));
    }
    let nnz = *indptr.last().expect("two offsets");
    if indptr[0] != 0 || nnz != data.len() {
        return bad(format!(
            "row offsets run from {} to {nnz}, but must run from 0 to the number of values, {}",
            indptr[0],
            data.len()
        ));
    }
    let row_problem = (0..indptr.len() - 1).into_par_iter().find_map_first(|i| {
        let (a, b) = (indptr[i], indptr[i + 1]);
        if a > b {
            return Some(format!("row offsets decrease at row {i} ({a} then {b})"));
        }
        let idx = &indices[a..b];
        if let Some(&j) = idx.iter().find(|&&j| j as usize >= ncols) {
            return Some(format!(
                "row {i} has column index {j}, but there are {ncols} columns"
            ));
        }
        if let Some(p) = idx.windows(2).position(|w| w[0] >= w[1]) {
            let how = if idx[p] == idx[p + 1] {
                "twice"
            } else {
                "out of order"
            };
            return Some(format!(
                "row {i} holds column {} {how} (indices must be sorted and distinct within a row)",
                idx[p + 1]
            ));
        }
        None
    });
    if let Some(msg) = row_problem {
        return bad(msg);
    }
    let non_finite = (0..indptr.len() - 1).into_par_iter().find_map_first(|i| {
        let (a, b) = (indptr[i], indptr[i + 1]);
        (a..b).find_map(|t| {
            let v = data[t].to_f64_exact();
            (!v.is_finite()).then_some((i, indices[t] as usize, v))
        })
    });
    match non_finite {
        Some((row, col, value)) => Err(Error::NonFinite {
            what: "data",
            row,
            col,
            value,
        }),
        None => Ok(()),
    }
}

/// Relative tolerance used to accept a precomputed matrix as symmetric:
/// `|d[i][j] − d[j][i]| ≤ tol · (1 + max(|d[i][j]|, |d[j][i]|))`.
pub const SYMMETRY_TOL: f64 = 1e-6;

/// Checks a data matrix (rows = points): at least one row and one column, all values finite.
pub fn check_points<F: Scalar>(x: ArrayView2<F>) -> Result<()> {
    if x.nrows() == 0 {
        return Err(Error::EmptyInput {
            what: "data has 0 rows".into(),
        });
    }
    if x.ncols() == 0 {
        return Err(Error::EmptyInput {
            what: "data has 0 columns".into(),
        });
    }
    check_finite(x, "data")
}

/// Checks that every value is finite; the error names the first bad cell.
pub fn check_finite<T: ToPrimitive + Copy + Sync>(x: ArrayView2<T>, what: &'static str) -> Result<()> {
    let bad = (0..x.nrows()).into_par_iter().find_map_first(|i| {
        x.row(i).iter().enumerate().find_map(|(j, v)| {
            let v = v.to_f64().unwrap_or(f64::NAN);
            (!v.is_finite()).then_some((i, j, v))
        })
    });
    match bad {
        Some((row, col, value)) => Err(Error::NonFinite {
            what,
            row,
            col,
            value,
        }),
        None => Ok(()),
    }
}

/// What an algorithm computes from the data's values, which decides how large they may be
/// before its arithmetic overflows ([`check_magnitude`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arithmetic {
    /// Differences of values raised to the power `p`, summed over the columns and the points
    /// (p = 2: squared Euclidean distances, variances, inertia; p = 1: Manhattan), divided by
    /// `scale` (a regularisation such as a GMM's `reg_covar`; 1 where none).
    Differences {
        /// The power.
        p: f64,
        /// The divisor.
        scale: f64,
    },
    /// The largest difference within one column (Chebyshev), summed over the points.
    LargestDifference,
    /// Squares of the values themselves, summed over the columns and the points (cosine's
    /// norms, dot products).
    SquaredValues,
    /// (latitude, longitude) in degrees: the latitude within ±90°.
    Degrees,
}

impl Arithmetic {
    /// Squared differences (k-means, Gaussian mixtures, Gaussian kernels).
    pub const SQUARES: Arithmetic = Arithmetic::Differences { p: 2.0, scale: 1.0 };

    /// The arithmetic of a metric's distances (squares for a metric clustr does not know).
    pub fn of_metric(kind: Option<MetricKind>) -> Arithmetic {
        match kind {
            Some(MetricKind::Manhattan) => Arithmetic::Differences { p: 1.0, scale: 1.0 },
            Some(MetricKind::Minkowski(p)) if p.is_infinite() => Arithmetic::LargestDifference,
            Some(MetricKind::Minkowski(p)) => Arithmetic::Differences { p, scale: 1.0 },
            Some(MetricKind::Cosine) => Arithmetic::SquaredValues,
            Some(MetricKind::Haversine) => Arithmetic::Degrees,
            Some(MetricKind::Euclidean | MetricKind::SqEuclidean) | None => Arithmetic::SQUARES,
        }
    }
}

/// Smallest and largest value of each column, in f64.
pub fn column_extents<F: Scalar>(x: ArrayView2<F>) -> Vec<(f64, f64)> {
    let empty = vec![(f64::INFINITY, f64::NEG_INFINITY); x.ncols()];
    x.axis_chunks_iter(ndarray::Axis(0), 4096)
        .into_par_iter()
        .map(|block| {
            let mut e = empty.clone();
            for row in block.rows() {
                for (e, v) in e.iter_mut().zip(row) {
                    let v = v.to_f64_exact();
                    *e = (e.0.min(v), e.1.max(v));
                }
            }
            e
        })
        .reduce(
            || empty.clone(),
            |mut a, b| {
                merge_extents(&mut a, &b);
                a
            },
        )
}

/// Widens `acc` to cover `other` (extents of another block or process).
pub fn merge_extents(acc: &mut [(f64, f64)], other: &[(f64, f64)]) {
    for (a, b) in acc.iter_mut().zip(other) {
        *a = (a.0.min(b.0), a.1.max(b.1));
    }
}

/// log₂ of `hi − lo` (≥ 0), without overflow; −∞ for an empty or constant column.
fn log2_span(lo: f64, hi: f64) -> f64 {
    (hi / 2.0 - lo / 2.0).log2() + 1.0
}

/// log₂ of Σⱼ 2^(p·lⱼ) for the log₂ magnitudes lⱼ, without overflow.
fn log2_sum_of_powers(logs: impl Iterator<Item = f64> + Clone, p: f64) -> f64 {
    let top = logs.clone().fold(f64::NEG_INFINITY, f64::max);
    if top == f64::NEG_INFINITY {
        return top;
    }
    p * top + logs.map(|l| (p * (l - top)).exp2()).sum::<f64>().log2()
}

/// Checks that `algorithm`, doing `arithmetic` on the `n` points of `x`, stays within the
/// range of `F` (with a margin of 2⁶ for the sums and products around it): every value's sum
/// over the points, and the differences (or values) the arithmetic combines. The error names
/// the column that goes furthest, its values, and the largest span (or value) it could
/// have. Subnormal and zero values are always accepted.
pub fn check_magnitude<F: Scalar>(x: ArrayView2<F>, arithmetic: Arithmetic, algorithm: &str) -> Result<()> {
    check_extents::<F>(&column_extents(x), x.nrows(), arithmetic, algorithm)
}

/// [`check_magnitude`] for the distances of `metric` between the rows of `x`, summed over them
/// (as a medoid method's loss or a silhouette sums them).
pub fn check_metric_magnitude<F: Scalar, M: crate::metric::Metric>(
    x: ArrayView2<F>,
    metric: &M,
) -> Result<()> {
    let what = format!("the {} distance", metric.name());
    check_magnitude(x, Arithmetic::of_metric(metric.kind()), &what)
}

/// [`check_magnitude`] for data whose `n_global` rows are held in slices by the processes of
/// `comm` (this process holds `x`): the extents of all the slices, checked alike everywhere.
pub fn check_magnitude_global<F: Scalar>(
    x: ArrayView2<F>,
    n_global: usize,
    arithmetic: Arithmetic,
    algorithm: &str,
    comm: &dyn Communicator,
) -> Result<()> {
    check_extents_global::<F>(&column_extents(x), n_global, arithmetic, algorithm, comm)
}

/// [`check_magnitude_global`] from this process's column extents.
pub fn check_extents_global<F: Scalar>(
    local: &[(f64, f64)],
    n_global: usize,
    arithmetic: Arithmetic,
    algorithm: &str,
    comm: &dyn Communicator,
) -> Result<()> {
    let flat: Vec<f64> = local.iter().flat_map(|&(lo, hi)| [lo, hi]).collect();
    let all = comm.all_gather_f64(&flat);
    let mut extents = vec![(f64::INFINITY, f64::NEG_INFINITY); local.len()];
    for part in all.chunks(2 * local.len().max(1)) {
        let part: Vec<(f64, f64)> = part.chunks_exact(2).map(|p| (p[0], p[1])).collect();
        merge_extents(&mut extents, &part);
    }
    check_extents::<F>(&extents, n_global, arithmetic, algorithm)
}

/// [`check_magnitude`] from the column extents of `n` points (for data held in pieces).
pub fn check_extents<F: Scalar>(
    extents: &[(f64, f64)],
    n: usize,
    arithmetic: Arithmetic,
    algorithm: &str,
) -> Result<()> {
    let d = extents.len();
    if d == 0 || n == 0 {
        return Ok(());
    }
    let limit = F::max_value().to_f64_exact().log2() - 6.0;
    let log_n = (n as f64).log2();
    let dtype = F::DTYPE;
    let out_of_range = |what: String| Error::OutOfRange(what);
    let fmt = |v: f64| format!("{v:.3e}");
    if arithmetic == Arithmetic::Degrees {
        if let Some(&(lo, hi)) = extents.first().filter(|e| e.0 < -90.0 || e.1 > 90.0) {
            return Err(out_of_range(format!(
                "column 0 holds latitudes from {lo} to {hi} degrees, but {algorithm} takes \
                 (latitude, longitude) rows with latitudes in [-90, 90]"
            )));
        }
        return Ok(());
    }
    // Sums of values over the points (means, centring).
    let largest = |(lo, hi): (f64, f64)| lo.abs().max(hi.abs());
    let (j, &e) = extents
        .iter()
        .enumerate()
        .max_by(|a, b| largest(*a.1).total_cmp(&largest(*b.1)))
        .expect("d > 0");
    if largest(e).log2() + log_n > limit {
        return Err(out_of_range(format!(
            "column {j} holds values up to {} in magnitude, but {algorithm} sums the values of \
             {n} points, which must stay below {} in {dtype}: values up to {} are possible; \
             rescale the data",
            fmt(largest(e)),
            fmt(limit.exp2()),
            fmt((limit - log_n).exp2()),
        )));
    }
    let (logs, p, scale, what): (Vec<f64>, f64, f64, &str) = match arithmetic {
        Arithmetic::Differences { p, scale } => (
            extents.iter().map(|&(lo, hi)| log2_span(lo, hi)).collect(),
            p,
            scale,
            "differences",
        ),
        Arithmetic::LargestDifference => (
            extents.iter().map(|&(lo, hi)| log2_span(lo, hi)).collect(),
            f64::INFINITY,
            1.0,
            "differences",
        ),
        Arithmetic::SquaredValues => (
            extents.iter().map(|&e| largest(e).log2()).collect(),
            2.0,
            1.0,
            "values",
        ),
        Arithmetic::Degrees => return Ok(()), // the latitudes are checked above
    };
    let log_total = if p.is_infinite() {
        logs.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    } else {
        log2_sum_of_powers(logs.iter().copied(), p)
    };
    let j = (0..d)
        .max_by(|&a, &b| logs[a].total_cmp(&logs[b]))
        .expect("d > 0");
    // Powers above 1 of the widest column must not underflow: below the smallest normal
    // number every distance would round towards 0 and the partition be noise. (A column of
    // one value, the data's all points equal, is fine: its distances are exactly 0.)
    let smallest = F::min_positive_value().to_f64_exact().log2();
    let top = logs[j];
    if p > 1.0 && p.is_finite() && top.is_finite() && p * top < smallest {
        let (lo, hi) = extents[j];
        return Err(out_of_range(format!(
            "the widest column, {j}, spans only {} (from {} to {}), but {algorithm} raises \
             {what} to the power {p}, which underflows {dtype} below {}: every distance would \
             be about 0; rescale the data (a column should span at least {})",
            fmt(top.exp2()),
            fmt(lo),
            fmt(hi),
            fmt(smallest.exp2()),
            fmt((smallest / p).exp2()),
        )));
    }
    let log_scale = if scale > 0.0 { scale.log2() } else { 0.0 };
    if log_total + log_n - log_scale <= limit {
        return Ok(());
    }
    Err(sums_overflow::<F>(extents, j, n, (p, scale, what), algorithm))
}

/// The error of [`check_extents`] when the sums of `what` (raised to the power `p`, divided
/// by `scale`) of `n` points over the columns would overflow `F`, naming column `j`, the
/// widest.
fn sums_overflow<F: Scalar>(
    extents: &[(f64, f64)],
    j: usize,
    n: usize,
    (p, scale, what): (f64, f64, &str),
    algorithm: &str,
) -> Error {
    let d = extents.len();
    let limit = F::max_value().to_f64_exact().log2() - 6.0;
    let (log_n, log_scale) = ((n as f64).log2(), if scale > 0.0 { scale.log2() } else { 0.0 });
    let (dtype, fmt) = (F::DTYPE, |v: f64| format!("{v:.3e}"));
    let largest = |(lo, hi): (f64, f64)| lo.abs().max(hi.abs());
    let (lo, hi) = extents[j];
    let power = if p.is_infinite() {
        "largest".to_string()
    } else if p == 1.0 {
        "absolute".to_string()
    } else if p == 2.0 {
        "squared".to_string()
    } else {
        format!("power-{p}")
    };
    let allowed = if p.is_infinite() {
        (limit - log_n).exp2()
    } else {
        ((limit - log_n + log_scale - (d as f64).log2()) / p).exp2()
    };
    let scaled = if scale != 1.0 && scale > 0.0 {
        format!(" divided by {scale:e}")
    } else {
        String::new()
    };
    let (has, may) = if what == "values" {
        (
            format!("holds values up to {}", fmt(largest((lo, hi)))),
            "hold values up to",
        )
    } else {
        (format!("spans {}", fmt(log2_span(lo, hi).exp2())), "span")
    };
    Error::OutOfRange(format!(
        "column {j} {has} (from {} to {}), but {algorithm} sums the {power} {what} of {n} points \
         over {d} column(s){scaled}, which must stay below {} in {dtype}: a column may {may} at \
         most {}; rescale the data",
        fmt(lo),
        fmt(hi),
        fmt(limit.exp2()),
        fmt(allowed),
    ))
}

/// Checks a number of clusters against the number of points: `1 ≤ k ≤ n`.
pub fn check_k(k: usize, n: usize) -> Result<()> {
    if k == 0 {
        return Err(Error::param("k", k, "the number of clusters must be at least 1"));
    }
    if k > n {
        return Err(Error::param(
            "k",
            k,
            format!("the number of clusters exceeds the number of points n = {n}"),
        ));
    }
    Ok(())
}

/// Checks that two lengths agree.
pub fn check_same_len(what: &str, expected: usize, got: usize) -> Result<()> {
    if expected != got {
        return Err(Error::ShapeMismatch {
            what: what.into(),
            expected: expected.to_string(),
            got: got.to_string(),
        });
    }
    Ok(())
}

/// Checks sample weights for `n` points: one per point and finite; non-negative unless
/// `allow_negative` (DBSCAN, as scikit-learn, lets a negative weight keep a point from being
/// core); and, where negative weights are not allowed, not all zero.
pub fn check_sample_weight(w: &[f64], n: usize, allow_negative: bool) -> Result<()> {
    check_same_len("sample weights", n, w.len())?;
    if let Some((i, v)) = w.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(Error::NonFinite {
            what: "sample weights",
            row: i,
            col: 0,
            value: *v,
        });
    }
    if !allow_negative {
        if let Some((i, v)) = w.iter().enumerate().find(|(_, &v)| v < 0.0) {
            return Err(Error::param(
                "sample weight",
                v,
                format!("of point {i} must not be negative"),
            ));
        }
        if !w.is_empty() && w.iter().all(|&v| v == 0.0) {
            return Err(Error::param(
                "sample weights",
                "all 0",
                "at least one must be positive",
            ));
        }
    }
    Ok(())
}

/// Checks that at least `k` points have a positive weight (seeding draws k distinct points in
/// proportion to their weights).
pub fn check_positive_weights(w: &[f64], k: usize) -> Result<()> {
    let positive = w.iter().filter(|&&v| v > 0.0).count();
    if positive < k {
        return Err(Error::param(
            "sample weights",
            format!("{positive} positive"),
            format!("at least k = {k} points need a positive weight"),
        ));
    }
    Ok(())
}

/// [`check_points`] for one process's slice of the rows of a distributed run, which starts at
/// global row `offset`: errors name the global row; a slice may be empty when the whole data
/// is not (`n_global` rows).
pub fn check_slice<F: Scalar>(x: ArrayView2<F>, offset: usize, n_global: usize) -> Result<()> {
    if x.nrows() == 0 && n_global > 0 {
        return Ok(());
    }
    check_points(x).map_err(|e| match e {
        Error::NonFinite {
            what,
            row,
            col,
            value,
        } => Error::NonFinite {
            what,
            row: row + offset,
            col,
            value,
        },
        e => e,
    })
}

/// The largest value of a square matrix in standard layout that is finite, non-negative and
/// symmetric within `tol` throughout; `None` if any cell is not (or the layout is another).
/// One pass in tiles: cell (i, j) is compared with (j, i) while both tiles are in cache, which
/// row-by-row comparison (a column walk for every row) is not.
fn clean_dissimilarities<T: ToPrimitive + Copy + Sync>(d: ArrayView2<T>, tol: f64) -> Option<f64> {
    const TILE: usize = 256;
    let n = d.nrows();
    let s = d.as_slice()?;
    let get = |v: T| v.to_f64().unwrap_or(f64::NAN);
    // (false for NaN and infinities; `&` rather than `&&`, and `max` without NaN handling — a
    // NaN already fails `a >= 0.0` — so the loops vectorise)
    let max = |a: f64, b: f64| if a > b { a } else { b };
    let good = |a: f64, b: f64| {
        let m = max(a, b);
        (a >= 0.0) & (b >= 0.0) & (m <= f64::MAX) & ((a - b).abs() <= tol * (1.0 + m))
    };
    (0..n.div_ceil(TILE))
        .into_par_iter()
        .map(|bi| {
            let rows = bi * TILE..((bi + 1) * TILE).min(n);
            let (mut ok, mut largest) = (true, 0.0f64);
            for bj in 0..=bi {
                // The tile (bi, bj) against the transposed tile (bj, bi), which stays in cache
                // while the rows of (bi, bj) stream past.
                for i in rows.clone() {
                    let cols = bj * TILE..((bj + 1) * TILE).min(i + 1);
                    for (j, &a) in cols.clone().zip(&s[i * n + cols.start..i * n + cols.end]) {
                        let (a, b) = (get(a), get(s[j * n + i]));
                        ok &= good(a, b);
                        largest = max(largest, max(a, b));
                    }
                }
            }
            ok.then_some(largest)
        })
        .try_reduce(|| 0.0, |a, b| Some(a.max(b)))
}

/// Checks a precomputed dissimilarity matrix: non-empty, square, finite, non-negative and
/// symmetric within `tol` (see [`SYMMETRY_TOL`]).
pub fn check_dissimilarity_matrix<T: ToPrimitive + Copy + Sync>(d: ArrayView2<T>, tol: f64) -> Result<()> {
    let (rows, cols) = d.dim();
    if rows != cols {
        return Err(Error::NotSquare { rows, cols });
    }
    if rows == 0 {
        return Err(Error::EmptyInput {
            what: "dissimilarity matrix is 0 x 0".into(),
        });
    }
    let limit = (f64::MAX.log2() - 6.0).exp2();
    if let Some(largest) = clean_dissimilarities(d, tol) {
        if largest * rows as f64 <= limit {
            return Ok(());
        }
    }
    // Something is wrong: find the first offending cell, in row-major order, for the message.
    check_finite(d, "dissimilarity matrix")?;
    let get = |i: usize, j: usize| d[[i, j]].to_f64().unwrap_or(f64::NAN);
    // Losses and silhouettes sum up to n dissimilarities in f64.
    let largest = (0..rows)
        .into_par_iter()
        .map(|i| (0..cols).fold(0.0f64, |m, j| m.max(get(i, j).abs())))
        .reduce(|| 0.0, f64::max);
    if largest * rows as f64 > limit {
        return Err(Error::OutOfRange(format!(
            "the dissimilarity matrix holds values up to {largest:.3e}, but sums over its {rows} \
             rows must stay below {limit:.3e} in float64: values up to {:.3e} are possible; \
             rescale the matrix",
            limit / rows as f64
        )));
    }
    let bad = (0..rows).into_par_iter().find_map_first(|i| {
        (0..cols).find_map(|j| {
            let a = get(i, j);
            if a < 0.0 {
                return Some(Error::NegativeDissimilarity { i, j, value: a });
            }
            if j < i {
                let b = get(j, i);
                if (a - b).abs() > tol * (1.0 + a.abs().max(b.abs())) {
                    return Some(Error::NotSymmetric {
                        i: j,
                        j: i,
                        a: b,
                        b: a,
                    });
                }
            }
            None
        })
    });
    bad.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn points_errors_name_the_cell() {
        let x = array![[1.0f64, 2.0], [3.0, f64::NAN]];
        let e = check_points(x.view()).unwrap_err().to_string();
        assert_eq!(e, "non-finite value NaN in data at row 1, column 1");
        let x = array![[1.0f32, f32::INFINITY]];
        assert!(check_points(x.view())
            .unwrap_err()
            .to_string()
            .contains("row 0, column 1"));
        let empty = ndarray::Array2::<f64>::zeros((0, 3));
        assert!(matches!(
            check_points(empty.view()),
            Err(Error::EmptyInput { .. })
        ));
        let nocols = ndarray::Array2::<f64>::zeros((3, 0));
        assert!(matches!(
            check_points(nocols.view()),
            Err(Error::EmptyInput { .. })
        ));
    }

    #[test]
    fn k_bounds() {
        assert!(check_k(1, 1).is_ok());
        assert!(check_k(0, 5).unwrap_err().to_string().contains("k = 0"));
        assert!(check_k(6, 5).unwrap_err().to_string().contains("n = 5"));
    }

    #[test]
    fn dissimilarity_checks() {
        let ok = array![[0.0, 1.0], [1.0 + 1e-9, 0.0]];
        assert!(check_dissimilarity_matrix(ok.view(), SYMMETRY_TOL).is_ok());
        let asym = array![[0.0, 1.0], [1.5, 0.0]];
        let e = check_dissimilarity_matrix(asym.view(), SYMMETRY_TOL).unwrap_err();
        assert!(matches!(e, Error::NotSymmetric { i: 0, j: 1, .. }), "{e}");
        let neg = array![[0.0, -1.0], [-1.0, 0.0]];
        assert!(matches!(
            check_dissimilarity_matrix(neg.view(), SYMMETRY_TOL),
            Err(Error::NegativeDissimilarity { i: 0, j: 1, .. })
        ));
        let rect = ndarray::Array2::<f64>::zeros((2, 3));
        assert_eq!(
            check_dissimilarity_matrix(rect.view(), SYMMETRY_TOL)
                .unwrap_err()
                .to_string(),
            "dissimilarity matrix must be square, got 2 x 3"
        );
        let ints = array![[0i32, 3], [3, 0]];
        assert!(check_dissimilarity_matrix(ints.view(), 0.0).is_ok());
    }
}

/// Sample weights divided by a power of two, so the largest magnitude lies in [1, 2): the one
/// overflow-safe form of weights that every weighted method computes with. Weights up to
/// ±f64::MAX then sum over any number of points without overflow, and, because a power of two
/// divides exactly (short of the subnormal range), every weighted mean, every comparison of
/// weighted sums and every draw in proportion to the weights is the same as with the weights
/// given; only a weighted total (an objective) is multiplied back by [`ScaledWeights::unscale`].
#[derive(Clone, Debug, PartialEq)]
pub struct ScaledWeights {
    /// The weights divided by 2^`exponent`.
    pub weights: Vec<f64>,
    /// The power of two the weights were divided by.
    pub exponent: i32,
}

impl ScaledWeights {
    /// Scales `w` (finite, checked by [`check_sample_weight`]); all zero stays as it is.
    pub fn new(w: &[f64]) -> Self {
        // (a non-finite weight leaves them as they are, for the validation to name it)
        let largest = w.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let exponent = if largest > 0.0 && largest.is_finite() {
            binary_exponent(largest)
        } else {
            0
        };
        let weights = if exponent == 0 {
            w.to_vec()
        } else {
            w.iter().map(|&v| times_power_of_two(v, -exponent)).collect()
        };
        ScaledWeights { weights, exponent }
    }

    /// The weights of `w`, scaled, if given.
    pub fn of(w: Option<&[f64]>) -> Option<Self> {
        w.map(Self::new)
    }

    /// A weighted total computed with the scaled weights, in the units of the given weights:
    /// refused when it is beyond f64's range (what an objective of weights near f64::MAX can
    /// reach), `what` naming it.
    pub fn unscale(&self, total: f64, what: &str) -> Result<f64> {
        let v = times_power_of_two(total, self.exponent);
        if v.is_finite() || !total.is_finite() {
            return Ok(v);
        }
        let log10 = total.abs().log10() + self.exponent as f64 * std::f64::consts::LOG10_2;
        Err(Error::OutOfRange(format!(
            "the {what} with these sample weights is about 1e{log10:.0}, beyond the largest \
             number (1.8e308): divide the sample weights by a constant (the result is otherwise \
             the same)"
        )))
    }
}

/// The e of `2^e ≤ v < 2^(e+1)` for a finite positive `v`, subnormal included (read from its
/// bits, after an exact scaling into the normal range).
fn binary_exponent(v: f64) -> i32 {
    if v < f64::MIN_POSITIVE {
        return binary_exponent(v * 2f64.powi(64)) - 64;
    }
    ((v.to_bits() >> 52) & 0x7ff) as i32 - 1023
}

/// `v · 2^e`, exact unless the result leaves the normal range (two steps, so 2^e itself may
/// lie beyond it).
pub fn times_power_of_two(v: f64, e: i32) -> f64 {
    let half = e / 2;
    v * 2f64.powi(half) * 2f64.powi(e - half)
}

/// Checks new points `x` for a fitted model whose own points (centres, means, medoids, core
/// points) are `model_points`: finite, as many columns, and within the range the fit itself
/// accepts ([`check_magnitude`]) taken over both together, so no distance between them
/// overflows. Predict and transform refuse what the fit would.
pub fn check_new_points<F: Scalar>(
    x: ArrayView2<F>,
    model_points: ArrayView2<F>,
    arithmetic: Arithmetic,
    algorithm: &str,
) -> Result<()> {
    check_points(x)?;
    check_same_len("number of features", model_points.ncols(), x.ncols())?;
    let mut extents = column_extents(x);
    merge_extents(&mut extents, &column_extents(model_points));
    check_extents::<F>(&extents, x.nrows() + model_points.nrows(), arithmetic, algorithm)
}
