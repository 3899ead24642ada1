//! Distances from sparse rows ([`CsrView`]), as scikit-learn's brute force on sparse input
//! (which computes them from X·Xᵀ in row blocks) for DBSCAN, OPTICS, HDBSCAN and a distance
//! matrix written by blocks of rows. Here each query row's dot
//! products with every row come from the matrix's columns (an inverted index: a term's rows),
//! so only rows sharing a term with the query are touched; a row sharing none has a dot
//! product of 0, and its distance follows from the norms alone:
//! - Euclidean (and squared): ‖a − b‖² = ‖a‖² + ‖b‖² − 2 a·b (scikit-learn's
//!   `euclidean_distances`, clamped at 0) — a row sharing no term is within eps when
//!   ‖b‖² ≤ eps² − ‖a‖², found among the rows sorted by norm;
//! - cosine: 1 − a·b / (‖a‖ ‖b‖) — a row sharing no term is at distance exactly 1, within eps
//!   only when eps ≥ 1. An all-zero row has no direction: as between dense rows (and as
//!   scikit-learn), it is at distance 1 from every other row — but at 0 from another all-zero
//!   row, where scikit-learn says 1;
//! - Manhattan: a row sharing a term is merged with the query, column by column (scikit-learn's
//!   sum, in its order); a row sharing none is at ‖a‖₁ + ‖b‖₁ (the same sum in another order,
//!   so it may differ from scikit-learn's in the last bit), found among the rows sorted by
//!   ‖b‖₁ as for Euclidean.

use crate::data::validate::{check_extents, Arithmetic};
use crate::data::CsrView;
use crate::error::{Error, Result};
use crate::metric::MetricKind;
use crate::scalar::Scalar;

/// Refuses the metrics not computed on sparse rows (all but Euclidean, squared Euclidean,
/// cosine and Manhattan).
pub fn check_sparse_metric(metric: MetricKind) -> Result<()> {
    match metric {
        MetricKind::Euclidean | MetricKind::SqEuclidean | MetricKind::Cosine | MetricKind::Manhattan => Ok(()),
        _ => Err(Error::Unsupported(format!(
            "the {metric} distance between sparse rows: euclidean, sqeuclidean, cosine and manhattan are computed on them"
        ))),
    }
}

/// Sparse rows with their columns (row indices and values per column) and norms.
pub struct SparseRows<'a, F> {
    pub(crate) x: CsrView<'a, F>,
    pub(crate) metric: MetricKind,
    col_start: Vec<usize>,
    col_rows: Vec<u32>,
    col_vals: Vec<F>,
    /// Each row's squared norm (Manhattan: its L1 norm).
    pub(crate) norms: Vec<f64>,
    /// Rows by increasing norm (Euclidean, Manhattan: the rows sharing no term within eps are
    /// a prefix).
    pub(crate) by_norm: Vec<u32>,
}

impl<'a, F: Scalar> SparseRows<'a, F> {
    /// Builds the inverted index; refuses metrics other than Euclidean, squared Euclidean,
    /// cosine and Manhattan, and more than 2³² rows.
    pub fn new(x: CsrView<'a, F>, metric: MetricKind) -> Result<Self> {
        check_sparse_metric(metric)?;
        let n = x.nrows();
        if n > u32::MAX as usize {
            return Err(Error::param("sparse rows", n, "at most 2^32 rows"));
        }
        let norms = match metric {
            MetricKind::Manhattan => x.row_l1_norms(),
            _ => x.row_sq_norms(),
        };
        // the transpose: each column's rows, in row order
        let d = x.ncols();
        let mut col_start = vec![0usize; d + 1];
        for i in 0..n {
            for &j in x.row(i).0 {
                col_start[j as usize + 1] += 1;
            }
        }
        for j in 0..d {
            col_start[j + 1] += col_start[j];
        }
        let mut next = col_start.clone();
        let mut col_rows = vec![0u32; x.nnz()];
        let mut col_vals = vec![F::zero(); x.nnz()];
        for i in 0..n {
            let (idx, val) = x.row(i);
            for (&j, &v) in idx.iter().zip(val) {
                let at = &mut next[j as usize];
                col_rows[*at] = i as u32;
                col_vals[*at] = v;
                *at += 1;
            }
        }
        let mut by_norm: Vec<u32> = (0..n as u32).collect();
        by_norm.sort_by(|&a, &b| norms[a as usize].total_cmp(&norms[b as usize]).then(a.cmp(&b)));
        Ok(SparseRows {
            x,
            metric,
            col_start,
            col_rows,
            col_vals,
            norms,
            by_norm,
        })
    }

