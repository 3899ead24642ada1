//! k-means (Lloyd 1982) with scikit-learn's semantics (`sklearn.cluster.KMeans`, 1.x):
//! greedy k-means++ seeding (Arthur & Vassilvitskii 2007, with 2 + ⌊ln k⌋ candidates per
//! step as scikit-learn), a tolerance relative to the data (tol × mean feature variance),
//! stopping when the labels no longer change or the squared centre shift falls to that
//! tolerance, then a final assignment so labels, centres and inertia agree; `n_init` runs
//! keeping the lowest inertia (the sum of squared distances).
//!
//! The assignment step is the backend's GEMM-based nearest-centre kernel in row blocks; the
//! centre update sums fixed row chunks in order, so results do not depend on the thread count.
//! Empty clusters are re-seeded as scikit-learn does: each takes the point farthest from its
//! current centre (farthest first), which leaves its old cluster.
//!
//! Hamerly (2010) and Elkan (2003) keep distance bounds that skip most of Lloyd's distance
//! computations and give Lloyd's result (labels, centres, iterations), up to exact distance ties.
//!
//! Hamerly's points whose bounds fail are gathered and searched together on the same kernel;
//! Elkan's k bounds per point are kept scalar (n·k memory; it wins only at high d, small k).
//!
//! `Algorithm::Auto` picks one of the three from k and d (see [`Algorithm::resolve`]) by this
//! crossover table: seconds per iteration, n = 100,000 make_blobs, 5 iterations from
//! scikit-learn's k-means++ centres, one thread, median of 5 runs (paper-repro/highk_kmeans.py,
//! results in paper-repro/results/highk_kmeans.md), Lloyd · Hamerly · Elkan, float64 then
//! float32, fastest in bold:
//!
//! | d \ k | 16 | 64 | 256 | 1024 | 4096 |
//! |---|---|---|---|---|---|
//! | 16 | .018 · **.016** · .017 | .025 · **.021** · .051 | .045 · **.031** · .147 | .204 · **.145** · .935 | .601 · **.393** · – |
//! | | .021 · **.014** · .014 | .023 · **.018** · .046 | .033 · **.025** · .143 | .066 · **.056** · .592 | .218 · **.148** · – |
//! | 64 | .098 · .101 · **.097** | .091 · **.061** · .097 | .188 · **.132** · .312 | .386 · **.215** · .711 | 1.95 · **1.49** · – |
//! | | .093 · .092 · **.091** | .067 · **.061** · .101 | .110 · **.080** · .229 | .304 · **.140** · .719 | 1.12 · **.77** · – |
//! | 256 | **.405** · .446 · .438 | .398 · **.283** · .367 | .668 · **.352** · .557 | 2.20 · **1.80** · 4.93 | |
//! | | .293 · .298 · **.278** | .220 · **.196** · .201 | .324 · **.236** · .480 | 1.36 · **.89** · 2.77 | |
//!
//! (– : Elkan's n·k bounds not run at k = 4096.) Hamerly, its failing points searched on the
//! kernel, is fastest or within 4 % nearly everywhere; at d ≥ 128 with k ≤ 16 it is 10 % behind
//! Lloyd in float64, so `Auto` runs Lloyd there and Hamerly elsewhere. Elkan is never the
//! choice: its per-point k bounds cost more than they save from k = 64 up. From a random start
//! (centres that move far in the first iterations), Lloyd led Hamerly by up to 28 % at d = 16,
//! k ≥ 1024 over 5 iterations; over a whole run the bounds recover that, and k-means++ is the
//! default start. The choice does not depend on the thread count or n (all three parallelise
//! over points, and cost per point).

pub mod minibatch;

pub use minibatch::{MiniBatchKMeans, MiniBatchKMeansModel, RowSource};

use crate::backend::{AnyBackend, Backend, CpuBackend};
use crate::comm::{agree, fetch_rows, single_process, Communicator, Partition, SharedComm, SingleProcess};
use crate::data::validate::{
    check_k, check_magnitude_global, check_points, check_positive_weights, check_same_len,
    check_sample_weight, check_slice, Arithmetic,
};
use crate::error::{Error, Result};
use crate::estimator::{Clustering, Fit, Predict, Progress, ProgressFn};
use crate::memory::{check_fit, product, MemoryEstimate};
use crate::metric::MetricKind;
use crate::model_file::{SaveLoad, StoredArray};
use crate::rng::SeededRng;
use crate::scalar::Scalar;
use ndarray::{Array2, ArrayView2, Axis};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

/// How the initial centres are chosen.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum KMeansInit {
    /// Greedy k-means++ (scikit-learn's default).
    #[default]
    KMeansPlusPlus,
    /// k distinct points uniformly at random.
    Random,
    /// These centres (k × d).
    Given(Array2<f64>),
}

impl KMeansInit {
    /// Given centres must be k × d and finite; the other choices need no check.
    pub(crate) fn check(&self, k: usize, d: usize) -> Result<()> {
        if let KMeansInit::Given(c) = self {
            if c.dim() != (k, d) {
                return Err(Error::ShapeMismatch {
                    what: "initial centres".into(),
                    expected: format!("{k} x {d}"),
                    got: format!("{} x {}", c.nrows(), c.ncols()),
                });
            }
            crate::data::validate::check_finite(c.view(), "initial centres")?;
        }
        Ok(())
    }
}

/// The assignment step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Algorithm {
    /// Every point against every centre, through the backend's GEMM kernel.
    Lloyd,
    /// Hamerly (2010): one upper and one lower bound per point skip most distance
    /// computations; the same labels as Lloyd (up to exact ties).
    Hamerly,
    /// Elkan (2003): an upper bound and k lower bounds per point (n·k memory) and the
    /// centre-to-centre distances; the same labels as Lloyd (up to exact ties).
    Elkan,
    /// Chosen from n, k and d by [`Algorithm::resolve`] (the default: all three give Lloyd's
    /// result, so only the time depends on the choice; scikit-learn's default is `"lloyd"`).
    #[default]
    Auto,
}

