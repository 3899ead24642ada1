//! A progress callback made with `ProgressFn::cancellable` stops a fit at the step that
//! reported: the fit returns `Error::Interrupted` and no further step is reported (what the
//! Python package's Ctrl-C relies on).

use clustr::datasets::Blobs;
use clustr::kernel::PowerKMeans;
use clustr::kmeans::KMeans;
use clustr::kmedoids::KMedoids;
use clustr::mixture::GaussianMixture;
use clustr::{Error, Fit, MetricKind, ProgressFn};
use ndarray::Array2;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A callback that stops at its `stop_at`-th report, and the count of reports it saw.
fn stop_at(stop_at: usize) -> (ProgressFn, Arc<AtomicUsize>) {
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let p = ProgressFn::cancellable(move |_| {
        if counter.fetch_add(1, Ordering::SeqCst) + 1 >= stop_at {
            Err(Error::Interrupted)
        } else {
            Ok(())
        }
    });
    (p, seen)
}

fn data() -> Array2<f64> {
    Blobs::new(600, 6).seed(3).generate().unwrap().data
}

fn assert_stopped<M: std::fmt::Debug>(what: &str, r: clustr::Result<M>, seen: &AtomicUsize) {
    assert!(matches!(r, Err(Error::Interrupted)), "{what}: {r:?}");
    assert_eq!(seen.load(Ordering::SeqCst), 2, "{what}: reports after the stop");
}

#[test]
fn every_iterative_family_stops_when_its_callback_says_so() {
    let x = data();
    let (p, seen) = stop_at(2);
    let r = KMeans::new(6).tol(0.0).n_init(1).progress(p).fit(&x.view());
    assert_stopped("k-means", r.map(|m| m.inertia), &seen);

    let (p, seen) = stop_at(2);
    let r = GaussianMixture::new(6).tol(0.0).progress(p).fit(&x.view());
    assert_stopped("gmm", r.map(|m| m.lower_bound), &seen);

    let (p, seen) = stop_at(2);
    let r = PowerKMeans::new(6).progress(p).fit(&x.view());
    assert_stopped("power k-means", r.map(|m| m.fit.n_iter), &seen);

    for km in [KMedoids::pam(6), KMedoids::alternating(6)] {
        let (p, seen) = stop_at(2);
        let r = km
            .progress(p)
            .fit_points(x.view(), &MetricKind::Euclidean)
            .map(|m| m.loss);
        assert_stopped("k-medoids", r, &seen);
    }
}

#[test]
fn a_callback_that_never_stops_changes_nothing() {
    let x = data();
    let plain = KMeans::new(6).n_init(1).fit(&x.view()).unwrap();
    let (p, seen) = stop_at(usize::MAX);
    let observed = KMeans::new(6).n_init(1).progress(p).fit(&x.view()).unwrap();
    assert_eq!(plain.labels, observed.labels);
    assert_eq!(plain.inertia, observed.inertia);
    assert!(seen.load(Ordering::SeqCst) >= 1);
}