    /// The index of `x` for `algorithm` (DBSCAN, OPTICS, HDBSCAN, a distance matrix) under
    /// `metric`, after checking the values' range for the metric, and the memory of the index
    /// and of the fit (`fit_bytes`) against the limit.
    pub fn checked(x: CsrView<'a, F>, metric: MetricKind, fit_bytes: u64, algorithm: &str) -> Result<Self> {
        check_extents::<F>(
            &x.column_extents(),
            x.nrows(),
            Arithmetic::of_metric(Some(metric)),
            algorithm,
        )?;
        crate::memory::check(
            || format!("{algorithm} on {} sparse rows", x.nrows()),
            Self::bytes(x.nrows(), x.ncols(), x.nnz(), size_of::<F>()).saturating_add(fit_bytes),
            crate::error::hints::DENSITY,
        )?;
        Self::new(x, metric)
    }

    /// Bytes [`SparseRows::new`] allocates for `n` rows, `d` columns, `nnz` values.
    pub(crate) fn bytes(n: usize, d: usize, nnz: usize, elem: usize) -> u64 {
        crate::memory::product(&[d + 1, 8])
            .saturating_add(crate::memory::product(&[nnz, 4 + elem]))
            .saturating_add(crate::memory::product(&[n, 12 + 16]))
    }

    /// The distance of rows a and b from their dot product and whether they share a term.
    #[inline]
    pub(crate) fn distance(&self, a: usize, b: usize, dot: f64, shared: bool) -> f64 {
        match self.metric {
            MetricKind::Manhattan if shared => self.x.manhattan(a, b),
            MetricKind::Manhattan => self.norms[a] + self.norms[b],
            m => crate::metric::distance_from_dot(m, self.norms[a], self.norms[b], dot),
        }
    }
}

thread_local! {
    /// Per thread: the dot products with the query row (all rows) and the rows touched.
    static SCRATCH: std::cell::RefCell<(Vec<f64>, Vec<u32>, Vec<bool>)> = const { std::cell::RefCell::new((Vec::new(), Vec::new(), Vec::new())) };
}

impl<F: Scalar> SparseRows<'_, F> {
    /// Runs `f(dots, touched, shared)` with row i's dot product with every row (`dots`, 0 for
    /// the rows sharing no term), the rows sharing a term (`touched`, each once) and a flag per
    /// row (`shared`), from the columns of row i's terms; the per-thread buffers are zeroed
    /// again after.
    pub(crate) fn with_dots<R>(&self, i: usize, f: impl FnOnce(&[f64], &[u32], &[bool]) -> R) -> R {
        SCRATCH.with(|s| {
            let (dots, touched, shared) = &mut *s.borrow_mut();
            let n = self.x.nrows();
            if dots.len() != n {
                *dots = vec![0.0; n];
                *shared = vec![false; n];
            }
            touched.clear();
            let (idx, val) = self.x.row(i);
            for (&j, &v) in idx.iter().zip(val) {
                let (a, b) = (self.col_start[j as usize], self.col_start[j as usize + 1]);
                let v = v.to_f64_exact();
                for (&r, &w) in self.col_rows[a..b].iter().zip(&self.col_vals[a..b]) {
                    if !shared[r as usize] {
                        shared[r as usize] = true;
                        touched.push(r);
                    }
                    dots[r as usize] += v * w.to_f64_exact();
                }
            }
            let out = f(dots, touched, shared);
            for &r in touched.iter() {
                dots[r as usize] = 0.0;
                shared[r as usize] = false;
            }
            out
        })
    }
}

