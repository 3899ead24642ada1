//! Random Fourier features (Rahimi & Recht, NIPS 2007) for the Gaussian kernel
//! `k(x, y) = exp(−‖x − y‖² / (2σ²))`: `z(x) = √(2/D) · cos(Ωx + b)` with the rows of Ω drawn
//! from N(0, σ⁻² I) and b from U[0, 2π], so that `E[z(x)ᵀz(y)] = k(x, y)`. This is
//! scikit-learn's `RBFSampler` with γ = 1/(2σ²).
//!
//! The map is one GEMM plus a cosine, in row blocks in parallel (the same result for any
//! thread count). The bandwidth is given, or the median heuristic: the median Euclidean
//! distance between the points of a seeded sample.

use crate::backend::{AnyBackend, Backend};
use crate::comm::{fetch_rows, Communicator, Partition, SingleProcess};
use crate::error::{Error, Result};
use crate::linalg::gemm_abt;
use crate::model_file::StoredArray;
use crate::rng::SeededRng;
use crate::scalar::Scalar;
use ndarray::{Array1, Array2, ArrayView2, Axis};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

/// Rows per block of the map.
const BLOCK: usize = 1024;

/// How the Gaussian kernel's bandwidth σ is set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bandwidth {
    /// This σ.
    Given(f64),
    /// The median distance between points of a seeded sample of 1,000.
    Median,
}

impl Bandwidth {
    /// σ for the data `x` (the sample is drawn with `seed`).
    pub fn resolve<F: Scalar>(self, x: ArrayView2<F>, seed: u64) -> Result<f64> {
        let all = Partition {
            offset: 0,
            n_global: x.nrows(),
        };
        self.resolve_over(x, all, &SingleProcess, seed)
    }

    /// σ for the data split over processes (`x` is this process's slice): the median
    /// heuristic draws its sample over all rows, as one process does.
    pub fn resolve_over<F: Scalar>(
        self,
        x: ArrayView2<F>,
        part: Partition,
        comm: &dyn Communicator,
        seed: u64,
    ) -> Result<f64> {
        let sigma = match self {
            Bandwidth::Given(s) => s,
            Bandwidth::Median => {
                let idx = median_sample(part.n_global, MEDIAN_SAMPLE, seed);
                median_of_rows(fetch_rows(x, part, &idx, comm).view())
            }
        };
        if !(sigma > 0.0 && sigma.is_finite()) {
            let why = match self {
                Bandwidth::Given(_) => "the kernel bandwidth must be positive and finite",
                Bandwidth::Median => {
                    "the median distance between points is not a usable bandwidth (all points equal?); give one"
                }
            };
            return Err(Error::param("sigma", sigma, why));
        }
        // The kernel divides squared distances by 2σ², and the feature map multiplies the
        // values by frequencies of about 1/σ (up to ~8/σ): both must stay finite in F.
        let local_max = x.iter().fold(0.0f64, |m, v| m.max(v.to_f64_exact().abs()));
        let max_abs = comm.all_gather_f64(&[local_max]).into_iter().fold(0.0, f64::max);
        let f_max = F::max_value().to_f64_exact();
        let smallest = (2.0 / f64::MAX)
            .sqrt()
            .max(max_abs * 8.0 * (x.ncols() as f64).sqrt() / f_max * 64.0);
        if sigma < smallest {
            let what = match self {
                Bandwidth::Given(_) => "the kernel bandwidth",
                Bandwidth::Median => "the median distance between points (the bandwidth)",
            };
            return Err(Error::param(
                "sigma",
                format!("{sigma:e}"),
                format!(
                    "{what} must be at least {smallest:.3e} for the kernel's arithmetic in {} on \
                     values up to {max_abs:.3e}; rescale the data or give a larger sigma",
                    F::DTYPE
                ),
            ));
        }
        Ok(sigma)
    }

