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
//! Lloyd in float64, so `Auto` runs Lloyd there. In low dimensions (d ≤ 8, k ≤ 512; the grid
//! study paper-repro/kmeans_grid.py, results in paper-repro/results/kmeans_grid.md: n = 10,000
//! to 1,000,000, make_blobs with cluster_std = 4, 5 iterations from the same centres, 1 and 2
//! threads) Lloyd's iteration took 0.2–0.6× Hamerly's: the bounds cost as much as the
//! distances they save, and `Auto` runs Lloyd. At d = 32 Lloyd led there too over 5
//! iterations, but over a whole run on well-separated blobs Hamerly's bounds tighten and it
//! leads (200,000 × 32, k = 64, 37 iterations: the README's figures), so `Auto` keeps
//! Hamerly above d = 8. Elkan is never the
//! choice: its per-point k bounds cost more than they save from k = 64 up. From a random start
//! (centres that move far in the first iterations), Lloyd led Hamerly by up to 28 % at d = 16,
//! k ≥ 1024 over 5 iterations; over a whole run the bounds recover that, and k-means++ is the
//! default start. The choice does not depend on the thread count or n (all three parallelise
//! over points, and cost per point).
//!
//! Files: this one holds the estimator and the model; `init.rs` the seeding (k-means++, random
//! rows) other families use too; `lloyd.rs` the iteration; `elkan.rs` and `hamerly.rs` the
//! bound-keeping assignment steps; `minibatch.rs` mini-batch k-means; `bisecting.rs` bisecting
//! k-means.

pub mod bisecting;
mod elkan;
mod hamerly;
mod init;
mod lloyd;
pub mod minibatch;
mod points;
mod sparse;
pub use sparse::sparse_memory_estimate;

use crate::estimator::shared_setters;
pub use bisecting::{BisectingInit, BisectingKMeans, BisectingKMeansModel, BisectingStrategy};
pub(crate) use init::{greedy_kmeans_plus_plus, random_rows};
pub use init::{kmeans_plus_plus, kmeans_plus_plus_indices, KMeansPlusPlus};
use lloyd::lloyd;
pub use minibatch::{MiniBatchKMeans, MiniBatchKMeansModel, RowSource};
use points::Points;

use crate::backend::{AnyBackend, Backend, CpuBackend};
use crate::comm::{agree, single_process, Communicator, Partition, SharedComm};
use crate::data::validate::{
    check_k, check_magnitude, check_magnitude_global, check_new_points, check_points, check_positive_weights,
    check_sample_weight, check_slice, Arithmetic, ScaledWeights,
};
use crate::error::{Error, Result};
use crate::estimator::{Clustering, Fit, Predict, ProgressFn};
use crate::memory::{check_fit, product, MemoryEstimate};
use crate::metric::MetricKind;
use crate::model_file::{SaveLoad, StoredArray};
use crate::rng::SeededRng;
use crate::scalar::Scalar;
use ndarray::{Array2, ArrayView2, Axis};
use rand::SeedableRng;
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
        match self {
            KMeansInit::Given(c) => check_start(c.view(), k, d),
            _ => Ok(()),
        }
    }
}

