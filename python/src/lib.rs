//! `clustr._clustr`: the Rust side of the Python package. One function per fit (and per
//! prediction that needs more than the fitted arrays), called by the scikit-learn-style
//! classes of `clustr/_estimators.py`, which own the parameters' validation and defaults.
//! Every fit takes the points, the estimator's parameters as one dict ([`Params`]: its
//! `get_params()` by scikit-learn's names, with what the Python layer resolved) and, where
//! the method takes them, sample weights.
//!
//! Every call runs the work on a worker thread inside a rayon pool of `n_threads` threads
//! (0: all cores) with the GIL released; the calling thread waits, checking for Ctrl-C every
//! 50 ms. On Ctrl-C the fit's progress callback returns [`Error::Interrupted`] at its next
//! step and the call raises `KeyboardInterrupt`. Phases without steps (neighbour searches,
//! a distance matrix) finish before the interrupt is seen.
//!
//! Arrays come in without a copy when they are C-contiguous float32 or float64 (the Python
//! layer makes them so) and go out as new numpy arrays.

use clustr::density::hdbscan::linkage_matrix;
use clustr::density::{
    CondensedRow, Dbscan, Edge, Extraction, Hdbscan, HdbscanModel, HdbscanPredictor, IndexKind, Optics,
};
use clustr::kernel::{
    Bandwidth, IpRffMkpkm, PowerInit, PowerKMeans, RandomFourierFeatures, RffKpkm, Schedule,
};
use clustr::kmeans::{
    BisectingInit, BisectingKMeans, BisectingKMeansModel, BisectingStrategy, KMeans, KMeansInit, KMeansModel,
    KMeansPlusPlus, MiniBatchKMeans, MiniBatchKMeansModel,
};
use clustr::kmedoids::{Clara, Clarans, Init, KMedoids, KMedoidsModel, KValue};
use clustr::mixture::{CovarianceType, Covariances, GaussianMixture, GaussianMixtureModel, GmmInit, Mixture};
use clustr::{
    AnyBackend, Backend, CpuBackend, DenseMatrix, Dissimilarity, Error, Fit, MetricKind, Predict, ProgressFn,
    Scalar,
};
use ndarray::{Array2, ArrayView2};
use numpy::{Element, IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3};
use pyo3::exceptions::{PyKeyboardInterrupt, PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::IntoPyObjectExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

mod sparse;

/// Points as numpy gives them: float32 or float64, C-contiguous.
#[derive(FromPyObject)]
pub(crate) enum Points<'py> {
    F64(PyReadonlyArray2<'py, f64>),
    F32(PyReadonlyArray2<'py, f32>),
}

/// Runs `$body` with `$v` bound to the points' view, whatever their element type.
macro_rules! with_points {
    ($x:expr, $v:ident => $body:expr) => {
        match &$x {
            Points::F64(a) => {
                let $v = a.as_array();
                $body
            }
            Points::F32(a) => {
                let $v = a.as_array();
                $body
            }
        }
    };
}

/// clustr's error kinds as Python's: `MemoryError` above the memory limit,
/// `KeyboardInterrupt` for an interrupted fit, `RuntimeError` for I/O and the device,
/// `ValueError` for bad input and parameters.
pub(crate) fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::TooLarge { .. } => PyMemoryError::new_err(msg),
        Error::Interrupted => PyKeyboardInterrupt::new_err(msg),
        Error::Io { .. } | Error::Device(_) => PyRuntimeError::new_err(msg),
        _ => PyValueError::new_err(msg),
    }
}

/// The rayon pool of each thread count asked for so far (0: rayon's default, all cores).
fn pool(n_threads: usize) -> PyResult<Arc<rayon::ThreadPool>> {
    static POOLS: Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>> = Mutex::new(Vec::new());
    let mut pools = POOLS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, p)) = pools.iter().find(|(n, _)| *n == n_threads) {
        return Ok(Arc::clone(p));
    }
    let p = rayon::ThreadPoolBuilder::new()
        .num_threads(n_threads)
        .build()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start {n_threads} threads: {e}")))?;
    let p = Arc::new(p);
    pools.push((n_threads, Arc::clone(&p)));
    Ok(p)
}

/// Runs `work` on a worker thread in the pool of `n_threads`, the GIL released, and waits;
/// `work` gets the progress callback that stops it on Ctrl-C.
pub(crate) fn run<T: Send>(
    py: Python<'_>,
    n_threads: usize,
    work: impl FnOnce(ProgressFn) -> clustr::Result<T> + Send,
) -> PyResult<T> {
    run_reporting(py, n_threads, None, work)
}

/// A fit's progress as the worker saw it, for the Python layer's `verbose`.
enum Event {
    /// The fit entered a phase (`"init"`: a new initialisation).
    Phase(String),
    /// A step: its number and the objective after it.
    Step(usize, Option<f64>),
}

/// [`run`], and with `report` the fit's progress handed to it on the Python thread as it
/// happens: `report("init", 0, None)` when a phase begins, `report("step", i, objective)`
/// after each step (at most 50 ms late, in order).
pub(crate) fn run_reporting<T: Send>(
    py: Python<'_>,
    n_threads: usize,
    report: Option<Bound<'_, PyAny>>,
    work: impl FnOnce(ProgressFn) -> clustr::Result<T> + Send,
) -> PyResult<T> {
    let pool = pool(n_threads)?;
    let stop = Arc::new(AtomicBool::new(false));
    let events = Arc::new(Mutex::new(Vec::new()));
    let record = report.is_some();
    let progress = {
        let stop = Arc::clone(&stop);
        let (steps, phases) = (Arc::clone(&events), Arc::clone(&events));
        ProgressFn::cancellable(move |p| {
            if record {
                steps
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(Event::Step(p.iteration, p.objective));
            }
            if stop.load(Ordering::Relaxed) {
                Err(Error::Interrupted)
            } else {
                Ok(())
            }
        })
        .with_phases(move |phase| {
            if record {
                phases
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(Event::Phase(phase.into()));
            }
        })
    };
    // (what is reported is printed: the objective at every step)
    let progress = if record {
        progress.with_objective()
    } else {
        progress
    };
    // Hands the events so far to `report`.
    let drain = || -> PyResult<()> {
        let Some(report) = &report else { return Ok(()) };
        let taken = std::mem::take(&mut *events.lock().unwrap_or_else(|e| e.into_inner()));
        for e in taken {
            match e {
                Event::Phase(name) => report.call1((name, 0usize, None::<f64>))?,
                Event::Step(i, objective) => report.call1(("step", i, objective))?,
            };
        }
        Ok(())
    };
    let (tx, mut rx) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(move || {
            let out =
                pool.install(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(progress))));
            // The receiver lives until this thread is joined.
            let _ = tx.send(out);
        });
        let mut interrupt: Option<PyErr> = None;
        loop {
            let (got, back) = py.detach(move || (rx.recv_timeout(Duration::from_millis(50)), rx));
            rx = back;
            if interrupt.is_none() {
                if let Err(e) = drain() {
                    stop.store(true, Ordering::Relaxed);
                    interrupt = Some(e);
                }
            }
            match got {
                Ok(out) => {
                    return match (interrupt, out) {
                        (Some(e), _) => Err(e),
                        (None, Ok(r)) => r.map_err(to_py),
                        (None, Err(_)) => Err(PyRuntimeError::new_err("clustr panicked; please report it")),
                    };
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if interrupt.is_none() {
                        if let Err(e) = py.check_signals() {
                            stop.store(true, Ordering::Relaxed);
                            interrupt = Some(e);
                        }
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(PyRuntimeError::new_err(
                        "clustr's worker thread ended without a result",
                    ));
                }
            }
        }
    })
}

