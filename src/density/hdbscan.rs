//! HDBSCAN (Campello, Moulavi & Sander, PAKDD 2013; McInnes & Healy, ICDMW 2017) with
//! scikit-learn's `HDBSCAN` semantics and parameter names, and single-linkage clustering, its
//! by-product.
//!
//! Core distances come from the k-d or ball tree of [`NeighborIndex`] (the min_samples-th
//! nearest point, itself included, as scikit-learn); the minimum spanning tree of the
//! mutual-reachability distance from Borůvka's algorithm over the same tree (module `mst`),
//! with no n × n matrix, its first round mostly answered by the same queries (a point with a
//! point within its core distance whose own is no larger is that far from it); the rest as
//! scikit-learn ([`super::hierarchy`]). From a precomputed matrix the tree comes from Prim's
//! algorithm on the matrix.
//!
//! Where we differ: scikit-learn's tree-based path divides the pair distances by `alpha` but
//! not the core distances, its matrix path both; we follow it in each (points, matrix).
//! scikit-learn runs Prim's algorithm in O(n²) time; Borůvka's edges are reported as Prim's
//! from point 0 would report them (the end nearer point 0 first), so where no two edges of
//! the tree weigh the same the single-linkage tree, and with it every label, is scikit-learn's.
//! Haversine distances are in kilometres (scikit-learn's in radians): the tree's heights
//! differ by the Earth's radius, the labels and probabilities do not.

use super::hierarchy::{self, ClusterSelection, CondensedRow, Merge, Selection};
use super::index::{IndexKind, NearestScratch, NeighborIndex};
use super::mst::{self, Edge};
use super::prediction::HdbscanPredictor;
use super::sparse_hoods::{Neighbourhoods, SparseRows};
use crate::data::validate::check_points;
use crate::data::CsrView;
use crate::dissim::{DenseMatrix, Dissimilarity};
use crate::error::{Error, Result};
use crate::estimator::shared_setters;
use crate::estimator::{Clustering, Fit, Progress, ProgressFn};
use crate::memory::{check_fit, product, MemoryEstimate};
use crate::metric::{Metric, MetricKind};
use crate::scalar::Scalar;
use crate::NOISE;
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

/// Parameters of HDBSCAN (the estimator), scikit-learn's names and defaults.
///
/// ```
/// use clustr::prelude::*;
/// let x = clustr::datasets::load("iris")?.data;
/// let model = clustr::density::Hdbscan::new(10).fit(&x.view())?;
/// assert_eq!(model.n_clusters, 2);
/// assert!(model.probabilities.iter().all(|p| (0.0..=1.0).contains(p)));
/// # Ok::<(), clustr::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Hdbscan {
    /// Smallest cluster (default 5, at least 2).
    pub min_cluster_size: usize,
    /// Points a core neighbourhood needs, the point itself included (`None`: min_cluster_size).
    pub min_samples: Option<usize>,
    /// Clusters born below this distance are merged into their ancestor born above it
    /// (default 0: off).
    pub cluster_selection_epsilon: f64,
    /// Largest cluster excess of mass may select (`None`: no limit; ignored by `leaf`).
    pub max_cluster_size: Option<usize>,
    /// Splits whose less persistent child dies within this λ of the split are undone before
    /// the selection (the `hdbscan` package's `cluster_selection_persistence`; default 0: off).
    pub cluster_selection_persistence: f64,
    /// Excess of mass selects no cluster born above this distance, splitting it instead (the
    /// `hdbscan` package's `cluster_selection_epsilon_max`; default ∞: off; ignored by `leaf`).
    pub cluster_selection_epsilon_max: f64,
    /// Distance scaling of the mutual reachability (default 1).
    pub alpha: f64,
    /// Excess of mass (default) or leaves.
    pub cluster_selection_method: ClusterSelection,
    /// Whether the root may be the one cluster (default false).
    pub allow_single_cluster: bool,
    /// Distance (default Euclidean; haversine in km on (latitude, longitude) in degrees).
    pub metric: MetricKind,
    /// Neighbour index (default auto).
    pub index: IndexKind,
    /// Progress callback (after the core distances, then after each Borůvka round).
    pub progress: Option<ProgressFn>,
}

