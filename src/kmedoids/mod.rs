//! k-medoids: PAM, FastPAM1, FastPAM2, FasterPAM and the alternating heuristic, after
//! Schubert & Rousseeuw, "Faster k-Medoids Clustering" (SISAP 2019, arXiv:1810.05691) and
//! "Fast and eager k-medoids clustering" (Information Systems 101, 2021, arXiv:2008.05171),
//! with the initialisations BUILD, LAB, random, k-means++ (D¹ sampling), first-k and given.
//!
//! Written from the papers and the reference notes (docs/reference-notes.md §1); no code of
//! the GPL/AGPL reference implementations is used. Behaviour shared with them:
//! - every argmin uses strict `<`: the lowest candidate index wins, then the lowest medoid
//!   position; each medoid is forced onto itself in the initial assignment;
//! - a swap is taken when it lowers the loss by more than 10⁻¹² of it (floats) or at all
//!   (integers), so floating-point noise cannot make the search cycle;
//! - `n_iter` counts passes over the candidates, the last one finding no improving swap;
//! - k = 1 is solved exactly (the point with the smallest distance sum).
//!
//! Where we differ: with fewer than k distinct points, every initialisation (BUILD, LAB,
//! k-means++, random, first-k) and so every method — PAM to CLARANS alike — completes the k
//! medoids with points that duplicate chosen ones (BUILD, LAB and k-means++ take the
//! lowest-index point not yet a medoid), where the `kmedoids` crate's BUILD returns fewer
//! medoids. A model always has k medoids (distinct indices) and k non-empty clusters, since
//! each medoid is assigned to itself; the loss is that of the distinct points' clustering.

mod alternating;
mod clara;
mod clarans;
mod init;
pub(crate) mod swap;
mod weighted;

pub use clara::{Clara, ClaraVariant};
pub use clarans::{Clarans, ClaransVariant};
pub use init::{build, first_k, kmeans_plus_plus, lab, lab_sample_size, random_medoids};

use crate::backend::{AnyBackend, Backend};
use crate::data::validate::check_k;
use crate::data::CsrView;
use crate::dissim::{DissimValue, Dissimilarity};
use crate::error::{Error, Result};
use crate::estimator::shared_setters;
use crate::estimator::{Check, Checked};
use crate::estimator::{Clustering, Fit, ProgressFn};
use crate::memory::{check_fit, product, MemoryEstimate};
use crate::metric::{Metric, MetricKind};
use crate::scalar::Scalar;
use ndarray::ArrayView2;
use num_traits::{ToPrimitive, Zero};
use rayon::prelude::*;
use std::fmt::Debug;
use std::ops::{Add, AddAssign, Neg, Sub};

/// The loss accumulator of a dissimilarity type: f64 for floats, i64 for integers.
pub trait Loss:
    Copy
    + PartialOrd
    + Zero
    + Add<Output = Self>
    + Sub<Output = Self>
    + AddAssign
    + Neg<Output = Self>
    + ToPrimitive
    + num_traits::NumCast
    + Send
    + Sync
    + Debug
    + 'static
{
    /// Whether sample weights must be whole numbers: an integer loss is exact, and stays so
    /// only with whole weights.
    const WHOLE_WEIGHTS: bool;
    /// Whether a loss change `delta` improves a total loss `total`: below −10⁻¹²·|total| for
    /// floats, below zero for integers.
    fn improves(delta: Self, total: Self) -> bool;
    /// `w·v`, for a sample weight `w` (whole where [`Loss::WHOLE_WEIGHTS`]).
    fn weighted(v: Self, w: f64) -> Self;
}

impl Loss for f64 {
    const WHOLE_WEIGHTS: bool = false;
    fn improves(delta: f64, total: f64) -> bool {
        delta < -1e-12 * total.abs()
    }
    fn weighted(v: f64, w: f64) -> f64 {
        w * v
    }
}

impl Loss for i64 {
    const WHOLE_WEIGHTS: bool = true;
    fn improves(delta: i64, _: i64) -> bool {
        delta < 0
    }
    fn weighted(v: i64, w: f64) -> i64 {
        v.saturating_mul(w as i64)
    }
}

