//! The swap phases' tests: incremental deltas against brute force, float losses, and the
//! device loops driven by a CPU twin of the device kernel.

mod incremental {
    use super::super::*;
    use crate::dissim::LowerTriangle;

    /// Every incremental ΔTD (FastPAM1 and PAM forms) equals the brute-force difference of
    /// total deviations, exactly on integers (spec acceptance 2).
    #[test]
    fn incremental_deltas_equal_brute_force() {
        use rand::{Rng, SeedableRng};
        let mut rng = SeededRng::seed_from_u64(11);
        for _ in 0..40 {
            let n = rng.random_range(4..25);
            let k = rng.random_range(2..n.min(6));
            let data: Vec<i32> = (0..n * (n - 1) / 2).map(|_| rng.random_range(0..6)).collect();
            let d = LowerTriangle::new(n, data).unwrap();
            let mut medoids = rand::seq::index::sample(&mut rng, n, k).into_vec();
            let s = State::new(&d, &mut medoids);
            let (base, _) = crate::kmedoids::total_deviation(&d, s.medoids);
            assert_eq!(base, s.loss);
            let mut deltas = Vec::new();
            for x in (0..n).filter(|&x| !s.is_medoid[x]) {
                s.candidate_deltas(x, &mut deltas);
                for i in 0..k {
                    let mut m = s.medoids.clone();
                    m[i] = x;
                    let (after, _) = crate::kmedoids::total_deviation(&d, &m);
                    assert_eq!(deltas[i], after - base, "candidate {x} position {i}");
                    assert_eq!(s.pam_delta(i, x), after - base);
                }
            }
        }
    }
}

mod float {
    use super::super::*;
    use crate::dissim::DenseMatrix;
    use rand::{Rng, SeedableRng};

    /// On f64 dissimilarities every incremental ΔTD is within 1e-9 (relative to the loss) of
    /// the brute-force difference (spec acceptance 2).
    #[test]
    fn incremental_deltas_match_brute_force_on_floats() {
        let mut rng = SeededRng::seed_from_u64(12);
        for _ in 0..20 {
            let n = rng.random_range(5..40);
            let k = rng.random_range(2..n.min(7));
            let x = ndarray::Array2::<f64>::from_shape_fn((n, 3), |_| rng.random_range(-5.0..5.0));
            let d = DenseMatrix::from_points(
                x.view(),
                &crate::MetricKind::Euclidean,
                &crate::CpuBackend::default(),
            )
            .unwrap();
            let mut medoids = rand::seq::index::sample(&mut rng, n, k).into_vec();
            let s = State::new(&d, &mut medoids);
            let (base, _) = crate::kmedoids::total_deviation(&d, s.medoids);
            let mut deltas: Vec<f64> = Vec::new();
            for x in (0..n).filter(|&x| !s.is_medoid[x]) {
                s.candidate_deltas(x, &mut deltas);
                for i in 0..k {
                    let mut m = s.medoids.clone();
                    m[i] = x;
                    let expected = crate::kmedoids::total_deviation(&d, &m).0 - base;
                    assert!(
                        (deltas[i] - expected).abs() <= 1e-9 * base,
                        "{} vs {expected}",
                        deltas[i]
                    );
                    assert!((s.pam_delta(i, x) - expected).abs() <= 1e-9 * base);
                }
            }
        }
    }
}

/// The device path without a device: a CPU twin of `cuda/swap_gains.cu` (the same grouped
/// scan, per medoid then the shared gain) behind [`DeviceGains`], driving the device loops of
/// FastPAM1, FastPAM2 and FasterPAM (state reloads, batches, chunks).
mod device_loops {
    use super::super::super::random_medoids;
    use super::super::*;
    use crate::backend::device::{DeviceExact, DeviceGains};
    use crate::dissim::DenseMatrix;
    use crate::kmedoids::KMedoids;
    use crate::{CpuBackend, Fit, MetricKind};
    use rand::{Rng, SeedableRng};
    use std::{cell::Cell, rc::Rc};

