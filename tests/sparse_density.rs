//! DBSCAN, OPTICS and HDBSCAN on sparse rows and on a precomputed sparse neighbourhood graph,
//! the distance matrix of sparse rows and k-medoids on them: the results of the same methods on
//! the dense form of the same rows (python/tests checks them against scikit-learn's).

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
        (MetricKind::Manhattan, 3.0),
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
            let clusters = dense.labels.iter().max().map_or(0, |&l| l + 1);
            let noise = dense.labels.iter().filter(|&&l| l < 0).count();
            if min_samples == 4 {
                assert!(clusters >= 1 && noise < 200, "{metric} eps {eps}: {noise} noise");
            }
        }
    }
    // a small-norm row shares no term with its neighbours but is within eps by the norms alone
    let mut y = x.clone();
    y.row_mut(0).fill(0.0);
    y[[0, 59]] = 0.01;
    let s = Csr::from_dense(y.view()).unwrap();
    for (metric, eps) in [(MetricKind::Euclidean, 1.9), (MetricKind::Manhattan, 4.0)] {
        let est = Dbscan::new(eps).min_samples(3).metric(metric);
        assert_eq!(
            est.fit(&s.view()).unwrap().labels,
            est.fit(&y.view()).unwrap().labels,
            "{metric}"
        );
    }
}

/// The radius graph of the points: entries within `eps`, the diagonal not stored.
fn radius_graph(x: &Array2<f64>, eps: f64) -> Csr<f64> {
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
    Csr::from_triplets(x.nrows(), x.nrows(), &r, &c, &v).unwrap()
}