fn metric(name: &str) -> PyResult<MetricKind> {
    name.parse().map_err(to_py)
}

fn index(algorithm: &str) -> PyResult<IndexKind> {
    algorithm.parse().map_err(to_py)
}

/// A dict of fitted values.
fn out<'py>(py: Python<'py>, items: Vec<(&str, Bound<'py, PyAny>)>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in items {
        d.set_item(k, v)?;
    }
    Ok(d)
}

pub(crate) fn arr1<'py, T: Element>(py: Python<'py>, v: Vec<T>) -> Bound<'py, PyAny> {
    PyArray1::from_vec(py, v).into_any()
}

pub(crate) fn arr2<'py, T: Element>(py: Python<'py>, a: Array2<T>) -> Bound<'py, PyAny> {
    a.into_pyarray(py).into_any()
}

fn val<'py>(py: Python<'py>, v: impl IntoPyObject<'py>) -> PyResult<Bound<'py, PyAny>> {
    v.into_bound_py_any(py)
}

/// An estimator's parameters as one dict: scikit-learn's names and values as `get_params`
/// gives them, with what the Python layer resolved for this fit (`seed`, `n_threads`, the
/// metric's clustr name, given starts) in place.
struct Params<'py>(Bound<'py, PyDict>);

impl<'py> Params<'py> {
    /// The value of `key`; a missing one is a bug of the Python layer, said as such.
    fn get(&self, key: &str) -> PyResult<Bound<'py, PyAny>> {
        self.0.get_item(key)?.ok_or_else(|| {
            PyValueError::new_err(format!("clustr's binding was not given the parameter {key}"))
        })
    }

    fn n_threads(&self) -> PyResult<usize> {
        self.get("n_threads")?.extract()
    }

    /// The callable the fit's progress is reported to (`verbose`), if the Python layer gave one.
    fn report(&self) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(self.0.get_item("report")?.filter(|r| !r.is_none()))
    }

    fn seed(&self) -> PyResult<u64> {
        self.get("seed")?.extract()
    }

    fn string(&self, key: &str) -> PyResult<String> {
        self.get(key)?.extract()
    }

    /// The backend the described `method` runs on for the `backend` parameter (auto, cpu or
    /// cuda; see `clustr::methods::Method::backend`), and its name for `backend_`.
    fn backend(&self, method: &str) -> PyResult<(AnyBackend, &'static str)> {
        let m = clustr::methods::method(method)
            .ok_or_else(|| PyValueError::new_err(format!("unknown method {method:?}")))?;
        let b = m
            .backend(self.string("backend")?.parse().map_err(to_py)?)
            .map_err(to_py)?;
        let name = b.name();
        Ok((b, name))
    }
}

fn indices(v: &[usize]) -> Vec<i64> {
    v.iter().map(|&i| i as i64).collect()
}

/// Dense points, or a sparse matrix's rows (see `sparse.rs`).
#[derive(FromPyObject)]
enum AnyPoints<'py> {
    Dense(Points<'py>),
    Sparse(sparse::SparseRows<'py>),
}

/// Runs `$body` with `$v` bound to the dense or sparse points' view, whatever their element
/// type (for the fits that take both).
macro_rules! with_any_points {
    ($x:expr, $v:ident => $body:expr) => {
        match &$x {
            AnyPoints::Dense(d) => with_points!(d, $v => $body),
            AnyPoints::Sparse(s) => with_sparse!(s, $v => $body),
        }
    };
}

/// Lloyd-family k-means; `init_centers` (or None) are the given starts (on sparse rows moved
/// into the fit in the rows' element type, without the estimator's own copy).
#[pyfunction]
fn kmeans_fit<'py>(
    py: Python<'py>,
    x: AnyPoints<'py>,
    params: Bound<'py, PyDict>,
    sample_weight: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let p = Params(params);
    let (backend, ran_on) = p.backend("kmeans")?;
    let mut est = KMeans::new(p.get("n_clusters")?.extract()?)
        .max_iter(p.get("max_iter")?.extract()?)
        .tol(p.get("tol")?.extract()?)
        .seed(p.seed()?)
        .algorithm(p.string("algorithm")?.parse().map_err(to_py)?)
        .backend(backend);
    if let Some(n) = p.get("n_init")?.extract::<Option<usize>>()? {
        est = est.n_init(n);
    }
    est.sample_weight = sample_weight;
    let n_threads = p.n_threads()?;
    let report = p.report()?;
    fn fitted<'py, F: Scalar + Element>(
        py: Python<'py>,
        m: KMeansModel<F>,
        ran_on: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        out(
            py,
            vec![
                ("cluster_centers", arr2(py, m.centers)),
                ("labels", arr1(py, m.labels)),
                ("backend", val(py, ran_on)?),
                ("inertia", val(py, m.inertia)?),
                ("n_iter", val(py, m.n_iter)?),
                ("converged", val(py, m.converged)?),
            ],
        )
    }
    match (&x, p.get("init_centers")?.extract::<Option<Points<'_>>>()?) {
        (AnyPoints::Sparse(s), Some(c)) => with_sparse!(s, v => {
            let start = sparse::centres_as(&c);
            fitted(py, run_reporting(py, n_threads, report.clone(), |p| est.progress(p).fit_sparse_from(v, start))?, ran_on)
        }),
        _ => {
            est = est.init(kmeans_init(&p)?);
            with_any_points!(x, v => fitted(py, run_reporting(py, n_threads, report.clone(), |p| est.progress(p).fit(&v))?, ran_on))
        }
    }
}

/// Bisecting k-means; the tree comes back for `predict` (node centres and children, −1 for a
/// leaf).
#[pyfunction]
fn bisecting_kmeans_fit<'py>(
    py: Python<'py>,
    x: Points<'py>,
    params: Bound<'py, PyDict>,
    sample_weight: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let p = Params(params);
    let (_, ran_on) = p.backend("bisecting-kmeans")?;
    let mut est = BisectingKMeans::new(p.get("n_clusters")?.extract()?)
        .n_init(p.get("n_init")?.extract()?)
        .max_iter(p.get("max_iter")?.extract()?)
        .tol(p.get("tol")?.extract()?)
        .seed(p.seed()?)
        .init(match p.string("init")?.as_str() {
            "random" => BisectingInit::Random,
            "k-means++" => BisectingInit::KMeansPlusPlus,
            other => return Err(PyValueError::new_err(format!("unknown init {other:?}"))),
        })
        .algorithm(p.string("algorithm")?.parse().map_err(to_py)?)
        .bisecting_strategy(match p.string("bisecting_strategy")?.as_str() {
            "largest_cluster" => BisectingStrategy::LargestCluster,
            _ => BisectingStrategy::BiggestInertia,
        });
    est.sample_weight = sample_weight;
    let n_threads = p.n_threads()?;
    with_points!(x, v => {
        let m = run(py, n_threads, |p| est.progress(p).fit(&v))?;
        let children: Vec<i64> = m
            .tree_children
            .iter()
            .flat_map(|c| c.map_or([-1, -1], |(l, r)| [l as i64, r as i64]))
            .collect();
        let n_nodes = m.tree_children.len();
        out(py, vec![
            ("cluster_centers", arr2(py, m.centers)),
            ("labels", arr1(py, m.labels)),
            ("backend", val(py, ran_on)?),
            ("inertia", val(py, m.inertia)?),
            ("n_iter", val(py, m.n_iter)?),
            ("tree_centers", arr2(py, m.tree_centers)),
            ("tree_children", arr2(py, Array2::from_shape_vec((n_nodes, 2), children).map_err(|e| PyValueError::new_err(e.to_string()))?)),
        ])
    })
}

