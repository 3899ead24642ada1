//! Sample weights in every k-medoids method: the loss Σₒ wₒ·d(o, medoid of o). Integer weights
//! equal repeating the rows; small cases against brute force; bad weights refused.

mod common;

use clustr::kmedoids::{Clara, Clarans, Init, KMedoids, KMedoidsModel};
use clustr::{DenseMatrix, Dissimilarity, Fit, MetricKind, OnTheFly};
use ndarray::Array2;
use rand::{Rng, SeedableRng};

/// Integer points in the plane.
fn int_points(rng: &mut clustr::rng::SeededRng, n: usize) -> Array2<f64> {
    Array2::from_shape_fn((n, 2), |_| rng.random_range(0..20) as f64)
}

/// The Manhattan matrix of `x`: whole numbers, so every loss below is exact in f64.
fn manhattan(x: &Array2<f64>) -> Array2<f64> {
    let n = x.nrows();
    Array2::from_shape_fn((n, n), |(i, j)| {
        (x[[i, 0]] - x[[j, 0]]).abs() + (x[[i, 1]] - x[[j, 1]]).abs()
    })
}

/// Each row `w[i]` times, in order, and the original of each repeated row.
fn repeated(x: &Array2<f64>, w: &[usize]) -> (Array2<f64>, Vec<usize>) {
    let origin: Vec<usize> = (0..x.nrows())
        .flat_map(|i| std::iter::repeat_n(i, w[i]))
        .collect();
    (
        Array2::from_shape_fn((origin.len(), 2), |(r, c)| x[[origin[r], c]]),
        origin,
    )
}

/// Σₒ wₒ·d(o, nearest medoid), by definition.
fn weighted_loss<D: Dissimilarity<Value = f64>>(d: &D, w: &[f64], medoids: &[usize]) -> f64 {
    (0..d.len())
        .map(|o| w[o] * medoids.iter().map(|&m| d.get(o, m)).fold(f64::INFINITY, f64::min))
        .sum()
}

/// A method that does not draw at random: a swap method from BUILD, or CLARA with samples
/// that hold every row.
#[derive(Clone)]
enum Deterministic {
    Swap(KMedoids),
    Clara(Clara),
}

impl Deterministic {
    fn all(k: usize) -> Vec<(&'static str, Self)> {
        let swap = |m: KMedoids| Deterministic::Swap(m.init(Init::Build));
        let clara = |c: Clara| Deterministic::Clara(c.sample_size(10_000));
        vec![
            ("pam", swap(KMedoids::pam(k))),
            ("fastpam1", swap(KMedoids::fastpam1(k))),
            ("fastpam2", swap(KMedoids::fastpam2(k))),
            ("fastpam2 fasttol 0", swap(KMedoids::fastpam2(k).fasttol(0.0))),
            ("fasterpam", swap(KMedoids::fasterpam(k))),
            ("alternating", swap(KMedoids::alternating(k))),
            ("clara", clara(Clara::new(k))),
            ("fastclara", clara(Clara::fastclara(k))),
            ("fasterclara", clara(Clara::fasterclara(k))),
        ]
    }

    fn fit(&self, d: &DenseMatrix<'_, f64>, w: Option<&[f64]>) -> KMedoidsModel<f64> {
        match (self.clone(), w) {
            (Deterministic::Swap(m), Some(w)) => m.sample_weight(w.to_vec()).fit(d),
            (Deterministic::Swap(m), None) => m.fit(d),
            (Deterministic::Clara(c), Some(w)) => c.sample_weight(w.to_vec()).fit(d),
            (Deterministic::Clara(c), None) => c.fit(d),
        }
        .unwrap()
    }
}

