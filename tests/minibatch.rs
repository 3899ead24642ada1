//! Mini-batch k-means: the update rule against a direct computation, quality against full
//! k-means, the same result in memory and streamed from a file and for any thread count,
//! partial_fit, and errors.

use clustr::data::NpyRows;
use clustr::kmeans::{KMeans, KMeansInit, MiniBatchKMeans};
use clustr::{Error, Fit, Predict};
use ndarray::{array, Array2, Axis};
use ndarray_npy::write_npy;

fn blobs(n: usize, k: usize, seed: u64) -> (Array2<f64>, Vec<i64>) {
    let d = clustr::datasets::Blobs::new(n, k)
        .n_features(4)
        .cluster_std(0.8)
        .seed(seed)
        .generate()
        .unwrap();
    (d.data, d.target)
}

/// With zero counts and the whole data as one batch, a step is a Lloyd step: every centre
/// moves to the mean of its points; a second batch moves it to the running mean of both.
#[test]
fn one_step_is_the_running_mean() {
    let x: Array2<f64> = array![[0.0, 0.0], [1.0, 0.0], [10.0, 10.0], [11.0, 12.0], [0.0, 2.0]];
    let init = array![[0.5, 0.5], [10.0, 10.0]];
    let params = MiniBatchKMeans::new(2)
        .init(KMeansInit::Given(init))
        .batch_size(5)
        .reassignment_ratio(0.0);
    let mut m = params.partial_fit(x.view()).unwrap();
    assert_eq!(m.labels, vec![0, 0, 1, 1, 0]);
    assert_eq!(m.centers, array![[1.0 / 3.0, 2.0 / 3.0], [10.5, 11.0]]);
    assert_eq!(m.counts, vec![3.0, 2.0]);
    // Initial inertia: the batch against the initial centres.
    assert!((m.inertia - (0.5 + 0.5 + 0.0 + 5.0 + 2.5)).abs() < 1e-12);
    m.partial_fit(array![[4.0f64, 2.0]].view()).unwrap();
    assert_eq!(m.labels, vec![0]);
    assert_eq!(m.counts, vec![4.0, 2.0]);
    assert!((m.centers[[0, 0]] - 5.0 / 4.0).abs() < 1e-15 && (m.centers[[0, 1]] - 4.0 / 4.0).abs() < 1e-15);
    assert_eq!(m.n_steps, 2);
}

#[test]
fn close_to_full_kmeans_on_blobs() {
    let (x, truth) = blobs(20_000, 6, 3);
    let full = KMeans::new(6).seed(1).fit(&x.view()).unwrap();
    let mb = MiniBatchKMeans::new(6)
        .batch_size(512)
        .seed(1)
        .fit(&x.view())
        .unwrap();
    let ari = clustr::eval::adjusted_rand_score(&truth, &mb.labels).unwrap();
    assert!(ari > 0.99, "ARI {ari}");
    assert!(
        mb.inertia <= full.inertia * 1.02,
        "{} vs {}",
        mb.inertia,
        full.inertia
    );
    assert_eq!(mb.labels, mb.predict(&x.view()).unwrap());
    // Labels point to the nearest centre and the inertia is their squared distance.
    let dist = mb.transform(x.view()).unwrap();
    let mut inertia = 0.0;
    for (i, row) in dist.axis_iter(Axis(0)).enumerate() {
        let best = row.iter().copied().fold(f64::INFINITY, f64::min);
        assert_eq!(row[mb.labels[i] as usize], best);
        inertia += best * best;
    }
    assert!((inertia - mb.inertia).abs() <= 1e-9 * inertia);
    assert!(mb.n_steps > 0 && mb.n_iter >= 1);
}

#[test]
fn streamed_file_equals_memory_and_threads_do_not_matter() {
    let (x, _) = blobs(5_000, 4, 8);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.npy");
    write_npy(&path, &x).unwrap();
    let params = MiniBatchKMeans::new(4)
        .batch_size(100)
        .chunk_size(700)
        .max_no_improvement(None)
        .max_iter(3)
        .seed(5);
    let mem = params.fit(&x.view()).unwrap();
    let file = params.fit_npy::<f64>(&NpyRows::open(&path).unwrap()).unwrap();
    assert_eq!(mem, file);
    assert!(!mem.converged && mem.n_iter == 3);
    assert_eq!(mem.n_steps, 3 * (7 * 7 + 1));
    let two = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap()
        .install(|| params.fit(&x.view()).unwrap());
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| params.fit(&x.view()).unwrap());
    assert_eq!(one, two);
    // f32 data from an f32 file.
    let x32 = x.mapv(|v| v as f32);
    let p32 = dir.path().join("x32.npy");
    write_npy(&p32, &x32).unwrap();
    let m32 = params.fit_npy::<f32>(&NpyRows::open(&p32).unwrap()).unwrap();
    assert_eq!(m32, params.fit(&x32.view()).unwrap());
}