/// Bisecting k-means' `predict`: down the tree of a fit (node centres and children, −1 for a
/// leaf), checked as a model file's tree.
#[pyfunction]
fn bisecting_kmeans_predict<'py>(
    py: Python<'py>,
    x: Points<'py>,
    tree_centers: Points<'py>,
    tree_children: PyReadonlyArray2<'py, i64>,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let index = |v: i64| usize::try_from(v).unwrap_or(usize::MAX); // (refused by from_tree)
    let children: Vec<Option<(usize, usize)>> = tree_children
        .as_array()
        .rows()
        .into_iter()
        .map(|r| (r[0] >= 0 || r[1] >= 0).then(|| (index(r[0]), index(r[1]))))
        .collect();
    fn go<'py, F: Scalar>(
        py: Python<'py>,
        x: ArrayView2<F>,
        c: ArrayView2<F>,
        children: Vec<Option<(usize, usize)>>,
        n_threads: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let labels = run(py, n_threads, |_| {
            BisectingKMeansModel::from_tree(c.to_owned(), children)?.predict(&x)
        })?;
        Ok(arr1(py, labels))
    }
    match (&x, &tree_centers) {
        (Points::F64(a), Points::F64(b)) => go(py, a.as_array(), b.as_array(), children, n_threads),
        (Points::F32(a), Points::F32(b)) => go(py, a.as_array(), b.as_array(), children, n_threads),
        _ => Err(PyValueError::new_err(
            "points and centres must have the same dtype",
        )),
    }
}

/// The described methods, as (name, Python estimator or None, defaults as JSON, whether a
/// device backend takes part of its work).
#[pyfunction]
fn methods() -> Vec<(&'static str, Option<&'static str>, String, bool)> {
    clustr::methods::METHODS
        .iter()
        .map(|m| (m.name, m.python, (m.defaults)().to_string(), m.device.is_some()))
        .collect()
}

/// k-means' `init`: the given starts `init_centers` when not None, else the named method.
fn kmeans_init(p: &Params<'_>) -> PyResult<KMeansInit> {
    let centers = p
        .get("init_centers")?
        .extract::<Option<PyReadonlyArray2<'_, f64>>>()?;
    Ok(match (p.string("init")?.as_str(), centers) {
        (_, Some(c)) => KMeansInit::Given(c.as_array().to_owned()),
        ("k-means++", None) => KMeansInit::KMeansPlusPlus,
        ("random", None) => KMeansInit::Random,
        (other, None) => return Err(PyValueError::new_err(format!("unknown init {other:?}"))),
    })
}

/// Greedy k-means++ (scikit-learn's `kmeans_plusplus`): the rows picked as centres, in order.
#[pyfunction]
fn kmeans_plusplus_indices<'py>(
    py: Python<'py>,
    x: Points<'py>,
    params: Bound<'py, PyDict>,
    sample_weight: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyAny>> {
    let p = Params(params);
    let mut est = KMeansPlusPlus::new(p.get("n_clusters")?.extract()?).seed(p.seed()?);
    est.n_local_trials = p.get("n_local_trials")?.extract()?;
    est.sample_weight = sample_weight;
    let n_threads = p.n_threads()?;
    let picked = with_points!(x, v => run(py, n_threads, |_| est.indices(v))?);
    Ok(arr1(py, indices(&picked)))
}

/// Mini-batch k-means on points in memory, dense or sparse.
#[pyfunction]
fn minibatch_kmeans_fit<'py>(
    py: Python<'py>,
    x: AnyPoints<'py>,
    params: Bound<'py, PyDict>,
    sample_weight: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let p = Params(params);
    let (backend, ran_on) = p.backend("minibatch-kmeans")?;
    let mut est = minibatch_estimator(&p)?.backend(backend);
    est.sample_weight = sample_weight;
    let n_threads = p.n_threads()?;
    let report = p.report()?;
    with_any_points!(x, v => {
        let m = run_reporting(py, n_threads, report.clone(), |p| est.progress(p).fit(&v))?;
        out(py, vec![
            ("cluster_centers", arr2(py, m.centers)),
            ("labels", arr1(py, m.labels)),
            ("backend", val(py, ran_on)?),
            ("inertia", val(py, m.inertia)?),
            ("n_iter", val(py, m.n_iter)?),
            ("n_steps", val(py, m.n_steps)?),
            ("counts", arr1(py, m.counts)),
            ("converged", val(py, m.converged)?),
        ])
    })
}

/// One `partial_fit` step of mini-batch k-means on a batch, dense or sparse. Without `state`
/// (the first call) the centres start from the batch as scikit-learn's first call starts
/// them; otherwise the step continues from `state` = (centres, counts, points since the last
/// re-seeding check), which the Python layer keeps, re-seeding with draws from `seed`.
#[pyfunction]
fn minibatch_kmeans_partial_fit<'py>(
    py: Python<'py>,
    x: AnyPoints<'py>,
    params: Bound<'py, PyDict>,
    sample_weight: Option<Vec<f64>>,
    state: Option<(Points<'py>, Vec<f64>, usize)>,
) -> PyResult<Bound<'py, PyDict>> {
    /// The two forms of a batch.
    trait Batch<F: Scalar> {
        fn start(&self, est: &MiniBatchKMeans) -> clustr::Result<MiniBatchKMeansModel<F>>;
        fn step(&self, m: &mut MiniBatchKMeansModel<F>, w: Option<&[f64]>) -> clustr::Result<()>;
    }
    impl<F: Scalar> Batch<F> for ArrayView2<'_, F> {
        fn start(&self, est: &MiniBatchKMeans) -> clustr::Result<MiniBatchKMeansModel<F>> {
            est.partial_fit(*self)
        }
        fn step(&self, m: &mut MiniBatchKMeansModel<F>, w: Option<&[f64]>) -> clustr::Result<()> {
            m.partial_fit_weighted(*self, w)
        }
    }
    impl<F: Scalar> Batch<F> for clustr::data::CsrView<'_, F> {
        fn start(&self, est: &MiniBatchKMeans) -> clustr::Result<MiniBatchKMeansModel<F>> {
            est.partial_fit_sparse(*self)
        }
        fn step(&self, m: &mut MiniBatchKMeansModel<F>, w: Option<&[f64]>) -> clustr::Result<()> {
            m.partial_fit_sparse(*self, w)
        }
    }
    fn go<'py, F: Scalar + Element>(
        py: Python<'py>,
        x: impl Batch<F> + Sync,
        est: MiniBatchKMeans,
        seed: u64,
        state: &Option<(Points<'py>, Vec<f64>, usize)>,
        n_threads: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        let m = match state {
            None => run(py, n_threads, |_| x.start(&est))?,
            Some((centres, counts, since)) => {
                let centres = sparse::centres_as::<F>(centres);
                let mut m = MiniBatchKMeansModel::from_parts(
                    centres,
                    counts.clone(),
                    est.reassignment_ratio,
                    *since,
                    seed,
                )
                .map_err(to_py)?;
                let w = est.sample_weight.as_deref();
                run(py, n_threads, |_| x.step(&mut m, w))?;
                m
            }
        };
        out(
            py,
            vec![
                ("cluster_centers", arr2(py, m.centers.clone())),
                ("counts", arr1(py, m.counts.clone())),
                ("since_reassign", val(py, m.points_since_reassign())?),
            ],
        )
    }
    let p = Params(params);
    let mut est = minibatch_estimator(&p)?;
    est.sample_weight = sample_weight;
    let (seed, n_threads) = (p.seed()?, p.n_threads()?);
    with_any_points!(x, v => go(py, v, est, seed, &state, n_threads))
}

