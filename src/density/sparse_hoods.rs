//! Radius neighbourhoods of sparse rows ([`CsrView`]) — scikit-learn's `algorithm="brute"` on
//! sparse input, which computes distances from X·Xᵀ in row blocks. Here each query row's dot
//! products with every row come from the matrix's columns (an inverted index: a term's rows),
//! so only rows sharing a term with the query are touched; a row sharing none has a dot
//! product of 0, and its distance follows from the norms alone:
//! - Euclidean (and squared): ‖a − b‖² = ‖a‖² + ‖b‖² − 2 a·b (scikit-learn's
//!   `euclidean_distances`, clamped at 0) — a row sharing no term is within eps when
//!   ‖b‖² ≤ eps² − ‖a‖², found among the rows sorted by norm;
//! - cosine: 1 − a·b / (‖a‖ ‖b‖) — a row sharing no term is at distance exactly 1, within eps
//!   only when eps ≥ 1. An all-zero row has no direction: refused (scikit-learn silently takes
//!   its distance to everything as 1).
//!
//! Also a precomputed sparse neighbourhood graph (scikit-learn's `metric="precomputed"` with
//! a sparse matrix, as `radius_neighbors_graph(mode="distance")` makes): only the stored
//! entries are neighbours — a row's own point included, as scikit-learn counts it even when
//! its diagonal is not stored.

use crate::data::validate::{check_extents, Arithmetic};
use crate::data::CsrView;
use crate::error::{Error, Result};
use crate::metric::MetricKind;
use crate::scalar::Scalar;

/// Where each point's neighbours within eps come from.
pub(crate) trait Neighbourhoods: Sync {
    /// Points.
    fn len(&self) -> usize;
    /// Calls `visit(j, distance)` for every point j within `eps` of point `i` (itself
    /// included) for which `skip(j)` is false, in no particular order, until `visit` returns
    /// false (a tree skips without computing the distance).
    fn for_each_near(
        &self,
        i: usize,
        eps: f64,
        skip: impl Fn(usize) -> bool,
        visit: impl FnMut(usize, f64) -> bool,
    );
    /// The `k` points nearest to point `i` (itself included), by increasing (distance, index).
    fn nearest(&self, i: usize, k: usize) -> Vec<(usize, f64)>;
}

impl<F: Scalar> Neighbourhoods for super::index::NeighborIndex<'_, F> {
    fn len(&self) -> usize {
        super::index::NeighborIndex::len(self)
    }
    fn for_each_near(
        &self,
        i: usize,
        eps: f64,
        skip: impl Fn(usize) -> bool,
        visit: impl FnMut(usize, f64) -> bool,
    ) {
        self.for_each_within_unless(self.point(i), eps, skip, visit);
    }
    fn nearest(&self, i: usize, k: usize) -> Vec<(usize, f64)> {
        super::index::NeighborIndex::nearest(self, self.point(i), k)
    }
}

/// Sparse rows with their columns (row indices and values per column) and squared norms.
pub(crate) struct SparseRows<'a, F> {
    x: CsrView<'a, F>,
    metric: MetricKind,
    col_start: Vec<usize>,
    col_rows: Vec<u32>,
    col_vals: Vec<F>,
    sq_norms: Vec<f64>,
    /// Rows by increasing squared norm (Euclidean: the rows sharing no term within eps are a
    /// prefix).
    by_norm: Vec<u32>,
}

impl<'a, F: Scalar> SparseRows<'a, F> {
    /// Builds the inverted index; refuses metrics other than Euclidean, squared Euclidean and
    /// cosine, more than 2³² rows, and (cosine) an all-zero row.
    pub(crate) fn new(x: CsrView<'a, F>, metric: MetricKind) -> Result<Self> {
        if !matches!(
            metric,
            MetricKind::Euclidean | MetricKind::SqEuclidean | MetricKind::Cosine
        ) {
            return Err(Error::Unsupported(format!(
                "the {metric} distance between sparse rows: euclidean, sqeuclidean and cosine are computed on them"
            )));
        }
        let n = x.nrows();
        if n > u32::MAX as usize {
            return Err(Error::param("sparse rows", n, "at most 2^32 rows"));
        }
        let sq_norms = x.row_sq_norms();
        crate::data::validate::check_cosine_rows(metric, &sq_norms)?;
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
        by_norm.sort_by(|&a, &b| {
            sq_norms[a as usize]
                .total_cmp(&sq_norms[b as usize])
                .then(a.cmp(&b))
        });
        Ok(SparseRows {
            x,
            metric,
            col_start,
            col_rows,
            col_vals,
            sq_norms,
            by_norm,
        })
    }

