//! Distributed runs (issue #10) without MPI: P threads, each a "process" holding a contiguous
//! slice of the rows, talk through an in-memory communicator with the same collectives as MPI.
//! The results must equal the single-process ones: the same centres and inertia (1e-12
//! relative; the sums are combined per process, then in rank order), the labels of each slice
//! those of the same rows in the single-process run. `tests/mpi.rs` runs the real thing under
//! `mpirun` when the `mpi` feature is on.

use clustr::comm::{row_range, Communicator, SharedComm};
use clustr::kmeans::{Algorithm, KMeans, KMeansInit};
use clustr::Fit;
use ndarray::{s, Array2};
use std::sync::{Arc, Barrier, Mutex};

/// `size` in-process ranks sharing one exchange slot per rank.
#[derive(Debug)]
struct Group {
    size: usize,
    slots: Mutex<Vec<Vec<f64>>>,
    barrier: Barrier,
}

#[derive(Debug)]
struct ThreadComm {
    rank: usize,
    group: Arc<Group>,
}

impl ThreadComm {
    fn exchange(&self, local: &[f64]) -> Vec<f64> {
        self.group.slots.lock().unwrap()[self.rank] = local.to_vec();
        self.group.barrier.wait();
        let all = self.group.slots.lock().unwrap().concat();
        self.group.barrier.wait();
        all
    }
}

impl Communicator for ThreadComm {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.group.size
    }
    fn all_gather_f64(&self, local: &[f64]) -> Vec<f64> {
        self.exchange(local)
    }
    fn all_gather_u64(&self, local: &[u64]) -> Vec<u64> {
        // (the bits travel in an f64's bits)
        let as_f64: Vec<f64> = local.iter().map(|&v| f64::from_bits(v)).collect();
        self.exchange(&as_f64).into_iter().map(f64::to_bits).collect()
    }
    fn broadcast_f64(&self, buf: &mut [f64], root: usize) {
        let all = self.exchange(buf);
        buf.copy_from_slice(&all[root * buf.len()..(root + 1) * buf.len()]);
    }
}

/// Runs `f` on `size` ranks, each with its communicator; returns their results in rank order.
fn on_ranks<T: Send>(size: usize, f: impl Fn(SharedComm) -> T + Sync) -> Vec<T> {
    let group = Arc::new(Group {
        size,
        slots: Mutex::new(vec![Vec::new(); size]),
        barrier: Barrier::new(size),
    });
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..size)
            .map(|rank| {
                let comm: SharedComm = Arc::new(ThreadComm {
                    rank,
                    group: group.clone(),
                });
                let f = &f;
                scope.spawn(move || f(comm))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Fits `x` split over `size` ranks into slices of (nearly) equal length, wherever they
/// start: `fit` gets each rank's communicator and rows.
fn on_slices<T: Send>(
    x: &Array2<f64>,
    size: usize,
    fit: impl Fn(SharedComm, ndarray::ArrayView2<f64>) -> T + Sync,
) -> Vec<T> {
    on_ranks(size, |comm| {
        let (n, rank) = (x.nrows(), comm.rank());
        let r = rank * n / size..(rank + 1) * n / size;
        fit(comm, x.slice(s![r, ..]))
    })
}

/// As [`on_slices`], with the slices of [`row_range`] (whole granules of rows).
fn on_granules<T: Send>(
    x: &Array2<f64>,
    size: usize,
    fit: impl Fn(SharedComm, ndarray::ArrayView2<f64>) -> T + Sync,
) -> Vec<T> {
    on_ranks(size, |comm| {
        let r = row_range(x.nrows(), comm.rank(), comm.size());
        fit(comm, x.slice(s![r, ..]))
    })
}

fn blobs(n: usize, d: usize, k: usize) -> Array2<f64> {
    clustr::datasets::Blobs::new(n, k)
        .n_features(d)
        .cluster_std(2.5)
        .seed(11)
        .generate()
        .unwrap()
        .data
}

#[test]
fn kmeans_on_several_processes_equals_one_process() {
    let x = blobs(3001, 5, 6);
    for (init, algorithm) in [
        (KMeansInit::KMeansPlusPlus, Algorithm::Lloyd),
        (KMeansInit::KMeansPlusPlus, Algorithm::Elkan),
        (KMeansInit::Random, Algorithm::Hamerly),
    ] {
        let params = KMeans::new(6).init(init.clone()).algorithm(algorithm).seed(5);
        let single = params.fit(&x.view()).unwrap();
        for size in [2, 3] {
            let parts = on_slices(&x, size, |comm, xs| {
                params.clone().communicator(comm).fit(&xs).unwrap()
            });
            let labels: Vec<i64> = parts.iter().flat_map(|m| m.labels.clone()).collect();
            assert_eq!(labels, single.labels, "{init:?} {algorithm:?} on {size}");
            for m in &parts {
                assert_eq!(m.n_iter, single.n_iter);
                assert!((m.inertia - single.inertia).abs() <= 1e-12 * single.inertia);
                for (a, b) in m.centers.iter().zip(&single.centers) {
                    assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()));
                }
            }
        }
    }
}

