//! k-means on sparse rows: the same fit as on the dense form of the same rows (which equals
//! scikit-learn's; python/tests checks the sparse fit against scikit-learn's directly), every
//! label the nearest centre, and the same result for any thread count.

use clustr::data::{Csr, CsrView};
use clustr::kmeans::{Algorithm, KMeans, KMeansInit};
use clustr::{Fit, Predict};
use ndarray::Array2;
use rand::{Rng, SeedableRng};

/// A TF-IDF-like matrix: `per_row` terms per row drawn from a Zipf-like law over `d` terms,
/// rows in a few topics (each topic shifts the draws), L2-normalised rows.
fn tfidf(n: usize, d: usize, per_row: usize, seed: u64) -> Csr<f64> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let topic = i % 5;
        let mut terms: Vec<(usize, f64)> = Vec::new();
        for _ in 0..per_row {
            let u: f64 = rng.random();
            let rank = ((d as f64).powf(u) - 1.0) as usize; // ∝ 1/rank
            let j = (rank + topic * d / 5) % d;
            match terms.iter_mut().find(|t| t.0 == j) {
                Some(t) => t.1 += 1.0,
                None => terms.push((j, 1.0 + rng.random::<f64>())),
            }
        }
        let norm = terms.iter().map(|t| t.1 * t.1).sum::<f64>().sqrt();
        for (j, v) in terms {
            rows.push(i);
            cols.push(j);
            vals.push(v / norm);
        }
    }
    Csr::from_triplets(n, d, &rows, &cols, &vals).unwrap()
}

fn starts(x: CsrView<f64>, k: usize) -> Array2<f64> {
    let dense = x.to_dense();
    let rows: Vec<usize> = (0..k).map(|j| j * 7 + 3).collect();
    dense.select(ndarray::Axis(0), &rows)
}

#[test]
fn sparse_fits_equal_dense_fits_from_the_same_centres() {
    let m = tfidf(900, 400, 12, 1);
    let x = m.view();
    let dense = x.to_dense();
    for k in [1, 5, 17] {
        let c = starts(x, k);
        let w: Vec<f64> = (0..x.nrows()).map(|i| 0.5 + (i % 7) as f64).collect();
        for weights in [None, Some(w)] {
            let reference = {
                let mut e = KMeans::new(k)
                    .init(KMeansInit::Given(c.clone()))
                    .algorithm(Algorithm::Lloyd);
                e.sample_weight = weights.clone();
                e.fit(&dense.view()).unwrap()
            };
            for alg in [
                Algorithm::Lloyd,
                Algorithm::Elkan,
                Algorithm::Hamerly,
                Algorithm::Auto,
            ] {
                let what = format!("k={k} weights={} {alg:?}", weights.is_some());
                let mut e = KMeans::new(k).init(KMeansInit::Given(c.clone())).algorithm(alg);
                e.sample_weight = weights.clone();
                let s = e.fit(&x).unwrap();
                assert_eq!(s.labels, reference.labels, "{what}: labels");
                assert_eq!(s.n_iter, reference.n_iter, "{what}: iterations");
                assert!(
                    (s.inertia - reference.inertia).abs() <= 1e-9 * reference.inertia,
                    "{what}: inertia {} vs {}",
                    s.inertia,
                    reference.inertia
                );
                for (a, b) in s.centers.iter().zip(&reference.centers) {
                    assert!((a - b).abs() <= 1e-12, "{what}: centres {a} vs {b}");
                }
                assert_eq!(
                    s.algorithm,
                    if alg == Algorithm::Auto {
                        Algorithm::Lloyd
                    } else {
                        alg
                    }
                );
                // predict and transform on sparse rows equal the dense model's
                assert_eq!(s.predict(&x).unwrap(), s.labels, "{what}: predict");
                let t = s.transform_sparse(x).unwrap();
                let td = s.transform(dense.view()).unwrap();
                for (a, b) in t.iter().zip(&td) {
                    assert!((a - b).abs() <= 1e-9, "{what}: transform {a} vs {b}");
                }
            }
        }
    }
}

