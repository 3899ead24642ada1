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
//! Not yet here (issue #4): Elkan and Hamerly variants, mini-batch k-means, Gaussian mixtures
//! and PPP.

use crate::backend::{Backend, CpuBackend};
use crate::data::validate::{check_k, check_points};
use crate::error::{Error, Result};
use crate::estimator::{Clustering, Fit, Predict, Progress, ProgressFn};
use crate::metric::MetricKind;
use crate::scalar::Scalar;
use ndarray::{s, Array2, ArrayView2, Axis};
use rand::rngs::StdRng;
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

/// Parameters of k-means (the estimator).
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
    /// Progress callback (after each iteration).
    pub progress: Option<ProgressFn>,
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
            progress: None,
        }
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
    /// Progress callback.
    pub fn progress(mut self, p: ProgressFn) -> Self {
        self.progress = Some(p);
        self
    }

    fn validate<F: Scalar>(&self, x: ArrayView2<F>) -> Result<()> {
        check_points(x)?;
        check_k(self.k, x.nrows())?;
        if self.n_init == Some(0) {
            return Err(Error::param("n_init", 0, "at least one run"));
        }
        if !(self.tol >= 0.0 && self.tol.is_finite()) {
            return Err(Error::param("tol", self.tol, "must be finite and non-negative"));
        }
        if let KMeansInit::Given(c) = &self.init {
            if c.dim() != (self.k, x.ncols()) {
                return Err(Error::ShapeMismatch {
                    what: "initial centres".into(),
                    expected: format!("{} x {}", self.k, x.ncols()),
                    got: format!("{} x {}", c.nrows(), c.ncols()),
                });
            }
            crate::data::validate::check_finite(c.view(), "initial centres")?;
        }
        Ok(())
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
}

impl<F: Scalar> Clustering for KMeansModel<F> {
    fn labels(&self) -> &[i64] {
        &self.labels
    }
    fn n_clusters(&self) -> usize {
        self.centers.nrows()
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
        let mut out = Array2::<F>::zeros((x.nrows(), self.centers.nrows()));
        CpuBackend::default().pairwise(x, self.centers.view(), &MetricKind::Euclidean, out.view_mut())?;
        Ok(out)
    }
}

impl<F: Scalar> Predict<ArrayView2<'_, F>> for KMeansModel<F> {
    type Output = Vec<i64>;
    /// The nearest centre of each point.
    fn predict(&self, x: &ArrayView2<'_, F>) -> Result<Vec<i64>> {
        check_points(*x)?;
        let near = CpuBackend::default().nearest(*x, self.centers.view(), &MetricKind::SqEuclidean)?;
        Ok(near.into_iter().map(|n| n.index as i64).collect())
    }
}

impl<F: Scalar> Fit<ArrayView2<'_, F>> for KMeans {
    type Model = KMeansModel<F>;

    fn fit(&self, x: &ArrayView2<'_, F>) -> Result<KMeansModel<F>> {
        self.validate(*x)?;
        // Rows must be contiguous slices; copies only a non-standard layout.
        let x = crate::data::standard_layout(*x);
        let x = x.view();
        let tol = self.tol * mean_variance(x);
        let n_init = self
            .n_init
            .unwrap_or(if self.init == KMeansInit::Random { 10 } else { 1 });
        let mut rng = StdRng::seed_from_u64(self.seed);
        let mut best: Option<KMeansModel<F>> = None;
        for _ in 0..n_init {
            let centers = match &self.init {
                KMeansInit::Given(c) => c.mapv(F::from_f64_lossy),
                KMeansInit::Random => {
                    let idx = rand::seq::index::sample(&mut rng, x.nrows(), self.k).into_vec();
                    x.select(Axis(0), &idx)
                }
                KMeansInit::KMeansPlusPlus => kmeans_plus_plus(x, self.k, &mut rng)?,
            };
            let run = lloyd(x, centers, self.max_iter, tol, self.progress.as_ref())?;
            if best.as_ref().is_none_or(|b| run.inertia < b.inertia) {
                best = Some(run);
            }
        }
        Ok(best.expect("n_init >= 1"))
    }
}

