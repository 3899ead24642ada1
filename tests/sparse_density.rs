//! DBSCAN on sparse rows and on a precomputed sparse neighbourhood graph: the labels of DBSCAN
//! on the dense form of the same rows (python/tests checks them against scikit-learn's).

use clustr::data::Csr;
use clustr::density::Dbscan;
use clustr::{Fit, MetricKind};
use ndarray::Array2;
use rand::{Rng, SeedableRng};

/// Rows in a few groups: each group's rows share most of its terms, with noise terms.
fn grouped(n: usize, d: usize, seed: u64) -> Array2<f64> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut x = Array2::zeros((n, d));
    for i in 0..n {
        let g = i % 4;
        for t in 0..6 {
            if rng.random::<f64>() < 0.8 {
                x[[i, g * 6 + t]] = 1.0 + rng.random::<f64>();
            }
        }
        let noise = rng.random_range(0..d);
        x[[i, noise]] += rng.random::<f64>();
    }
    x
}

#[test]
fn sparse_dbscan_equals_dense_dbscan() {
    let x = grouped(400, 60, 1);
    let s = Csr::from_dense(x.view()).unwrap();
    for (metric, eps) in [
        (MetricKind::Euclidean, 1.2),
        (MetricKind::SqEuclidean, 1.4),
        (MetricKind::Cosine, 0.15),
        (MetricKind::Cosine, 1.0),
    ] {
        for min_samples in [1, 4, 12] {
            let est = Dbscan::new(eps).min_samples(min_samples).metric(metric);
            let dense = est.fit(&x.view()).unwrap();
            let sparse = est.fit(&s.view()).unwrap();
            assert_eq!(
                sparse.labels, dense.labels,
                "{metric} eps {eps} min_samples {min_samples}"
            );
            assert_eq!(sparse.core_sample_indices, dense.core_sample_indices);
        }
    }
    // a small-norm row shares no term with its neighbours but is within eps by the norms alone
    let mut y = x.clone();
    y.row_mut(0).fill(0.0);
    y[[0, 59]] = 0.01;
    let s = Csr::from_dense(y.view()).unwrap();
    let est = Dbscan::new(1.9).min_samples(3);
    assert_eq!(
        est.fit(&s.view()).unwrap().labels,
        est.fit(&y.view()).unwrap().labels
    );
}

#[test]
fn a_precomputed_graph_gives_the_labels_of_its_points() {
    let x = grouped(300, 60, 2);
    let eps = 1.2;
    // the radius graph of the points (entries within eps, the diagonal not stored)
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..x.nrows() {
        for j in 0..x.nrows() {
            let d = x
                .row(i)
                .iter()
                .zip(x.row(j))
                .map(|(a, b)| (a - b).powi(2))
                .sum::<f64>()
                .sqrt();
            if i != j && d <= eps {
                r.push(i);
                c.push(j);
                v.push(d);
            }
        }
    }
    let g = Csr::from_triplets(300, 300, &r, &c, &v).unwrap();
    for min_samples in [2, 5] {
        let est = Dbscan::new(eps).min_samples(min_samples);
        assert_eq!(
            est.fit_graph(g.view()).unwrap().labels,
            est.fit(&x.view()).unwrap().labels
        );
    }
    // not square, a negative distance
    let wide = Csr::<f64>::from_triplets(2, 3, &[0], &[1], &[1.0]).unwrap();
    assert!(Dbscan::new(1.0).fit_graph(wide.view()).is_err());
    let neg = Csr::<f64>::from_triplets(2, 2, &[0], &[1], &[-1.0]).unwrap();
    assert!(Dbscan::new(1.0).fit_graph(neg.view()).is_err());
}

#[test]
fn cosine_refuses_an_all_zero_row_and_other_metrics_are_refused() {
    let x = grouped(50, 30, 3);
    let mut y = x.clone();
    y.row_mut(7).fill(0.0);
    let s = Csr::from_dense(y.view()).unwrap();
    let e = Dbscan::new(0.3)
        .metric(MetricKind::Cosine)
        .fit(&s.view())
        .unwrap_err();
    assert!(e.to_string().contains("row 7"), "{e}");
    let s = Csr::from_dense(x.view()).unwrap();
    assert!(Dbscan::new(0.3)
        .metric(MetricKind::Manhattan)
        .fit(&s.view())
        .is_err());
}

#[test]
fn sparse_optics_equals_dense_optics() {
    use clustr::density::Optics;
    let x = grouped(300, 60, 4);
    let s = Csr::from_dense(x.view()).unwrap();
    for metric in [MetricKind::Euclidean, MetricKind::Cosine] {
        for min_samples in [3, 8] {
            let est = Optics::new(min_samples).metric(metric);
            let dense = est.fit(&x.view()).unwrap();
            let sparse = est.fit(&s.view()).unwrap();
            assert_eq!(sparse.ordering, dense.ordering, "{metric} {min_samples}");
            assert_eq!(sparse.labels, dense.labels, "{metric} {min_samples}");
            for (a, b) in sparse.reachability.iter().zip(&dense.reachability) {
                assert!(a == b || (a - b).abs() <= 1e-12, "{a} vs {b}");
            }
        }
    }
}
