//! Dissimilarities between the points of one data set, as the medoid methods and the
//! silhouette consume them: a dense square matrix, a packed lower triangle (half the memory),
//! or computed on the fly from points and a metric (O(1) memory beyond the points, so
//! algorithms that need only O(n·k) distances never allocate n×n).
//!
//! The packed layout follows the `kmedoids` crate's `LowerTriangle`: no diagonal, entry
//! (i, j) with i > j at index i(i−1)/2 + j.

mod sparse_rows;
pub use sparse_rows::{check_sparse_metric, cross_distances, SparseRows};

use crate::data::validate::{check_dissimilarity_matrix, check_metric_magnitude, check_points, SYMMETRY_TOL};
use crate::data::CsrView;
use crate::error::{Error, Result};
use crate::metric::{Metric, MetricKind};
use crate::scalar::Scalar;
use ndarray::{Array2, ArrayView2, ArrayViewMut2, CowArray, Ix2};
use num_traits::{ToPrimitive, Zero};
use rayon::prelude::*;
use std::fmt::Debug;

/// Values a dissimilarity can hold: floats or integers.
pub trait DissimValue: Copy + PartialOrd + Zero + ToPrimitive + Send + Sync + Debug + 'static {}
impl<T: Copy + PartialOrd + Zero + ToPrimitive + Send + Sync + Debug + 'static> DissimValue for T {}

/// A symmetric dissimilarity over `len()` objects with zero self-dissimilarity.
pub trait Dissimilarity: Sync {
    /// The element type.
    type Value: DissimValue;
    /// Number of objects.
    fn len(&self) -> usize;
    /// Dissimilarity between objects `i` and `j` (both `< len()`).
    fn get(&self, i: usize, j: usize) -> Self::Value;
    /// True when there are no objects.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Row `i` as a slice, where the storage holds it contiguously (dense matrices), so hot
    /// loops can scan it without per-element indexing.
    fn row(&self, _i: usize) -> Option<&[Self::Value]> {
        None
    }
}

/// Calls `f(j, d(i, j))` for every j in order, through [`Dissimilarity::row`] when available.
#[inline]
pub fn for_each_in_row<D: Dissimilarity>(d: &D, i: usize, mut f: impl FnMut(usize, D::Value)) {
    match d.row(i) {
        Some(row) => row.iter().enumerate().for_each(|(j, &v)| f(j, v)),
        None => (0..d.len()).for_each(|j| f(j, d.get(i, j))),
    }
}

/// A dense square dissimilarity matrix, borrowed or owned.
#[derive(Clone, Debug)]
pub struct DenseMatrix<'a, T> {
    m: CowArray<'a, T, Ix2>,
}

impl<'a, T: DissimValue> DenseMatrix<'a, T> {
    /// Wraps a matrix after checking it is square, finite, non-negative and symmetric within
    /// [`SYMMETRY_TOL`].
    pub fn new(m: impl Into<CowArray<'a, T, Ix2>>) -> Result<Self> {
        let m = m.into();
        check_dissimilarity_matrix(m.view(), SYMMETRY_TOL)?;
        Ok(DenseMatrix { m })
    }

    /// The matrix.
    pub fn view(&self) -> ArrayView2<'_, T> {
        self.m.view()
    }
}

impl<F: Scalar> DenseMatrix<'static, F> {
    /// The full matrix of `points`, its lower triangle written by `fill` (into a zeroed n × n
    /// matrix), after checking the points and that the matrix fits in
    /// [`crate::memory::max_memory`]. What [`DenseMatrix::from_points`] (beside the backends,
    /// which compute it) builds on.
    pub(crate) fn from_points_filled<M: Metric>(
        points: ArrayView2<F>,
        metric: &M,
        fill: impl FnOnce(ArrayViewMut2<F>) -> Result<()>,
    ) -> Result<Self> {
        check_points(points)?;
        check_metric_magnitude(points, metric)?;
        let n = points.nrows();
        check_matrix_memory::<F>(n)?;
        let mut m = Array2::<F>::zeros((n, n));
        fill(m.view_mut())?;
        // Exactly symmetric with a zero diagonal: the GEMM forms may differ in the last bit
        // between d(i, j) and d(j, i), and exact ties matter to the medoid methods.
        symmetrize_from_lower(m.as_slice_mut().expect("a new array is standard"), n);
        Ok(DenseMatrix { m: m.into() })
    }
}