    /// The host twin of the device's arithmetic gives the metrics' values (to rounding),
    /// exactly symmetric with a zero diagonal, and refuses the metrics it cannot reproduce;
    /// FasterPAM on it takes the same swaps as on the CPU backend's matrix (no device needed).
    #[test]
    fn device_exact_matches_the_metrics() {
        let mut rng = SeededRng::seed_from_u64(3);
        let x = ndarray::Array2::<f64>::from_shape_fn((120, 5), |(i, _)| {
            (i % 4) as f64 * 4.0 + rng.random_range(-1.0..1.0)
        });
        for metric in [
            MetricKind::SqEuclidean,
            MetricKind::Euclidean,
            MetricKind::Manhattan,
            MetricKind::Minkowski(f64::INFINITY),
            MetricKind::Cosine,
        ] {
            let exact = DeviceExact::new(x.view(), &metric).expect("a basic metric");
            let dense = DenseMatrix::from_points(x.view(), &metric, &CpuBackend::default()).unwrap();
            for i in 0..120 {
                assert_eq!(exact.get(i, i), 0.0);
                for j in 0..120 {
                    assert_eq!(exact.get(i, j), exact.get(j, i), "{metric} symmetric");
                    let (p, q) = (exact.get(i, j), dense.get(i, j));
                    assert!(
                        (p - q).abs() <= 1e-9 * q.abs().max(1e-6),
                        "{metric} ({i}, {j}): {p} vs {q}"
                    );
                }
            }
            let on_exact = KMedoids::fasterpam(4).seed(1).fit(&exact).unwrap();
            let on_dense = KMedoids::fasterpam(4).seed(1).fit(&dense).unwrap();
            assert_eq!(on_exact.medoids, on_dense.medoids, "{metric}");
        }
        assert!(DeviceExact::new(x.view(), &MetricKind::Minkowski(3.0)).is_none());
        assert!(DeviceExact::new(x.view(), &MetricKind::Haversine).is_none());
    }