/// A fitted HDBSCAN.
#[derive(Clone, Debug)]
pub struct HdbscanModel {
    /// Cluster of each point, −1 for noise.
    pub labels: Vec<i64>,
    /// Strength of each point's membership in its cluster (0 for noise).
    pub probabilities: Vec<f64>,
    /// GLOSH outlier score of each point, in [0, 1].
    pub outlier_scores: Vec<f64>,
    /// Distance to each point's min_samples-th nearest point.
    pub core_distances: Vec<f64>,
    /// The condensed tree (points 0..n, clusters n.., the root n).
    pub condensed_tree: Vec<CondensedRow>,
    /// The single-linkage tree of the mutual-reachability distance (scipy's layout).
    pub single_linkage_tree: Vec<Merge>,
    /// The minimum spanning tree of the mutual-reachability distance it is built from: n − 1
    /// edges by increasing weight (ties in the order of `single_linkage_tree`'s merges).
    pub minimum_spanning_tree: Vec<Edge>,
    /// Number of clusters.
    pub n_clusters: usize,
    /// The condensed-tree id of each cluster (label l is `selected_clusters[l]`).
    pub selected_clusters: Vec<usize>,
}

impl Clustering for HdbscanModel {
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

impl HdbscanModel {
    /// What predicts new points and soft clustering from this fit on `points` (the rows the
    /// fit saw) with `params` (its metric and min_samples): see [`HdbscanPredictor`].
    pub fn predictor<F: Scalar>(
        &self,
        points: ArrayView2<'_, F>,
        params: &Hdbscan,
    ) -> Result<HdbscanPredictor> {
        crate::data::validate::check_same_len(
            "labels of the fitted points",
            self.labels.len(),
            points.nrows(),
        )?;
        HdbscanPredictor::new(
            points.mapv(|v| v.to_f64_exact()),
            params.metric,
            params.effective_min_samples(),
            self.condensed_tree.clone(),
            self.selected_clusters.clone(),
        )
    }

    /// The stability Σ (λ − λ_birth) · size of each selected cluster, in label order.
    pub fn cluster_stabilities(&self) -> Vec<f64> {
        hierarchy::stabilities(&self.condensed_tree, self.labels.len(), &self.selected_clusters)
    }

    /// Points labelled noise.
    pub fn n_noise(&self) -> usize {
        self.labels.iter().filter(|&&l| l == NOISE).count()
    }