#[test]
fn integer_weights_equal_repeated_rows() {
    let mut rng = clustr::rng::SeededRng::seed_from_u64(22);
    for case in 0..60 {
        let n = rng.random_range(4..30);
        let k = rng.random_range(1..n.min(6));
        let x = int_points(&mut rng, n);
        let counts: Vec<usize> = (0..n).map(|_| rng.random_range(1..4)).collect();
        let w: Vec<f64> = counts.iter().map(|&c| c as f64).collect();
        let (xr, origin) = repeated(&x, &counts);
        let (d, dr) = (
            DenseMatrix::new(manhattan(&x)).unwrap(),
            DenseMatrix::new(manhattan(&xr)).unwrap(),
        );
        let first_copy: Vec<usize> = (0..n)
            .map(|i| origin.iter().position(|&o| o == i).unwrap())
            .collect();
        for (name, method) in Deterministic::all(k) {
            let what = format!("case {case}, n {n}, k {k}, {name}");
            let weighted = method.fit(&d, Some(&w));
            let rows = method.fit(&dr, None);
            let mapped: Vec<usize> = rows.medoids.iter().map(|&m| origin[m]).collect();
            assert_eq!(weighted.medoids, mapped, "{what}: medoids");
            assert_eq!(weighted.loss, rows.loss, "{what}: loss");
            // The same labels up to ties (the swap phase keeps the incumbent of a tie, the
            // weighted fit's relabelling the lowest position).
            for (o, &r) in first_copy.iter().enumerate() {
                let (a, b) = (weighted.labels[o] as usize, rows.labels[r] as usize);
                assert_eq!(
                    d.get(o, weighted.medoids[a]),
                    d.get(o, weighted.medoids[b]),
                    "{what}: label of {o}"
                );
            }
            assert_eq!(
                weighted.loss,
                weighted_loss(&d, &w, &weighted.medoids),
                "{what}: loss by definition"
            );
        }
        // An integer dissimilarity keeps its exact integer loss.
        let di = DenseMatrix::new(manhattan(&x).mapv(|v| v as i32)).unwrap();
        let dri = DenseMatrix::new(manhattan(&xr).mapv(|v| v as i32)).unwrap();
        let weighted = KMedoids::fasterpam(k)
            .init(Init::Build)
            .sample_weight(w.clone())
            .fit(&di)
            .unwrap();
        let rows = KMedoids::fasterpam(k).init(Init::Build).fit(&dri).unwrap();
        assert_eq!(weighted.loss, rows.loss, "case {case}: integer loss");
        assert_eq!(
            weighted.medoids,
            rows.medoids.iter().map(|&m| origin[m]).collect::<Vec<_>>()
        );
    }
}

/// The smallest weighted loss over every set of k medoids.
fn exhaustive<D: Dissimilarity<Value = f64>>(d: &D, w: &[f64], k: usize) -> f64 {
    fn go<D: Dissimilarity<Value = f64>>(d: &D, w: &[f64], k: usize, from: usize, m: &mut Vec<usize>) -> f64 {
        if m.len() == k {
            return weighted_loss(d, w, m);
        }
        let mut best = f64::INFINITY;
        for x in from..d.len() {
            m.push(x);
            best = best.min(go(d, w, k, x + 1, m));
            m.pop();
        }
        best
    }
    go(d, w, k, 0, &mut Vec::new())
}

/// The reported loss is the weighted loss of the medoids, every label a nearest medoid, and
/// with `local` no single swap lowers the weighted loss.
fn assert_weighted_result<D: Dissimilarity<Value = f64>>(
    d: &D,
    w: &[f64],
    m: &KMedoidsModel<f64>,
    local: bool,
    what: &str,
) {
    let loss = weighted_loss(d, w, &m.medoids);
    assert!(
        (m.loss - loss).abs() <= 1e-12 * loss,
        "{what}: loss {} vs {loss}",
        m.loss
    );
    for o in 0..d.len() {
        let best = m
            .medoids
            .iter()
            .map(|&q| d.get(o, q))
            .fold(f64::INFINITY, f64::min);
        assert_eq!(
            d.get(o, m.medoids[m.labels[o] as usize]),
            best,
            "{what}: label of {o}"
        );
    }
    if local {
        for x in (0..d.len()).filter(|x| !m.medoids.contains(x)) {
            for i in 0..m.medoids.len() {
                let mut t = m.medoids.clone();
                t[i] = x;
                assert!(
                    weighted_loss(d, w, &t) >= loss * (1.0 - 1e-12),
                    "{what}: swap ({i}, {x}) improves"
                );
            }
        }
    }
}