/// The mini-batch k-means estimator of the Python layer's parameters.
fn minibatch_estimator(p: &Params<'_>) -> PyResult<MiniBatchKMeans> {
    let mut est = MiniBatchKMeans::new(p.get("n_clusters")?.extract()?)
        .init(kmeans_init(p)?)
        .batch_size(p.get("batch_size")?.extract()?)
        .max_iter(p.get("max_iter")?.extract()?)
        .tol(p.get("tol")?.extract()?)
        .max_no_improvement(p.get("max_no_improvement")?.extract()?)
        .reassignment_ratio(p.get("reassignment_ratio")?.extract()?)
        .seed(p.seed()?);
    if let Some(s) = p.get("init_size")?.extract::<Option<usize>>()? {
        est = est.init_size(s);
    }
    if let Some(n) = p.get("n_init")?.extract::<Option<usize>>()? {
        est = est.n_init(n);
    }
    Ok(est)
}

/// New points against a fitted model's points (centres, medoids): finite, as many columns,
/// and within the range the fit accepts over both together (the library's predict rule).
fn check_new_points<F: Scalar>(x: ArrayView2<F>, c: ArrayView2<F>, m: &MetricKind) -> clustr::Result<()> {
    let arithmetic = clustr::data::validate::Arithmetic::of_metric(Some(*m));
    clustr::data::validate::check_new_points(x, c, arithmetic, &format!("the {m} distance"))
}

/// Nearest of `centres` under `metric` for each point: (index, distance).
#[pyfunction]
fn nearest<'py>(
    py: Python<'py>,
    x: Points<'py>,
    centres: Points<'py>,
    metric_name: &str,
    n_threads: usize,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let m = metric(metric_name)?;
    fn go<'py, F: Scalar + Element>(
        py: Python<'py>,
        x: ArrayView2<F>,
        c: ArrayView2<F>,
        m: &MetricKind,
        n_threads: usize,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let near = run(py, n_threads, |_| {
            check_new_points(x, c, m)?;
            CpuBackend::default().nearest(x, c, m)
        })?;
        let labels = near.iter().map(|n| n.index as i64).collect();
        let dist = near.iter().map(|n| n.distance).collect();
        Ok((arr1(py, labels), arr1::<F>(py, dist)))
    }
    match (&x, &centres) {
        (Points::F64(a), Points::F64(b)) => go(py, a.as_array(), b.as_array(), &m, n_threads),
        (Points::F32(a), Points::F32(b)) => go(py, a.as_array(), b.as_array(), &m, n_threads),
        _ => Err(PyValueError::new_err(
            "points and centres must have the same dtype",
        )),
    }
}

/// Distances of each point to each of `centres` under `metric` (n × k).
#[pyfunction]
fn pairwise<'py>(
    py: Python<'py>,
    x: Points<'py>,
    centres: Points<'py>,
    metric_name: &str,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let m = metric(metric_name)?;
    fn go<'py, F: Scalar + Element>(
        py: Python<'py>,
        x: ArrayView2<F>,
        c: ArrayView2<F>,
        m: &MetricKind,
        n_threads: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let d = run(py, n_threads, |_| {
            check_new_points(x, c, m)?;
            let mut d = Array2::<F>::zeros((x.nrows(), c.nrows()));
            CpuBackend::default().pairwise(x, c, m, d.view_mut())?;
            Ok(d)
        })?;
        Ok(arr2(py, d))
    }
    match (&x, &centres) {
        (Points::F64(a), Points::F64(b)) => go(py, a.as_array(), b.as_array(), &m, n_threads),
        (Points::F32(a), Points::F32(b)) => go(py, a.as_array(), b.as_array(), &m, n_threads),
        _ => Err(PyValueError::new_err(
            "points and centres must have the same dtype",
        )),
    }
}

fn covariance_type(name: &str) -> PyResult<CovarianceType> {
    name.parse().map_err(to_py)
}

/// Covariances of `kind` from a numpy array of the matching rank.
fn covariances(kind: CovarianceType, c: &Bound<'_, PyAny>) -> PyResult<Covariances> {
    Ok(match kind {
        CovarianceType::Full => {
            Covariances::Full(c.extract::<PyReadonlyArray3<f64>>()?.as_array().to_owned())
        }
        CovarianceType::Tied => {
            Covariances::Tied(c.extract::<PyReadonlyArray2<f64>>()?.as_array().to_owned())
        }
        CovarianceType::Diag => {
            Covariances::Diag(c.extract::<PyReadonlyArray2<f64>>()?.as_array().to_owned())
        }
        CovarianceType::Spherical => {
            Covariances::Spherical(c.extract::<PyReadonlyArray1<f64>>()?.as_array().to_owned())
        }
    })
}

fn covariances_out<'py>(py: Python<'py>, c: Covariances) -> Bound<'py, PyAny> {
    match c {
        Covariances::Full(a) => a.into_pyarray(py).into_any(),
        Covariances::Tied(a) | Covariances::Diag(a) => a.into_pyarray(py).into_any(),
        Covariances::Spherical(a) => a.into_pyarray(py).into_any(),
    }
}

/// A mixture's parameters as numpy gives them: weights, means and covariances.
type MixtureParts<'py> = (
    PyReadonlyArray1<'py, f64>,
    PyReadonlyArray2<'py, f64>,
    Bound<'py, PyAny>,
);

fn mixture(kind: &str, (weights, means, covs): MixtureParts<'_>) -> PyResult<Mixture> {
    let kind = covariance_type(kind)?;
    Mixture::from_parameters(
        weights.as_array().to_owned(),
        means.as_array().to_owned(),
        covariances(kind, &covs)?,
    )
    .map_err(to_py)
}