impl<F: Scalar> DenseMatrix<'static, F> {
    /// The full matrix of the distances between sparse rows, after checking their range for
    /// the metric and that the matrix fits in [`crate::memory::max_memory`]: Euclidean,
    /// squared Euclidean and cosine from dot products and norms (scikit-learn's formulas on
    /// sparse rows; an all-zero row is at cosine distance 1 as between dense rows), Manhattan by merging the two
    /// rows. Each row is scattered once into a dense buffer and dotted with the rows before it.
    pub fn from_sparse_rows(x: CsrView<F>, metric: MetricKind) -> Result<Self> {
        use crate::data::validate::{check_extents, Arithmetic};
        let (n, d) = (x.nrows(), x.ncols());
        sparse_rows::check_sparse_metric(metric)?;
        check_extents::<F>(
            &x.column_extents(),
            n,
            Arithmetic::of_metric(Some(metric)),
            "the distance matrix",
        )?;
        let sq_norms = x.row_sq_norms();
        check_matrix_memory::<F>(n)?;
        let mut m = Array2::<F>::zeros((n, n));
        m.axis_iter_mut(ndarray::Axis(0))
            .into_par_iter()
            .enumerate()
            .for_each_init(
                || vec![0.0f64; d],
                |dense, (i, mut out)| {
                    let (ai, av) = x.row(i);
                    for (&c, v) in ai.iter().zip(av) {
                        dense[c as usize] = v.to_f64_exact();
                    }
                    for (j, o) in out.iter_mut().enumerate().take(i) {
                        let (bi, bv) = x.row(j);
                        let v = match metric {
                            MetricKind::Manhattan => x.manhattan(i, j),
                            _ => {
                                let dot: f64 = bi
                                    .iter()
                                    .zip(bv)
                                    .map(|(&c, v)| dense[c as usize] * v.to_f64_exact())
                                    .sum();
                                crate::metric::distance_from_dot(metric, sq_norms[i], sq_norms[j], dot)
                            }
                        };
                        *o = F::from_f64_lossy(v);
                    }
                    for &c in ai {
                        dense[c as usize] = 0.0;
                    }
                },
            );
        symmetrize_from_lower(m.as_slice_mut().expect("a new array is standard"), n);
        Ok(DenseMatrix { m: m.into() })
    }
}

/// An n × n matrix of `F` against the memory limit.
fn check_matrix_memory<F: Scalar>(n: usize) -> Result<()> {
    crate::memory::check(
        || format!("a {n} x {n} {} distance matrix", F::DTYPE),
        crate::memory::product(&[n, n, std::mem::size_of::<F>()]),
        crate::error::hints::DISTANCE_MATRIX,
    )
}