/// A dissimilarity value with its wide signed loss type.
pub trait KValue: DissimValue {
    /// The accumulator.
    type Loss: Loss;
    /// The value in the accumulator's type.
    fn widen(self) -> Self::Loss;
}

macro_rules! kvalue {
    ($loss:ty: $($t:ty),*) => {$(
        impl KValue for $t {
            type Loss = $loss;
            #[inline]
            fn widen(self) -> $loss {
                self as $loss
            }
        }
    )*};
}
kvalue!(f64: f32, f64);
kvalue!(i64: i8, i16, i32, i64, u8, u16, u32);

/// How the initial medoids are chosen.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Init {
    /// PAM's BUILD: greedy, O(n²k). The default of PAM and FastPAM1.
    Build,
    /// Linear approximative BUILD: BUILD on a fresh sample of 10 + ⌈√n⌉ points per medoid.
    Lab,
    /// k distinct points uniformly at random. The default of FastPAM2 and FasterPAM, as the
    /// `kmedoids` package.
    #[default]
    Random,
    /// k-means++ for medoids: each next medoid drawn with probability proportional to the
    /// dissimilarity to the nearest medoid so far (D¹).
    KMeansPlusPlus,
    /// The first k points.
    First,
    /// These medoids (k distinct indices).
    Given(Vec<usize>),
}

impl std::str::FromStr for Init {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "build" => Ok(Init::Build),
            "lab" => Ok(Init::Lab),
            "random" => Ok(Init::Random),
            "kmeanspp" | "k-means++" | "kmeans++" => Ok(Init::KMeansPlusPlus),
            "first" => Ok(Init::First),
            _ => Err(Error::param(
                "init",
                s,
                "expected build, lab, random, kmeanspp or first",
            )),
        }
    }
}

/// The swap (or refinement) algorithm.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    /// The original SWAP: all k(n−k) swaps evaluated at O(n) each, the best one applied.
    Pam,
    /// FastPAM1: the same swaps as PAM, all k medoids evaluated at once per candidate, O(k)
    /// faster.
    FastPam1,
    /// FastPAM2: the best candidate per medoid, up to k swaps per pass; a further swap is
    /// applied when its recomputed gain is at least `(1 − fasttol)` times the best one.
    FastPam2 {
        /// Tolerance for the additional swaps (default 1: any improving one).
        fasttol: f64,
    },
    /// FasterPAM: eager — a swap is applied as soon as a candidate improves the loss.
    FasterPam {
        /// Visit the candidates in a seeded random order instead of 0..n.
        shuffle: bool,
    },
    /// The alternating (k-means-style) heuristic: assign to the nearest medoid, then move
    /// each medoid to the point of its cluster with the smallest distance sum.
    Alternating,
}

impl Method {
    fn name(&self) -> &'static str {
        match self {
            Method::Pam => "pam",
            Method::FastPam1 => "fastpam1",
            Method::FastPam2 { .. } => "fastpam2",
            Method::FasterPam { .. } => "fasterpam",
            Method::Alternating => "alternating",
        }
    }
}