impl Algorithm {
    /// The assignment step `Auto` runs (from the measured table of the module comment): Lloyd
    /// for d ≥ 128 with k ≤ 16, Hamerly otherwise. Other choices are returned unchanged.
    pub fn resolve(self, _n: usize, k: usize, d: usize) -> Algorithm {
        match self {
            Algorithm::Auto if d >= 128 && k <= 16 => Algorithm::Lloyd,
            Algorithm::Auto => Algorithm::Hamerly,
            other => other,
        }
    }

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Lloyd => "lloyd",
            Algorithm::Hamerly => "hamerly",
            Algorithm::Elkan => "elkan",
            Algorithm::Auto => "auto",
        }
    }
}

impl std::str::FromStr for Algorithm {
    type Err = Error;
    /// `lloyd`, `hamerly`, `elkan` or `auto` ([`Algorithm::name`]).
    fn from_str(s: &str) -> Result<Self> {
        [
            Algorithm::Lloyd,
            Algorithm::Hamerly,
            Algorithm::Elkan,
            Algorithm::Auto,
        ]
        .into_iter()
        .find(|a| a.name() == s)
        .ok_or_else(|| Error::param("algorithm", s, "expected lloyd, hamerly, elkan or auto"))
    }
}

/// Parameters of k-means (the estimator).
///
/// ```
/// use clustr::prelude::*;
/// let x = clustr::datasets::load("iris")?.data;
/// let model = clustr::kmeans::KMeans::new(3).n_init(4).seed(1).fit(&x.view())?;
/// assert_eq!(model.predict(&x.view())?, model.labels);
/// assert_eq!(model.n_clusters(), 3);
/// # Ok::<(), clustr::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct KMeans {
    /// Number of clusters.
    pub k: usize,
    /// Initialisation.
    pub init: KMeansInit,
    /// Runs from different seeds, the lowest inertia kept. `None` = scikit-learn's `"auto"`:
    /// 1 for k-means++ and given centres, 10 for random.
    pub n_init: Option<usize>,
    /// Maximum Lloyd iterations per run (default 300).
    pub max_iter: usize,
    /// Relative tolerance (default 1e-4), multiplied by the mean feature variance.
    pub tol: f64,
    /// Seed.
    pub seed: u64,
    /// The assignment step (default `Auto`).
    pub algorithm: Algorithm,
    /// Progress callback (after each iteration).
    pub progress: Option<ProgressFn>,
    /// How the processes of a distributed run combine their sums (default: one process).
    /// Each process fits on its own slice of the rows; the centres, inertia and iterations
    /// are the single-process ones, the labels those of the slice.
    pub comm: SharedComm,
    /// Where Lloyd's nearest-centre assignment runs (default: the CPU). With another
    /// backend, `Auto` means Lloyd; Elkan's and Hamerly's bounds run on the CPU.
    pub backend: AnyBackend,
    /// The weight of each point (scikit-learn's `sample_weight`; default all 1): centres are
    /// weighted means, the inertia a weighted sum, and k-means++ and random seeding draw
    /// points in proportion to their weight. An integer weight counts as that many copies of
    /// the row. Not available in a distributed run. (Seeding with weights draws ∝ w, so all
    /// weights 1 seed by other draws than no weights; from given centres they fit the same.)
    pub sample_weight: Option<Vec<f64>>,
}

impl KMeans {
    /// k-means with scikit-learn's defaults.
    pub fn new(k: usize) -> Self {
        KMeans {
            k,
            init: KMeansInit::KMeansPlusPlus,
            n_init: None,
            max_iter: 300,
            tol: 1e-4,
            seed: 0,
            algorithm: Algorithm::Auto,
            progress: None,
            comm: single_process(),
            backend: AnyBackend::default(),
            sample_weight: None,
        }
    }
    /// The weight of each point (see [`KMeans::sample_weight`](struct.KMeans.html#structfield.sample_weight)).
    pub fn sample_weight(mut self, w: Vec<f64>) -> Self {
        self.sample_weight = Some(w);
        self
    }
    /// The communicator of a distributed run (see [`crate::comm`]).
    pub fn communicator(mut self, comm: SharedComm) -> Self {
        self.comm = comm;
        self
    }
    /// The backend of the assignment step.
    pub fn backend(mut self, backend: AnyBackend) -> Self {
        self.backend = backend;
        self
    }
    /// Initialisation.
    pub fn init(mut self, init: KMeansInit) -> Self {
        self.init = init;
        self
    }
    /// Number of runs.
    pub fn n_init(mut self, n: usize) -> Self {
        self.n_init = Some(n);
        self
    }
    /// Maximum iterations.
    pub fn max_iter(mut self, m: usize) -> Self {
        self.max_iter = m;
        self
    }
    /// Relative tolerance.
    pub fn tol(mut self, t: f64) -> Self {
        self.tol = t;
        self
    }
    /// Seed.
    pub fn seed(mut self, s: u64) -> Self {
        self.seed = s;
        self
    }
    /// The assignment step.
    pub fn algorithm(mut self, a: Algorithm) -> Self {
        self.algorithm = a;
        self
    }
    /// Progress callback.
    pub fn progress(mut self, p: ProgressFn) -> Self {
        self.progress = Some(p);
        self
    }

    fn validate<F: Scalar>(&self, x: ArrayView2<F>, part: Partition) -> Result<()> {
        check_slice(x, part.offset, part.n_global)?;
        let n_global = part.n_global;
        check_k(self.k, n_global)?;
        if self.n_init == Some(0) {
            return Err(Error::param("n_init", 0, "at least one run"));
        }
        if !(self.tol >= 0.0 && self.tol.is_finite()) {
            return Err(Error::param("tol", self.tol, "must be finite and non-negative"));
        }
        if let Some(w) = &self.sample_weight {
            if part.n_global != x.nrows() {
                return Err(Error::param(
                    "sample_weight",
                    "given",
                    "not available in a distributed run",
                ));
            }
            check_sample_weight(w, x.nrows(), false)?;
            check_positive_weights(w, self.k)?;
        }
        self.init.check(self.k, x.ncols())
    }
}