/// Mean over features of the population variance, as scikit-learn's `_tolerance`.
fn mean_variance<F: Scalar>(x: ArrayView2<F>) -> f64 {
    let n = x.nrows() as f64;
    let total: f64 = x
        .axis_iter(Axis(1))
        .map(|c| {
            let mean = c.iter().map(|v| v.to_f64_exact()).sum::<f64>() / n;
            c.iter().map(|v| (v.to_f64_exact() - mean).powi(2)).sum::<f64>() / n
        })
        .sum();
    total / x.ncols() as f64
}

/// Rows per chunk of the centre update (fixed, so sums do not depend on the thread count).
const CHUNK: usize = 4096;

/// Per-cluster coordinate sums and counts of `labels`, in f64.
fn cluster_sums<F: Scalar>(x: ArrayView2<F>, labels: &[usize], k: usize) -> (Array2<f64>, Vec<usize>) {
    let d = x.ncols();
    let parts: Vec<(Vec<f64>, Vec<usize>)> = x
        .axis_chunks_iter(Axis(0), CHUNK)
        .into_par_iter()
        .zip(labels.par_chunks(CHUNK))
        .map(|(xb, lb)| {
            let mut sums = vec![0.0f64; k * d];
            let mut counts = vec![0usize; k];
            for (row, &l) in xb.rows().into_iter().zip(lb) {
                counts[l] += 1;
                let row = row.to_slice().expect("standard layout");
                sums[l * d..(l + 1) * d]
                    .iter_mut()
                    .zip(row)
                    .for_each(|(s, v)| *s += v.to_f64_exact());
            }
            (sums, counts)
        })
        .collect();
    let mut sums = vec![0.0f64; k * d];
    let mut counts = vec![0usize; k];
    for (s, c) in parts {
        sums.iter_mut().zip(s).for_each(|(a, b)| *a += b);
        counts.iter_mut().zip(c).for_each(|(a, b)| *a += b);
    }
    (Array2::from_shape_vec((k, d), sums).expect("k x d"), counts)
}