/// Parameters of a k-medoids run (the estimator).
///
/// ```
/// use clustr::kmedoids::{Init, KMedoids};
/// use clustr::{Fit, DenseMatrix, Clustering};
/// let d = DenseMatrix::new(ndarray::array![[0.0, 1.0, 9.0], [1.0, 0.0, 8.0], [9.0, 8.0, 0.0]]).unwrap();
/// let model = KMedoids::fasterpam(2).init(Init::Build).fit(&d).unwrap();
/// assert_eq!(model.labels(), &[0, 0, 1]);
/// ```
#[derive(Clone, Debug)]
pub struct KMedoids {
    /// Number of medoids.
    pub k: usize,
    /// The swap algorithm.
    pub method: Method,
    /// The initialisation.
    pub init: Init,
    /// Maximum passes of the swap phase (default 100, as the `kmedoids` package; 0 = keep the
    /// initial medoids).
    pub max_iter: usize,
    /// Seed of every random choice.
    pub seed: u64,
    /// Progress callback (after each pass).
    pub progress: Option<ProgressFn>,
    /// Where the candidate scans of FastPAM1, FastPAM2 and FasterPAM run (default: the CPU;
    /// with CUDA the dissimilarity must be a dense f32/f64 matrix; PAM and the alternating
    /// heuristic stay on the CPU).
    pub backend: AnyBackend,
    /// The weight of each object (`None`: all 1): the loss is Σₒ wₒ·d(o, medoid of o), an
    /// integer weight counting as that many copies of the object. Non-negative, not all 0;
    /// whole numbers with an integer dissimilarity. A weighted fit scans on the CPU.
    pub sample_weight: Option<Vec<f64>>,
    /// The metric of points fitted with [`Fit`] on an `ArrayView2` (default Euclidean); a
    /// dissimilarity given to `fit` carries its own.
    pub metric: MetricKind,
    /// A method parameter set for a method it does not belong to (`fasttol` or `shuffle`),
    /// which the fit refuses rather than ignores.
    misplaced: Option<(&'static str, String)>,
}

impl KMedoids {
    fn with(k: usize, method: Method, init: Init) -> Self {
        KMedoids {
            k,
            method,
            init,
            max_iter: 100,
            seed: 0,
            progress: None,
            backend: AnyBackend::default(),
            sample_weight: None,
            metric: MetricKind::Euclidean,
            misplaced: None,
        }
    }

    /// The metric of points fitted with [`Fit`] on an `ArrayView2` (default Euclidean).
    pub fn metric(mut self, metric: MetricKind) -> Self {
        self.metric = metric;
        self
    }
    /// PAM: BUILD + the original SWAP.
    pub fn pam(k: usize) -> Self {
        Self::with(k, Method::Pam, Init::Build)
    }
    /// FastPAM1: BUILD + the O(k)-faster SWAP with PAM's result.
    pub fn fastpam1(k: usize) -> Self {
        Self::with(k, Method::FastPam1, Init::Build)
    }
    /// FastPAM2 (ELKI's FastPAM) with `fasttol` = 1 and random initial medoids.
    pub fn fastpam2(k: usize) -> Self {
        Self::with(k, Method::FastPam2 { fasttol: 1.0 }, Init::Random)
    }
    /// FasterPAM with random initial medoids and candidates in natural order.
    pub fn fasterpam(k: usize) -> Self {
        Self::with(k, Method::FasterPam { shuffle: false }, Init::Random)
    }
    /// The alternating heuristic, from random medoids.
    pub fn alternating(k: usize) -> Self {
        Self::with(k, Method::Alternating, Init::Random)
    }
    /// Sets the initialisation.
    pub fn init(mut self, init: Init) -> Self {
        self.init = init;
        self
    }
    /// Sets the maximum number of passes.
    pub fn max_iter(mut self, m: usize) -> Self {
        self.max_iter = m;
        self
    }
    /// FastPAM2's tolerance; the fit of another method refuses it.
    pub fn fasttol(mut self, t: f64) -> Self {
        match &mut self.method {
            Method::FastPam2 { fasttol } => *fasttol = t,
            _ => self.misplaced = Some(("fasttol", t.to_string())),
        }
        self
    }
    /// FasterPAM: visit candidates in a seeded random order; the fit of another method
    /// refuses it.
    pub fn shuffle(mut self, s: bool) -> Self {
        match &mut self.method {
            Method::FasterPam { shuffle } => *shuffle = s,
            _ => self.misplaced = Some(("shuffle", s.to_string())),
        }
        self
    }
    /// The weight of each object (see [`KMedoids::sample_weight`](struct.KMedoids.html#structfield.sample_weight)).
    pub fn sample_weight(mut self, w: Vec<f64>) -> Self {
        self.sample_weight = Some(w);
        self
    }

    /// The method's name as on the command line.
    pub fn name(&self) -> &'static str {
        self.method.name()
    }
}

