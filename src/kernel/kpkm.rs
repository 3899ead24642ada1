//! Kernel power k-means: exact KPKM on the n × n kernel matrix (Paul, Chakraborty, Das & Xu,
//! "Kernel k-means, by all means", arXiv 2011.06461), plain kernel k-means (its s → −∞ limit,
//! Lloyd in feature space), and RFF-KPKM: power k-means on random Fourier features, which is
//! KPKM on the approximate kernel `ZZᵀ` in O(n·D) memory and O(n·D·k) time per iteration
//! (Chen, Liang, Liu et al., AAAI 2026; the paper's body was not available, this is the
//! construction its abstract describes, see docs/reference-notes.md §2.1).
//!
//! In the exact methods a centroid is a combination `θⱼ = Σₗ aₗⱼ φ(xₗ)` with `Σₗ aₗⱼ = 1`, so
//! `‖φ(xᵢ) − θⱼ‖² = Kᵢᵢ − 2(Ka)ᵢⱼ + aⱼᵀKaⱼ`: one n × n × k product per iteration. The kernel
//! matrix is refused, with the memory it needs and RFF-KPKM as the alternative, above
//! [`crate::memory::max_memory`].

use crate::backend::{AnyBackend, Backend, CpuBackend};
use crate::comm::{agree, single_process, Communicator, Partition, SharedComm};
use crate::error::Result;
use crate::estimator::shared_setters;
use crate::estimator::{Clustering, Fit, ProgressFn};
use crate::kernel::power::StoredPowerKMeans;
use crate::kernel::power::{
    best_of, finish_hard, reporter, run, weights_of, PowerFit, PowerInit, PowerKMeans, PowerKMeansModel,
    Schedule, Space, Step, DEFAULT_N_INIT,
};
use crate::kernel::rff::{Bandwidth, RandomFourierFeatures, StoredFeatures};
use crate::linalg::gemm_abt;
use crate::memory::{check_fit, product, MemoryEstimate};
use crate::metric::MetricKind;
use crate::model_file::SaveLoad;
use crate::rng::SeededRng;
use crate::scalar::Scalar;
use ndarray::{Array1, Array2, ArrayView2, Axis, Zip};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

/// Rows per block of the kernel products.
const BLOCK: usize = 512;

/// The kernel of the exact methods.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kernel {
    /// `exp(−‖x − y‖² / (2σ²))`.
    Gaussian(Bandwidth),
    /// `xᵀy` (kernel methods then equal their explicit versions).
    Linear,
}

/// The kernel matrix of `x` (n × n, f64).
pub fn kernel_matrix<F: Scalar>(x: ArrayView2<F>, kernel: Kernel, seed: u64) -> Result<Array2<f64>> {
    let n = x.nrows();
    let x64 = x.mapv(|v| v.to_f64_exact());
    let mut k = Array2::<f64>::zeros((n, n));
    match kernel {
        Kernel::Linear => k
            .axis_chunks_iter_mut(Axis(0), BLOCK)
            .into_par_iter()
            .zip(x64.axis_chunks_iter(Axis(0), BLOCK))
            .for_each(|(kb, xb)| gemm_abt(xb, x64.view(), kb, 1.0)),
        Kernel::Gaussian(bw) => {
            let sigma = bw.resolve(x, seed)?;
            CpuBackend::default().pairwise(x64.view(), x64.view(), &MetricKind::SqEuclidean, k.view_mut())?;
            let c = -1.0 / (2.0 * sigma * sigma);
            k.par_mapv_inplace(|d| (d * c).exp());
            k.diag_mut().fill(1.0);
        }
    }
    Ok(k)
}

/// Centroids as combinations of kernel features.
struct KernelSpace<'a> {
    k: &'a Array2<f64>,
    /// Coefficients aₗⱼ (columns sum to 1), n × k.
    a: Array2<f64>,
    /// K·a.
    ka: Array2<f64>,
    /// aⱼᵀKaⱼ.
    aka: Array1<f64>,
}

