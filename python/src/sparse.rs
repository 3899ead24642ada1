//! scipy's CSR matrices as clustr's sparse rows ([`clustr::data::CsrView`]), without a copy of
//! the values: the Python layer hands over `(data, indices, indptr, n_columns)` of a matrix in
//! canonical form (sorted, distinct indices). int32 indices are read in place; int64 ones are
//! narrowed to 32 bits (a copy of 4 bytes per value); the row offsets (one per row) are copied
//! to 64 bits. The checks of `CsrView::new` run on every matrix.

use crate::{arr1, arr2, run, to_py, Points};
use clustr::data::CsrView;
use clustr::kmeans::KMeansModel;
use clustr::{Error, Scalar};
use ndarray::Array2;
use numpy::{Element, PyReadonlyArray1};
use pyo3::prelude::*;
use std::borrow::Cow;

/// A CSR matrix's values, float64 or float32.
#[derive(FromPyObject)]
pub(crate) enum Values<'py> {
    F64(PyReadonlyArray1<'py, f64>),
    F32(PyReadonlyArray1<'py, f32>),
}

/// Column indices or row offsets, int32 or int64.
#[derive(FromPyObject)]
pub(crate) enum Ints<'py> {
    I32(PyReadonlyArray1<'py, i32>),
    I64(PyReadonlyArray1<'py, i64>),
}

/// `(data, indices, indptr, n_columns)` of a CSR matrix.
#[derive(FromPyObject)]
pub(crate) struct SparseRows<'py>(pub Values<'py>, Ints<'py>, Ints<'py>, usize);

fn negative(what: &str) -> PyErr {
    to_py(Error::MalformedSparse(format!("a negative {what}")))
}

impl SparseRows<'_> {
    /// The column indices as `u32`: int32 ones in place (after checking none is negative).
    pub(crate) fn indices(&self) -> PyResult<Cow<'_, [u32]>> {
        match &self.1 {
            Ints::I32(a) => {
                let s = a.as_slice()?;
                if s.iter().any(|&j| j < 0) {
                    return Err(negative("column index"));
                }
                // SAFETY: i32 and u32 have the same size and alignment, and every value is
                // non-negative, so each reads as the same number.
                Ok(Cow::Borrowed(unsafe {
                    std::slice::from_raw_parts(s.as_ptr().cast::<u32>(), s.len())
                }))
            }
            Ints::I64(a) => a
                .as_slice()?
                .iter()
                .map(|&j| {
                    u32::try_from(j).map_err(|_| {
                        to_py(Error::MalformedSparse(format!(
                            "column index {j} is not in 0..2^32"
                        )))
                    })
                })
                .collect::<PyResult<Vec<u32>>>()
                .map(Cow::Owned),
        }
    }

    /// The row offsets as `usize`.
    pub(crate) fn indptr(&self) -> PyResult<Vec<usize>> {
        let wide = |v: i64| usize::try_from(v).map_err(|_| negative("row offset"));
        match &self.2 {
            Ints::I32(a) => a.as_slice()?.iter().map(|&v| wide(v.into())).collect(),
            Ints::I64(a) => a.as_slice()?.iter().map(|&v| wide(v)).collect(),
        }
    }

    pub(crate) fn ncols(&self) -> usize {
        self.3
    }
}

/// Runs `$body` with `$v` bound to the sparse rows' checked view, whatever their element type.
#[macro_export]
macro_rules! with_sparse {
    ($x:expr, $v:ident => $body:expr) => {{
        let x = &$x;
        let (indices, indptr) = (x.indices()?, x.indptr()?);
        match &x.0 {
            $crate::sparse::Values::F64(a) => {
                let $v =
                    clustr::data::CsrView::new(x.ncols(), &indptr, &indices, a.as_slice()?).map_err(to_py)?;
                $body
            }
            $crate::sparse::Values::F32(a) => {
                let $v =
                    clustr::data::CsrView::new(x.ncols(), &indptr, &indices, a.as_slice()?).map_err(to_py)?;
                $body
            }
        }
    }};
}

