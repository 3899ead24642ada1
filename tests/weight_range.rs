//! Sample weights over the whole range of f64 (issue #38). Every weighted method computes
//! with the weights divided by a power of two ([`clustr::data::validate::ScaledWeights`]), so:
//! random finite weights — ±f64::MAX/2, f64::MAX, subnormals, zeros, mixed signs where a method
//! takes them — give a fit with finite results or an input error, never a panic, a NaN or an
//! infinity; and multiplying every weight by a power of two changes no label or centre, and the
//! objective by exactly that power (where it stays finite). The number of cases follows
//! `PROPTEST_CASES` as the other property tests.

use clustr::data::validate::ScaledWeights;
use clustr::density::{Dbscan, Optics};
use clustr::kernel::kpkm::RffKpkm;
use clustr::kernel::power::PowerKMeans;
use clustr::kmeans::{Algorithm, KMeans, MiniBatchKMeans};
use clustr::kmedoids::{Clara, KMedoids};
use clustr::mixture::gmm::GaussianMixture;
use clustr::{Clustering, DenseMatrix, Fit, MetricKind};
use ndarray::Array2;
use proptest::prelude::*;

/// 12 points in two groups of 2-d points (well apart, a few duplicates).
fn points() -> Array2<f64> {
    Array2::from_shape_fn((12, 2), |(i, j)| {
        let group = if i < 6 { 0.0 } else { 20.0 };
        group + ((i * 7 + j * 3) % 5) as f64 * 0.5
    })
}

/// A weight anywhere in f64's range, the edges favoured.
fn weight() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::MAX),
        Just(f64::MAX / 2.0),
        Just(1e307),
        Just(5e305),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
        Just(1e-310),
        Just(0.0),
        Just(1.0),
        (-300.0f64..300.0).prop_map(|e| 10f64.powf(e)),
    ]
}

/// The outcome of a fit: finite results, or an input error (the command line's exit 2).
fn judge<M: Clustering>(what: &str, r: clustr::Result<M>) -> Result<(), TestCaseError> {
    match r {
        Ok(m) => {
            if let Some(loss) = m.loss() {
                prop_assert!(loss.is_finite(), "{}: loss {}", what, loss);
            }
            prop_assert_eq!(m.labels().len(), 12, "{}", what);
            Ok(())
        }
        Err(e) => {
            prop_assert!(e.is_input_error(), "{}: not an input error: {}", what, e);
            Ok(())
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(24)
    ))]

    #[test]
    fn every_weighted_method_takes_weights_over_the_whole_range(
        w in proptest::collection::vec(weight(), 12),
        signs in proptest::collection::vec(any::<bool>(), 12),
    ) {
        let x = points();
        let v = x.view();
        let w = w.to_vec();
        judge("kmeans", KMeans::new(2).sample_weight(w.clone()).fit(&v))?;
        judge("kmeans lloyd", KMeans::new(2).algorithm(Algorithm::Lloyd).sample_weight(w.clone()).fit(&v))?;
        judge("kmeans elkan", KMeans::new(2).algorithm(Algorithm::Elkan).sample_weight(w.clone()).fit(&v))?;
        judge("minibatch", MiniBatchKMeans::new(2).batch_size(4).sample_weight(w.clone()).fit(&v))?;
        judge("gmm", GaussianMixture::new(2).sample_weight(w.clone()).fit(&v))?;
        let d = DenseMatrix::from_points(v, &MetricKind::Euclidean, &clustr::CpuBackend::default()).unwrap();
        judge("fasterpam", KMedoids::fasterpam(2).sample_weight(w.clone()).fit(&d))?;
        judge("clara", Clara::new(2).sample_weight(w.clone()).fit(&d))?;
        judge("power-kmeans", PowerKMeans::new(2).sample_weight(w.clone()).fit(&v))?;
        judge("rff-kpkm", RffKpkm::new(2).sample_weight(w.clone()).fit(&v))?;
        judge("optics", Optics::new(2).sample_weight(w.clone()).fit(&v))?;
        let mixed: Vec<f64> = w.iter().zip(&signs).map(|(v, s)| if *s { -v } else { *v }).collect();
        judge("dbscan", Dbscan::new(2.0).sample_weight(mixed).fit(&v))?;
    }

    #[test]
    fn a_power_of_two_on_the_weights_changes_only_the_objective(
        w in proptest::collection::vec(0.5f64..4.0, 12),
        e in -1000i32..1000,
        seed in 0u64..100,
    ) {
        let x = points();
        let times = |w: &[f64]| -> Vec<f64> {
            w.iter().map(|v| clustr::data::validate::times_power_of_two(*v, e)).collect()
        };
        let fit = |w: Vec<f64>| KMeans::new(2).seed(seed).n_init(2).sample_weight(w).fit(&x.view());
        let base = fit(w.clone()).unwrap();
        match fit(times(&w)) {
            Ok(m) => {
                prop_assert_eq!(&m.labels, &base.labels);
                prop_assert_eq!(&m.centers, &base.centers);
                let expected = clustr::data::validate::times_power_of_two(base.inertia, e);
                prop_assert_eq!(m.inertia, expected);
            }
            Err(err) => {
                // Only an inertia beyond f64's range is refused.
                let expected = clustr::data::validate::times_power_of_two(base.inertia, e);
                prop_assert!(expected.is_infinite() && err.is_input_error(), "{}", err);
            }
        }
    }
}

