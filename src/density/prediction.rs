//! HDBSCAN on new points and soft clustering, with the `hdbscan` package's semantics
//! (McInnes, Healy & Astels, the package's `prediction` module; "Soft Clustering for HDBSCAN*"
//! in its documentation):
//!
//! - [`HdbscanPredictor::approximate_predict`]: a new point joins the condensed tree next to
//!   its nearest training point in mutual reachability (among its 2m nearest points, its own
//!   core distance the (m + 1)-th nearest's), at λ = 1 / that distance, in the cluster that
//!   was alive there; the label is that cluster's selected ancestor, the probability λ over
//!   the cluster's largest λ. The tree is not changed.
//! - [`HdbscanPredictor::membership_vectors`] and
//!   [`HdbscanPredictor::all_points_membership_vectors`]: a vector over the selected clusters
//!   per point, the product of a distance part (1 / the distance to each cluster's exemplars,
//!   the points of its leaves that persist longest) and an outlier part (a softmax over the
//!   λ at which the point's branch of the tree meets each cluster), normalised and scaled by
//!   the probability that the point is in some cluster.
//!
//! Kept from the package on purpose, so its numbers are ours: `m` is the package's
//! `min_samples`, which does not count the point itself (clustr's count minus one, at least
//! 1), and the training points' core distances for prediction are their m-th nearest, the
//! point itself included (the package's `PredictionData`, one neighbour fewer than its fit);
//! new points weigh the two parts as distance^½ · outlier² and round the outlier part's λ to
//! single precision, the training points as distance · outlier with the package's
//! `exp(−λ_max / height)` scores; the `+ 1e-8` guards are the package's. Where λ is infinite
//! (at least m identical points) and the package's formulas give NaN, the entry is 0: no NaN
//! is presented as a result.

use super::hierarchy::CondensedRow;
use super::index::{IndexKind, NeighborIndex};
use crate::data::validate::{check_new_points, check_points, check_same_len, Arithmetic};
use crate::error::{Error, Result};
use crate::metric::{Metric, MetricKind};
use crate::model_file::{SaveLoad, StoredArray};
use crate::NOISE;
use ndarray::{Array2, ArrayView2, ArrayViewMut2, Axis};
use rayon::prelude::*;

/// What prediction and soft clustering need from an HDBSCAN fit: the training points, the
/// condensed tree and the selected clusters (the `hdbscan` package's `PredictionData`).
#[derive(Clone, Debug)]
pub struct HdbscanPredictor {
    points: Array2<f64>,
    metric: MetricKind,
    min_samples: usize,
    condensed_tree: Vec<CondensedRow>,
    selected: Vec<usize>,
    /// The training points' core distances for prediction (m-th nearest, itself included).
    core_distances: Vec<f64>,
    /// Each point's row of the condensed tree: the cluster it leaves and its λ.
    point_parent: Vec<usize>,
    point_lambda: Vec<f64>,
    /// By cluster id − n: the parent cluster (the root's is itself) and the λ of its birth.
    cluster_parent: Vec<usize>,
    cluster_birth: Vec<f64>,
    /// By cluster id − n: the label of its selected ancestor (itself included), else −1,
    /// and that ancestor's largest λ.
    cluster_label: Vec<i64>,
    cluster_max_lambda: Vec<f64>,
    /// By cluster id − n: the largest λ of its own rows.
    leaf_max_lambda: Vec<f64>,
    /// Per selected cluster, its exemplars (training point indices) and their rows.
    exemplars: Vec<Vec<usize>>,
    exemplar_points: Vec<Array2<f64>>,
}

/// New points placed in a fitted tree ([`HdbscanPredictor::approximate_predict`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ApproximatePrediction {
    /// Each point's cluster (−1: noise).
    pub labels: Vec<i64>,
    /// Each point's membership strength in its cluster (0 for noise).
    pub probabilities: Vec<f64>,
    /// Each point's nearest training point in mutual reachability (−1 when the fit has no
    /// cluster).
    pub neighbors: Vec<i64>,
}

