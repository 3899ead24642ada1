//! Sparse rows: compressed sparse row (CSR) matrices, scipy's `csr_matrix` layout — for each
//! row the column indices of its stored values, sorted and distinct, and the values; every
//! other entry is zero. A 100,000-document × 50,000-term TF-IDF matrix with 100 terms per
//! document is 120 MB this way and 40 GB dense.
//!
//! [`CsrView`] borrows the three arrays (Python hands scipy's over without a copy), [`Csr`]
//! owns them (the file readers build one). Row offsets are `usize`, column indices `u32`:
//! scipy's int32 indices are used in place, and 4 bytes per stored value is what a matrix of
//! up to 2³² columns needs. (Neither faer's sparse type, which takes one index type for
//! offsets and indices, nor a new dependency such as sprs would hold scipy's int32 indices
//! beside 64-bit offsets; the kernels read the raw slices either way.)
//!
//! A matrix is checked once, when made ([`crate::data::validate::check_csr`]): offsets start at
//! 0 and never decrease, indices are in range, strictly increasing within a row, and every value
//! is finite. Nothing here densifies a matrix except [`CsrView::to_dense`], which the callers
//! size first.

use crate::data::validate::check_csr;
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use ndarray::Array2;
use rayon::prelude::*;

/// A CSR matrix that owns its arrays.
#[derive(Clone, Debug, PartialEq)]
pub struct Csr<F> {
    ncols: usize,
    indptr: Vec<usize>,
    indices: Vec<u32>,
    data: Vec<F>,
}

/// A CSR matrix over borrowed arrays: row i holds `data[indptr[i]..indptr[i + 1]]` at columns
/// `indices[indptr[i]..indptr[i + 1]]`.
#[derive(Clone, Copy, Debug)]
pub struct CsrView<'a, F> {
    ncols: usize,
    indptr: &'a [usize],
    indices: &'a [u32],
    data: &'a [F],
}

impl<F: Scalar> Csr<F> {
    /// A checked matrix of `ncols` columns from its arrays (see [`CsrView::new`]).
    pub fn new(ncols: usize, indptr: Vec<usize>, indices: Vec<u32>, data: Vec<F>) -> Result<Self> {
        check_csr(ncols, &indptr, &indices, &data)?;
        Ok(Csr {
            ncols,
            indptr,
            indices,
            data,
        })
    }

    /// The matrix of the given (row, column, value) entries, in any order; entries at the same
    /// place are summed (as scipy's `coo_matrix.tocsr()`), explicit zeros kept.
    pub fn from_triplets(
        nrows: usize,
        ncols: usize,
        rows: &[usize],
        cols: &[usize],
        vals: &[F],
    ) -> Result<Self> {
        if rows.len() != cols.len() || rows.len() != vals.len() {
            return Err(Error::ShapeMismatch {
                what: "sparse entries (rows, columns, values)".into(),
                expected: format!("{} of each", vals.len()),
                got: format!("{} rows and {} columns", rows.len(), cols.len()),
            });
        }
        if let Some(t) = (0..rows.len()).find(|&t| rows[t] >= nrows || cols[t] >= ncols) {
            return Err(Error::ShapeMismatch {
                what: format!("sparse entry {t}"),
                expected: format!("a place within {nrows} x {ncols}"),
                got: format!("row {}, column {}", rows[t], cols[t]),
            });
        }
        check_index_width(ncols)?;
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.sort_unstable_by_key(|&t| (rows[t], cols[t], t));
        let mut indptr = vec![0usize; nrows + 1];
        let (mut indices, mut data) = (Vec::with_capacity(order.len()), Vec::with_capacity(order.len()));
        let mut last: Option<(usize, usize)> = None;
        for t in order {
            let at = (rows[t], cols[t]);
            if last == Some(at) {
                *data.last_mut().expect("an entry before") += vals[t];
                continue;
            }
            last = Some(at);
            indptr[at.0 + 1] += 1;
            indices.push(at.1 as u32);
            data.push(vals[t]);
        }
        for i in 0..nrows {
            indptr[i + 1] += indptr[i];
        }
        Csr::new(ncols, indptr, indices, data)
    }