/// The parameters against `n` objects: checked once per fit; the initialisation and the
/// search take the [`Checked`] form.
impl Check<usize> for KMedoids {
    fn check(&self, n: usize) -> Result<()> {
        if let Some((name, value)) = &self.misplaced {
            let owner = if *name == "fasttol" {
                "fastpam2"
            } else {
                "fasterpam"
            };
            return Err(Error::param(
                name,
                value,
                format!("applies to {owner} only, not {}", self.method.name()),
            ));
        }
        if n == 0 {
            return Err(Error::EmptyInput {
                what: "dissimilarity has 0 objects".into(),
            });
        }
        if n > u32::MAX as usize {
            return Err(Error::param("n", n, "at most 2^32 - 1 objects"));
        }
        check_k(self.k, n)?;
        if let Method::FastPam2 { fasttol } = self.method {
            if !(0.0..=1.0).contains(&fasttol) {
                return Err(Error::param("fasttol", fasttol, "must be in [0, 1]"));
            }
        }
        if let Init::Given(m) = &self.init {
            check_medoids(m, self.k, n)?;
        }
        Ok(())
    }
}

impl KMedoids {
    /// The initial medoids for this run.
    pub fn initial_medoids<D>(&self, d: &D) -> Result<Vec<usize>>
    where
        D: Dissimilarity,
        D::Value: KValue,
    {
        Self::initial(self.checked(d.len())?, d)
    }

    fn initial<D>(this: Checked<'_, Self>, d: &D) -> Result<Vec<usize>>
    where
        D: Dissimilarity,
        D::Value: KValue,
    {
        let mut rng = <crate::rng::SeededRng as rand::SeedableRng>::seed_from_u64(this.seed);
        match &this.init {
            Init::Build => build(d, this.k),
            Init::Lab => lab(d, this.k, &mut rng),
            Init::Random => Ok(random_medoids(d.len(), this.k, &mut rng)),
            Init::KMeansPlusPlus => kmeans_plus_plus(d, this.k, &mut rng),
            Init::First => Ok(first_k(this.k)),
            Init::Given(m) => Ok(m.clone()),
        }
    }
}

shared_setters!(KMedoids { seed, progress, backend("Here it runs the candidate scans.") });

/// Checks user-given medoids: k of them, distinct, in range.
pub fn check_medoids(m: &[usize], k: usize, n: usize) -> Result<()> {
    if m.len() != k {
        return Err(Error::ShapeMismatch {
            what: "number of given medoids".into(),
            expected: k.to_string(),
            got: m.len().to_string(),
        });
    }
    if let Some(&bad) = m.iter().find(|&&i| i >= n) {
        return Err(Error::param(
            "medoids",
            bad,
            format!("index out of range for n = {n}"),
        ));
    }
    let mut sorted = m.to_vec();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::param("medoids", w[0], "given twice"));
    }
    Ok(())
}

/// A fitted k-medoids model.
#[derive(Clone, Debug, PartialEq)]
pub struct KMedoidsModel<L> {
    /// Medoid indices (row numbers of the input), in medoid position order.
    pub medoids: Vec<usize>,
    /// Initial medoids the swap phase started from.
    pub initial_medoids: Vec<usize>,
    /// Position (in `medoids`) of each point's nearest medoid.
    pub labels: Vec<i64>,
    /// Sum of dissimilarities to the nearest medoid, exact in the loss type.
    pub loss: L,
    /// Passes of the swap phase.
    pub n_iter: usize,
    /// Swaps applied.
    pub n_swaps: usize,
    /// Whether a pass found no improving swap before `max_iter`.
    pub converged: bool,
}

impl<L: Loss> Clustering for KMedoidsModel<L> {
    fn labels(&self) -> &[i64] {
        &self.labels
    }
    fn loss(&self) -> Option<f64> {
        self.loss.to_f64()
    }
    fn n_iter(&self) -> usize {
        self.n_iter
    }
    fn converged(&self) -> bool {
        self.converged
    }
}

impl MemoryEstimate for KMedoids {
    /// Per point the nearest and second-nearest medoid with their dissimilarities (and the
    /// labels), per thread the k removal-loss deltas; the dissimilarity is the caller's.
    fn memory_estimate(&self, n: usize, _d: usize, elem: usize) -> u64 {
        product(&[n, 40 + 2 * elem]).saturating_add(product(&[self.k, 16, rayon::current_num_threads() + 1]))
    }
}

impl<D> Fit<D> for KMedoids
where
    D: Dissimilarity,
    D::Value: KValue,
{
    type Model = KMedoidsModel<<D::Value as KValue>::Loss>;

    fn fit(&self, d: &D) -> Result<Self::Model> {
        Self::fit_with(self.checked(d.len())?, d, None)
    }
}

