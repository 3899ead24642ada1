//! OPTICS (Ankerst, Breunig, Kriegel & Sander 1999) with scikit-learn's and ELKI's semantics
//! (`sklearn.cluster.OPTICS`, 1.x), and its two cluster extractions.
//!
//! - Core distance: the distance to the `min_samples`-th nearest point counting the point
//!   itself; infinite above `max_eps`. Core and reachability distances are rounded to 15
//!   decimals as scikit-learn does (`np.around`), so ties break the same way.
//! - Ordering: the unprocessed point of smallest reachability next, ties to the smallest
//!   index; a processed core point lowers its unprocessed neighbours' reachability to
//!   `max(d, core)` only when strictly smaller; the first point of each component keeps an
//!   infinite reachability and no predecessor (−1).
//! - Xi extraction: steep areas with ratio `1 − xi`, scikit-learn's two corrections of the
//!   paper (Definitions 9 and 11-4c), the predecessor correction of Schubert & Gertz (LWDA
//!   2018, Algorithm 2) with the index fix of scikit-learn PR #26459, `min_cluster_size`
//!   (default `min_samples`), smallest clusters labelled first.
//! - DBSCAN extraction at any `eps ≤ max_eps`, in linear time.
//! - Sample weights (scikit-learn's OPTICS has none): as DBSCAN's, a point's neighbourhood
//!   counts weight instead of points, so the core distance is the smallest radius within
//!   which the weights, the point's own included, add up to `min_samples`; an integer weight
//!   counts as that many copies of the point. The ordering and the extractions are unchanged
//!   (`min_cluster_size` counts points).
//!
//! Deliberate difference: scikit-learn finds the next point by a scan over all unprocessed
//! points (O(n²) even with a finite `max_eps`), and each processed core point offers a
//! reachability to every unprocessed point within `max_eps` (all of them when unbounded).
//! Here a priority queue (decrease-key, each point held once) picks the next point, and over
//! a tree a point's offers go out within a radius that grows only when the ordering needs it
//! (see `Walk`); the ordering, reachabilities and predecessors are the same, bit for bit.

use crate::data::validate::check_points;
use crate::data::CsrView;
use crate::density::index::{IndexKind, NeighborIndex};
use crate::density::sparse_hoods::{Neighbourhoods, SparseGraph, SparseRows};
use crate::error::{Error, Result};
use crate::estimator::{Clustering, Fit};
use crate::memory::{check_fit, product, MemoryEstimate};
use crate::metric::{Metric, MetricKind};
use crate::scalar::Scalar;
use crate::NOISE;
use ndarray::ArrayView2;
use rayon::prelude::*;

/// How clusters are read from the reachability plot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Extraction {
    /// Steep areas of relative steepness `xi` (scikit-learn's default, xi = 0.05).
    Xi(f64),
    /// DBSCAN's clusters at this radius (≤ max_eps).
    Dbscan(f64),
}

/// Parameters of OPTICS (the estimator).
///
/// ```
/// use clustr::prelude::*;
/// let x = clustr::datasets::load("iris")?.data;
/// use clustr::density::{Extraction, Optics};
/// let model = Optics::new(5).extraction(Extraction::Dbscan(0.5)).fit(&x.view())?;
/// assert_eq!(model.ordering.len(), x.nrows());
/// # Ok::<(), clustr::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Optics {
    /// Neighbourhood size of a core point, the point itself included (default 5, at least 2).
    pub min_samples: usize,
    /// Largest radius considered (default ∞).
    pub max_eps: f64,
    /// Distance (default Euclidean, scikit-learn's `minkowski` with p = 2).
    pub metric: MetricKind,
    /// Neighbour index (default auto).
    pub index: IndexKind,
    /// Cluster extraction (default xi = 0.05).
    pub extraction: Extraction,
    /// Smallest xi cluster (default `min_samples`).
    pub min_cluster_size: Option<usize>,
    /// Schubert & Gertz's predecessor correction of xi clusters (default on).
    pub predecessor_correction: bool,
    /// The weight of each point (default all 1; non-negative): a core neighbourhood needs
    /// `min_samples` of weight.
    pub sample_weight: Option<Vec<f64>>,
}