/// An empty cluster is refilled with the farthest point of all processes.
#[test]
fn empty_clusters_are_refilled_across_processes() {
    let mut x = blobs(400, 2, 2);
    x[[399, 0]] = 500.0; // far away, on the last process
                         // Two initial centres on top of each other: the second cluster starts empty.
    let c =
        Array2::from_shape_vec((3, 2), vec![x[[0, 0]], x[[0, 1]], x[[0, 0]], x[[0, 1]], 0.0, 0.0]).unwrap();
    let params = KMeans::new(3)
        .init(KMeansInit::Given(c))
        .algorithm(Algorithm::Lloyd);
    let single = params.fit(&x.view()).unwrap();
    let parts = on_slices(&x, 2, |comm, xs| {
        params.clone().communicator(comm).fit(&xs).unwrap()
    });
    let labels: Vec<i64> = parts.iter().flat_map(|m| m.labels.clone()).collect();
    assert_eq!(labels, single.labels);
    assert!(
        parts[1].centers.iter().any(|&v| v == 500.0),
        "{}",
        parts[1].centers
    );
    for (a, b) in parts[1].centers.iter().zip(&single.centers) {
        assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()));
    }
}

/// A bad slice on one process stops every process with an error (none waits forever).
#[test]
fn an_error_on_one_process_stops_all() {
    let mut x = blobs(100, 2, 2);
    x[[90, 1]] = f64::NAN; // on the second process
    let results = on_slices(&x, 2, |comm, xs| {
        KMeans::new(2).communicator(comm).fit(&xs).map(drop)
    });
    let msgs: Vec<String> = results.into_iter().map(|r| r.unwrap_err().to_string()).collect();
    assert!(msgs[0].contains("process 1"), "{}", msgs[0]);
    assert!(msgs[1].contains("NaN"), "{}", msgs[1]);
}

#[test]
fn gmm_on_several_processes_equals_one_process() {
    use clustr::mixture::gmm::{CovarianceType, GaussianMixture, GmmInit};
    let x = blobs(2001, 3, 4);
    for (ct, init) in [
        (CovarianceType::Full, GmmInit::KMeans),
        (CovarianceType::Tied, GmmInit::KMeansPlusPlus),
        (CovarianceType::Diag, GmmInit::Random),
        (CovarianceType::Spherical, GmmInit::RandomFromData),
    ] {
        let params = GaussianMixture::new(4)
            .covariance_type(ct)
            .init(init.clone())
            .seed(3);
        let single = params.fit(&x.view()).unwrap();
        for size in [2, 3] {
            let parts = on_slices(&x, size, |comm, xs| {
                params.clone().communicator(comm).fit(&xs).unwrap()
            });
            let labels: Vec<i64> = parts.iter().flat_map(|m| m.labels.clone()).collect();
            assert_eq!(labels, single.labels, "{ct:?} {init:?} on {size}");
            for m in &parts {
                assert_eq!(m.n_iter, single.n_iter, "{ct:?}");
                assert!((m.lower_bound - single.lower_bound).abs() <= 1e-12 * single.lower_bound.abs());
                for (a, b) in m.mixture.means.iter().zip(&single.mixture.means) {
                    assert!((a - b).abs() <= 1e-10 * (1.0 + b.abs()));
                }
            }
        }
    }
}

/// Mini-batch k-means gathers each batch on every process: the same steps bit for bit, with
/// chunks that straddle the processes' slices, re-seeded centres and the tolerance rule.
#[test]
fn minibatch_on_several_processes_equals_one_process() {
    use clustr::kmeans::MiniBatchKMeans;
    let x = blobs(5003, 4, 8);
    for (init, tol) in [(KMeansInit::KMeansPlusPlus, 0.0), (KMeansInit::Random, 1e-4)] {
        let params = MiniBatchKMeans::new(12)
            .init(init.clone())
            .batch_size(256)
            .chunk_size(1024)
            .tol(tol)
            .seed(9);
        let single = params.fit(&x.view()).unwrap();
        for size in [2, 3] {
            let parts = on_slices(&x, size, |comm, xs| {
                params.clone().communicator(comm).fit(&xs).unwrap()
            });
            let labels: Vec<i64> = parts.iter().flat_map(|m| m.labels.clone()).collect();
            assert_eq!(labels, single.labels, "{init:?} on {size}");
            for m in &parts {
                assert_eq!(m.centers, single.centers);
                assert_eq!((m.n_steps, m.converged), (single.n_steps, single.converged));
                assert!((m.inertia - single.inertia).abs() <= 1e-12 * single.inertia);
            }
        }
    }
}