/// Points are fitted as every estimator fits them: `KMedoids::fasterpam(k).fit(&x)`, under
/// [`KMedoids::metric`] (see [`KMedoids::fit_points`] for where the distances are computed).
impl<F: Scalar + KValue<Loss = f64>> Fit<ArrayView2<'_, F>> for KMedoids {
    type Model = KMedoidsModel<f64>;

    fn fit(&self, x: &ArrayView2<'_, F>) -> Result<Self::Model> {
        self.fit_points(x.view(), &self.metric)
    }
}

/// Sparse rows under [`KMedoids::metric`] (Euclidean, squared Euclidean, cosine or
/// Manhattan): the full matrix of their distances ([`crate::DenseMatrix::from_sparse_rows`],
/// n × n, checked against the memory limit first), then the fit.
impl<F: Scalar + KValue<Loss = f64>> Fit<CsrView<'_, F>> for KMedoids {
    type Model = KMedoidsModel<f64>;

    fn fit(&self, x: &CsrView<'_, F>) -> Result<Self::Model> {
        let this = self.checked(x.nrows())?;
        if let Some(p) = &self.progress {
            p.phase("distances");
        }
        Self::fit_with(
            this,
            &crate::DenseMatrix::from_sparse_rows(*x, self.metric)?,
            None,
        )
    }
}

/// Candidate scans on a device for [`KMedoids::fit_with`].
type Gains<'g, V> = Option<crate::backend::device::BoxedGains<'g, V>>;

impl KMedoids {
    /// Fits points under `metric`. On a CUDA backend, FastPAM1, FastPAM2 and FasterPAM with a
    /// metric of basic operations (squared Euclidean, Euclidean, Manhattan, Chebyshev,
    /// cosine) keep no n × n matrix on the host: the device computes the dissimilarities (and
    /// keeps the matrix when it fits in its memory), and the host's caches compute theirs
    /// with the device's arithmetic, to the bit. Otherwise the full matrix is computed on the
    /// backend ([`crate::DenseMatrix::from_points`]) and fitted.
    pub fn fit_points<F, M>(&self, x: ArrayView2<F>, metric: &M) -> Result<KMedoidsModel<f64>>
    where
        F: Scalar + KValue<Loss = f64>,
        M: Metric,
    {
        crate::data::validate::check_points(x)?;
        metric.check_dim(x.ncols())?;
        crate::data::validate::check_metric_magnitude(x, metric)?;
        let this = self.checked(x.nrows())?;
        if let Some(p) = &self.progress {
            p.phase("distances");
        }
        let scans = !matches!(self.method, Method::Pam | Method::Alternating);
        if scans && self.sample_weight.is_none() {
            let x = crate::data::standard_layout(x);
            let on_device = self.backend.points_swap_gains(x.view(), metric, self.k)?;
            if let Some(on_device) = on_device {
                return Self::fit_with(this, &on_device.exact, Some(on_device.gains));
            }
        }
        Self::fit_with(
            this,
            &crate::DenseMatrix::from_points(x, metric, &self.backend)?,
            None,
        )
    }