    /// Draws the condensed tree as an icicle plot (as the `hdbscan` package's
    /// `condensed_tree_.plot()`), PNG or SVG by the extension: λ = 1 / distance grows
    /// downwards; each cluster is a band as wide as the points still in it, its children side
    /// by side below it; the selected clusters in their label's colour, the others grey.
    /// (Feature `cli`, which carries the plots.)
    #[cfg(feature = "cli")]
    pub fn plot_condensed_tree(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        use crate::plot::{Figure, Icicle};
        let n = self.labels.len();
        let rows = &self.condensed_tree;
        let count = rows
            .iter()
            .map(|r| r.parent.max(r.child))
            .filter(|&c| c >= n)
            .max()
            .unwrap_or(n)
            - n
            + 1;
        let mut children = vec![Vec::new(); count];
        let mut size = vec![0usize; count];
        let mut birth = vec![0.0f64; count];
        let mut leaving: Vec<Vec<f64>> = vec![Vec::new(); count];
        size[0] = n;
        for r in rows {
            if r.child >= n {
                children[r.parent - n].push(r.child - n);
                size[r.child - n] = r.size;
                birth[r.child - n] = r.lambda;
            }
            leaving[r.parent - n].extend(std::iter::repeat_n(r.lambda, r.size));
        }
        let finite_max = rows
            .iter()
            .map(|r| r.lambda)
            .filter(|l| l.is_finite())
            .fold(0.0, f64::max);
        let depth = if finite_max > 0.0 { finite_max * 1.02 } else { 1.0 };
        let label_of = |cl: usize| {
            self.selected_clusters
                .iter()
                .position(|&s| s == cl + n)
                .map_or(-1, |label| label as i64)
        };
        let mut figure = Icicle {
            title: "HDBSCAN condensed tree".into(),
            x_label: "points (band width = points still in the cluster)".into(),
            y_label: "λ = 1 / distance".into(),
            width: n as f64,
            depth,
            boxes: Vec::new(),
            joins: Vec::new(),
            grey_name: "not selected".into(),
        };
        // Each cluster's band, children side by side under their parent.
        let mut stack = vec![(0usize, n as f64 / 2.0)];
        while let Some((cl, centre)) = stack.pop() {
            leaving[cl].sort_by(f64::total_cmp);
            let mut top = birth[cl].min(depth);
            let mut left = size[cl];
            for (i, &l) in leaving[cl].iter().enumerate() {
                let l = l.min(depth);
                if l > top {
                    let half = left as f64 / 2.0;
                    figure
                        .boxes
                        .push((centre - half, top, centre + half, l, label_of(cl)));
                    top = l;
                }
                left = size[cl] - i - 1;
            }
            let mut x = centre - children[cl].iter().map(|&ch| size[ch] as f64).sum::<f64>() / 2.0;
            let mut centres = Vec::new();
            for &ch in &children[cl] {
                let w = size[ch] as f64;
                centres.push(x + w / 2.0);
                stack.push((ch, x + w / 2.0));
                x += w;
            }
            if let (Some(&a), Some(&b)) = (centres.first(), centres.last()) {
                figure
                    .joins
                    .push((a, b, leaving[cl].last().copied().unwrap_or(0.0).min(depth)));
            }
        }
        figure.save(path)
    }
}

/// The merges as an (n − 1) × 4 array: left, right, distance, size (scipy's linkage matrix).
pub fn linkage_matrix(tree: &[Merge]) -> Array2<f64> {
    Array2::from_shape_fn((tree.len(), 4), |(i, j)| {
        let m = &tree[i];
        [m.left as f64, m.right as f64, m.distance, m.size as f64][j]
    })
}

impl Hdbscan {
    /// HDBSCAN with scikit-learn's defaults and this smallest cluster size.
    pub fn new(min_cluster_size: usize) -> Self {
        Hdbscan {
            min_cluster_size,
            min_samples: None,
            cluster_selection_epsilon: 0.0,
            max_cluster_size: None,
            cluster_selection_epsilon_max: f64::INFINITY,
            cluster_selection_persistence: 0.0,
            alpha: 1.0,
            cluster_selection_method: ClusterSelection::Eom,
            allow_single_cluster: false,
            metric: MetricKind::Euclidean,
            index: IndexKind::Auto,
            progress: None,
        }
    }
    /// Points a core neighbourhood needs (itself included).
    pub fn min_samples(mut self, m: usize) -> Self {
        self.min_samples = Some(m);
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
    /// Excess of mass or leaves.
    pub fn cluster_selection_method(mut self, s: ClusterSelection) -> Self {
        self.cluster_selection_method = s;
        self
    }
    /// Merge clusters born below this distance.
    pub fn cluster_selection_epsilon(mut self, e: f64) -> Self {
        self.cluster_selection_epsilon = e;
        self
    }
    /// Largest cluster excess of mass may select.
    pub fn max_cluster_size(mut self, m: usize) -> Self {
        self.max_cluster_size = Some(m);
        self
    }
    /// Undo the splits less persistent than this λ before the selection.
    pub fn cluster_selection_persistence(mut self, p: f64) -> Self {
        self.cluster_selection_persistence = p;
        self
    }
    /// Select no cluster born above this distance (excess of mass).
    pub fn cluster_selection_epsilon_max(mut self, e: f64) -> Self {
        self.cluster_selection_epsilon_max = e;
        self
    }
    /// Distance scaling of the mutual reachability.
    pub fn alpha(mut self, a: f64) -> Self {
        self.alpha = a;
        self
    }
    /// Whether the root may be the one cluster.
    pub fn allow_single_cluster(mut self, a: bool) -> Self {
        self.allow_single_cluster = a;
        self
    }

    fn effective_min_samples(&self) -> usize {
        self.min_samples.unwrap_or(self.min_cluster_size)
    }

    fn validate(&self, n: usize) -> Result<()> {
        if self.min_cluster_size < 2 {
            return Err(Error::param(
                "min_cluster_size",
                self.min_cluster_size,
                "must be at least 2",
            ));
        }
        if self.min_samples == Some(0) {
            return Err(Error::param("min_samples", 0, "must be at least 1"));
        }
        if !(self.alpha > 0.0 && self.alpha.is_finite()) {
            return Err(Error::param("alpha", self.alpha, "must be positive and finite"));
        }
        let e = self.cluster_selection_epsilon;
        if !(e >= 0.0 && e.is_finite()) {
            return Err(Error::param(
                "cluster_selection_epsilon",
                e,
                "must be non-negative and finite",
            ));
        }
        let p = self.cluster_selection_persistence;
        if p.is_nan() || p < 0.0 || p.is_infinite() {
            return Err(Error::param(
                "cluster_selection_persistence",
                p,
                "must be non-negative and finite",
            ));
        }
        let e = self.cluster_selection_epsilon_max;
        if e.is_nan() || e <= 0.0 {
            return Err(Error::param(
                "cluster_selection_epsilon_max",
                e,
                "must be positive (infinity: no limit)",
            ));
        }
        if self.max_cluster_size == Some(0) {
            return Err(Error::param("max_cluster_size", 0, "must be at least 1"));
        }
        // (a min_cluster_size above n selects no cluster: every point is noise, as scikit-learn)
        let min_samples = self.effective_min_samples();
        if n < min_samples {
            return Err(Error::param(
                "min_samples",
                min_samples,
                format!("must be at most the number of points ({n})"),
            ));
        }
        Ok(())
    }

    fn report(&self, iteration: usize) -> Result<()> {
        match &self.progress {
            Some(p) => p.report(&Progress {
                iteration,
                max_iter: None,
                objective: None,
            }),
            None => Ok(()),
        }
    }

    /// Fits a precomputed square dissimilarity matrix (as scikit-learn's
    /// `metric="precomputed"`: distances divided by alpha, core distances from them).
    pub fn fit_precomputed<T: crate::dissim::DissimValue>(
        &self,
        d: &DenseMatrix<'_, T>,
    ) -> Result<HdbscanModel> {
        let n = d.len();
        if n == 0 {
            return Err(Error::EmptyInput {
                what: "dissimilarity has 0 objects".into(),
            });
        }
        self.validate(n)?;
        let k = self.effective_min_samples();
        let value = |i: usize, j: usize| d.get(i, j).to_f64().unwrap_or(f64::INFINITY) / self.alpha;
        let core: Vec<f64> = (0..n)
            .into_par_iter()
            .map(|i| {
                let mut row: Vec<f64> = (0..n).map(|j| value(i, j)).collect();
                *row.select_nth_unstable_by(k - 1, f64::total_cmp).1
            })
            .collect();
        self.report(1)?;
        let mut edges = mst::prim(n, |i, j| core[i].max(core[j]).max(value(i, j)));
        edges.sort_by(|a, b| a.w.total_cmp(&b.w));
        Ok(self.finish(n, core, &edges))
    }

    /// Fits a given spanning tree of the mutual-reachability graph of `n` points, with their
    /// core distances (scikit-learn's path for a sparse precomputed matrix, whose tree
    /// scipy computes): `edges` in any order, sorted here by weight (stably).
    pub fn fit_spanning_tree(
        &self,
        n: usize,
        mut edges: Vec<Edge>,
        core_distances: Vec<f64>,
    ) -> Result<HdbscanModel> {
        if n == 0 {
            return Err(Error::EmptyInput {
                what: "a spanning tree of 0 points".into(),
            });
        }
        self.validate(n)?;
        if edges.len() + 1 != n || core_distances.len() != n {
            return Err(Error::ShapeMismatch {
                what: format!("a spanning tree of {n} points: edges and core distances"),
                expected: format!("{} and {n}", n - 1),
                got: format!("{} and {}", edges.len(), core_distances.len()),
            });
        }
        // A tree: every edge joins two parts not yet joined.
        let mut parts = mst::UnionFind::new(n);
        for e in &edges {
            let edge = || format!("({}, {}, {})", e.a, e.b, e.w);
            if e.a >= n || e.b >= n || e.w.is_nan() || e.w < 0.0 {
                return Err(Error::param(
                    "spanning tree edge",
                    edge(),
                    format!("needs ends below {n} and a weight at least 0"),
                ));
            }
            if !parts.union(e.a, e.b) {
                return Err(Error::param(
                    "spanning tree edge",
                    edge(),
                    "closes a cycle: the edges are not a tree",
                ));
            }
        }
        edges.sort_by(|a, b| a.w.total_cmp(&b.w));
        Ok(self.finish(n, core_distances, &edges))
    }

    /// The model from the core distances and the ordered edges.
    fn finish(&self, n: usize, core_distances: Vec<f64>, edges: &[Edge]) -> HdbscanModel {
        let single_linkage_tree = hierarchy::single_linkage_tree(n, edges);
        let mut condensed_tree = hierarchy::condense(&single_linkage_tree, self.min_cluster_size);
        if self.cluster_selection_persistence > 0.0 {
            condensed_tree = hierarchy::simplify(&condensed_tree, n, self.cluster_selection_persistence);
        }
        let selection = Selection {
            method: self.cluster_selection_method,
            allow_single_cluster: self.allow_single_cluster,
            epsilon: self.cluster_selection_epsilon,
            max_cluster_size: self.max_cluster_size,
            epsilon_max: self.cluster_selection_epsilon_max,
        };
        let (labels, probabilities, selected) =
            hierarchy::labels_and_probabilities(&condensed_tree, n, &selection);
        let outlier_scores = hierarchy::outlier_scores(&condensed_tree, n);
        HdbscanModel {
            labels,
            probabilities,
            outlier_scores,
            core_distances,
            n_clusters: selected.len(),
            selected_clusters: selected,
            condensed_tree,
            single_linkage_tree,
            minimum_spanning_tree: edges.to_vec(),
        }
    }
}

shared_setters!(Hdbscan { progress });

impl MemoryEstimate for Hdbscan {
    /// The neighbour index (its copy of the points in tree order, and an f64 copy while it is
    /// built), per point the core distance, nearest other component, its lower bound,
    /// component and labels, the spanning tree, the single-linkage and condensed trees; and
    /// the replay of Prim's algorithm: the positions of the about min_samples points within
    /// each point's core distance (4 bytes each, and 8 per point for where its list starts),
    /// then 4 bytes per pair in both directions and 24 per point for the tree's edges.
    fn memory_estimate(&self, n: usize, d: usize, _elem: usize) -> u64 {
        let pairs = self.effective_min_samples().saturating_mul(12);
        product(&[n, (d * 16 + 376).saturating_add(pairs)])
    }
}

/// The minimum spanning tree's edges as scikit-learn's Prim's algorithm from point 0 over all
/// pairs reports them, by increasing weight (a stable sort). Its run is replayed over the
/// candidate pairs that can be a lightest edge out of its tree: (i, j) with d(i, j) ≤ α·core(i)
/// (where mrd can equal a core distance, the ties of the mutual reachability) and Borůvka's
/// `tree` (the other edges have a weight of their own where no two distances are equal, so
/// they are in every minimum spanning tree). The replay runs over tree positions, where a
/// point's candidates lie close in memory.
fn as_prim_reports<F: Scalar>(index: &NeighborIndex<'_, F>, near: &Near, tree: &[Edge]) -> Vec<Edge> {
    let order = index.tree_order();
    let n = order.len();
    // The candidate pairs in both directions, by position, 4 bytes per pair: each position's
    // list holds its pairs within a core distance from the front, the tree's edges from the
    // back (their weights in `tree_w`, at the slot less `tree_base` of the position).
    let mut start = vec![0usize; n + 1];
    for p in 0..n {
        let within = near.within(p);
        start[p + 1] += within.len();
        within.iter().for_each(|&q| start[q as usize + 1] += 1);
    }
    let mut tree_degree = vec![0usize; n];
    for e in tree {
        tree_degree[near.place[e.a] as usize] += 1;
        tree_degree[near.place[e.b] as usize] += 1;
    }
    for p in 0..n {
        start[p + 1] += start[p] + tree_degree[p];
    }
    let mut front = start[..n].to_vec();
    let mut back = start[1..].to_vec();
    let mut adjacent = vec![0u32; start[n]];
    for p in 0..n {
        for &q in near.within(p) {
            let q = q as usize;
            adjacent[front[p]] = q as u32;
            adjacent[front[q]] = p as u32;
            front[p] += 1;
            front[q] += 1;
        }
    }
    let mut tree_base = vec![0usize; n];
    let mut tree_slots = 0;
    for p in 0..n {
        tree_base[p] = back[p] - tree_degree[p] - tree_slots;
        tree_slots += tree_degree[p];
    }
    let mut tree_w = vec![0.0; tree_slots];
    for e in tree {
        let (a, b) = (near.place[e.a] as usize, near.place[e.b] as usize);
        back[a] -= 1;
        back[b] -= 1;
        adjacent[back[a]] = b as u32;
        adjacent[back[b]] = a as u32;
        tree_w[back[a] - tree_base[a]] = e.w;
        tree_w[back[b] - tree_base[b]] = e.w;
    }
    // A pair within a core distance weighs the larger core distance (d/α is at most the
    // other); a tree edge weighs what Borůvka found.
    let tree_from = back;
    let mut edges = mst::prim_over(order, &start, &adjacent, |p, q, slot| {
        if slot < tree_from[p] {
            near.core_at[p].max(near.core_at[q])
        } else {
            tree_w[slot - tree_base[p]]
        }
    });
    edges.sort_by(|a, b| a.w.total_cmp(&b.w));
    edges
}

/// The core distances and near points of every point, by tree position.
struct Near {
    /// The core distance of the point at each position.
    core_at: Vec<f64>,
    /// `within[start[p]..start[p + 1]]`: the positions of the other points within α times the
    /// core distance of the point at position p.
    start: Vec<usize>,
    within: Vec<u32>,
    /// The position of each point.
    place: Vec<u32>,
}

impl Near {
    fn within(&self, p: usize) -> &[u32] {
        &self.within[self.start[p]..self.start[p + 1]]
    }