/// Gaussian mixture by EM. `start` = (weights, means, covariances) starts EM from these
/// parameters, its first improvement measured from `start_lower_bound`; `responsibilities`
/// (n × k) starts from the M-step of these; otherwise `init_params` draws the start.
#[pyfunction]
fn gmm_fit<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    params: Bound<'py, PyDict>,
    sample_weight: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let p = Params(params);
    let (_, ran_on) = p.backend("gmm")?;
    let covariance_type_name = p.string("covariance_type")?;
    let start = p.get("start")?.extract::<Option<MixtureParts<'py>>>()?;
    let responsibilities = p
        .get("responsibilities")?
        .extract::<Option<PyReadonlyArray2<'py, f64>>>()?;
    let init = match (start, responsibilities) {
        (Some(parts), _) => {
            let mut model = GaussianMixtureModel::from_mixture(mixture(&covariance_type_name, parts)?);
            // (a warm start measures its first improvement from the previous fit's bound)
            model.lower_bound = p.get("start_lower_bound")?.extract()?;
            GmmInit::WarmStart(Box::new(model))
        }
        (None, Some(r)) => GmmInit::Responsibilities(r.as_array().to_owned()),
        (None, None) => match p.string("init_params")?.as_str() {
            "kmeans" => GmmInit::KMeans,
            "k-means++" => GmmInit::KMeansPlusPlus,
            "random" => GmmInit::Random,
            "random_from_data" => GmmInit::RandomFromData,
            other => return Err(PyValueError::new_err(format!("unknown init_params {other:?}"))),
        },
    };
    let mut est = GaussianMixture::new(p.get("n_components")?.extract()?)
        .covariance_type(covariance_type(&covariance_type_name)?)
        .tol(p.get("tol")?.extract()?)
        .reg_covar(p.get("reg_covar")?.extract()?)
        .max_iter(p.get("max_iter")?.extract()?)
        .n_init(p.get("n_init")?.extract()?)
        .init(init)
        .seed(p.seed()?);
    if let Some(w) = sample_weight {
        est = est.sample_weight(w);
    }
    let n_threads = p.n_threads()?;
    let v = x.as_array();
    let m = run_reporting(py, n_threads, p.report()?, |p| est.progress(p).fit(&v))?;
    let mix = m.mixture;
    out(
        py,
        vec![
            ("weights", mix.weights.into_pyarray(py).into_any()),
            ("means", arr2(py, mix.means)),
            ("covariances", covariances_out(py, mix.covariances)),
            (
                "precisions_cholesky",
                covariances_out(py, mix.precisions_cholesky),
            ),
            ("labels", arr1(py, m.labels)),
            ("backend", val(py, ran_on)?),
            ("lower_bound", val(py, m.lower_bound)?),
            ("lower_bounds", arr1(py, m.lower_bounds)),
            ("n_iter", val(py, m.n_iter)?),
            ("converged", val(py, m.converged)?),
        ],
    )
}

/// Posterior probabilities (n × k) and log-likelihood of each point under a mixture
/// (weights, means, covariances), and the mixture's number of free parameters (for BIC and
/// AIC).
#[pyfunction]
fn gmm_e_step<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    covariance_type_name: &str,
    parts: MixtureParts<'py>,
    n_threads: usize,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, usize)> {
    let model = GaussianMixtureModel::from_mixture(mixture(covariance_type_name, parts)?);
    let v = x.as_array();
    let (proba, scores) = run(py, n_threads, |_| {
        Ok((model.predict_proba(v)?, model.score_samples(v)?))
    })?;
    Ok((
        arr2(py, proba),
        scores.into_pyarray(py).into_any(),
        model.mixture.n_parameters(),
    ))
}

/// Which k-medoids algorithm a `method` name runs.
enum Medoids {
    Swap(KMedoids),
    Clara(Clara),
    Clarans(Clarans),
}

impl Medoids {
    fn fit<D>(self, d: &D, p: ProgressFn) -> clustr::Result<KMedoidsModel<f64>>
    where
        D: Dissimilarity,
        D::Value: KValue<Loss = f64>,
    {
        match self {
            Medoids::Swap(e) => e.progress(p).fit(d),
            Medoids::Clara(e) => e.progress(p).fit(d),
            Medoids::Clarans(e) => e.progress(p).fit(d),
        }
    }

    /// Fits points with the method's own call: its distances where it computes them (a
    /// matrix for the swap methods, on the fly for the sampling ones, on its backend).
    fn fit_points<F: Scalar + KValue<Loss = f64>>(
        self,
        x: ArrayView2<F>,
        metric: MetricKind,
        p: ProgressFn,
    ) -> clustr::Result<KMedoidsModel<f64>> {
        match self {
            Medoids::Swap(e) => e.progress(p).metric(metric).fit(&x),
            Medoids::Clara(e) => e.progress(p).metric(metric).fit(&x),
            Medoids::Clarans(e) => e.progress(p).metric(metric).fit(&x),
        }
    }

    /// Fits sparse rows: the swap methods on their distance matrix, the sampling ones with
    /// the distances computed when needed.
    fn fit_sparse<F: Scalar + KValue<Loss = f64>>(
        self,
        x: clustr::data::CsrView<F>,
        metric: MetricKind,
        p: ProgressFn,
    ) -> clustr::Result<KMedoidsModel<f64>> {
        match self {
            Medoids::Swap(e) => e.progress(p).metric(metric).fit(&x),
            Medoids::Clara(e) => e.progress(p).metric(metric).fit(&x),
            Medoids::Clarans(e) => e.progress(p).metric(metric).fit(&x),
        }
    }
}

/// k-medoids on points under `metric`, or on a precomputed square matrix (`metric` =
/// "precomputed"); `medoids_init` (or None) are the given starts, else `init` (None: the
/// method's own).
#[pyfunction]
fn kmedoids_fit<'py>(
    py: Python<'py>,
    x: AnyPoints<'py>,
    params: Bound<'py, PyDict>,
    sample_weight: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let p = Params(params);
    let k: usize = p.get("n_clusters")?.extract()?;
    let method = p.string("method")?;
    let method = method.as_str();
    let (max_iter, seed): (usize, u64) = (p.get("max_iter")?.extract()?, p.seed()?);
    let (backend, ran_on) = p.backend(method)?;
    let est = match method {
        "pam" | "fastpam1" | "fastpam2" | "fasterpam" | "alternating" => {
            let mut e = match method {
                "pam" => KMedoids::pam(k),
                "fastpam1" => KMedoids::fastpam1(k),
                "fastpam2" => KMedoids::fastpam2(k),
                "fasterpam" => KMedoids::fasterpam(k),
                _ => KMedoids::alternating(k),
            }
            .seed(seed)
            .max_iter(max_iter)
            .backend(backend);
            let given = p.get("medoids_init")?.extract::<Option<Vec<usize>>>()?;
            match (given, p.get("init")?.extract::<Option<String>>()?) {
                (Some(m), _) => e = e.init(Init::Given(m)),
                (None, Some(name)) => e = e.init(name.parse().map_err(to_py)?),
                // The method's own default: BUILD for PAM and FastPAM1, random otherwise.
                (None, None) => {}
            }
            e.sample_weight = sample_weight;
            Medoids::Swap(e)
        }
        "clara" | "fastclara" | "fasterclara" => {
            let mut e = match method {
                "clara" => Clara::new(k),
                "fastclara" => Clara::fastclara(k),
                _ => Clara::fasterclara(k),
            }
            .samples(p.get("samples")?.extract()?)
            .max_iter(max_iter)
            .seed(seed)
            .backend(backend);
            if let Some(s) = p.get("sample_size")?.extract::<Option<usize>>()? {
                e = e.sample_size(s);
            }
            e.sample_weight = sample_weight;
            Medoids::Clara(e)
        }
        "clarans" | "fastclarans" => {
            let mut e = if method == "clarans" {
                Clarans::new(k)
            } else {
                Clarans::fastclarans(k)
            };
            if let Some(m) = p.get("maxneighbor")?.extract::<Option<f64>>()? {
                e = e.maxneighbor(m);
            }
            e.sample_weight = sample_weight;
            Medoids::Clarans(e.numlocal(p.get("numlocal")?.extract()?).seed(seed))
        }
        other => return Err(PyValueError::new_err(format!("unknown method {other:?}"))),
    };
    let metric_name = p.string("metric")?;
    let n_threads = p.n_threads()?;
    let model = match &x {
        AnyPoints::Dense(x) => with_points!(x, v => {
            if metric_name == "precomputed" {
                run(py, n_threads, |p| est.fit(&DenseMatrix::new(v)?, p))?
            } else {
                let m = metric(&metric_name)?;
                run(py, n_threads, |p| est.fit_points(v, m, p))?
            }
        }),
        AnyPoints::Sparse(x) => {
            let m = metric(&metric_name)?;
            with_sparse!(x, v => run(py, n_threads, |p| est.fit_sparse(v, m, p))?)
        }
    };
    out(
        py,
        vec![
            ("medoid_indices", arr1(py, indices(&model.medoids))),
            ("initial_medoids", arr1(py, indices(&model.initial_medoids))),
            ("labels", arr1(py, model.labels)),
            ("backend", val(py, ran_on)?),
            ("inertia", val(py, model.loss)?),
            ("n_iter", val(py, model.n_iter)?),
            ("n_swaps", val(py, model.n_swaps)?),
            ("converged", val(py, model.converged)?),
        ],
    )
}

