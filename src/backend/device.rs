//! The contracts between the families and a device: what a backend other than the CPU may
//! take over, as data and traits the families read and the devices implement. A family asks
//! the backend for a capability ([`super::Backend::swap_gains`],
//! [`super::Backend::points_swap_gains`], [`super::Backend::power_points`],
//! [`super::Backend::rff_features`]); the CPU answers `None` and the family runs its own
//! loop, so no family names a device.
//!
//! - FastPAM1's candidate scans ([`DeviceGains`]): the k-medoids family hands the search
//!   state ([`Grouped`], removal losses) and batches of candidates; the device returns each
//!   candidate's best swap ([`Evaluated`]).
//! - Power k-means' points ([`PowerPoints`]): the device holds the points and returns, per
//!   iteration, per-block partial sums; the family adds the blocks and moves the centroids.
//! - Dissimilarities computed with a device's own arithmetic ([`DeviceExact`]), so that the
//!   host's caches equal the device's values to the bit.
//!
//! The types are public so that a backend outside this crate can offer the same
//! capabilities; the families are their only callers.

use crate::dissim::Dissimilarity;
use crate::error::Result;
use crate::metric::{Metric, MetricKind};
use crate::scalar::Scalar;
use ndarray::{Array2, ArrayView2};

/// The points grouped by their nearest medoid position, as a device reads them:
/// `members[offsets[m]..offsets[m + 1]]` are the points whose nearest medoid is at position
/// `m`, ascending, with their nearest and second-nearest dissimilarities in the same order.
#[derive(Clone, Debug, PartialEq)]
pub struct Grouped<V> {
    /// The points, grouped by nearest medoid position.
    pub members: Vec<i32>,
    /// Where each position's group starts in `members` (k + 1 entries).
    pub offsets: Vec<i32>,
    /// Each member's dissimilarity to its nearest medoid.
    pub near_d: Vec<V>,
    /// Each member's dissimilarity to its second-nearest medoid.
    pub seco_d: Vec<V>,
}

/// The best swap position and its ΔTD, for each candidate of a batch.
pub type Best<L> = Vec<(usize, L)>;

/// [`Best`] and, when asked for, every candidate's k deltas (row-major).
pub type Evaluated<L = f64> = (Best<L>, Vec<L>);

/// FastPAM1's candidate scan for batches of candidates on a device.
pub trait DeviceGains<V> {
    /// Loads the search state (after every swap).
    fn load_state(&mut self, g: &Grouped<V>, removal: &[f64]) -> Result<()>;
    /// Evaluates the candidates against the loaded state.
    fn evaluate(&mut self, candidates: &[usize], all: bool) -> Result<Evaluated>;
}

/// Candidate scans on a device, boxed.
pub type BoxedGains<'g, V> = Box<dyn DeviceGains<V> + 'g>;

/// FastPAM1's candidate scans over points whose dissimilarities the device computes: the
/// host's twin of those dissimilarities and the device's scans.
pub struct PointsGains<'g, F> {
    /// The dissimilarities as the device computes them, for the host's caches.
    pub exact: DeviceExact<'g, F>,
    /// The candidate scans.
    pub gains: BoxedGains<'g, F>,
}

/// Power k-means' points held on a device; the centroids stay with the family.
pub trait PowerPoints<F> {
    /// Squared distances of every point to every centroid (n × k).
    fn distances(&self, centers: ArrayView2<F>) -> Result<Array2<f64>>;
    /// One MM iteration at power `s` from `centers`: per block of
    /// [`crate::comm::ROW_GRANULE`] rows, in row order, `[Σwx (k × dim), Σw (k), objective,
    /// hardness]`.
    fn block_sums(&mut self, centers: ArrayView2<F>, s: f64) -> Result<Vec<Vec<f64>>>;
}

/// Power k-means' points on a device, boxed.
pub type BoxedPowerPoints<'a, F> = Box<dyn PowerPoints<F> + 'a>;

/// The operations of a metric a device reproduces exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ExactOp {
    SqEuclidean,
    Euclidean,
    Manhattan,
    Chebyshev,
    Cosine,
}

/// The dissimilarities of points computed on the host with the operations of the device's
/// pairwise kernel (`cuda/distances.cu`, compiled without fused multiply-add), in the same
/// order — IEEE additions, multiplications, divisions and square roots, so every value equals
/// the device's to the bit — and zero on the diagonal. Only metrics of such operations:
/// squared Euclidean, Euclidean, Manhattan, Chebyshev and cosine.
pub struct DeviceExact<'a, F> {
    x: ArrayView2<'a, F>,
    op: ExactOp,
}

impl<'a, F: Scalar> DeviceExact<'a, F> {
    /// The points (standard layout) under `metric`, or `None` for a metric it cannot take.
    pub fn new(x: ArrayView2<'a, F>, metric: &impl Metric) -> Option<Self> {
        let op = match metric.kind()? {
            MetricKind::SqEuclidean => ExactOp::SqEuclidean,
            MetricKind::Euclidean => ExactOp::Euclidean,
            MetricKind::Manhattan => ExactOp::Manhattan,
            MetricKind::Minkowski(p) if p == f64::INFINITY => ExactOp::Chebyshev,
            MetricKind::Cosine => ExactOp::Cosine,
            _ => return None,
        };
        x.is_standard_layout().then_some(DeviceExact { x, op })
    }
}

impl<F: Scalar> Dissimilarity for DeviceExact<'_, F> {
    type Value = F;
    fn len(&self) -> usize {
        self.x.nrows()
    }
    fn get(&self, i: usize, j: usize) -> F {
        if i == j {
            return F::zero();
        }
        let d = self.x.ncols();
        let all = self.x.as_slice().unwrap_or_default();
        let (a, b) = (&all[i * d..(i + 1) * d], &all[j * d..(j + 1) * d]);
        let zero = F::zero();
        match self.op {
            ExactOp::SqEuclidean | ExactOp::Euclidean => {
                let mut s = zero;
                for (&p, &q) in a.iter().zip(b) {
                    let diff = p - q;
                    s += diff * diff;
                }
                let s = if s > zero { s } else { zero };
                if self.op == ExactOp::Euclidean {
                    s.sqrt()
                } else {
                    s
                }
            }
            ExactOp::Manhattan => a.iter().zip(b).fold(zero, |s, (&p, &q)| s + (p - q).abs()),
            ExactOp::Chebyshev => a.iter().zip(b).fold(zero, |s, (&p, &q)| {
                let v = (p - q).abs();
                if v > s {
                    v
                } else {
                    s
                }
            }),
            ExactOp::Cosine => {
                let (mut dot, mut na, mut nb) = (zero, zero, zero);
                for (&p, &q) in a.iter().zip(b) {
                    dot += p * q;
                    na += p * p;
                    nb += q * q;
                }
                if na == zero && nb == zero {
                    return zero;
                }
                if na == zero || nb == zero {
                    return F::one();
                }
                let c = dot / (na.sqrt() * nb.sqrt());
                let v = F::one() - c;
                let two = F::one() + F::one();
                if v < zero {
                    zero
                } else if v > two {
                    two
                } else {
                    v
                }
            }
        }
    }
}