impl Default for Optics {
    fn default() -> Self {
        Optics {
            min_samples: 5,
            max_eps: f64::INFINITY,
            metric: MetricKind::Euclidean,
            index: IndexKind::Auto,
            extraction: Extraction::Xi(0.05),
            min_cluster_size: None,
            predecessor_correction: true,
            sample_weight: None,
        }
    }
}

impl Optics {
    /// OPTICS with `min_samples` and scikit-learn's other defaults.
    pub fn new(min_samples: usize) -> Self {
        Optics {
            min_samples,
            ..Optics::default()
        }
    }
    /// Largest radius.
    pub fn max_eps(mut self, e: f64) -> Self {
        self.max_eps = e;
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
    /// Cluster extraction.
    pub fn extraction(mut self, e: Extraction) -> Self {
        self.extraction = e;
        self
    }
    /// Smallest xi cluster.
    pub fn min_cluster_size(mut self, m: usize) -> Self {
        self.min_cluster_size = Some(m);
        self
    }
    /// Predecessor correction on or off.
    pub fn predecessor_correction(mut self, on: bool) -> Self {
        self.predecessor_correction = on;
        self
    }
    /// The weight of each point.
    pub fn sample_weight(mut self, w: Vec<f64>) -> Self {
        self.sample_weight = Some(w);
        self
    }

    /// The core distance of point `i` (before `max_eps` and rounding): the distance to the
    /// `min_samples`-th nearest point, or with weights the smallest radius holding
    /// `min_samples` of weight (∞ when all the points together hold less).
    fn core_distance<N: Neighbourhoods>(&self, index: &N, i: usize) -> f64 {
        let need = self.min_samples as f64;
        let Some(w) = &self.sample_weight else {
            // (a neighbourhood graph may know fewer neighbours: then not a core point)
            let near = index.nearest(i, self.min_samples);
            return match near.last() {
                Some(p) if near.len() == self.min_samples => p.1,
                _ => f64::INFINITY,
            };
        };
        let mut k = self.min_samples;
        loop {
            let near = index.nearest(i, k);
            let mut total = 0.0;
            for &(j, d) in &near {
                total += w[j];
                if total >= need {
                    return d;
                }
            }
            if near.len() < k || k >= index.len() {
                return f64::INFINITY;
            }
            k = (2 * k).min(index.len());
        }
    }

    fn validate(&self, n: usize) -> Result<()> {
        if self.min_samples < 2 || self.min_samples > n {
            return Err(Error::param(
                "min_samples",
                self.min_samples,
                format!("must be in 2..={n} (the number of points)"),
            ));
        }
        if self.max_eps.is_nan() || self.max_eps <= 0.0 {
            return Err(Error::param("max_eps", self.max_eps, "must be positive"));
        }
        if let Some(w) = &self.sample_weight {
            crate::data::validate::check_sample_weight(w, n, false)?;
        }
        match self.extraction {
            Extraction::Xi(xi) if !(xi > 0.0 && xi < 1.0) => {
                return Err(Error::param("xi", xi, "must be in (0, 1)"));
            }
            Extraction::Dbscan(eps) if !(eps > 0.0 && eps <= self.max_eps) => {
                return Err(Error::param(
                    "eps",
                    eps,
                    format!("must be in (0, max_eps = {}]", self.max_eps),
                ));
            }
            _ => {}
        }
        if let Some(m) = self.min_cluster_size {
            if m < 2 || m > n {
                return Err(Error::param("min_cluster_size", m, format!("must be in 2..={n}")));
            }
        }
        Ok(())
    }
}

/// A fitted OPTICS.
#[derive(Clone, Debug, PartialEq)]
pub struct OpticsModel {
    /// The points in cluster order.
    pub ordering: Vec<usize>,
    /// Reachability distance of each point (by point index; ∞ for component starts).
    pub reachability: Vec<f64>,
    /// Core distance of each point (∞ when never core within max_eps).
    pub core_distances: Vec<f64>,
    /// The point each one was reached from (−1 for none).
    pub predecessor: Vec<i64>,
    /// Cluster of each point, −1 for noise.
    pub labels: Vec<i64>,
    /// Xi clusters as inclusive (start, end) positions in `ordering`, smaller ones first
    /// (empty for the DBSCAN extraction).
    pub clusters: Vec<(usize, usize)>,
    /// Number of clusters labelled.
    pub n_clusters: usize,
}

impl OpticsModel {
    /// A DBSCAN radius read off the reachability plot: the knee of the finite reachability
    /// distances sorted in increasing order, i.e. the value lying furthest below the chord from
    /// the smallest to the largest with both axes scaled to [0, 1] (the k-distance-plot rule of
    /// Ester et al. 1996, found as Satopää et al.'s "Kneedle" does). `None` with fewer than 3
    /// finite values or when all are equal.
    pub fn knee_eps(&self) -> Option<f64> {
        let mut r: Vec<f64> = self
            .reachability
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        r.sort_by(f64::total_cmp);
        let (lo, hi) = (*r.first()?, *r.last()?);
        if r.len() < 3 || hi <= lo {
            return None;
        }
        let last = (r.len() - 1) as f64;
        let below = |(i, v): (usize, &f64)| (i as f64 / last - (v - lo) / (hi - lo), *v);
        r.iter()
            .enumerate()
            .map(below)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, v)| v)
    }
}

