//! The rows k-means runs on: dense rows (`ArrayView2`, in standard layout) or sparse rows
//! ([`CsrView`], in `sparse.rs`). The seeding, Lloyd's iteration and Elkan's and Hamerly's
//! bounds are written once over [`Points`]; what differs between the two forms is here: the
//! assignment with the update's sums, a row's distance to one centre, and the nearest two
//! centres of some rows.

use super::lloyd::Totals;
use crate::backend::{AnyBackend, Backend, CpuBackend, Distances, Nearest, NearestTwo};
use crate::comm::{fetch_rows, Communicator, Partition};
use crate::data::{Csr, CsrView};
use crate::error::Result;
use crate::metric::MetricKind;
use crate::scalar::Scalar;
use ndarray::{Array2, ArrayView2, Axis};

/// Rows k-means can run on.
pub(crate) trait Points<F: Scalar>: Copy + Send + Sync {
    /// The owned form of some of these rows (a sample or a batch).
    type Owned: OwnedPoints<F>;
    /// Rows held here.
    fn nrows(&self) -> usize;
    /// Columns.
    fn ncols(&self) -> usize;
    /// Lloyd's assignment to `centers` and the sums of its update in one pass.
    fn assign_and_sum(
        &self,
        w: Option<&[f64]>,
        backend: &AnyBackend,
        centers: &Array2<F>,
        distances: Distances,
    ) -> Result<Totals>;
    /// The sums of the update for given labels.
    fn cluster_sums(&self, w: Option<&[f64]>, labels: &[usize], k: usize) -> Totals;
    /// The squared Euclidean distance of row `i` to `c` (whose Σc² is `c_norm`), in f64, as a
    /// function with what it reads prepared once (the bounds call it per point and centre).
    fn sq_dist(&self) -> impl Fn(usize, &[F], f64) -> f64 + Sync + '_;
    /// The squared distances of rows `first..first + out.len()` to `c` into `out` (what the
    /// seeding needs: exact, and for dense rows with the bits of [`Points::sq_dist`]'s).
    fn sq_distances(&self, first: usize, c: &[F], c_norm: f64, scratch: &mut Vec<F>, out: &mut [f64]);
    /// `out += scale · row i`.
    fn add_row(&self, i: usize, scale: f64, out: &mut [f64]);
    /// The nearest two centres (Euclidean) of rows `rows` (all rows when `None`).
    fn nearest_two(&self, rows: Option<&[usize]>, centers: &Array2<F>) -> Result<Vec<NearestTwo<F>>>;
    /// Rows `idx` (global indices over the processes of `comm`) as dense rows, in that order.
    fn fetch(&self, part: Partition, idx: &[usize], comm: &dyn Communicator) -> Array2<F>;
    /// Rows `idx` of this process, in that order, in the rows' own form.
    fn subset(&self, idx: &[usize]) -> Self::Owned;
    /// Row `i` written into `out` (all `ncols` values).
    fn copy_row(&self, i: usize, out: &mut [F]);
    /// Each row's nearest centre (squared Euclidean) and its exact squared distance.
    fn nearest(&self, backend: &AnyBackend, centers: &Array2<F>) -> Result<Vec<Nearest<F>>>;
}

/// Rows held in memory, viewed as [`Points`]: a dense matrix or a sparse one.
pub(crate) trait OwnedPoints<F: Scalar> {
    /// The view.
    type View<'a>: Points<F>
    where
        Self: 'a;
    /// The rows as [`Points`].
    fn points(&self) -> Self::View<'_>;
}

impl<F: Scalar> OwnedPoints<F> for Array2<F> {
    type View<'a> = ArrayView2<'a, F>;
    fn points(&self) -> ArrayView2<'_, F> {
        self.view()
    }
}

impl<F: Scalar> OwnedPoints<F> for Csr<F> {
    type View<'a> = CsrView<'a, F>;
    fn points(&self) -> CsrView<'_, F> {
        self.view()
    }
}

/// Σc² of each centre in f64 (the norms [`Points::sq_dist`] takes).
pub(super) fn centre_norms<F: Scalar>(centers: &Array2<F>) -> Vec<f64> {
    centers
        .rows()
        .into_iter()
        .map(|c| c.iter().map(|v| v.to_f64_exact().powi(2)).sum())
        .collect()
}