/// A fitted k-means model.
#[derive(Clone, Debug, PartialEq)]
pub struct KMeansModel<F> {
    /// Centres, k × d.
    pub centers: Array2<F>,
    /// Cluster of each point.
    pub labels: Vec<i64>,
    /// Sum of squared distances to the assigned centre.
    pub inertia: f64,
    /// Lloyd iterations of the kept run.
    pub n_iter: usize,
    /// Whether the kept run met the stopping rule before `max_iter`.
    pub converged: bool,
    /// The assignment step that ran (what `Auto` resolved to).
    pub algorithm: Algorithm,
}

impl<F: Scalar> Clustering for KMeansModel<F> {
    fn labels(&self) -> &[i64] {
        &self.labels
    }
    fn loss(&self) -> Option<f64> {
        Some(self.inertia)
    }
    fn n_iter(&self) -> usize {
        self.n_iter
    }
    fn converged(&self) -> bool {
        self.converged
    }
}

impl<F: Scalar> KMeansModel<F> {
    /// Euclidean distance of each point to each centre (n × k), scikit-learn's `transform`.
    pub fn transform(&self, x: ArrayView2<F>) -> Result<Array2<F>> {
        check_points(x)?;
        check_same_len("number of features", self.centers.ncols(), x.ncols())?;
        let mut out = Array2::<F>::zeros((x.nrows(), self.centers.nrows()));
        CpuBackend::default().pairwise(x, self.centers.view(), &MetricKind::Euclidean, out.view_mut())?;
        Ok(out)
    }
}

/// The stored form of a k-means model: the centres and the fit's summary.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct StoredKMeans {
    centers: StoredArray,
    inertia: f64,
    n_iter: usize,
    converged: bool,
    algorithm: String,
}

impl<F: Scalar> SaveLoad for KMeansModel<F> {
    const ALGORITHM: &'static str = "kmeans";
    type Stored = StoredKMeans;
    fn to_stored(&self) -> StoredKMeans {
        StoredKMeans {
            centers: StoredArray::from_array(&self.centers),
            inertia: self.inertia,
            n_iter: self.n_iter,
            converged: self.converged,
            algorithm: self.algorithm.name().into(),
        }
    }
    /// The model without training labels.
    fn from_stored(s: StoredKMeans) -> Result<Self> {
        let algorithm = s.algorithm.parse()?;
        Ok(KMeansModel {
            centers: checked_centers(&s.centers)?,
            labels: Vec::new(),
            inertia: s.inertia,
            n_iter: s.n_iter,
            converged: s.converged,
            algorithm,
        })
    }
}

/// Stored centres (k × d, finite, k and d at least 1).
pub(crate) fn checked_centers<F: Scalar>(a: &StoredArray) -> Result<Array2<F>> {
    let c = a.to_matrix::<F>("centers")?;
    check_points(c.view())?;
    Ok(c)
}

impl<F: Scalar> Predict<ArrayView2<'_, F>> for KMeansModel<F> {
    type Output = Vec<i64>;
    /// The nearest centre of each point.
    fn predict(&self, x: &ArrayView2<'_, F>) -> Result<Vec<i64>> {
        check_points(*x)?;
        check_same_len("number of features", self.centers.ncols(), x.ncols())?;
        let near = CpuBackend::default().nearest(*x, self.centers.view(), &MetricKind::SqEuclidean)?;
        Ok(near.into_iter().map(|n| n.index as i64).collect())
    }
}

impl MemoryEstimate for KMeans {
    /// Labels and nearest-centre results (old, new and best run), one n × k block of
    /// distances, centres with per-thread partial sums, the k-means++ candidate distances, and
    /// the bounds of Elkan (n·k + k²) or Hamerly (2n).
    fn memory_estimate(&self, n: usize, d: usize, elem: usize) -> u64 {
        let threads = rayon::current_num_threads();
        let trials = 3 + (self.k as f64).ln().max(0.0) as usize;
        let bounds = match self.algorithm.resolve(n, self.k, d) {
            Algorithm::Elkan => product(&[n + self.k, self.k + 1, elem]),
            Algorithm::Hamerly => product(&[2, n, elem]),
            _ => 0,
        };
        product(&[n, 96])
            .saturating_add(product(&[n, self.k, elem]))
            .saturating_add(product(&[self.k, d, 8, 3 + threads]))
            .saturating_add(product(&[n, trials, elem]))
            .saturating_add(bounds)
    }
}

impl<F: Scalar> Fit<ArrayView2<'_, F>> for KMeans {
    type Model = KMeansModel<F>;

    fn fit(&self, x: &ArrayView2<'_, F>) -> Result<KMeansModel<F>> {
        let comm = &*self.comm;
        let part = Partition::of(x.nrows(), comm);
        agree(self.validate(*x, part), comm)?;
        check_magnitude_global(*x, part.n_global, Arithmetic::SQUARES, "k-means", comm)?;
        // Only Elkan's n·k bounds can be avoided by another algorithm of the same result.
        let hint = match self.algorithm.resolve(x.nrows(), self.k, x.ncols()) {
            Algorithm::Elkan => {
                "use --algorithm lloyd or hamerly (no n·k bounds), or minibatch-kmeans (streams a .npy input)"
            }
            _ => "use minibatch-kmeans (streams a .npy input in chunks), or fewer points or clusters",
        };
        check_fit(self, "k-means", x.nrows(), x.ncols(), size_of::<F>(), hint)?;
        // Rows must be contiguous slices; copies only a non-standard layout.
        let x = crate::data::standard_layout(*x);
        let x = x.view();
        let tol = self.tol * mean_variance(x, part.n_global, comm);
        let n_init = self
            .n_init
            .unwrap_or(if self.init == KMeansInit::Random { 10 } else { 1 });
        let w = self.sample_weight.as_deref();
        let mut rng = SeededRng::seed_from_u64(self.seed);
        let mut best: Option<KMeansModel<F>> = None;
        for _ in 0..n_init {
            let centers = match &self.init {
                KMeansInit::Given(c) => c.mapv(F::from_f64_lossy),
                KMeansInit::Random => {
                    let idx = random_rows(&mut rng, part.n_global, self.k, w)?;
                    fetch_rows(x, part, &idx, comm)
                }
                KMeansInit::KMeansPlusPlus => {
                    let idx = greedy_kmeans_plus_plus(x, w, self.k, &mut rng, part, comm)?;
                    fetch_rows(x, part, &idx, comm)
                }
            };
            // (every process must choose the same: from the size of the largest slice)
            let algorithm = match (self.algorithm, self.backend.name()) {
                (Algorithm::Auto, name) if name != "cpu" => Algorithm::Lloyd,
                (a, _) => a.resolve(part.n_global.div_ceil(comm.size()), self.k, x.ncols()),
            };
            let run = lloyd(
                x,
                w,
                part,
                comm,
                &self.backend,
                centers,
                algorithm,
                self.max_iter,
                tol,
                self.progress.as_ref(),
            )?;
            if best.as_ref().is_none_or(|b| run.inertia < b.inertia) {
                best = Some(run);
            }
        }
        Ok(best.expect("n_init >= 1"))
    }
}