    /// The stored (non-zero) entries of a dense matrix.
    pub fn from_dense(x: ndarray::ArrayView2<F>) -> Result<Self> {
        check_index_width(x.ncols())?;
        let mut indptr = Vec::with_capacity(x.nrows() + 1);
        indptr.push(0);
        let (mut indices, mut data) = (Vec::new(), Vec::new());
        for row in x.rows() {
            for (j, &v) in row.iter().enumerate().filter(|(_, v)| **v != F::zero()) {
                indices.push(j as u32);
                data.push(v);
            }
            indptr.push(data.len());
        }
        Csr::new(x.ncols(), indptr, indices, data)
    }

    /// Replaces every stored value v of column j by `f(j, v)` (the structure is kept; the caller
    /// keeps values finite).
    pub fn map_values(&mut self, f: impl Fn(usize, F) -> F) {
        for (v, &j) in self.data.iter_mut().zip(&self.indices) {
            *v = f(j as usize, *v);
        }
    }

    /// The borrowed form.
    pub fn view(&self) -> CsrView<'_, F> {
        CsrView {
            ncols: self.ncols,
            indptr: &self.indptr,
            indices: &self.indices,
            data: &self.data,
        }
    }
}

/// Column indices are stored as `u32`.
fn check_index_width(ncols: usize) -> Result<()> {
    if ncols > u32::MAX as usize + 1 {
        return Err(Error::param(
            "sparse columns",
            ncols,
            "at most 2^32 columns (indices are stored in 32 bits)",
        ));
    }
    Ok(())
}

impl<'a, F: Scalar> CsrView<'a, F> {
    /// A checked view of `ncols` columns: `indptr` has one entry per row and one more, starting
    /// at 0, never decreasing, ending at the number of stored values; `indices` and `data` hold
    /// that many; every index is below `ncols` and the indices of a row strictly increase; every
    /// value is finite.
    pub fn new(ncols: usize, indptr: &'a [usize], indices: &'a [u32], data: &'a [F]) -> Result<Self> {
        check_index_width(ncols)?;
        check_csr(ncols, indptr, indices, data)?;
        Ok(CsrView {
            ncols,
            indptr,
            indices,
            data,
        })
    }

    /// Rows.
    pub fn nrows(&self) -> usize {
        self.indptr.len() - 1
    }

    /// Columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// Stored values.
    pub fn nnz(&self) -> usize {
        self.indptr[self.nrows()] - self.indptr[0]
    }

    /// Row `i`: the columns of its stored values, and the values.
    #[inline]
    pub fn row(&self, i: usize) -> (&'a [u32], &'a [F]) {
        let (a, b) = (self.indptr[i], self.indptr[i + 1]);
        (&self.indices[a..b], &self.data[a..b])
    }