/// Each process streams its window of a folder of .npy shards (windows and shards cut the
/// rows at different places): the same model as one process on the array in memory.
#[test]
fn minibatch_streams_windows_of_npy_shards() {
    use clustr::data::npy::NpyWriter;
    use clustr::data::NpyRows;
    use clustr::kmeans::MiniBatchKMeans;
    let x = blobs(3000, 3, 5);
    let dir = tempfile::tempdir().unwrap();
    for (i, r) in [0..700, 700..2200, 2200..3000].into_iter().enumerate() {
        let path = dir.path().join(format!("part-{i}.npy"));
        let mut w = NpyWriter::<f64>::create(&path, r.len(), 3).unwrap();
        w.write_rows(x.slice(s![r, ..])).unwrap();
        w.finish().unwrap();
    }
    let params = MiniBatchKMeans::new(5).batch_size(200).chunk_size(400).seed(2);
    let single = params.fit(&x.view()).unwrap();
    let parts = on_ranks(2, |comm| {
        let rows = NpyRows::open(dir.path()).unwrap();
        let rows = rows.window(comm.row_range(3000)).unwrap();
        params
            .clone()
            .communicator(comm)
            .fit_source::<f64, _>(&rows)
            .unwrap()
    });
    let labels: Vec<i64> = parts.iter().flat_map(|m| m.labels.clone()).collect();
    assert_eq!(labels, single.labels);
    assert_eq!(parts[0].centers, single.centers);
}

/// CLARA's samples are gathered and its loss summed over the processes: the same medoids,
/// labels and loss as one process, for the three variants and two metrics.
#[test]
fn clara_on_several_processes_equals_one_process() {
    use clustr::kmedoids::Clara;
    use clustr::{MetricKind, OnTheFly};
    let x = blobs(2503, 3, 5);
    for (params, metric) in [
        (Clara::fasterclara(5).seed(4), MetricKind::Euclidean),
        (Clara::fastclara(5).samples(3).seed(1), MetricKind::Manhattan),
        (Clara::new(5).sample_size(60).seed(2), MetricKind::Euclidean),
    ] {
        let single = params.fit(&OnTheFly::new(x.view(), metric).unwrap()).unwrap();
        assert_eq!(params.fit_points(x.view(), &metric).unwrap(), single);
        for size in [2, 3] {
            let parts = on_slices(&x, size, |comm, xs| {
                params.clone().communicator(comm).fit_points(xs, &metric).unwrap()
            });
            let labels: Vec<i64> = parts.iter().flat_map(|m| m.labels.clone()).collect();
            assert_eq!(labels, single.labels, "{} on {size}", params.name());
            for m in &parts {
                assert_eq!(m.medoids, single.medoids);
                assert!((m.loss - single.loss).abs() <= 1e-12 * single.loss);
            }
        }
    }
    // A dissimilarity cannot be split: fit refuses a distributed communicator.
    let refused = on_ranks(2, |comm| {
        Clara::fasterclara(2)
            .communicator(comm)
            .fit(&OnTheFly::new(x.view(), MetricKind::Euclidean).unwrap())
            .map(drop)
    });
    assert!(refused[0]
        .as_ref()
        .unwrap_err()
        .to_string()
        .contains("fit_points"));
}