    /// Each point's core distance, by point.
    fn core(&self, order: &[usize]) -> Vec<f64> {
        let mut core = vec![0.0; order.len()];
        order.iter().zip(&self.core_at).for_each(|(&i, &c)| core[i] = c);
        core
    }
}

/// Each point's core distance (its distance to the `k`-th nearest point, itself included) and
/// the other points within α times it, from one query of the k + 1 nearest (a radius query
/// where the (k + 1)-th may be within too, or α > 1); in parallel over blocks of positions,
/// each block's answers gathered in flat lists.
fn core_distances<F: Scalar>(index: &NeighborIndex<'_, F>, k: usize, alpha: f64) -> Near {
    const BLOCK: usize = 256;
    let order = index.tree_order();
    let n = order.len();
    let mut place = vec![0u32; n];
    order.iter().enumerate().for_each(|(p, &i)| place[i] = p as u32);
    let blocks: Vec<(Vec<f64>, Vec<u32>, Vec<u32>)> = order
        .par_chunks(BLOCK)
        .enumerate()
        .map(|(b, block)| {
            let (mut cores, mut counts, mut within) =
                (Vec::with_capacity(block.len()), Vec::new(), Vec::new());
            let mut scratch = NearestScratch::default();
            for (t, &i) in block.iter().enumerate() {
                let before = within.len();
                let q = index.point_at(b * BLOCK + t);
                let near = index.nearest_reusing(q, k + 1, &mut scratch);
                let core = near[..k.min(near.len())].last().map_or(0.0, |c| c.1);
                let radius = alpha * core;
                if alpha <= 1.0 && near.get(k).is_none_or(|c| c.1 > radius) {
                    within.extend(
                        near.iter()
                            .filter(|&&(j, d)| j != i && d <= radius)
                            .map(|&(j, _)| place[j]),
                    );
                } else {
                    within.extend(
                        index
                            .within(q, radius)
                            .into_iter()
                            .filter(|&(j, _)| j != i)
                            .map(|(j, _)| place[j]),
                    );
                }
                cores.push(core);
                counts.push((within.len() - before) as u32);
            }
            (cores, counts, within)
        })
        .collect();
    let mut near = Near {
        core_at: Vec::with_capacity(n),
        start: Vec::with_capacity(n + 1),
        within: Vec::with_capacity(blocks.iter().map(|b| b.2.len()).sum()),
        place,
    };
    near.start.push(0);
    let mut end = 0;
    for (cores, counts, within) in blocks {
        near.core_at.extend(cores);
        for c in counts {
            end += c as usize;
            near.start.push(end);
        }
        near.within.extend(within);
    }
    near
}

impl<F: Scalar> Fit<ArrayView2<'_, F>> for Hdbscan {
    type Model = HdbscanModel;

