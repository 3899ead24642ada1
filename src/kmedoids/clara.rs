//! CLARA (Kaufman & Rousseeuw 1990) and FastCLARA / FasterCLARA (Schubert & Rousseeuw 2019,
//! 2021): k-medoids on random samples, each sample's medoids scored on all n points; the best
//! medoids so far are kept in the next sample. Memory O(s² + n) for a sample of size s, so
//! with on-the-fly dissimilarities n can far exceed what an n×n matrix allows.
//!
//! Defaults as ELKI: 5 samples of 40 + 2k (CLARA, inner PAM) or 80 + 4k (FastCLARA with
//! FastPAM2, FasterCLARA with FasterPAM) points, BUILD on each sample.
//!
//! Distributed ([`Clara::communicator`], [`Clara::fit_points`]): every process holds a slice
//! of the points and draws the same samples (global row indices); each sends the sample rows
//! it holds, every process runs the inner method on the gathered sample (the same medoids),
//! and the full-data loss is each process's share, summed in rank order.
//!
//! With sample weights (one process) each sample is fitted with its objects' weights and
//! scored by the weighted loss on all objects; the samples stay uniform draws.

use super::weighted::{check_weights, weighted_deviation};
use super::{nearest_medoids, total_deviation, Init, KMedoids, KMedoidsModel, KValue};
use crate::backend::{AnyBackend, Backend};
use crate::comm::{agree, fetch_rows, single_process, Partition, SharedComm};
use crate::data::validate::{check_k, check_slice};
use crate::dissim::{DenseMatrix, Dissimilarity};
use crate::error::{Error, Result};
use crate::estimator::shared_setters;
use crate::estimator::{Fit, Progress, ProgressFn};
use crate::memory::{check_fit, product, MemoryEstimate};
use crate::metric::{Metric, MetricKind};
use crate::rng::SeededRng;
use crate::scalar::Scalar;
use ndarray::{Array2, ArrayView2};
use num_traits::{ToPrimitive, Zero};
use rand::SeedableRng;

/// Which CLARA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaraVariant {
    /// PAM on samples of 40 + 2k.
    Clara,
    /// FastPAM2 on samples of 80 + 4k.
    FastClara,
    /// FasterPAM on samples of 80 + 4k.
    FasterClara,
}

/// Parameters of a CLARA run.
///
/// ```
/// use clustr::prelude::*;
/// let x = clustr::datasets::load("iris")?.data;
/// let clara = clustr::kmedoids::Clara::fasterclara(3).seed(1);
/// let model = clara.fit_points(x.view(), &MetricKind::Euclidean)?;
/// assert_eq!(model.medoids.len(), 3);
/// # Ok::<(), clustr::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Clara {
    /// Number of medoids.
    pub k: usize,
    /// Which CLARA.
    pub variant: ClaraVariant,
    /// Number of samples (default 5).
    pub samples: usize,
    /// Sample size; `None` = 40 + 2k (CLARA) or 80 + 4k (Fast/Faster).
    pub sample_size: Option<usize>,
    /// Draw every sample independently instead of keeping the best medoids (default false).
    pub independent: bool,
    /// Maximum passes of the inner algorithm (default 100).
    pub max_iter: usize,
    /// Seed.
    pub seed: u64,
    /// Progress callback (after each sample).
    pub progress: Option<ProgressFn>,
    /// The processes of a distributed run (default: this one alone); see [`Clara::fit_points`].
    pub comm: SharedComm,
    /// Where [`Clara::fit_points`] assigns every point to its nearest medoid (default: the
    /// CPU; the samples' swap phases stay on the CPU, their matrices are small).
    pub backend: AnyBackend,
    /// The weight of each object (`None`: all 1), as [`KMedoids::sample_weight`]; one
    /// process, the assignment on the CPU.
    pub sample_weight: Option<Vec<f64>>,
    /// The metric of points fitted with [`Fit`] on an `ArrayView2` (default Euclidean); a
    /// dissimilarity given to `fit` carries its own.
    pub metric: MetricKind,
}