    /// Rows `range` (the arrays shared).
    pub fn slice_rows(&self, range: std::ops::Range<usize>) -> CsrView<'a, F> {
        CsrView {
            ncols: self.ncols,
            indptr: &self.indptr[range.start..range.end + 1],
            indices: self.indices,
            data: self.data,
        }
    }

    /// The rows `rows` as an owned matrix, in that order.
    pub fn select_rows(&self, rows: &[usize]) -> Csr<F> {
        let mut indptr = Vec::with_capacity(rows.len() + 1);
        indptr.push(0);
        let (mut indices, mut data) = (Vec::new(), Vec::new());
        for &i in rows {
            let (idx, val) = self.row(i);
            indices.extend_from_slice(idx);
            data.extend_from_slice(val);
            indptr.push(data.len());
        }
        Csr {
            ncols: self.ncols,
            indptr,
            indices,
            data,
        }
    }

    /// Row `i` written into `out` (length `ncols`, zeroed by the caller).
    pub fn scatter_row(&self, i: usize, out: &mut [F]) {
        let (idx, val) = self.row(i);
        for (&j, &v) in idx.iter().zip(val) {
            out[j as usize] = v;
        }
    }

    /// The dense matrix (nrows × ncols): only where a method needs dense rows by nature, after
    /// its memory estimate.
    pub fn to_dense(&self) -> Array2<F> {
        let mut out = Array2::zeros((self.nrows(), self.ncols));
        for (i, mut row) in out.rows_mut().into_iter().enumerate() {
            self.scatter_row(i, row.as_slice_mut().expect("standard layout"));
        }
        out
    }

    /// Σⱼ xᵢⱼ² of every row, in f64 (in index order).
    pub fn row_sq_norms(&self) -> Vec<f64> {
        (0..self.nrows())
            .into_par_iter()
            .map(|i| self.row(i).1.iter().map(|v| v.to_f64_exact().powi(2)).sum())
            .collect()
    }

    /// Σⱼ |xᵢⱼ| of every row, in f64 (in index order).
    pub fn row_l1_norms(&self) -> Vec<f64> {
        (0..self.nrows())
            .into_par_iter()
            .map(|i| self.row(i).1.iter().map(|v| v.to_f64_exact().abs()).sum())
            .collect()
    }

    /// The Manhattan distance between rows `a` and `b` ([`manhattan_rows`]).
    pub fn manhattan(&self, a: usize, b: usize) -> f64 {
        manhattan_rows(self.row(a), self.row(b))
    }

    /// Smallest and largest value of each column, zeros included (where a column has a row
    /// without a stored value, or always, which only widens the extent by 0).
    pub fn column_extents(&self) -> Vec<(f64, f64)> {
        let mut e = vec![(0.0f64, 0.0f64); self.ncols];
        for (&j, v) in self.indices[self.indptr[0]..self.indptr[self.nrows()]]
            .iter()
            .zip(&self.data[self.indptr[0]..self.indptr[self.nrows()]])
        {
            let (v, e) = (v.to_f64_exact(), &mut e[j as usize]);
            *e = (e.0.min(v), e.1.max(v));
        }
        e
    }

    /// Bytes of the three arrays.
    pub fn bytes(&self) -> u64 {
        csr_bytes(self.nrows(), self.nnz(), size_of::<F>())
    }
}

/// Σ |aⱼ − bⱼ| of two sparse rows (indices, values) over the union of their columns, in column
/// order (scikit-learn's order on sparse rows), in f64.
pub fn manhattan_rows<F: Scalar>((ai, av): (&[u32], &[F]), (bi, bv): (&[u32], &[F])) -> f64 {
    let (mut p, mut q, mut sum) = (0, 0, 0.0f64);
    loop {
        sum += match (ai.get(p), bi.get(q)) {
            (None, None) => return sum,
            (Some(x), Some(y)) if x == y => {
                (p, q) = (p + 1, q + 1);
                (av[p - 1].to_f64_exact() - bv[q - 1].to_f64_exact()).abs()
            }
            (Some(x), Some(y)) if x < y => {
                p += 1;
                av[p - 1].to_f64_exact().abs()
            }
            (Some(_), None) => {
                p += 1;
                av[p - 1].to_f64_exact().abs()
            }
            _ => {
                q += 1;
                bv[q - 1].to_f64_exact().abs()
            }
        };
    }
}

/// Σ aⱼ·bⱼ of two sparse rows (indices, values) over their shared columns, in column order,
/// in f64 (the sum the scatter-and-dot of a row into a dense buffer gives).
pub fn dot_rows<F: Scalar>((ai, av): (&[u32], &[F]), (bi, bv): (&[u32], &[F])) -> f64 {
    let (mut p, mut q, mut sum) = (0, 0, 0.0f64);
    while p < ai.len() && q < bi.len() {
        match ai[p].cmp(&bi[q]) {
            std::cmp::Ordering::Less => p += 1,
            std::cmp::Ordering::Greater => q += 1,
            std::cmp::Ordering::Equal => {
                sum += av[p].to_f64_exact() * bv[q].to_f64_exact();
                (p, q) = (p + 1, q + 1);
            }
        }
    }
    sum
}