impl<'a> KernelSpace<'a> {
    fn new(k: &'a Array2<f64>, seeds: &[usize]) -> Self {
        let n = k.nrows();
        let mut a = Array2::<f64>::zeros((n, seeds.len()));
        seeds.iter().enumerate().for_each(|(j, &i)| a[[i, j]] = 1.0);
        let ka = k.select(Axis(1), seeds);
        let aka = seeds.iter().map(|&i| k[[i, i]]).collect();
        KernelSpace { k, a, ka, aka }
    }

    fn times_k(&self, a: &Array2<f64>) -> Array2<f64> {
        let at = a.t().as_standard_layout().into_owned();
        let mut out = Array2::<f64>::zeros(a.dim());
        out.axis_chunks_iter_mut(Axis(0), BLOCK)
            .into_par_iter()
            .zip(self.k.axis_chunks_iter(Axis(0), BLOCK))
            .for_each(|(ob, kb)| gemm_abt(kb, at.view(), ob, 1.0));
        out
    }
}

fn column_dots(a: &Array2<f64>, b: &Array2<f64>) -> Array1<f64> {
    Zip::from(a.columns())
        .and(b.columns())
        .map_collect(|x, y| x.dot(&y))
}

impl Space for KernelSpace<'_> {
    fn distances(&self) -> Result<Array2<f64>> {
        let diag = self.k.diag();
        let mut d = Array2::<f64>::zeros(self.ka.dim());
        Zip::from(d.rows_mut())
            .and(self.ka.rows())
            .and(&diag)
            .par_for_each(|mut dr, kar, &kii| {
                Zip::from(&mut dr)
                    .and(&kar)
                    .and(&self.aka)
                    .for_each(|d, &ka, &aka| *d = (kii - 2.0 * ka + aka).max(0.0));
            });
        Ok(d)
    }

    fn step(&mut self, s: f64) -> Result<Step> {
        let d = self.distances()?;
        let (w, objective, hardness) = weights_of(&d, s);
        let (moved, norm) = self.update(&w);
        Ok(Step {
            objective,
            moved,
            norm,
            hardness,
        })
    }
}

impl KernelSpace<'_> {
    /// Moves the centroids to the `w`-weighted means of the points' features; returns
    /// (`Σⱼ‖θⱼ_new − θⱼ_old‖²`, `Σⱼ‖θⱼ_new‖²`).
    fn update(&mut self, w: &Array2<f64>) -> (f64, f64) {
        let totals = w.sum_axis(Axis(0));
        let mut a_new = w.clone();
        for ((mut new, old), &t) in a_new.columns_mut().into_iter().zip(self.a.columns()).zip(&totals) {
            if t > 0.0 {
                new /= t;
            } else {
                // A centroid without weight (an emptied cluster) stays where it is.
                new.assign(&old);
            }
        }
        let ka_new = self.times_k(&a_new);
        let aka_new = column_dots(&a_new, &ka_new);
        let cross = column_dots(&a_new, &self.ka);
        let moved = (&aka_new - &(2.0 * &cross) + &self.aka)
            .mapv(|v| v.max(0.0))
            .sum();
        let norm = aka_new.sum();
        self.a = a_new;
        self.ka = ka_new;
        self.aka = aka_new;
        (moved, norm)
    }
}

/// Kernel k-means++ seeds (D² sampling with kernel distances; the first uniformly).
fn kernel_kmeans_plus_plus(k: &Array2<f64>, n_clusters: usize, rng: &mut SeededRng) -> Vec<usize> {
    let n = k.nrows();
    let mut seeds = vec![rng.random_range(0..n)];
    let dist = |i: usize, c: usize| (k[[i, i]] - 2.0 * k[[i, c]] + k[[c, c]]).max(0.0);
    let mut closest: Vec<f64> = (0..n).map(|i| dist(i, seeds[0])).collect();
    while seeds.len() < n_clusters {
        let total: f64 = closest.iter().sum();
        let next = if total > 0.0 {
            let mut r = rng.random::<f64>() * total;
            closest
                .iter()
                .position(|&v| {
                    r -= v;
                    r < 0.0
                })
                .unwrap_or(n - 1)
        } else {
            (0..n).find(|i| !seeds.contains(i)).expect("k <= n")
        };
        seeds.push(next);
        closest
            .iter_mut()
            .enumerate()
            .for_each(|(i, c)| *c = c.min(dist(i, next)));
    }
    seeds
}

