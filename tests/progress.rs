//! Progress callbacks: a fit names its phases before it iterates, in order, so a progress bar
//! can say where the time goes; k-means names the convergence it declares (scikit-learn's
//! `verbose` line).

use clustr::kmeans::KMeans;
use clustr::kmedoids::KMedoids;
use clustr::{Fit, MetricKind, ProgressFn};
use std::sync::{Arc, Mutex};

/// A callback recording "phase:<name>" and "iteration" events.
fn recorder() -> (ProgressFn, Arc<Mutex<Vec<String>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let (a, b) = (events.clone(), events.clone());
    let f = ProgressFn::new(move |_| a.lock().unwrap().push("iteration".into()))
        .with_phases(move |p| b.lock().unwrap().push(format!("phase:{p}")));
    (f, events)
}

fn blobs() -> ndarray::Array2<f64> {
    clustr::datasets::Blobs::new(200, 3)
        .seed(2)
        .generate()
        .unwrap()
        .data
}

#[test]
fn fits_name_their_phases_before_iterating() {
    let x = blobs();
    let (f, events) = recorder();
    KMeans::new(3).progress(f).fit(&x.view()).unwrap();
    let e = events.lock().unwrap().clone();
    assert_eq!(
        e.first().map(String::as_str),
        Some("phase:init (k-means++)"),
        "{e:?}"
    );
    let (last, iterations) = e[1..].split_last().expect("iterations and a convergence");
    assert!(
        iterations.iter().all(|s| s == "iteration") && !iterations.is_empty(),
        "{e:?}"
    );
    let n_iter = iterations.len();
    assert_eq!(
        last,
        &format!("phase:Converged at iteration {}: strict convergence.", n_iter - 1),
        "{e:?}"
    );

    let (f, events) = recorder();
    KMedoids::fasterpam(3)
        .progress(f)
        .fit_points(x.view(), &MetricKind::Euclidean)
        .unwrap();
    let e = events.lock().unwrap().clone();
    assert_eq!(e.first().map(String::as_str), Some("phase:distances"), "{e:?}");

    let (f, events) = recorder();
    clustr::kernel::RffKpkm::new(3)
        .n_features(64)
        .progress(f)
        .fit(&x.view())
        .unwrap();
    let e = events.lock().unwrap().clone();
    assert_eq!(e.first().map(String::as_str), Some("phase:features"), "{e:?}");

    let (f, events) = recorder();
    clustr::mixture::GaussianMixture::new(3)
        .progress(f)
        .fit(&x.view())
        .unwrap();
    let e = events.lock().unwrap().clone();
    assert_eq!(e.first().map(String::as_str), Some("phase:init"), "{e:?}");
}

#[test]
fn a_callback_without_phases_ignores_them() {
    let x = blobs();
    let count = Arc::new(Mutex::new(0));
    let c = count.clone();
    let f = ProgressFn::new(move |_| *c.lock().unwrap() += 1);
    f.phase("distances");
    KMeans::new(3).progress(f).fit(&x.view()).unwrap();
    assert!(*count.lock().unwrap() >= 1);
}
