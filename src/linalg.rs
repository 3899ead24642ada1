//! The one door to dense linear algebra (faer, through faer-ext's ndarray bridge).
//!
//! faer is pure Rust: a fresh machine builds it with cargo alone, with no system BLAS or
//! Fortran. faer and faer-ext are pinned together in Cargo.toml; nothing outside this module
//! names faer, so a change of engine touches one file.

use faer::linalg::matmul::matmul;
use faer::{Accum, Par};
use faer_ext::IntoFaer;
use ndarray::{ArrayView2, ArrayViewMut2};

/// Element types faer computes with (f32 and f64).
pub trait LinalgScalar: faer::traits::RealField + Copy {}
impl LinalgScalar for f32 {}
impl LinalgScalar for f64 {}

/// `out ← alpha · a · bᵀ`, single-threaded (callers parallelise over row blocks, so results do
/// not depend on the thread count).
pub fn gemm_abt<F: LinalgScalar>(a: ArrayView2<F>, b: ArrayView2<F>, out: ArrayViewMut2<F>, alpha: F) {
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
}