impl Clustering for OpticsModel {
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

/// `np.around(x, 15)`: multiply by 10¹⁵, round half to even, divide.
/// (Ties to even by adding and subtracting 2⁵², exact below 2⁵² in the default rounding
/// mode; `round_ties_even` is a library call on baseline x86-64.)
#[inline]
fn round15(x: f64) -> f64 {
    const TWO52: f64 = 4_503_599_627_370_496.0;
    let y = x * 1e15;
    let r = if y.abs() < TWO52 {
        ((y.abs() + TWO52) - TWO52).copysign(y)
    } else {
        y
    };
    r / 1e15
}

/// Whether `round15(x) > r` (`≥ r` unless `strict`) for a rounded `r`, known without
/// rounding `x`: rounding moves a value by at most 0.5·10⁻¹⁵ plus two roundings' relative
/// error. False when unsure.
#[inline]
fn rounds_above(x: f64, r: f64, strict: bool) -> bool {
    let low = x * (1.0 - 1e-15) - 1e-15;
    low > r || (!strict && low == r)
}

/// The OPTICS ordering over a tree, without visiting every unprocessed point from every
/// processed one (as scikit-learn does; O(n²) with an unbounded `max_eps`).
///
/// A processed core point `p` lowers the reachabilities of the unprocessed points within a
/// radius `radius[p]`, at first `2 · core[p]` (`max_eps` without a tree): eagerly, through a
/// walk that skips tree nodes whose points it cannot improve (`largest_reach`, an upper bound
/// on a node's unprocessed reachabilities). What it would offer beyond that radius is at least
/// `floor[p] = round15(max(radius[p], core[p]))`; the points with such unfinished business are
/// kept in a heap by that floor. The next point is the seed of smallest (reachability, index)
/// only while its reachability is below every floor — then no unfinished offer could lower or
/// tie it. Otherwise the point of lowest floor widens its radius to at least its nearest
/// unprocessed point beyond it, and at least doubles it. Widening applies offers late, so a
/// tie with an offer made earlier by a later-processed point hands the predecessor to the
/// earlier-processed one, as the plain order would have. The result is the plain ordering's,
/// reachabilities and predecessors included.
struct Walk<'a, N: Neighbourhoods> {
    index: &'a N,
    core: &'a [f64],
    max_eps: f64,
    reach: Vec<f64>,
    pred: Vec<i64>,
    /// Position in the ordering of each processed point.
    rank: Vec<usize>,
    ordering: Vec<usize>,
    seeds: SeedHeap,
    radius: Vec<f64>,
    floor: Vec<f64>,
    unfinished: SeedHeap,
    largest_reach: Vec<f64>,
}

