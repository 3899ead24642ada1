//! Distance metrics between points.
//!
//! Built-in metrics are the variants of [`MetricKind`]; any type implementing [`Metric`] can
//! be used where a metric is expected. The backends recognise the built-in kinds (through
//! [`Metric::kind`]) and use their SIMD and GEMM kernels; other metrics are evaluated pair by
//! pair with [`Metric::distance`].
//!
//! Conventions, as in scikit-learn's `pairwise_distances` unless said otherwise:
//! - `cosine` is `1 − a·b / (‖a‖‖b‖)`, clipped to `[0, 2]`. A zero vector has distance 1 to
//!   any non-zero vector (scikit-learn's convention) and 0 to another zero vector (scikit-learn
//!   only sets the diagonal of `X` against itself to 0; we make the metric an identity on zero
//!   vectors in every call).
//! - `minkowski(p)` needs `p ≥ 1` (below 1 it is not a metric); `p = ∞` is the Chebyshev
//!   distance.
//! - `haversine` takes rows of (latitude, longitude) **in degrees** and returns the
//!   great-circle distance **in kilometres** on a sphere of radius 6371.0088 km (the mean
//!   Earth radius). scikit-learn's haversine takes radians and returns radians; multiply its
//!   result by 6371.0088 to compare.

use crate::error::{Error, Result};
use crate::scalar::Scalar;
use std::fmt;
use std::str::FromStr;

/// Mean Earth radius in kilometres (IUGG), used by [`MetricKind::Haversine`].
pub const EARTH_RADIUS_KM: f64 = 6371.0088;

/// A dissimilarity between two points given as equal-length slices.
pub trait Metric: Send + Sync {
    /// The metric's name as accepted on the command line.
    fn name(&self) -> String;

    /// The distance between `a` and `b` (same length).
    fn distance<F: Scalar>(&self, a: &[F], b: &[F]) -> F;

    /// The built-in kind this metric is, letting backends use their fast kernels.
    /// User-defined metrics keep the default `None`.
    fn kind(&self) -> Option<MetricKind> {
        None
    }

    /// Checks that points of dimension `d` are valid input (haversine needs `d = 2`).
    fn check_dim(&self, d: usize) -> Result<()> {
        if d == 0 {
            return Err(Error::EmptyInput {
                what: "points have 0 columns".into(),
            });
        }
        Ok(())
    }
}

/// A borrowed metric is the metric (so a dissimilarity can hold `&M`).
impl<M: Metric> Metric for &M {
    fn name(&self) -> String {
        (**self).name()
    }
    #[inline]
    fn distance<F: Scalar>(&self, a: &[F], b: &[F]) -> F {
        (**self).distance(a, b)
    }
    fn kind(&self) -> Option<MetricKind> {
        (**self).kind()
    }
    fn check_dim(&self, d: usize) -> Result<()> {
        (**self).check_dim(d)
    }
}

/// The built-in metrics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MetricKind {
    /// ‖a − b‖₂.
    Euclidean,
    /// ‖a − b‖₂², the k-means objective (not a metric: no triangle inequality).
    SqEuclidean,
    /// ‖a − b‖₁ (also accepted as `cityblock`, `l1`).
    Manhattan,
    /// 1 − cos(a, b), in \[0, 2\].
    Cosine,
    /// (Σ|aᵢ − bᵢ|ᵖ)^(1/p) for p ≥ 1; p = ∞ is Chebyshev.
    Minkowski(f64),
    /// Great-circle distance in km between (latitude, longitude) rows in degrees.
    Haversine,
}

/// The distance between two rows from their squared norms and dot product (how scikit-learn
/// computes Euclidean, squared Euclidean and cosine distances on sparse rows; other metrics
/// are not computed so and give the Euclidean one). Cosine keeps the dense rows' convention
/// for an all-zero row: 1 from any other row, 0 from another all-zero row.
pub(crate) fn distance_from_dot(metric: MetricKind, aa: f64, bb: f64, dot: f64) -> f64 {
    match metric {
        MetricKind::Cosine => cosine_from_parts(dot, aa, bb),
        MetricKind::SqEuclidean => (aa + bb - 2.0 * dot).max(0.0),
        _ => (aa + bb - 2.0 * dot).max(0.0).sqrt(),
    }
}

impl MetricKind {
    /// Every built-in metric name accepted by [`FromStr`].
    pub const NAMES: &'static [&'static str] = &[
        "euclidean",
        "sqeuclidean",
        "manhattan",
        "cosine",
        "minkowski:P",
        "chebyshev",
        "haversine",
    ];

    /// Checks the metric's own parameter (Minkowski's p).
    pub fn validate(&self) -> Result<()> {
        if let MetricKind::Minkowski(p) = *self {
            if p.is_nan() || p < 1.0 {
                return Err(Error::param("p", p, "Minkowski needs p >= 1 (or inf)"));
            }
        }
        Ok(())
    }
}

