//! The CPU backend against scalar references: every metric, both element types, every GEMM
//! mode and instruction set; nearest-centre search against brute force; thread-count
//! independence; metric axioms by property tests.

use clustr::backend::CpuBackend;
use clustr::{Backend, Metric, MetricKind};
use ndarray::{Array2, ArrayView2};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

const METRICS: [MetricKind; 7] = [
    MetricKind::Euclidean,
    MetricKind::SqEuclidean,
    MetricKind::Manhattan,
    MetricKind::Cosine,
    MetricKind::Minkowski(3.0),
    MetricKind::Minkowski(f64::INFINITY),
    MetricKind::Haversine,
];

/// Plain f64 loops, written from the definitions.
fn reference(kind: MetricKind, a: &[f64], b: &[f64]) -> f64 {
    let diff = a.iter().zip(b).map(|(x, y)| x - y);
    match kind {
        MetricKind::Euclidean => diff.map(|d| d * d).sum::<f64>().sqrt(),
        MetricKind::SqEuclidean => diff.map(|d| d * d).sum(),
        MetricKind::Manhattan => diff.map(f64::abs).sum(),
        MetricKind::Cosine => {
            let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
            let na = a.iter().map(|x| x * x).sum::<f64>().sqrt();
            let nb = b.iter().map(|x| x * x).sum::<f64>().sqrt();
            (1.0 - dot / (na * nb)).clamp(0.0, 2.0)
        }
        MetricKind::Minkowski(p) if p.is_infinite() => diff.fold(0.0, |m, d| m.max(d.abs())),
        MetricKind::Minkowski(p) => diff.map(|d| d.abs().powf(p)).sum::<f64>().powf(1.0 / p),
        MetricKind::Haversine => {
            let (p1, p2) = (a[0].to_radians(), b[0].to_radians());
            let h = ((p2 - p1) / 2.0).sin().powi(2)
                + p1.cos() * p2.cos() * ((b[1] - a[1]).to_radians() / 2.0).sin().powi(2);
            2.0 * 6371.0088 * h.sqrt().asin()
        }
    }
}

fn random_points(n: usize, d: usize, offset: f64, seed: u64, kind: MetricKind) -> Array2<f64> {
    let mut rng = clustr::rng::SeededRng::seed_from_u64(seed);
    if kind == MetricKind::Haversine {
        return Array2::from_shape_fn((n, 2), |(_, j)| {
            if j == 0 {
                rng.random_range(-85.0..85.0)
            } else {
                rng.random_range(-180.0..180.0)
            }
        });
    }
    let mut x = Array2::from_shape_fn((n, d), |_| offset + rng.random_range(-1.0..1.0));
    // Duplicate rows and near-duplicates: the cancellation-prone pairs of the GEMM form.
    for i in (0..n).step_by(7).skip(1) {
        let src = x.row(i - 1).to_owned();
        x.row_mut(i).assign(&src);
        if i % 2 == 0 {
            x[[i, 0]] += 1e-6;
        }
    }
    x
}

fn check_against_reference<F: clustr::Scalar>(
    backend: &CpuBackend,
    kind: MetricKind,
    x: &Array2<f64>,
    y: &Array2<f64>,
    tol: f64,
) {
    let xf = x.mapv(F::from_f64_lossy);
    let yf = y.mapv(F::from_f64_lossy);
    let mut out = Array2::<F>::zeros((x.nrows(), y.nrows()));
    backend
        .pairwise(xf.view(), yf.view(), &kind, out.view_mut())
        .unwrap();
    for i in 0..x.nrows() {
        for j in 0..y.nrows() {
            // The reference sees the same (rounded) inputs.
            let a: Vec<f64> = xf.row(i).iter().map(|v| v.to_f64_exact()).collect();
            let b: Vec<f64> = yf.row(j).iter().map(|v| v.to_f64_exact()).collect();
            let e = reference(kind, &a, &b);
            let g = out[[i, j]].to_f64_exact();
            let err = (g - e).abs();
            let scale = if kind == MetricKind::Cosine { 1.0 } else { e.abs() };
            assert!(
                err <= tol * scale || err <= 1e-300,
                "{kind} gemm={} {} [{i}][{j}]: {g} vs {e} (rel {})",
                backend.gemm,
                F::DTYPE,
                err / e.abs()
            );
        }
    }
}