impl<'a, N: Neighbourhoods> Walk<'a, N> {
    fn new(index: &'a N, core: &'a [f64], max_eps: f64) -> Self {
        let n = index.len();
        Walk {
            index,
            core,
            max_eps,
            reach: vec![f64::INFINITY; n],
            pred: vec![-1; n],
            rank: vec![usize::MAX; n],
            ordering: Vec::with_capacity(n),
            seeds: SeedHeap::new(n),
            radius: vec![0.0; n],
            floor: vec![f64::INFINITY; n],
            unfinished: SeedHeap::new(n),
            largest_reach: vec![f64::INFINITY; index.node_count()],
        }
    }

    fn run(mut self) -> (Vec<usize>, Vec<f64>, Vec<i64>) {
        let n = self.index.len();
        let tree = self.index.node_count() > 0;
        let mut next_fresh = 0;
        while self.ordering.len() < n {
            // The seed of smallest reachability once no floor is at or below it, else the
            // first unprocessed point.
            let p = loop {
                let seed = self.seeds.peek().map(|j| self.reach[j]);
                let unfinished = self.unfinished.peek();
                match (seed, unfinished) {
                    (seed, Some(q)) if seed.is_none_or(|r| self.floor[q] <= r) => {
                        self.unfinished.pop(&self.floor);
                        self.widen(q);
                    }
                    _ => {
                        if let Some(p) = self.seeds.pop(&self.reach) {
                            break p;
                        }
                        while self.rank[next_fresh] != usize::MAX {
                            next_fresh += 1;
                        }
                        break next_fresh;
                    }
                }
            };
            self.rank[p] = self.ordering.len();
            self.ordering.push(p);
            if self.core[p].is_finite() {
                let radius = if tree {
                    (2.0 * self.core[p]).min(self.max_eps)
                } else {
                    self.max_eps
                };
                self.relax(p, radius);
            }
        }
        (self.ordering, self.reach, self.pred)
    }

    /// Widens the radius of `p` to its nearest unprocessed point beyond it, at least doubled.
    fn widen(&mut self, p: usize) {
        let rank = &self.rank;
        let beyond = self.radius[p];
        let nearest = self
            .index
            .nearest_beyond(p, beyond, &self.largest_reach, |j| rank[j] != usize::MAX);
        if let Some(d) = nearest.filter(|&d| d <= self.max_eps) {
            self.relax(p, d.max(2.0 * beyond).min(self.max_eps));
        }
    }

    /// The offers of `p` to the unprocessed points within `radius`; `p` stays unfinished
    /// while the radius is below `max_eps`.
    fn relax(&mut self, p: usize, radius: f64) {
        let core = self.core[p];
        // Only a late offer (after later points were processed) can matter when it ties.
        let late = self.rank[p] + 1 < self.ordering.len();
        let (reach, pred, rank, seeds) = (&mut self.reach, &mut self.pred, &self.rank, &mut self.seeds);
        // A node is skipped when its points are beyond the radius, or would be offered
        // more than (at least, when ties do not matter) the largest reachability of its
        // unprocessed points.
        let skip_node = |floor: f64, largest: f64| {
            let offer = round15(floor.max(core));
            floor > radius || offer > largest || (!late && offer >= largest)
        };
        let processed = |j: usize| rank[j] != usize::MAX;
        self.index.walk_bounded(
            p,
            radius,
            &mut self.largest_reach,
            skip_node,
            processed,
            |j, d| {
                if d <= radius && !rounds_above(d.max(core), reach[j], late) {
                    let r = round15(d.max(core));
                    if r < reach[j] {
                        reach[j] = r;
                        pred[j] = p as i64;
                        seeds.push_or_decrease(reach, j);
                    } else if r == reach[j] && rank[p] < rank[pred[j] as usize] {
                        pred[j] = p as i64;
                    }
                }
                reach[j]
            },
        );
        self.radius[p] = radius;
        if radius < self.max_eps {
            self.floor[p] = round15(radius.max(core));
            self.unfinished.push_or_decrease(&self.floor, p);
        }
    }
}