    /// Fits `d`, the candidate scans on `gains` when given, else on the backend; with sample
    /// weights on the weighted dissimilarity, on the CPU.
    fn fit_with<'g, D>(
        this: Checked<'_, Self>,
        d: &'g D,
        gains: Gains<'g, D::Value>,
    ) -> Result<KMedoidsModel<<D::Value as KValue>::Loss>>
    where
        D: Dissimilarity,
        D::Value: KValue,
    {
        match &this.sample_weight {
            Some(w) => {
                weighted::fit_weighted(d, w, |wd| Self::search(this, wd, None, &AnyBackend::default()))
            }
            None => Self::search(this, d, gains, &this.backend),
        }
    }

    /// The initialisation and the swap phase on `d`.
    fn search<'g, D>(
        this: Checked<'_, Self>,
        d: &'g D,
        gains: Gains<'g, D::Value>,
        backend: &AnyBackend,
    ) -> Result<KMedoidsModel<<D::Value as KValue>::Loss>>
    where
        D: Dissimilarity,
        D::Value: KValue,
    {
        check_fit(
            &*this,
            this.name(),
            d.len(),
            0,
            size_of::<D::Value>(),
            crate::error::hints::MEDOIDS_FROM_SAMPLES,
        )?;
        let initial = Self::initial(this, d)?;
        let mut medoids = initial.clone();
        let mut rng = <crate::rng::SeededRng as rand::SeedableRng>::seed_from_u64(this.seed ^ 0x5eed_5a17);
        let out = match (this.method, gains) {
            (Method::Alternating, _) => {
                alternating::run(d, &mut medoids, this.max_iter, this.progress.as_ref())?
            }
            (m, Some(gains)) => swap::run_with(
                d,
                &mut medoids,
                m,
                this.max_iter,
                &mut rng,
                this.progress.as_ref(),
                gains,
            )?,
            (m, _) => swap::run(
                d,
                &mut medoids,
                m,
                this.max_iter,
                &mut rng,
                this.progress.as_ref(),
                backend,
            )?,
        };
        Ok(KMedoidsModel {
            medoids,
            initial_medoids: initial,
            labels: out.assignment.iter().map(|&a| a as i64).collect(),
            loss: out.loss,
            n_iter: out.n_iter,
            n_swaps: out.n_swaps,
            converged: out.converged,
        })
    }
}

/// The smaller of two (loss, index) pairs, the lower index on equal loss: an argmin that is
/// the same whatever order a parallel reduction combines in.
pub(crate) fn lowest<L: PartialOrd>(a: (L, usize), b: (L, usize)) -> (L, usize) {
    match b.0.partial_cmp(&a.0) {
        Some(std::cmp::Ordering::Less) => b,
        Some(std::cmp::Ordering::Equal) if b.1 < a.1 => b,
        _ => a,
    }
}

/// What a swap or refinement phase returns.
pub(crate) struct Outcome<L> {
    pub loss: L,
    pub assignment: Vec<usize>,
    pub n_iter: usize,
    pub n_swaps: usize,
    pub converged: bool,
}

/// The total dissimilarity of every point to its nearest medoid, and that medoid's position
/// (lowest position on ties) — the loss definition, O(n·k)
/// dissimilarities, O(n) memory. Parallel over fixed chunks summed in order, so the result
/// does not depend on the thread count. `medoids` must be non-empty and in range (see
/// [`check_medoids`]).
pub fn total_deviation<D>(d: &D, medoids: &[usize]) -> (<D::Value as KValue>::Loss, Vec<usize>)
where
    D: Dissimilarity,
    D::Value: KValue,
{
    assert!(!medoids.is_empty(), "total_deviation needs at least one medoid");
    let own = |o: usize| medoids.iter().position(|&m| m == o);
    nearest_medoids(d.len(), medoids.len(), own, |o, i| d.get(medoids[i], o))
}

/// [`total_deviation`] of objects `0..n` with `dist(o, i)` the dissimilarity of object `o` to
/// medoid `i` of `k`. An object that is a medoid (`own(o)` its position) is assigned to
/// itself at dissimilarity 0, even where a duplicate medoid comes earlier.
pub(crate) fn nearest_medoids<V: KValue>(
    n: usize,
    k: usize,
    own: impl Fn(usize) -> Option<usize> + Sync,
    dist: impl Fn(usize, usize) -> V + Sync,
) -> (V::Loss, Vec<usize>) {
    const CHUNK: usize = 4096;
    let parts: Vec<(V::Loss, Vec<usize>)> = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let mut loss = V::Loss::zero();
            let labels = (c * CHUNK..((c + 1) * CHUNK).min(n))
                .map(|o| {
                    if let Some(i) = own(o) {
                        return i;
                    }
                    let (d, i) = (0..k).map(|i| (dist(o, i), i)).reduce(lowest).expect("k >= 1");
                    loss += d.widen();
                    i
                })
                .collect();
            (loss, labels)
        })
        .collect();
    let mut total = V::Loss::zero();
    let mut labels = Vec::with_capacity(n);
    for (l, part) in parts {
        total += l;
        labels.extend(part);
    }
    (total, labels)
}