#[test]
fn every_metric_matches_scalar_reference_f64_within_1e6() {
    for gemm in [true, false] {
        let backend = CpuBackend {
            gemm,
            ..Default::default()
        };
        for (s, kind) in METRICS.into_iter().enumerate() {
            for (d, offset) in [(3, 0.0), (16, 0.0), (33, 100.0), (64, 1e4)] {
                let x = random_points(150, d, offset, s as u64, kind);
                let y = random_points(90, d, offset, 100 + s as u64, kind);
                check_against_reference::<f64>(&backend, kind, &x, &y, 1e-6);
                // x against itself: the diagonal must be exactly 0 (cosine: 0 up to rounding).
                check_against_reference::<f64>(&backend, kind, &x, &x, 1e-6);
            }
        }
    }
}

#[test]
fn every_metric_matches_scalar_reference_f32() {
    for gemm in [true, false] {
        let backend = CpuBackend {
            gemm,
            ..Default::default()
        };
        for (s, kind) in METRICS.into_iter().enumerate() {
            let x = random_points(120, 16, 10.0, s as u64, kind);
            let tol = if kind == MetricKind::Cosine { 1e-5 } else { 1e-4 };
            check_against_reference::<f32>(&backend, kind, &x, &x, tol);
        }
    }
}

#[test]
fn gemm_without_recompute_is_clamped_at_zero() {
    let backend = CpuBackend {
        gemm: true,
        exact_recompute: false,
    };
    let x = random_points(60, 16, 1e3, 9, MetricKind::SqEuclidean);
    let mut out = Array2::<f64>::zeros((60, 60));
    backend
        .pairwise(x.view(), x.view(), &MetricKind::SqEuclidean, out.view_mut())
        .unwrap();
    assert!(out.iter().all(|&v| v >= 0.0));
}

fn brute_nearest(kind: MetricKind, x: ArrayView2<f64>, c: ArrayView2<f64>) -> Vec<(usize, f64, usize, f64)> {
    x.rows()
        .into_iter()
        .map(|r| {
            let d: Vec<f64> = c
                .rows()
                .into_iter()
                .map(|q| reference(kind, r.as_slice().unwrap(), q.as_slice().unwrap()))
                .collect();
            let mut order: Vec<usize> = (0..d.len()).collect();
            order.sort_by(|&a, &b| d[a].partial_cmp(&d[b]).unwrap().then(a.cmp(&b)));
            (order[0], d[order[0]], order[1], d[order[1]])
        })
        .collect()
}

#[test]
fn nearest_two_matches_brute_force_with_lowest_index_ties() {
    for kind in [
        MetricKind::Euclidean,
        MetricKind::SqEuclidean,
        MetricKind::Manhattan,
        MetricKind::Cosine,
    ] {
        // Integer grid data: many exact ties, all distances exact in both forms.
        let mut rng = clustr::rng::SeededRng::seed_from_u64(5);
        let x = Array2::from_shape_fn((700, 4), |_| rng.random_range(0..4) as f64);
        let mut c = Array2::from_shape_fn((9, 4), |_| rng.random_range(0..4) as f64);
        let dup = c.row(2).to_owned();
        c.row_mut(6).assign(&dup); // a duplicated centre: index 2 must win.
        for gemm in [true, false] {
            let backend = CpuBackend {
                gemm,
                ..Default::default()
            };
            let got = backend.nearest_two(x.view(), c.view(), &kind).unwrap();
            for (i, (g, e)) in got
                .iter()
                .zip(brute_nearest(kind, x.view(), c.view()))
                .enumerate()
            {
                assert_eq!(g.first.index, e.0, "{kind} gemm={gemm} point {i}");
                assert!((g.first.distance - e.1).abs() <= 1e-12 * (1.0 + e.1));
                let s = g.second.unwrap();
                assert!(
                    (s.distance - e.3).abs() <= 1e-12 * (1.0 + e.3),
                    "{kind} gemm={gemm} point {i}"
                );
                assert_eq!(s.index, e.2, "{kind} gemm={gemm} point {i} second");
            }
            let near = backend.nearest(x.view(), c.view(), &kind).unwrap();
            assert!(near.iter().zip(&got).all(|(a, b)| *a == b.first));
        }
    }
    let one = Array2::<f64>::zeros((1, 4));
    let x = Array2::<f64>::ones((3, 4));
    let r = CpuBackend::default()
        .nearest_two(x.view(), one.view(), &MetricKind::Euclidean)
        .unwrap();
    assert!(r
        .iter()
        .all(|n| n.first.index == 0 && n.second.is_none() && n.first.distance == 2.0));
}