/// A binary min-heap of points keyed by (reachability, index) with decrease-key, so it holds
/// each point at most once (memory O(n) even when every update improves a reachability).
struct SeedHeap {
    heap: Vec<usize>,
    /// Position of each point in `heap`, `usize::MAX` when absent.
    pos: Vec<usize>,
}

impl SeedHeap {
    fn new(n: usize) -> Self {
        SeedHeap {
            heap: Vec::new(),
            pos: vec![usize::MAX; n],
        }
    }

    fn less(reach: &[f64], a: usize, b: usize) -> bool {
        reach[a].total_cmp(&reach[b]).then(a.cmp(&b)).is_lt()
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.heap.swap(i, j);
        self.pos[self.heap[i]] = i;
        self.pos[self.heap[j]] = j;
    }

    fn up(&mut self, reach: &[f64], mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if !Self::less(reach, self.heap[i], self.heap[parent]) {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
    }

    /// Inserts `p`, or moves it up after its reachability decreased.
    fn push_or_decrease(&mut self, reach: &[f64], p: usize) {
        if self.pos[p] == usize::MAX {
            self.heap.push(p);
            self.pos[p] = self.heap.len() - 1;
        }
        self.up(reach, self.pos[p]);
    }

    fn peek(&self) -> Option<usize> {
        self.heap.first().copied()
    }

    fn pop(&mut self, reach: &[f64]) -> Option<usize> {
        let top = *self.heap.first()?;
        let last = self.heap.len() - 1;
        self.swap(0, last);
        self.heap.pop();
        self.pos[top] = usize::MAX;
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < self.heap.len() && Self::less(reach, self.heap[l], self.heap[m]) {
                m = l;
            }
            if r < self.heap.len() && Self::less(reach, self.heap[r], self.heap[m]) {
                m = r;
            }
            if m == i {
                break;
            }
            self.swap(i, m);
            i = m;
        }
        Some(top)
    }
}

impl MemoryEstimate for Optics {
    /// The neighbour index (with an f64 copy of the points for the tree metrics) and the
    /// per-point core distances, reachabilities, ordering, predecessors, labels, and the
    /// walk's ranks, radii, floors and two heaps.
    fn memory_estimate(&self, n: usize, d: usize, _elem: usize) -> u64 {
        product(&[n, d * 16 + 192])
    }
}

impl<F: Scalar> Fit<ArrayView2<'_, F>> for Optics {
    type Model = OpticsModel;

    fn fit(&self, x: &ArrayView2<'_, F>) -> Result<OpticsModel> {
        check_points(*x)?;
        self.metric.check_dim(x.ncols())?;
        let n = x.nrows();
        self.validate(n)?;
        check_fit(
            self,
            "OPTICS",
            n,
            x.ncols(),
            size_of::<F>(),
            crate::error::hints::DENSITY,
        )?;
        let x = crate::data::standard_layout(*x);
        let index = NeighborIndex::build(x.view(), self.metric, self.index)?;
        Ok(self.order(&index))
    }
}

