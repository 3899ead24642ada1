//! CLARANS (Ng & Han 2002) and FastCLARANS (Schubert & Rousseeuw 2019): randomised local
//! search. From random medoids, try random swaps until `maxneighbor` consecutive tries fail,
//! apply every improving one; repeat `numlocal` times and keep the best local optimum.
//!
//! CLARANS tries a random (medoid, non-medoid) pair, ⌈0.0125·k(n−k)⌉ times by default;
//! FastCLARANS tries a random non-medoid against all k medoids at once (FastPAM1's O(n)
//! scan), ⌈0.025·(n−k)⌉ times, drawing non-medoids without repetition until a swap. Unlike
//! ELKI's FastCLARANS, the medoid to replace is the true argmin of the swap gains. k = 1 is
//! solved exactly. Sample weights as [`super::KMedoids::sample_weight`].

use super::swap::{LossOf, State};
use super::{random_medoids, KMedoidsModel, KValue, Loss};
use crate::data::validate::check_k;
use crate::dissim::{Dissimilarity, OnTheFly};
use crate::error::{Error, Result};
use crate::estimator::shared_setters;
use crate::estimator::{Fit, Progress, ProgressFn};
use crate::memory::{check_fit, product, MemoryEstimate};
use crate::metric::MetricKind;
use crate::rng::SeededRng;
use crate::scalar::Scalar;
use ndarray::ArrayView2;
use num_traits::ToPrimitive;
use rand::{Rng, SeedableRng};

/// Which CLARANS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaransVariant {
    /// One (medoid, non-medoid) pair per try.
    Clarans,
    /// One non-medoid against all medoids per try.
    FastClarans,
}

/// Parameters of a CLARANS run.
///
/// ```
/// use clustr::prelude::*;
/// let x = clustr::datasets::load("iris")?.data;
/// let d = OnTheFly::new(x.view(), MetricKind::Manhattan)?;
/// let model = clustr::kmedoids::Clarans::fastclarans(3).seed(1).fit(&d)?;
/// assert_eq!(model.medoids.len(), 3);
/// # Ok::<(), clustr::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Clarans {
    /// Number of medoids.
    pub k: usize,
    /// Which CLARANS.
    pub variant: ClaransVariant,
    /// Local searches (default 2).
    pub numlocal: usize,
    /// Failed tries before a local search stops: below 1 a fraction of k(n−k) (CLARANS) or
    /// of n−k (FastCLARANS), rounded up; otherwise a count, capped at that number of
    /// neighbours. Default 0.0125 (CLARANS) and 0.025 (FastCLARANS).
    pub maxneighbor: f64,
    /// Seed.
    pub seed: u64,
    /// Progress callback (after each local search).
    pub progress: Option<ProgressFn>,
    /// The weight of each object (`None`: all 1), as [`super::KMedoids::sample_weight`].
    pub sample_weight: Option<Vec<f64>>,
    /// The metric of points fitted with [`Fit`] on an `ArrayView2` (default Euclidean); a
    /// dissimilarity given to `fit` carries its own.
    pub metric: MetricKind,
}

impl Clarans {
    /// CLARANS with ELKI's defaults.
    pub fn new(k: usize) -> Self {
        Clarans {
            k,
            variant: ClaransVariant::Clarans,
            numlocal: 2,
            maxneighbor: 0.0125,
            seed: 0,
            progress: None,
            sample_weight: None,
            metric: MetricKind::Euclidean,
        }
    }
    /// FastCLARANS with ELKI's defaults.
    pub fn fastclarans(k: usize) -> Self {
        Clarans {
            k,
            variant: ClaransVariant::FastClarans,
            numlocal: 2,
            maxneighbor: 0.025,
            seed: 0,
            progress: None,
            sample_weight: None,
            metric: MetricKind::Euclidean,
        }
    }
    /// The metric of points fitted with [`Fit`] on an `ArrayView2` (default Euclidean).
    pub fn metric(mut self, metric: MetricKind) -> Self {
        self.metric = metric;
        self
    }
    /// Local searches.
    pub fn numlocal(mut self, v: usize) -> Self {
        self.numlocal = v;
        self
    }
    /// Failed tries before stopping (fraction below 1, count otherwise).
    pub fn maxneighbor(mut self, v: f64) -> Self {
        self.maxneighbor = v;
        self
    }
    /// The weight of each object (see [`Clarans::sample_weight`](struct.Clarans.html#structfield.sample_weight)).
    pub fn sample_weight(mut self, w: Vec<f64>) -> Self {
        self.sample_weight = Some(w);
        self
    }
    /// Name as on the command line.
    pub fn name(&self) -> &'static str {
        match self.variant {
            ClaransVariant::Clarans => "clarans",
            ClaransVariant::FastClarans => "fastclarans",
        }
    }
    /// The number of failed tries that ends a local search for n points, at most the number
    /// of neighbours (k(n−k) swaps for CLARANS, n−k candidates for FastCLARANS), so a huge
    /// count cannot make a run endless.
    pub fn effective_maxneighbor(&self, n: usize) -> usize {
        let space = match self.variant {
            ClaransVariant::Clarans => self.k.saturating_mul(n - self.k),
            ClaransVariant::FastClarans => n - self.k,
        }
        .max(1);
        let tries = if self.maxneighbor >= 1.0 {
            self.maxneighbor.min(usize::MAX as f64) as usize
        } else {
            (self.maxneighbor * space as f64).ceil() as usize
        };
        tries.clamp(1, space)
    }
}