impl fmt::Display for MetricKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetricKind::Euclidean => write!(f, "euclidean"),
            MetricKind::SqEuclidean => write!(f, "sqeuclidean"),
            MetricKind::Manhattan => write!(f, "manhattan"),
            MetricKind::Cosine => write!(f, "cosine"),
            MetricKind::Minkowski(p) if p.is_infinite() => write!(f, "chebyshev"),
            MetricKind::Minkowski(p) => write!(f, "minkowski:{}", crate::scalar::readable(*p)),
            MetricKind::Haversine => write!(f, "haversine"),
        }
    }
}

impl FromStr for MetricKind {
    type Err = Error;

    /// Parses `euclidean`, `sqeuclidean`, `manhattan` (`cityblock`, `l1`), `cosine`,
    /// `minkowski:P` (`minkowski` alone is p = 2, as scikit-learn), `chebyshev`, `haversine`.
    fn from_str(s: &str) -> Result<Self> {
        let lower = s.trim().to_ascii_lowercase();
        let kind = match lower.as_str() {
            "euclidean" | "l2" => MetricKind::Euclidean,
            "sqeuclidean" => MetricKind::SqEuclidean,
            "manhattan" | "cityblock" | "l1" => MetricKind::Manhattan,
            "cosine" => MetricKind::Cosine,
            "minkowski" => MetricKind::Minkowski(2.0),
            "chebyshev" | "linf" => MetricKind::Minkowski(f64::INFINITY),
            "haversine" => MetricKind::Haversine,
            other => match other.strip_prefix("minkowski:") {
                Some(p) => {
                    let p: f64 = p.parse().map_err(|_| {
                        Error::param("metric", s, "Minkowski's p must be a number, e.g. minkowski:3")
                    })?;
                    MetricKind::Minkowski(p)
                }
                None => {
                    return Err(Error::param(
                        "metric",
                        s,
                        format!("unknown metric; expected one of {}", MetricKind::NAMES.join(", ")),
                    ))
                }
            },
        };
        kind.validate()?;
        Ok(kind)
    }
}

impl Metric for MetricKind {
    fn name(&self) -> String {
        self.to_string()
    }

    fn distance<F: Scalar>(&self, a: &[F], b: &[F]) -> F {
        debug_assert_eq!(a.len(), b.len());
        match *self {
            MetricKind::Euclidean => F::sqeuclidean(a, b).sqrt(),
            MetricKind::SqEuclidean => F::sqeuclidean(a, b),
            MetricKind::Manhattan => F::manhattan(a, b),
            MetricKind::Cosine => cosine_from_parts(F::dot(a, b), F::dot(a, a), F::dot(b, b)),
            MetricKind::Minkowski(p) => minkowski(a, b, p),
            MetricKind::Haversine => F::from_f64_lossy(haversine_km(
                a[0].to_f64_exact(),
                a[1].to_f64_exact(),
                b[0].to_f64_exact(),
                b[1].to_f64_exact(),
            )),
        }
    }

    fn kind(&self) -> Option<MetricKind> {
        Some(*self)
    }

    fn check_dim(&self, d: usize) -> Result<()> {
        if d == 0 {
            return Err(Error::EmptyInput {
                what: "points have 0 columns".into(),
            });
        }
        if *self == MetricKind::Haversine && d != 2 {
            return Err(Error::ShapeMismatch {
                what: "haversine input columns (latitude, longitude in degrees)".into(),
                expected: "2".into(),
                got: d.to_string(),
            });
        }
        self.validate()
    }
}

/// Cosine distance from a·b, a·a and b·b, with the zero-vector conventions of this module.
pub(crate) fn cosine_from_parts<F: Scalar>(ab: F, aa: F, bb: F) -> F {
    let zero = F::zero();
    match (aa > zero, bb > zero) {
        (false, false) => zero,
        (true, true) => {
            let s = ab / (aa.sqrt() * bb.sqrt());
            (F::one() - s).max(zero).min(F::one() + F::one())
        }
        _ => F::one(),
    }
}

fn minkowski<F: Scalar>(a: &[F], b: &[F], p: f64) -> F {
    if p == 1.0 {
        return F::manhattan(a, b);
    }
    if p == 2.0 {
        return F::sqeuclidean(a, b).sqrt();
    }
    if p.is_infinite() {
        return a
            .iter()
            .zip(b)
            .fold(F::zero(), |m, (&x, &y)| m.max((x - y).abs()));
    }
    let diffs = a.iter().zip(b).map(|(&x, &y)| (x - y).to_f64_exact().abs());
    // Integer p (the usual 3, 4, ...) by repeated multiplication, far cheaper than powf.
    let s: f64 = if p.fract() == 0.0 && p <= 64.0 {
        diffs.map(|d| d.powi(p as i32)).sum()
    } else {
        diffs.map(|d| d.powf(p)).sum()
    };
    F::from_f64_lossy(s.powf(1.0 / p))
}