/// Given initial centres: k × d, finite.
pub(crate) fn check_start<F: Scalar>(c: ArrayView2<F>, k: usize, d: usize) -> Result<()> {
    if c.dim() != (k, d) {
        return Err(Error::ShapeMismatch {
            what: "initial centres".into(),
            expected: format!("{k} x {d}"),
            got: format!("{} x {}", c.nrows(), c.ncols()),
        });
    }
    crate::data::validate::check_finite(c, "initial centres")
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
    /// The assignment step `Auto` runs (from the measured tables of the module comment): Lloyd
    /// for d ≤ 8 with k ≤ 512 (where a bound's bookkeeping costs as much as the distances it
    /// saves) and for d ≥ 128 with k ≤ 16; Hamerly otherwise. Other choices are returned
    /// unchanged.
    pub fn resolve(self, _n: usize, k: usize, d: usize) -> Algorithm {
        match self {
            Algorithm::Auto if d >= 128 && k <= 16 => Algorithm::Lloyd,
            Algorithm::Auto if d <= 8 && k <= 512 => Algorithm::Lloyd,
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
        match s {
            "lloyd" => Ok(Algorithm::Lloyd),
            "hamerly" => Ok(Algorithm::Hamerly),
            "elkan" => Ok(Algorithm::Elkan),
            "auto" => Ok(Algorithm::Auto),
            _ => Err(Error::param(
                "algorithm",
                s,
                "expected lloyd, hamerly, elkan or auto",
            )),
        }
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
    /// The assignment step.
    pub fn algorithm(mut self, a: Algorithm) -> Self {
        self.algorithm = a;
        self
    }

    fn validate<F: Scalar>(&self, x: ArrayView2<F>, part: Partition) -> Result<()> {
        check_slice(x, part.offset, part.n_global)?;
        self.validate_params(x.nrows(), x.ncols(), part)
    }

    /// The parameters' checks for `n` rows of `d` columns held here, of `part.n_global` in all.
    fn validate_params(&self, n: usize, d: usize, part: Partition) -> Result<()> {
        let n_global = part.n_global;
        check_k(self.k, n_global)?;
        if self.n_init == Some(0) {
            return Err(Error::param("n_init", 0, "at least one run"));
        }
        if !(self.tol >= 0.0 && self.tol.is_finite()) {
            return Err(Error::param("tol", self.tol, "must be finite and non-negative"));
        }
        if let Some(w) = &self.sample_weight {
            if part.n_global != n {
                return Err(Error::param(
                    "sample_weight",
                    "given",
                    "not available in a distributed run",
                ));
            }
            check_sample_weight(w, n, false)?;
            check_positive_weights(w, self.k)?;
        }
        self.init.check(self.k, d)
    }
}

shared_setters!(KMeans { communicator, backend("Here it runs the assignment step."), seed, progress });

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
        centre_distances(x, self.centers.view())
    }
}

/// Euclidean distance of each new point to each centre (n × k), after the fit's range check:
/// the `transform` of every k-means model.
pub(crate) fn centre_distances<F: Scalar>(x: ArrayView2<F>, centers: ArrayView2<F>) -> Result<Array2<F>> {
    check_new_points(x, centers, Arithmetic::SQUARES, "k-means")?;
    let mut out = Array2::<F>::zeros((x.nrows(), centers.nrows()));
    CpuBackend::default().pairwise(x, centers, &MetricKind::Euclidean, out.view_mut())?;
    Ok(out)
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

/// Stored centres (k × d, k and d at least 1, finite and within the range a fit accepts).
pub(crate) fn checked_centers<F: Scalar>(a: &StoredArray) -> Result<Array2<F>> {
    let c = a.to_matrix::<F>("centers")?;
    check_points(c.view())?;
    check_magnitude(c.view(), Arithmetic::SQUARES, "k-means")?;
    Ok(c)
}

impl<F: Scalar> Predict<ArrayView2<'_, F>> for KMeansModel<F> {
    type Output = Vec<i64>;
    /// The nearest centre of each point.
    fn predict(&self, x: &ArrayView2<'_, F>) -> Result<Vec<i64>> {
        check_new_points(*x, self.centers.view(), Arithmetic::SQUARES, "k-means")?;
        let near = CpuBackend::default().nearest(*x, self.centers.view(), &MetricKind::SqEuclidean)?;
        Ok(near.into_iter().map(|n| n.index as i64).collect())
    }
}