impl<'a, F: Scalar> Points<F> for ArrayView2<'a, F> {
    type Owned = Array2<F>;
    fn nrows(&self) -> usize {
        ArrayView2::nrows(self)
    }
    fn ncols(&self) -> usize {
        ArrayView2::ncols(self)
    }
    fn assign_and_sum(
        &self,
        w: Option<&[f64]>,
        backend: &AnyBackend,
        centers: &Array2<F>,
        distances: Distances,
    ) -> Result<Totals> {
        super::lloyd::dense_assign_and_sum(*self, w, backend, centers, distances)
    }
    fn cluster_sums(&self, w: Option<&[f64]>, labels: &[usize], k: usize) -> Totals {
        super::lloyd::dense_cluster_sums(*self, w, labels, k)
    }
    fn sq_dist(&self) -> impl Fn(usize, &[F], f64) -> f64 + Sync + '_ {
        let d = ArrayView2::ncols(self);
        let xs = self.as_slice().expect("standard layout");
        move |i, c, _| F::sqeuclidean(&xs[i * d..(i + 1) * d], c).to_f64_exact()
    }
    fn sq_distances(&self, first: usize, c: &[F], _c_norm: f64, scratch: &mut Vec<F>, out: &mut [f64]) {
        let d = ArrayView2::ncols(self);
        let xs = self.as_slice().expect("standard layout");
        scratch.resize(out.len(), F::zero());
        super::init::distances_to(&xs[first * d..(first + out.len()) * d], c, scratch, out);
    }
    fn add_row(&self, i: usize, scale: f64, out: &mut [f64]) {
        out.iter_mut()
            .zip(self.row(i))
            .for_each(|(o, v)| *o += scale * v.to_f64_exact());
    }
    fn nearest_two(&self, rows: Option<&[usize]>, centers: &Array2<F>) -> Result<Vec<NearestTwo<F>>> {
        let cpu = CpuBackend::default();
        match rows {
            None => cpu.nearest_two(*self, centers.view(), &MetricKind::Euclidean),
            Some(rows) => cpu.nearest_two(
                self.select(Axis(0), rows).view(),
                centers.view(),
                &MetricKind::Euclidean,
            ),
        }
    }
    fn fetch(&self, part: Partition, idx: &[usize], comm: &dyn Communicator) -> Array2<F> {
        fetch_rows(*self, part, idx, comm)
    }
    fn subset(&self, idx: &[usize]) -> Array2<F> {
        self.select(Axis(0), idx)
    }
    fn copy_row(&self, i: usize, out: &mut [F]) {
        out.iter_mut().zip(self.row(i)).for_each(|(o, &v)| *o = v);
    }
    fn nearest(&self, backend: &AnyBackend, centers: &Array2<F>) -> Result<Vec<Nearest<F>>> {
        backend.nearest(*self, centers.view(), &MetricKind::SqEuclidean)
    }
}

/// Sparse rows: see `sparse.rs`; the trait's methods forward there.
impl<'a, F: Scalar> Points<F> for CsrView<'a, F> {
    type Owned = Csr<F>;
    fn nrows(&self) -> usize {
        CsrView::nrows(self)
    }
    fn ncols(&self) -> usize {
        CsrView::ncols(self)
    }
    fn assign_and_sum(
        &self,
        w: Option<&[f64]>,
        _backend: &AnyBackend,
        centers: &Array2<F>,
        distances: Distances,
    ) -> Result<Totals> {
        Ok(super::sparse::assign_and_sum(*self, w, centers, distances))
    }
    fn cluster_sums(&self, w: Option<&[f64]>, labels: &[usize], k: usize) -> Totals {
        super::sparse::cluster_sums(*self, w, labels, k)
    }
    fn sq_dist(&self) -> impl Fn(usize, &[F], f64) -> f64 + Sync + '_ {
        move |i, c, c_norm| super::sparse::sq_dist(self.row(i), c, c_norm)
    }
    fn sq_distances(&self, first: usize, c: &[F], c_norm: f64, _scratch: &mut Vec<F>, out: &mut [f64]) {
        for (t, o) in out.iter_mut().enumerate() {
            *o = super::sparse::sq_dist(self.row(first + t), c, c_norm);
        }
    }
    fn add_row(&self, i: usize, scale: f64, out: &mut [f64]) {
        let (idx, val) = self.row(i);
        for (&j, v) in idx.iter().zip(val) {
            out[j as usize] += scale * v.to_f64_exact();
        }
    }
    fn nearest_two(&self, rows: Option<&[usize]>, centers: &Array2<F>) -> Result<Vec<NearestTwo<F>>> {
        Ok(super::sparse::nearest_two(*self, rows, centers))
    }
    fn fetch(&self, _part: Partition, idx: &[usize], _comm: &dyn Communicator) -> Array2<F> {
        // (sparse rows are fitted on one process)
        let mut out = Array2::zeros((idx.len(), CsrView::ncols(self)));
        for (&i, mut row) in idx.iter().zip(out.rows_mut()) {
            self.scatter_row(i, row.as_slice_mut().expect("standard layout"));
        }
        out
    }
    fn subset(&self, idx: &[usize]) -> Csr<F> {
        self.select_rows(idx)
    }
    fn copy_row(&self, i: usize, out: &mut [F]) {
        out.fill(F::zero());
        self.scatter_row(i, out);
    }
    fn nearest(&self, _backend: &AnyBackend, centers: &Array2<F>) -> Result<Vec<Nearest<F>>> {
        Ok(super::sparse::nearest(*self, centers, Distances::Exact))
    }
}