/// Parameters of exact kernel power k-means (the estimator).
///
/// ```
/// use clustr::prelude::*;
/// let x = clustr::datasets::load("iris")?.data;
/// use clustr::kernel::{Bandwidth, Kernel, Kpkm};
/// let model = Kpkm::new(3).kernel(Kernel::Gaussian(Bandwidth::Median)).n_init(2).fit(&x.view())?;
/// assert_eq!(model.labels().len(), x.nrows());
/// # Ok::<(), clustr::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Kpkm {
    /// Number of clusters.
    pub k: usize,
    /// Kernel (default Gaussian with the median heuristic).
    pub kernel: Kernel,
    /// Annealing and stopping (power k-means' defaults).
    pub schedule: Schedule,
    /// Initial centroids (data points).
    pub init: PowerInit,
    /// Runs from different initial centroids; the one with the lowest objective is kept.
    pub n_init: usize,
    /// Seed.
    pub seed: u64,
    /// Progress callback.
    pub progress: Option<ProgressFn>,
}

impl Kpkm {
    /// Exact KPKM with a Gaussian kernel of median-heuristic bandwidth.
    pub fn new(k: usize) -> Self {
        Kpkm {
            k,
            kernel: Kernel::Gaussian(Bandwidth::Median),
            schedule: Schedule::default(),
            init: PowerInit::KMeansPlusPlus,
            n_init: DEFAULT_N_INIT,
            seed: 0,
            progress: None,
        }
    }
    /// Number of runs from different initial centroids (the best objective is kept).
    pub fn n_init(mut self, n: usize) -> Self {
        self.n_init = n;
        self
    }
    /// Kernel.
    pub fn kernel(mut self, k: Kernel) -> Self {
        self.kernel = k;
        self
    }
    /// Annealing and stopping.
    pub fn schedule(mut self, s: Schedule) -> Self {
        self.schedule = s;
        self
    }
    /// Initial centroids.
    pub fn init(mut self, i: PowerInit) -> Self {
        self.init = i;
        self
    }
}

shared_setters!(Kpkm { seed, progress });

/// A fitted exact (kernel-matrix) model.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelModel {
    /// Labels, iterations, final s and objective (s is −∞ for kernel k-means).
    pub fit: PowerFit,
    /// Centroid coefficients aₗⱼ (n × k, columns summing to 1): `θⱼ = Σₗ aₗⱼ φ(xₗ)`.
    pub coefficients: Array2<f64>,
    /// The rows used as initial centroids.
    pub seeds: Vec<usize>,
}

impl Clustering for KernelModel {
    fn labels(&self) -> &[i64] {
        &self.fit.labels
    }
    fn loss(&self) -> Option<f64> {
        Some(self.fit.objective)
    }
    fn n_iter(&self) -> usize {
        self.fit.n_iter
    }
    fn converged(&self) -> bool {
        self.fit.converged
    }
}

/// Checks the input and computes the kernel matrix.
fn prepare<F: Scalar>(
    x: ArrayView2<F>,
    params: &impl MemoryEstimate,
    k: usize,
    kernel: Kernel,
    seed: u64,
) -> Result<Array2<f64>> {
    crate::data::validate::check_points(x)?;
    crate::data::validate::check_k(k, x.nrows())?;
    let squares = crate::data::validate::Arithmetic::SQUARES;
    crate::data::validate::check_magnitude(x, squares, "kernel k-means")?;
    let n = x.nrows();
    crate::memory::check(
        || format!("the {n} x {n} kernel matrix"),
        params.memory_estimate(n, x.ncols(), size_of::<F>()),
        crate::error::hints::KERNEL_MATRIX,
    )?;
    kernel_matrix(x, kernel, seed)
}