shared_setters!(Clarans { seed, progress });

impl MemoryEstimate for Clarans {
    /// The current and best assignments with their nearest and second-nearest caches.
    fn memory_estimate(&self, n: usize, _d: usize, elem: usize) -> u64 {
        product(&[n, 2, 40 + 2 * elem]).saturating_add(product(&[self.k, 16]))
    }
}

/// Points are fitted as every estimator fits them: `Clarans::new(k).fit(&x)`, under
/// [`Clarans::metric`], the dissimilarities computed when needed (CLARANS reads O(n·k) of
/// them per local search).
impl<F: Scalar + KValue<Loss = f64>> Fit<ArrayView2<'_, F>> for Clarans {
    type Model = KMedoidsModel<f64>;

    fn fit(&self, x: &ArrayView2<'_, F>) -> Result<Self::Model> {
        self.fit(&OnTheFly::new(x.view(), self.metric)?)
    }
}

/// Sparse rows under [`Clarans::metric`] (Euclidean, squared Euclidean, cosine or Manhattan),
/// their dissimilarities computed when needed ([`crate::dissim::SparseRows`]).
impl<F: Scalar + KValue<Loss = f64>> Fit<crate::data::CsrView<'_, F>> for Clarans {
    type Model = KMedoidsModel<f64>;

    fn fit(&self, x: &crate::data::CsrView<'_, F>) -> Result<Self::Model> {
        self.fit(&crate::dissim::SparseRows::checked(
            *x,
            self.metric,
            0,
            "CLARANS",
        )?)
    }
}

impl<D> Fit<D> for Clarans
where
    D: Dissimilarity,
    D::Value: KValue,
{
    type Model = KMedoidsModel<LossOf<D>>;

    fn fit(&self, d: &D) -> Result<Self::Model> {
        match &self.sample_weight {
            Some(w) => super::weighted::fit_weighted(d, w, |wd| self.search(wd)),
            None => self.search(d),
        }
    }
}

impl Clarans {
    /// The local searches on `d`.
    fn search<D>(&self, d: &D) -> Result<KMedoidsModel<LossOf<D>>>
    where
        D: Dissimilarity,
        D::Value: KValue,
    {
        let n = d.len();
        if n == 0 {
            return Err(Error::EmptyInput {
                what: "dissimilarity has 0 objects".into(),
            });
        }
        check_k(self.k, n)?;
        if self.numlocal == 0 {
            return Err(Error::param("numlocal", 0, "at least one local search"));
        }
        if !(self.maxneighbor > 0.0 && self.maxneighbor.is_finite()) {
            return Err(Error::param("maxneighbor", self.maxneighbor, "must be positive"));
        }
        check_fit(
            self,
            self.name(),
            n,
            0,
            size_of::<D::Value>(),
            crate::error::hints::MEDOIDS_FROM_SAMPLES,
        )?;
        if self.k == 1 {
            // Solved exactly: the point with the smallest distance sum.
            return super::KMedoids::fasterpam(1).seed(self.seed).fit(d);
        }
        let maxneighbor = self.effective_maxneighbor(n);
        let mut rng = SeededRng::seed_from_u64(self.seed);
        let mut best: Option<KMedoidsModel<LossOf<D>>> = None;
        let mut deltas = Vec::with_capacity(self.k);
        for local in 0..self.numlocal {
            let start = random_medoids(n, self.k, &mut rng);
            let mut medoids = start.clone();
            let mut st = State::new(d, &mut medoids);
            let (mut fails, mut swaps, mut tries) = (0usize, 0usize, 0usize);
            // FastCLARANS: non-medoids not yet tried since the last swap.
            let mut untried: Vec<usize> = Vec::new();
            while fails < maxneighbor && n > self.k {
                tries += 1;
                let (i, x, delta) = match self.variant {
                    ClaransVariant::Clarans => {
                        let i = rng.random_range(0..self.k);
                        let x = loop {
                            let x = rng.random_range(0..n);
                            if !st.is_medoid[x] {
                                break x;
                            }
                        };
                        (i, x, st.pam_delta(i, x))
                    }
                    ClaransVariant::FastClarans => {
                        if untried.is_empty() {
                            if fails > 0 {
                                break; // every non-medoid tried without improvement
                            }
                            untried = (0..n).filter(|&x| !st.is_medoid[x]).collect();
                        }
                        let x = untried.swap_remove(rng.random_range(0..untried.len()));
                        let (i, delta) = st.best_for(x, &mut deltas);
                        (i, x, delta)
                    }
                };
                if LossOf::<D>::improves(delta, st.loss) {
                    st.swap(i, x);
                    swaps += 1;
                    fails = 0;
                    untried.clear();
                } else {
                    fails += 1;
                }
            }
            let out = st.outcome(tries, swaps, true);
            if let Some(p) = &self.progress {
                p.report(&Progress {
                    iteration: local + 1,
                    max_iter: Some(self.numlocal),
                    objective: out.loss.to_f64(),
                })?;
            }
            if best.as_ref().is_none_or(|b| out.loss < b.loss) {
                best = Some(KMedoidsModel {
                    medoids,
                    initial_medoids: start,
                    labels: out.assignment.iter().map(|&a| a as i64).collect(),
                    loss: out.loss,
                    n_iter: out.n_iter,
                    n_swaps: out.n_swaps,
                    converged: true,
                });
            }
        }
        Ok(best.expect("numlocal >= 1"))
    }
}