impl<F: Scalar> SparseRows<'_, F> {
    /// Rows.
    pub fn len(&self) -> usize {
        self.x.nrows()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.x.nrows() == 0
    }

    /// The distances of rows `first..first + out.nrows()` to every row into `out`, in
    /// parallel over its rows (the matrix's block of rows, for a distance matrix larger than
    /// memory).
    pub fn distance_rows(&self, first: usize, mut out: ndarray::ArrayViewMut2<F>) {
        use rayon::prelude::*;
        let n = self.len();
        assert!(
            out.ncols() == n && first + out.nrows() <= n,
            "a block of rows of the n x n matrix"
        );
        out.axis_iter_mut(ndarray::Axis(0))
            .into_par_iter()
            .enumerate()
            .for_each_init(
                || vec![0.0f64; n],
                |all, (r, mut row)| {
                    self.distances_from(first + r, all);
                    for (o, &v) in row.iter_mut().zip(all.iter()) {
                        *o = F::from_f64_lossy(v);
                    }
                },
            );
    }

    /// Row i's distance to every row into `out` (itself at 0).
    pub fn distances_from(&self, i: usize, out: &mut [f64]) {
        self.with_dots(i, |dots, _, shared| {
            for (r, o) in out.iter_mut().enumerate() {
                *o = if r == i {
                    0.0
                } else {
                    self.distance(i, r, dots[r], shared[r])
                };
            }
        })
    }
}

/// The dissimilarities of sparse rows computed when asked (the sampling k-medoids methods on
/// sparse rows): each pair's dot product or Manhattan sum by merging the two rows, the same
/// value [`crate::DenseMatrix::from_sparse_rows`] stores.
impl<F: Scalar> crate::dissim::Dissimilarity for SparseRows<'_, F> {
    type Value = F;
    fn len(&self) -> usize {
        self.x.nrows()
    }
    fn get(&self, i: usize, j: usize) -> F {
        if i == j {
            return F::zero();
        }
        F::from_f64_lossy(merged_distance(
            self.metric,
            (self.x.row(i), self.norms[i]),
            (self.x.row(j), self.norms[j]),
        ))
    }
}

/// The distance of every row of `a` to every row of `b` (n × k; a prediction's distances to
/// the medoids) under Euclidean, squared Euclidean, cosine or Manhattan, each pair as in
/// [`crate::DenseMatrix::from_sparse_rows`]; in parallel over `a`'s rows.
pub fn cross_distances<F: Scalar>(
    a: CsrView<'_, F>,
    b: CsrView<'_, F>,
    metric: MetricKind,
) -> Result<ndarray::Array2<f64>> {
    use rayon::prelude::*;
    check_sparse_metric(metric)?;
    if a.ncols() != b.ncols() {
        return Err(Error::ShapeMismatch {
            what: "columns of the rows and of the medoids".into(),
            expected: b.ncols().to_string(),
            got: a.ncols().to_string(),
        });
    }
    crate::memory::check(
        || format!("{} x {} distances", a.nrows(), b.nrows()),
        crate::memory::product(&[a.nrows(), b.nrows(), 8]),
        crate::error::hints::DENSITY,
    )?;
    let (na, nb) = (a.row_sq_norms(), b.row_sq_norms());
    let mut out = ndarray::Array2::zeros((a.nrows(), b.nrows()));
    out.axis_iter_mut(ndarray::Axis(0))
        .into_par_iter()
        .enumerate()
        .for_each(|(i, mut row)| {
            for (j, o) in row.iter_mut().enumerate() {
                *o = merged_distance(metric, (a.row(i), na[i]), (b.row(j), nb[j]));
            }
        });
    Ok(out)
}

/// The distance of two sparse rows (with their squared norms) by merging them: the Manhattan
/// sum, or the dot product for the other metrics (see [`crate::metric::distance_from_dot`]).
fn merged_distance<F: Scalar>(
    metric: MetricKind,
    (a, aa): ((&[u32], &[F]), f64),
    (b, bb): ((&[u32], &[F]), f64),
) -> f64 {
    match metric {
        MetricKind::Manhattan => crate::data::sparse::manhattan_rows(a, b),
        m => crate::metric::distance_from_dot(m, aa, bb, crate::data::sparse::dot_rows(a, b)),
    }
}
