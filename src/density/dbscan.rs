//! DBSCAN (Ester, Kriegel, Sander & Xu 1996) with scikit-learn's semantics
//! (`sklearn.cluster.DBSCAN`, 1.x): a point's neighbourhood is every point at distance
//! ≤ eps, itself included; a point is core when its neighbourhood holds at least
//! `min_samples` points (or that much sample weight); clusters are grown from the core points
//! in index order, so cluster ids follow their lowest-index core point and a border point
//! takes the first cluster that reaches it; the rest is noise (−1).
//!
//! Deliberate difference: scikit-learn computes and stores every neighbourhood first (memory
//! Σ|N(p)|, O(n²) in the worst case). Here the core flags come from counting queries that
//! stop at `min_samples`, and the expansion queries the neighbourhoods of one block of core
//! points at a time (in parallel), so memory is O(n) plus one block of neighbourhoods. The
//! labels do not depend on the order in which a cluster's points are expanded, hence they are
//! scikit-learn's exactly, for any thread count.

use crate::data::validate::{check_points, check_sample_weight, times_power_of_two, ScaledWeights};
use crate::data::CsrView;
use crate::density::index::{IndexKind, NeighborIndex};
use crate::density::sparse_hoods::{Neighbourhoods, SparseGraph, SparseRows};
use crate::error::{Error, Result};
use crate::estimator::{Clustering, Fit};
use crate::memory::{check_fit, product, MemoryEstimate};
use crate::metric::{Metric, MetricKind};
use crate::model_file::{SaveLoad, StoredArray};
use crate::scalar::Scalar;
use crate::NOISE;
use ndarray::ArrayView2;
use rayon::prelude::*;

/// Core points whose neighbourhoods are queried together during the expansion.
const BLOCK: usize = 256;

/// Parameters of DBSCAN (the estimator).
///
/// ```
/// use clustr::prelude::*;
/// let x = clustr::datasets::load("iris")?.data;
/// let model = clustr::density::Dbscan::new(0.5).min_samples(5).fit(&x.view())?;
/// assert!(model.n_clusters >= 2 && model.n_noise() > 0);
/// # Ok::<(), clustr::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Dbscan {
    /// Neighbourhood radius, inclusive (for haversine: kilometres).
    pub eps: f64,
    /// Points (or weight) a neighbourhood needs for its centre to be core, the point itself
    /// included (default 5).
    pub min_samples: f64,
    /// Distance (default Euclidean).
    pub metric: MetricKind,
    /// Neighbour index (default auto).
    pub index: IndexKind,
    /// Optional weight of each point (scikit-learn's `sample_weight`).
    pub sample_weight: Option<Vec<f64>>,
}

impl Dbscan {
    /// DBSCAN with radius `eps` and scikit-learn's other defaults (`min_samples = 5`,
    /// Euclidean).
    pub fn new(eps: f64) -> Self {
        Dbscan {
            eps,
            min_samples: 5.0,
            metric: MetricKind::Euclidean,
            index: IndexKind::Auto,
            sample_weight: None,
        }
    }
    /// Points a core neighbourhood needs.
    pub fn min_samples(mut self, m: usize) -> Self {
        self.min_samples = m as f64;
        self
    }
    /// Distance.
    pub fn metric(mut self, m: MetricKind) -> Self {
        self.metric = m;
        self
    }
    /// Neighbour index.
    pub fn index(mut self, i: IndexKind) -> Self {
        self.index = i;
        self
    }
    /// Weight of each point; a neighbourhood is core when its weight reaches `min_samples`.
    pub fn sample_weight(mut self, w: Vec<f64>) -> Self {
        self.sample_weight = Some(w);
        self
    }

    fn validate(&self, n: usize) -> Result<()> {
        if !(self.eps > 0.0 && self.eps.is_finite()) {
            return Err(Error::param("eps", self.eps, "must be positive and finite"));
        }
        if self.min_samples.is_nan() || self.min_samples < 1.0 {
            return Err(Error::param(
                "min_samples",
                self.min_samples,
                "must be at least 1",
            ));
        }
        if let Some(w) = &self.sample_weight {
            check_sample_weight(w, n, true)?;
        }
        Ok(())
    }
}

/// A fitted DBSCAN.
#[derive(Clone, Debug, PartialEq)]
pub struct DbscanModel {
    /// Cluster of each point, −1 for noise.
    pub labels: Vec<i64>,
    /// Indices of the core points, increasing (scikit-learn's `core_sample_indices_`).
    pub core_sample_indices: Vec<usize>,
    /// Number of clusters.
    pub n_clusters: usize,
    /// The index that answered the queries.
    pub index: IndexKind,
}

impl Clustering for DbscanModel {
    fn labels(&self) -> &[i64] {
        &self.labels
    }
    fn loss(&self) -> Option<f64> {
        None
    }
    fn n_iter(&self) -> usize {
        1
    }
    fn converged(&self) -> bool {
        true
    }
}