/// One Lloyd run from `centers`.
fn lloyd<F: Scalar>(
    x: ArrayView2<F>,
    mut centers: Array2<F>,
    max_iter: usize,
    tol: f64,
    progress: Option<&ProgressFn>,
) -> Result<KMeansModel<F>> {
    let backend = CpuBackend::default();
    let k = centers.nrows();
    let assign = |c: &Array2<F>| -> Result<(Vec<usize>, f64)> {
        let near = backend.nearest(x, c.view(), &MetricKind::SqEuclidean)?;
        let inertia = near
            .par_chunks(CHUNK)
            .map(|ch| ch.iter().map(|n| n.distance.to_f64_exact()).sum::<f64>())
            .collect::<Vec<_>>()
            .iter()
            .sum();
        Ok((near.into_iter().map(|n| n.index).collect(), inertia))
    };
    let mut labels_old: Option<Vec<usize>> = None;
    let (mut n_iter, mut converged) = (0, false);
    while n_iter < max_iter {
        n_iter += 1;
        let (labels, inertia) = assign(&centers)?;
        let (mut sums, mut counts) = cluster_sums(x, &labels, k);
        relocate_empty_clusters(x, &centers, &labels, &mut sums, &mut counts);
        let mut shift = 0.0;
        for (j, &c) in counts.iter().enumerate() {
            for f in 0..x.ncols() {
                let new = if c > 0 {
                    sums[[j, f]] / c as f64
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
                objective: Some(inertia),
            });
        }
        if labels_old.as_ref() == Some(&labels) {
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
    let (labels, inertia) = assign(&centers)?;
    Ok(KMeansModel {
        centers,
        labels: labels.into_iter().map(|l| l as i64).collect(),
        inertia,
        n_iter,
        converged,
    })
}

/// scikit-learn's `_relocate_empty_clusters_dense`: each empty cluster takes the point
/// farthest from its assigned centre (farthest first); the point leaves its old cluster.
fn relocate_empty_clusters<F: Scalar>(
    x: ArrayView2<F>,
    centers: &Array2<F>,
    labels: &[usize],
    sums: &mut Array2<f64>,
    counts: &mut [usize],
) {
    let empty: Vec<usize> = (0..counts.len()).filter(|&j| counts[j] == 0).collect();
    if empty.is_empty() {
        return;
    }
    let dist: Vec<f64> = (0..x.nrows())
        .into_par_iter()
        .map(|i| {
            x.row(i)
                .iter()
                .zip(centers.row(labels[i]))
                .map(|(a, c)| (a.to_f64_exact() - c.to_f64_exact()).powi(2))
                .sum()
        })
        .collect();
    let mut order: Vec<usize> = (0..x.nrows()).collect();
    order.sort_by(|&a, &b| dist[b].total_cmp(&dist[a]).then(a.cmp(&b)));
    for (&new_cluster, &far) in empty.iter().zip(&order) {
        let old = labels[far];
        for f in 0..x.ncols() {
            let v = x[[far, f]].to_f64_exact();
            sums[[old, f]] -= v;
            sums[[new_cluster, f]] = v;
        }
        counts[new_cluster] = 1;
        counts[old] -= 1;
    }
}

/// Greedy k-means++: the first centre uniformly, then at each step 2 + ⌊ln k⌋ candidates drawn
/// with probability ∝ D² and the one giving the lowest potential kept.
pub fn kmeans_plus_plus<F: Scalar>(x: ArrayView2<F>, k: usize, rng: &mut StdRng) -> Result<Array2<F>> {
    let n = x.nrows();
    let trials = 2 + (k as f64).ln().floor() as usize;
    let backend = CpuBackend::default();
    let mut centers = Array2::<F>::zeros((k, x.ncols()));
    let first = rng.random_range(0..n);
    centers.row_mut(0).assign(&x.row(first));
    let mut closest = Array2::<F>::zeros((1, n));
    backend.pairwise(
        x.slice(s![first..first + 1, ..]),
        x,
        &MetricKind::SqEuclidean,
        closest.view_mut(),
    )?;
    let mut closest: Vec<f64> = closest.iter().map(|v| v.to_f64_exact()).collect();
    let mut potential: f64 = closest.iter().sum();
    for c in 1..k {
        let mut cumsum = Vec::with_capacity(n);
        let mut acc = 0.0;
        for &v in &closest {
            acc += v;
            cumsum.push(acc);
        }
        let candidates: Vec<usize> = (0..trials)
            .map(|_| {
                let r = rng.random::<f64>() * potential;
                cumsum.partition_point(|&v| v <= r).min(n - 1)
            })
            .collect();
        let cand_rows = x.select(Axis(0), &candidates);
        let mut dist = Array2::<F>::zeros((trials, n));
        backend.pairwise(cand_rows.view(), x, &MetricKind::SqEuclidean, dist.view_mut())?;
        let (best, best_pot) = (0..trials)
            .map(|t| {
                (
                    t,
                    closest
                        .iter()
                        .zip(dist.row(t))
                        .map(|(&a, b)| a.min(b.to_f64_exact()))
                        .sum::<f64>(),
                )
            })
            .fold((0, f64::INFINITY), |b, (t, p)| if p < b.1 { (t, p) } else { b });
        potential = best_pot;
        closest
            .iter_mut()
            .zip(dist.row(best))
            .for_each(|(a, b)| *a = a.min(b.to_f64_exact()));
        centers.row_mut(c).assign(&x.row(candidates[best]));
    }
    Ok(centers)
}
