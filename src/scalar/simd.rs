//! SIMD inner loops of the CPU backend: squared Euclidean, dot product and L1 over two slices.
//!
//! The instruction set is chosen once at run time with `is_x86_feature_detected!`: AVX-512F,
//! then AVX2 + FMA, then a portable loop with independent accumulators that the compiler
//! vectorises for the baseline target. Builds never use `target-cpu=native`, so one binary
//! runs on any x86-64 machine. Summation order differs between instruction sets (results agree
//! to rounding), but on one machine every call uses the same kernel, so results do not depend
//! on the thread count.

use std::sync::OnceLock;

/// An instruction set a kernel table is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// Portable code (vectorised by the compiler for the baseline target).
    Portable,
    /// AVX2 with fused multiply-add.
    Avx2Fma,
    /// AVX-512 Foundation.
    Avx512,
}

impl Isa {
    /// Whether this machine can run kernels for this instruction set.
    pub fn available(self) -> bool {
        match self {
            Isa::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Fma => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => is_x86_feature_detected!("avx512f"),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The best instruction set of this machine, unless `CLUSTR_SIMD` names another
    /// (`portable`, `avx2`, `avx512`) — for benchmarks and tests.
    pub fn detect() -> Isa {
        let wanted = std::env::var("CLUSTR_SIMD").ok();
        let forced = match wanted.as_deref() {
            Some("portable") => Some(Isa::Portable),
            Some("avx2") => Some(Isa::Avx2Fma),
            Some("avx512") => Some(Isa::Avx512),
            _ => None,
        };
        if let Some(isa) = forced.filter(|i| i.available()) {
            return isa;
        }
        [Isa::Avx512, Isa::Avx2Fma]
            .into_iter()
            .find(|i| i.available())
            .unwrap_or(Isa::Portable)
    }
}

/// The signature of [`SimdTable::centre_rows`]: points, centre, centred points, norms.
pub type CentreRows<T> = fn(&[T], &[T], &mut [T], &mut [T]);

/// The three inner loops for one element type and instruction set.
#[derive(Clone, Copy)]
pub struct SimdTable<T> {
    /// Σ(aᵢ − bᵢ)².
    pub sqeuclidean: fn(&[T], &[T]) -> T,
    /// Σ aᵢbᵢ.
    pub dot: fn(&[T], &[T]) -> T,
    /// Σ|aᵢ − bᵢ|.
    pub manhattan: fn(&[T], &[T]) -> T,
    /// `sqeuclidean(a, y)` for each row `y` of the contiguous rows `ys` (len = `out.len() · a.len()`).
    pub sqeuclidean_rows: fn(&[T], &[T], &mut [T]),
    /// `dot(a, y)` for each row of `ys`.
    pub dot_rows: fn(&[T], &[T], &mut [T]),
    /// `manhattan(a, y)` for each row of `ys`.
    pub manhattan_rows: fn(&[T], &[T], &mut [T]),
    /// For each row `a` of the contiguous rows `xs`: its row of `out` ← `a − b` and its
    /// `norms` entry ← Σ(a − b)² (centring points and their squared norms in one pass;
    /// `norms.len()` rows).
    pub centre_rows: CentreRows<T>,
    /// The instruction set.
    pub isa: Isa,
}

macro_rules! portable {
    ($t:ty, $m:ident) => {
        mod $m {
            const L: usize = 16;

            #[inline(always)]
            fn term<const OP: u8>(x: $t, y: $t) -> $t {
                match OP {
                    0 => (x - y) * (x - y),
                    1 => x * y,
                    _ => (x - y).abs(),
                }
            }

            /// L independent accumulators, which the compiler keeps in vector registers.
            #[inline(always)]
            fn run<const OP: u8>(a: &[$t], b: &[$t]) -> $t {
                let mut acc = [0.0 as $t; L];
                let (ac, bc) = (a.chunks_exact(L), b.chunks_exact(L));
                let tail: $t = ac
                    .remainder()
                    .iter()
                    .zip(bc.remainder())
                    .map(|(&x, &y)| term::<OP>(x, y))
                    .sum();
                for (x, y) in ac.zip(bc) {
                    for i in 0..L {
                        acc[i] += term::<OP>(x[i], y[i]);
                    }
                }
                acc.iter().sum::<$t>() + tail
            }

            fn rows<const OP: u8>(a: &[$t], ys: &[$t], out: &mut [$t]) {
                out.iter_mut()
                    .zip(ys.chunks_exact(a.len().max(1)))
                    .for_each(|(o, y)| *o = run::<OP>(a, y));
            }

            pub fn sqeuclidean(a: &[$t], b: &[$t]) -> $t {
                run::<0>(a, b)
            }
            pub fn dot(a: &[$t], b: &[$t]) -> $t {
                run::<1>(a, b)
            }
            pub fn manhattan(a: &[$t], b: &[$t]) -> $t {
                run::<2>(a, b)
            }
            pub fn sqeuclidean_rows(a: &[$t], ys: &[$t], out: &mut [$t]) {
                rows::<0>(a, ys, out)
            }
            pub fn dot_rows(a: &[$t], ys: &[$t], out: &mut [$t]) {
                rows::<1>(a, ys, out)
            }
            pub fn manhattan_rows(a: &[$t], ys: &[$t], out: &mut [$t]) {
                rows::<2>(a, ys, out)
            }
            pub fn centre_rows(xs: &[$t], b: &[$t], out: &mut [$t], norms: &mut [$t]) {
                let d = b.len().max(1);
                for ((a, out), norm) in xs.chunks_exact(d).zip(out.chunks_exact_mut(d)).zip(norms) {
                    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
                        *o = x - y;
                    }
                    *norm = run::<1>(out, out);
                }
            }
        }
    };
}
portable!(f32, portable_f32);
portable!(f64, portable_f64);

/// One x86 kernel module: `$lanes` elements per vector, two vectors per step.
#[cfg(target_arch = "x86_64")]
macro_rules! x86 {
    ($m:ident, $feat:literal, $t:ty, $v:ty, $lanes:expr,
     $zero:ident, $load:ident, $store:ident, $sub:ident, $fmadd:ident, $add:ident, $abs:path, $hsum:path,
     $masked:path) => {
        mod $m {
            use std::arch::x86_64::*;
            const W: usize = $lanes;

            #[target_feature(enable = $feat)]
            unsafe fn run<const OP: u8>(a: &[$t], b: &[$t]) -> $t {
                let n = a.len().min(b.len());
                let (pa, pb) = (a.as_ptr(), b.as_ptr());
                let mut acc0: $v = $zero();
                let mut acc1: $v = $zero();
                let mut i = 0;
                // SAFETY: every full load reads W elements at offset i with i + W <= n; the
                // masked load reads only the n - i < W elements left.
                unsafe {
                    while i + 2 * W <= n {
                        let (x0, y0) = ($load(pa.add(i)), $load(pb.add(i)));
                        let (x1, y1) = ($load(pa.add(i + W)), $load(pb.add(i + W)));
                        match OP {
                            0 => {
                                let (d0, d1) = ($sub(x0, y0), $sub(x1, y1));
                                acc0 = $fmadd(d0, d0, acc0);
                                acc1 = $fmadd(d1, d1, acc1);
                            }
                            1 => {
                                acc0 = $fmadd(x0, y0, acc0);
                                acc1 = $fmadd(x1, y1, acc1);
                            }
                            _ => {
                                acc0 = $add(acc0, $abs($sub(x0, y0)));
                                acc1 = $add(acc1, $abs($sub(x1, y1)));
                            }
                        }
                        i += 2 * W;
                    }
                    // Then at most one full vector and one partial one; masked-off lanes read
                    // as zero, which adds nothing to any of the three sums.
                    while i < n {
                        let (x0, y0) = if i + W <= n {
                            ($load(pa.add(i)), $load(pb.add(i)))
                        } else {
                            ($masked(pa.add(i), n - i), $masked(pb.add(i), n - i))
                        };
                        match OP {
                            0 => {
                                let d0 = $sub(x0, y0);
                                acc0 = $fmadd(d0, d0, acc0);
                            }
                            1 => acc0 = $fmadd(x0, y0, acc0),
                            _ => acc0 = $add(acc0, $abs($sub(x0, y0))),
                        }
                        i += W;
                    }
                }
                $hsum($add(acc0, acc1))
            }

            /// One `a` against consecutive rows of `ys`: one indirect call per row block, the
            /// kernel inlined in the loop.
            #[target_feature(enable = $feat)]
            unsafe fn rows<const OP: u8>(a: &[$t], ys: &[$t], out: &mut [$t]) {
                for (o, y) in out.iter_mut().zip(ys.chunks_exact(a.len().max(1))) {
                    // SAFETY: same target features as this function.
                    *o = unsafe { run::<OP>(a, y) };
                }
            }

            /// `out ← a − b` and Σ outᵢ².
            #[target_feature(enable = $feat)]
            #[inline]
            unsafe fn centre_impl(a: &[$t], b: &[$t], out: &mut [$t]) -> $t {
                let n = a.len().min(b.len()).min(out.len());
                let (pa, pb, po) = (a.as_ptr(), b.as_ptr(), out.as_mut_ptr());
                let mut acc0: $v = $zero();
                let mut acc1: $v = $zero();
                let mut i = 0;
                // SAFETY: full vectors at i + W <= n; the tail is done one element at a time.
                unsafe {
                    while i + 2 * W <= n {
                        let d0 = $sub($load(pa.add(i)), $load(pb.add(i)));
                        let d1 = $sub($load(pa.add(i + W)), $load(pb.add(i + W)));
                        $store(po.add(i), d0);
                        $store(po.add(i + W), d1);
                        acc0 = $fmadd(d0, d0, acc0);
                        acc1 = $fmadd(d1, d1, acc1);
                        i += 2 * W;
                    }
                    let mut tail: $t = 0.0;
                    while i < n {
                        let d = *pa.add(i) - *pb.add(i);
                        *po.add(i) = d;
                        tail += d * d;
                        i += 1;
                    }
                    $hsum($add(acc0, acc1)) + tail
                }
            }

            /// [`centre_impl`] for each row, in one call.
            #[target_feature(enable = $feat)]
            unsafe fn centre_rows_impl(xs: &[$t], b: &[$t], out: &mut [$t], norms: &mut [$t]) {
                let d = b.len().max(1);
                for ((a, out), norm) in xs.chunks_exact(d).zip(out.chunks_exact_mut(d)).zip(norms) {
                    // SAFETY: same target features as this function.
                    *norm = unsafe { centre_impl(a, b, out) };
                }
            }

            // These wrappers are only stored in a kernel table after the feature was detected.
            pub fn centre_rows(xs: &[$t], b: &[$t], out: &mut [$t], norms: &mut [$t]) {
                unsafe { centre_rows_impl(xs, b, out, norms) }
            }
            pub fn sqeuclidean_rows(a: &[$t], ys: &[$t], out: &mut [$t]) {
                unsafe { rows::<0>(a, ys, out) }
            }
            pub fn dot_rows(a: &[$t], ys: &[$t], out: &mut [$t]) {
                unsafe { rows::<1>(a, ys, out) }
            }
            pub fn manhattan_rows(a: &[$t], ys: &[$t], out: &mut [$t]) {
                unsafe { rows::<2>(a, ys, out) }
            }
            pub fn sqeuclidean(a: &[$t], b: &[$t]) -> $t {
                unsafe { run::<0>(a, b) }
            }
            pub fn dot(a: &[$t], b: &[$t]) -> $t {
                unsafe { run::<1>(a, b) }
            }
            pub fn manhattan(a: &[$t], b: &[$t]) -> $t {
                unsafe { run::<2>(a, b) }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod x86_helpers {
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2")]
    pub fn abs256_ps(v: __m256) -> __m256 {
        _mm256_andnot_ps(_mm256_set1_ps(-0.0), v)
    }
    #[target_feature(enable = "avx2")]
    pub fn abs256_pd(v: __m256d) -> __m256d {
        _mm256_andnot_pd(_mm256_set1_pd(-0.0), v)
    }
    /// Loads the first `rem` (< 8) elements at `p`, zero elsewhere, touching only those.
    #[target_feature(enable = "avx2")]
    pub unsafe fn masked256_ps(p: *const f32, rem: usize) -> __m256 {
        let mask = _mm256_cmpgt_epi32(
            _mm256_set1_epi32(rem as i32),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        );
        // SAFETY: lanes at or past `rem` are masked off and not read.
        unsafe { _mm256_maskload_ps(p, mask) }
    }
    /// Loads the first `rem` (< 4) elements at `p`, zero elsewhere.
    #[target_feature(enable = "avx2")]
    pub unsafe fn masked256_pd(p: *const f64, rem: usize) -> __m256d {
        let mask = _mm256_cmpgt_epi64(_mm256_set1_epi64x(rem as i64), _mm256_setr_epi64x(0, 1, 2, 3));
        // SAFETY: as above.
        unsafe { _mm256_maskload_pd(p, mask) }
    }
    /// Loads the first `rem` (< 16) elements at `p`, zero elsewhere.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn masked512_ps(p: *const f32, rem: usize) -> __m512 {
        // SAFETY: as above.
        unsafe { _mm512_maskz_loadu_ps(((1u32 << rem) - 1) as __mmask16, p) }
    }
    /// Loads the first `rem` (< 8) elements at `p`, zero elsewhere.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn masked512_pd(p: *const f64, rem: usize) -> __m512d {
        // SAFETY: as above.
        unsafe { _mm512_maskz_loadu_pd(((1u32 << rem) - 1) as __mmask8, p) }
    }
    #[target_feature(enable = "avx2")]
    pub fn hsum256_ps(v: __m256) -> f32 {
        let mut out = [0.0f32; 8];
        // SAFETY: `out` holds 8 f32.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), v) };
        out.iter().sum()
    }
    #[target_feature(enable = "avx2")]
    pub fn hsum256_pd(v: __m256d) -> f64 {
        let mut out = [0.0f64; 4];
        // SAFETY: `out` holds 4 f64.
        unsafe { _mm256_storeu_pd(out.as_mut_ptr(), v) };
        out.iter().sum()
    }
}

#[cfg(target_arch = "x86_64")]
use x86_helpers::*;

#[cfg(target_arch = "x86_64")]
x86!(
    avx2_f32,
    "avx2,fma",
    f32,
    __m256,
    8,
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_sub_ps,
    _mm256_fmadd_ps,
    _mm256_add_ps,
    super::abs256_ps,
    super::hsum256_ps,
    super::masked256_ps
);
#[cfg(target_arch = "x86_64")]
x86!(
    avx2_f64,
    "avx2,fma",
    f64,
    __m256d,
    4,
    _mm256_setzero_pd,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_sub_pd,
    _mm256_fmadd_pd,
    _mm256_add_pd,
    super::abs256_pd,
    super::hsum256_pd,
    super::masked256_pd
);
#[cfg(target_arch = "x86_64")]
x86!(
    avx512_f32,
    "avx512f",
    f32,
    __m512,
    16,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_sub_ps,
    _mm512_fmadd_ps,
    _mm512_add_ps,
    _mm512_abs_ps,
    _mm512_reduce_add_ps,
    super::masked512_ps
);
#[cfg(target_arch = "x86_64")]
x86!(
    avx512_f64,
    "avx512f",
    f64,
    __m512d,
    8,
    _mm512_setzero_pd,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    _mm512_sub_pd,
    _mm512_fmadd_pd,
    _mm512_add_pd,
    _mm512_abs_pd,
    _mm512_reduce_add_pd,
    super::masked512_pd
);

macro_rules! table {
    ($t:ty, $fn_name:ident, $portable:ident, $avx2:ident, $avx512:ident) => {
        /// The kernel table for `isa`, or `None` when this machine cannot run it.
        pub fn $fn_name(isa: Isa) -> Option<SimdTable<$t>> {
            if !isa.available() {
                return None;
            }
            Some(match isa {
                #[cfg(target_arch = "x86_64")]
                Isa::Avx512 => SimdTable {
                    sqeuclidean: $avx512::sqeuclidean,
                    dot: $avx512::dot,
                    manhattan: $avx512::manhattan,
                    sqeuclidean_rows: $avx512::sqeuclidean_rows,
                    dot_rows: $avx512::dot_rows,
                    manhattan_rows: $avx512::manhattan_rows,
                    centre_rows: $avx512::centre_rows,
                    isa,
                },
                #[cfg(target_arch = "x86_64")]
                Isa::Avx2Fma => SimdTable {
                    sqeuclidean: $avx2::sqeuclidean,
                    dot: $avx2::dot,
                    manhattan: $avx2::manhattan,
                    sqeuclidean_rows: $avx2::sqeuclidean_rows,
                    dot_rows: $avx2::dot_rows,
                    manhattan_rows: $avx2::manhattan_rows,
                    centre_rows: $avx2::centre_rows,
                    isa,
                },
                _ => SimdTable {
                    sqeuclidean: $portable::sqeuclidean,
                    dot: $portable::dot,
                    manhattan: $portable::manhattan,
                    sqeuclidean_rows: $portable::sqeuclidean_rows,
                    dot_rows: $portable::dot_rows,
                    manhattan_rows: $portable::manhattan_rows,
                    centre_rows: $portable::centre_rows,
                    isa: Isa::Portable,
                },
            })
        }
    };
}
table!(f32, kernels_f32, portable_f32, avx2_f32, avx512_f32);
table!(f64, kernels_f64, portable_f64, avx2_f64, avx512_f64);

/// The process-wide f32 kernels (best detected instruction set).
pub fn f32_table() -> &'static SimdTable<f32> {
    static K: OnceLock<SimdTable<f32>> = OnceLock::new();
    K.get_or_init(|| kernels_f32(Isa::detect()).expect("detected ISA is available"))
}

/// The process-wide f64 kernels (best detected instruction set).
pub fn f64_table() -> &'static SimdTable<f64> {
    static K: OnceLock<SimdTable<f64>> = OnceLock::new();
    K.get_or_init(|| kernels_f64(Isa::detect()).expect("detected ISA is available"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn reference(a: &[f64], b: &[f64]) -> (f64, f64, f64) {
        let sq = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
        let dot = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let l1 = a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum();
        (sq, dot, l1)
    }

    #[test]
    fn every_available_isa_matches_scalar_reference() {
        let mut rng = crate::rng::SeededRng::seed_from_u64(1);
        for isa in [Isa::Portable, Isa::Avx2Fma, Isa::Avx512] {
            let (Some(k64), Some(k32)) = (kernels_f64(isa), kernels_f32(isa)) else {
                eprintln!("{isa:?} not available on this machine; skipped");
                continue;
            };
            for len in [0usize, 1, 3, 7, 8, 15, 16, 17, 31, 32, 33, 64, 100, 257] {
                let a: Vec<f64> = (0..len).map(|_| rng.random_range(-3.0..3.0)).collect();
                let b: Vec<f64> = (0..len).map(|_| rng.random_range(-3.0..3.0)).collect();
                let (sq, dot, l1) = reference(&a, &b);
                let tol = 1e-12 * (1.0 + len as f64);
                assert!(((k64.sqeuclidean)(&a, &b) - sq).abs() <= tol * (1.0 + sq));
                assert!(((k64.dot)(&a, &b) - dot).abs() <= tol * (1.0 + dot.abs()));
                assert!(((k64.manhattan)(&a, &b) - l1).abs() <= tol * (1.0 + l1));
                let ys: Vec<f64> = a.iter().chain(&b).copied().collect();
                let mut out = [0.0f64; 2];
                (k64.sqeuclidean_rows)(&a, &ys, &mut out);
                assert_eq!(out, [0.0, (k64.sqeuclidean)(&a, &b)]);
                (k64.dot_rows)(&a, &ys, &mut out);
                assert_eq!(out[1], (k64.dot)(&a, &b));
                (k64.manhattan_rows)(&a, &ys, &mut out);
                assert_eq!(out[1], (k64.manhattan)(&a, &b));
                let a32: Vec<f32> = a.iter().map(|&v| v as f32).collect();
                let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
                let (sq, dot, l1) = reference(
                    &a32.iter().map(|&v| v as f64).collect::<Vec<_>>(),
                    &b32.iter().map(|&v| v as f64).collect::<Vec<_>>(),
                );
                let tol = 1e-6 * (1.0 + len as f64);
                assert!((((k32.sqeuclidean)(&a32, &b32)) as f64 - sq).abs() <= tol * (1.0 + sq));
                assert!((((k32.dot)(&a32, &b32)) as f64 - dot).abs() <= tol * (1.0 + dot.abs()));
                assert!((((k32.manhattan)(&a32, &b32)) as f64 - l1).abs() <= tol * (1.0 + l1));
            }
        }
    }
}
