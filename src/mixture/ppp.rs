//! PPP, "Probabilistic Partitive Partitioning" (Sultan 2020, arXiv 2003.04372): k-means
//! partitions validated by a Gaussian mixture, to choose k and return repeatable clusters.
//!
//! **This is our reading of the paper's abstract, not a reproduction**: the body of the paper
//! was not available. The abstract says that k-means ("combinatorial") partitions the data and
//! a GMM ("probabilistic") validates the partitions, giving compact clusters insensitive to
//! initial conditions, no k given in advance, and a "most separable" set. We implement:
//!
//! 1. For each k in `k_min..=k_max`, k-means (greedy k-means++, one start) from `n_runs` seeds.
//!    Partitions are compared up to relabelling (canonical labels: clusters numbered by their
//!    first point).
//! 2. **Stability**: the mean adjusted Rand index over all pairs of runs.
//! 3. **Validation**: each distinct partition initialises a GMM (one-hot responsibilities);
//!    **agreement** is the ARI between the partition and the GMM's MAP labels, averaged over
//!    the runs. The GMM of the best partition (lowest inertia) gives the BIC.
//! 4. **Choice of k**: the highest `agreement × stability`; every k within `tie_tolerance`
//!    of the best counts as tied, and the tie goes to the lowest BIC.
//! 5. **Consensus**: the chosen k's partition of lowest inertia over all its runs, in
//!    canonical labels: any seed whose runs reach the same best optimum returns the same
//!    array (the most frequent partition was our first choice, but where k-means has many
//!    optima, as on wine, the mode moves with the seed while the best one does not). Its GMM's posteriors mark the **most separable set**: the points whose posterior
//!    for their own cluster is at least `separable_threshold` (0.95).
//!
//! Every step is a separate function over a per-k table ([`PppRow`]), so another reading of
//! the rule changes one place.

use crate::data::validate::{check_k, check_magnitude, check_points};
use crate::error::{Error, Result};
use crate::estimator::shared_setters;
use crate::estimator::{Clustering, Fit, Progress, ProgressFn};
use crate::eval::adjusted_rand_score;
use crate::kmeans::KMeans;
use crate::memory::{check_fit, product, MemoryEstimate};
use crate::mixture::gmm::{CovarianceType, GaussianMixture, GaussianMixtureModel, GmmInit};
use crate::rng::SeededRng;
use ndarray::{Array2, ArrayView2};
use rand::{Rng, SeedableRng};
use std::collections::HashMap;

/// Parameters of PPP (the estimator).
///
/// ```
/// use clustr::prelude::*;
/// let x = clustr::datasets::load("iris")?.data;
/// let model = clustr::mixture::Ppp::new(2, 4).n_runs(5).fit(&x.view())?;
/// assert!((2..=4).contains(&model.k));
/// # Ok::<(), clustr::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Ppp {
    /// Smallest k tried (default 2).
    pub k_min: usize,
    /// Largest k tried (default 10).
    pub k_max: usize,
    /// k-means runs per k, each from its own seed (default 20).
    pub n_runs: usize,
    /// Covariance type of the validating GMM (default full).
    pub covariance_type: CovarianceType,
    /// Scores within this of the best count as tied; ties go to the lowest BIC (default 0.05).
    pub tie_tolerance: f64,
    /// Posterior a point needs for its own cluster to be in the most separable set (0.95).
    pub separable_threshold: f64,
    /// `reg_covar` of the GMM (default 1e-6).
    pub reg_covar: f64,
    /// Seed of the runs' seeds.
    pub seed: u64,
    /// Progress callback (after each k).
    pub progress: Option<ProgressFn>,
}

impl Default for Ppp {
    fn default() -> Self {
        Ppp {
            k_min: 2,
            k_max: 10,
            n_runs: 20,
            covariance_type: CovarianceType::Full,
            tie_tolerance: 0.05,
            separable_threshold: 0.95,
            reg_covar: 1e-6,
            seed: 0,
            progress: None,
        }
    }
}

