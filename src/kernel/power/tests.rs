//! Power k-means' tests.

use super::*;
use crate::datasets::Blobs;
use crate::scalar::Scalar;

/// s = −∞ is k-means' hard assignment: one-hot at the nearest (the lowest index among
/// equals), and the power mean is the minimum.
#[test]
fn weights_at_minus_infinity_are_hard() {
    let mut w = [9.0; 4];
    assert_eq!(
        power_weights(&[3.0, 1.0, 2.0, 1.0], f64::NEG_INFINITY, &mut w),
        1.0
    );
    assert_eq!(w, [0.0, 1.0, 0.0, 0.0]);
    assert_eq!(power_mean(&[3.0, 1.0, 2.0, 1.0], f64::NEG_INFINITY), 1.0);
}

/// A converged run ends at the hard-assignment fixed point: every label the nearest
/// centre, every centre the mean of its points, the objective their squared distances.
#[test]
fn converged_runs_end_at_the_kmeans_fixed_point() {
    let x = Blobs::new(400, 4)
        .n_features(3)
        .cluster_std(2.5)
        .seed(3)
        .generate()
        .unwrap()
        .data;
    for (max_iter, n_init) in [(200, 1), (3, 1), (200, 4)] {
        let m = PowerKMeans::new(4)
            .max_iter(max_iter)
            .n_init(n_init)
            .fit_rows(x.view())
            .unwrap();
        assert!(m.fit.converged, "max_iter {max_iter}");
        assert_eq!(m.fit.annealed, max_iter == 200);
        let mut objective = 0.0;
        for (j, c) in m.centers.rows().into_iter().enumerate() {
            let members: Vec<usize> = (0..x.nrows()).filter(|&i| m.fit.labels[i] == j as i64).collect();
            let mean = x.select(Axis(0), &members).mean_axis(Axis(0)).unwrap();
            for (a, b) in c.iter().zip(&mean) {
                assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "centre {j}: {a} vs {b}");
            }
        }
        for (i, r) in x.rows().into_iter().enumerate() {
            let d: Vec<f64> = m
                .centers
                .rows()
                .into_iter()
                .map(|c| (&r - &c).mapv(|v| v * v).sum())
                .collect();
            let nearest = (1..4).fold(0, |b, j| if d[j] < d[b] { j } else { b });
            assert_eq!(m.fit.labels[i], nearest as i64);
            objective += d[nearest];
        }
        assert!((m.fit.objective - objective).abs() <= 1e-9 * objective);
    }
}

/// Restarts keep the lowest objective; restart 0 is the single run.
#[test]
fn restarts_keep_the_best_run() {
    let x = Blobs::new(300, 6)
        .n_features(2)
        .cluster_std(3.0)
        .seed(8)
        .generate()
        .unwrap()
        .data;
    let one = PowerKMeans::new(6).seed(2).n_init(1).fit_rows(x.view()).unwrap();
    let many = PowerKMeans::new(6).seed(2).n_init(8).fit_rows(x.view()).unwrap();
    assert!(many.fit.objective <= one.fit.objective);
    let again = PowerKMeans::new(6).seed(2).n_init(8).fit_rows(x.view()).unwrap();
    assert_eq!(many, again);
    let given = PowerKMeans::new(6)
        .init(PowerInit::Given(one.seeds.clone()))
        .n_init(8);
    assert_eq!(given.fit_rows(x.view()).unwrap().fit, one.fit);
    assert!(PowerKMeans::new(6).n_init(0).fit_rows(x.view()).is_err());
}

/// Spec acceptance 2: the closed form against a finite difference, scale invariance,
/// s = 1, s = −50, and no NaN or infinity at the extremes.
#[test]
fn weights_are_the_power_mean_gradient() {
    let d = [1.0, 2.5, 4.0, 0.7];
    for s in [-0.5, -1.0, -3.0, 0.5] {
        let mut w = [0.0; 4];
        power_weights(&d, s, &mut w);
        for j in 0..4 {
            let h = 1e-6;
            let (mut up, mut down) = (d, d);
            up[j] += h;
            down[j] -= h;
            let fd = (power_mean(&up, s) - power_mean(&down, s)) / (2.0 * h);
            assert!((w[j] - fd).abs() < 1e-6, "s {s} j {j}: {} vs {fd}", w[j]);
        }
        let mut w10 = [0.0; 4];
        power_weights(&d.map(|v| v * 10.0), s, &mut w10);
        assert!(w.iter().zip(&w10).all(|(a, b)| (a - b).abs() < 1e-12));
    }
    let mut w = [0.0; 4];
    power_weights(&d, 1.0, &mut w);
    assert!(w.iter().all(|&v| (v - 0.25).abs() < 1e-15));
    // One-hot at the nearest centroid, whose weight tends to k^(−1/s) (→ 1 as s → −∞).
    power_weights(&d, -50.0, &mut w);
    assert!(
        (w[3] - 4f64.powf(1.0 / 50.0)).abs() < 1e-6 && w[..3].iter().all(|&v| v < 1e-6),
        "{w:?}"
    );
    for s in [-1.0, -50.0, -500.0] {
        let d = [1e-12, 1e12, 3.0, 0.0];
        power_weights(&d, s, &mut w);
        assert!(w.iter().all(|v| v.is_finite() && *v >= 0.0), "s {s}: {w:?}");
        assert!(power_mean(&d, s).is_finite());
    }
}

fn blobs() -> Array2<f64> {
    crate::datasets::Blobs::new(600, 4)
        .n_features(3)
        .seed(3)
        .generate()
        .unwrap()
        .data
}

/// Spec acceptance 3: for a fixed s, no centroid update increases f_s.
#[test]
fn mm_never_increases_the_objective_for_fixed_s() {
    let x = blobs();
    for s0 in [-0.5, -2.0, -8.0] {
        let sched = Schedule {
            s0,
            eta: 1.0,
            tol: 0.0,
            max_iter: 40,
            ..Schedule::default()
        };
        let m = PowerKMeans::new(4)
            .schedule(sched)
            .seed(2)
            .fit_rows(x.view())
            .unwrap();
        let o = &m.fit.objectives;
        assert!(
            o.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-12)),
            "s0 {s0}: {o:?}"
        );
    }
}

#[test]
fn anneals_and_labels_the_nearest_centroid() {
    let x = blobs();
    let m = PowerKMeans::new(4).seed(1).n_init(1).fit_rows(x.view()).unwrap();
    assert!(m.fit.converged);
    assert_eq!(m.fit.annealing_steps, (m.fit.n_iter - m.fit.hard_iter) / 2);
    let expected_s = POWER_KMEANS_S0 * 1.04f64.powi(m.fit.annealing_steps as i32);
    assert!((m.fit.s - expected_s).abs() < 1e-12);
    for (i, &l) in m.fit.labels.iter().enumerate() {
        let d =
            |j: usize| f64::sqeuclidean(x.row(i).as_slice().unwrap(), m.centers.row(j).as_slice().unwrap());
        assert!((0..4).all(|j| d(l as usize) <= d(j)));
    }
    let again = PowerKMeans::new(4).seed(1).fit_rows(x.view()).unwrap();
    assert_eq!(m, again);
}