/// `k` distinct rows of `n` uniformly at random, or without replacement with probability ∝ w
/// (scikit-learn's random seeding with sample weights).
pub(crate) fn random_rows(rng: &mut SeededRng, n: usize, k: usize, w: Option<&[f64]>) -> Result<Vec<usize>> {
    match w {
        None => Ok(rand::seq::index::sample(rng, n, k).into_vec()),
        Some(w) => rand::seq::index::sample_weighted(rng, n, |i| w[i], k)
            .map(|idx| idx.into_vec())
            .map_err(|e| Error::param("sample_weight", "given", format!("cannot draw {k} points: {e}"))),
    }
}

/// Mean over features of the population variance (unweighted, as scikit-learn's `_tolerance`).
fn mean_variance<F: Scalar>(x: ArrayView2<F>, n_global: usize, comm: &dyn Communicator) -> f64 {
    let n = n_global as f64;
    let mut means = column_sums(x, |_, v| v);
    comm.allreduce_sum(&mut means);
    means.iter_mut().for_each(|m| *m /= n);
    let mut squares = column_sums(x, |j, v| (v - means[j]).powi(2));
    comm.allreduce_sum(&mut squares);
    let total: f64 = squares.iter().map(|s| s / n).sum();
    total / x.ncols() as f64
}

/// Σᵢ f(j, xᵢⱼ) for every column j, row by row in fixed chunks summed in order (the rows are
/// read in memory order; the result does not depend on the thread count).
fn column_sums<F: Scalar>(x: ArrayView2<F>, f: impl Fn(usize, f64) -> f64 + Sync) -> Vec<f64> {
    let d = x.ncols();
    let parts: Vec<Vec<f64>> = x
        .axis_chunks_iter(Axis(0), CHUNK)
        .into_par_iter()
        .map(|rows| {
            let mut sums = vec![0.0f64; d];
            for row in rows.rows() {
                for (j, (s, v)) in sums.iter_mut().zip(row).enumerate() {
                    *s += f(j, v.to_f64_exact());
                }
            }
            sums
        })
        .collect();
    add_in_order(parts, d)
}

/// The element-wise sum of per-chunk vectors of length `len`, added in chunk order.
fn add_in_order(parts: Vec<Vec<f64>>, len: usize) -> Vec<f64> {
    let mut total = vec![0.0f64; len];
    for part in parts {
        total.iter_mut().zip(part).for_each(|(a, b)| *a += b);
    }
    total
}

/// Rows per chunk of the centre update (fixed, so sums do not depend on the thread count).
const CHUNK: usize = 4096;

/// What one assignment pass gathers: per-cluster weighted coordinate sums and total weights
/// (f64), the weighted inertia and the labels — per chunk of [`CHUNK`] rows in row order, then
/// chunk by chunk in order, so the sums do not depend on the thread count. Without sample
/// weights every weight is 1, which leaves each product exact.
struct Sums {
    sums: Vec<f64>,
    weights: Vec<f64>,
    inertia: f64,
    labels: Vec<usize>,
    d: usize,
}

/// The weight of row `i` (1 without sample weights).
fn weight_of(w: Option<&[f64]>, i: usize) -> f64 {
    w.map_or(1.0, |w| w[i])
}

impl Sums {
    fn new(k: usize, d: usize) -> Self {
        Sums {
            sums: vec![0.0; k * d],
            weights: vec![0.0; k],
            inertia: 0.0,
            labels: Vec::new(),
            d,
        }
    }

    /// Adds `rows` (rows `first..` of the data) with their clusters.
    fn add<F: Scalar>(
        &mut self,
        rows: ArrayView2<F>,
        first: usize,
        w: Option<&[f64]>,
        labels: impl Iterator<Item = usize>,
    ) {
        let d = self.d;
        for (i, (row, l)) in rows.rows().into_iter().zip(labels).enumerate() {
            let wi = weight_of(w, first + i);
            self.weights[l] += wi;
            self.labels.push(l);
            let row = row.to_slice().expect("standard layout");
            self.sums[l * d..(l + 1) * d]
                .iter_mut()
                .zip(row)
                .for_each(|(s, v)| *s += wi * v.to_f64_exact());
        }
    }

    /// Appends a later chunk's sums.
    fn merge(&mut self, later: Sums) {
        self.sums.iter_mut().zip(later.sums).for_each(|(a, b)| *a += b);
        self.weights
            .iter_mut()
            .zip(later.weights)
            .for_each(|(a, b)| *a += b);
        self.inertia += later.inertia;
        self.labels.extend(later.labels);
    }