impl Ppp {
    /// PPP over `k_min..=k_max` with the defaults.
    pub fn new(k_min: usize, k_max: usize) -> Self {
        Ppp {
            k_min,
            k_max,
            ..Ppp::default()
        }
    }
    /// k-means runs per k.
    pub fn n_runs(mut self, r: usize) -> Self {
        self.n_runs = r;
        self
    }
    /// Covariance type of the validating GMM.
    pub fn covariance_type(mut self, c: CovarianceType) -> Self {
        self.covariance_type = c;
        self
    }
    /// Tolerance of the score ties.
    pub fn tie_tolerance(mut self, t: f64) -> Self {
        self.tie_tolerance = t;
        self
    }
    /// Posterior threshold of the most separable set.
    pub fn separable_threshold(mut self, t: f64) -> Self {
        self.separable_threshold = t;
        self
    }
    /// Regularisation of the GMM covariances.
    pub fn reg_covar(mut self, r: f64) -> Self {
        self.reg_covar = r;
        self
    }

    fn validate(&self, x: ArrayView2<f64>) -> Result<()> {
        check_points(x)?;
        if self.k_min == 0 || self.k_min > self.k_max {
            return Err(Error::param(
                "k range",
                format!("{}..={}", self.k_min, self.k_max),
                "need 1 <= k_min <= k_max",
            ));
        }
        check_k(self.k_max, x.nrows())?;
        if self.n_runs < 2 {
            return Err(Error::param(
                "n_runs",
                self.n_runs,
                "at least 2 runs to measure stability",
            ));
        }
        if !(0.0..=1.0).contains(&self.separable_threshold) {
            return Err(Error::param(
                "separable_threshold",
                self.separable_threshold,
                "must be in [0, 1]",
            ));
        }
        if !(self.tie_tolerance >= 0.0 && self.tie_tolerance.is_finite()) {
            return Err(Error::param(
                "tie_tolerance",
                self.tie_tolerance,
                "must be finite and non-negative",
            ));
        }
        Ok(())
    }

    /// The GMM validating a partition: initialised from its one-hot responsibilities.
    fn validating_gmm(&self, x: ArrayView2<f64>, labels: &[i64], k: usize) -> Result<GaussianMixtureModel> {
        GaussianMixture::new(k)
            .covariance_type(self.covariance_type)
            .reg_covar(self.reg_covar)
            .init(GmmInit::from_labels(labels, k)?)
            .fit(&x)
    }

    /// Steps 1–3 for one k: the runs, their stability and their validation.
    fn evaluate_k(&self, x: ArrayView2<f64>, k: usize, seeds: &[u64]) -> Result<Candidate> {
        let mut runs = Vec::with_capacity(seeds.len());
        for &s in seeds {
            let m = KMeans::new(k).n_init(1).seed(s).fit(&x)?;
            runs.push((canonical(&m.labels), m.inertia));
        }
        let mut pairs = Vec::new();
        for i in 0..runs.len() {
            for j in i + 1..runs.len() {
                pairs.push(adjusted_rand_score(&runs[i].0, &runs[j].0)?);
            }
        }
        let stability = pairs.iter().sum::<f64>() / pairs.len() as f64;
        // Distinct partitions: how many runs found each, and its lowest inertia.
        let mut distinct: HashMap<&[i64], (usize, f64)> = HashMap::new();
        for (labels, inertia) in &runs {
            let e = distinct.entry(labels.as_slice()).or_insert((0, f64::INFINITY));
            e.0 += 1;
            e.1 = e.1.min(*inertia);
        }
        let mut distinct: Vec<(&[i64], usize, f64)> =
            distinct.into_iter().map(|(l, (c, i))| (l, c, i)).collect();
        // Lowest inertia first, then the most frequent, then the labels (a total order).
        distinct.sort_by(|a, b| a.2.total_cmp(&b.2).then(b.1.cmp(&a.1)).then(a.0.cmp(b.0)));
        let mut agreement = 0.0;
        let mut best_gmm = None;
        for (labels, count, _) in &distinct {
            let gmm = self.validating_gmm(x, labels, k)?;
            agreement += *count as f64 * adjusted_rand_score(labels, &gmm.labels)?;
            best_gmm.get_or_insert(gmm);
        }
        agreement /= runs.len() as f64;
        let (labels, best_count, inertia) = distinct[0];
        let gmm = best_gmm.expect("at least one partition");
        let bic = gmm.bic(x)?;
        Ok(Candidate {
            row: PppRow {
                k,
                stability,
                agreement,
                score: agreement * stability,
                bic,
                distinct_partitions: distinct.len(),
                best_fraction: best_count as f64 / runs.len() as f64,
                inertia,
            },
            labels: labels.to_vec(),
            gmm,
        })
    }
}