impl HdbscanPredictor {
    /// The predictor of a fit on `points` (f64, the rows the fit saw) under `metric`, whose
    /// condensed tree and selected clusters (increasing ids) are given. `min_samples` is
    /// clustr's count (the point itself included). The tree is checked, so a model file
    /// cannot make it panic.
    pub fn new(
        points: Array2<f64>,
        metric: MetricKind,
        min_samples: usize,
        condensed_tree: Vec<CondensedRow>,
        selected: Vec<usize>,
    ) -> Result<Self> {
        check_points(points.view())?;
        let points = if points.is_standard_layout() {
            points
        } else {
            points.as_standard_layout().into_owned()
        };
        metric.check_dim(points.ncols())?;
        let n = points.nrows();
        let n_clusters = check_tree(&condensed_tree, n)?;
        if let Some(w) = selected.windows(2).find(|w| w[0] >= w[1]) {
            return Err(Error::Unsupported(format!(
                "selected clusters: {} then {}, not increasing",
                w[0], w[1]
            )));
        }
        if let Some(&c) = selected.iter().find(|&&c| c < n || c >= n + n_clusters) {
            return Err(Error::Unsupported(format!(
                "selected cluster {c} is not a cluster of the tree ({n}..{})",
                n + n_clusters
            )));
        }
        // The package's m: min_samples without the point itself.
        let m = min_samples.saturating_sub(1).max(1);
        let root = n;
        let mut point_parent = vec![root; n];
        let mut point_lambda = vec![0.0; n];
        let mut cluster_parent: Vec<usize> = (root..root + n_clusters).collect();
        let mut cluster_birth = vec![0.0; n_clusters];
        let mut leaf_max_lambda = vec![0.0f64; n_clusters];
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n_clusters];
        for r in &condensed_tree {
            let l = &mut leaf_max_lambda[r.parent - root];
            *l = l.max(r.lambda);
            if r.child < n {
                point_parent[r.child] = r.parent;
                point_lambda[r.child] = r.lambda;
            } else {
                cluster_parent[r.child - root] = r.parent;
                cluster_birth[r.child - root] = r.lambda;
                children[r.parent - root].push(r.child);
            }
        }
        let below = |c: usize| {
            let mut out = vec![c];
            let mut i = 0;
            while i < out.len() {
                out.extend_from_slice(&children[out[i] - root]);
                i += 1;
            }
            out
        };
        let mut cluster_label = vec![NOISE; n_clusters];
        let mut cluster_max_lambda = vec![0.0; n_clusters];
        let mut exemplars = Vec::with_capacity(selected.len());
        for (label, &s) in selected.iter().enumerate() {
            let subtree = below(s);
            for &c in &subtree {
                cluster_label[c - root] = label as i64;
                cluster_max_lambda[c - root] = leaf_max_lambda[s - root];
            }
            let leaves: Vec<usize> = subtree
                .into_iter()
                .filter(|&c| children[c - root].is_empty())
                .collect();
            let mut own = Vec::new();
            for r in condensed_tree.iter().filter(|r| r.child < n) {
                if leaves.contains(&r.parent) && r.lambda == leaf_max_lambda[r.parent - root] {
                    own.push(r.child);
                }
            }
            exemplars.push(own);
        }
        let exemplar_points = exemplars.iter().map(|e| points.select(Axis(0), e)).collect();
        let index = NeighborIndex::build(points.view(), metric, IndexKind::Auto)?;
        let core_distances = (0..n)
            .into_par_iter()
            .map(|i| index.nearest(index.point(i), m).last().map_or(0.0, |c| c.1))
            .collect();
        Ok(HdbscanPredictor {
            points,
            metric,
            min_samples: m,
            condensed_tree,
            selected,
            core_distances,
            point_parent,
            point_lambda,
            cluster_parent,
            cluster_birth,
            cluster_label,
            cluster_max_lambda,
            leaf_max_lambda,
            exemplars,
            exemplar_points,
        })
    }

    /// Number of selected clusters (the membership vectors' length).
    pub fn n_clusters(&self) -> usize {
        self.selected.len()
    }

    /// The number of features.
    pub fn n_features(&self) -> usize {
        self.points.ncols()
    }

    /// Per selected cluster, its exemplars: the training points of its leaf clusters that
    /// leave them at their largest λ (the package's `exemplars_`, as indices).
    pub fn exemplars(&self) -> &[Vec<usize>] {
        &self.exemplars
    }

    fn root(&self) -> usize {
        self.points.nrows()
    }

    fn has_clusters(&self) -> bool {
        self.cluster_parent.len() > 1
    }

    /// The training point a new point `q` joins at (its nearest in mutual reachability among
    /// its 2m nearest) and the λ of that join.
    fn neighbor_and_lambda(&self, index: &NeighborIndex<'_, f64>, q: &[f64]) -> (usize, f64) {
        let m = self.min_samples;
        let near = index.nearest(q, 2 * m);
        let own_core = near[m.min(near.len() - 1)].1;
        let mut best = (near[0].0, f64::INFINITY);
        for &(j, d) in &near {
            let mr = self.core_distances[j].max(own_core).max(d);
            if mr < best.1 {
                best = (j, mr);
            }
        }
        let lambda = if best.1 > 0.0 { 1.0 / best.1 } else { f64::MAX };
        (best.0, lambda)
    }

    /// The λ at which the branch of `cluster` (holding a point at `lambda`) meets `selected`:
    /// the package's `merge_height` walk, the larger id stepping up until the two meet.
    fn merge_height(&self, cluster: usize, lambda: f64, selected: usize) -> f64 {
        let root = self.root();
        let (mut left, mut right) = (cluster, selected);
        let (mut took_left, mut took_right, mut last) = (false, false, left);
        while left != right {
            if left > right {
                took_left = true;
                last = left;
                left = self.cluster_parent[left - root];
            } else {
                took_right = true;
                last = right;
                right = self.cluster_parent[right - root];
            }
        }
        if took_left && took_right {
            self.cluster_birth[last - root]
        } else {
            lambda
        }
    }

    /// An index over each selected cluster's exemplars: the distance to the nearest is one
    /// query (the same distance as the minimum over all of them, see [`NeighborIndex`]).
    fn exemplar_indexes(&self) -> Result<Vec<NeighborIndex<'_, f64>>> {
        self.exemplar_points
            .iter()
            .map(|e| NeighborIndex::build(e.view(), self.metric, IndexKind::Auto))
            .collect()
    }

    /// Each selected cluster's share by distance: 1 / the distance to its nearest exemplar,
    /// normalised (a distance of 0: f64::MAX / k).
    fn distance_part(exemplars: &[NeighborIndex<'_, f64>], q: &[f64], out: &mut [f64]) {
        let k = out.len() as f64;
        for (o, ex) in out.iter_mut().zip(exemplars) {
            let d = ex.nearest(q, 1).first().map_or(f64::MAX, |c| c.1);
            *o = if d != 0.0 { 1.0 / d } else { f64::MAX / k };
        }
        normalise(out);
    }

    fn point(&self, i: usize) -> &[f64] {
        let row = self.points.row(i);
        row.to_slice().expect("standard layout")
    }

    fn check_new(&self, x: ArrayView2<f64>) -> Result<Array2<f64>> {
        check_new_points(
            x,
            self.points.view(),
            Arithmetic::of_metric(Some(self.metric)),
            "HDBSCAN",
        )?;
        Ok(x.as_standard_layout().into_owned())
    }

    /// Labels, membership strengths and connecting training points of new points (the
    /// package's `approximate_predict` with `return_connecting_points=True`).
    pub fn approximate_predict(&self, x: ArrayView2<f64>) -> Result<ApproximatePrediction> {
        let x = self.check_new(x)?;
        let n = x.nrows();
        if !self.has_clusters() {
            return Ok(ApproximatePrediction {
                labels: vec![NOISE; n],
                probabilities: vec![0.0; n],
                neighbors: vec![-1; n],
            });
        }
        let index = NeighborIndex::build(self.points.view(), self.metric, IndexKind::Auto)?;
        let root = self.root();
        let rows: Vec<(i64, f64, i64)> = (0..n)
            .into_par_iter()
            .map(|i| {
                let q = x.row(i);
                let (nn, lambda) = self.neighbor_and_lambda(&index, q.to_slice().expect("standard layout"));
                let mut cluster = self.point_parent[nn];
                if self.point_lambda[nn] > lambda {
                    while cluster > root && self.cluster_birth[cluster - root] >= lambda {
                        cluster = self.cluster_parent[cluster - root];
                    }
                }
                let label = self.cluster_label[cluster - root];
                let probability = if label == NOISE {
                    0.0
                } else {
                    let max = self.cluster_max_lambda[cluster - root];
                    if max > 0.0 {
                        lambda.min(max) / max
                    } else {
                        1.0
                    }
                };
                (label, finite_or_zero(probability), nn as i64)
            })
            .collect();
        Ok(ApproximatePrediction {
            labels: rows.iter().map(|r| r.0).collect(),
            probabilities: rows.iter().map(|r| r.1).collect(),
            neighbors: rows.iter().map(|r| r.2).collect(),
        })
    }

    /// Soft cluster membership of new points: n × (number of clusters), each row summing to
    /// the probability that the point is in some cluster (the package's `membership_vector`).
    pub fn membership_vectors(&self, x: ArrayView2<f64>) -> Result<Array2<f64>> {
        let x = self.check_new(x)?;
        let k = self.n_clusters();
        let mut out = Array2::zeros((x.nrows(), k));
        if k == 0 {
            return Ok(out);
        }
        let index = NeighborIndex::build(self.points.view(), self.metric, IndexKind::Auto)?;
        let exemplars = self.exemplar_indexes()?;
        let root = self.root();
        out.axis_iter_mut(Axis(0))
            .into_par_iter()
            .zip(x.axis_iter(Axis(0)).into_par_iter())
            .for_each_init(
                || (vec![0.0; k], vec![0.0; k]),
                |(outlier, heights), (mut row, q)| {
                    let q = q.to_slice().expect("standard layout");
                    let out = row.as_slice_mut().expect("standard layout");
                    let (nn, mut lambda) = self.neighbor_and_lambda(&index, q);
                    let cluster = self.point_parent[nn];
                    lambda = lambda.min(self.point_lambda[nn]);
                    Self::distance_part(&exemplars, q, out);
                    // The outlier part: the package's λ is single precision here.
                    self.merge_heights(cluster, lambda as f32 as f64, heights);
                    let max = self.leaf_max_lambda[cluster - root];
                    for (o, h) in outlier.iter_mut().zip(heights.iter()) {
                        let denominator = max - h;
                        *o = max / if denominator <= 0.0 { 1e-8 } else { denominator };
                    }
                    softmax(outlier);
                    for (o, w) in out.iter_mut().zip(outlier.iter()) {
                        *o = o.sqrt() * w * w;
                    }
                    normalise(out);
                    self.merge_heights(cluster, lambda, heights);
                    let in_some = self.in_some_cluster(heights, lambda, 1e-8);
                    for o in out.iter_mut() {
                        *o = finite_or_zero(*o * in_some);
                    }
                },
            );
        Ok(out)
    }

    /// The merge height of a point of `cluster` at `lambda` with each selected cluster.
    fn merge_heights(&self, cluster: usize, lambda: f64, out: &mut [f64]) {
        for (h, &s) in out.iter_mut().zip(&self.selected) {
            *h = self.merge_height(cluster, lambda, s);
        }
    }

    /// The probability that a point at `lambda` whose merge heights are `heights` is in some
    /// cluster: the largest height over the larger of `lambda` and that cluster's largest λ
    /// (+ `guard`).
    fn in_some_cluster(&self, heights: &[f64], lambda: f64, guard: f64) -> f64 {
        let mut best = (f64::NEG_INFINITY, self.selected[0]);
        for (&h, &s) in heights.iter().zip(&self.selected) {
            if h > best.0 {
                best = (h, s);
            }
        }
        best.0 / (lambda.max(self.leaf_max_lambda[best.1 - self.root()]) + guard)
    }

    /// Soft cluster membership of every training point, written into `out` (n × number of
    /// clusters) a row at a time: no memory beyond `out` but a vector per thread (the
    /// package's `all_points_membership_vectors`).
    pub fn all_points_membership_vectors_into(&self, mut out: ArrayViewMut2<f64>) -> Result<()> {
        let (n, k) = (self.points.nrows(), self.n_clusters());
        check_same_len("membership vectors' rows", n, out.nrows())?;
        check_same_len("membership vectors' columns", k, out.ncols())?;
        if k == 0 {
            return Ok(());
        }
        let exemplars = self.exemplar_indexes()?;
        let root = self.root();
        out.axis_iter_mut(Axis(0))
            .into_par_iter()
            .enumerate()
            .for_each_init(
                || (vec![0.0; k], vec![0.0; k], vec![0.0; k]),
                |(out, outlier, heights), (i, mut row)| {
                    let (cluster, lambda) = (self.point_parent[i], self.point_lambda[i]);
                    Self::distance_part(&exemplars, self.point(i), out);
                    self.merge_heights(cluster, lambda, heights);
                    let max = self.leaf_max_lambda[cluster - root] + 1e-8;
                    for (o, h) in outlier.iter_mut().zip(heights.iter()) {
                        *o = (-(max / h)).exp();
                    }
                    softmax(outlier);
                    for (o, w) in out.iter_mut().zip(outlier.iter()) {
                        *o *= w;
                    }
                    normalise(out);
                    let in_some = self.in_some_cluster(heights, lambda, 0.0);
                    for (r, o) in row.iter_mut().zip(out.iter()) {
                        *r = finite_or_zero(o * in_some);
                    }
                },
            );
        Ok(())
    }

    /// [`HdbscanPredictor::all_points_membership_vectors_into`] into a new n × k matrix.
    pub fn all_points_membership_vectors(&self) -> Result<Array2<f64>> {
        let mut out = Array2::zeros((self.points.nrows(), self.n_clusters()));
        self.all_points_membership_vectors_into(out.view_mut())?;
        Ok(out)
    }
}