/// DBSCAN.
#[pyfunction]
fn dbscan_fit<'py>(
    py: Python<'py>,
    x: AnyPoints<'py>,
    params: Bound<'py, PyDict>,
    sample_weight: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let (est, ran_on, n_threads) = dbscan(params, sample_weight)?;
    let m = with_any_points!(x, v => run(py, n_threads, |_| est.fit(&v))?);
    dbscan_out(py, m, ran_on)
}

/// DBSCAN on a precomputed sparse neighbourhood graph (its stored entries).
#[pyfunction]
fn dbscan_graph_fit<'py>(
    py: Python<'py>,
    graph: sparse::SparseRows<'py>,
    params: Bound<'py, PyDict>,
    sample_weight: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let (est, ran_on, n_threads) = dbscan(params, sample_weight)?;
    let m = with_sparse!(graph, g => run(py, n_threads, |_| est.fit_graph(g))?);
    dbscan_out(py, m, ran_on)
}

/// The DBSCAN estimator of the Python parameters, where it runs and on how many threads.
fn dbscan(
    params: Bound<'_, PyDict>,
    sample_weight: Option<Vec<f64>>,
) -> PyResult<(Dbscan, &'static str, usize)> {
    let p = Params(params);
    let (_, ran_on) = p.backend("dbscan")?;
    let mut est = Dbscan::new(p.get("eps")?.extract()?)
        .min_samples(p.get("min_samples")?.extract()?)
        .metric(metric(&p.string("metric")?)?)
        .index(index(&p.string("algorithm")?)?);
    if let Some(w) = sample_weight {
        est = est.sample_weight(w);
    }
    Ok((est, ran_on, p.n_threads()?))
}

fn dbscan_out<'py>(
    py: Python<'py>,
    m: clustr::density::dbscan::DbscanModel,
    ran_on: &str,
) -> PyResult<Bound<'py, PyDict>> {
    out(
        py,
        vec![
            ("labels", arr1(py, m.labels)),
            ("backend", val(py, ran_on)?),
            ("core_sample_indices", arr1(py, indices(&m.core_sample_indices))),
        ],
    )
}

/// HDBSCAN on dense or sparse points under `metric`, or on a precomputed square matrix.
#[pyfunction]
fn hdbscan_fit<'py>(
    py: Python<'py>,
    x: AnyPoints<'py>,
    params: Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let p = Params(params);
    let (_, ran_on) = p.backend("hdbscan")?;
    let est = hdbscan_params(&p)?;
    let metric_name = p.string("metric")?;
    let n_threads = p.n_threads()?;
    let m = match &x {
        AnyPoints::Dense(x) if metric_name == "precomputed" => {
            with_points!(x, v => run(py, n_threads, |_| est.fit_precomputed(&DenseMatrix::new(v)?))?)
        }
        _ => {
            let est = est.metric(metric(&metric_name)?);
            with_any_points!(x, v => run(py, n_threads, |p| est.progress(p).fit(&v))?)
        }
    };
    hdbscan_out(py, m, ran_on)
}

/// HDBSCAN from a spanning tree of the mutual-reachability graph of `n` points (edges
/// `(a[i], b[i], w[i])`) and their core distances: scikit-learn's sparse precomputed path.
#[pyfunction]
fn hdbscan_tree_fit<'py>(
    py: Python<'py>,
    n: usize,
    edges: (Vec<usize>, Vec<usize>, Vec<f64>),
    core_distances: Vec<f64>,
    params: Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let p = Params(params);
    let (_, ran_on) = p.backend("hdbscan")?;
    let est = hdbscan_params(&p)?;
    let (a, b, w) = edges;
    if a.len() != b.len() || a.len() != w.len() {
        return Err(PyValueError::new_err(
            "the edges' ends and weights differ in length",
        ));
    }
    let edges = a
        .into_iter()
        .zip(b)
        .zip(w)
        .map(|((a, b), w)| Edge { a, b, w })
        .collect();
    let m = run(py, p.n_threads()?, |_| {
        est.fit_spanning_tree(n, edges, core_distances)
    })?;
    hdbscan_out(py, m, ran_on)
}

/// HDBSCAN's parameters from the Python layer's dict.
fn hdbscan_params(p: &Params<'_>) -> PyResult<Hdbscan> {
    let mut est = Hdbscan::new(p.get("min_cluster_size")?.extract()?)
        .cluster_selection_epsilon(p.get("cluster_selection_epsilon")?.extract()?)
        .cluster_selection_epsilon_max(p.get("cluster_selection_epsilon_max")?.extract()?)
        .cluster_selection_persistence(p.get("cluster_selection_persistence")?.extract()?)
        .alpha(p.get("alpha")?.extract()?)
        .cluster_selection_method(p.string("cluster_selection_method")?.parse().map_err(to_py)?)
        .allow_single_cluster(p.get("allow_single_cluster")?.extract()?)
        .index(index(&p.string("algorithm")?)?);
    est.min_samples = p.get("min_samples")?.extract()?;
    est.max_cluster_size = p.get("max_cluster_size")?.extract()?;
    Ok(est)
}

/// A fitted HDBSCAN as the Python layer reads it.
fn hdbscan_out<'py>(py: Python<'py>, m: HdbscanModel, ran_on: &str) -> PyResult<Bound<'py, PyDict>> {
    out(
        py,
        vec![
            ("labels", arr1(py, m.labels)),
            ("backend", val(py, ran_on)?),
            ("probabilities", m.probabilities.into_pyarray(py).into_any()),
            ("outlier_scores", m.outlier_scores.into_pyarray(py).into_any()),
            (
                "single_linkage_tree",
                arr2(py, linkage_matrix(&m.single_linkage_tree)),
            ),
            (
                "condensed_tree",
                arr2(py, condensed_tree_matrix(&m.condensed_tree)),
            ),
            (
                "minimum_spanning_tree",
                arr2(py, edge_matrix(&m.minimum_spanning_tree)),
            ),
            ("core_distances", m.core_distances.into_pyarray(py).into_any()),
            ("selected_clusters", arr1(py, indices(&m.selected_clusters))),
        ],
    )
}