    /// The index of `x` for `algorithm` (DBSCAN, OPTICS) under `metric`, after checking the
    /// values' range for the metric, and the memory of the index and of the fit
    /// (`fit_bytes`) against the limit.
    pub(crate) fn checked(
        x: CsrView<'a, F>,
        metric: MetricKind,
        fit_bytes: u64,
        algorithm: &str,
    ) -> Result<Self> {
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

    /// The distance of rows a and b from their dot product.
    #[inline]
    fn distance(&self, a: usize, b: usize, dot: f64) -> f64 {
        crate::metric::distance_from_dot(self.metric, self.sq_norms[a], self.sq_norms[b], dot)
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
    fn with_dots<R>(&self, i: usize, f: impl FnOnce(&[f64], &[u32], &[bool]) -> R) -> R {
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
    /// Row i's distance to every row into `out` (itself at 0).
    pub(crate) fn distances_from(&self, i: usize, out: &mut [f64]) {
        self.with_dots(i, |dots, _, _| {
            for (r, o) in out.iter_mut().enumerate() {
                *o = if r == i { 0.0 } else { self.distance(i, r, dots[r]) };
            }
        })
    }
}

impl<F: Scalar> Neighbourhoods for SparseRows<'_, F> {
    fn len(&self) -> usize {
        self.x.nrows()
    }

    fn for_each_near(
        &self,
        i: usize,
        eps: f64,
        skip: impl Fn(usize) -> bool,
        mut visit: impl FnMut(usize, f64) -> bool,
    ) {
        let mut visit = |j: usize, d: f64| skip(j) || visit(j, d);
        let n = self.x.nrows();
        self.with_dots(i, |dots, touched, shared| {
            let mut going = true;
            for &r in touched {
                let r = r as usize;
                let d = self.distance(i, r, dots[r]);
                if going && d <= eps {
                    going = visit(r, d);
                }
            }
            // the rows sharing no term (the query itself shares its terms, unless all-zero)
            if !going {
                return;
            }
            let unshared = |r: u32| !shared[r as usize];
            match self.metric {
                MetricKind::Cosine => {
                    if eps >= 1.0 {
                        for r in (0..n as u32).filter(|&r| unshared(r)) {
                            if !visit(r as usize, 1.0) {
                                break;
                            }
                        }
                    }
                }
                _ => {
                    for &r in &self.by_norm {
                        let d = self.distance(i, r as usize, 0.0);
                        if d > eps {
                            break; // (the rest have larger norms)
                        }
                        if unshared(r) && !visit(r as usize, d) {
                            break;
                        }
                    }
                }
            }
        });
    }

    /// Every row's distance (the rows sharing a term from their dot products, the others
    /// from the norms), the `k` smallest kept.
    fn nearest(&self, i: usize, k: usize) -> Vec<(usize, f64)> {
        let n = self.x.nrows();
        let k = k.min(n);
        let mut all: Vec<(usize, f64)> = Vec::with_capacity(n);
        self.with_dots(i, |dots, _, _| {
            all.extend((0..n).map(|r| (r, self.distance(i, r, dots[r]))))
        });
        let by = |a: &(usize, f64), b: &(usize, f64)| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0));
        if k < n && k > 0 {
            all.select_nth_unstable_by(k - 1, by);
        }
        all.truncate(k);
        all.sort_by(by);
        all
    }
}

/// A precomputed sparse neighbourhood graph: row i's stored entries are its neighbours at
/// those distances (and i itself at 0).
pub(crate) struct SparseGraph<'a, F> {
    g: CsrView<'a, F>,
}

impl<'a, F: Scalar> SparseGraph<'a, F> {
    /// A square graph with non-negative distances.
    pub(crate) fn new(g: CsrView<'a, F>) -> Result<Self> {
        if g.nrows() != g.ncols() {
            return Err(Error::NotSquare {
                rows: g.nrows(),
                cols: g.ncols(),
            });
        }
        for i in 0..g.nrows() {
            let (idx, val) = g.row(i);
            if let Some((&j, v)) = idx.iter().zip(val).find(|(_, v)| **v < F::zero()) {
                return Err(Error::NegativeDissimilarity {
                    i,
                    j: j as usize,
                    value: v.to_f64_exact(),
                });
            }
        }
        Ok(SparseGraph { g })
    }
}

impl<F: Scalar> Neighbourhoods for SparseGraph<'_, F> {
    fn len(&self) -> usize {
        self.g.nrows()
    }
    /// (the stored neighbours only: fewer than `k` when the row holds fewer)
    fn nearest(&self, i: usize, k: usize) -> Vec<(usize, f64)> {
        let mut near = Vec::new();
        self.for_each_near(
            i,
            f64::INFINITY,
            |_| false,
            |j, d| {
                near.push((j, d));
                true
            },
        );
        near.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        near.truncate(k);
        near
    }
    fn for_each_near(
        &self,
        i: usize,
        eps: f64,
        skip: impl Fn(usize) -> bool,
        mut visit: impl FnMut(usize, f64) -> bool,
    ) {
        let (idx, val) = self.g.row(i);
        if idx.binary_search(&(i as u32)).is_err() && !skip(i) && !visit(i, 0.0) {
            return;
        }
        for (&j, v) in idx.iter().zip(val) {
            let d = v.to_f64_exact();
            if d <= eps && !skip(j as usize) && !visit(j as usize, d) {
                return;
            }
        }
    }
}
