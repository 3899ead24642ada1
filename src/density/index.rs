//! Spatial indexes for radius and k-nearest-neighbour queries: a k-d tree (Bentley 1975) and
//! a ball tree (Omohundro 1989) for every built-in metric except squared Euclidean, and brute
//! force. Minkowski metrics are indexed as they are; cosine through unit vectors (where
//! `1 − cos = ‖u − v‖² / 2`) and haversine through points on the unit sphere in 3-D (where the
//! great-circle distance is `2R·asin(chord / 2)`), both with Euclidean bounds, so no
//! trigonometry runs while descending a tree.
//!
//! Every index computes the final distance of a candidate with the same function,
//! [`Metric::distance`], and includes it when `d ≤ eps`; the trees only prune with lower
//! bounds (with a relative slack of 1e-9, so rounding in a bound never drops a point). A
//! query therefore returns exactly the same neighbours, with the same distances, whatever the
//! index. Trees split at the median of the widest coordinate into leaves of at most
//! `leaf_size` (30, as scikit-learn) points.

use crate::error::{Error, Result};
use crate::metric::{haversine_prepared, GeoPoint, Metric, MetricKind, EARTH_RADIUS_KM};
use crate::scalar::Scalar;
use ndarray::{Array2, ArrayView2};
use std::collections::BinaryHeap;

/// Which index answers neighbour queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IndexKind {
    /// k-d tree up to 16 dimensions; above, a ball tree where a probe finds it prunes (its
    /// nearest-neighbour queries of a sample of the points read at most half of the points:
    /// the data has structure), brute force where it does not (and for squared Euclidean).
    #[default]
    Auto,
    /// k-d tree.
    KdTree,
    /// Ball tree (any built-in metric except squared Euclidean, which has no triangle
    /// inequality).
    BallTree,
    /// Every point against every query.
    Brute,
}

impl std::str::FromStr for IndexKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "auto" => IndexKind::Auto,
            "kdtree" | "kd_tree" => IndexKind::KdTree,
            "balltree" | "ball_tree" => IndexKind::BallTree,
            "brute" => IndexKind::Brute,
            other => {
                return Err(Error::param(
                    "index",
                    other,
                    "expected auto, kdtree, balltree or brute",
                ))
            }
        })
    }
}

/// Relative slack of the pruning bounds.
const SLACK: f64 = 1e-9;
/// Points per leaf.
const LEAF_SIZE: usize = 30;

#[derive(Clone, Debug)]
enum Bound {
    /// Per-coordinate bounding box.
    Box { lo: Vec<f64>, hi: Vec<f64> },
    /// Centre and radius (in the tree's metric).
    Ball { center: Vec<f64>, radius: f64 },
}

#[derive(Clone, Debug)]
struct Node {
    start: usize,
    end: usize,
    /// Children, or `None` for a leaf.
    children: Option<(usize, usize)>,
    bound: Bound,
}

/// A neighbour index over the rows of a matrix.
pub struct NeighborIndex<'a, F: Scalar> {
    x: ArrayView2<'a, F>,
    metric: MetricKind,
    kind: IndexKind,
    /// Point order of the tree (leaves are ranges of it).
    order: Vec<usize>,
    nodes: Vec<Node>,
    /// The coordinates trees bound, when not the rows themselves: unit vectors for cosine
    /// (zero rows stay zero), points on the unit sphere for haversine.
    embedding: Option<Array2<f64>>,
    /// Haversine: each point's latitude and longitude prepared once.
    geo: Vec<GeoPoint>,
}

/// The unit-sphere point of (latitude, longitude) in degrees.
fn sphere(lat: f64, lon: f64) -> [f64; 3] {
    let (phi, lambda) = (lat.to_radians(), lon.to_radians());
    [phi.cos() * lambda.cos(), phi.cos() * lambda.sin(), phi.sin()]
}