    struct Twin<'g, D: Dissimilarity> {
        d: &'g D,
        state: Option<(Grouped<D::Value>, Vec<f64>)>,
        loads: Rc<Cell<usize>>,
    }

    impl<D: Dissimilarity> DeviceGains<D::Value> for Twin<'_, D> {
        fn load_state(&mut self, g: &Grouped<D::Value>, removal: &[f64]) -> Result<()> {
            self.state = Some((g.clone(), removal.to_vec()));
            self.loads.set(self.loads.get() + 1);
            Ok(())
        }

        fn evaluate(&mut self, candidates: &[usize], all: bool) -> Result<Evaluated> {
            let (g, removal) = self.state.as_ref().expect("loaded before use");
            let (mut best, mut deltas) = (Vec::new(), Vec::new());
            for &x in candidates {
                let mut acc = 0.0;
                let mut dm: Vec<f64> = removal.clone();
                for (m, dm) in dm.iter_mut().enumerate() {
                    for j in g.offsets[m] as usize..g.offsets[m + 1] as usize {
                        let dox = self.d.get(x, g.members[j] as usize);
                        let (nd, sd) = (g.near_d[j], g.seco_d[j]);
                        let f = |v: D::Value| v.to_f64().unwrap_or(f64::NAN);
                        if dox < nd {
                            acc += f(dox) - f(nd);
                            *dm += f(nd) - f(sd);
                        } else if dox < sd {
                            *dm += f(dox) - f(sd);
                        }
                    }
                }
                let v: Vec<f64> = dm.iter().map(|v| v + acc).collect();
                let mut b = (0, v[0]);
                for (i, &vi) in v.iter().enumerate().skip(1) {
                    if vi < b.1 {
                        b = (i, vi);
                    }
                }
                best.push(b);
                if all {
                    deltas.extend(v);
                }
            }
            Ok((best, deltas))
        }
    }

    fn blobs(n: usize, seed: u64) -> DenseMatrix<'static, f64> {
        let mut rng = SeededRng::seed_from_u64(seed);
        let x = ndarray::Array2::<f64>::from_shape_fn((n, 2), |(i, _)| {
            (i % 7) as f64 * 3.0 + rng.random_range(-1.0..1.0)
        });
        DenseMatrix::from_points(
            x.view(),
            &crate::MetricKind::Euclidean,
            &crate::CpuBackend::default(),
        )
        .unwrap()
    }

    /// The grouped scan gives FastPAM1's deltas for every candidate.
    #[test]
    fn grouped_scan_equals_candidate_deltas() {
        let d = blobs(300, 1);
        let mut medoids = vec![3, 50, 120, 121, 299];
        let s = State::new(&d, &mut medoids);
        let g = s.grouped();
        assert_eq!(g.offsets.last().copied(), Some(300));
        let mut twin = Twin {
            d: &d,
            state: None,
            loads: Rc::default(),
        };
        twin.load_state(&g, &s.removal).unwrap();
        let cands: Vec<usize> = (0..300).filter(|&x| !s.is_medoid[x]).collect();
        let (best, all) = twin.evaluate(&cands, true).unwrap();
        let mut deltas = Vec::new();
        for (c, &x) in cands.iter().enumerate() {
            s.candidate_deltas(x, &mut deltas);
            for (i, &v) in deltas.iter().enumerate() {
                assert!(
                    (all[c * 5 + i] - v).abs() <= 1e-9 * s.loss,
                    "candidate {x} position {i}"
                );
            }
            let (i, v) = s.best_for(x, &mut deltas);
            assert_eq!(best[c].0, i);
            assert!((best[c].1 - v).abs() <= 1e-9 * s.loss);
        }
    }

    /// FastPAM1, FastPAM2 and FasterPAM (natural and shuffled order) through the device loops
    /// take the CPU's swaps: the same medoids, loss, passes and swaps; the state is reloaded
    /// once per swap at most.
    #[test]
    fn device_loops_take_the_cpu_swaps() {
        for (seed, n, k) in [(2, 400, 7), (3, 1500, 12), (4, 2500, 25)] {
            let d = blobs(n, seed);
            let start = random_medoids(n, k, &mut SeededRng::seed_from_u64(seed));
            for method in [
                Method::FastPam1,
                Method::FastPam2 { fasttol: 1.0 },
                Method::FasterPam { shuffle: false },
                Method::FasterPam { shuffle: true },
            ] {
                let (mut on_cpu, mut on_twin) = (start.clone(), start.clone());
                let cpu = run_on(
                    &d,
                    &mut on_cpu,
                    method,
                    100,
                    &mut SeededRng::seed_from_u64(9),
                    None,
                    None,
                )
                .unwrap();
                let loads = Rc::new(Cell::new(0));
                let twin = Twin {
                    d: &d,
                    state: None,
                    loads: loads.clone(),
                };
                let dev = Some(OnDevice::with(Box::new(twin)));
                let got = run_on(
                    &d,
                    &mut on_twin,
                    method,
                    100,
                    &mut SeededRng::seed_from_u64(9),
                    None,
                    dev,
                )
                .unwrap();
                assert_eq!(on_cpu, on_twin, "{method:?} n = {n}");
                assert!(cpu.n_swaps > 0);
                assert_eq!((cpu.n_iter, cpu.n_swaps), (got.n_iter, got.n_swaps), "{method:?}");
                assert_eq!(cpu.assignment, got.assignment);
                assert!((cpu.loss - got.loss).abs() <= 1e-12 * cpu.loss);
                assert!(
                    loads.get() >= 1 && loads.get() <= got.n_swaps + 1,
                    "{} loads",
                    loads.get()
                );
            }
        }
    }
}
