//! Single-linkage clustering as an estimator (scipy's `linkage(method="single")` cut by
//! `fcluster`), the same fit call as every other method; the work is
//! [`super::hdbscan::single_linkage`]'s: the minimum spanning tree over the neighbour index,
//! O(n) memory.

use super::hdbscan::{single_linkage, Cut};
use super::hierarchy::Merge;
use super::index::IndexKind;
use crate::error::Result;
use crate::estimator::{Clustering, Fit};
use crate::metric::MetricKind;
use crate::scalar::Scalar;
use ndarray::ArrayView2;

/// Single linkage cut into `n_clusters` clusters, or at a distance.
///
/// ```
/// use clustr::prelude::*;
/// use clustr::density::SingleLinkage;
/// let x = ndarray::array![[0.0], [0.5], [5.0], [5.2], [20.0]];
/// let model = SingleLinkage::new(3).fit(&x.view())?;
/// assert_eq!(model.labels(), &[0, 0, 1, 1, 2]);
/// let by_distance = SingleLinkage::new(1).distance_threshold(1.0).fit(&x.view())?;
/// assert_eq!(by_distance.n_clusters(), 3);
/// # Ok::<(), clustr::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct SingleLinkage {
    /// Number of clusters of the cut (scipy's `fcluster(…, k, "maxclust")`); ignored when
    /// [`SingleLinkage::distance_threshold`] is set.
    pub n_clusters: usize,
    /// Cut the tree at this distance instead: points closer than it (through a chain) share a
    /// cluster (`fcluster(…, t, "distance")`).
    pub distance_threshold: Option<f64>,
    /// Distance (default Euclidean).
    pub metric: MetricKind,
    /// How the spanning tree is found (see [`single_linkage`]).
    pub index: IndexKind,
}

impl SingleLinkage {
    /// Single linkage cut into `n_clusters` clusters, Euclidean.
    pub fn new(n_clusters: usize) -> Self {
        SingleLinkage {
            n_clusters,
            distance_threshold: None,
            metric: MetricKind::Euclidean,
            index: IndexKind::Auto,
        }
    }
    /// Cut at a distance instead of a number of clusters.
    pub fn distance_threshold(mut self, t: f64) -> Self {
        self.distance_threshold = Some(t);
        self
    }
    /// The distance.
    pub fn metric(mut self, metric: MetricKind) -> Self {
        self.metric = metric;
        self
    }
    /// The neighbour index: a tree (Borůvka's algorithm), brute force (Prim's over every
    /// pair) or auto.
    pub fn index(mut self, index: IndexKind) -> Self {
        self.index = index;
        self
    }
}

/// A fitted single linkage.
#[derive(Clone, Debug, PartialEq)]
pub struct SingleLinkageModel {
    /// Cluster of each point.
    pub labels: Vec<i64>,
    /// The whole tree (scipy's layout: n − 1 merges, ids below n are points).
    pub tree: Vec<Merge>,
}

impl Clustering for SingleLinkageModel {
    fn labels(&self) -> &[i64] {
        &self.labels
    }
    fn loss(&self) -> Option<f64> {
        None
    }
    fn n_iter(&self) -> usize {
        0
    }
    fn converged(&self) -> bool {
        true
    }
}

impl<F: Scalar> Fit<ArrayView2<'_, F>> for SingleLinkage {
    type Model = SingleLinkageModel;

    fn fit(&self, x: &ArrayView2<'_, F>) -> Result<SingleLinkageModel> {
        let cut = match self.distance_threshold {
            Some(t) => Cut::Distance(t),
            None => Cut::Clusters(self.n_clusters),
        };
        let (labels, tree) = single_linkage(x.view(), self.metric, self.index, cut)?;
        Ok(SingleLinkageModel { labels, tree })
    }
}