#[test]
fn tolerance_and_no_improvement_stop_early() {
    let (x, _) = blobs(20_000, 3, 2);
    let m = MiniBatchKMeans::new(3).seed(3).fit(&x.view()).unwrap();
    // 20 steps per epoch; no improvement for 10 steps stops it within a few epochs.
    assert!(m.converged && m.n_iter <= 3, "{} steps", m.n_steps);
    let t = MiniBatchKMeans::new(3)
        .tol(1e-3)
        .max_no_improvement(None)
        .seed(3)
        .fit(&x.view())
        .unwrap();
    assert!(t.converged);
}

#[test]
fn partial_fit_learns_from_a_stream() {
    let (x, truth) = blobs(6_000, 3, 4);
    let mut batches = x.axis_chunks_iter(Axis(0), 300);
    let mut m = MiniBatchKMeans::new(3)
        .seed(2)
        .partial_fit(batches.next().unwrap())
        .unwrap();
    for b in batches {
        m.partial_fit(b).unwrap();
    }
    assert_eq!(m.n_steps, 20);
    let ari = clustr::eval::adjusted_rand_score(&truth, &m.predict(&x.view()).unwrap()).unwrap();
    assert!(ari > 0.99, "ARI {ari}");
    assert!(matches!(
        m.partial_fit(Array2::<f64>::zeros((3, 2)).view()),
        Err(Error::ShapeMismatch { .. })
    ));
}

#[test]
fn empty_clusters_are_reseeded() {
    // Two far centres start on one side: one gets no points and is re-seeded from the batch.
    let (x, truth) = blobs(4_000, 2, 6);
    let far = array![[1e3, 1e3, 1e3, 1e3], [-1e3, -1e3, -1e3, -1e3]];
    let m = MiniBatchKMeans::new(2)
        .init(KMeansInit::Given(far))
        .seed(1)
        .fit(&x.view())
        .unwrap();
    let ari = clustr::eval::adjusted_rand_score(&truth, &m.labels).unwrap();
    assert!(ari > 0.99, "ARI {ari}");
}

#[test]
fn bad_input_is_an_error() {
    let (mut x, _) = blobs(1_000, 2, 1);
    let fit = |p: MiniBatchKMeans, x: &Array2<f64>| p.fit(&x.view()).unwrap_err();
    assert!(matches!(
        fit(MiniBatchKMeans::new(0), &x),
        Error::InvalidParameter { .. }
    ));
    assert!(matches!(
        fit(MiniBatchKMeans::new(2).batch_size(0), &x),
        Error::InvalidParameter { .. }
    ));
    // an init_size below k means 3k rows, as scikit-learn (which warns)
    let small = MiniBatchKMeans::new(2)
        .init_size(1)
        .seed(4)
        .fit(&x.view())
        .unwrap();
    let three_k = MiniBatchKMeans::new(2)
        .init_size(6)
        .seed(4)
        .fit(&x.view())
        .unwrap();
    assert_eq!(small, three_k);
    assert!(matches!(
        fit(
            MiniBatchKMeans::new(2).init(KMeansInit::Given(Array2::zeros((2, 3)))),
            &x
        ),
        Error::ShapeMismatch { .. }
    ));
    x[[777, 2]] = f64::INFINITY;
    assert!(matches!(
        fit(MiniBatchKMeans::new(2).chunk_size(100), &x),
        Error::NonFinite { row: 777, col: 2, .. }
    ));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.npy");
    write_npy(&path, &x.t().as_standard_layout().reversed_axes()).unwrap();
    let err = MiniBatchKMeans::new(2)
        .fit_npy::<f64>(&NpyRows::open(&path).unwrap())
        .unwrap_err();
    assert!(err.to_string().contains("C-order"), "{err}");
}