fn finite_or_zero(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

fn normalise(v: &mut [f64]) {
    let sum: f64 = v.iter().sum();
    v.iter_mut().for_each(|x| *x /= sum);
}

/// exp(v − max v), normalised (NaN entries ignored by the max, as numpy's `nanmax`).
fn softmax(v: &mut [f64]) {
    let max = v
        .iter()
        .copied()
        .filter(|x| !x.is_nan())
        .fold(f64::NEG_INFINITY, f64::max);
    v.iter_mut().for_each(|x| *x = (*x - max).exp());
    normalise(v);
}

/// Checks a condensed tree of `n` points (from a fit or a model file) and returns its number
/// of clusters: every point and every cluster but the root (n) leaves exactly one cluster, a
/// cluster's children have larger ids than it, and every λ is a number of at least 0.
fn check_tree(rows: &[CondensedRow], n: usize) -> Result<usize> {
    let bad = |what: String| Err(Error::Unsupported(format!("condensed tree: {what}")));
    let n_clusters = rows
        .iter()
        .map(|r| r.child.max(r.parent) + 1)
        .max()
        .unwrap_or(n + 1)
        .saturating_sub(n)
        .max(1);
    if n_clusters > n.max(1) {
        return bad(format!("{n_clusters} clusters for {n} points"));
    }
    let mut seen = vec![false; n + n_clusters];
    seen[n] = true;
    for r in rows {
        if r.parent < n || (r.child >= n && r.child <= r.parent) || r.lambda.is_nan() || r.lambda < 0.0 {
            return bad(format!(
                "row (parent {}, child {}, λ {}) of a tree of {n} points",
                r.parent, r.child, r.lambda
            ));
        }
        if std::mem::replace(&mut seen[r.child], true) {
            return bad(format!("{} leaves a cluster twice", r.child));
        }
    }
    // (a tree of one point has no row)
    if let Some(i) = seen.iter().position(|s| !s).filter(|_| !rows.is_empty()) {
        return bad(format!("{i} leaves no cluster"));
    }
    Ok(n_clusters)
}

/// The stored form of an HDBSCAN predictor: the training points, the condensed tree (parent,
/// child, λ, size columns) and the selected clusters.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct StoredHdbscan {
    points: StoredArray,
    metric: String,
    min_samples: usize,
    tree_parent: StoredArray,
    tree_child: StoredArray,
    tree_lambda: StoredArray,
    tree_size: StoredArray,
    selected: StoredArray,
}