impl Clara {
    fn with(k: usize, variant: ClaraVariant) -> Self {
        Clara {
            k,
            variant,
            samples: 5,
            sample_size: None,
            independent: false,
            max_iter: 100,
            seed: 0,
            progress: None,
            comm: single_process(),
            backend: AnyBackend::default(),
            sample_weight: None,
            metric: MetricKind::Euclidean,
        }
    }
    /// The metric of points fitted with [`Fit`] on an `ArrayView2` (default Euclidean).
    pub fn metric(mut self, metric: MetricKind) -> Self {
        self.metric = metric;
        self
    }
    /// The weight of each object (see [`Clara::sample_weight`](struct.Clara.html#structfield.sample_weight)).
    pub fn sample_weight(mut self, w: Vec<f64>) -> Self {
        self.sample_weight = Some(w);
        self
    }
    /// CLARA.
    pub fn new(k: usize) -> Self {
        Self::with(k, ClaraVariant::Clara)
    }
    /// FastCLARA.
    pub fn fastclara(k: usize) -> Self {
        Self::with(k, ClaraVariant::FastClara)
    }
    /// FasterCLARA.
    pub fn fasterclara(k: usize) -> Self {
        Self::with(k, ClaraVariant::FasterClara)
    }
    /// Number of samples.
    pub fn samples(mut self, s: usize) -> Self {
        self.samples = s;
        self
    }
    /// Sample size.
    pub fn sample_size(mut self, s: usize) -> Self {
        self.sample_size = Some(s);
        self
    }
    /// Independent samples.
    pub fn independent(mut self, b: bool) -> Self {
        self.independent = b;
        self
    }
    /// Inner maximum passes.
    pub fn max_iter(mut self, m: usize) -> Self {
        self.max_iter = m;
        self
    }
    /// Name as on the command line.
    pub fn name(&self) -> &'static str {
        match self.variant {
            ClaraVariant::Clara => "clara",
            ClaraVariant::FastClara => "fastclara",
            ClaraVariant::FasterClara => "fasterclara",
        }
    }
    /// The sample size used for `n` points.
    pub fn effective_sample_size(&self, n: usize) -> usize {
        let default = match self.variant {
            ClaraVariant::Clara => 40 + 2 * self.k,
            _ => 80 + 4 * self.k,
        };
        self.sample_size.unwrap_or(default).min(n)
    }

    fn inner(&self) -> KMedoids {
        let m = match self.variant {
            ClaraVariant::Clara => KMedoids::pam(self.k),
            ClaraVariant::FastClara => KMedoids::fastpam2(self.k),
            ClaraVariant::FasterClara => KMedoids::fasterpam(self.k),
        };
        m.init(Init::Build).max_iter(self.max_iter)
    }
}

shared_setters!(Clara {
    backend("Here it runs the nearest-medoid assignment of points."),
    communicator("A distributed run fits points with [`Clara::fit_points`]."),
    seed,
    progress,
});

impl MemoryEstimate for Clara {
    /// The sample's dissimilarity matrix and its k-medoids caches, plus the labels of the
    /// best and the current sample on all n objects.
    fn memory_estimate(&self, n: usize, d: usize, elem: usize) -> u64 {
        let s = self.effective_sample_size(n);
        product(&[s, s, elem])
            .saturating_add(self.inner().memory_estimate(s, d, elem))
            .saturating_add(product(&[n, 24]))
    }
}

/// What CLARA needs of its data: the dissimilarities among a sample, and each object's
/// nearest medoid with the loss over all objects.
trait Sampled {
    type Value: KValue;
    /// Objects over all processes.
    fn len(&self) -> usize;
    /// The s × s dissimilarities among `sample` (distinct objects).
    fn among(&self, sample: &[usize]) -> Array2<Self::Value>;
    /// The loss over all objects and the medoid position of each of this process's objects.
    fn deviation(&self, medoids: &[usize]) -> Result<(<Self::Value as KValue>::Loss, Vec<usize>)>;
}

/// A dissimilarity on one process, with the objects' weights if any.
struct Whole<'a, D>(&'a D, Option<&'a [f64]>);

impl<D: Dissimilarity> Sampled for Whole<'_, D>
where
    D::Value: KValue,
{
    type Value = D::Value;
    fn len(&self) -> usize {
        self.0.len()
    }
    fn among(&self, sample: &[usize]) -> Array2<D::Value> {
        let s = sample.len();
        Array2::from_shape_fn((s, s), |(a, b)| {
            if a == b {
                D::Value::zero()
            } else {
                self.0.get(sample[a], sample[b])
            }
        })
    }
    fn deviation(&self, medoids: &[usize]) -> Result<(<D::Value as KValue>::Loss, Vec<usize>)> {
        Ok(match self.1 {
            Some(w) => weighted_deviation(self.0, w, medoids),
            None => total_deviation(self.0, medoids),
        })
    }
}

/// Points split over the processes, with a metric.
struct Spread<'a, F, M> {
    x: ArrayView2<'a, F>,
    metric: &'a M,
    part: Partition,
    comm: &'a dyn crate::comm::Communicator,
    backend: &'a AnyBackend,
}