    /// Bytes [`Bandwidth::resolve`] allocates for `n` points: the median heuristic's pairwise
    /// distances of its sample (s(s − 1)/2 values, bounded by s²).
    pub fn memory_estimate(self, n: usize) -> u64 {
        match self {
            Bandwidth::Given(_) => 0,
            Bandwidth::Median => crate::memory::product(&[n.min(MEDIAN_SAMPLE), n.min(MEDIAN_SAMPLE), 8]),
        }
    }
}

/// Points in the median heuristic's sample.
const MEDIAN_SAMPLE: usize = 1000;

/// The median Euclidean distance between distinct pairs of a seeded sample of at most
/// `sample` points (all pairs of the sample).
pub fn median_distance<F: Scalar>(x: ArrayView2<F>, sample: usize, seed: u64) -> f64 {
    median_of_rows(x.select(Axis(0), &median_sample(x.nrows(), sample, seed)).view())
}

/// The median heuristic's sample of `n` rows, in increasing order.
fn median_sample(n: usize, sample: usize, seed: u64) -> Vec<usize> {
    let mut rng = SeededRng::seed_from_u64(seed);
    let mut idx = rand::seq::index::sample(&mut rng, n, sample.min(n)).into_vec();
    idx.sort_unstable();
    idx
}

/// The median Euclidean distance between distinct pairs of `x`'s rows.
fn median_of_rows<F: Scalar>(x: ArrayView2<F>) -> f64 {
    let rows: Vec<Vec<f64>> = x
        .rows()
        .into_iter()
        .map(|r| r.iter().map(|v| v.to_f64_exact()).collect())
        .collect();
    // All pairs i < j, row by row, written in place (one allocation of s(s − 1)/2 values).
    let s = rows.len();
    let mut d = vec![0.0; s * s.saturating_sub(1) / 2];
    let mut parts: Vec<(usize, &mut [f64])> = Vec::with_capacity(s);
    let mut rest = d.as_mut_slice();
    for i in 0..s {
        let (part, tail) = rest.split_at_mut(s - 1 - i);
        parts.push((i, part));
        rest = tail;
    }
    parts.into_par_iter().for_each(|(i, part)| {
        for (out, j) in part.iter_mut().zip(i + 1..s) {
            *out = f64::sqeuclidean(&rows[i], &rows[j]).sqrt();
        }
    });
    if d.is_empty() {
        return 0.0;
    }
    let mid = d.len() / 2;
    let (_, m, _) = d.select_nth_unstable_by(mid, f64::total_cmp);
    *m
}

/// A drawn random Fourier feature map.
#[derive(Clone, Debug, PartialEq)]
pub struct RandomFourierFeatures {
    /// Frequencies Ω, D × d, rows from N(0, σ⁻² I).
    pub omega: Array2<f64>,
    /// Phases b, D, from U[0, 2π].
    pub offset: Array1<f64>,
    /// The bandwidth σ.
    pub sigma: f64,
}

/// The stored form of a feature map: Ω, b and σ.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct StoredFeatures {
    omega: StoredArray,
    offset: StoredArray,
    sigma: f64,
}

impl From<&RandomFourierFeatures> for StoredFeatures {
    fn from(f: &RandomFourierFeatures) -> Self {
        StoredFeatures {
            omega: StoredArray::from_array(&f.omega),
            offset: StoredArray::from_array(&f.offset),
            sigma: f.sigma,
        }
    }
}

impl StoredFeatures {
    /// The feature map, checked (finite, Ω and b of the same D, σ positive).
    pub fn to_features(&self) -> Result<RandomFourierFeatures> {
        let omega: Array2<f64> = self.omega.to_matrix("omega")?;
        let offset: Array1<f64> = self.offset.to_array("offset")?;
        crate::data::validate::check_points(omega.view())?;
        crate::data::validate::check_same_len("random feature phases", omega.nrows(), offset.len())?;
        if !(self.sigma > 0.0 && self.sigma.is_finite()) || offset.iter().any(|v| !v.is_finite()) {
            return Err(Error::Unsupported(
                "model file: feature map: bad sigma or phases".into(),
            ));
        }
        Ok(RandomFourierFeatures {
            omega,
            offset,
            sigma: self.sigma,
        })
    }
}

