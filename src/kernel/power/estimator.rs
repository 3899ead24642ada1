//! The power k-means estimator on the data's own coordinates ([`PowerKMeans`]), its model and
//! the model's stored form.

use super::{
    best_of, run, Features, OnDevice, PowerFit, PowerInit, Schedule, BLOCK, DEFAULT_N_INIT, POWER_KMEANS_S0,
};
use crate::backend::{AnyBackend, Backend, CpuBackend};
use crate::comm::{agree, single_process, Partition, SharedComm};
use crate::error::{Error, Result};
use crate::estimator::shared_setters;
use crate::estimator::ProgressFn;
use crate::memory::{check_fit, product, MemoryEstimate};
use crate::metric::MetricKind;
use crate::model_file::{SaveLoad, StoredArray};
use crate::rng::SeededRng;
use crate::scalar::Scalar;
use ndarray::{Array2, ArrayView2};
use rand::SeedableRng;

/// Parameters of power k-means on the data's own coordinates (the estimator).
///
/// ```
/// use clustr::prelude::*;
/// let x = clustr::datasets::load("iris")?.data;
/// let model = clustr::kernel::PowerKMeans::new(3).seed(1).fit(&x.view())?;
/// assert_eq!(model.predict(x.view())?, model.fit.labels);
/// # Ok::<(), clustr::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct PowerKMeans {
    /// Number of clusters.
    pub k: usize,
    /// Annealing and stopping.
    pub schedule: Schedule,
    /// Initial centroids.
    pub init: PowerInit,
    /// Runs from different initial centroids; the one with the lowest objective is kept.
    pub n_init: usize,
    /// Seed.
    pub seed: u64,
    /// Progress callback (after each iteration, with `f_s`).
    pub progress: Option<ProgressFn>,
    /// The processes of a distributed run (default: this one alone).
    pub comm: SharedComm,
    /// Where the iterations run (default: the CPU; on CUDA the points stay on the device and
    /// each iteration's distances, weights and block sums are computed there, k <= 64).
    pub backend: AnyBackend,
    /// The weight vᵢ of each point (default all 1): the objective is `Σᵢ vᵢ·M_s(‖xᵢ − θ.‖²)`,
    /// each centroid the mean of the points weighted by vᵢ times their MM weight, k-means++
    /// and random seeds drawn ∝ v; an integer weight counts as that many copies of the row.
    /// CPU only, not in a distributed run.
    pub sample_weight: Option<Vec<f64>>,
}

impl PowerKMeans {
    /// Power k-means with clustr's defaults: 10 runs from k-means++ seeds at s0 = −1 (the
    /// module comment says why −1 here and −10 for the kernel methods).
    pub fn new(k: usize) -> Self {
        PowerKMeans {
            k,
            schedule: Schedule {
                s0: POWER_KMEANS_S0,
                ..Schedule::default()
            },
            init: PowerInit::KMeansPlusPlus,
            n_init: DEFAULT_N_INIT,
            seed: 0,
            progress: None,
            comm: single_process(),
            backend: AnyBackend::default(),
            sample_weight: None,
        }
    }
    /// The weight of each point.
    pub fn sample_weight(mut self, w: Vec<f64>) -> Self {
        self.sample_weight = Some(w);
        self
    }
    /// Number of runs from different initial centroids (the best objective is kept).
    pub fn n_init(mut self, n: usize) -> Self {
        self.n_init = n;
        self
    }
    /// Annealing and stopping.
    pub fn schedule(mut self, s: Schedule) -> Self {
        self.schedule = s;
        self
    }
    /// Initial power.
    pub fn s0(mut self, s0: f64) -> Self {
        self.schedule.s0 = s0;
        self
    }
    /// Annealing factor.
    pub fn eta(mut self, eta: f64) -> Self {
        self.schedule.eta = eta;
        self
    }
    /// Maximum iterations.
    pub fn max_iter(mut self, m: usize) -> Self {
        self.schedule.max_iter = m;
        self
    }
    /// Initial centroids.
    pub fn init(mut self, init: PowerInit) -> Self {
        self.init = init;
        self
    }

    /// Fits on rows `x` (the data, or features such as RFF).
    pub(crate) fn fit_rows<F: Scalar>(&self, x: ArrayView2<F>) -> Result<PowerKMeansModel<F>> {
        let comm = &*self.comm;
        let part = Partition::of(x.nrows(), comm);
        let valid = (|| {
            crate::data::validate::check_slice(x, part.offset, part.n_global)?;
            crate::data::validate::check_k(self.k, part.n_global)?;
            self.schedule.validate()?;
            if let Some(w) = &self.sample_weight {
                if comm.size() > 1 || !matches!(self.backend, AnyBackend::Cpu(_)) {
                    return Err(Error::param(
                        "sample_weight",
                        "given",
                        "power k-means takes sample weights on the CPU, in one process",
                    ));
                }
                crate::data::validate::check_sample_weight(w, x.nrows(), false)?;
                crate::data::validate::check_positive_weights(w, self.k)?;
            }
            check_fit(
                self,
                "power k-means",
                x.nrows(),
                x.ncols(),
                size_of::<F>(),
                crate::error::hints::POWER,
            )
        })();
        agree(valid, comm)?;
        let squares = crate::data::validate::Arithmetic::SQUARES;
        crate::data::validate::check_magnitude_global(x, part.n_global, squares, "power k-means", comm)?;
        let x = crate::data::standard_layout(x);
        let mut rng = SeededRng::seed_from_u64(self.seed);
        // (weights in their overflow-safe form: the same centroids; objectives scaled back)
        let scaled = crate::data::validate::ScaledWeights::of(self.sample_weight.as_deref());
        let w = scaled.as_ref().map(|s| s.weights.as_slice());
        let fit_once = |r: usize| -> Result<PowerKMeansModel<F>> {
            let schedule = self.schedule.for_run(r);
            let seeds = self.init.seeds(part.n_global, self.k, w, &mut rng, |rng| {
                crate::kmeans::greedy_kmeans_plus_plus(x.view(), w, self.k, rng, part, comm)
            })?;
            // (the device takes unweighted points only)
            let device = match w {
                None => self.backend.power_points(x.view(), self.k)?,
                Some(_) => None,
            };
            let (centers, fit) = match device {
                Some(points) => {
                    let mut space = OnDevice::new(points, x.view(), &seeds, part, comm);
                    let fit = run(&mut space, &schedule, self.progress.as_ref())?;
                    (space.centers, fit)
                }
                None => {
                    let mut space = Features::new(x.view(), &seeds, part, comm).weighted(w);
                    let fit = run(&mut space, &schedule, self.progress.as_ref())?;
                    (space.centers, fit)
                }
            };
            Ok(PowerKMeansModel { centers, fit, seeds })
        };
        let mut best = best_of(self.init.runs(self.n_init), fit_once, |m| m.fit.objective)?;
        if let Some(s) = &scaled {
            best.fit.objective = s.unscale(best.fit.objective, "objective")?;
            for o in &mut best.fit.objectives {
                *o = s.unscale(*o, "objective")?;
            }
        }
        Ok(best)
    }
}