impl<F: Scalar + KValue<Loss = f64>, M: Metric> Sampled for Spread<'_, F, M> {
    type Value = F;
    fn len(&self) -> usize {
        self.part.n_global
    }
    fn among(&self, sample: &[usize]) -> Array2<F> {
        let rows = fetch_rows(self.x, self.part, sample, self.comm);
        let row = |a: usize| rows.row(a).to_slice().expect("standard layout");
        let s = sample.len();
        Array2::from_shape_fn((s, s), |(a, b)| {
            if a == b {
                F::zero()
            } else {
                self.metric.distance(row(a), row(b))
            }
        })
    }
    fn deviation(&self, medoids: &[usize]) -> Result<(f64, Vec<usize>)> {
        let rows = fetch_rows(self.x, self.part, medoids, self.comm);
        let (loss, labels) = if !self.backend.assigns_off_host() {
            self.deviation_on_cpu(medoids, &rows)
        } else {
            // The backend's nearest medoid; each medoid's own distance is taken as 0 (as on
            // the CPU), the loss summed in the same fixed chunks.
            let near = self.backend.nearest(self.x, rows.view(), self.metric)?;
            let own = |o| self.own(medoids, o);
            let (loss, _) = nearest_medoids(self.x.nrows(), 1, own, |o, _| near[o].distance);
            let labels = (0..self.x.nrows())
                .map(|o| own(o).unwrap_or(near[o].index))
                .collect();
            (loss, labels)
        };
        let mut total = [loss];
        self.comm.allreduce_sum(&mut total);
        Ok((total[0], labels))
    }
}

impl<F: Scalar + KValue<Loss = f64>, M: Metric> Spread<'_, F, M> {
    /// The loss over this process's points and their nearest medoids, distances computed on
    /// the fly (O(n·k), lowest position on ties).
    fn deviation_on_cpu(&self, medoids: &[usize], rows: &Array2<F>) -> (f64, Vec<usize>) {
        let own = |o| self.own(medoids, o);
        nearest_medoids(self.x.nrows(), medoids.len(), own, |o, i| {
            let a = self.x.row(o);
            let b = rows.row(i);
            self.metric.distance(
                a.as_slice().expect("standard layout"),
                b.as_slice().expect("standard layout"),
            )
        })
    }

    /// The position of this process's object `o` among the medoids, if it is one.
    fn own(&self, medoids: &[usize], o: usize) -> Option<usize> {
        medoids.iter().position(|&m| m == self.part.offset + o)
    }
}

impl Clara {
    /// Fits points with a metric (dissimilarities computed on the fly). In a distributed run
    /// `x` is this process's slice of the rows: the medoids are global row indices, the loss
    /// is over all rows, the labels are those of this process's rows.
    pub fn fit_points<F, M>(&self, x: ArrayView2<F>, metric: &M) -> Result<KMedoidsModel<f64>>
    where
        F: Scalar + KValue<Loss = f64>,
        M: Metric,
    {
        let comm = &*self.comm;
        if self.sample_weight.is_some() {
            if comm.size() > 1 {
                return Err(Error::param(
                    "sample_weight",
                    "given",
                    "a distributed CLARA takes no sample weights",
                ));
            }
            return self.fit(&crate::dissim::OnTheFly::new(x, metric)?);
        }
        let part = Partition::of(x.nrows(), comm);
        let x = crate::data::standard_layout(x);
        agree(
            check_slice(x.view(), part.offset, part.n_global).and_then(|()| metric.check_dim(x.ncols())),
            comm,
        )?;
        let what = format!("the {} distance", metric.name());
        let arithmetic = crate::data::validate::Arithmetic::of_metric(metric.kind());
        crate::data::validate::check_magnitude_global(x.view(), part.n_global, arithmetic, &what, comm)?;
        let data = Spread {
            x: x.view(),
            metric,
            part,
            comm,
            backend: &self.backend,
        };
        self.run(&data, x.ncols())
    }