/// Scaling is exact: the weights divided by a power of two so the largest is in [1, 2).
#[test]
fn scaled_weights_keep_their_ratios() {
    let s = ScaledWeights::new(&[f64::MAX, -f64::MAX / 4.0, 3.0, 0.0]);
    assert_eq!(s.exponent, 1023);
    assert_eq!(s.weights[0], f64::MAX / 2f64.powi(1023));
    assert_eq!(s.weights[1], -s.weights[0] / 4.0);
    assert_eq!(s.weights[3], 0.0);
    let tiny = ScaledWeights::new(&[5e-324, 1e-323]);
    assert_eq!(tiny.weights, vec![0.5, 1.0]);
    // A subnormal that is no power of two: exact ratios, the largest in [1, 2).
    let odd = ScaledWeights::new(&[3e-320, 1e-320]);
    assert!((1.0..2.0).contains(&odd.weights[0]), "{:?}", odd.weights);
    assert_eq!(odd.weights[0] / odd.weights[1], 3e-320 / 1e-320);
    // A non-finite weight is left for the validation to name.
    assert_eq!(ScaledWeights::new(&[f64::INFINITY, 1.0]).exponent, 0);
    assert_eq!(ScaledWeights::new(&[1.0, 1.5]).exponent, 0);
    assert!(s.unscale(4.0, "inertia").is_err());
    assert_eq!(s.unscale(0.25, "inertia").unwrap(), 0.25 * 2f64.powi(1023));
}

/// DBSCAN with weights alternating ±1e308 (their running sums overflow in plain f64): the same
/// clusters as the weights ±1, whose neighbourhood sums are small whole numbers, exact —
/// what scikit-learn gives on that rescaled problem.
#[test]
fn dbscan_weights_at_the_edge_equal_the_rescaled_problem() {
    let x = Array2::from_shape_fn((60, 2), |(i, j)| {
        ((i * 13 + j * 7) % 17) as f64 * 0.3 + if i < 30 { 0.0 } else { 9.0 }
    });
    let sign = |i: usize| if (i / 2).is_multiple_of(2) { 1.0 } else { -1.0 };
    let big: Vec<f64> = (0..60).map(|i| sign(i) * 1e308).collect();
    let unit: Vec<f64> = (0..60).map(sign).collect();
    // The data make plain f64 sums go wrong: some neighbourhood's running sum in row order
    // overflows to +inf (core) where its exact sum is below min_samples.
    let near = |i: usize, j: usize| {
        let (a, b) = (x[[i, 0]] - x[[j, 0]], x[[i, 1]] - x[[j, 1]]);
        (a * a + b * b).sqrt() <= 1.0
    };
    let wrong = (0..60).any(|i| {
        let hood = (0..60).filter(|&j| near(i, j));
        let plain = hood.clone().fold(0.0, |s, j| s + big[j]) >= 3.0;
        let exact = hood.map(|j| unit[j]).sum::<f64>() >= 1.0;
        plain != exact
    });
    assert!(wrong, "the data do not exercise the overflow");
    let mut a = Dbscan::new(1.0).sample_weight(big);
    a.min_samples = 3.0;
    let mut b = Dbscan::new(1.0).sample_weight(unit);
    b.min_samples = 1.0; // (whole sums: ≥ 1 exactly where 1e308 × the sum ≥ 3)
    let (a, b) = (a.fit(&x.view()).unwrap(), b.fit(&x.view()).unwrap());
    assert_eq!(a.labels, b.labels);
    assert!(a.labels.iter().any(|&l| l >= 0), "{:?}", a.labels);
}