    fn fit(&self, x: &ArrayView2<'_, F>) -> Result<HdbscanModel> {
        check_points(*x)?;
        self.metric.check_dim(x.ncols())?;
        self.validate(x.nrows())?;
        check_fit(
            self,
            "HDBSCAN",
            x.nrows(),
            x.ncols(),
            size_of::<F>(),
            crate::error::hints::DENSITY,
        )?;
        let x = crate::data::standard_layout(*x);
        let index = NeighborIndex::build(x.view(), self.metric, self.index)?;
        let near = core_distances(&index, self.effective_min_samples(), self.alpha);
        let order = index.tree_order();
        let core = near.core(order);
        // A point with a point within its core distance whose own is no larger is that far
        // from it under mutual reachability, the least it can be.
        let mut known: Vec<Option<(usize, f64)>> = vec![None; order.len()];
        for (p, &i) in order.iter().enumerate() {
            known[i] = near
                .within(p)
                .iter()
                .find(|&&q| near.core_at[q as usize] <= near.core_at[p])
                .map(|&q| (order[q as usize], near.core_at[p]));
        }
        self.report(1)?;
        let edges = mst::boruvka(&index, &core, self.alpha, &known, self.progress.as_ref())?;
        let edges = as_prim_reports(&index, &near, &edges);
        Ok(self.finish(x.nrows(), core, &edges))
    }
}

impl<F: Scalar> Fit<CsrView<'_, F>> for Hdbscan {
    type Model = HdbscanModel;