impl SaveLoad for HdbscanPredictor {
    const ALGORITHM: &'static str = "hdbscan";
    type Stored = StoredHdbscan;
    fn to_stored(&self) -> StoredHdbscan {
        let ints = |f: fn(&CondensedRow) -> usize| {
            StoredArray::from_ints(
                &self
                    .condensed_tree
                    .iter()
                    .map(|r| f(r) as i64)
                    .collect::<Vec<_>>(),
            )
        };
        let lambda = ndarray::Array1::from_iter(self.condensed_tree.iter().map(|r| r.lambda));
        StoredHdbscan {
            points: StoredArray::from_array(&self.points),
            metric: self.metric.to_string(),
            // clustr's count, as given to `new`
            min_samples: self.min_samples + 1,
            tree_parent: ints(|r| r.parent),
            tree_child: ints(|r| r.child),
            tree_lambda: StoredArray::from_array(&lambda),
            tree_size: ints(|r| r.size),
            selected: StoredArray::from_ints(&self.selected.iter().map(|&c| c as i64).collect::<Vec<_>>()),
        }
    }
    fn from_stored(s: StoredHdbscan) -> Result<Self> {
        let points: Array2<f64> = s.points.to_matrix("points")?;
        let index = |v: i64, what: &str| {
            usize::try_from(v).map_err(|_| Error::Unsupported(format!("{what}: {v} is negative")))
        };
        let column = |a: &StoredArray, what: &str| -> Result<Vec<usize>> {
            a.to_ints(what)?.into_iter().map(|v| index(v, what)).collect()
        };
        let parent = column(&s.tree_parent, "condensed tree parents")?;
        let child = column(&s.tree_child, "condensed tree children")?;
        let size = column(&s.tree_size, "condensed tree sizes")?;
        let lambda: ndarray::Array1<f64> = s.tree_lambda.to_array("condensed tree λ")?;
        check_same_len("condensed tree children", parent.len(), child.len())?;
        check_same_len("condensed tree λ", parent.len(), lambda.len())?;
        check_same_len("condensed tree sizes", parent.len(), size.len())?;
        let rows = (0..parent.len())
            .map(|i| CondensedRow {
                parent: parent[i],
                child: child[i],
                lambda: lambda[i],
                size: size[i],
            })
            .collect();
        let selected = column(&s.selected, "selected clusters")?;
        let metric: MetricKind = s.metric.parse()?;
        if s.min_samples == 0 {
            return Err(Error::param("min_samples", 0, "must be at least 1"));
        }
        crate::data::validate::check_magnitude(
            points.view(),
            Arithmetic::of_metric(Some(metric)),
            "HDBSCAN",
        )?;
        HdbscanPredictor::new(points, metric, s.min_samples, rows, selected)
    }
}
