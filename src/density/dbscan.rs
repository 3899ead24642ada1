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

use crate::data::validate::{check_points, check_sample_weight};
use crate::density::index::{IndexKind, NeighborIndex};
use crate::error::{Error, Result};
use crate::estimator::{Clustering, Fit};
use crate::memory::{check_fit, product, MemoryEstimate};
use crate::metric::{Metric, MetricKind};
use crate::scalar::Scalar;
use crate::NOISE;
use ndarray::ArrayView2;
use rayon::prelude::*;

/// Core points whose neighbourhoods are queried together during the expansion.
const BLOCK: usize = 256;

/// Parameters of DBSCAN (the estimator).
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
            super::DENSITY_HINT,
        )?;
        let x = crate::data::standard_layout(*x);
        let index = NeighborIndex::build(x.view(), self.metric, self.index)?;
        let n = x.nrows();
        let weight = |j: usize| self.sample_weight.as_ref().map_or(1.0, |w| w[j]);
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
                index.for_each_within(index.point(i), self.eps, |j, _| {
                    total += weight(j);
                    !(can_stop && total >= self.min_samples)
                });
                total >= self.min_samples
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
                        index.for_each_within(index.point(p), self.eps, |j, d| {
                            v.push((j, d));
                            true
                        });
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
        Ok(DbscanModel {
            labels,
            core_sample_indices: (0..n).filter(|&i| core[i]).collect(),
            n_clusters: cluster as usize,
            index: index.kind(),
        })
    }
}