#[test]
fn a_precomputed_graph_gives_the_labels_of_its_points() {
    let x = grouped(300, 60, 2);
    let eps = 1.2;
    let g = radius_graph(&x, eps);
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

/// All-zero rows under cosine (at 1 from every other row, at 0 from each other, as between
/// dense rows): DBSCAN, OPTICS, HDBSCAN and the distance matrix equal their dense forms; a
/// metric not computed on sparse rows is refused.
#[test]
fn all_zero_rows_under_cosine_as_dense_rows_and_other_metrics_are_refused() {
    use clustr::density::{Hdbscan, Optics};
    let mut x = grouped(60, 30, 3);
    for i in [7, 8, 30] {
        x.row_mut(i).fill(0.0);
    }
    let s = Csr::from_dense(x.view()).unwrap();
    for eps in [0.2, 1.0] {
        let est = Dbscan::new(eps).min_samples(2).metric(MetricKind::Cosine);
        let dense = est.fit(&x.view()).unwrap();
        assert_eq!(est.fit(&s.view()).unwrap().labels, dense.labels, "eps {eps}");
        assert_eq!(dense.labels[7], dense.labels[8], "eps {eps}");
        assert!(dense.labels[7] >= 0, "eps {eps}");
    }
    let est = Optics::new(3).metric(MetricKind::Cosine);
    let (a, b) = (est.fit(&s.view()).unwrap(), est.fit(&x.view()).unwrap());
    assert_eq!((a.ordering, a.labels), (b.ordering, b.labels));
    let est = Hdbscan::new(3).metric(MetricKind::Cosine);
    assert_eq!(
        est.fit(&s.view()).unwrap().labels,
        est.fit(&x.view()).unwrap().labels
    );
    let m = clustr::DenseMatrix::from_sparse_rows(s.view(), MetricKind::Cosine).unwrap();
    let rows = clustr::dissim::SparseRows::new(s.view(), MetricKind::Cosine).unwrap();
    let mut row = vec![0.0; 60];
    for i in [0, 7, 8] {
        rows.distances_from(i, &mut row);
        for (j, got) in row.iter().enumerate() {
            let dense = clustr::Metric::distance(
                &MetricKind::Cosine,
                x.row(i).as_slice().unwrap(),
                x.row(j).as_slice().unwrap(),
            );
            assert!((got - dense).abs() <= 1e-12, "{i} {j}");
            assert!((m.view()[[i, j]] - dense).abs() <= 1e-12, "{i} {j}");
        }
    }
    let e = Dbscan::new(0.3)
        .metric(MetricKind::Minkowski(f64::INFINITY))
        .fit(&s.view())
        .unwrap_err();
    assert!(e.to_string().contains("manhattan are computed"), "{e}");
}

#[test]
fn sparse_optics_equals_dense_optics() {
    use clustr::density::Optics;
    let x = grouped(300, 60, 4);
    let s = Csr::from_dense(x.view()).unwrap();
    for metric in [MetricKind::Euclidean, MetricKind::Cosine, MetricKind::Manhattan] {
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

/// OPTICS on a precomputed radius graph equals OPTICS on the points with max_eps the graph's
/// radius (every distance, or those within a finite radius); a point that knows fewer than
/// min_samples neighbours in the graph is not a core point.
#[test]
fn optics_on_a_precomputed_graph_equals_optics_on_its_points() {
    use clustr::density::Optics;
    let x = grouped(250, 60, 5);
    for radius in [f64::INFINITY, 1.5] {
        let g = radius_graph(&x, radius);
        for min_samples in [3, 8] {
            let est = Optics::new(min_samples).max_eps(radius);
            let (a, b) = (est.fit_graph(g.view()).unwrap(), est.fit(&x.view()).unwrap());
            assert_eq!(
                a.ordering, b.ordering,
                "radius {radius}, min_samples {min_samples}"
            );
            assert_eq!(a.labels, b.labels);
            let both = a.core_distances.iter().zip(&b.core_distances);
            for (p, q) in a.reachability.iter().zip(&b.reachability).chain(both) {
                assert!(p == q || (p - q).abs() <= 1e-12, "{p} vs {q}");
            }
        }
    }
    // point 0 knows two neighbours only
    let g = Csr::<f64>::from_triplets(
        4,
        4,
        &[0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3],
        &[1, 2, 0, 2, 3, 0, 1, 3, 0, 1, 2],
        &[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 9.0, 1.0, 1.0],
    )
    .unwrap();
    let m = Optics::new(4).fit_graph(g.view()).unwrap();
    assert!(m.core_distances[0].is_infinite());
    assert_eq!(m.core_distances[1], 1.0);
    assert_eq!(m.core_distances[3], 9.0);
}

/// HDBSCAN on sparse rows equals HDBSCAN on their precomputed distance matrix (the same
/// brute-force path) and on the dense rows (a tree's path), labels and probabilities.
#[test]
fn sparse_hdbscan_equals_hdbscan_on_distances_and_on_dense_rows() {
    use clustr::density::Hdbscan;
    let x = grouped(240, 60, 6);
    let s = Csr::from_dense(x.view()).unwrap();
    let n = x.nrows();
    for (metric, alpha) in [
        (MetricKind::Euclidean, 1.0),
        (MetricKind::Euclidean, 0.7),
        (MetricKind::Cosine, 1.0),
        (MetricKind::Manhattan, 1.0),
    ] {
        let d = Array2::from_shape_fn((n, n), |(i, j)| {
            let (a, b) = (x.row(i), x.row(j));
            let dot: f64 = a.iter().zip(b).map(|(p, q)| p * q).sum();
            let (aa, bb) = (a.dot(&a), b.dot(&b));
            match metric {
                _ if i == j => 0.0,
                MetricKind::Cosine => (1.0 - dot / (aa.sqrt() * bb.sqrt())).clamp(0.0, 2.0),
                MetricKind::Manhattan => a.iter().zip(b).map(|(p, q)| (p - q).abs()).sum(),
                _ => (aa + bb - 2.0 * dot).max(0.0).sqrt(),
            }
        });
        for min_samples in [4, 9] {
            let mut est = Hdbscan::new(8).metric(metric).alpha(alpha);
            est.min_samples = Some(min_samples);
            let sparse = est.fit(&s.view()).unwrap();
            let pre = est
                .fit_precomputed(&clustr::DenseMatrix::new(d.view()).unwrap())
                .unwrap();
            let what = format!("{metric} alpha {alpha} min_samples {min_samples}");
            assert_eq!(sparse.labels, pre.labels, "{what}");
            for (a, b) in sparse.probabilities.iter().zip(&pre.probabilities) {
                assert!((a - b).abs() <= 1e-9, "{what}: {a} vs {b}");
            }
            if alpha == 1.0 && metric != MetricKind::Cosine {
                assert_eq!(
                    sparse.labels,
                    est.fit(&x.view()).unwrap().labels,
                    "{what}: dense rows"
                );
            }
        }
    }
    let e = Hdbscan::new(5)
        .metric(MetricKind::Minkowski(3.0))
        .fit(&s.view())
        .unwrap_err();
    assert!(e.to_string().contains("minkowski"), "{e}");
}

/// The distance matrix of sparse rows equals the one of their dense form under every metric
/// computed on sparse rows, and k-medoids on sparse rows equals k-medoids on the dense rows.
#[test]
fn sparse_distance_matrices_and_kmedoids_equal_their_dense_forms() {
    use clustr::kmedoids::KMedoids;
    use clustr::DenseMatrix;
    let x = grouped(150, 40, 7);
    let s = Csr::from_dense(x.view()).unwrap();
    for metric in [
        MetricKind::Euclidean,
        MetricKind::SqEuclidean,
        MetricKind::Cosine,
        MetricKind::Manhattan,
    ] {
        let sparse = DenseMatrix::from_sparse_rows(s.view(), metric).unwrap();
        let dense = Array2::from_shape_fn((150, 150), |(i, j)| {
            if i == j {
                0.0
            } else {
                clustr::Metric::distance(
                    &metric,
                    x.row(i).as_slice().unwrap(),
                    x.row(j).as_slice().unwrap(),
                )
            }
        });
        for (a, b) in sparse.view().iter().zip(&dense) {
            assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "{metric}: {a} vs {b}");
        }
        let est = KMedoids::fasterpam(5).metric(metric).seed(3);
        let (a, b) = (est.fit(&s.view()).unwrap(), est.fit(&x.view()).unwrap());
        assert_eq!((a.medoids, a.labels), (b.medoids, b.labels), "{metric}");
        // the sampling methods, distances computed when needed: the on-the-fly values are the
        // matrix's, so the fit equals the one on the sparse rows' matrix
        let clara = clustr::kmedoids::Clara::fasterclara(5).metric(metric).seed(3);
        let (a, b) = (clara.fit(&s.view()).unwrap(), clara.fit(&sparse).unwrap());
        assert_eq!(
            (a.medoids, a.labels, a.loss),
            (b.medoids, b.labels, b.loss),
            "{metric}"
        );
        let clarans = clustr::kmedoids::Clarans::new(5).metric(metric).seed(3);
        let (a, b) = (clarans.fit(&s.view()).unwrap(), clarans.fit(&sparse).unwrap());
        assert_eq!(
            (a.medoids, a.labels, a.loss),
            (b.medoids, b.labels, b.loss),
            "{metric}"
        );
        let rows = clustr::dissim::SparseRows::new(s.view(), metric).unwrap();
        for (i, j) in [(0, 1), (5, 77), (149, 3), (8, 8)] {
            let on_the_fly = clustr::Dissimilarity::get(&rows, i, j);
            assert_eq!(on_the_fly, sparse.view()[[i, j]], "{metric} ({i}, {j})");
        }
        // a prediction's distances: rows against the medoids' rows
        let medoids = s.view().select_rows(&[3, 50, 99]);
        let cross = clustr::dissim::cross_distances(s.view(), medoids.view(), metric).unwrap();
        for i in 0..150 {
            for (c, &m) in [3, 50, 99].iter().enumerate().filter(|(_, &m)| m != i) {
                assert_eq!(cross[[i, c]], sparse.view()[[i, m]], "{metric} ({i}, {m})");
            }
        }
    }
    let e = DenseMatrix::from_sparse_rows(s.view(), MetricKind::Haversine).unwrap_err();
    assert!(e.to_string().contains("haversine"), "{e}");
}

/// Single linkage of sparse rows equals single linkage of their dense form: the labels of both
/// cuts and every merge height (the spanning trees may differ only between tied weights).
#[test]
fn sparse_single_linkage_equals_dense_single_linkage() {
    use clustr::density::hdbscan::{single_linkage, single_linkage_sparse, Cut};
    let x = grouped(200, 40, 9);
    let s = Csr::from_dense(x.view()).unwrap();
    for metric in [
        MetricKind::Euclidean,
        MetricKind::SqEuclidean,
        MetricKind::Cosine,
        MetricKind::Manhattan,
    ] {
        for cut in [Cut::Clusters(4), Cut::Clusters(1), Cut::Distance(0.5)] {
            let (a, ta) = single_linkage_sparse(s.view(), metric, cut).unwrap();
            let (b, tb) = single_linkage(x.view(), metric, clustr::density::IndexKind::Auto, cut).unwrap();
            assert_eq!(a, b, "{metric} {cut:?}");
            for (p, q) in ta.iter().zip(&tb) {
                assert!(
                    (p.distance - q.distance).abs() <= 1e-9,
                    "{metric}: {p:?} vs {q:?}"
                );
                assert_eq!(p.size, q.size, "{metric}");
            }
        }
    }
    let e = single_linkage_sparse(s.view(), MetricKind::Haversine, Cut::Clusters(2)).unwrap_err();
    assert!(e.to_string().contains("haversine"), "{e}");
}