/// HDBSCAN on new points and soft clustering (the hdbscan package's prediction functions),
/// from a fit on `points` (f64) given by its condensed tree (rows parent, child, λ, size) and
/// selected clusters: `what` is `"approximate_predict"` (labels, probabilities, neighbours of
/// `new`), `"membership_vector"` (of `new`) or `"all_points_membership_vectors"`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn hdbscan_prediction<'py>(
    py: Python<'py>,
    points: PyReadonlyArray2<'py, f64>,
    metric_name: &str,
    min_samples: usize,
    condensed_tree: PyReadonlyArray2<'py, f64>,
    selected: Vec<usize>,
    what: &str,
    new: Option<PyReadonlyArray2<'py, f64>>,
    n_threads: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let rows: Vec<CondensedRow> = condensed_tree
        .as_array()
        .rows()
        .into_iter()
        .map(|r| CondensedRow {
            parent: r[0] as usize,
            child: r[1] as usize,
            lambda: r[2],
            size: r[3] as usize,
        })
        .collect();
    let points = points.as_array().to_owned();
    let new = new.map(|a| a.as_array().to_owned());
    let metric = metric(metric_name)?;
    let needs_new = || {
        new.as_ref()
            .ok_or_else(|| clustr::Error::Unsupported(format!("{what} needs new points")))
    };
    let predictor = || HdbscanPredictor::new(points, metric, min_samples, rows, selected);
    match what {
        "approximate_predict" => {
            let p = run(py, n_threads, |_| {
                predictor()?.approximate_predict(needs_new()?.view())
            })?;
            out(
                py,
                vec![
                    ("labels", arr1(py, p.labels)),
                    ("probabilities", p.probabilities.into_pyarray(py).into_any()),
                    ("neighbors", arr1(py, p.neighbors)),
                ],
            )
        }
        "membership_vector" => {
            let m = run(py, n_threads, |_| {
                predictor()?.membership_vectors(needs_new()?.view())
            })?;
            out(py, vec![("membership", arr2(py, m))])
        }
        "all_points_membership_vectors" => {
            let m = run(py, n_threads, |_| predictor()?.all_points_membership_vectors())?;
            out(py, vec![("membership", arr2(py, m))])
        }
        _ => Err(PyValueError::new_err(format!("unknown prediction {what:?}"))),
    }
}

/// The condensed tree as rows (parent, child, lambda, child size), the hdbscan package's
/// `condensed_tree_.to_numpy()` columns.
fn condensed_tree_matrix(tree: &[CondensedRow]) -> Array2<f64> {
    Array2::from_shape_fn((tree.len(), 4), |(i, j)| {
        let r = &tree[i];
        [r.parent as f64, r.child as f64, r.lambda, r.size as f64][j]
    })
}

/// Spanning-tree edges as rows (one end, the other end, weight).
fn edge_matrix(edges: &[Edge]) -> Array2<f64> {
    Array2::from_shape_fn((edges.len(), 3), |(i, j)| {
        [edges[i].a as f64, edges[i].b as f64, edges[i].w][j]
    })
}

/// OPTICS on dense or sparse points; `min_samples` and `min_cluster_size` as counts (the
/// Python layer resolves fractions).
#[pyfunction]
fn optics_fit<'py>(
    py: Python<'py>,
    x: AnyPoints<'py>,
    params: Bound<'py, PyDict>,
    sample_weight: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let (est, ran_on, n_threads) = optics(params, sample_weight)?;
    let m = with_any_points!(x, v => run(py, n_threads, |_| est.fit(&v))?);
    optics_out(py, m, ran_on)
}

/// OPTICS on a precomputed sparse neighbourhood graph (its stored entries).
#[pyfunction]
fn optics_graph_fit<'py>(
    py: Python<'py>,
    graph: sparse::SparseRows<'py>,
    params: Bound<'py, PyDict>,
    sample_weight: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let (est, ran_on, n_threads) = optics(params, sample_weight)?;
    let m = with_sparse!(graph, g => run(py, n_threads, |_| est.fit_graph(g))?);
    optics_out(py, m, ran_on)
}

/// The OPTICS estimator of the Python parameters, where it runs and on how many threads.
fn optics(
    params: Bound<'_, PyDict>,
    sample_weight: Option<Vec<f64>>,
) -> PyResult<(Optics, &'static str, usize)> {
    let p = Params(params);
    let (_, ran_on) = p.backend("optics")?;
    let max_eps: f64 = p.get("max_eps")?.extract()?;
    let extraction = match p.string("cluster_method")?.as_str() {
        "xi" => Extraction::Xi(p.get("xi")?.extract()?),
        "dbscan" => Extraction::Dbscan(p.get("eps")?.extract::<Option<f64>>()?.unwrap_or(max_eps)),
        other => return Err(PyValueError::new_err(format!("unknown cluster_method {other:?}"))),
    };
    let mut est = Optics::new(p.get("min_samples")?.extract()?)
        .max_eps(max_eps)
        .metric(metric(&p.string("metric")?)?)
        .index(index(&p.string("algorithm")?)?)
        .extraction(extraction)
        .predecessor_correction(p.get("predecessor_correction")?.extract()?);
    if let Some(m) = p.get("min_cluster_size")?.extract::<Option<usize>>()? {
        est = est.min_cluster_size(m);
    }
    est.sample_weight = sample_weight;
    Ok((est, ran_on, p.n_threads()?))
}

/// The Python layer's dict of an OPTICS result.
fn optics_out<'py>(
    py: Python<'py>,
    m: clustr::density::OpticsModel,
    ran_on: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let hierarchy = Array2::from_shape_fn((m.clusters.len(), 2), |(i, j)| {
        let (a, b) = m.clusters[i];
        if j == 0 {
            a as i64
        } else {
            b as i64
        }
    });
    out(
        py,
        vec![
            ("ordering", arr1(py, indices(&m.ordering))),
            ("reachability", arr1(py, m.reachability)),
            ("core_distances", arr1(py, m.core_distances)),
            ("predecessor", arr1(py, m.predecessor)),
            ("labels", arr1(py, m.labels)),
            ("backend", val(py, ran_on)?),
            ("cluster_hierarchy", arr2(py, hierarchy)),
        ],
    )
}

fn power_init(init: &str) -> PyResult<PowerInit> {
    Ok(match init {
        "k-means++" => PowerInit::KMeansPlusPlus,
        "random" => PowerInit::Random,
        other => return Err(PyValueError::new_err(format!("unknown init {other:?}"))),
    })
}

/// The annealing schedule: clustr's default for the method, with the values given.
fn schedule(base: Schedule, p: &Params<'_>) -> PyResult<Schedule> {
    Ok(Schedule {
        s0: p.get("s0")?.extract::<Option<f64>>()?.unwrap_or(base.s0),
        eta: p.get("eta")?.extract()?,
        max_iter: p.get("max_iter")?.extract()?,
        tol: p.get("tol")?.extract()?,
        ..base
    })
}

/// Power k-means on the points' coordinates.
#[pyfunction]
fn power_kmeans_fit<'py>(
    py: Python<'py>,
    x: Points<'py>,
    params: Bound<'py, PyDict>,
    sample_weight: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let p = Params(params);
    let (backend, ran_on) = p.backend("power-kmeans")?;
    let base = PowerKMeans::new(p.get("n_clusters")?.extract()?);
    let sched = schedule(base.schedule, &p)?;
    let mut est = base
        .backend(backend)
        .schedule(sched)
        .n_init(p.get("n_init")?.extract()?)
        .init(power_init(&p.string("init")?)?)
        .seed(p.seed()?);
    est.sample_weight = sample_weight;
    let n_threads = p.n_threads()?;
    with_points!(x, v => {
        let m = run(py, n_threads, |p| est.progress(p).fit(&v))?;
        out(py, vec![
            ("cluster_centers", arr2(py, m.centers)),
            ("labels", arr1(py, m.fit.labels)),
            ("backend", val(py, ran_on)?),
            ("objective", val(py, m.fit.objective)?),
            ("n_iter", val(py, m.fit.n_iter)?),
            ("converged", val(py, m.fit.converged)?),
            ("s", val(py, m.fit.s)?),
        ])
    })
}