impl MemoryEstimate for KMeans {
    /// Labels and nearest-centre results (old, new and best run), one n × k block of
    /// distances, centres with per-thread partial sums (in interleaved copies), the k-means++ candidate distances, and
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
            .saturating_add(product(&[self.k, d, 8, 2 + lloyd::COPIES * (1 + threads)]))
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
            Algorithm::Elkan => crate::error::hints::ELKAN_BOUNDS,
            _ => crate::error::hints::KMEANS,
        };
        check_fit(self, "k-means", x.nrows(), x.ncols(), size_of::<F>(), hint)?;
        // Rows must be contiguous slices; copies only a non-standard layout.
        let x = crate::data::standard_layout(*x);
        let x = x.view();
        // (scikit-learn's `_tolerance`: no pass over the data for a zero tolerance)
        let tol = if self.tol == 0.0 {
            0.0
        } else {
            self.tol * mean_variance(x, part.n_global, comm)
        };
        // (every process must choose the same: from the size of the largest slice)
        let algorithm = match self.algorithm {
            Algorithm::Auto if self.backend.assigns_off_host() => Algorithm::Lloyd,
            a => a.resolve(part.n_global.div_ceil(comm.size()), self.k, x.ncols()),
        };
        self.runs(x, part, comm, tol, algorithm, None)
    }
}

impl KMeans {
    /// The `n_init` runs on checked points (`tol` already scaled by the data): each seeded
    /// (the first from `start` when given), then iterated; the lowest inertia kept.
    fn runs<F: Scalar, X: Points<F>>(
        &self,
        x: X,
        part: Partition,
        comm: &dyn Communicator,
        tol: f64,
        algorithm: Algorithm,
        mut start: Option<Array2<F>>,
    ) -> Result<KMeansModel<F>> {
        let n_init = self
            .n_init
            .unwrap_or(if self.init == KMeansInit::Random { 10 } else { 1 });
        let scaled = ScaledWeights::of(self.sample_weight.as_deref());
        let w = scaled.as_ref().map(|s| s.weights.as_slice());
        let mut rng = SeededRng::seed_from_u64(self.seed);
        let mut best: Option<KMeansModel<F>> = None;
        for _ in 0..n_init {
            let centers = match (start.take(), &self.init) {
                (Some(c), _) => c,
                (None, KMeansInit::Given(c)) => c.mapv(F::from_f64_lossy),
                (None, KMeansInit::Random) => {
                    let idx = random_rows(&mut rng, part.n_global, self.k, w)?;
                    x.fetch(part, &idx, comm)
                }
                (None, KMeansInit::KMeansPlusPlus) => {
                    if let Some(p) = &self.progress {
                        p.phase("init (k-means++)");
                    }
                    let idx = init::greedy_kmeans_plus_plus_of(x, w, self.k, &mut rng, part, comm)?;
                    x.fetch(part, &idx, comm)
                }
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
        let mut best = best.expect("n_init >= 1");
        if let Some(s) = &scaled {
            best.inertia = s.unscale(best.inertia, "inertia")?;
        }
        Ok(best)
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
pub(super) fn column_sums<F: Scalar>(x: ArrayView2<F>, f: impl Fn(usize, f64) -> f64 + Sync) -> Vec<f64> {
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
pub(super) fn add_in_order(parts: Vec<Vec<f64>>, len: usize) -> Vec<f64> {
    let mut total = vec![0.0f64; len];
    for part in parts {
        total.iter_mut().zip(part).for_each(|(a, b)| *a += b);
    }
    total
}

/// Rows per chunk of the centre update (fixed, so sums do not depend on the thread count).
pub(super) const CHUNK: usize = 4096;

/// The weight of row `i` (1 without sample weights).
#[inline]
pub(super) fn weight_of(w: Option<&[f64]>, i: usize) -> f64 {
    w.map_or(1.0, |w| w[i])
}

/// The Euclidean distance in f64 (the unit of Elkan's and Hamerly's bounds).
pub(super) fn dist<F: Scalar>(a: &[F], b: &[F]) -> f64 {
    F::sqeuclidean(a, b).to_f64_exact().sqrt()
}
