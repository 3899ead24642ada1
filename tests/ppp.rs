//! PPP: the true k on well-separated blobs, one partition for every seed, and the table.

use clustr::datasets::Blobs;
use clustr::mixture::Ppp;
use clustr::{Error, Fit};
use ndarray::Array2;

/// Five generated blob sets with well-separated clusters: (data, true k).
fn blob_sets() -> Vec<(Array2<f64>, Vec<i64>, usize)> {
    [
        (3, 2, 1, 0.8),
        (4, 2, 2, 1.0),
        (5, 3, 3, 1.0),
        (6, 4, 4, 0.7),
        (7, 5, 5, 1.2),
    ]
    .into_iter()
    .map(|(k, d, seed, std)| {
        let b = Blobs::new(100 * k, k)
            .n_features(d)
            .cluster_std(std)
            .center_box(-25.0, 25.0)
            .seed(seed)
            .generate()
            .unwrap();
        (b.data, b.target, k)
    })
    .collect()
}

#[test]
fn picks_the_true_k_on_well_separated_blobs() {
    let mut right = 0;
    for (x, truth, k) in blob_sets() {
        let m = Ppp::new(2, 8).n_runs(10).seed(1).fit(&x.view()).unwrap();
        let ari = clustr::eval::adjusted_rand_score(&truth, &m.labels).unwrap();
        eprintln!("true k = {k}: chose {} (ARI {ari:.4})", m.k);
        for r in &m.table {
            eprintln!("  {r:?}");
        }
        assert_eq!(m.table.len(), 7);
        assert!(m.table.iter().all(|r| (0.0..=1.0 + 1e-12).contains(&r.score)));
        if m.k == k {
            right += 1;
            assert!(ari > 0.99, "k = {k}: ARI {ari}");
            let frac = m.separable.iter().filter(|&&s| s).count() as f64 / x.nrows() as f64;
            assert!(
                frac > 0.9,
                "most points of well-separated blobs are separable: {frac}"
            );
        }
    }
    assert!(right >= 4, "true k on {right} of 5 sets");
}

/// 20 seeds give one partition.
#[test]
fn one_partition_for_twenty_seeds() {
    for (x, _, _) in blob_sets().into_iter().skip(2) {
        let first = Ppp::new(2, 8).seed(0).fit(&x.view()).unwrap();
        for seed in 1..20 {
            let m = Ppp::new(2, 8).seed(seed).fit(&x.view()).unwrap();
            assert_eq!(m.k, first.k, "seed {seed}");
            assert_eq!(m.labels, first.labels, "seed {seed}");
        }
    }
}

#[test]
fn bad_input_is_an_error() {
    let x = Array2::<f64>::zeros((10, 2));
    assert!(matches!(
        Ppp::new(0, 3).fit(&x.view()).unwrap_err(),
        Error::InvalidParameter { .. }
    ));
    assert!(matches!(
        Ppp::new(4, 3).fit(&x.view()).unwrap_err(),
        Error::InvalidParameter { .. }
    ));
    assert!(matches!(
        Ppp::new(2, 11).fit(&x.view()).unwrap_err(),
        Error::InvalidParameter { .. }
    ));
    assert!(matches!(
        Ppp::new(2, 3).n_runs(1).fit(&x.view()).unwrap_err(),
        Error::InvalidParameter { .. }
    ));
}