#[test]
fn weighted_methods_against_brute_force() {
    let mut rng = clustr::rng::SeededRng::seed_from_u64(7);
    let mut optimal = 0;
    for case in 0..40 {
        let n = rng.random_range(6..14);
        let k = rng.random_range(2..4);
        let x = Array2::from_shape_fn((n, 2), |_| rng.random_range(-5.0..5.0));
        let w: Vec<f64> = (0..n).map(|_| rng.random_range(0.05..5.0)).collect();
        let d = DenseMatrix::from_points(x.view(), &MetricKind::Euclidean, &clustr::AnyBackend::default())
            .unwrap();
        let best = exhaustive(&d, &w, k);
        let what = |m: &str| format!("case {case}, n {n}, k {k}, {m}");
        for algo in [
            KMedoids::pam(k),
            KMedoids::fastpam1(k),
            KMedoids::fastpam2(k).seed(case),
            KMedoids::fasterpam(k).seed(case),
            KMedoids::fasterpam(k).shuffle(true).seed(case),
        ] {
            let m = algo.clone().sample_weight(w.clone()).fit(&d).unwrap();
            assert_weighted_result(&d, &w, &m, true, &what(algo.name()));
            assert!(m.loss >= best * (1.0 - 1e-12));
            optimal += usize::from(m.loss <= best * (1.0 + 1e-12));
        }
        let alt = KMedoids::alternating(k)
            .seed(case)
            .sample_weight(w.clone())
            .fit(&d)
            .unwrap();
        assert_weighted_result(&d, &w, &alt, false, &what("alternating"));
        // FastCLARANS trying every candidate ends in a local optimum.
        let fc = Clarans::fastclarans(k).maxneighbor(n as f64).seed(case);
        let m = fc.sample_weight(w.clone()).fit(&d).unwrap();
        assert_weighted_result(&d, &w, &m, true, &what("fastclarans"));
        let m = Clarans::new(k)
            .seed(case)
            .sample_weight(w.clone())
            .fit(&d)
            .unwrap();
        assert_weighted_result(&d, &w, &m, false, &what("clarans"));
        for c in [Clara::new(k), Clara::fastclara(k), Clara::fasterclara(k)] {
            let m = c
                .sample_size(k + 2)
                .seed(case)
                .sample_weight(w.clone())
                .fit(&d)
                .unwrap();
            assert_weighted_result(&d, &w, &m, false, &what("clara, small samples"));
        }
    }
    // Swap-local optima are usually global on such small sets.
    assert!(optimal >= 180, "{optimal} of 200 runs optimal");
}

#[test]
fn a_heavy_point_pulls_the_medoid() {
    let x = ndarray::array![[0.0], [1.0], [2.0], [10.0]];
    let d =
        DenseMatrix::from_points(x.view(), &MetricKind::Euclidean, &clustr::AnyBackend::default()).unwrap();
    let w = vec![1.0, 1.0, 1.0, 100.0];
    for algo in [KMedoids::pam(1), KMedoids::fasterpam(1), KMedoids::alternating(1)] {
        assert_eq!(algo.clone().fit(&d).unwrap().medoids, vec![1], "{}", algo.name());
        let m = algo.clone().sample_weight(w.clone()).fit(&d).unwrap();
        assert_eq!(
            (m.medoids, m.loss),
            (vec![3], 10.0 + 9.0 + 8.0),
            "{}",
            algo.name()
        );
    }
    for c in [Clara::new(1), Clara::fasterclara(1)] {
        assert_eq!(
            c.clone().sample_weight(w.clone()).fit(&d).unwrap().medoids,
            vec![3]
        );
    }
    assert_eq!(
        Clarans::new(1).sample_weight(w.clone()).fit(&d).unwrap().medoids,
        vec![3]
    );
    // Points with CLARA: the weighted fit runs on distances computed on the fly.
    let m = Clara::fasterclara(1)
        .sample_weight(w.clone())
        .fit_points(x.view(), &MetricKind::Euclidean)
        .unwrap();
    assert_eq!((m.medoids, m.loss), (vec![3], 27.0));
    let m = KMedoids::fasterpam(1)
        .sample_weight(w)
        .fit_points(x.view(), &MetricKind::Euclidean)
        .unwrap();
    assert_eq!(m.medoids, vec![3]);
}