impl<'a, F: Scalar> NeighborIndex<'a, F> {
    /// Builds the index (`x` in standard layout, checked finite by the caller).
    pub fn build(x: ArrayView2<'a, F>, metric: MetricKind, kind: IndexKind) -> Result<Self> {
        metric.check_dim(x.ncols())?;
        crate::data::validate::check_metric_magnitude(x, &metric)?;
        if !x.is_standard_layout() {
            return Err(Error::Unsupported(
                "neighbour index needs rows in standard layout".into(),
            ));
        }
        let kind = match kind {
            _ if metric == MetricKind::SqEuclidean && kind != IndexKind::Auto && kind != IndexKind::Brute => {
                return Err(Error::param(
                    "index",
                    format!("{kind:?}").to_lowercase(),
                    "sqeuclidean has no triangle inequality; use euclidean or brute",
                ))
            }
            IndexKind::Auto if metric == MetricKind::SqEuclidean => IndexKind::Brute,
            IndexKind::Auto if x.ncols() > 16 => {
                let tree = Self::build(x, metric, IndexKind::BallTree)?;
                return Ok(if tree.prunes() {
                    tree
                } else {
                    Self::build(x, metric, IndexKind::Brute)?
                });
            }
            IndexKind::Auto => IndexKind::KdTree,
            k => k,
        };
        let tree = kind != IndexKind::Brute;
        let embedding = match metric {
            MetricKind::Cosine if tree => {
                let mut u = x.mapv(|v| v.to_f64_exact());
                for mut row in u.rows_mut() {
                    let norm = row.dot(&row).sqrt();
                    if norm > 0.0 {
                        row /= norm;
                    }
                }
                Some(u)
            }
            MetricKind::Haversine if tree => Some(Array2::from_shape_fn((x.nrows(), 3), |(i, j)| {
                sphere(x[[i, 0]].to_f64_exact(), x[[i, 1]].to_f64_exact())[j]
            })),
            _ => None,
        };
        let geo = if metric == MetricKind::Haversine {
            x.rows()
                .into_iter()
                .map(|r| GeoPoint::new(r[0].to_f64_exact(), r[1].to_f64_exact()))
                .collect()
        } else {
            Vec::new()
        };
        let mut index = NeighborIndex {
            x,
            metric,
            kind,
            order: (0..x.nrows()).collect(),
            nodes: Vec::new(),
            embedding,
            geo,
        };
        if kind != IndexKind::Brute {
            index.grow(0, x.nrows());
        }
        Ok(index)
    }

    /// The index actually used (what `Auto` chose).
    pub fn kind(&self) -> IndexKind {
        self.kind
    }

    /// Number of indexed points.
    pub fn len(&self) -> usize {
        self.x.nrows()
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.x.nrows() == 0
    }

    fn row(&self, i: usize) -> &[F] {
        let d = self.x.ncols();
        &self.x.as_slice().expect("standard layout")[i * d..(i + 1) * d]
    }

    /// Coordinates the tree bounds are computed in.
    fn tree_coords(&self, i: usize) -> Vec<f64> {
        match &self.embedding {
            Some(e) => e.row(i).to_vec(),
            None => self.row(i).iter().map(|v| v.to_f64_exact()).collect(),
        }
    }

    /// The metric of the tree's bounds.
    fn tree_metric(&self) -> MetricKind {
        if self.embedding.is_some() {
            MetricKind::Euclidean
        } else {
            self.metric
        }
    }

    /// The distance from a query to indexed point `j`: exactly [`Metric::distance`]`(q, row j)`
    /// (haversine through the prepared points, which is the same computation).
    fn distance(&self, q: &[F], qg: Option<&GeoPoint>, j: usize) -> f64 {
        match qg {
            Some(g) => F::from_f64_lossy(haversine_prepared(g, &self.geo[j])).to_f64_exact(),
            None => self.metric.distance(q, self.row(j)).to_f64_exact(),
        }
    }

    fn prepare(&self, q: &[F]) -> Option<GeoPoint> {
        (self.metric == MetricKind::Haversine)
            .then(|| GeoPoint::new(q[0].to_f64_exact(), q[1].to_f64_exact()))
    }