    /// Folds `parts` (chunks of `x` in order) over waves of one chunk per thread, so at most
    /// that many k × d partial sums exist at once.
    fn over<F: Scalar>(
        x: ArrayView2<F>,
        k: usize,
        parts: impl Fn(ArrayView2<F>, usize) -> Result<Vec<Sums>>,
    ) -> Result<Sums> {
        let mut total = Sums::new(k, x.ncols());
        let wave = CHUNK * rayon::current_num_threads().max(1);
        for start in (0..x.nrows()).step_by(wave) {
            let rows = x.slice(ndarray::s![start..(start + wave).min(x.nrows()), ..]);
            for part in parts(rows, start)? {
                total.merge(part);
            }
        }
        Ok(total)
    }
}

/// Per-cluster weighted coordinate sums and weights of `labels`, in f64.
fn cluster_sums<F: Scalar>(x: ArrayView2<F>, w: Option<&[f64]>, labels: &[usize], k: usize) -> Sums {
    let d = x.ncols();
    let parts = |rows: ArrayView2<F>, start: usize| -> Result<Vec<Sums>> {
        Ok(rows
            .axis_chunks_iter(Axis(0), CHUNK)
            .into_par_iter()
            .enumerate()
            .map(|(c, rows)| {
                let mut part = Sums::new(k, d);
                let first = start + c * CHUNK;
                part.add(
                    rows,
                    first,
                    w,
                    labels[first..first + rows.nrows()].iter().copied(),
                );
                part
            })
            .collect())
    };
    Sums::over(x, k, parts).unwrap_or_else(|_| Sums::new(k, d))
}

/// Lloyd's assignment and the sums of the update in one pass over the data: each chunk's
/// nearest centres, then its rows added to their clusters while still in cache.
fn assign_and_sum<F: Scalar>(
    x: ArrayView2<F>,
    w: Option<&[f64]>,
    backend: &AnyBackend,
    centers: &Array2<F>,
) -> Result<Sums> {
    let (k, d) = centers.dim();
    Sums::over(x, k, |rows, start| {
        backend.nearest_fold(
            rows,
            centers.view(),
            &MetricKind::SqEuclidean,
            CHUNK,
            || Sums::new(k, d),
            |part, first, rows, near| {
                let first = start + first;
                // (row by row, so the sum does not depend on how the chunk was split)
                for (i, n) in near.iter().enumerate() {
                    part.inertia += weight_of(w, first + i) * n.distance.to_f64_exact();
                }
                part.add(rows, first, w, near.iter().map(|n| n.index));
            },
        )
    })
}

/// One Lloyd run from `centers` (on this process's rows, sums combined over `comm`).
#[allow(clippy::too_many_arguments)]
fn lloyd<F: Scalar>(
    x: ArrayView2<F>,
    w: Option<&[f64]>,
    part: Partition,
    comm: &dyn Communicator,
    backend: &AnyBackend,
    mut centers: Array2<F>,
    algorithm: Algorithm,
    max_iter: usize,
    tol: f64,
    progress: Option<&ProgressFn>,
) -> Result<KMeansModel<F>> {
    let (k, d) = centers.dim();
    let mut labels_old: Option<Vec<usize>> = None;
    let (mut n_iter, mut converged) = (0, false);
    let mut bounds: Option<Bounds> = None;
    while n_iter < max_iter {
        n_iter += 1;
        let (step, inertia) = match algorithm {
            Algorithm::Lloyd | Algorithm::Auto => {
                let step = assign_and_sum(x, w, backend, &centers)?;
                let mut inertia = [step.inertia];
                comm.allreduce_sum(&mut inertia);
                (step, Some(inertia[0]))
            }
            Algorithm::Hamerly | Algorithm::Elkan => {
                let b = match bounds.take() {
                    None if algorithm == Algorithm::Hamerly => Bounds::Hamerly(Hamerly::new(x, &centers)?),
                    None => Bounds::Elkan(Elkan::new(x, &centers)),
                    Some(mut b) => {
                        b.update(x, &centers)?;
                        b
                    }
                };
                let step = cluster_sums(x, w, b.labels(), k);
                bounds = Some(b);
                (step, None)
            }
        };
        let Sums {
            sums,
            mut weights,
            labels,
            ..
        } = step;
        let mut sums = Array2::from_shape_vec((k, d), sums).expect("k x d");
        let old_centers = centers.clone();
        comm.allreduce_sum(sums.as_slice_mut().expect("standard layout"));
        comm.allreduce_sum(&mut weights);
        relocate_empty_clusters(x, w, part, comm, &centers, &labels, &mut sums, &mut weights);
        let mut shift = 0.0;
        for (j, &c) in weights.iter().enumerate() {
            for f in 0..x.ncols() {
                let new = if c > 0.0 {
                    sums[[j, f]] / c
                } else {
                    centers[[j, f]].to_f64_exact()
                };
                shift += (new - centers[[j, f]].to_f64_exact()).powi(2);
                centers[[j, f]] = F::from_f64_lossy(new);
            }
        }
        if let Some(p) = progress {
            p.report(&Progress {
                iteration: n_iter,
                max_iter: Some(max_iter),
                objective: inertia,
            })?;
        }
        if let Some(h) = bounds.as_mut() {
            h.moved(&old_centers, &centers);
        }
        let mut changed = [u64::from(labels_old.as_ref() != Some(&labels))];
        comm.allreduce_sum_u64(&mut changed);
        if changed[0] == 0 {
            converged = true; // strict convergence: the labels did not change
            break;
        }
        if shift <= tol {
            converged = true;
            break;
        }
        labels_old = Some(labels);
    }
    // The final assignment, so labels, centres and inertia agree (after a strict convergence
    // the labels are already those of the final centres).
    let last = assign_and_sum(x, w, backend, &centers)?;
    let mut inertia = [last.inertia];
    comm.allreduce_sum(&mut inertia);
    Ok(KMeansModel {
        centers,
        labels: last.labels.into_iter().map(|l| l as i64).collect(),
        inertia: inertia[0],
        n_iter,
        converged,
        algorithm,
    })
}