/// Great-circle distance in km between two (latitude, longitude) points in degrees.
pub fn haversine_km(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    haversine_prepared(&GeoPoint::new(lat1, lon1), &GeoPoint::new(lat2, lon2))
}

/// A (latitude, longitude) point prepared for haversine: radians and the cosine of the
/// latitude, computed once per point instead of once per pair.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GeoPoint {
    phi: f64,
    lambda: f64,
    cos_phi: f64,
}

impl GeoPoint {
    pub(crate) fn new(lat: f64, lon: f64) -> Self {
        let phi = lat.to_radians();
        GeoPoint {
            phi,
            lambda: lon.to_radians(),
            cos_phi: phi.cos(),
        }
    }
}

pub(crate) fn haversine_prepared(a: &GeoPoint, b: &GeoPoint) -> f64 {
    let h = ((b.phi - a.phi) * 0.5).sin().powi(2)
        + a.cos_phi * b.cos_phi * ((b.lambda - a.lambda) * 0.5).sin().powi(2);
    2.0 * EARTH_RADIUS_KM * h.clamp(0.0, 1.0).sqrt().asin()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Numbers in a metric's name and in parameter errors read as written, not as 300 digits.
    #[test]
    fn numbers_in_names_and_messages_are_readable() {
        let e = crate::error::Error::param("p", 1e-300, "must be at least 1").to_string();
        assert!(e.contains("1e-300") && e.len() < 80, "{e}");
        let e = crate::error::Error::param("k", u64::MAX, "too many").to_string();
        assert!(e.contains("18446744073709551615"), "an integer stays exact: {e}");
        assert_eq!(MetricKind::Minkowski(1e-300).to_string(), "minkowski:1e-300");
        assert_eq!(MetricKind::Minkowski(3.0).to_string(), "minkowski:3");
    }

    #[test]
    fn parses_names_and_rejects_unknown() {
        assert_eq!("Euclidean".parse::<MetricKind>().unwrap(), MetricKind::Euclidean);
        assert_eq!("cityblock".parse::<MetricKind>().unwrap(), MetricKind::Manhattan);
        assert_eq!(
            "minkowski:3".parse::<MetricKind>().unwrap(),
            MetricKind::Minkowski(3.0)
        );
        assert_eq!(
            "chebyshev".parse::<MetricKind>().unwrap(),
            MetricKind::Minkowski(f64::INFINITY)
        );
        let e = "foo".parse::<MetricKind>().unwrap_err().to_string();
        assert!(e.contains("metric = foo") && e.contains("euclidean"), "{e}");
        assert!("minkowski:0.5".parse::<MetricKind>().is_err());
        assert!("minkowski:x".parse::<MetricKind>().is_err());
    }

    #[test]
    fn haversine_known_distance() {
        // Paris (48.8566, 2.3522) to London (51.5074, -0.1278): about 343.5 km.
        let d = MetricKind::Haversine.distance(&[48.8566f64, 2.3522], &[51.5074, -0.1278]);
        assert!((d - 343.56).abs() < 0.1, "{d}");
        // A quarter of a meridian.
        let q = haversine_km(0.0, 0.0, 90.0, 0.0);
        assert!((q - EARTH_RADIUS_KM * std::f64::consts::FRAC_PI_2).abs() < 1e-9);
        assert!(MetricKind::Haversine.check_dim(3).is_err());
    }

    #[test]
    fn cosine_zero_vector_conventions() {
        let z = [0.0f64, 0.0];
        let a = [1.0f64, 0.0];
        assert_eq!(MetricKind::Cosine.distance(&z, &z), 0.0);
        assert_eq!(MetricKind::Cosine.distance(&z, &a), 1.0);
        assert_eq!(MetricKind::Cosine.distance(&a, &[-2.0, 0.0]), 2.0);
    }

    #[test]
    fn minkowski_special_cases() {
        let a = [1.0f64, -2.0, 3.0];
        let b = [0.0f64, 2.0, 1.0];
        assert_eq!(MetricKind::Minkowski(1.0).distance(&a, &b), 7.0);
        assert_eq!(MetricKind::Minkowski(f64::INFINITY).distance(&a, &b), 4.0);
        let d3 = MetricKind::Minkowski(3.0).distance(&a, &b);
        assert!((d3 - (1.0f64 + 64.0 + 8.0).powf(1.0 / 3.0)).abs() < 1e-12);
    }
}