    /// Builds the subtree of `order[start..end]`; returns its node id.
    fn grow(&mut self, start: usize, end: usize) -> usize {
        let d = self.x.ncols();
        let coords: Vec<Vec<f64>> = self.order[start..end]
            .iter()
            .map(|&i| self.tree_coords(i))
            .collect();
        let mut lo = vec![f64::INFINITY; d];
        let mut hi = vec![f64::NEG_INFINITY; d];
        for c in &coords {
            for j in 0..d {
                lo[j] = lo[j].min(c[j]);
                hi[j] = hi[j].max(c[j]);
            }
        }
        let bound = match self.kind {
            IndexKind::KdTree => Bound::Box {
                lo: lo.clone(),
                hi: hi.clone(),
            },
            _ => {
                let center: Vec<f64> = (0..d)
                    .map(|j| coords.iter().map(|c| c[j]).sum::<f64>() / coords.len() as f64)
                    .collect();
                let metric = self.tree_metric();
                let radius = coords
                    .iter()
                    .map(|c| metric.distance(&center, c))
                    .fold(0.0, f64::max);
                Bound::Ball { center, radius }
            }
        };
        let id = self.nodes.len();
        self.nodes.push(Node {
            start,
            end,
            children: None,
            bound,
        });
        if end - start > LEAF_SIZE {
            let dim = (0..d)
                .max_by(|&a, &b| (hi[a] - lo[a]).total_cmp(&(hi[b] - lo[b])))
                .expect("d >= 1");
            let mid = start + (end - start) / 2;
            let embedding = self.embedding.as_ref();
            let x = self.x;
            let key = |i: usize| embedding.map_or_else(|| x[[i, dim]].to_f64_exact(), |e| e[[i, dim]]);
            self.order[start..end].select_nth_unstable_by(mid - start, |&a, &b| key(a).total_cmp(&key(b)));
            let left = self.grow(start, mid);
            let right = self.grow(mid, end);
            self.nodes[id].children = Some((left, right));
        }
        id
    }

    /// A lower bound on the (tree-metric) distance from `q` to any point of `node`.
    fn lower_bound(&self, node: &Node, q: &[f64]) -> f64 {
        match &node.bound {
            Bound::Box { lo, hi } => {
                let gaps = q
                    .iter()
                    .zip(lo.iter().zip(hi))
                    .map(|(&v, (&l, &h))| (l - v).max(v - h).max(0.0));
                match self.tree_metric() {
                    MetricKind::Manhattan | MetricKind::Minkowski(1.0) => gaps.sum(),
                    MetricKind::Minkowski(p) if p.is_infinite() => gaps.fold(0.0, f64::max),
                    MetricKind::Minkowski(p) if p != 2.0 => {
                        gaps.map(|g| g.powf(p)).sum::<f64>().powf(1.0 / p)
                    }
                    _ => gaps.map(|g| g * g).sum::<f64>().sqrt(),
                }
            }
            Bound::Ball { center, radius } => (self.tree_metric().distance(center, q) - radius).max(0.0),
        }
    }

    /// `eps` in the tree's metric: for cosine the Euclidean distance of unit vectors
    /// `√(2·eps)` (zero vectors sit at 1 from unit vectors, where cosine says 1, covered since
    /// √(2·eps) ≥ 1 whenever eps ≥ 1); for haversine the chord `2·sin(eps / 2R)`.
    fn tree_radius(&self, eps: f64) -> f64 {
        match (&self.embedding, self.metric) {
            (Some(_), MetricKind::Cosine) => (2.0 * eps.max(0.0)).sqrt(),
            (Some(_), MetricKind::Haversine) => {
                2.0 * (eps.max(0.0) / (2.0 * EARTH_RADIUS_KM))
                    .min(std::f64::consts::FRAC_PI_2)
                    .sin()
            }
            _ => eps,
        }
    }

    fn query_coords(&self, q: &[F]) -> Vec<f64> {
        let mut c: Vec<f64> = q.iter().map(|v| v.to_f64_exact()).collect();
        match (&self.embedding, self.metric) {
            (Some(_), MetricKind::Cosine) => {
                let norm = c.iter().map(|v| v * v).sum::<f64>().sqrt();
                if norm > 0.0 {
                    c.iter_mut().for_each(|v| *v /= norm);
                }
                c
            }
            (Some(_), MetricKind::Haversine) => sphere(c[0], c[1]).to_vec(),
            _ => c,
        }
    }

    /// Calls `visit(j, d)` for every indexed point `j` with `d = distance(q, j) ≤ eps`, until
    /// `visit` returns false. Order: the tree's, not by distance.
    pub fn for_each_within(&self, q: &[F], eps: f64, visit: impl FnMut(usize, f64) -> bool) {
        self.for_each_within_unless(q, eps, |_| false, visit)
    }