impl<F: Scalar> Fit<CsrView<'_, F>> for Optics {
    type Model = OpticsModel;

    /// OPTICS on sparse rows (Euclidean, squared Euclidean or cosine; neighbourhoods by brute
    /// force over the rows sharing a term, see `sparse_hoods.rs`).
    fn fit(&self, x: &CsrView<'_, F>) -> Result<OpticsModel> {
        self.validate(x.nrows())?;
        let fit_bytes = self.memory_estimate(x.nrows(), 0, size_of::<F>());
        Ok(self.order(&SparseRows::checked(*x, self.metric, fit_bytes, "OPTICS")?))
    }
}

impl Optics {
    /// OPTICS on a precomputed sparse neighbourhood graph (scikit-learn's
    /// `metric="precomputed"` with a sparse matrix): each row's stored entries are its
    /// neighbours at those distances, and the point itself (at its stored diagonal value, else
    /// 0). A point with fewer than `min_samples` neighbours in the graph is not a core point
    /// (scikit-learn raises an error instead).
    pub fn fit_graph<F: Scalar>(&self, graph: CsrView<'_, F>) -> Result<OpticsModel> {
        self.validate(graph.nrows())?;
        Ok(self.order(&SparseGraph::new(graph)?))
    }

    /// The ordering, reachabilities and extraction over the points of `index`.
    fn order<N: Neighbourhoods>(&self, index: &N) -> OpticsModel {
        let n = index.len();
        let core: Vec<f64> = (0..n)
            .into_par_iter()
            .map(|i| {
                let d = self.core_distance(index, i);
                if d > self.max_eps {
                    f64::INFINITY
                } else {
                    round15(d)
                }
            })
            .collect();
        let (ordering, reach, pred) = Walk::new(index, &core, self.max_eps).run();
        let (labels, clusters) = match self.extraction {
            Extraction::Dbscan(eps) => (extract_dbscan(&reach, &core, &ordering, eps), Vec::new()),
            Extraction::Xi(xi) => {
                let min_cluster_size = self.min_cluster_size.unwrap_or(self.min_samples);
                let clusters = xi_clusters(
                    &reach,
                    &pred,
                    &ordering,
                    xi,
                    self.min_samples,
                    min_cluster_size,
                    self.predecessor_correction,
                );
                (xi_labels(&ordering, &clusters), clusters)
            }
        };
        let n_clusters = labels
            .iter()
            .copied()
            .max()
            .map_or(0, |m| (m + 1).max(0) as usize);
        OpticsModel {
            ordering,
            reachability: reach,
            core_distances: core,
            predecessor: pred,
            labels,
            clusters,
            n_clusters,
        }
    }
}

/// DBSCAN's clusters at `eps` from an OPTICS result (scikit-learn's `cluster_optics_dbscan`):
/// a new cluster starts at each point in order whose reachability exceeds `eps` and whose core
/// distance does not; points with both above `eps` are noise.
pub fn extract_dbscan(
    reachability: &[f64],
    core_distances: &[f64],
    ordering: &[usize],
    eps: f64,
) -> Vec<i64> {
    let mut labels = vec![0i64; reachability.len()];
    let mut count = 0i64;
    for &p in ordering {
        if reachability[p] > eps && core_distances[p] <= eps {
            count += 1;
        }
        labels[p] = count - 1;
    }
    for (p, l) in labels.iter_mut().enumerate() {
        if reachability[p] > eps && core_distances[p] > eps {
            *l = NOISE;
        }
    }
    labels
}

/// The end of a steep region starting at `start` (scikit-learn's `_extend_region`): steep
/// points extend it; at most `min_samples` consecutive non-steep points that do not turn
/// back are crossed.
fn extend_region(steep: &[bool], xward: &[bool], start: usize, min_samples: usize) -> usize {
    let mut non_xward = 0;
    let mut end = start;
    for index in start..steep.len() {
        if steep[index] {
            non_xward = 0;
            end = index;
        } else if !xward[index] {
            non_xward += 1;
            if non_xward > min_samples {
                break;
            }
        } else {
            return end;
        }
    }
    end
}