/// Bytes of a CSR matrix of `nrows` rows and `nnz` stored values of `elem` bytes each.
pub fn csr_bytes(nrows: usize, nnz: usize, elem: usize) -> u64 {
    crate::memory::product(&[nrows + 1, size_of::<usize>()])
        .saturating_add(crate::memory::product(&[nnz, size_of::<u32>() + elem]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn triplets_sum_duplicates_and_sort() {
        let m = Csr::<f64>::from_triplets(3, 4, &[2, 0, 2, 0], &[1, 3, 1, 0], &[1.0, 2.0, 5.0, 3.0]).unwrap();
        assert_eq!(
            m.view().to_dense(),
            array![[3.0, 0.0, 0.0, 2.0], [0.0; 4], [0.0, 6.0, 0.0, 0.0]]
        );
        assert_eq!(m.view().nnz(), 3);
        assert!(Csr::<f64>::from_triplets(2, 2, &[2], &[0], &[1.0]).is_err());
        assert!(Csr::<f64>::from_triplets(2, 2, &[0, 1], &[0], &[1.0]).is_err());
    }

    #[test]
    fn dense_round_trip_and_row_views() {
        let x = array![[0.0f32, 1.5, 0.0], [0.0, 0.0, 0.0], [-2.0, 0.0, 4.0]];
        let m = Csr::from_dense(x.view()).unwrap();
        let v = m.view();
        assert_eq!((v.nrows(), v.ncols(), v.nnz()), (3, 3, 3));
        assert_eq!(v.to_dense(), x);
        assert_eq!(v.row(2), (&[0u32, 2][..], &[-2.0f32, 4.0][..]));
        let tail = v.slice_rows(1..3);
        assert_eq!(tail.to_dense(), x.slice(ndarray::s![1..3, ..]));
        assert_eq!(
            v.select_rows(&[2, 0]).view().to_dense(),
            array![[-2.0f32, 0.0, 4.0], [0.0, 1.5, 0.0]]
        );
        assert_eq!(v.row_sq_norms(), vec![2.25, 0.0, 20.0]);
        assert_eq!(v.column_extents(), vec![(-2.0, 0.0), (0.0, 1.5), (0.0, 4.0)]);
        assert_eq!(v.bytes(), 4 * 8 + 3 * 8);
    }

    #[test]
    fn malformed_arrays_are_refused() {
        let ok = CsrView::<f64>::new(3, &[0, 1, 2], &[0, 2], &[1.0, 2.0]);
        assert!(ok.is_ok());
        let bad: [(&[usize], &[u32], &[f64]); 8] = [
            (&[0, 2, 1], &[0, 1], &[1.0, 2.0]),      // offsets decrease
            (&[1, 1, 2], &[0, 1], &[1.0, 2.0]),      // do not start at 0
            (&[0, 1, 3], &[0, 1], &[1.0, 2.0]),      // end past the values
            (&[0, 2, 2], &[1, 0], &[1.0, 2.0]),      // unsorted in a row
            (&[0, 2, 2], &[1, 1], &[1.0, 2.0]),      // duplicate
            (&[0, 1, 2], &[0, 3], &[1.0, 2.0]),      // index out of range
            (&[0, 1, 2], &[0, 1], &[1.0, f64::NAN]), // not finite
            (&[0, 1, 2], &[0, 1], &[1.0]),           // fewer values than indices
        ];
        for (indptr, indices, data) in bad {
            let e = CsrView::new(3, indptr, indices, data).unwrap_err();
            assert!(
                matches!(e, Error::MalformedSparse(_) | Error::NonFinite { .. }),
                "{e}"
            );
        }
        assert!(CsrView::<f64>::new(3, &[], &[], &[]).is_err());
    }
}