/// Weighted steps: each centre moves to the weighted running mean of its points (the oracle
/// computed here), the inertia is weighted, and integer weights count as copies.
#[test]
fn weighted_steps_are_the_weighted_running_mean() {
    let x: Array2<f64> = array![[0.0, 0.0], [1.0, 0.0], [10.0, 10.0], [11.0, 12.0], [0.0, 2.0]];
    let w = vec![1.0, 3.0, 0.5, 1.5, 0.0];
    let init = array![[0.5, 0.5], [10.0, 10.0]];
    let params = MiniBatchKMeans::new(2)
        .init(KMeansInit::Given(init.clone()))
        .batch_size(5)
        .reassignment_ratio(0.0);
    let mut m = params
        .clone()
        .sample_weight(w.clone())
        .partial_fit(x.view())
        .unwrap();
    assert_eq!(m.labels, vec![0, 0, 1, 1, 0]);
    assert_eq!(m.counts, vec![4.0, 2.0]);
    assert_eq!(
        m.centers,
        array![[3.0 / 4.0, 0.0], [(5.0 + 16.5) / 2.0, (5.0 + 18.0) / 2.0]]
    );
    // Weighted inertia against the initial centres: 1·0.5 + 3·0.5 + 0.5·0 + 1.5·5 + 0·2.5.
    assert!((m.inertia - 9.5).abs() < 1e-12);
    m.partial_fit_weighted(array![[4.0f64, 2.0]].view(), Some(&[2.0]))
        .unwrap();
    assert_eq!(m.counts, vec![6.0, 2.0]);
    assert!((m.centers[[0, 0]] - (0.75 * 4.0 + 8.0) / 6.0).abs() < 1e-15);
    assert!((m.centers[[0, 1]] - 4.0 / 6.0).abs() < 1e-15);
    // Integer weights: the same step as the rows repeated.
    let int_w = [2usize, 1, 3, 1, 1];
    let rows: Vec<usize> = (0..5).flat_map(|i| std::iter::repeat_n(i, int_w[i])).collect();
    let copies = params
        .clone()
        .batch_size(8)
        .partial_fit(x.select(Axis(0), &rows).view())
        .unwrap();
    let weighted = params
        .sample_weight(int_w.iter().map(|&v| v as f64).collect())
        .partial_fit(x.view())
        .unwrap();
    assert_eq!(weighted.centers, copies.centers);
    assert_eq!(weighted.counts, copies.counts);
    assert!((weighted.inertia - copies.inertia).abs() < 1e-12);
    assert!(m
        .partial_fit_weighted(array![[4.0f64, 2.0]].view(), Some(&[-1.0]))
        .is_err());
}

#[test]
fn weighted_fit_invariants_and_errors() {
    let (x, _) = blobs(5_000, 4, 9);
    let w: Vec<f64> = (0..x.nrows()).map(|i| (i % 5) as f64 * 0.5).collect();
    let start = KMeans::new(4).seed(2).max_iter(1).fit(&x.view()).unwrap().centers;
    let params = MiniBatchKMeans::new(4).batch_size(256).seed(3);
    // From given centres, weights all 1 are the unweighted fit, bit for bit.
    let given = params.clone().init(KMeansInit::Given(start));
    let plain = given.fit(&x.view()).unwrap();
    let ones = given
        .clone()
        .sample_weight(vec![1.0; x.nrows()])
        .fit(&x.view())
        .unwrap();
    assert_eq!(plain, ones);
    for init in [KMeansInit::KMeansPlusPlus, KMeansInit::Random] {
        let m = params
            .clone()
            .init(init)
            .sample_weight(w.clone())
            .fit(&x.view())
            .unwrap();
        // The final inertia is Σ wᵢ·‖xᵢ − nearest centre‖², labels the nearest centres.
        let t = m.transform(x.view()).unwrap();
        let mut inertia = 0.0;
        for (i, row) in t.rows().into_iter().enumerate() {
            let best = row.iter().cloned().fold(f64::INFINITY, f64::min);
            assert_eq!(row[m.labels[i] as usize], best);
            inertia += w[i] * best * best;
        }
        assert!((inertia - m.inertia).abs() <= 1e-9 * inertia);
        assert!((m.counts.iter().sum::<f64>()) > 0.0);
        // Same for any thread count.
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| params.clone().sample_weight(w.clone()).fit(&x.view()).unwrap());
        assert_eq!(
            one,
            params.clone().sample_weight(w.clone()).fit(&x.view()).unwrap()
        );
    }
    let fit = |w: Vec<f64>| params.clone().sample_weight(w).fit(&x.view());
    assert!(matches!(fit(w[1..].to_vec()), Err(Error::ShapeMismatch { .. })));
    assert!(fit(vec![0.0; x.nrows()]).is_err());
    let mut neg = w.clone();
    neg[7] = -0.5;
    assert!(fit(neg).is_err());
}