shared_setters!(Ppp { seed, progress });

/// One row of PPP's per-k table.
#[derive(Clone, Debug, PartialEq)]
pub struct PppRow {
    /// Number of clusters.
    pub k: usize,
    /// Mean pairwise ARI between the k-means runs.
    pub stability: f64,
    /// Mean ARI between each run's partition and its GMM's MAP labels.
    pub agreement: f64,
    /// `agreement × stability`.
    pub score: f64,
    /// BIC of the GMM fitted from the best partition.
    pub bic: f64,
    /// Distinct partitions among the runs.
    pub distinct_partitions: usize,
    /// Fraction of runs that found the best partition.
    pub best_fraction: f64,
    /// k-means inertia of the best partition (the lowest of the runs).
    pub inertia: f64,
}

/// A k's runs reduced to what the choice needs.
struct Candidate {
    row: PppRow,
    labels: Vec<i64>,
    gmm: GaussianMixtureModel,
}

/// Step 4: the best score; ties within `tol` go to the lowest BIC (then the lowest k).
pub fn choose_k(table: &[PppRow], tol: f64) -> usize {
    let best = table.iter().map(|r| r.score).fold(f64::NEG_INFINITY, f64::max);
    table
        .iter()
        .filter(|r| r.score >= best - tol)
        .min_by(|a, b| a.bic.total_cmp(&b.bic).then(a.k.cmp(&b.k)))
        .map(|r| r.k)
        .expect("non-empty table")
}

/// Labels renumbered in order of first appearance (so equal partitions have equal arrays).
pub fn canonical(labels: &[i64]) -> Vec<i64> {
    let mut map: HashMap<i64, i64> = HashMap::new();
    labels
        .iter()
        .map(|&l| {
            let next = map.len() as i64;
            *map.entry(l).or_insert(next)
        })
        .collect()
}

/// The result of PPP.
#[derive(Clone, Debug)]
pub struct PppModel {
    /// The chosen number of clusters.
    pub k: usize,
    /// The consensus partition (canonical labels).
    pub labels: Vec<i64>,
    /// Whether each point is in the most separable set.
    pub separable: Vec<bool>,
    /// Posterior of each point for its own cluster under the validating GMM.
    pub confidence: Vec<f64>,
    /// The per-k table, in increasing k.
    pub table: Vec<PppRow>,
    /// The GMM fitted from the consensus partition.
    pub gmm: GaussianMixtureModel,
}

impl PppModel {
    /// The chosen k's row of the table.
    pub fn chosen(&self) -> &PppRow {
        self.table
            .iter()
            .find(|r| r.k == self.k)
            .expect("chosen k is in the table")
    }
}

impl Clustering for PppModel {
    fn labels(&self) -> &[i64] {
        &self.labels
    }
    /// The k-means inertia of the consensus partition.
    fn loss(&self) -> Option<f64> {
        Some(self.chosen().inertia)
    }
    /// The number of k values tried.
    fn n_iter(&self) -> usize {
        self.table.len()
    }
    /// Whether the validating GMM converged.
    fn converged(&self) -> bool {
        self.gmm.converged
    }
}

