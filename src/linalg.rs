//! The one door to dense linear algebra (faer, through faer-ext's ndarray bridge).
//!
//! faer is pure Rust: a fresh machine builds it with cargo alone, with no system BLAS or
//! Fortran. faer and faer-ext are pinned together in Cargo.toml; nothing outside this module
//! names faer, so a change of engine touches one file.

use crate::scalar::{Gemm, Scalar};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch, LltRegularization};
use faer::linalg::matmul::matmul;
use faer::linalg::triangular_inverse::invert_lower_triangular;
use faer::{Accum, Par};
use faer_ext::IntoFaer;
use ndarray::{Array2, ArrayView2, ArrayViewMut2};

/// `out ← alpha · a · bᵀ`, single-threaded (callers parallelise over row blocks, so results do
/// not depend on the thread count).
pub fn gemm_abt<F: Scalar>(a: ArrayView2<F>, b: ArrayView2<F>, out: ArrayViewMut2<F>, alpha: F) {
    <F as Gemm>::gemm_abt(a, b, out, alpha)
}

impl Gemm for f32 {
    fn gemm_abt(a: ArrayView2<Self>, b: ArrayView2<Self>, out: ArrayViewMut2<Self>, alpha: Self) {
        faer_gemm_abt(a, b, out, alpha)
    }
}

impl Gemm for f64 {
    fn gemm_abt(a: ArrayView2<Self>, b: ArrayView2<Self>, out: ArrayViewMut2<Self>, alpha: Self) {
        faer_gemm_abt(a, b, out, alpha)
    }
}

/// [`gemm_abt`] in an element type of faer's; what the [`Gemm`] implementations call, so that
/// the public `Scalar` bound names no faer trait.
pub(crate) fn faer_gemm_abt<F: faer::traits::RealField + Copy>(
    a: ArrayView2<F>,
    b: ArrayView2<F>,
    out: ArrayViewMut2<F>,
    alpha: F,
) {
    debug_assert_eq!(a.ncols(), b.ncols());
    debug_assert_eq!(out.dim(), (a.nrows(), b.nrows()));
    matmul(
        out.into_faer(),
        Accum::Replace,
        a.into_faer(),
        b.t().into_faer(),
        alpha,
        Par::Seq,
    );
}

/// `out ← out + aᵀ · a` (a Gram matrix, for scatter and covariance sums), single-threaded.
pub fn gram_add(a: ArrayView2<f64>, mut out: ArrayViewMut2<f64>) {
    debug_assert_eq!(out.dim(), (a.ncols(), a.ncols()));
    matmul(
        out.view_mut().into_faer(),
        Accum::Add,
        a.t().into_faer(),
        a.into_faer(),
        1.0,
        Par::Seq,
    );
}

/// The lower Cholesky factor `L` (`L·Lᵀ = a`) of a symmetric matrix, read from its lower
/// triangle; `None` when `a` is not positive definite. Single-threaded, so deterministic.
pub fn cholesky_lower(a: ArrayView2<f64>) -> Option<Array2<f64>> {
    let d = a.nrows();
    debug_assert_eq!(d, a.ncols());
    let mut l = a.as_standard_layout().into_owned();
    let params = Default::default();
    let mut buf = MemBuffer::new(cholesky_in_place_scratch::<f64>(d, Par::Seq, params));
    cholesky_in_place(
        l.view_mut().into_faer(),
        LltRegularization::default(),
        Par::Seq,
        MemStack::new(&mut buf),
        params,
    )
    .ok()?;
    for i in 0..d {
        for j in i + 1..d {
            l[[i, j]] = 0.0;
        }
    }
    Some(l)
}

/// The inverse of a lower-triangular matrix (also lower triangular).
pub fn invert_lower(l: ArrayView2<f64>) -> Array2<f64> {
    let mut inv = Array2::<f64>::zeros(l.dim());
    invert_lower_triangular(inv.view_mut().into_faer(), l.into_faer(), Par::Seq);
    // faer writes only the lower triangle; the upper stays zero.
    inv
}

/// The column of each row's smallest entry (ties to the lowest column).
pub fn argmin_rows(a: &Array2<f64>) -> Vec<i64> {
    a.rows()
        .into_iter()
        .map(|r| (1..r.len()).fold(0, |b, j| if r[j] < r[b] { j } else { b }) as i64)
        .collect()
}

/// The column of each row's largest entry (ties to the lowest column).
pub fn argmax_rows(a: &Array2<f64>) -> Vec<i64> {
    a.rows()
        .into_iter()
        .map(|r| (1..r.len()).fold(0, |b, j| if r[j] > r[b] { j } else { b }) as i64)
        .collect()
}

/// ‖xᵢ‖² of every row (standard layout), in f64 from `F`'s dot product.
pub(crate) fn row_sq_norms<F: Scalar>(x: ArrayView2<F>) -> Vec<f64> {
    x.rows()
        .into_iter()
        .map(|r| {
            let r = r.to_slice().expect("standard layout");
            F::dot(r, r).to_f64_exact()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array2};

    #[test]
    fn gemm_abt_matches_definition() {
        let a = array![[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let b = array![[1.0f64, 0.0, -1.0], [2.0, 1.0, 0.0], [0.5, 0.5, 0.5]];
        let mut out = Array2::zeros((2, 3));
        gemm_abt(a.view(), b.view(), out.view_mut(), 2.0);
        let expected = 2.0 * a.dot(&b.t());
        assert_eq!(out, expected);
    }

    #[test]
    fn cholesky_and_triangular_inverse() {
        let a = array![[4.0, 2.0, 0.4], [2.0, 5.0, 1.0], [0.4, 1.0, 3.0]];
        let l = cholesky_lower(a.view()).unwrap();
        assert!(l[[0, 1]] == 0.0 && l[[0, 2]] == 0.0 && l[[1, 2]] == 0.0);
        let back = l.dot(&l.t());
        assert!((&back - &a).iter().all(|v| v.abs() < 1e-12));
        let inv = invert_lower(l.view());
        let eye = inv.dot(&l);
        assert!((&eye - &Array2::<f64>::eye(3)).iter().all(|v| v.abs() < 1e-12));
        assert!(cholesky_lower(array![[1.0, 2.0], [2.0, 1.0]].view()).is_none());
    }

    #[test]
    fn row_arg_extremes_break_ties_low() {
        let a = array![[3.0, 1.0, 1.0], [0.0, 2.0, 2.0]];
        assert_eq!(argmin_rows(&a), vec![1, 0]);
        assert_eq!(argmax_rows(&a), vec![0, 1]);
    }

    #[test]
    fn gram_add_accumulates() {
        let a = array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]];
        let mut out = Array2::<f64>::eye(2);
        gram_add(a.view(), out.view_mut());
        assert_eq!(out, a.t().dot(&a) + Array2::<f64>::eye(2));
    }
}