shared_setters!(PowerKMeans {
    communicator("`fit` then gets this process's slice of the rows, and the labels are those of its rows."),
    backend("Here it runs the iterations."),
    seed,
    progress,
});

/// A fitted power k-means.
#[derive(Clone, Debug, PartialEq)]
pub struct PowerKMeansModel<F> {
    /// Centroids (k × d).
    pub centers: Array2<F>,
    /// Labels, iterations, final s and objective.
    pub fit: PowerFit,
    /// The rows used as initial centroids.
    pub seeds: Vec<usize>,
}

impl<F: Scalar> PowerKMeansModel<F> {
    /// New points as the fit takes them, within range of the centroids.
    fn check(&self, x: ArrayView2<F>) -> Result<()> {
        let squares = crate::data::validate::Arithmetic::SQUARES;
        crate::data::validate::check_new_points(x, self.centers.view(), squares, "power k-means")
    }

    /// The nearest centroid of each new point (Euclidean, ties to the lowest index).
    pub fn predict(&self, x: ArrayView2<F>) -> Result<Vec<i64>> {
        self.check(x)?;
        let near = CpuBackend::default().nearest(x, self.centers.view(), &MetricKind::SqEuclidean)?;
        Ok(near.into_iter().map(|n| n.index as i64).collect())
    }

    /// Euclidean distance of each point to each centroid (n × k).
    pub fn transform(&self, x: ArrayView2<F>) -> Result<Array2<F>> {
        self.check(x)?;
        let mut out = Array2::<F>::zeros((x.nrows(), self.centers.nrows()));
        CpuBackend::default().pairwise(x, self.centers.view(), &MetricKind::Euclidean, out.view_mut())?;
        Ok(out)
    }
}

/// The stored form of a power k-means model: the centroids and the fit's summary.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct StoredPowerKMeans {
    centers: StoredArray,
    n_iter: usize,
    converged: bool,
    s: f64,
    annealing_steps: usize,
    annealed: bool,
    hard_iter: usize,
    objective: f64,
}

impl<F: Scalar> SaveLoad for PowerKMeansModel<F> {
    const ALGORITHM: &'static str = "power-kmeans";
    type Stored = StoredPowerKMeans;
    fn to_stored(&self) -> StoredPowerKMeans {
        let f = &self.fit;
        StoredPowerKMeans {
            centers: StoredArray::from_array(&self.centers),
            n_iter: f.n_iter,
            converged: f.converged,
            s: f.s,
            annealing_steps: f.annealing_steps,
            annealed: f.annealed,
            hard_iter: f.hard_iter,
            objective: f.objective,
        }
    }
    /// The model without training labels, objectives and seeds.
    fn from_stored(s: StoredPowerKMeans) -> Result<Self> {
        Ok(PowerKMeansModel {
            centers: crate::kmeans::checked_centers(&s.centers)?,
            fit: PowerFit {
                labels: Vec::new(),
                n_iter: s.n_iter,
                converged: s.converged,
                s: s.s,
                annealing_steps: s.annealing_steps,
                annealed: s.annealed,
                hard_iter: s.hard_iter,
                objective: s.objective,
                objectives: Vec::new(),
            },
            seeds: Vec::new(),
        })
    }
}

impl MemoryEstimate for PowerKMeans {
    /// The n × k distances, weights and their scratch, labels, and the centres with their
    /// per-thread and per-block partial sums.
    fn memory_estimate(&self, n: usize, d: usize, _elem: usize) -> u64 {
        product(&[n, self.k + 1, 4 * 8])
            .saturating_add(product(&[self.k, d, 8, rayon::current_num_threads() + 2]))
            .saturating_add(product(&[n.div_ceil(BLOCK), self.k * d + self.k + 2, 8]))
    }
}

impl<F: Scalar> crate::estimator::Fit<ArrayView2<'_, F>> for PowerKMeans {
    type Model = PowerKMeansModel<F>;
    fn fit(&self, x: &ArrayView2<'_, F>) -> Result<PowerKMeansModel<F>> {
        self.fit_rows(*x)
    }
}

impl<F: Scalar> crate::estimator::Clustering for PowerKMeansModel<F> {
    fn labels(&self) -> &[i64] {
        &self.fit.labels
    }
    /// `f_s` at the final s.
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