/// The exact methods' restarts: `fit_once` on a [`KernelSpace`] from each run's initial
/// points, keeping the lowest objective.
fn best_exact(
    km: &Array2<f64>,
    k: usize,
    init: &PowerInit,
    n_init: usize,
    seed: u64,
    fit_once: impl Fn(&mut KernelSpace, usize) -> Result<PowerFit>,
) -> Result<KernelModel> {
    let mut rng = SeededRng::seed_from_u64(seed);
    let once = |r| -> Result<KernelModel> {
        let seeds = init.seeds(km.nrows(), k, None, &mut rng, |rng| {
            Ok(kernel_kmeans_plus_plus(km, k, rng))
        })?;
        let mut space = KernelSpace::new(km, &seeds);
        let fit = fit_once(&mut space, r)?;
        Ok(KernelModel {
            fit,
            coefficients: space.a,
            seeds,
        })
    };
    best_of(init.runs(n_init), once, |m| m.fit.objective)
}

/// The exact methods' memory: the n × n kernel matrix, the bandwidth's sample, the f64 copies
/// of the points, and the n × k coefficients, kernel products, distances, weights and their
/// scratch.
fn exact_estimate(n: usize, d: usize, k: usize, kernel: Kernel) -> u64 {
    let bandwidth = match kernel {
        Kernel::Gaussian(bw) => bw.memory_estimate(n),
        Kernel::Linear => 0,
    };
    product(&[n, n, 8])
        .saturating_add(bandwidth)
        .saturating_add(product(&[n, 2 * d + 8, 8]))
        .saturating_add(product(&[n, k, 8 * 8]))
}

impl MemoryEstimate for Kpkm {
    fn memory_estimate(&self, n: usize, d: usize, _elem: usize) -> u64 {
        exact_estimate(n, d, self.k, self.kernel)
    }
}

impl MemoryEstimate for KernelKMeans {
    fn memory_estimate(&self, n: usize, d: usize, _elem: usize) -> u64 {
        exact_estimate(n, d, self.k, self.kernel)
    }
}

impl<F: Scalar> Fit<ArrayView2<'_, F>> for Kpkm {
    type Model = KernelModel;
    fn fit(&self, x: &ArrayView2<'_, F>) -> Result<KernelModel> {
        self.schedule.validate()?;
        if let Some(p) = &self.progress {
            p.phase("kernel matrix");
        }
        let km = prepare(*x, self, self.k, self.kernel, self.seed)?;
        best_exact(&km, self.k, &self.init, self.n_init, self.seed, |space, r| {
            run(space, &self.schedule.for_run(r), self.progress.as_ref())
        })
    }
}

/// Parameters of plain kernel k-means (Lloyd's iterations in feature space; the estimator).
///
/// ```
/// use clustr::prelude::*;
/// let x = clustr::datasets::load("iris")?.data;
/// use clustr::kernel::{Bandwidth, Kernel, KernelKMeans};
/// let model = KernelKMeans::new(3).kernel(Kernel::Gaussian(Bandwidth::Given(1.0))).fit(&x.view())?;
/// assert_eq!(model.labels().len(), x.nrows());
/// # Ok::<(), clustr::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct KernelKMeans {
    /// Number of clusters.
    pub k: usize,
    /// Kernel (default Gaussian with the median heuristic).
    pub kernel: Kernel,
    /// Maximum iterations (default 300).
    pub max_iter: usize,
    /// Initial centroids.
    pub init: PowerInit,
    /// Runs from different initial centroids; the one with the lowest objective is kept.
    pub n_init: usize,
    /// Seed.
    pub seed: u64,
    /// Progress callback (one report per iteration).
    pub progress: Option<ProgressFn>,
}

impl KernelKMeans {
    /// Kernel k-means with a Gaussian kernel of median-heuristic bandwidth.
    pub fn new(k: usize) -> Self {
        KernelKMeans {
            k,
            kernel: Kernel::Gaussian(Bandwidth::Median),
            max_iter: 300,
            init: PowerInit::KMeansPlusPlus,
            n_init: DEFAULT_N_INIT,
            seed: 0,
            progress: None,
        }
    }
    /// Number of runs from different initial centroids (the best objective is kept).
    pub fn n_init(mut self, n: usize) -> Self {
        self.n_init = n;
        self
    }
    /// Maximum iterations of each run.
    pub fn max_iter(mut self, m: usize) -> Self {
        self.max_iter = m;
        self
    }
    /// Kernel.
    pub fn kernel(mut self, k: Kernel) -> Self {
        self.kernel = k;
        self
    }
    /// Initial centroids.
    pub fn init(mut self, i: PowerInit) -> Self {
        self.init = i;
        self
    }
}