    /// As [`Self::for_each_within`], skipping (without computing their distance) the points
    /// for which `skip(j)` holds.
    pub fn for_each_within_unless(
        &self,
        q: &[F],
        eps: f64,
        skip: impl Fn(usize) -> bool,
        mut visit: impl FnMut(usize, f64) -> bool,
    ) {
        let qg = self.prepare(q);
        let mut check = |j: usize| -> bool {
            if skip(j) {
                return true;
            }
            let d = self.distance(q, qg.as_ref(), j);
            if d <= eps {
                visit(j, d)
            } else {
                true
            }
        };
        if self.kind == IndexKind::Brute {
            for j in 0..self.len() {
                if !check(j) {
                    return;
                }
            }
            return;
        }
        let qc = self.query_coords(q);
        let limit = self.tree_radius(eps) * (1.0 + SLACK) + f64::MIN_POSITIVE;
        let mut stack = vec![0usize];
        while let Some(id) = stack.pop() {
            let node = &self.nodes[id];
            if self.lower_bound(node, &qc) > limit {
                continue;
            }
            match node.children {
                Some((l, r)) => {
                    stack.push(r);
                    stack.push(l);
                }
                None => {
                    for &j in &self.order[node.start..node.end] {
                        if !check(j) {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// The points within `eps` of `q` with their distances, in increasing index order.
    pub fn within(&self, q: &[F], eps: f64) -> Vec<(usize, f64)> {
        let mut out = Vec::new();
        self.for_each_within(q, eps, |j, d| {
            out.push((j, d));
            true
        });
        out.sort_unstable_by_key(|p| p.0);
        out
    }

    /// Whether the tree prunes on this data: the 10 nearest neighbours of 32 points spread
    /// over the index read at most half of the points on average. In high dimensions a tree
    /// pays off on data with structure and costs about twice brute force on data without:
    /// at d = 20 to 64, the best tree took 0.28–0.68× brute force's time for DBSCAN and
    /// HDBSCAN on 10 Gaussian blobs (whose probes read 0.29–0.35 of the points) and 1.5–2.1×
    /// on one Gaussian (whose probes read all of them); paper-repro/results/index_crossover.md.
    fn prunes(&self) -> bool {
        const PROBES: usize = 32;
        let n = self.len();
        if n < 4 * LEAF_SIZE {
            return true;
        }
        let read: usize = (0..PROBES)
            .map(|p| {
                let mut read = 0;
                self.nearest_counting(self.point(p * n / PROBES), 10, &mut read);
                read
            })
            .sum();
        read <= PROBES * n / 2
    }

    /// The `k` nearest indexed points of `q` (the query itself included when indexed), by
    /// increasing distance, ties to the lower index.
    pub fn nearest(&self, q: &[F], k: usize) -> Vec<(usize, f64)> {
        self.nearest_counting(q, k, &mut 0)
    }

    /// [`NeighborIndex::nearest`], adding the number of points whose distance it computed
    /// to `read`.
    fn nearest_counting(&self, q: &[F], k: usize, read: &mut usize) -> Vec<(usize, f64)> {
        #[derive(PartialEq)]
        struct Cand(f64, usize);
        impl Eq for Cand {}
        impl PartialOrd for Cand {
            fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(o))
            }
        }
        impl Ord for Cand {
            fn cmp(&self, o: &Self) -> std::cmp::Ordering {
                self.0.total_cmp(&o.0).then(self.1.cmp(&o.1))
            }
        }
        let k = k.min(self.len());
        if k == 0 {
            return Vec::new();
        }
        let mut heap: BinaryHeap<Cand> = BinaryHeap::with_capacity(k + 1);
        let qg = self.prepare(q);
        let offer = |j: usize, heap: &mut BinaryHeap<Cand>| {
            let c = Cand(self.distance(q, qg.as_ref(), j), j);
            if heap.len() < k {
                heap.push(c);
            } else if c < *heap.peek().expect("k >= 1") {
                heap.pop();
                heap.push(c);
            }
        };
        if self.kind == IndexKind::Brute {
            *read += self.len();
            (0..self.len()).for_each(|j| offer(j, &mut heap));
        } else {
            let qc = self.query_coords(q);
            let mut stack = vec![0usize];
            while let Some(id) = stack.pop() {
                let node = &self.nodes[id];
                if heap.len() == k {
                    let worst = heap.peek().expect("k >= 1").0;
                    if self.lower_bound(node, &qc)
                        > self.tree_radius(worst) * (1.0 + SLACK) + f64::MIN_POSITIVE
                    {
                        continue;
                    }
                }
                match node.children {
                    Some((l, r)) => {
                        // Visit the nearer child first.
                        let (dl, dr) = (
                            self.lower_bound(&self.nodes[l], &qc),
                            self.lower_bound(&self.nodes[r], &qc),
                        );
                        if dl <= dr {
                            stack.push(r);
                            stack.push(l);
                        } else {
                            stack.push(l);
                            stack.push(r);
                        }
                    }
                    None => {
                        *read += node.end - node.start;
                        for &j in &self.order[node.start..node.end] {
                            offer(j, &mut heap);
                        }
                    }
                }
            }
        }
        let mut v: Vec<(usize, f64)> = heap.into_iter().map(|c| (c.1, c.0)).collect();
        v.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        v
    }

    /// Indexed point `i`'s coordinates (for queries of the indexed points themselves).
    pub fn point(&self, i: usize) -> &[F] {
        self.row(i)
    }

    /// The distance between indexed points `i` and `j`, as a query of point `i` finds it.
    pub(crate) fn distance_between(&self, i: usize, j: usize) -> f64 {
        let q = self.row(i);
        self.distance(q, self.prepare(q).as_ref(), j)
    }

    /// A summary of each tree node's points, by node id (none for brute force): `leaf` of a
    /// leaf's points, `merge` of its children's summaries; O(n) for the whole tree.
    pub(crate) fn node_summaries<T: Clone>(
        &self,
        leaf: impl Fn(&[usize]) -> T,
        merge: impl Fn(&T, &T) -> T,
    ) -> Vec<T> {
        // Children have larger ids than their parent (the tree is grown depth first), so in
        // decreasing id order they come first: `reversed[last - id]` is node id's.
        let last = self.nodes.len().saturating_sub(1);
        let mut reversed: Vec<T> = Vec::with_capacity(self.nodes.len());
        for id in (0..self.nodes.len()).rev() {
            let node = &self.nodes[id];
            let t = match node.children {
                Some((l, r)) => merge(&reversed[last - l], &reversed[last - r]),
                None => leaf(&self.order[node.start..node.end]),
            };
            reversed.push(t);
        }
        reversed.reverse();
        reversed
    }

    /// A lower bound on the distance between points whose tree-metric distance is at least
    /// `t` (the inverse of [`Self::tree_radius`]), less the slack.
    fn distance_floor(&self, t: f64) -> f64 {
        let t = t * (1.0 - SLACK);
        match (&self.embedding, self.metric) {
            (Some(_), MetricKind::Cosine) => t * t / 2.0,
            (Some(_), MetricKind::Haversine) => 2.0 * EARTH_RADIUS_KM * (t / 2.0).min(1.0).asin(),
            _ => t,
        }
    }

    /// The indexed point `j` with the lowest `score(j, distance(q, j))` (`None`: not a
    /// candidate), found by a depth-first descent, nearer child first, that skips a node when
    /// `node_floor(node, lower bound on its distances)` — a lower bound on its points' scores,
    /// `None` to skip it outright — is no lower than the best score so far. The descent stops
    /// once a score reaches `floor`, a lower bound on every score. Deterministic; among equal
    /// scores the first found wins.
    pub(crate) fn lowest_score(
        &self,
        q: &[F],
        floor: f64,
        node_floor: impl Fn(usize, f64) -> Option<f64>,
        score: impl Fn(usize, f64) -> Option<f64>,
    ) -> Option<(usize, f64)> {
        let qg = self.prepare(q);
        let mut best: Option<(usize, f64)> = None;
        // Offers point j; true once the best reaches the floor.
        let offer = |j: usize, best: &mut Option<(usize, f64)>| {
            if let Some(s) = score(j, self.distance(q, qg.as_ref(), j)) {
                if best.is_none_or(|b| s < b.1) {
                    *best = Some((j, s));
                }
            }
            best.is_some_and(|b| b.1 <= floor)
        };
        if self.kind == IndexKind::Brute {
            for j in 0..self.len() {
                if offer(j, &mut best) {
                    break;
                }
            }
            return best;
        }
        let qc = self.query_coords(q);
        let mut stack = vec![(0usize, 0.0f64)];
        'descent: while let Some((id, lb)) = stack.pop() {
            let Some(f) = node_floor(id, self.distance_floor(lb)) else {
                continue;
            };
            if best.is_some_and(|b| f >= b.1) {
                continue;
            }
            let node = &self.nodes[id];
            match node.children {
                Some((l, r)) => {
                    let (dl, dr) = (
                        self.lower_bound(&self.nodes[l], &qc),
                        self.lower_bound(&self.nodes[r], &qc),
                    );
                    if dl <= dr {
                        stack.push((r, dr));
                        stack.push((l, dl));
                    } else {
                        stack.push((l, dl));
                        stack.push((r, dr));
                    }
                }
                None => {
                    for &j in &self.order[node.start..node.end] {
                        if offer(j, &mut best) {
                            break 'descent;
                        }
                    }
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn points(n: usize, d: usize, seed: u64) -> Array2<f64> {
        let mut rng = crate::rng::SeededRng::seed_from_u64(seed);
        // Clustered, with duplicates, so that leaves are uneven and ties exist.
        Array2::from_shape_fn((n, d), |(i, _)| ((i % 7) as f64) * 3.0 + rng.random::<f64>())
    }

    /// Every index returns the brute-force answer, for radius and k-nearest queries.
    #[test]
    fn trees_equal_brute_force() {
        let x = points(700, 3, 1);
        let geo = Array2::from_shape_fn((500, 2), |(i, j)| {
            let v = ((i * 7919 + j * 104729) % 1000) as f64 / 1000.0;
            if j == 0 {
                35.0 + 2.0 * v
            } else {
                -80.0 + 3.0 * v
            }
        });
        let cases: Vec<(MetricKind, &Array2<f64>, f64, Vec<IndexKind>)> = vec![
            (
                MetricKind::Euclidean,
                &x,
                1.3,
                vec![IndexKind::KdTree, IndexKind::BallTree],
            ),
            (
                MetricKind::Manhattan,
                &x,
                2.0,
                vec![IndexKind::KdTree, IndexKind::BallTree],
            ),
            (
                MetricKind::Minkowski(3.0),
                &x,
                1.1,
                vec![IndexKind::KdTree, IndexKind::BallTree],
            ),
            (
                MetricKind::Minkowski(f64::INFINITY),
                &x,
                0.9,
                vec![IndexKind::KdTree, IndexKind::BallTree],
            ),
            (
                MetricKind::Cosine,
                &x,
                0.01,
                vec![IndexKind::KdTree, IndexKind::BallTree],
            ),
            (
                MetricKind::Haversine,
                &geo,
                25.0,
                vec![IndexKind::KdTree, IndexKind::BallTree],
            ),
        ];
        for (metric, data, eps, kinds) in cases {
            let brute = NeighborIndex::build(data.view(), metric, IndexKind::Brute).unwrap();
            for kind in kinds {
                let tree = NeighborIndex::build(data.view(), metric, kind).unwrap();
                for i in (0..data.nrows()).step_by(13) {
                    let q = data.row(i).to_vec();
                    assert_eq!(
                        tree.within(&q, eps),
                        brute.within(&q, eps),
                        "{metric} {kind:?} radius {i}"
                    );
                    let (a, b) = (tree.nearest(&q, 9), brute.nearest(&q, 9));
                    assert_eq!(a, b, "{metric} {kind:?} knn {i}");
                }
            }
        }
    }

    #[test]
    fn boundary_is_inclusive_and_kinds_are_checked() {
        let x = ndarray::array![[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]];
        for kind in [IndexKind::KdTree, IndexKind::BallTree, IndexKind::Brute] {
            let idx = NeighborIndex::build(x.view(), MetricKind::Euclidean, kind).unwrap();
            assert_eq!(idx.within(&[0.0, 0.0], 5.0), vec![(0, 0.0), (1, 5.0)]);
        }
        assert!(NeighborIndex::build(x.view(), MetricKind::SqEuclidean, IndexKind::KdTree).is_err());
        assert!(NeighborIndex::build(x.view(), MetricKind::SqEuclidean, IndexKind::BallTree).is_err());
        let auto = NeighborIndex::build(x.view(), MetricKind::Haversine, IndexKind::Auto).unwrap();
        assert_eq!(auto.kind(), IndexKind::KdTree);
    }
}