impl<L: Loss> KMedoidsModel<L> {
    /// Silhouette of the result from the dissimilarity it was fitted on (O(n²)).
    pub fn silhouette<D: Dissimilarity>(&self, d: &D) -> Result<f64> {
        crate::eval::silhouette_score(d, &self.labels)
    }

    /// Medoid silhouette of the result, 1 − mean(d₁/d₂) (O(n·k)).
    pub fn medoid_silhouette<D: Dissimilarity>(&self, d: &D) -> Result<f64> {
        Ok(crate::eval::medoid_silhouette(d, &self.medoids)?.0)
    }

    /// A predictor assigning new points to the nearest medoid, for a model fitted on
    /// `points` (the rows the medoid indices refer to) with `metric`.
    pub fn predictor<F: Scalar, M: Metric + Clone>(
        &self,
        points: ArrayView2<F>,
        metric: &M,
    ) -> Result<MedoidPredictor<F, M>> {
        crate::data::validate::check_points(points)?;
        if let Some(&m) = self.medoids.iter().find(|&&m| m >= points.nrows()) {
            return Err(Error::param(
                "medoid",
                m,
                format!("index out of range for {} points", points.nrows()),
            ));
        }
        metric.check_dim(points.ncols())?;
        Ok(MedoidPredictor {
            medoids: points.select(ndarray::Axis(0), &self.medoids),
            metric: metric.clone(),
        })
    }
}

/// Assigns points to the nearest of a fitted model's medoids (lowest position on ties).
#[derive(Clone, Debug)]
pub struct MedoidPredictor<F, M> {
    /// The medoids' coordinates, one row per medoid position.
    pub medoids: ndarray::Array2<F>,
    /// The metric of the fit.
    pub metric: M,
}

impl<F: Scalar, M: Metric> MedoidPredictor<F, M> {
    /// New points as the fit takes them, within range of the medoids.
    fn check(&self, x: ArrayView2<F>) -> Result<()> {
        let arithmetic = crate::data::validate::Arithmetic::of_metric(self.metric.kind());
        let what = format!("the {} distance", self.metric.name());
        crate::data::validate::check_new_points(x, self.medoids.view(), arithmetic, &what)
    }

    /// The dissimilarity of each point to each medoid (n × k).
    pub fn transform(&self, x: ArrayView2<F>) -> Result<ndarray::Array2<F>> {
        self.check(x)?;
        let mut out = ndarray::Array2::<F>::zeros((x.nrows(), self.medoids.nrows()));
        crate::backend::CpuBackend::default().pairwise(
            x,
            self.medoids.view(),
            &self.metric,
            out.view_mut(),
        )?;
        Ok(out)
    }
}

/// The stored form of a k-medoids predictor: the medoids' coordinates and the metric.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct StoredKMedoids {
    medoids: crate::model_file::StoredArray,
    metric: String,
}

impl<F: Scalar> crate::model_file::SaveLoad for MedoidPredictor<F, crate::metric::MetricKind> {
    const ALGORITHM: &'static str = "kmedoids";
    type Stored = StoredKMedoids;
    fn to_stored(&self) -> StoredKMedoids {
        StoredKMedoids {
            medoids: crate::model_file::StoredArray::from_array(&self.medoids),
            metric: self.metric.to_string(),
        }
    }
    fn from_stored(s: StoredKMedoids) -> Result<Self> {
        let medoids = s.medoids.to_matrix::<F>("medoids")?;
        crate::data::validate::check_points(medoids.view())?;
        let metric: crate::metric::MetricKind = s.metric.parse()?;
        metric.check_dim(medoids.ncols())?;
        crate::data::validate::check_metric_magnitude(medoids.view(), &metric)?;
        Ok(MedoidPredictor { medoids, metric })
    }
}

impl<F: Scalar, M: Metric> crate::estimator::Predict<ArrayView2<'_, F>> for MedoidPredictor<F, M> {
    type Output = Vec<i64>;
    fn predict(&self, x: &ArrayView2<'_, F>) -> Result<Vec<i64>> {
        self.check(*x)?;
        let near = crate::backend::CpuBackend::default().nearest(*x, self.medoids.view(), &self.metric)?;
        Ok(near.into_iter().map(|n| n.index as i64).collect())
    }
}