fn bandwidth(sigma: Option<f64>) -> Bandwidth {
    sigma.map_or(Bandwidth::Median, Bandwidth::Given)
}

/// Kernel power k-means on random Fourier features of a Gaussian kernel.
#[pyfunction]
fn rff_kpkm_fit<'py>(
    py: Python<'py>,
    x: Points<'py>,
    params: Bound<'py, PyDict>,
    sample_weight: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let p = Params(params);
    let (backend, ran_on) = p.backend("rff-kpkm")?;
    let base = RffKpkm::new(p.get("n_clusters")?.extract()?);
    let sched = schedule(base.schedule, &p)?;
    let mut est = base
        .backend(backend)
        .schedule(sched)
        .n_features(p.get("n_components")?.extract()?)
        .bandwidth(bandwidth(p.get("sigma")?.extract()?))
        .n_init(p.get("n_init")?.extract()?)
        .init(power_init(&p.string("init")?)?)
        .seed(p.seed()?);
    est.sample_weight = sample_weight;
    let n_threads = p.n_threads()?;
    with_points!(x, v => {
        let m = run(py, n_threads, |p| est.progress(p).fit(&v))?;
        let f = m.features;
        out(py, vec![
            ("cluster_centers", arr2(py, m.power.centers)),
            ("labels", arr1(py, m.power.fit.labels)),
            ("backend", val(py, ran_on)?),
            ("random_weights", arr2(py, f.omega)),
            ("random_offset", f.offset.into_pyarray(py).into_any()),
            ("sigma", val(py, f.sigma)?),
            ("objective", val(py, m.power.fit.objective)?),
            ("n_iter", val(py, m.power.fit.n_iter)?),
            ("converged", val(py, m.power.fit.converged)?),
        ])
    })
}

/// The random Fourier features of points under a fitted map.
#[pyfunction]
fn rff_transform<'py>(
    py: Python<'py>,
    x: Points<'py>,
    random_weights: PyReadonlyArray2<'py, f64>,
    random_offset: PyReadonlyArray1<'py, f64>,
    sigma: f64,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let map = RandomFourierFeatures {
        omega: random_weights.as_array().to_owned(),
        offset: random_offset.as_array().to_owned(),
        sigma,
    };
    with_points!(x, v => Ok(arr2(py, run(py, n_threads, |_| map.transform(v))?)))
}

/// IP-RFF-MKPKM: several Gaussian kernels, optionally with possibilistic typicalities.
#[pyfunction]
fn ip_rff_mkpkm_fit<'py>(
    py: Python<'py>,
    x: Points<'py>,
    params: Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let p = Params(params);
    let (_, ran_on) = p.backend("ip-rff-mkpkm")?;
    let base = IpRffMkpkm::new(p.get("n_clusters")?.extract()?);
    let sched = schedule(base.schedule, &p)?;
    let mut est = base
        .schedule(sched)
        .n_features(p.get("n_components")?.extract()?)
        .possibilistic(p.get("possibilistic")?.extract()?)
        .m_p(p.get("m_p")?.extract()?)
        .n_init(p.get("n_init")?.extract()?)
        .init(power_init(&p.string("init")?)?)
        .seed(p.seed()?);
    if let Some(f) = p.get("sigma_factors")?.extract::<Option<Vec<f64>>>()? {
        est = est.sigma_factors(f);
    }
    if let Some(s) = p.get("sigmas")?.extract::<Option<Vec<f64>>>()? {
        est = est.sigmas(s);
    }
    let n_threads = p.n_threads()?;
    with_points!(x, v => {
        let m = run(py, n_threads, |p| est.progress(p).fit(&v))?;
        let typicality = m.typicality();
        let sigmas: Vec<f64> = m.features.iter().map(|f| f.sigma).collect();
        out(py, vec![
            ("labels", arr1(py, m.labels)),
            ("backend", val(py, ran_on)?),
            ("kernel_weights", arr1(py, m.kernel_weights)),
            ("sigmas", arr1(py, sigmas)),
            ("typicality", arr1(py, typicality)),
            ("typicalities", arr2(py, m.typicalities)),
            ("objective", val(py, m.objective)?),
            ("n_iter", val(py, m.n_iter)?),
            ("converged", val(py, m.converged)?),
        ])
    })
}

/// Sets the memory limit of every later fit (bytes or a size such as "4G"; `None`: clustr's
/// default, 80% of the memory the process may still take, cgroup limits included). Fits above
/// it raise `MemoryError` with the estimate before allocating.
#[pyfunction]
#[pyo3(signature = (limit))]
fn set_max_memory(limit: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let bytes = match limit {
        None => None,
        Some(v) => match v.extract::<u64>() {
            Ok(b) => Some(b),
            Err(_) => Some(clustr::memory::parse_size(&v.extract::<String>()?).map_err(to_py)?),
        },
    };
    clustr::memory::set_max_memory(bytes);
    Ok(())
}

/// The memory limit now in force, in bytes.
#[pyfunction]
fn max_memory() -> u64 {
    clustr::memory::max_memory()
}

#[pymodule]
fn _clustr(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(kmeans_fit, m)?)?;
    m.add_function(wrap_pyfunction!(bisecting_kmeans_fit, m)?)?;
    m.add_function(wrap_pyfunction!(bisecting_kmeans_predict, m)?)?;
    m.add_function(wrap_pyfunction!(methods, m)?)?;
    m.add_function(wrap_pyfunction!(kmeans_plusplus_indices, m)?)?;
    m.add_function(wrap_pyfunction!(minibatch_kmeans_fit, m)?)?;
    m.add_function(wrap_pyfunction!(minibatch_kmeans_partial_fit, m)?)?;
    m.add_function(wrap_pyfunction!(nearest, m)?)?;
    m.add_function(wrap_pyfunction!(pairwise, m)?)?;
    m.add_function(wrap_pyfunction!(gmm_fit, m)?)?;
    m.add_function(wrap_pyfunction!(gmm_e_step, m)?)?;
    m.add_function(wrap_pyfunction!(kmedoids_fit, m)?)?;
    m.add_function(wrap_pyfunction!(dbscan_fit, m)?)?;
    m.add_function(wrap_pyfunction!(hdbscan_fit, m)?)?;
    m.add_function(wrap_pyfunction!(hdbscan_tree_fit, m)?)?;
    m.add_function(wrap_pyfunction!(hdbscan_prediction, m)?)?;
    m.add_function(wrap_pyfunction!(optics_fit, m)?)?;
    m.add_function(wrap_pyfunction!(optics_graph_fit, m)?)?;
    m.add_function(wrap_pyfunction!(power_kmeans_fit, m)?)?;
    m.add_function(wrap_pyfunction!(rff_kpkm_fit, m)?)?;
    m.add_function(wrap_pyfunction!(rff_transform, m)?)?;
    m.add_function(wrap_pyfunction!(ip_rff_mkpkm_fit, m)?)?;
    m.add_function(wrap_pyfunction!(set_max_memory, m)?)?;
    m.add_function(wrap_pyfunction!(max_memory, m)?)?;
    m.add_function(wrap_pyfunction!(sparse::sparse_nearest, m)?)?;
    m.add_function(wrap_pyfunction!(dbscan_graph_fit, m)?)?;
    m.add_function(wrap_pyfunction!(sparse::sparse_transform, m)?)?;
    m.add_function(wrap_pyfunction!(sparse::sparse_distances, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