impl DbscanModel {
    /// The predictor of this fit on `points` (the rows it was fitted on) with `params`: its
    /// core points with their clusters, eps and the metric.
    pub fn predictor<F: Scalar>(&self, points: ArrayView2<F>, params: &Dbscan) -> Result<CorePointPredictor> {
        check_points(points)?;
        crate::data::validate::check_same_len(
            "labels of the fitted points",
            self.labels.len(),
            points.nrows(),
        )?;
        let cores: Vec<usize> = self.core_sample_indices.clone();
        Ok(CorePointPredictor {
            core_points: points.select(ndarray::Axis(0), &cores).mapv(|v| v.to_f64_exact()),
            core_labels: cores.iter().map(|&i| self.labels[i]).collect(),
            eps: params.eps,
            metric: params.metric,
        })
    }
}

/// Assigns new points as DBSCAN's fit would border points: a point joins the cluster of its
/// nearest core point if that lies within eps (inclusive; the lowest core index on ties), and
/// is noise (−1) otherwise. (scikit-learn's DBSCAN has no predict; this is the rule of the
/// hdbscan package's `approximate_predict` for DBSCAN's cut.)
#[derive(Clone, Debug, PartialEq)]
pub struct CorePointPredictor {
    /// The core points, one row each.
    pub core_points: ndarray::Array2<f64>,
    /// The cluster of each core point.
    pub core_labels: Vec<i64>,
    /// Neighbourhood radius (km for haversine).
    pub eps: f64,
    /// Distance.
    pub metric: MetricKind,
}

impl crate::estimator::Predict<ArrayView2<'_, f64>> for CorePointPredictor {
    type Output = Vec<i64>;
    fn predict(&self, x: &ArrayView2<'_, f64>) -> Result<Vec<i64>> {
        let arithmetic = crate::data::validate::Arithmetic::of_metric(Some(self.metric));
        crate::data::validate::check_new_points(*x, self.core_points.view(), arithmetic, "DBSCAN")?;
        if self.core_points.nrows() == 0 {
            return Ok(vec![NOISE; x.nrows()]);
        }
        let x = crate::data::standard_layout(*x);
        let index = NeighborIndex::build(self.core_points.view(), self.metric, IndexKind::Auto)?;
        Ok(x.rows()
            .into_iter()
            .collect::<Vec<_>>()
            .par_iter()
            .map(|q| {
                let q = q.to_slice().expect("standard layout");
                match index.nearest(q, 1).first() {
                    Some(&(j, d)) if d <= self.eps => self.core_labels[j],
                    _ => NOISE,
                }
            })
            .collect())
    }
}

/// The stored form of a DBSCAN predictor.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct StoredDbscan {
    core_points: StoredArray,
    core_labels: StoredArray,
    eps: f64,
    metric: String,
}

impl SaveLoad for CorePointPredictor {
    const ALGORITHM: &'static str = "dbscan";
    type Stored = StoredDbscan;
    fn to_stored(&self) -> StoredDbscan {
        StoredDbscan {
            core_points: StoredArray::from_array(&self.core_points),
            core_labels: StoredArray::from_ints(&self.core_labels),
            eps: self.eps,
            metric: self.metric.to_string(),
        }
    }
    fn from_stored(s: StoredDbscan) -> Result<Self> {
        let core_points: ndarray::Array2<f64> = s.core_points.to_matrix("core points")?;
        let core_labels = s.core_labels.to_ints("core labels")?;
        crate::data::validate::check_same_len("core labels", core_points.nrows(), core_labels.len())?;
        // A core point is in a cluster, numbered from 0 (fewer clusters than core points).
        let n_core = core_labels.len() as i64;
        if let Some((i, l)) = core_labels
            .iter()
            .enumerate()
            .find(|(_, &l)| !(0..n_core).contains(&l))
        {
            return Err(Error::Unsupported(format!(
                "model file: core labels: core point {i} has label {l}, not a cluster in 0..{n_core}"
            )));
        }
        let metric: MetricKind = s.metric.parse()?;
        metric.check_dim(core_points.ncols())?;
        crate::data::validate::check_magnitude(
            core_points.view(),
            crate::data::validate::Arithmetic::of_metric(Some(metric)),
            "DBSCAN",
        )?;
        if !(s.eps >= 0.0 && s.eps.is_finite()) {
            return Err(Error::param("eps", s.eps, "must be finite and non-negative"));
        }
        Ok(CorePointPredictor {
            core_points,
            core_labels,
            eps: s.eps,
            metric,
        })
    }
}

impl MemoryEstimate for Dbscan {
    /// The neighbour index (with an f64 copy of the points for the tree metrics) and the
    /// per-point labels, core flags and expansion queue.
    fn memory_estimate(&self, n: usize, d: usize, _elem: usize) -> u64 {
        product(&[n, d * 16 + 96])
    }
}