/// The bound-keeping assignment steps.
enum Bounds {
    Hamerly(Hamerly),
    Elkan(Elkan),
}

impl Bounds {
    fn labels(&self) -> &[usize] {
        match self {
            Bounds::Hamerly(h) => &h.labels,
            Bounds::Elkan(e) => &e.labels,
        }
    }
    fn update<F: Scalar>(&mut self, x: ArrayView2<F>, centers: &Array2<F>) -> Result<()> {
        match self {
            Bounds::Hamerly(h) => h.update(x, centers),
            Bounds::Elkan(e) => {
                e.update(x, centers);
                Ok(())
            }
        }
    }
    fn moved<F: Scalar>(&mut self, old: &Array2<F>, new: &Array2<F>) {
        let drift = drifts(old, new);
        match self {
            Bounds::Hamerly(h) => h.moved(&drift),
            Bounds::Elkan(e) => e.moved(&drift),
        }
    }
}

/// How far each centre moved.
fn drifts<F: Scalar>(old: &Array2<F>, new: &Array2<F>) -> Vec<f64> {
    (0..new.nrows())
        .map(|j| {
            dist(
                old.row(j).to_slice().expect("contiguous"),
                new.row(j).to_slice().expect("contiguous"),
            )
        })
        .collect()
}

/// Elkan's bounds: each point's centre, an upper bound on the distance to it, and a lower
/// bound on the distance to every centre (row-major n × k).
struct Elkan {
    labels: Vec<usize>,
    upper: Vec<f64>,
    lower: Vec<f64>,
    k: usize,
}

impl Elkan {
    fn new<F: Scalar>(x: ArrayView2<F>, centers: &Array2<F>) -> Self {
        let (k, d) = (centers.nrows(), centers.ncols());
        let c = centers.as_slice().expect("contiguous");
        let xs = x.as_slice().expect("standard layout");
        let mut lower = vec![0.0; x.nrows() * k];
        let mut labels = vec![0; x.nrows()];
        let mut upper = vec![0.0; x.nrows()];
        lower
            .par_chunks_mut(k)
            .zip(labels.par_iter_mut())
            .zip(upper.par_iter_mut())
            .enumerate()
            .for_each(|(i, ((l, a), u))| {
                let p = &xs[i * d..(i + 1) * d];
                for (j, lj) in l.iter_mut().enumerate() {
                    *lj = dist(p, &c[j * d..(j + 1) * d]);
                }
                let (mut best, mut bd) = (0, l[0]);
                for (j, &v) in l.iter().enumerate().skip(1) {
                    if v < bd {
                        (best, bd) = (j, v);
                    }
                }
                (*a, *u) = (best, bd);
            });
        Elkan {
            labels,
            upper,
            lower,
            k,
        }
    }

    fn moved(&mut self, drift: &[f64]) {
        let k = self.k;
        self.lower
            .par_chunks_mut(k)
            .for_each(|l| l.iter_mut().zip(drift).for_each(|(v, &p)| *v = (*v - p).max(0.0)));
        self.upper
            .par_iter_mut()
            .zip(self.labels.par_iter())
            .for_each(|(u, &a)| *u += drift[a]);
    }

    fn update<F: Scalar>(&mut self, x: ArrayView2<F>, centers: &Array2<F>) {
        let (k, d) = (self.k, centers.ncols());
        let c = centers.as_slice().expect("contiguous");
        let row = |j: usize| &c[j * d..(j + 1) * d];
        // Half the centre-to-centre distances, and half the nearest other centre's.
        let mut half_cc = vec![0.0f64; k * k];
        for j in 0..k {
            for q in 0..j {
                let v = 0.5 * dist(row(j), row(q));
                half_cc[j * k + q] = v;
                half_cc[q * k + j] = v;
            }
        }
        let s: Vec<f64> = (0..k)
            .map(|j| {
                (0..k)
                    .filter(|&q| q != j)
                    .map(|q| half_cc[j * k + q])
                    .fold(f64::INFINITY, f64::min)
            })
            .collect();
        let xs = x.as_slice().expect("standard layout");
        self.lower
            .par_chunks_mut(k)
            .zip(self.labels.par_iter_mut())
            .zip(self.upper.par_iter_mut())
            .enumerate()
            .for_each(|(i, ((l, a), u))| {
                if *u <= s[*a] {
                    return;
                }
                let p = &xs[i * d..(i + 1) * d];
                let mut tight = false;
                for j in 0..k {
                    if j == *a || *u <= l[j] || *u <= half_cc[*a * k + j] {
                        continue;
                    }
                    if !tight {
                        *u = dist(p, row(*a));
                        l[*a] = *u;
                        tight = true;
                        if *u <= l[j] || *u <= half_cc[*a * k + j] {
                            continue;
                        }
                    }
                    let v = dist(p, row(j));
                    l[j] = v;
                    // Ties go to the lower index, as Lloyd's argmin.
                    if v < *u || (v == *u && j < *a) {
                        (*a, *u) = (j, v);
                    }
                }
            });
    }
}

/// Hamerly's bounds: for each point its centre, an upper bound on the distance to it and a
/// lower bound on the distance to every other centre (Euclidean, not squared).
struct Hamerly {
    labels: Vec<usize>,
    upper: Vec<f64>,
    lower: Vec<f64>,
}

fn dist<F: Scalar>(a: &[F], b: &[F]) -> f64 {
    F::sqeuclidean(a, b).to_f64_exact().sqrt()
}

impl Hamerly {
    /// Exact nearest and second-nearest distances of every point.
    fn new<F: Scalar>(x: ArrayView2<F>, centers: &Array2<F>) -> Result<Self> {
        let near = CpuBackend::default().nearest_two(x, centers.view(), &MetricKind::Euclidean)?;
        Ok(Hamerly {
            labels: near.iter().map(|n| n.first.index).collect(),
            upper: near.iter().map(|n| n.first.distance.to_f64_exact()).collect(),
            lower: near
                .iter()
                .map(|n| n.second.map_or(f64::INFINITY, |s| s.distance.to_f64_exact()))
                .collect(),
        })
    }

