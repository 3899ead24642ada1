//! The floating-point element types clustr computes in (f32 and f64).

pub mod simd;

use ndarray::{ArrayView2, ArrayViewMut2};
use std::fmt::{Debug, Display};

/// An element type of data and distance matrices: `f32` or `f64`.
///
/// Losses and other long sums are accumulated in `f64` whatever the element type.
pub trait Scalar:
    num_traits::Float
    + num_traits::NumAssign
    + num_traits::FromPrimitive
    + ndarray::ScalarOperand
    + Debug
    + Display
    + Default
    + Send
    + Sync
    + Gemm
    + 'static
{
    /// Name as in NumPy (`"float32"`, `"float64"`).
    const DTYPE: &'static str;
    /// Converts from f64 (rounding to nearest for f32).
    fn from_f64_lossy(v: f64) -> Self;
    /// Converts to f64 exactly.
    fn to_f64_exact(self) -> f64;
    /// The SIMD kernels for this type (best instruction set of this machine).
    fn simd_table() -> &'static simd::SimdTable<Self>;
    /// Σ(aᵢ − bᵢ)² with the SIMD kernel.
    fn sqeuclidean(a: &[Self], b: &[Self]) -> Self;
    /// Σ aᵢbᵢ with the SIMD kernel.
    fn dot(a: &[Self], b: &[Self]) -> Self;
    /// Σ|aᵢ − bᵢ| with the SIMD kernel.
    fn manhattan(a: &[Self], b: &[Self]) -> Self;
}

/// The linear-algebra engine's product `out ← alpha · a · bᵀ` for an element type; implemented
/// beside the engine (`linalg`), so this lowest layer names no engine. Call
/// `linalg::gemm_abt`.
#[doc(hidden)]
pub trait Gemm: Sized {
    /// `out ← alpha · a · bᵀ`.
    fn gemm_abt(a: ArrayView2<Self>, b: ArrayView2<Self>, out: ArrayViewMut2<Self>, alpha: Self);
}

impl Scalar for f32 {
    const DTYPE: &'static str = "float32";
    #[inline(always)]
    fn from_f64_lossy(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn to_f64_exact(self) -> f64 {
        self as f64
    }
    fn simd_table() -> &'static simd::SimdTable<Self> {
        simd::f32_table()
    }
    fn sqeuclidean(a: &[Self], b: &[Self]) -> Self {
        (simd::f32_table().sqeuclidean)(a, b)
    }
    fn dot(a: &[Self], b: &[Self]) -> Self {
        (simd::f32_table().dot)(a, b)
    }
    fn manhattan(a: &[Self], b: &[Self]) -> Self {
        (simd::f32_table().manhattan)(a, b)
    }
}

impl Scalar for f64 {
    const DTYPE: &'static str = "float64";
    #[inline(always)]
    fn from_f64_lossy(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn to_f64_exact(self) -> f64 {
        self
    }
    fn simd_table() -> &'static simd::SimdTable<Self> {
        simd::f64_table()
    }
    fn sqeuclidean(a: &[Self], b: &[Self]) -> Self {
        (simd::f64_table().sqeuclidean)(a, b)
    }
    fn dot(a: &[Self], b: &[Self]) -> Self {
        (simd::f64_table().dot)(a, b)
    }
    fn manhattan(a: &[Self], b: &[Self]) -> Self {
        (simd::f64_table().manhattan)(a, b)
    }
}

/// `v` in its shortest form that reads back exactly, with an exponent where a plain decimal
/// would be long (|v| ≥ 1e15 or below 1e-4): `0.25`, `1e-300`, `8.46e307`, never 300 digits.
pub fn readable(v: f64) -> String {
    if plain_range(v) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// `v` with `decimals` decimals, or in scientific notation with as many where a plain decimal
/// would be long (see [`readable`]).
pub fn readable_to(v: f64, decimals: usize) -> String {
    if plain_range(v) {
        format!("{v:.decimals$}")
    } else {
        format!("{v:.decimals$e}")
    }
}

fn plain_range(v: f64) -> bool {
    v == 0.0 || !v.is_finite() || (1e-4..1e15).contains(&v.abs())
}

#[cfg(test)]
mod readable_tests {
    use super::{readable, readable_to};

    #[test]
    fn numbers_are_short_and_read_back_exactly() {
        for (v, text) in [
            (0.25, "0.25"),
            (1e-300, "1e-300"),
            (8.46e307, "8.46e307"),
            (3.0, "3"),
            (0.0, "0"),
        ] {
            assert_eq!(readable(v), text);
            assert_eq!(readable(v).parse::<f64>().unwrap(), v);
        }
        assert_eq!(readable_to(8.46e307, 6), "8.460000e307");
        assert_eq!(readable_to(917.0655781, 6), "917.065578");
    }
}