shared_setters!(KernelKMeans { progress, seed });

impl<F: Scalar> Fit<ArrayView2<'_, F>> for KernelKMeans {
    type Model = KernelModel;
    /// Assign to the nearest centroid, move centroids to their clusters' means, until no label
    /// changes; an emptied cluster keeps its previous centroid.
    fn fit(&self, x: &ArrayView2<'_, F>) -> Result<KernelModel> {
        if let Some(p) = &self.progress {
            p.phase("kernel matrix");
        }
        let km = prepare(*x, self, self.k, self.kernel, self.seed)?;
        best_exact(&km, self.k, &self.init, self.n_init, self.seed, |space, _| {
            let mut objectives = Vec::new();
            let report = reporter(self.progress.as_ref(), self.max_iter);
            let hard = finish_hard(space, self.max_iter, &mut objectives, report)?;
            Ok(PowerFit {
                labels: hard.labels,
                n_iter: hard.n_iter,
                converged: hard.converged,
                s: f64::NEG_INFINITY,
                annealing_steps: 0,
                annealed: false,
                hard_iter: hard.n_iter,
                objective: hard.objective,
                objectives,
            })
        })
    }
}

/// Parameters of RFF-KPKM: power k-means on random Fourier features of a Gaussian kernel (the
/// estimator).
///
/// ```
/// use clustr::prelude::*;
/// let x = clustr::datasets::load("iris")?.data;
/// let model = clustr::kernel::RffKpkm::new(3).n_features(200).n_init(2).fit(&x.view())?;
/// assert_eq!(model.predict(x.view())?.len(), x.nrows());
/// # Ok::<(), clustr::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct RffKpkm {
    /// Number of clusters.
    pub k: usize,
    /// Number of random features D (default 1,000).
    pub n_features: usize,
    /// Kernel bandwidth (default: median heuristic).
    pub bandwidth: Bandwidth,
    /// Annealing and stopping (power k-means' defaults).
    pub schedule: Schedule,
    /// Initial centroids (data points).
    pub init: PowerInit,
    /// Runs from different initial centroids on the same features; the one with the lowest
    /// objective is kept.
    pub n_init: usize,
    /// Seed of the features and the initialisation.
    pub seed: u64,
    /// Progress callback.
    pub progress: Option<ProgressFn>,
    /// The processes of a distributed run (default: this one alone).
    pub comm: SharedComm,
    /// Where the feature map and the iterations run (default: the CPU).
    pub backend: AnyBackend,
    /// The weight of each point, as in [`PowerKMeans`] on the features (the bandwidth's
    /// median heuristic stays unweighted).
    pub sample_weight: Option<Vec<f64>>,
}

impl RffKpkm {
    /// The weight of each point.
    pub fn sample_weight(mut self, w: Vec<f64>) -> Self {
        self.sample_weight = Some(w);
        self
    }
    /// RFF-KPKM with D = 1,000 and the median-heuristic bandwidth.
    pub fn new(k: usize) -> Self {
        RffKpkm {
            k,
            n_features: 1000,
            bandwidth: Bandwidth::Median,
            schedule: Schedule::default(),
            init: PowerInit::KMeansPlusPlus,
            n_init: DEFAULT_N_INIT,
            seed: 0,
            progress: None,
            comm: single_process(),
            backend: AnyBackend::default(),
            sample_weight: None,
        }
    }
    /// Number of runs from different initial centroids (the best objective is kept).
    pub fn n_init(mut self, n: usize) -> Self {
        self.n_init = n;
        self
    }
    /// Number of random features.
    pub fn n_features(mut self, d: usize) -> Self {
        self.n_features = d;
        self
    }
    /// Kernel bandwidth.
    pub fn bandwidth(mut self, b: Bandwidth) -> Self {
        self.bandwidth = b;
        self
    }
    /// Annealing and stopping.
    pub fn schedule(mut self, s: Schedule) -> Self {
        self.schedule = s;
        self
    }
    /// Initial centroids.
    pub fn init(mut self, i: PowerInit) -> Self {
        self.init = i;
        self
    }
}