/// Copies the lower triangle of the n × n row-major `m` onto the upper one and zeroes the
/// diagonal. Blocks of rows in parallel: each writes the upper part of its own rows, column
/// by column, reading the lower triangle below in short contiguous runs (one cache line
/// serves a whole block), instead of a strided pass over n² values.
fn symmetrize_from_lower<F: Copy + Zero + Send + Sync>(m: &mut [F], n: usize) {
    const ROWS: usize = 64;
    assert_eq!(m.len(), n * n, "n × n matrix");
    /// The matrix, shared by the tasks below.
    struct Shared<F>(*mut F);
    // SAFETY: the tasks write disjoint elements and read only elements nobody writes (below).
    unsafe impl<F> Sync for Shared<F> {}
    let shared = Shared(m.as_mut_ptr());
    let shared = &shared;
    (0..n.div_ceil(ROWS)).into_par_iter().for_each(|b| {
        let rows = b * ROWS..((b + 1) * ROWS).min(n);
        for j in rows.start..n {
            for i in rows.start..rows.end.min(j) {
                // SAFETY: i < j < n, so both indices are in bounds; m[i][j] (upper triangle,
                // row i of this block) is written by this task alone, and m[j][i] (lower
                // triangle) is written by no task.
                unsafe { *shared.0.add(i * n + j) = *shared.0.add(j * n + i) };
            }
        }
        for i in rows {
            // SAFETY: the diagonal of this block's rows, written by this task alone.
            unsafe { *shared.0.add(i * n + i) = F::zero() };
        }
    });
}

impl<T: DissimValue> Dissimilarity for DenseMatrix<'_, T> {
    type Value = T;
    fn len(&self) -> usize {
        self.m.nrows()
    }
    #[inline]
    fn get(&self, i: usize, j: usize) -> T {
        self.m[[i, j]]
    }
    #[inline]
    fn row(&self, i: usize) -> Option<&[T]> {
        let n = self.m.nrows();
        self.m.as_slice().map(|s| &s[i * n..(i + 1) * n])
    }
}

/// A packed lower triangle without diagonal: n(n−1)/2 values.
#[derive(Clone, Debug, PartialEq)]
pub struct LowerTriangle<T> {
    n: usize,
    data: Vec<T>,
}

impl<T: DissimValue> LowerTriangle<T> {
    /// Wraps packed values (row i holds d(i, 0..i)), checking the length, finiteness and signs.
    pub fn new(n: usize, data: Vec<T>) -> Result<Self> {
        let expected = n * n.saturating_sub(1) / 2;
        if data.len() != expected {
            return Err(Error::ShapeMismatch {
                what: format!("packed lower triangle of {n} objects"),
                expected: expected.to_string(),
                got: data.len().to_string(),
            });
        }
        for i in 1..n {
            for j in 0..i {
                let v = data[i * (i - 1) / 2 + j].to_f64().unwrap_or(f64::NAN);
                if !v.is_finite() {
                    return Err(Error::NonFinite {
                        what: "dissimilarity matrix",
                        row: i,
                        col: j,
                        value: v,
                    });
                }
                if v < 0.0 {
                    return Err(Error::NegativeDissimilarity { i, j, value: v });
                }
            }
        }
        Ok(LowerTriangle { n, data })
    }

    /// Packs a dense matrix (checked as [`DenseMatrix::new`] does).
    pub fn from_dense(m: ArrayView2<T>) -> Result<Self> {
        check_dissimilarity_matrix(m, SYMMETRY_TOL)?;
        let n = m.nrows();
        let data = (1..n).flat_map(|i| (0..i).map(move |j| m[[i, j]])).collect();
        Ok(LowerTriangle { n, data })
    }

    /// The packed values.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }
}

impl<T: DissimValue> Dissimilarity for LowerTriangle<T> {
    type Value = T;
    fn len(&self) -> usize {
        self.n
    }
    #[inline]
    fn get(&self, i: usize, j: usize) -> T {
        use std::cmp::Ordering::*;
        match i.cmp(&j) {
            Greater => self.data[i * (i - 1) / 2 + j],
            Less => self.data[j * (j - 1) / 2 + i],
            Equal => T::zero(),
        }
    }
}

/// Dissimilarities computed when asked, from points and a metric.
#[derive(Clone, Debug)]
pub struct OnTheFly<'a, F, M> {
    points: CowArray<'a, F, Ix2>,
    metric: M,
}