/// The model of `centres` (k-means' prediction on sparse rows).
fn model<F: Scalar>(centres: Array2<F>) -> KMeansModel<F> {
    KMeansModel {
        centers: centres,
        labels: Vec::new(),
        inertia: 0.0,
        n_iter: 0,
        converged: true,
        algorithm: clustr::kmeans::Algorithm::Lloyd,
    }
}

/// `centres` in the element type of the rows (the Python layer gives the rows' dtype).
pub(crate) fn centres_as<F: Scalar>(c: &Points<'_>) -> Array2<F> {
    match c {
        Points::F64(a) => a.as_array().mapv(F::from_f64_lossy),
        Points::F32(a) => a.as_array().mapv(|v| F::from_f64_lossy(f64::from(v))),
    }
}

/// The nearest of `centres` for each sparse row (index, squared distance), as `nearest` for
/// dense points with the squared Euclidean metric.
#[pyfunction]
pub(crate) fn sparse_nearest<'py>(
    py: Python<'py>,
    x: SparseRows<'py>,
    centres: Points<'py>,
    n_threads: usize,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    fn go<'py, F: Scalar + Element>(
        py: Python<'py>,
        v: CsrView<'_, F>,
        centres: &Points<'py>,
        n_threads: usize,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let m = model(centres_as::<F>(centres));
        let near = run(py, n_threads, |_| m.nearest_sparse(v))?;
        let labels = near.iter().map(|n| n.index as i64).collect();
        let dist = near.iter().map(|n| n.distance).collect();
        Ok((arr1(py, labels), arr1::<F>(py, dist)))
    }
    with_sparse!(x, v => go(py, v, &centres, n_threads))
}

/// The Euclidean distance of each sparse row to each of `centres` (n × k), as `pairwise` for
/// dense points with the Euclidean metric.
#[pyfunction]
pub(crate) fn sparse_transform<'py>(
    py: Python<'py>,
    x: SparseRows<'py>,
    centres: Points<'py>,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    fn go<'py, F: Scalar + Element>(
        py: Python<'py>,
        v: CsrView<'_, F>,
        centres: &Points<'py>,
        n_threads: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let m = model(centres_as::<F>(centres));
        Ok(arr2(py, run(py, n_threads, |_| m.transform_sparse(v))?))
    }
    with_sparse!(x, v => go(py, v, &centres, n_threads))
}

/// The distance of each sparse row of `x` to each sparse row of `medoids` (n × k, float64)
/// under `metric` (euclidean, sqeuclidean, cosine, manhattan): a k-medoids prediction on
/// sparse rows, with the values of the fit's own distances.
#[pyfunction]
pub(crate) fn sparse_distances<'py>(
    py: Python<'py>,
    x: SparseRows<'py>,
    medoids: SparseRows<'py>,
    metric: &str,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let metric = crate::metric(metric)?;
    let (xi, xp) = (x.indices()?, x.indptr()?);
    let (mi, mp) = (medoids.indices()?, medoids.indptr()?);
    let d = match (&x.0, &medoids.0) {
        (Values::F64(a), Values::F64(b)) => {
            let (a, b) = (
                CsrView::new(x.ncols(), &xp, &xi, a.as_slice()?).map_err(to_py)?,
                CsrView::new(medoids.ncols(), &mp, &mi, b.as_slice()?).map_err(to_py)?,
            );
            run(py, n_threads, |_| clustr::dissim::cross_distances(a, b, metric))?
        }
        (Values::F32(a), Values::F32(b)) => {
            let (a, b) = (
                CsrView::new(x.ncols(), &xp, &xi, a.as_slice()?).map_err(to_py)?,
                CsrView::new(medoids.ncols(), &mp, &mi, b.as_slice()?).map_err(to_py)?,
            );
            run(py, n_threads, |_| clustr::dissim::cross_distances(a, b, metric))?
        }
        _ => {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "the rows and the medoids have different dtypes",
            ))
        }
    };
    Ok(arr2(py, d))
}