/// Power k-means and RFF-KPKM: the initial points and the median bandwidth's sample drawn
/// over all rows, the feature map broadcast, the weighted sums summed per block of rows with
/// [`clustr::comm::reproducible_sum`]: on slices of whole granules, the same bits as one
/// process (centroids, objective, every iteration).
#[test]
fn rff_kpkm_and_power_kmeans_on_several_processes_equal_one_process_bit_for_bit() {
    use clustr::kernel::{Bandwidth, PowerInit, PowerKMeans, RffKpkm};
    let x = blobs(13_001, 3, 4);
    for size in [2, 3] {
        for (init, bandwidth) in [
            (PowerInit::Random, Bandwidth::Median),
            (PowerInit::KMeansPlusPlus, Bandwidth::Given(3.0)),
        ] {
            let params = RffKpkm::new(4)
                .n_features(100)
                .bandwidth(bandwidth)
                .init(init.clone())
                .seed(6);
            let single = params.fit(&x.view()).unwrap();
            let parts = on_granules(&x, size, |comm, xs| {
                params.clone().communicator(comm).fit(&xs).unwrap()
            });
            let labels: Vec<i64> = parts.iter().flat_map(|m| m.power.fit.labels.clone()).collect();
            assert_eq!(labels, single.power.fit.labels, "{init:?} on {size}");
            for m in &parts {
                assert_eq!(m.features, single.features);
                assert_eq!(m.power.seeds, single.power.seeds);
                assert_eq!(m.power.centers, single.power.centers);
                assert_eq!(m.power.fit.objectives, single.power.fit.objectives);
                assert_eq!(m.power.fit.objective, single.power.fit.objective);
            }
        }
        let params = PowerKMeans::new(4).seed(2);
        let single = params.fit(&x.view()).unwrap();
        let parts = on_granules(&x, size, |comm, xs| {
            params.clone().communicator(comm).fit(&xs).unwrap()
        });
        let labels: Vec<i64> = parts.iter().flat_map(|m| m.fit.labels.clone()).collect();
        assert_eq!(labels, single.fit.labels);
        assert_eq!(parts[0].centers, single.centers);
        // Slices that cut granules give the same result up to rounding.
        let cut = on_slices(&x, size, |comm, xs| {
            params.clone().communicator(comm).fit(&xs).unwrap()
        });
        let (a, b) = (cut[0].fit.objective, single.fit.objective);
        assert!((a - b).abs() <= 1e-12 * b.abs(), "{a} vs {b}");
    }
}

/// Labels of slices of different lengths arrive in rank order on the root only.
#[test]
fn labels_are_gathered_on_the_root() {
    let got = on_ranks(3, |comm| {
        let local: Vec<i64> = (0..comm.rank() as i64 + 1)
            .map(|v| v + 10 * comm.rank() as i64)
            .collect();
        clustr::comm::gather_labels(&local, 1, &*comm)
    });
    assert_eq!(got, vec![None, Some(vec![0, 10, 11, 20, 21, 22]), None]);
}

/// Fewer granules than processes: the last process holds no rows and still takes part.
#[test]
fn a_process_without_rows_takes_part() {
    use clustr::kernel::RffKpkm;
    use clustr::kmeans::MiniBatchKMeans;
    use clustr::kmedoids::Clara;
    use clustr::mixture::gmm::GaussianMixture;
    use clustr::MetricKind;
    let x = blobs(5000, 2, 3);
    let slices = on_granules(&x, 3, |_, xs| xs.nrows());
    assert_eq!(slices, vec![4096, 904, 0]);
    let labels = |parts: Vec<Vec<i64>>| parts.concat();
    let single = KMeans::new(3).fit(&x.view()).unwrap().labels;
    let parts = on_granules(&x, 3, |c, xs| {
        KMeans::new(3).communicator(c).fit(&xs).unwrap().labels
    });
    assert_eq!(labels(parts), single);
    let single = GaussianMixture::new(3).fit(&x.view()).unwrap().labels;
    let parts = on_granules(&x, 3, |c, xs| {
        GaussianMixture::new(3).communicator(c).fit(&xs).unwrap().labels
    });
    assert_eq!(labels(parts), single);
    let single = MiniBatchKMeans::new(3).fit(&x.view()).unwrap().labels;
    let parts = on_granules(&x, 3, |c, xs| {
        MiniBatchKMeans::new(3).communicator(c).fit(&xs).unwrap().labels
    });
    assert_eq!(labels(parts), single);
    let single = Clara::fasterclara(3)
        .fit_points(x.view(), &MetricKind::Euclidean)
        .unwrap()
        .labels;
    let parts = on_granules(&x, 3, |c, xs| {
        Clara::fasterclara(3)
            .communicator(c)
            .fit_points(xs, &MetricKind::Euclidean)
            .unwrap()
            .labels
    });
    assert_eq!(labels(parts), single);
    let rff = RffKpkm::new(3).n_features(50);
    let single = rff.fit(&x.view()).unwrap().power.fit.labels;
    let parts = on_granules(&x, 3, |c, xs| {
        rff.clone().communicator(c).fit(&xs).unwrap().power.fit.labels
    });
    assert_eq!(labels(parts), single);
}