    fn run<S: Sampled>(&self, data: &S, dim: usize) -> Result<KMedoidsModel<<S::Value as KValue>::Loss>> {
        let n = data.len();
        if n == 0 {
            return Err(Error::EmptyInput {
                what: "dissimilarity has 0 objects".into(),
            });
        }
        check_k(self.k, n)?;
        if self.samples == 0 {
            return Err(Error::param("samples", 0, "at least one sample"));
        }
        let s = self.effective_sample_size(n);
        if s < self.k {
            return Err(Error::param(
                "sample_size",
                s,
                format!("must be at least k = {}", self.k),
            ));
        }
        check_fit(
            self,
            self.name(),
            n,
            dim,
            size_of::<S::Value>(),
            crate::error::hints::CLARA_SAMPLE,
        )?;
        let mut rng = SeededRng::seed_from_u64(self.seed);
        // (full-data loss, medoids, labels) of the best sample so far.
        type Best<S> = (<<S as Sampled>::Value as KValue>::Loss, Vec<usize>, Vec<usize>);
        let mut best: Option<Best<S>> = None;
        let mut total_swaps = 0;
        for t in 0..self.samples {
            // The sample: the best medoids so far (unless independent), then random others.
            let mut sample: Vec<usize> = match (&best, self.independent) {
                (Some((_, m, ..)), false) => m.clone(),
                _ => Vec::new(),
            };
            if s >= n {
                sample = (0..n).collect();
            } else {
                // s distinct draws hold at most k of the kept medoids: enough others remain.
                let kept = sample.clone();
                let others = rand::seq::index::sample(&mut rng, n, s)
                    .into_iter()
                    .filter(|i| !kept.contains(i));
                sample.extend(others.take(s - kept.len()));
                sample.sort_unstable();
            }
            let sub = DenseMatrix::new(data.among(&sample))?;
            let mut inner = self.inner().seed(self.seed.wrapping_add(t as u64));
            if let Some(w) = &self.sample_weight {
                // A sample of weight 0 alone has loss 0 under any medoids: fitted unweighted.
                let sample_w: Vec<f64> = sample.iter().map(|&i| w[i]).collect();
                if sample_w.iter().any(|&v| v > 0.0) {
                    inner = inner.sample_weight(sample_w);
                }
            }
            let model = inner.fit(&sub)?;
            total_swaps += model.n_swaps;
            let medoids: Vec<usize> = model.medoids.iter().map(|&i| sample[i]).collect();
            let (loss, labels) = data.deviation(&medoids)?;
            if let Some(p) = &self.progress {
                p.report(&Progress {
                    iteration: t + 1,
                    max_iter: Some(self.samples),
                    objective: loss.to_f64(),
                })?;
            }
            if best.as_ref().is_none_or(|b| loss < b.0) {
                best = Some((loss, medoids, labels));
            }
            if s >= n {
                break; // every sample would be the whole data
            }
        }
        let Some((loss, medoids, labels)) = best else {
            return Err(Error::param("samples", self.samples, "at least one sample"));
        };
        Ok(KMedoidsModel {
            initial_medoids: medoids.clone(),
            medoids,
            labels: labels.into_iter().map(|l| l as i64).collect(),
            loss,
            n_iter: self.samples,
            n_swaps: total_swaps,
            converged: true,
        })
    }
}

/// Points are fitted as every estimator fits them: `Clara::new(k).fit(&x)`, under
/// [`Clara::metric`] (as [`Clara::fit_points`]).
impl<F: Scalar + KValue<Loss = f64>> Fit<ArrayView2<'_, F>> for Clara {
    type Model = KMedoidsModel<f64>;

    fn fit(&self, x: &ArrayView2<'_, F>) -> Result<Self::Model> {
        self.fit_points(x.view(), &self.metric)
    }
}

/// Sparse rows under [`Clara::metric`] (Euclidean, squared Euclidean, cosine or Manhattan),
/// their dissimilarities computed when needed ([`crate::dissim::SparseRows`]).
impl<F: Scalar + KValue<Loss = f64>> Fit<crate::data::CsrView<'_, F>> for Clara {
    type Model = KMedoidsModel<f64>;

    fn fit(&self, x: &crate::data::CsrView<'_, F>) -> Result<Self::Model> {
        self.fit(&crate::dissim::SparseRows::checked(*x, self.metric, 0, "CLARA")?)
    }
}

impl<D> Fit<D> for Clara
where
    D: Dissimilarity,
    D::Value: KValue,
{
    type Model = KMedoidsModel<<D::Value as KValue>::Loss>;

    fn fit(&self, d: &D) -> Result<Self::Model> {
        if self.comm.size() > 1 {
            return Err(Error::Unsupported(
                "a distributed CLARA fits points split over the processes: use Clara::fit_points".into(),
            ));
        }
        let w = self.sample_weight.as_deref();
        if let Some(w) = w {
            check_weights::<<D::Value as KValue>::Loss>(w, d.len())?;
        }
        self.run(&Whole(d, w), 0)
    }
}