    /// Loosens the bounds by how far each centre moved.
    fn moved(&mut self, drift: &[f64]) {
        let (mut top, mut second, mut arg) = (0.0f64, 0.0f64, usize::MAX);
        for (j, &p) in drift.iter().enumerate() {
            if p > top {
                (second, top, arg) = (top, p, j);
            } else if p > second {
                second = p;
            }
        }
        self.upper
            .par_iter_mut()
            .zip(self.lower.par_iter_mut())
            .zip(self.labels.par_iter())
            .for_each(|((u, l), &a)| {
                *u += drift[a];
                *l -= if a == arg { second } else { top };
            });
    }

    /// Reassigns the points whose bounds no longer prove their centre nearest: their bound
    /// tightened first, then those it still does not settle searched together on the
    /// nearest-centre kernel (nearest and second nearest, ties to the lowest index).
    fn update<F: Scalar>(&mut self, x: ArrayView2<F>, centers: &Array2<F>) -> Result<()> {
        let cpu = CpuBackend::default();
        let d = centers.ncols();
        let c = centers.as_slice().expect("contiguous");
        // Half the distance from each centre to its nearest other centre (its second nearest
        // among the centres: itself is the nearest, or a duplicate at distance 0).
        let half: Vec<f64> = cpu
            .nearest_two(centers.view(), centers.view(), &MetricKind::Euclidean)?
            .iter()
            .map(|n| 0.5 * n.second.map_or(f64::INFINITY, |s| s.distance.to_f64_exact()))
            .collect();
        let xs = x.as_slice().expect("standard layout");
        let unsettled: Vec<usize> = self
            .labels
            .par_iter()
            .zip(self.upper.par_iter_mut())
            .zip(self.lower.par_iter())
            .enumerate()
            .filter_map(|(i, ((&a, u), &l))| {
                let m = half[a].max(l);
                if *u <= m {
                    return None;
                }
                *u = dist(&xs[i * d..(i + 1) * d], &c[a * d..(a + 1) * d]);
                (*u > m).then_some(i)
            })
            .collect();
        for batch in unsettled.chunks(HAMERLY_BATCH) {
            let rows = x.select(Axis(0), batch);
            let near = cpu.nearest_two(rows.view(), centers.view(), &MetricKind::Euclidean)?;
            for (&i, n) in batch.iter().zip(near) {
                self.labels[i] = n.first.index;
                self.upper[i] = n.first.distance.to_f64_exact();
                self.lower[i] = n.second.map_or(f64::INFINITY, |s| s.distance.to_f64_exact());
            }
        }
        Ok(())
    }
}

/// Points whose Hamerly bounds fail are searched in batches of this many rows.
const HAMERLY_BATCH: usize = 16_384;

/// scikit-learn's `_relocate_empty_clusters_dense`: each cluster of no weight takes the point
/// farthest from its assigned centre (farthest first, ties to the lowest row); the point and
/// its weight leave its old cluster. Over processes, each proposes its farthest points and the
/// farthest of all are taken (`sums` and `weights` are already the totals).
#[allow(clippy::too_many_arguments)]
fn relocate_empty_clusters<F: Scalar>(
    x: ArrayView2<F>,
    w: Option<&[f64]>,
    part: Partition,
    comm: &dyn Communicator,
    centers: &Array2<F>,
    labels: &[usize],
    sums: &mut Array2<f64>,
    weights: &mut [f64],
) {
    let empty: Vec<usize> = (0..weights.len()).filter(|&j| weights[j] == 0.0).collect();
    if empty.is_empty() {
        return;
    }
    let dist: Vec<f64> = (0..x.nrows())
        .into_par_iter()
        .map(|i| {
            let (p, c) = (x.row(i), centers.row(labels[i]));
            F::sqeuclidean(
                p.to_slice().expect("standard layout"),
                c.to_slice().expect("contiguous"),
            )
            .to_f64_exact()
        })
        .collect();
    let mut order: Vec<usize> = (0..x.nrows()).collect();
    order.sort_by(|&a, &b| dist[b].total_cmp(&dist[a]).then(a.cmp(&b)));
    // This process's farthest points: (distance, global row, label, weight, coordinates),
    // padded.
    let (m, d) = (empty.len(), x.ncols());
    let width = 4 + d;
    let mut mine = vec![f64::NEG_INFINITY; m * width];
    for (slot, &i) in order.iter().take(m).enumerate() {
        let c = &mut mine[slot * width..(slot + 1) * width];
        c[0] = dist[i];
        c[1] = (part.offset + i) as f64;
        c[2] = labels[i] as f64;
        c[3] = weight_of(w, i);
        c[4..]
            .iter_mut()
            .zip(x.row(i))
            .for_each(|(a, v)| *a = v.to_f64_exact());
    }
    let all = comm.all_gather_f64(&mine);
    let mut candidates: Vec<&[f64]> = all.chunks(width).filter(|c| c[1] >= 0.0).collect();
    candidates.sort_by(|a, b| b[0].total_cmp(&a[0]).then(a[1].total_cmp(&b[1])));
    for (&new_cluster, c) in empty.iter().zip(&candidates) {
        let (old, wi) = (c[2] as usize, c[3]);
        for f in 0..d {
            sums[[old, f]] -= wi * c[4 + f];
            sums[[new_cluster, f]] = wi * c[4 + f];
        }
        weights[new_cluster] = wi;
        weights[old] -= wi;
    }
}

/// Greedy k-means++: the first centre uniformly, then at each step 2 + ⌊ln k⌋ candidates drawn
/// with probability ∝ D² and the one giving the lowest potential kept.
pub fn kmeans_plus_plus<F: Scalar>(x: ArrayView2<F>, k: usize, rng: &mut SeededRng) -> Result<Array2<F>> {
    Ok(x.select(Axis(0), &kmeans_plus_plus_indices(x, k, rng)?))
}