impl<F: Scalar> Fit<ArrayView2<'_, F>> for Dbscan {
    type Model = DbscanModel;

    fn fit(&self, x: &ArrayView2<'_, F>) -> Result<DbscanModel> {
        check_points(*x)?;
        self.metric.check_dim(x.ncols())?;
        self.validate(x.nrows())?;
        check_fit(
            self,
            "DBSCAN",
            x.nrows(),
            x.ncols(),
            size_of::<F>(),
            crate::error::hints::DENSITY,
        )?;
        let x = crate::data::standard_layout(*x);
        let index = NeighborIndex::build(x.view(), self.metric, self.index)?;
        Ok(self.cluster(&index, index.kind()))
    }
}

impl<F: Scalar> Fit<CsrView<'_, F>> for Dbscan {
    type Model = DbscanModel;

    /// DBSCAN on sparse rows (Euclidean, squared Euclidean or cosine; the neighbourhoods by
    /// brute force over the rows sharing a term, see `sparse_hoods.rs`).
    fn fit(&self, x: &CsrView<'_, F>) -> Result<DbscanModel> {
        self.validate(x.nrows())?;
        let fit_bytes = self.memory_estimate(x.nrows(), 0, size_of::<F>());
        let hoods = SparseRows::checked(*x, self.metric, fit_bytes, "DBSCAN")?;
        Ok(self.cluster(&hoods, IndexKind::Brute))
    }
}

impl Dbscan {
    /// DBSCAN on a precomputed sparse neighbourhood graph (scikit-learn's
    /// `metric="precomputed"` with a sparse matrix): each row's stored entries are its
    /// neighbours at those distances, and the point itself.
    pub fn fit_graph<F: Scalar>(&self, graph: CsrView<'_, F>) -> Result<DbscanModel> {
        self.validate(graph.nrows())?;
        let hoods = SparseGraph::new(graph)?;
        Ok(self.cluster(&hoods, IndexKind::Brute))
    }

    /// Core flags, then the clusters grown from the core points in index order.
    fn cluster<N: Neighbourhoods>(&self, index: &N, kind: IndexKind) -> DbscanModel {
        let n = index.len();
        // Weights in their overflow-safe form (weights of ±f64::MAX sum without overflow);
        // a neighbourhood's total is scaled back only to be compared with min_samples.
        let scaled = ScaledWeights::of(self.sample_weight.as_deref());
        let weight = |j: usize| scaled.as_ref().map_or(1.0, |w| w.weights[j]);
        let exponent = scaled.as_ref().map_or(0, |w| w.exponent);
        let reaches = |total: f64| times_power_of_two(total, exponent) >= self.min_samples;
        // Core flags: count each neighbourhood's weight, stopping once it reaches min_samples
        // (with negative weights the count must run to the end).
        let can_stop = self
            .sample_weight
            .as_ref()
            .is_none_or(|w| w.iter().all(|&v| v >= 0.0));
        let core: Vec<bool> = (0..n)
            .into_par_iter()
            .map(|i| {
                let mut total = 0.0;
                index.for_each_near(
                    i,
                    self.eps,
                    |_| false,
                    |j, _| {
                        total += weight(j);
                        !(can_stop && reaches(total))
                    },
                );
                reaches(total)
            })
            .collect();
        // Expansion from the core points in index order.
        const UNSET: i64 = i64::MIN;
        let mut labels = vec![UNSET; n];
        let mut cluster = 0i64;
        for seed in 0..n {
            if labels[seed] != UNSET || !core[seed] {
                continue;
            }
            labels[seed] = cluster;
            let mut frontier = vec![seed];
            while !frontier.is_empty() {
                let take = frontier.len().min(BLOCK);
                let block: Vec<usize> = frontier.drain(frontier.len() - take..).collect();
                let hoods: Vec<Vec<(usize, f64)>> = block
                    .par_iter()
                    .map(|&p| {
                        let mut v = Vec::new();
                        index.for_each_near(
                            p,
                            self.eps,
                            |_| false,
                            |j, d| {
                                v.push((j, d));
                                true
                            },
                        );
                        v
                    })
                    .collect();
                for hood in hoods {
                    for (j, _) in hood {
                        if labels[j] == UNSET {
                            labels[j] = cluster;
                            if core[j] {
                                frontier.push(j);
                            }
                        }
                    }
                }
            }
            cluster += 1;
        }
        labels
            .iter_mut()
            .filter(|l| **l == UNSET)
            .for_each(|l| *l = NOISE);
        DbscanModel {
            labels,
            core_sample_indices: (0..n).filter(|&i| core[i]).collect(),
            n_clusters: cluster as usize,
            index: kind,
        }
    }
}
