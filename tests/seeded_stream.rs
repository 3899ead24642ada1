//! Fixed seeds give fixed results: the generator's stream (ChaCha12 from rand_chacha) and a
//! few results that depend on it are pinned here, so a change of generator, of its stream or
//! of the order in which clustr draws is noticed instead of silently changing users' results.

use clustr::datasets::Blobs;
use clustr::kernel::RandomFourierFeatures;
use clustr::kmedoids::KMedoids;
use clustr::rng::SeededRng;
use clustr::{DenseMatrix, Fit, MetricKind};
use rand::{Rng, SeedableRng};

#[test]
fn the_generator_stream_is_chacha12() {
    let mut rng = SeededRng::seed_from_u64(42);
    let draws: Vec<u64> = (0..4).map(|_| rng.random()).collect();
    assert_eq!(draws, PINNED_DRAWS);
}

#[test]
fn seeded_results_are_pinned() {
    let blobs = Blobs::new(6, 2).seed(7).generate().unwrap();
    let first: Vec<f64> = blobs.data.row(0).to_vec();
    assert_eq!(first, PINNED_BLOB_ROW);

    let rff = RandomFourierFeatures::new(2, 3, 1.5, 11).unwrap();
    assert_eq!(rff.omega.row(0).to_vec(), PINNED_OMEGA_ROW);

    let x = Blobs::new(200, 4).seed(3).generate().unwrap().data;
    let d =
        DenseMatrix::from_points(x.view(), &MetricKind::Euclidean, &clustr::CpuBackend::default()).unwrap();
    let m = KMedoids::fasterpam(4).seed(5).fit(&d).unwrap();
    assert_eq!(m.initial_medoids, PINNED_INITIAL_MEDOIDS);
}

const PINNED_DRAWS: [u64; 4] = [
    9713269763989775522,
    10011513049433592189,
    11740708795755607249,
    7487565853151867058,
];
const PINNED_BLOB_ROW: [f64; 2] = [-7.8948877714951395, 0.6034874929204722];
const PINNED_OMEGA_ROW: [f64; 2] = [-0.45257366355886325, 0.8259217381997733];
const PINNED_INITIAL_MEDOIDS: [usize; 4] = [198, 67, 35, 1];