impl<'a, F: Scalar, M: Metric> OnTheFly<'a, F, M> {
    /// Checks the points (finite, non-empty, a dimension the metric accepts) and wraps them.
    pub fn new(points: ArrayView2<'a, F>, metric: M) -> Result<Self> {
        check_points(points)?;
        metric.check_dim(points.ncols())?;
        check_metric_magnitude(points, &metric)?;
        // Rows must be contiguous slices for the metric; copy only a non-standard layout.
        Ok(OnTheFly {
            points: crate::data::standard_layout(points),
            metric,
        })
    }

    /// The points.
    pub fn points(&self) -> ArrayView2<'_, F> {
        self.points.view()
    }

    /// The metric.
    pub fn metric(&self) -> &M {
        &self.metric
    }
}

impl<F: Scalar, M: Metric> Dissimilarity for OnTheFly<'_, F, M> {
    type Value = F;
    fn len(&self) -> usize {
        self.points.nrows()
    }
    #[inline]
    fn get(&self, i: usize, j: usize) -> F {
        if i == j {
            return F::zero();
        }
        let (a, b) = (self.points.row(i), self.points.row(j));
        self.metric.distance(
            a.as_slice().expect("standard layout"),
            b.as_slice().expect("standard layout"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::MetricKind;
    use ndarray::array;

    /// The blocked parallel symmetrisation equals the element-by-element one (sizes around
    /// the block of 64 rows).
    #[test]
    fn symmetrize_from_lower_equals_the_plain_loop() {
        for n in [0, 1, 2, 63, 64, 65, 130, 200] {
            let m: Vec<u32> = (0..n * n).map(|v| v as u32 * 7 + 1).collect();
            let mut expected = m.clone();
            for i in 0..n {
                expected[i * n + i] = 0;
                for j in 0..i {
                    expected[j * n + i] = expected[i * n + j];
                }
            }
            let mut got = m;
            symmetrize_from_lower(&mut got, n);
            assert_eq!(got, expected, "n = {n}");
        }
    }

    #[test]
    fn three_forms_agree() {
        let x = array![[0.0f64, 0.0], [3.0, 4.0], [1.0, 1.0], [-2.0, 5.0]];
        let fill = |mut out: ArrayViewMut2<f64>| {
            for i in 0..4 {
                for j in 0..i {
                    let (a, b) = (x.row(i), x.row(j));
                    out[[i, j]] =
                        MetricKind::Euclidean.distance(a.as_slice().unwrap(), b.as_slice().unwrap());
                }
            }
            Ok(())
        };
        let dense = DenseMatrix::from_points_filled(x.view(), &MetricKind::Euclidean, fill).unwrap();
        let tri = LowerTriangle::from_dense(dense.view()).unwrap();
        let otf = OnTheFly::new(x.view(), MetricKind::Euclidean).unwrap();
        assert_eq!(tri.as_slice().len(), 6);
        for i in 0..4 {
            for j in 0..4 {
                let e = MetricKind::Euclidean
                    .distance(x.row(i).as_slice().unwrap(), x.row(j).as_slice().unwrap());
                assert!((dense.get(i, j) - e).abs() < 1e-12);
                assert!((tri.get(i, j) - e).abs() < 1e-12);
                assert!((otf.get(i, j) - e).abs() < 1e-12);
            }
        }
        assert_eq!(dense.get(0, 1), 5.0);
    }

    #[test]
    fn kmedoids_crate_packed_layout() {
        // The kmedoids crate's fixture: LowerTriangle{n:5, data:[1,2,3,4,5,6,7,8,9,1]}.
        let t = LowerTriangle::new(5, vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 1]).unwrap();
        assert_eq!(
            (
                t.get(1, 0),
                t.get(2, 0),
                t.get(2, 1),
                t.get(4, 3),
                t.get(3, 4),
                t.get(2, 2)
            ),
            (1, 2, 3, 1, 1, 0)
        );
        assert!(LowerTriangle::new(5, vec![1; 9]).is_err());
        assert!(matches!(
            LowerTriangle::new(2, vec![-1.0]),
            Err(Error::NegativeDissimilarity { i: 1, j: 0, .. })
        ));
    }
}