shared_setters!(RffKpkm {
    backend("Here it runs the feature map and the iterations."),
    communicator("`fit` then gets this process's slice of the rows; the features are computed where the rows are, the weighted sums are summed over the processes, the labels are those of its rows."),
    seed,
    progress,
});

/// A fitted RFF-KPKM.
#[derive(Clone, Debug, PartialEq)]
pub struct RffKpkmModel<F> {
    /// The feature map (for new points).
    pub features: RandomFourierFeatures,
    /// Power k-means on the features: centroids in feature space (k × D), labels, s.
    pub power: PowerKMeansModel<F>,
}

impl<F: Scalar> Clustering for RffKpkmModel<F> {
    fn labels(&self) -> &[i64] {
        &self.power.fit.labels
    }
    fn loss(&self) -> Option<f64> {
        Some(self.power.fit.objective)
    }
    fn n_iter(&self) -> usize {
        self.power.fit.n_iter
    }
    fn converged(&self) -> bool {
        self.power.fit.converged
    }
}

impl<F: Scalar> RffKpkmModel<F> {
    /// The nearest centroid (in feature space) of each new point.
    pub fn predict(&self, x: ArrayView2<F>) -> Result<Vec<i64>> {
        crate::data::validate::check_points(x)?;
        let z = self.features.transform(x)?;
        let near =
            CpuBackend::default().nearest(z.view(), self.power.centers.view(), &MetricKind::SqEuclidean)?;
        Ok(near.into_iter().map(|m| m.index as i64).collect())
    }
}

/// The stored form of an RFF-KPKM model: the feature map and power k-means on the features.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct StoredRffKpkm {
    features: StoredFeatures,
    power: StoredPowerKMeans,
}

impl<F: Scalar> SaveLoad for RffKpkmModel<F> {
    const ALGORITHM: &'static str = "rff-kpkm";
    type Stored = StoredRffKpkm;
    fn to_stored(&self) -> StoredRffKpkm {
        StoredRffKpkm {
            features: StoredFeatures::from(&self.features),
            power: self.power.to_stored(),
        }
    }
    fn from_stored(s: StoredRffKpkm) -> Result<Self> {
        let features = s.features.to_features()?;
        let power = PowerKMeansModel::from_stored(s.power)?;
        crate::data::validate::check_same_len(
            "centroid dimension (random features)",
            features.omega.nrows(),
            power.centers.ncols(),
        )?;
        Ok(RffKpkmModel { features, power })
    }
}

/// Draws the feature map of the data (bandwidth resolved on a seeded sample of all rows) and
/// maps `x`, this process's slice.
fn rff_features<F: Scalar>(
    x: ArrayView2<F>,
    n_features: usize,
    bandwidth: Bandwidth,
    seed: u64,
    part: Partition,
    comm: &dyn Communicator,
    backend: &AnyBackend,
) -> Result<(RandomFourierFeatures, Array2<F>)> {
    // (the same rows and parameters on every process: an error is everyone's)
    let sigma = bandwidth.resolve_over(x, part, comm, seed)?;
    let mut rff = RandomFourierFeatures::new(x.ncols(), n_features, sigma, seed)?;
    rff.broadcast(comm);
    let z = rff.transform_on(x, backend)?;
    Ok((rff, z))
}

impl MemoryEstimate for RffKpkm {
    /// The bandwidth's sample, the n × D feature matrix, then power k-means on it.
    fn memory_estimate(&self, n: usize, d: usize, elem: usize) -> u64 {
        let power = PowerKMeans::new(self.k).memory_estimate(n, self.n_features, elem);
        product(&[n, self.n_features, elem])
            .saturating_add(self.bandwidth.memory_estimate(n))
            .saturating_add(product(&[self.n_features, d + 1, 8]))
            .saturating_add(power)
    }
}