impl MemoryEstimate for Ppp {
    /// The labels of every run and every k kept for the table, plus the largest k-means and
    /// Gaussian mixture fitted (at `k_max`, its k-means initialisation included), and the f64
    /// copy of f32 data.
    fn memory_estimate(&self, n: usize, d: usize, elem: usize) -> u64 {
        let ks = self.k_max.saturating_sub(self.k_min) + 1;
        let gmm = GaussianMixture::new(self.k_max).covariance_type(self.covariance_type);
        product(&[ks + self.n_runs, n, 16])
            .saturating_add(KMeans::new(self.k_max).memory_estimate(n, d, 8))
            .saturating_add(gmm.memory_estimate(n, d, elem))
    }
}

impl Fit<ArrayView2<'_, f64>> for Ppp {
    type Model = PppModel;

    fn fit(&self, x: &ArrayView2<'_, f64>) -> Result<PppModel> {
        self.validate(*x)?;
        let gmm = crate::mixture::GaussianMixture::new(1).reg_covar(self.reg_covar);
        check_magnitude(*x, gmm.arithmetic(), "PPP (k-means and Gaussian mixtures)")?;
        check_fit(self, "PPP", x.nrows(), x.ncols(), 8, crate::error::hints::PPP)?;
        let x = crate::data::standard_layout(*x);
        let x = x.view();
        let mut rng = SeededRng::seed_from_u64(self.seed);
        let mut candidates = Vec::new();
        for k in self.k_min..=self.k_max {
            let seeds: Vec<u64> = (0..self.n_runs).map(|_| rng.random()).collect();
            candidates.push(self.evaluate_k(x, k, &seeds)?);
            if let Some(p) = &self.progress {
                p.report(&Progress {
                    iteration: k - self.k_min + 1,
                    max_iter: Some(self.k_max - self.k_min + 1),
                    objective: Some(candidates.last().expect("pushed").row.score),
                })?;
            }
        }
        let table: Vec<PppRow> = candidates.iter().map(|c| c.row.clone()).collect();
        let k = choose_k(&table, self.tie_tolerance);
        let chosen = candidates.into_iter().find(|c| c.row.k == k).expect("chosen k");
        let proba = chosen.gmm.predict_proba(x)?;
        let confidence: Vec<f64> = chosen
            .labels
            .iter()
            .enumerate()
            .map(|(i, &l)| proba[[i, l as usize]])
            .collect();
        Ok(PppModel {
            k,
            separable: confidence
                .iter()
                .map(|&p| p >= self.separable_threshold)
                .collect(),
            confidence,
            labels: chosen.labels,
            table,
            gmm: chosen.gmm,
        })
    }
}

impl Fit<ArrayView2<'_, f32>> for Ppp {
    type Model = PppModel;
    /// Fits in f64 on a converted copy of the data.
    fn fit(&self, x: &ArrayView2<'_, f32>) -> Result<PppModel> {
        if self.k_max <= x.nrows() {
            // (a bad k range is reported by the f64 fit's validation)
            check_fit(self, "PPP", x.nrows(), x.ncols(), 4, crate::error::hints::PPP)?;
        }
        let x64: Array2<f64> = x.mapv(f64::from);
        self.fit(&x64.view())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_labels_number_by_first_appearance() {
        assert_eq!(canonical(&[5, 5, 2, 7, 2, 5]), vec![0, 0, 1, 2, 1, 0]);
        assert_eq!(canonical(&[1, 0, 1]), canonical(&[0, 1, 0]));
    }

    #[test]
    fn ties_go_to_the_lowest_bic() {
        let row = |k, score, bic| PppRow {
            k,
            stability: score,
            agreement: 1.0,
            score,
            bic,
            distinct_partitions: 1,
            best_fraction: 1.0,
            inertia: 0.0,
        };
        let table = [row(2, 1.0, 500.0), row(3, 0.995, 300.0), row(4, 0.9, 100.0)];
        assert_eq!(choose_k(&table, 0.01), 3);
        assert_eq!(choose_k(&table, 0.0), 2);
        assert_eq!(choose_k(&table, 0.2), 4);
    }
}