/// Schubert & Gertz's predecessor correction (scikit-learn's `_correct_predecessor`, with the
/// fix of PR #26459): shrink the end until the end point's predecessor lies in the cluster.
fn correct_predecessor(
    plot: &[f64],
    pred_plot: &[i64],
    ordering: &[usize],
    s: usize,
    mut e: usize,
) -> Option<(usize, usize)> {
    while s < e {
        if plot[s] > plot[e] {
            return Some((s, e));
        }
        let p_e = pred_plot[e];
        if ordering[s..e].iter().any(|&o| o as i64 == p_e) {
            return Some((s, e));
        }
        e -= 1;
    }
    None
}

/// A steep down area: its start, end and the maximum in between since.
struct SteepDown {
    start: usize,
    end: usize,
    mib: f64,
}

/// Xi clusters (scikit-learn's `_xi_cluster`) as inclusive positions in the ordering,
/// smaller clusters before the larger ones that contain them.
pub fn xi_clusters(
    reachability: &[f64],
    predecessor: &[i64],
    ordering: &[usize],
    xi: f64,
    min_samples: usize,
    min_cluster_size: usize,
    predecessor_correction: bool,
) -> Vec<(usize, usize)> {
    let n = ordering.len();
    let mut plot: Vec<f64> = ordering.iter().map(|&p| reachability[p]).collect();
    plot.push(f64::INFINITY);
    let pred_plot: Vec<i64> = ordering.iter().map(|&p| predecessor[p]).collect();
    let xc = 1.0 - xi;
    let ratio: Vec<f64> = (0..n).map(|i| plot[i] / plot[i + 1]).collect();
    let steep_up: Vec<bool> = ratio.iter().map(|&r| r <= xc).collect();
    let steep_down: Vec<bool> = ratio.iter().map(|&r| r >= 1.0 / xc).collect();
    let downward: Vec<bool> = ratio.iter().map(|&r| r > 1.0).collect();
    let upward: Vec<bool> = ratio.iter().map(|&r| r < 1.0).collect();
    let mut sdas: Vec<SteepDown> = Vec::new();
    let mut clusters = Vec::new();
    let mut index = 0usize;
    let mut mib = 0.0f64;
    let update_filter = |sdas: Vec<SteepDown>, mib: f64| -> Vec<SteepDown> {
        if mib.is_infinite() {
            return Vec::new();
        }
        sdas.into_iter()
            .filter(|s| mib <= plot[s.start] * xc)
            .map(|s| SteepDown {
                mib: s.mib.max(mib),
                ..s
            })
            .collect()
    };
    for steep_index in (0..n).filter(|&i| steep_up[i] || steep_down[i]) {
        if steep_index < index {
            continue;
        }
        mib = plot[index..=steep_index].iter().copied().fold(mib, f64::max);
        if steep_down[steep_index] {
            sdas = update_filter(sdas, mib);
            let end = extend_region(&steep_down, &upward, steep_index, min_samples);
            sdas.push(SteepDown {
                start: steep_index,
                end,
                mib: 0.0,
            });
            index = end + 1;
            mib = plot[index];
        } else {
            sdas = update_filter(sdas, mib);
            let u_start = steep_index;
            let u_end = extend_region(&steep_up, &downward, u_start, min_samples);
            index = u_end + 1;
            mib = plot[index];
            let mut u_clusters = Vec::new();
            for d in &sdas {
                let mut c_start = d.start;
                let mut c_end = u_end;
                if plot[c_end + 1] * xc < d.mib {
                    continue;
                }
                let d_max = plot[d.start];
                if d_max * xc >= plot[c_end + 1] {
                    while plot[c_start + 1] > plot[c_end + 1] && c_start < d.end {
                        c_start += 1;
                    }
                } else if plot[c_end + 1] * xc >= d_max {
                    while plot[c_end - 1] > d_max && c_end > u_start {
                        c_end -= 1;
                    }
                }
                if predecessor_correction {
                    match correct_predecessor(&plot, &pred_plot, ordering, c_start, c_end) {
                        Some((s, e)) => (c_start, c_end) = (s, e),
                        None => continue,
                    }
                }
                if c_end + 1 - c_start < min_cluster_size || c_start > d.end || c_end < u_start {
                    continue;
                }
                u_clusters.push((c_start, c_end));
            }
            u_clusters.reverse();
            clusters.extend(u_clusters);
        }
    }
    clusters
}

