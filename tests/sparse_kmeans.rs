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
                // the same fit from centres moved in
                let mut moved_in = KMeans::new(k).algorithm(alg);
                moved_in.sample_weight = weights.clone();
                assert_eq!(
                    moved_in.fit_sparse_from(x, c.clone()).unwrap(),
                    s,
                    "{what}: moved in"
                );
                assert!(moved_in
                    .fit_sparse_from(x, c.slice(ndarray::s![.., 1..]).to_owned())
                    .is_err());
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

/// Mini-batch k-means on sparse rows makes the same draws, batches and updates as on their
/// dense form: the same labels, centres and counts up to rounding, whole fits and partial fits.
#[test]
fn minibatch_on_sparse_rows_equals_minibatch_on_their_dense_form() {
    use clustr::kmeans::MiniBatchKMeans;
    // (columns rescaled: rows of equal norm would leave a row sharing no term with two
    // centres at exactly tied distances, decided by rounding)
    let mut m = tfidf(2500, 300, 10, 6);
    m.map_values(|j, v| v * (1.0 + (j % 37) as f64 / 10.0));
    let x = m.view();
    let dense = x.to_dense();
    let w: Vec<f64> = (0..x.nrows()).map(|i| 0.5 + (i % 5) as f64).collect();
    let close = |a: &Array2<f64>, b: &Array2<f64>| {
        a.iter()
            .zip(b)
            .all(|(p, q)| (p - q).abs() <= 1e-9 * (1.0 + q.abs()))
    };
    for (k, init, weights, rr) in [
        (25, KMeansInit::Given(starts(x, 25)), None, 0.0),
        (6, KMeansInit::Given(starts(x, 6)), None, 0.0),
        (6, KMeansInit::Given(starts(x, 6)), None, 0.3),
        (6, KMeansInit::KMeansPlusPlus, None, 0.0),
        (6, KMeansInit::KMeansPlusPlus, None, 0.3),
        (6, KMeansInit::Random, Some(w.clone()), 0.3),
    ] {
        let mut est = MiniBatchKMeans::new(k)
            .init(init)
            .batch_size(200)
            .max_iter(4)
            .reassignment_ratio(rr)
            .seed(11);
        est.sample_weight = weights;
        let s = est.fit(&x).unwrap();
        let d = est.fit(&dense.view()).unwrap();
        let differ = (0..x.nrows()).filter(|&i| s.labels[i] != d.labels[i]).count();
        assert_eq!(differ, 0, "k {k}, reassignment ratio {rr}");
        assert_eq!(
            (s.n_steps, s.n_iter, s.converged),
            (d.n_steps, d.n_iter, d.converged)
        );
        assert!(close(&s.centers, &d.centers), "k {k}, reassignment ratio {rr}");
        assert!((s.inertia - d.inertia).abs() <= 1e-9 * d.inertia);
        assert_eq!(s.counts, d.counts);
        // every final label is the nearest centre, and predict agrees
        assert_eq!(s.predict(&x).unwrap(), s.labels);
        let t = s.transform_sparse(x).unwrap();
        for (i, &l) in s.labels.iter().enumerate() {
            let best = t.row(i).iter().copied().fold(f64::INFINITY, f64::min);
            assert!(t[[i, l as usize]] <= best * (1.0 + 1e-12) + 1e-12, "row {i}");
        }
    }
    // partial fits on the same batches
    let batches: Vec<Vec<usize>> = (0..6)
        .map(|b| (0..150).map(|r| (b * 397 + r * 13) % 2500).collect())
        .collect();
    let est = MiniBatchKMeans::new(9)
        .init(KMeansInit::Given(starts(x, 9)))
        .seed(2);
    let (mut s, mut d) = (None, None::<clustr::kmeans::MiniBatchKMeansModel<f64>>);
    for rows in &batches {
        let sb = x.select_rows(rows);
        let db = dense.select(ndarray::Axis(0), rows);
        match (&mut s, &mut d) {
            (None, None) => {
                s = Some(est.partial_fit_sparse(sb.view()).unwrap());
                d = Some(est.partial_fit(db.view()).unwrap());
            }
            (Some(s), Some(d)) => {
                s.partial_fit_sparse(sb.view(), None).unwrap();
                d.partial_fit(db.view()).unwrap();
            }
            _ => unreachable!(),
        }
        let (s, d) = (s.as_ref().unwrap(), d.as_ref().unwrap());
        assert_eq!(s.labels, d.labels);
        assert!(close(&s.centers, &d.centers));
        assert!((s.inertia - d.inertia).abs() <= 1e-9 * d.inertia);
    }
}

#[test]
fn minibatch_on_sparse_rows_refuses_what_it_cannot_do() {
    use clustr::kmeans::MiniBatchKMeans;
    let m = tfidf(300, 50, 5, 7);
    let x = m.view();
    assert!(MiniBatchKMeans::new(301).fit(&x).is_err());
    let huge = Csr::<f64>::from_triplets(3, 2, &[0, 1, 2], &[0, 1, 0], &[f64::MAX, 1.0, -f64::MAX]).unwrap();
    assert!(MiniBatchKMeans::new(2).fit(&huge.view()).is_err());
    let mut model = MiniBatchKMeans::new(3).seed(1).fit(&x).unwrap();
    let before = model.clone();
    let narrow = Csr::<f64>::from_triplets(2, 49, &[0], &[1], &[1.0]).unwrap();
    assert!(model.partial_fit_sparse(narrow.view(), None).is_err());
    assert!(
        Csr::<f64>::from_triplets(0, 50, &[], &[], &[]).is_err(),
        "no empty batch"
    );
    let far = Csr::<f64>::from_triplets(1, 50, &[0], &[3], &[f64::MAX]).unwrap();
    assert!(model.partial_fit_sparse(far.view(), None).is_err());
    assert_eq!(model, before, "a refused batch leaves the model as it was");
}