impl<F: Scalar> Fit<ArrayView2<'_, F>> for RffKpkm {
    type Model = RffKpkmModel<F>;
    fn fit(&self, x: &ArrayView2<'_, F>) -> Result<RffKpkmModel<F>> {
        let comm = &*self.comm;
        let part = Partition::of(x.nrows(), comm);
        let valid = (|| {
            crate::data::validate::check_slice(*x, part.offset, part.n_global)?;
            crate::data::validate::check_k(self.k, part.n_global)?;
            if self.n_features == 0 {
                return Ok(()); // (reported by the feature map)
            }
            check_fit(
                self,
                "RFF-KPKM",
                x.nrows(),
                x.ncols(),
                size_of::<F>(),
                crate::error::hints::RFF_FEATURES,
            )
        })();
        agree(valid, comm)?;
        let squares = crate::data::validate::Arithmetic::SQUARES;
        crate::data::validate::check_magnitude_global(*x, part.n_global, squares, "RFF-KPKM", comm)?;
        if let Some(p) = &self.progress {
            p.phase("features");
        }
        let (features, z) = rff_features(
            *x,
            self.n_features,
            self.bandwidth,
            self.seed,
            part,
            comm,
            &self.backend,
        )?;
        let mut power = PowerKMeans::new(self.k)
            .schedule(self.schedule)
            .init(self.init.clone())
            .n_init(self.n_init)
            .seed(self.seed)
            .communicator(self.comm.clone())
            .backend(self.backend.clone());
        power.progress = self.progress.clone();
        power.sample_weight = self.sample_weight.clone();
        let power = power.fit_rows(z.view())?;
        Ok(RffKpkmModel { features, power })
    }
}

/// Centroids of an exact model in explicit coordinates, for the linear kernel (`aᵀX`).
pub fn linear_centroids(model: &KernelModel, x: ArrayView2<f64>) -> Array2<f64> {
    model.coefficients.t().dot(&x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datasets::Blobs;

    /// Spec acceptance 4a: exact KPKM with the linear kernel is power k-means on X.
    #[test]
    fn linear_kernel_kpkm_equals_power_kmeans() {
        let x = Blobs::new(300, 3).n_features(2).seed(5).generate().unwrap().data;
        let seeds = vec![3, 100, 200];
        let explicit = PowerKMeans::new(3)
            .init(PowerInit::Given(seeds.clone()))
            .fit_rows(x.view())
            .unwrap();
        let kernel = Kpkm::new(3)
            .kernel(Kernel::Linear)
            .schedule(PowerKMeans::new(3).schedule)
            .init(PowerInit::Given(seeds))
            .fit(&x.view())
            .unwrap();
        assert_eq!(explicit.fit.labels, kernel.fit.labels);
        assert_eq!(explicit.fit.n_iter, kernel.fit.n_iter);
        let c = linear_centroids(&kernel, x.view());
        for (a, b) in c.iter().zip(&explicit.centers) {
            assert!((a - b).abs() <= 1e-8 * (1.0 + b.abs()), "{a} vs {b}");
        }
        assert!((kernel.fit.objective - explicit.fit.objective).abs() <= 1e-8 * explicit.fit.objective.abs());
    }

    #[test]
    fn kernel_kmeans_with_linear_kernel_is_lloyd() {
        let x = Blobs::new(400, 4).n_features(2).seed(8).generate().unwrap().data;
        let seeds = vec![0, 1, 2, 3];
        let kk = KernelKMeans::new(4)
            .kernel(Kernel::Linear)
            .init(PowerInit::Given(seeds.clone()))
            .fit(&x.view())
            .unwrap();
        let init = x.select(Axis(0), &seeds);
        let lloyd = crate::kmeans::KMeans::new(4)
            .init(crate::kmeans::KMeansInit::Given(init))
            .tol(0.0)
            .fit(&x.view())
            .unwrap();
        assert_eq!(kk.fit.labels, lloyd.labels);
    }
}