    /// HDBSCAN on sparse rows (Euclidean, squared Euclidean or cosine) by brute force, as
    /// scikit-learn's path for sparse input: the distances divided by `alpha`, each core
    /// distance from one row of distances to every row (through the rows sharing a term, see
    /// `sparse_hoods.rs`), the spanning tree by Prim's algorithm one row of distances at a
    /// time. O(n²) distances, O(n) memory beside the rows.
    fn fit(&self, x: &CsrView<'_, F>) -> Result<HdbscanModel> {
        let n = x.nrows();
        self.validate(n)?;
        let fit_bytes = self.memory_estimate(n, 0, size_of::<F>());
        let rows = SparseRows::checked(*x, self.metric, fit_bytes, "HDBSCAN")?;
        let k = self.effective_min_samples();
        let core: Vec<f64> = (0..n)
            .into_par_iter()
            .map(|i| rows.nearest(i, k).last().map_or(0.0, |c| c.1) / self.alpha)
            .collect();
        self.report(1)?;
        let mut edges = mst::prim_rows(n, |i, _, out| {
            rows.distances_from(i, out);
            out.par_iter_mut()
                .enumerate()
                .for_each(|(j, d)| *d = core[i].max(core[j]).max(*d / self.alpha));
        });
        edges.sort_by(|a, b| a.w.total_cmp(&b.w));
        Ok(self.finish(n, core, &edges))
    }
}