#[test]
fn every_label_is_the_nearest_centre_and_empty_clusters_are_refilled() {
    let m = tfidf(500, 200, 8, 2);
    let x = m.view();
    let dense = x.to_dense();
    // Duplicate starting centres leave clusters empty in the first iteration.
    let mut c = starts(x, 6);
    for j in 3..6 {
        let first = c.row(0).to_owned();
        c.row_mut(j).assign(&first);
    }
    let s = KMeans::new(6)
        .init(KMeansInit::Given(c))
        .max_iter(50)
        .fit(&x)
        .unwrap();
    let mut counts = [0usize; 6];
    for (i, &l) in s.labels.iter().enumerate() {
        counts[l as usize] += 1;
        let d = |j: usize| {
            dense
                .row(i)
                .iter()
                .zip(s.centers.row(j))
                .map(|(a, b)| (a - b).powi(2))
                .sum::<f64>()
        };
        let best = (0..6).map(d).fold(f64::INFINITY, f64::min);
        assert!(d(l as usize) <= best + 1e-12, "row {i}");
    }
    assert!(counts.iter().all(|&c| c > 0), "{counts:?}");
    let inertia: f64 = s
        .labels
        .iter()
        .enumerate()
        .map(|(i, &l)| {
            dense
                .row(i)
                .iter()
                .zip(s.centers.row(l as usize))
                .map(|(a, b)| (a - b).powi(2))
                .sum::<f64>()
        })
        .sum();
    assert!((s.inertia - inertia).abs() <= 1e-9 * inertia);
}

#[test]
fn seeded_fits_do_not_depend_on_the_thread_count() {
    let m = tfidf(3000, 500, 10, 3);
    let x = m.view();
    let fit = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| KMeans::new(8).n_init(2).seed(5).fit(&x).unwrap())
    };
    let (one, two) = (fit(1), fit(2));
    assert_eq!(one, two);
}

#[test]
fn seeding_sparse_rows_picks_what_seeding_their_dense_form_picks() {
    // (well-separated blobs stored as sparse rows: no near-ties between the two forms' sums)
    let ds = clustr::datasets::Blobs::new(2000, 7)
        .n_features(6)
        .seed(9)
        .generate()
        .unwrap();
    let sparse = Csr::from_dense(ds.data.view()).unwrap();
    for seed in 0..3 {
        let s = KMeans::new(7).seed(seed).max_iter(3).fit(&sparse.view()).unwrap();
        let d = KMeans::new(7)
            .seed(seed)
            .max_iter(3)
            .algorithm(Algorithm::Lloyd)
            .fit(&ds.data.view())
            .unwrap();
        assert_eq!(s.labels, d.labels, "seed {seed}");
        assert!((s.inertia - d.inertia).abs() <= 1e-9 * d.inertia);
    }
}

#[test]
fn float32_rows_and_bad_inputs() {
    let m = tfidf(400, 100, 6, 4);
    let x = m.view();
    let (indptr, indices): (Vec<usize>, Vec<u32>) = (
        (0..=x.nrows())
            .map(|i| if i == 0 { 0 } else { x.slice_rows(0..i).nnz() })
            .collect(),
        (0..x.nrows()).flat_map(|i| x.row(i).0.to_vec()).collect(),
    );
    let data32: Vec<f32> = (0..x.nrows())
        .flat_map(|i| x.row(i).1.iter().map(|&v| v as f32).collect::<Vec<_>>())
        .collect();
    let x32 = CsrView::new(100, &indptr, &indices, &data32).unwrap();
    // One assignment from the same centres: each label the nearest centre up to f32 rounding.
    let c = starts(x, 4);
    let a = KMeans::new(4)
        .init(KMeansInit::Given(c.clone()))
        .max_iter(1)
        .fit(&x32)
        .unwrap();
    let b = KMeans::new(4).init(KMeansInit::Given(c)).fit(&x).unwrap();
    let dense = x.to_dense();
    for (i, &l) in a.labels.iter().enumerate() {
        let d = |j: usize| {
            dense
                .row(i)
                .iter()
                .zip(a.centers.row(j))
                .map(|(p, &q)| (p - q as f64).powi(2))
                .sum::<f64>()
        };
        let best = (0..4).map(d).fold(f64::INFINITY, f64::min);
        assert!(d(l as usize) <= best + 1e-5, "row {i}");
    }
    // k above n, centres of another width, a model asked about rows of another width
    assert!(KMeans::new(401).fit(&x).is_err());
    assert!(KMeans::new(2)
        .init(KMeansInit::Given(Array2::zeros((2, 99))))
        .fit(&x)
        .is_err());
    let narrow = Csr::<f64>::from_triplets(2, 50, &[0], &[1], &[1.0]).unwrap();
    assert!(b.predict(&narrow.view()).is_err());
    // values too large for squared distances
    let huge = Csr::<f64>::from_triplets(3, 2, &[0, 1, 2], &[0, 1, 0], &[f64::MAX, 1.0, -f64::MAX]).unwrap();
    assert!(KMeans::new(2).fit(&huge.view()).is_err());
}