/// The rows greedy k-means++ picks as centres, in order (scikit-learn's `kmeans_plusplus`
/// returns them as `indices`).
pub fn kmeans_plus_plus_indices<F: Scalar>(
    x: ArrayView2<F>,
    k: usize,
    rng: &mut SeededRng,
) -> Result<Vec<usize>> {
    let part = Partition {
        offset: 0,
        n_global: x.nrows(),
    };
    greedy_kmeans_plus_plus(x, None, k, rng, part, &SingleProcess)
}

/// One k-means++ step's work in one pass over the points: the squared distance of every point
/// to each candidate into `dist` (n × candidates, computed directly, so exact), and for each
/// candidate the potential Σᵢ wᵢ·min(closestᵢ, dist(i, candidate)). Summed in fixed chunks of
/// rows, in order, so the result does not depend on the thread count. (A GEMM does not pay
/// here: with a handful of candidates the pass is bound by reading the points.)
fn candidate_potentials<F: Scalar>(
    x: ArrayView2<F>,
    w: Option<&[f64]>,
    candidates: ArrayView2<F>,
    closest: &[f64],
    dist: &mut Array2<f64>,
) -> Vec<f64> {
    let t = candidates.nrows();
    let (x, candidates) = (x.as_standard_layout(), candidates.as_standard_layout());
    let parts: Vec<Vec<f64>> = x
        .axis_chunks_iter(Axis(0), CHUNK)
        .into_par_iter()
        .zip(dist.axis_chunks_iter_mut(Axis(0), CHUNK))
        .zip(closest.par_chunks(CHUNK))
        .enumerate()
        .map(|(chunk, ((rows, mut out), closest))| {
            let mut pot = vec![0.0f64; t];
            let rows_out_closest = rows.rows().into_iter().zip(out.rows_mut()).zip(closest);
            for (i, ((row, mut o), &c)) in rows_out_closest.enumerate() {
                let wi = weight_of(w, chunk * CHUNK + i);
                let row = row.to_slice().expect("standard layout");
                for ((o, p), cand) in o.iter_mut().zip(pot.iter_mut()).zip(candidates.rows()) {
                    *o = F::sqeuclidean(row, cand.to_slice().expect("standard layout")).to_f64_exact();
                    *p += wi * c.min(*o);
                }
            }
            pot
        })
        .collect();
    add_in_order(parts, t)
}

/// `count` global rows drawn with probability ∝ `mass` (this process's non-negative masses,
/// whose sum over all processes is `total`): each draw falls in one process's share of the
/// total; that process finds the row.
fn draw_rows(
    rng: &mut SeededRng,
    count: usize,
    mass: impl Iterator<Item = f64>,
    total: f64,
    part: Partition,
    comm: &dyn Communicator,
) -> Vec<usize> {
    let mut acc = 0.0;
    let cumsum: Vec<f64> = mass
        .map(|v| {
            acc += v;
            acc
        })
        .collect();
    let shares = comm.all_gather_f64(&[acc]);
    let mut found = vec![0u64; count];
    for slot in found.iter_mut() {
        let mut r = rng.random::<f64>() * total;
        let mut owner = shares.len() - 1;
        for (q, &share) in shares.iter().enumerate() {
            if r < share || q == shares.len() - 1 {
                owner = q;
                break;
            }
            r -= share;
        }
        if owner == comm.rank() {
            *slot = (part.offset + cumsum.partition_point(|&v| v <= r).min(cumsum.len() - 1)) as u64;
        }
    }
    comm.allreduce_sum_u64(&mut found);
    found.iter().map(|&i| i as usize).collect()
}

/// Greedy k-means++ over the rows of all processes (`x` is this process's slice, `w` its
/// sample weights): the same draws and choices as on one process; returns global row indices.
/// With weights, as scikit-learn: the first centre is drawn ∝ w, the candidates ∝ w·D², and
/// the potentials are weighted sums.
pub(crate) fn greedy_kmeans_plus_plus<F: Scalar>(
    x: ArrayView2<F>,
    w: Option<&[f64]>,
    k: usize,
    rng: &mut SeededRng,
    part: Partition,
    comm: &dyn Communicator,
) -> Result<Vec<usize>> {
    let (n, n_local) = (part.n_global, x.nrows());
    let trials = 2 + (k as f64).ln().floor() as usize;
    let first = match w {
        None => rng.random_range(0..n),
        Some(w) => {
            let mut total = [w.iter().sum::<f64>()];
            comm.allreduce_sum(&mut total);
            draw_rows(rng, 1, w.iter().copied(), total[0], part, comm)[0]
        }
    };
    let mut chosen = vec![first];
    let mut closest = vec![f64::INFINITY; n_local];
    let mut dist = Array2::<f64>::zeros((n_local, 1));
    let first_row = fetch_rows(x, part, &[first], comm);
    let mut potential = [candidate_potentials(x, w, first_row.view(), &closest, &mut dist)[0]];
    closest.iter_mut().zip(dist.column(0)).for_each(|(a, &b)| *a = b);
    comm.allreduce_sum(&mut potential);
    let mut potential = potential[0];
    for _ in 1..k {
        let mass = closest.iter().enumerate().map(|(i, &v)| weight_of(w, i) * v);
        let candidates = draw_rows(rng, trials, mass, potential, part, comm);
        let cand_rows = fetch_rows(x, part, &candidates, comm);
        let mut dist = Array2::<f64>::zeros((n_local, trials));
        let mut potentials = candidate_potentials(x, w, cand_rows.view(), &closest, &mut dist);
        comm.allreduce_sum(&mut potentials);
        let (best, best_pot) = potentials
            .iter()
            .enumerate()
            .fold((0, f64::INFINITY), |b, (t, &p)| if p < b.1 { (t, p) } else { b });
        potential = best_pot;
        closest
            .iter_mut()
            .zip(dist.column(best))
            .for_each(|(a, &b)| *a = a.min(b));
        chosen.push(candidates[best]);
    }
    Ok(chosen)
}