/// Where a single-linkage tree is cut.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cut {
    /// Every merge at distance ≤ this joins (scipy's `fcluster(…, t, "distance")`).
    Distance(f64),
    /// At most this many clusters: the smallest distance cut that leaves no more
    /// (scipy's `fcluster(…, k, "maxclust")`).
    Clusters(usize),
}

/// Single-linkage clustering (scipy's `linkage(method="single")` and `fcluster`), from the
/// minimum spanning tree of the plain distances, O(n) memory: Borůvka's algorithm over a
/// tree `index`, or Prim's over every pair for `IndexKind::Brute`; `Auto` takes Prim's for
/// few points for their dimension (up to max(250·d, 15,000 at d = 10–11, 40,000 at
/// d = 12–16, 50,000 above)) and above 16 dimensions where the index finds no structure.
///
/// ```
/// use clustr::prelude::*;
/// use clustr::density::hdbscan::{single_linkage, Cut};
/// use clustr::density::IndexKind;
/// let x = ndarray::array![[0.0], [0.5], [5.0], [5.2], [20.0]];
/// let (labels, tree) = single_linkage(x.view(), MetricKind::Euclidean, IndexKind::Auto, Cut::Clusters(3))?;
/// assert_eq!(labels, vec![0, 0, 1, 1, 2]);
/// assert_eq!(tree.last().unwrap().distance, 14.8);
/// # Ok::<(), clustr::Error>(())
/// ```
pub fn single_linkage<F: Scalar>(
    x: ArrayView2<'_, F>,
    metric: MetricKind,
    index: IndexKind,
    cut: Cut,
) -> Result<(Vec<i64>, Vec<Merge>)> {
    check_points(x)?;
    metric.check_dim(x.ncols())?;
    let n = x.nrows();
    check_cut(cut, n)?;
    // Memory as HDBSCAN's with min_samples = 1, whose mutual reachability is the distance.
    let as_hdbscan = Hdbscan::new(2).min_samples(1);
    check_fit(
        &as_hdbscan,
        "single linkage",
        n,
        x.ncols(),
        size_of::<F>(),
        crate::error::hints::DENSITY,
    )?;
    let x = crate::data::standard_layout(x);
    // Prim's algorithm over every pair, through the SIMD kernels, beats Borůvka's over a k-d
    // tree on few points for their dimension, and the more so the higher the dimension
    // (whole process, one thread, blobs and a structureless Gaussian; paper-repro/results/
    // index_crossover.md): at d = 6 Borůvka's wins from 10,000 points, at d = 8 from 10,000
    // on blobs (1.5x) and 20,000 on the Gaussian; at d = 10 Prim's takes 0.48-0.88x at 10,000
    // and 0.77-1.45x at 20,000; at d = 12 0.32-1.12x up to 40,000; at d = 16 0.16-0.84x up
    // to 40,000; above 16 dimensions, where trees prune little, it wins up to 50,000 points
    // and beyond where the index finds no structure (10,000 x 64: 1.0 s against 3.4).
    // An explicit index is obeyed: brute force is Prim's over every pair, a tree Borůvka's.
    let d = x.ncols();
    let prim_limit = (250 * d).max(match d {
        0..=9 => 0,
        10..=11 => 15_000,
        12..=16 => 40_000,
        _ => 50_000,
    });
    let every_pair = match index {
        IndexKind::Auto => n <= prim_limit,
        IndexKind::Brute => true,
        IndexKind::KdTree | IndexKind::BallTree => false,
    };
    let edges = if n <= 1 {
        Vec::new()
    } else if every_pair {
        mst::prim_points(x.view(), metric)
    } else {
        let index = NeighborIndex::build(x.view(), metric, index)?;
        if index.kind() == IndexKind::Brute {
            mst::prim_points(x.view(), metric)
        } else {
            mst::boruvka(&index, &vec![0.0; n], 1.0, &[], None)?
        }
    };
    Ok(cut_tree(n, edges, cut))
}