/// Labels from xi clusters (scikit-learn's `_extract_xi_labels`): each cluster, smallest
/// first, labels its range if none of it is labelled yet.
pub fn xi_labels(ordering: &[usize], clusters: &[(usize, usize)]) -> Vec<i64> {
    let mut by_position = vec![NOISE; ordering.len()];
    let mut label = 0;
    for &(s, e) in clusters {
        if by_position[s..=e].iter().all(|&l| l == NOISE) {
            by_position[s..=e].iter_mut().for_each(|l| *l = label);
            label += 1;
        }
    }
    let mut labels = vec![NOISE; ordering.len()];
    for (pos, &p) in ordering.iter().enumerate() {
        labels[p] = by_position[pos];
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_numpys() {
        for x in [
            0.5e-15,
            1.5e-15,
            2.5e-15,
            -2.5e-15,
            0.1 + 0.2,
            3.0,
            4.4,
            1e6 + 0.3e-9,
        ] {
            assert_eq!(round15(x), (x * 1e15).round_ties_even() / 1e15, "{x}");
        }
        for x in [
            1e-16,
            0.7e-15,
            0.123_456_789_012_345_67,
            5.000_000_000_000_001,
            1e300,
        ] {
            for r in [round15(x), round15(x * (1.0 - 1e-13)), round15(x * (1.0 + 1e-13))] {
                if rounds_above(x, r, false) {
                    assert!(round15(x) >= r, "{x} {r}");
                }
                if rounds_above(x, r, true) {
                    assert!(round15(x) > r, "{x} {r}");
                }
            }
        }
        assert_eq!(round15(0.1 + 0.2), 0.3);
        assert_eq!(round15(f64::INFINITY), f64::INFINITY);
        assert_eq!(round15(2.5e-16), 0.0);
        assert_eq!(round15(1.5e-15), 2e-15);
    }

    #[test]
    fn dbscan_extraction_rule() {
        // ordering 0..5; reachability inf, small, small, big, small; cores small except 3.
        let reach = [f64::INFINITY, 0.1, 0.2, 5.0, 0.1];
        let core = [0.1, 0.1, 0.1, 5.0, 0.1];
        let labels = extract_dbscan(&reach, &core, &[0, 1, 2, 3, 4], 1.0);
        assert_eq!(labels, vec![0, 0, 0, -1, 0]);
    }

    #[test]
    fn the_knee_of_the_reachability_separates_dense_from_sparse() {
        // 90 points reached at 0.10–0.19, 10 at 4–5.8: the knee is at the top of the dense part.
        let mut reachability: Vec<f64> = (0..90).map(|i| 0.1 + (i % 10) as f64 * 0.01).collect();
        reachability.extend((0..10).map(|i| 4.0 + i as f64 * 0.2));
        reachability.push(f64::INFINITY);
        let n = reachability.len();
        let model = OpticsModel {
            ordering: (0..n).collect(),
            reachability,
            core_distances: vec![0.1; n],
            predecessor: vec![-1; n],
            labels: vec![-1; n],
            clusters: vec![],
            n_clusters: 0,
        };
        let eps = model.knee_eps().unwrap();
        assert!((0.15..=0.195).contains(&eps), "{eps}");
        let flat = OpticsModel {
            reachability: vec![1.0; n],
            ..model
        };
        assert_eq!(flat.knee_eps(), None);
    }
}