impl RandomFourierFeatures {
    /// Draws `n_features` (D) features for `d`-dimensional points and bandwidth `sigma`.
    pub fn new(d: usize, n_features: usize, sigma: f64, seed: u64) -> Result<Self> {
        if n_features == 0 {
            return Err(Error::param("n_features", 0, "at least one feature"));
        }
        if !(sigma > 0.0 && sigma.is_finite()) {
            return Err(Error::param("sigma", sigma, "must be positive and finite"));
        }
        let mut rng = SeededRng::seed_from_u64(seed);
        let omega = Array2::from_shape_simple_fn((n_features, d), || {
            let z: f64 = StandardNormal.sample(&mut rng);
            z / sigma
        });
        let offset = Array1::from_shape_simple_fn(n_features, || rng.random::<f64>() * std::f64::consts::TAU);
        Ok(RandomFourierFeatures { omega, offset, sigma })
    }

    /// Makes every process use rank 0's draw (the same seed gives the same draw on the same
    /// build; this makes it so on a cluster of mixed machines too).
    pub(crate) fn broadcast(&mut self, comm: &dyn Communicator) {
        if comm.size() > 1 {
            comm.broadcast_f64(self.omega.as_slice_mut().expect("standard layout"), 0);
            comm.broadcast_f64(self.offset.as_slice_mut().expect("standard layout"), 0);
        }
    }

    /// Number of features D.
    pub fn n_features(&self) -> usize {
        self.omega.nrows()
    }

    /// `z(x)` for every row, on `backend`.
    pub fn transform_on<F: Scalar>(&self, x: ArrayView2<F>, backend: &AnyBackend) -> Result<Array2<F>> {
        crate::data::validate::check_same_len(
            "number of features of the data",
            self.omega.ncols(),
            x.ncols(),
        )?;
        let scale = F::from_f64_lossy((2.0 / self.n_features() as f64).sqrt());
        let offset: Vec<F> = self.offset.iter().map(|&b| F::from_f64_lossy(b)).collect();
        let omega = self.omega.mapv(F::from_f64_lossy);
        match backend.rff_features(x, omega.view(), &offset, scale)? {
            Some(z) => Ok(z),
            None => self.transform(x),
        }
    }

    /// `z(x)` for every row (n × D), computed in `F`.
    pub fn transform<F: Scalar>(&self, x: ArrayView2<F>) -> Result<Array2<F>> {
        crate::data::validate::check_same_len(
            "number of features of the data",
            self.omega.ncols(),
            x.ncols(),
        )?;
        let x = crate::data::standard_layout(x);
        let omega = self.omega.mapv(F::from_f64_lossy);
        let offset = self.offset.mapv(F::from_f64_lossy);
        let scale = F::from_f64_lossy((2.0 / self.n_features() as f64).sqrt());
        let mut z = Array2::<F>::zeros((x.nrows(), self.n_features()));
        z.axis_chunks_iter_mut(Axis(0), BLOCK)
            .into_par_iter()
            .zip(x.axis_chunks_iter(Axis(0), BLOCK))
            .for_each(|(mut zb, xb)| {
                gemm_abt(xb, omega.view(), zb.view_mut(), F::one());
                let offset = offset.as_slice().expect("contiguous");
                for mut row in zb.rows_mut() {
                    cos_row(row.as_slice_mut().expect("standard layout"), offset, scale);
                }
            });
        Ok(z)
    }
}