/// [`single_linkage`] of sparse rows (Euclidean, squared Euclidean, cosine or Manhattan): the
/// spanning tree by Prim's algorithm, one row of distances at a time (as HDBSCAN on sparse
/// rows), O(n²) distances in O(n) memory beside the rows. The same labels and merge heights
/// as for the rows' dense form.
pub fn single_linkage_sparse<F: Scalar>(
    x: CsrView<'_, F>,
    metric: MetricKind,
    cut: Cut,
) -> Result<(Vec<i64>, Vec<Merge>)> {
    let n = x.nrows();
    check_cut(cut, n)?;
    let rows = SparseRows::checked(x, metric, crate::memory::product(&[n, 64]), "single linkage")?;
    let edges = mst::prim_rows(n, |i, _, out| rows.distances_from(i, out));
    Ok(cut_tree(n, edges, cut))
}

/// Refuses a cut that leaves no valid partition of `n` points.
fn check_cut(cut: Cut, n: usize) -> Result<()> {
    match cut {
        Cut::Distance(t) if !(t >= 0.0 && t.is_finite()) => {
            Err(Error::param("distance", t, "must be non-negative and finite"))
        }
        Cut::Clusters(k) if k == 0 || k > n => {
            Err(Error::param("n_clusters", k, format!("must be in 1..={n}")))
        }
        _ => Ok(()),
    }
}

/// The single-linkage tree of a spanning tree's `edges` and the labels of its cut.
fn cut_tree(n: usize, mut edges: Vec<Edge>, cut: Cut) -> (Vec<i64>, Vec<Merge>) {
    edges.sort_by(|a, b| a.w.total_cmp(&b.w).then(a.a.min(a.b).cmp(&b.a.min(b.b))));
    let mut tree = hierarchy::single_linkage_tree(n.max(1), &edges);
    for m in &mut tree {
        if m.left > m.right {
            std::mem::swap(&mut m.left, &mut m.right);
        }
    }
    let threshold = match cut {
        Cut::Distance(t) => t,
        Cut::Clusters(k) if k >= n => -1.0,
        Cut::Clusters(k) => edges[n - k - 1].w,
    };
    let mut sets = mst::UnionFind::new(n);
    for e in edges.iter().take_while(|e| e.w <= threshold) {
        sets.union(e.a, e.b);
    }
    let mut number = vec![NOISE; n];
    let mut next = 0;
    let labels = (0..n)
        .map(|i| {
            let r = sets.find(i);
            if number[r] == NOISE {
                number[r] = next;
                next += 1;
            }
            number[r]
        })
        .collect();
    (labels, tree)
}