#[test]
fn results_do_not_depend_on_thread_count() {
    let x = random_points(1100, 24, 3.0, 1, MetricKind::Euclidean).mapv(|v| v as f32);
    let c = x.slice(ndarray::s![..37, ..]).to_owned();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut out = Array2::<f32>::zeros((1100, 1100));
            CpuBackend::default()
                .pairwise(x.view(), x.view(), &MetricKind::Euclidean, out.view_mut())
                .unwrap();
            let mut cos = Array2::<f32>::zeros((1100, 37));
            CpuBackend::default()
                .pairwise(x.view(), c.view(), &MetricKind::Cosine, cos.view_mut())
                .unwrap();
            let near = CpuBackend::default()
                .nearest_two(x.view(), c.view(), &MetricKind::Euclidean)
                .unwrap();
            (out, cos, near)
        })
    };
    let (a, b, c1) = run(1);
    for t in [2, 3, 8] {
        let (a2, b2, c2) = run(t);
        assert!(
            a.iter().zip(&a2).all(|(p, q)| p.to_bits() == q.to_bits()),
            "{t} threads"
        );
        assert!(
            b.iter().zip(&b2).all(|(p, q)| p.to_bits() == q.to_bits()),
            "{t} threads"
        );
        assert_eq!(c1, c2, "{t} threads");
    }
}

#[test]
fn shape_errors_are_reported() {
    let x = Array2::<f64>::zeros((3, 2));
    let y = Array2::<f64>::zeros((3, 4));
    let mut out = Array2::<f64>::zeros((3, 3));
    let e = CpuBackend::default()
        .pairwise(x.view(), y.view(), &MetricKind::Euclidean, out.view_mut())
        .unwrap_err();
    assert!(e.to_string().contains("expected 2, got 4"), "{e}");
    let mut bad = Array2::<f64>::zeros((2, 3));
    let e = CpuBackend::default()
        .pairwise(x.view(), x.view(), &MetricKind::Euclidean, bad.view_mut())
        .unwrap_err();
    assert!(e.to_string().contains("expected 3 x 3, got 2 x 3"), "{e}");
    let e = CpuBackend::default()
        .pairwise(y.view(), y.view(), &MetricKind::Haversine, out.view_mut())
        .unwrap_err();
    assert!(e.to_string().contains("haversine"), "{e}");
}

#[test]
fn fortran_order_input_gives_the_same_result() {
    let x = random_points(50, 5, 0.0, 3, MetricKind::Manhattan);
    let xf = x.t().as_standard_layout().reversed_axes().to_owned(); // same values, column-major
    assert!(!xf.is_standard_layout());
    let (mut a, mut b) = (Array2::<f64>::zeros((50, 50)), Array2::<f64>::zeros((50, 50)));
    CpuBackend::default()
        .pairwise(x.view(), x.view(), &MetricKind::Manhattan, a.view_mut())
        .unwrap();
    CpuBackend::default()
        .pairwise(xf.view(), xf.view(), &MetricKind::Manhattan, b.view_mut())
        .unwrap();
    assert_eq!(a, b);
}

proptest! {
    #[test]
    fn metric_axioms(a in prop::collection::vec(-50.0f64..50.0, 4), b in prop::collection::vec(-50.0f64..50.0, 4), c in prop::collection::vec(-50.0f64..50.0, 4)) {
        for kind in [MetricKind::Euclidean, MetricKind::Manhattan, MetricKind::Minkowski(3.0), MetricKind::Minkowski(f64::INFINITY), MetricKind::Haversine] {
            let (a, b, c) = if kind == MetricKind::Haversine { (&a[..2], &b[..2], &c[..2]) } else { (&a[..], &b[..], &c[..]) };
            let (ab, ba, ac, cb) = (kind.distance(a, b), kind.distance(b, a), kind.distance(a, c), kind.distance(c, b));
            prop_assert!(ab >= 0.0);
            prop_assert_eq!(kind.distance(a, a), 0.0);
            prop_assert!((ab - ba).abs() <= 1e-12 * (1.0 + ab));
            prop_assert!(ab <= ac + cb + 1e-9 * (1.0 + ab), "{} triangle: {} > {} + {}", kind, ab, ac, cb);
        }
        let cos = MetricKind::Cosine.distance(&a[..], &b[..]);
        prop_assert!((0.0..=2.0).contains(&cos));
    }
}