/// `cos x` for the feature map, without libm's special cases and without branches (so
/// loops over it vectorise): Cody–Waite reduction by π/2, Taylor polynomials on
/// [−π/4, π/4] and an arithmetic choice of quadrant. Absolute error below 1e-13 for
/// |x| < 300 (about 1e-11 at 1e5), far under the map's own sampling error.
#[inline(always)]
fn cos(x: f64) -> f64 {
    // π/2 split in two: the f64 nearest to π/2, and the remainder.
    const P1: f64 = std::f64::consts::FRAC_PI_2;
    const P2: f64 = 6.123_233_995_736_766e-17;
    let j = rint(x * std::f64::consts::FRAC_2_PI);
    let y = (x - j * P1) - j * P2;
    let y2 = y * y;
    let c = 1.0
        + y2 * (-1.0 / 2.0
            + y2 * (1.0 / 24.0
                + y2 * (-1.0 / 720.0
                    + y2 * (1.0 / 40_320.0
                        + y2 * (-1.0 / 3_628_800.0
                            + y2 * (1.0 / 479_001_600.0 + y2 * (-1.0 / 87_178_291_200.0)))))));
    let sn = y
        * (1.0
            + y2 * (-1.0 / 6.0
                + y2 * (1.0 / 120.0
                    + y2 * (-1.0 / 5040.0
                        + y2 * (1.0 / 362_880.0
                            + y2 * (-1.0 / 39_916_800.0
                                + y2 * (1.0 / 6_227_020_800.0 + y2 * (-1.0 / 1_307_674_368_000.0))))))));
    // Quadrant q = j mod 4 gives cos, −sin, −cos, sin; the floors of quarter and half
    // integers are rounded after an offset, so no libm call breaks vectorisation.
    let q = j - 4.0 * rint(j * 0.25 - 0.375);
    let odd = q - 2.0 * rint(q * 0.5 - 0.25);
    let h = rint((q + 1.0) * 0.5 - 0.25);
    let sign = 1.0 - 2.0 * (h - 2.0 * rint(h * 0.5 - 0.25));
    sign * (c + odd * (sn - c))
}

/// Round to nearest (ties to even) by the 1.5·2⁵² trick, for |x| < 2⁵¹: two additions,
/// where `f64::round` is a library call on baseline x86-64.
#[inline(always)]
fn rint(x: f64) -> f64 {
    const M: f64 = 6_755_399_441_055_744.0;
    (x + M) - M
}