#[test]
fn zero_weight_points_are_labelled_by_their_nearest_medoid() {
    let x = ndarray::array![
        [0.0, 0.0],
        [0.5, 0.0],
        [10.0, 0.0],
        [10.5, 0.0],
        [4.0, 0.0],
        [6.0, 0.0]
    ];
    let w = vec![1.0, 1.0, 1.0, 1.0, 0.0, 0.0];
    let d = OnTheFly::new(x.view(), MetricKind::Euclidean).unwrap();
    for algo in [KMedoids::pam(2), KMedoids::fasterpam(2).init(Init::Build)] {
        let m = algo.sample_weight(w.clone()).fit(&d).unwrap();
        let (a, b) = (m.labels[0], m.labels[2]);
        assert_ne!(a, b);
        assert_eq!(m.labels, vec![a, a, b, b, a, b]);
        assert_eq!(m.loss, 1.0);
    }
}

#[test]
fn weighted_results_do_not_depend_on_thread_count() {
    let x = clustr::datasets::load("digits").unwrap().data;
    let d =
        DenseMatrix::from_points(x.view(), &MetricKind::Euclidean, &clustr::AnyBackend::default()).unwrap();
    let w: Vec<f64> = (0..x.nrows()).map(|i| 1.0 + (i % 7) as f64 / 3.0).collect();
    let run = |t: usize| {
        common::in_pool(t, || {
            let swap = [KMedoids::fasterpam(20), KMedoids::fastpam2(10), KMedoids::pam(3)]
                .map(|a| a.seed(3).sample_weight(w.clone()).fit(&d).unwrap());
            let clara = Clara::fasterclara(10)
                .seed(3)
                .sample_weight(w.clone())
                .fit(&d)
                .unwrap();
            let clarans = Clarans::fastclarans(10)
                .seed(3)
                .sample_weight(w.clone())
                .fit(&d)
                .unwrap();
            (swap, clara, clarans)
        })
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(3));
}

#[test]
fn bad_weights_are_refused() {
    let d = DenseMatrix::new(ndarray::array![[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]]).unwrap();
    let di = DenseMatrix::new(ndarray::array![[0, 1, 2], [1, 0, 1], [2, 1, 0]]).unwrap();
    for (w, why) in [
        (vec![1.0, -1.0, 1.0], "negative"),
        (vec![1.0, f64::NAN, 1.0], "non-finite"),
        (vec![0.0, 0.0, 0.0], "all 0"),
        (vec![1.0, 1.0], "length"),
    ] {
        let errors = [
            KMedoids::fasterpam(2).sample_weight(w.clone()).fit(&d).err(),
            Clara::fasterclara(2).sample_weight(w.clone()).fit(&d).err(),
            Clarans::fastclarans(2).sample_weight(w.clone()).fit(&d).err(),
            KMedoids::pam(2).sample_weight(w.clone()).fit(&di).err(),
        ];
        for e in errors {
            let e = e.unwrap_or_else(|| panic!("{why}: accepted"));
            assert!(e.is_input_error(), "{why}: {e}");
        }
    }
    // Whole weights only with an integer dissimilarity (its loss is exact).
    let e = KMedoids::pam(2)
        .sample_weight(vec![1.0, 0.5, 1.0])
        .fit(&di)
        .unwrap_err();
    assert!(e.to_string().contains("whole weights"), "{e}");
    assert!(KMedoids::pam(2)
        .sample_weight(vec![1.0, 0.5, 1.0])
        .fit(&d)
        .is_ok());
}
