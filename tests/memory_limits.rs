//! Memory estimates (issue #9): every fit refuses to start above the limit with
//! `Error::TooLarge` carrying exactly its estimate and an alternative, runs at a limit equal to
//! its estimate, and really allocates no more than its estimate says (measured here with a
//! counting allocator; this binary holds one test so the process-wide limit and the counter
//! are not shared with other tests).

mod common;
use clustr::density::{Dbscan, Optics};
use clustr::gp::magmaclust::MagmaClust;
use clustr::gp::simulate::{Scenario, Simulator};
use clustr::kernel::kpkm::{KernelKMeans, Kpkm, RffKpkm};
use clustr::kernel::mkpkm::IpRffMkpkm;
use clustr::kernel::power::PowerKMeans;
use clustr::kmeans::minibatch::MiniBatchKMeans;
use clustr::kmeans::{Algorithm, KMeans};
use clustr::kmedoids::{Clara, Clarans, KMedoids};
use clustr::memory::{set_max_memory, MemoryEstimate};
use clustr::mixture::gmm::{CovarianceType, GaussianMixture};
use clustr::mixture::ppp::Ppp;
use clustr::{CpuBackend, DenseMatrix, Error, Fit, MetricKind};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Counts live heap bytes and their peak.
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, layout, new_size) };
        if !q.is_null() {
            if new_size > layout.size() {
                let now = LIVE.fetch_add(new_size - layout.size(), Relaxed) + new_size - layout.size();
                PEAK.fetch_max(now, Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Checks one algorithm: refused at estimate − 1 with its estimate and `hint` in the message,
/// fitted at the estimate; returns the peak bytes the fit allocated beyond what was live.
fn check<M>(name: &str, estimate: u64, hint: &str, fit: impl Fn() -> clustr::Result<M>) -> (u64, u64) {
    set_max_memory(Some(estimate - 1));
    match fit() {
        Err(e @ Error::TooLarge { needed, .. }) => {
            assert_eq!(needed, estimate, "{name}: the check must use the estimate");
            assert!(e.to_string().contains(hint), "{name}: {e}");
        }
        Err(e) => panic!("{name}: expected TooLarge, got {e}"),
        Ok(_) => panic!("{name}: not refused below its estimate"),
    }
    set_max_memory(Some(estimate));
    let base = LIVE.load(Relaxed);
    PEAK.store(base, Relaxed);
    let model = fit().unwrap_or_else(|e| panic!("{name} at its estimate: {e}"));
    let used = (PEAK.load(Relaxed) - base) as u64;
    drop(model);
    set_max_memory(None);
    (estimate, used)
}

#[test]
fn fits_respect_their_memory_estimates() {
    common::in_pool(2, || {
        let ds = clustr::datasets::Blobs::new(20_000, 5)
            .n_features(8)
            .seed(3)
            .generate()
            .unwrap();
        let x = ds.data.view();
        let x32 = ds.data.mapv(|v| v as f32);
        let (n, d) = x.dim();
        let small = ds.data.slice(ndarray::s![..1500, ..]).to_owned();
        let dm =
            DenseMatrix::from_points(small.view(), &MetricKind::Euclidean, &CpuBackend::default()).unwrap();
        let sim = Simulator {
            n_tasks: 20,
            ..Simulator::new(Scenario::H00)
        }
        .generate()
        .unwrap();

        let mut rows: Vec<(&str, (u64, u64))> = Vec::new();
        for (name, alg) in [
            ("k-means (elkan)", Algorithm::Elkan),
            ("k-means (lloyd)", Algorithm::Lloyd),
        ] {
            let p = KMeans::new(10).algorithm(alg).seed(1);
            let e = p.memory_estimate(n, d, 8);
            rows.push((name, check(name, e, "minibatch-kmeans", || p.fit(&x))));
        }
        let p = MiniBatchKMeans::new(10).seed(1);
        rows.push((
            "mini-batch k-means",
            check("mini-batch", p.memory_estimate(n, d, 8), "batch_size", || {
                p.fit(&x)
            }),
        ));
        let p = GaussianMixture::new(5)
            .covariance_type(CovarianceType::Full)
            .max_iter(20);
        rows.push((
            "GMM full f64",
            check("gmm", p.memory_estimate(n, d, 8), "diag", || p.fit(&x)),
        ));
        rows.push((
            "GMM full f32",
            check("gmm f32", p.memory_estimate(n, d, 4), "diag", || {
                p.fit(&x32.view())
            }),
        ));
        let p = Ppp::new(2, 6).n_runs(4);
        rows.push((
            "PPP",
            check("ppp", p.memory_estimate(n, d, 8), "k_max", || p.fit(&x)),
        ));
        let p = Dbscan::new(0.5).min_samples(10);
        rows.push((
            "DBSCAN",
            check("dbscan", p.memory_estimate(n, d, 8), "sample", || p.fit(&x)),
        ));
        let p = Optics::new(10).max_eps(2.0);
        rows.push((
            "OPTICS",
            check("optics", p.memory_estimate(n, d, 8), "sample", || p.fit(&x)),
        ));
        let p = KMedoids::fasterpam(10).seed(1);
        rows.push((
            "FasterPAM",
            check("fasterpam", p.memory_estimate(1500, 0, 8), "fasterclara", || {
                p.fit(&dm)
            }),
        ));
        let p = Clara::fasterclara(10).seed(1);
        rows.push((
            "FasterCLARA",
            check(
                "fasterclara",
                p.memory_estimate(1500, 0, 8),
                "sample_size",
                || p.fit(&dm),
            ),
        ));
        let p = Clarans::fastclarans(10).seed(1);
        rows.push((
            "FastCLARANS",
            check(
                "fastclarans",
                p.memory_estimate(1500, 0, 8),
                "fasterclara",
                || p.fit(&dm),
            ),
        ));
        let p = PowerKMeans::new(10).seed(1);
        rows.push((
            "power k-means",
            check("power", p.memory_estimate(n, d, 8), "minibatch", || p.fit(&x)),
        ));
        let p = Kpkm::new(5).seed(1);
        rows.push((
            "KPKM",
            check("kpkm", p.memory_estimate(1500, d, 8), "rff-kpkm", || {
                p.fit(&small.view())
            }),
        ));
        let p = KernelKMeans::new(5).seed(1);
        rows.push((
            "kernel k-means",
            check(
                "kernel k-means",
                p.memory_estimate(1500, d, 8),
                "rff-kpkm",
                || p.fit(&small.view()),
            ),
        ));
        let p = RffKpkm::new(5).n_features(200).seed(1);
        rows.push((
            "RFF-KPKM",
            check("rff", p.memory_estimate(n, d, 8), "n_features", || p.fit(&x)),
        ));
        let p = IpRffMkpkm::new(5).n_features(100).seed(1);
        rows.push((
            "IP-RFF-MKPKM",
            check("ip", p.memory_estimate(n, d, 8), "n_features", || p.fit(&x)),
        ));
        let p = MagmaClust::new(3);
        rows.push((
            "MagmaClust",
            check(
                "magmaclust",
                p.memory_estimate(&sim.tasks),
                "coarser grid",
                || p.fit(&sim.tasks),
            ),
        ));

        println!(
            "{:<20} {:>12} {:>12} {:>6}",
            "algorithm", "estimate", "allocated", "ratio"
        );
        for (name, (estimate, used)) in &rows {
            let ratio = *used as f64 / *estimate as f64;
            println!("{name:<20} {estimate:>12} {used:>12} {ratio:>6.2}");
        }
        for (name, (estimate, used)) in rows {
            // The estimate bounds what is allocated (beyond a fixed 256 KiB of small buffers)...
            assert!(
                used <= estimate + (256 << 10),
                "{name}: allocated {used} > estimate {estimate}"
            );
            // ...and is not a gross overestimate that would refuse runs that fit.
            assert!(
                estimate <= 8 * used.max(1 << 20),
                "{name}: estimate {estimate} vs {used} allocated"
            );
        }
    });
}