/// `row ← scale · cos(row + offset)`, compiled for the best instruction set of this machine
/// (the polynomial vectorises: 8 lanes of f64 with AVX-512, 4 with AVX2).
fn cos_row<F: Scalar>(row: &mut [F], offset: &[F], scale: F) {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::scalar::simd::Isa;
        static ISA: std::sync::OnceLock<Isa> = std::sync::OnceLock::new();
        match ISA.get_or_init(Isa::detect) {
            // SAFETY: the instruction set was detected on this machine.
            Isa::Avx512 => return unsafe { cos_row_avx512(row, offset, scale) },
            Isa::Avx2Fma => return unsafe { cos_row_avx2(row, offset, scale) },
            Isa::Portable => {}
        }
    }
    cos_row_portable(row, offset, scale)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn cos_row_avx512<F: Scalar>(row: &mut [F], offset: &[F], scale: F) {
    cos_row_portable(row, offset, scale)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn cos_row_avx2<F: Scalar>(row: &mut [F], offset: &[F], scale: F) {
    cos_row_portable(row, offset, scale)
}

#[inline(always)]
fn cos_row_portable<F: Scalar>(row: &mut [F], offset: &[F], scale: F) {
    for (v, &b) in row.iter_mut().zip(offset) {
        *v = F::from_f64_lossy(cos(v.to_f64_exact() + b.to_f64_exact())) * scale;
    }
}

/// The Gaussian kernel `exp(−‖a − b‖² / (2σ²))`.
pub fn gaussian_kernel(a: &[f64], b: &[f64], sigma: f64) -> f64 {
    (-f64::sqeuclidean(a, b) / (2.0 * sigma * sigma)).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_points(n: usize, d: usize, seed: u64) -> Array2<f64> {
        let mut rng = SeededRng::seed_from_u64(seed);
        Array2::from_shape_simple_fn((n, d), || StandardNormal.sample(&mut rng))
    }

    fn mean_error(x: &Array2<f64>, big_d: usize, seed: u64) -> f64 {
        let rff = RandomFourierFeatures::new(x.ncols(), big_d, 1.5, seed).unwrap();
        let z = rff.transform(x.view()).unwrap();
        let n = x.nrows() / 2;
        (0..n)
            .map(|i| {
                let approx = z.row(i).dot(&z.row(n + i));
                let exact = gaussian_kernel(
                    x.row(i).as_slice().unwrap(),
                    x.row(n + i).as_slice().unwrap(),
                    1.5,
                );
                (approx - exact).abs()
            })
            .sum::<f64>()
            / n as f64
    }

    /// Spec acceptance 1: error ≤ 0.03 at D = 2,000 over 1,000 pairs, falling as D^-½.
    #[test]
    fn approximates_the_gaussian_kernel_at_the_expected_rate() {
        let x = random_points(2000, 5, 1) * 0.6;
        let ds = [250usize, 1000, 4000];
        let errs: Vec<f64> = ds.iter().map(|&d| mean_error(&x, d, 7)).collect();
        let at_2000 = mean_error(&x, 2000, 7);
        assert!(at_2000 <= 0.03, "mean error at D = 2000: {at_2000}");
        let slope = (errs[2].ln() - errs[0].ln()) / ((ds[2] as f64).ln() - (ds[0] as f64).ln());
        assert!(
            (-0.65..=-0.35).contains(&slope),
            "log-log slope {slope} ({errs:?})"
        );
    }

    #[test]
    fn draws_have_the_right_moments_and_are_reproducible() {
        let rff = RandomFourierFeatures::new(4, 20_000, 2.0, 3).unwrap();
        let w = &rff.omega;
        let mean = w.mean().unwrap();
        let var = w.mapv(|v| v * v).mean().unwrap() - mean * mean;
        assert!(
            mean.abs() < 0.01 && (var - 0.25).abs() < 0.01,
            "mean {mean} var {var}"
        );
        let b = &rff.offset;
        assert!(b.iter().all(|&v| (0.0..std::f64::consts::TAU).contains(&v)));
        assert!((b.mean().unwrap() - std::f64::consts::PI).abs() < 0.05);
        assert_eq!(rff, RandomFourierFeatures::new(4, 20_000, 2.0, 3).unwrap());
        let x = random_points(100, 4, 2);
        let z64 = rff.transform(x.view()).unwrap();
        let z32 = rff.transform(x.mapv(|v| v as f32).view()).unwrap();
        assert!(z64.iter().zip(&z32).all(|(a, &b)| (a - b as f64).abs() < 1e-5));
    }

    #[test]
    fn fast_cosine_is_accurate() {
        let mut worst: f64 = 0.0;
        for i in -400_000..400_000 {
            let x = i as f64 * 0.000_731 + 0.3;
            worst = worst.max((cos(x) - x.cos()).abs());
        }
        for x in [
            0.0,
            1e-9,
            std::f64::consts::FRAC_PI_4,
            -std::f64::consts::PI,
            299.9,
        ] {
            worst = worst.max((cos(x) - x.cos()).abs());
        }
        assert!(worst < 1e-13, "{worst}");
        for x in [1e3, -1e4, 99_999.0] {
            assert!((cos(x) - x.cos()).abs() < 1e-10, "{x}");
        }
    }

    #[test]
    fn median_heuristic_and_errors() {
        let x = ndarray::array![[0.0], [1.0], [3.0]];
        // Distances 1, 3, 2: median 2.
        assert_eq!(median_distance(x.view(), 1000, 0), 2.0);
        assert_eq!(Bandwidth::Median.resolve(x.view(), 0).unwrap(), 2.0);
        let same = Array2::<f64>::zeros((5, 2));
        assert!(Bandwidth::Median.resolve(same.view(), 0).is_err());
        assert!(RandomFourierFeatures::new(2, 0, 1.0, 0).is_err());
        assert!(RandomFourierFeatures::new(2, 10, -1.0, 0).is_err());
    }
}
