//! Spatial indexes for radius and k-nearest-neighbour queries: a k-d tree (Bentley 1975) and
//! a ball tree (Omohundro 1989) for every built-in metric except squared Euclidean, and brute
//! force. Minkowski metrics are indexed as they are; cosine through unit vectors (where
//! `1 − cos = ‖u − v‖² / 2`) and haversine through points on the unit sphere in 3-D (where the
//! great-circle distance is `2R·asin(chord / 2)`), both with Euclidean bounds, so no
//! trigonometry runs while descending a tree.
//!
//! Every index computes the final distance of a candidate with the same function (one
//! sequential loop over the coordinates for the Minkowski family, as scikit-learn's trees;
//! [`Metric::distance`] for the others) and includes it when `d ≤ eps`; the trees only prune
//! with lower bounds (with a relative slack of 1e-9, so rounding in a bound never drops a
//! point). A query therefore returns exactly the same neighbours, with the same distances,
//! whatever the index. Trees split at the median of the widest coordinate into leaves of at
//! most `leaf_size` (30, as scikit-learn) points, whose rows the index copies side by side in
//! the tree's order; the queries are compiled for each dimension up to 8. Euclidean searches
//! over a k-d tree compare squared node bounds and squared distances (with the slack on the
//! squares) and take a square root only for what may be an answer.

use crate::error::{Error, Result};
use crate::metric::{haversine_prepared, GeoPoint, Metric, MetricKind, EARTH_RADIUS_KM};
use crate::scalar::Scalar;
use ndarray::ArrayView2;
use std::borrow::Cow;

/// Calls `self.$f::<D>(args)` with the dimension `D` known when compiled for plain coordinates
/// of 1 to 8 dimensions, `D = 0` (read at run time) otherwise.
macro_rules! at_dim {
    ($self:ident, $f:ident($($arg:expr),*)) => {
        match (!$self.embedded, $self.x.ncols()) {
            (true, 1) => $self.$f::<1>($($arg),*),
            (true, 2) => $self.$f::<2>($($arg),*),
            (true, 3) => $self.$f::<3>($($arg),*),
            (true, 4) => $self.$f::<4>($($arg),*),
            (true, 5) => $self.$f::<5>($($arg),*),
            (true, 6) => $self.$f::<6>($($arg),*),
            (true, 8) => $self.$f::<8>($($arg),*),
            _ => $self.$f::<0>($($arg),*),
        }
    };
}

/// Which index answers neighbour queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IndexKind {
    /// k-d tree up to 16 dimensions; above, a tree (k-d up to 30 dimensions for Euclidean
    /// distances, else ball) where a probe finds it prunes (its nearest-neighbour queries of a
    /// sample of the points read at most half of the points: the data has structure), brute
    /// force where it does not (and for squared Euclidean).
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

/// A tree node: the points at tree positions `start..end`, and its children.
#[derive(Clone, Copy, Debug)]
struct Node {
    start: usize,
    end: usize,
    /// Children, or `None` for a leaf.
    children: Option<(usize, usize)>,
}

/// A neighbour index over the rows of a matrix.
pub struct NeighborIndex<'a, F: Scalar> {
    x: ArrayView2<'a, F>,
    metric: MetricKind,
    kind: IndexKind,
    /// The point at each tree position (leaves are ranges of positions).
    order: Vec<usize>,
    /// The rows in tree order, so that a leaf's points lie side by side (the rows themselves
    /// for brute force, whose order is the rows').
    rows: Cow<'a, [F]>,
    nodes: Vec<Node>,
    /// Each node's bound in the tree's coordinates, `2 · dt` numbers per node: a k-d tree's
    /// box (lowest, then highest coordinates), a ball tree's centre then radius.
    bounds: Vec<f64>,
    /// Dimension of the tree's coordinates.
    dt: usize,
    /// Whether the trees bound other coordinates than the rows: unit vectors for cosine (zero
    /// rows stay zero), points on the unit sphere for haversine.
    embedded: bool,
    /// Haversine: each point's latitude and longitude prepared once, in tree order.
    geo: Vec<GeoPoint>,
}

/// The buffers of a k-nearest query ([`NeighborIndex::nearest_reusing`]).
#[derive(Default)]
pub(crate) struct NearestScratch {
    /// The answer: (point, distance), nearest first.
    best: Vec<(usize, f64)>,
    /// The descent's nodes to visit, with their lower bounds.
    stack: Vec<(usize, f64)>,
    /// The query in the tree's coordinates.
    coords: Vec<f64>,
}

/// The unit-sphere point of (latitude, longitude) in degrees.
fn sphere(lat: f64, lon: f64) -> [f64; 3] {
    let (phi, lambda) = (lat.to_radians(), lon.to_radians());
    [phi.cos() * lambda.cos(), phi.cos() * lambda.sin(), phi.sin()]
}

/// The distance between two rows as every query of an index computes it: Euclidean,
/// squared Euclidean, Manhattan and Chebyshev as one sequential loop over the coordinates
/// (the sums scikit-learn's trees compute, with no call through the SIMD table, whose set-up
/// dominates at a few dimensions), the others by [`Metric::distance`].
#[inline(always)]
fn row_distance<F: Scalar>(metric: MetricKind, a: &[F], b: &[F]) -> f64 {
    let squares = || {
        a.iter().zip(b).fold(F::zero(), |s, (&x, &y)| {
            let t = x - y;
            s + t * t
        })
    };
    match metric {
        MetricKind::Euclidean => squares().sqrt().to_f64_exact(),
        MetricKind::SqEuclidean => squares().to_f64_exact(),
        MetricKind::Manhattan | MetricKind::Minkowski(1.0) => a
            .iter()
            .zip(b)
            .fold(F::zero(), |s, (&x, &y)| s + (x - y).abs())
            .to_f64_exact(),
        MetricKind::Minkowski(p) if p.is_infinite() => a
            .iter()
            .zip(b)
            .fold(F::zero(), |m, (&x, &y)| m.max((x - y).abs()))
            .to_f64_exact(),
        _ => metric.distance(a, b).to_f64_exact(),
    }
}

impl<'a, F: Scalar> NeighborIndex<'a, F> {
    /// Builds the index (`x` in standard layout, checked finite by the caller).
    pub fn build(x: ArrayView2<'a, F>, metric: MetricKind, kind: IndexKind) -> Result<Self> {
        metric.check_dim(x.ncols())?;
        crate::data::validate::check_metric_magnitude(x, &metric)?;
        let Some(slice) = x.to_slice() else {
            return Err(Error::Unsupported(
                "neighbour index needs rows in standard layout".into(),
            ));
        };
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
                // The k-d tree's boxes still beat the ball tree's spheres for Euclidean
                // distances at d = 20 (DBSCAN 0.278 s against 0.422, HDBSCAN 0.63 against
                // 1.14, 10,000 blobs, one thread), no longer at d = 40.
                let kind = if metric == MetricKind::Euclidean && x.ncols() <= 30 {
                    IndexKind::KdTree
                } else {
                    IndexKind::BallTree
                };
                let tree = Self::build(x, metric, kind)?;
                return Ok(if tree.prunes() {
                    tree
                } else {
                    Self::build(x, metric, IndexKind::Brute)?
                });
            }
            IndexKind::Auto => IndexKind::KdTree,
            k => k,
        };
        let (n, d) = x.dim();
        let geo_of = |i: usize| GeoPoint::new(x[[i, 0]].to_f64_exact(), x[[i, 1]].to_f64_exact());
        let haversine = metric == MetricKind::Haversine;
        let mut index = NeighborIndex {
            x,
            metric,
            kind,
            order: (0..n).collect(),
            rows: Cow::Borrowed(slice),
            nodes: Vec::new(),
            bounds: Vec::new(),
            dt: d,
            embedded: false,
            geo: Vec::new(),
        };
        if kind == IndexKind::Brute {
            if haversine {
                index.geo = (0..n).map(geo_of).collect();
            }
            return Ok(index);
        }
        // The tree's coordinates of each point, by point.
        let coords: Vec<f64> = match metric {
            MetricKind::Cosine => {
                let mut u: Vec<f64> = slice.iter().map(|v| v.to_f64_exact()).collect();
                for row in u.chunks_exact_mut(d) {
                    let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
                    if norm > 0.0 {
                        row.iter_mut().for_each(|v| *v /= norm);
                    }
                }
                index.embedded = true;
                u
            }
            MetricKind::Haversine => {
                index.embedded = true;
                index.dt = 3;
                (0..n)
                    .flat_map(|i| sphere(x[[i, 0]].to_f64_exact(), x[[i, 1]].to_f64_exact()))
                    .collect()
            }
            _ => slice.iter().map(|v| v.to_f64_exact()).collect(),
        };
        index.grow(&coords, 0, n);
        index.rows = Cow::Owned(
            index
                .order
                .iter()
                .flat_map(|&i| &slice[i * d..(i + 1) * d])
                .copied()
                .collect(),
        );
        if haversine {
            index.geo = index.order.iter().map(|&i| geo_of(i)).collect();
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

    /// The metric of the tree's bounds.
    fn tree_metric(&self) -> MetricKind {
        if self.embedded {
            MetricKind::Euclidean
        } else {
            self.metric
        }
    }

    /// The distance from a query to the point at tree position `p`: [`row_distance`], or for
    /// haversine the same computation through the prepared points.
    #[inline(always)]
    fn distance_at<const D: usize>(&self, q: &[F], qg: Option<&GeoPoint>, p: usize) -> f64 {
        match qg {
            Some(g) => F::from_f64_lossy(haversine_prepared(g, &self.geo[p])).to_f64_exact(),
            None => {
                let d = self.dim::<D>();
                row_distance(self.metric, &q[..d], &self.rows[p * d..(p + 1) * d])
            }
        }
    }

    /// The dimension: `D`, known when compiled, or the data's when `D` is 0. The queries are
    /// compiled for each small dimension of plain coordinates (see [`Self::at_dim`]), where
    /// the loops over coordinates unroll.
    #[inline(always)]
    fn dim<const D: usize>(&self) -> usize {
        if D == 0 {
            self.x.ncols()
        } else {
            D
        }
    }

    /// The tree's dimension, as [`Self::dim`].
    #[inline(always)]
    fn tree_dim<const D: usize>(&self) -> usize {
        if D == 0 {
            self.dt
        } else {
            D
        }
    }

    fn prepare(&self, q: &[F]) -> Option<GeoPoint> {
        (self.metric == MetricKind::Haversine)
            .then(|| GeoPoint::new(q[0].to_f64_exact(), q[1].to_f64_exact()))
    }

    /// Builds the subtree of tree positions `start..end` from the points' tree coordinates
    /// `coords` (by point); returns its node id.
    fn grow(&mut self, coords: &[f64], start: usize, end: usize) -> usize {
        let dt = self.dt;
        let point = |i: usize| &coords[i * dt..(i + 1) * dt];
        let mut lo = vec![f64::INFINITY; dt];
        let mut hi = vec![f64::NEG_INFINITY; dt];
        for &i in &self.order[start..end] {
            for (j, &c) in point(i).iter().enumerate() {
                lo[j] = lo[j].min(c);
                hi[j] = hi[j].max(c);
            }
        }
        let id = self.nodes.len();
        self.nodes.push(Node {
            start,
            end,
            children: None,
        });
        if self.kind == IndexKind::KdTree {
            self.bounds.extend_from_slice(&lo);
            self.bounds.extend_from_slice(&hi);
        } else {
            let mut center = vec![0.0; dt];
            for &i in &self.order[start..end] {
                center.iter_mut().zip(point(i)).for_each(|(s, &c)| *s += c);
            }
            center.iter_mut().for_each(|s| *s /= (end - start) as f64);
            let metric = self.tree_metric();
            let radius = self.order[start..end]
                .iter()
                .map(|&i| metric.distance(&center, point(i)))
                .fold(0.0, f64::max);
            self.bounds.extend_from_slice(&center);
            self.bounds.push(radius);
            self.bounds.extend(std::iter::repeat_n(0.0, dt - 1));
        }
        if end - start > LEAF_SIZE {
            let dim = (0..dt)
                .max_by(|&a, &b| (hi[a] - lo[a]).total_cmp(&(hi[b] - lo[b])))
                .expect("d >= 1");
            let mid = start + (end - start) / 2;
            let key = |i: usize| coords[i * dt + dim];
            self.order[start..end].select_nth_unstable_by(mid - start, |&a, &b| key(a).total_cmp(&key(b)));
            let left = self.grow(coords, start, mid);
            let right = self.grow(coords, mid, end);
            self.nodes[id].children = Some((left, right));
        }
        id
    }

    /// A lower bound on the (tree-metric) distance from `q` to any point of node `id`.
    #[inline(always)]
    fn lower_bound<const D: usize>(&self, id: usize, q: &[f64]) -> f64 {
        let dt = self.tree_dim::<D>();
        let q = &q[..dt];
        let b = &self.bounds[2 * dt * id..2 * dt * (id + 1)];
        if self.kind == IndexKind::BallTree {
            let (center, radius) = (&b[..dt], b[dt]);
            return (self.tree_metric().distance(center, q) - radius).max(0.0);
        }
        let (lo, hi) = (&b[..dt], &b[dt..]);
        let gap = |j: usize| (lo[j] - q[j]).max(q[j] - hi[j]).max(0.0);
        let mut acc = 0.0;
        match self.tree_metric() {
            MetricKind::Manhattan | MetricKind::Minkowski(1.0) => {
                for j in 0..dt {
                    acc += gap(j);
                }
                acc
            }
            MetricKind::Minkowski(p) if p.is_infinite() => {
                for j in 0..dt {
                    acc = f64::max(acc, gap(j));
                }
                acc
            }
            MetricKind::Minkowski(p) if p != 2.0 => {
                for j in 0..dt {
                    acc += gap(j).powf(p);
                }
                acc.powf(1.0 / p)
            }
            _ => {
                for j in 0..dt {
                    let g = gap(j);
                    acc += g * g;
                }
                acc.sqrt()
            }
        }
    }

    /// The squared Euclidean distance from `q` to the box of k-d tree node `id`: the square of
    /// [`Self::lower_bound`]'s Euclidean bound, without its square root.
    #[inline(always)]
    fn gap_squares<const D: usize>(&self, id: usize, q: &[f64]) -> f64 {
        let dt = self.tree_dim::<D>();
        let b = &self.bounds[2 * dt * id..2 * dt * (id + 1)];
        let (lo, hi) = (&b[..dt], &b[dt..]);
        let mut acc = 0.0;
        for j in 0..dt {
            let g = (lo[j] - q[j]).max(q[j] - hi[j]).max(0.0);
            acc += g * g;
        }
        acc
    }

    /// `eps` in the tree's metric: for cosine the Euclidean distance of unit vectors
    /// `√(2·eps)` (zero vectors sit at 1 from unit vectors, where cosine says 1, covered since
    /// √(2·eps) ≥ 1 whenever eps ≥ 1); for haversine the chord `2·sin(eps / 2R)`.
    fn tree_radius(&self, eps: f64) -> f64 {
        match (self.embedded, self.metric) {
            (true, MetricKind::Cosine) => (2.0 * eps.max(0.0)).sqrt(),
            (true, MetricKind::Haversine) => {
                2.0 * (eps.max(0.0) / (2.0 * EARTH_RADIUS_KM))
                    .min(std::f64::consts::FRAC_PI_2)
                    .sin()
            }
            _ => eps,
        }
    }

    fn query_coords(&self, q: &[F]) -> Vec<f64> {
        let mut c = Vec::new();
        self.query_coords_into(q, &mut c);
        c
    }

    /// The query's coordinates in the tree's space, into `c`.
    fn query_coords_into(&self, q: &[F], c: &mut Vec<f64>) {
        c.clear();
        c.extend(q.iter().map(|v| v.to_f64_exact()));
        match (self.embedded, self.metric) {
            (true, MetricKind::Cosine) => {
                let norm = c.iter().map(|v| v * v).sum::<f64>().sqrt();
                if norm > 0.0 {
                    c.iter_mut().for_each(|v| *v /= norm);
                }
            }
            (true, MetricKind::Haversine) => {
                let s = sphere(c[0], c[1]);
                c.clear();
                c.extend_from_slice(&s);
            }
            _ => {}
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
        visit: impl FnMut(usize, f64) -> bool,
    ) {
        at_dim!(self, within_at(q, eps, skip, visit))
    }

    fn within_at<const D: usize>(
        &self,
        q: &[F],
        eps: f64,
        skip: impl Fn(usize) -> bool,
        mut visit: impl FnMut(usize, f64) -> bool,
    ) {
        let qg = self.prepare(q);
        let mut scan = |start: usize, end: usize| -> bool {
            for p in start..end {
                let j = self.order[p];
                if skip(j) {
                    continue;
                }
                let d = self.distance_at::<D>(q, qg.as_ref(), p);
                if d <= eps && !visit(j, d) {
                    return false;
                }
            }
            true
        };
        if self.kind == IndexKind::Brute {
            scan(0, self.len());
            return;
        }
        let qc = self.query_coords(q);
        let limit = self.tree_radius(eps) * (1.0 + SLACK) + f64::MIN_POSITIVE;
        let mut stack = Vec::with_capacity(64);
        stack.push(0usize);
        while let Some(id) = stack.pop() {
            if self.lower_bound::<D>(id, &qc) > limit {
                continue;
            }
            let node = self.nodes[id];
            match node.children {
                Some((l, r)) => {
                    stack.push(r);
                    stack.push(l);
                }
                None => {
                    if !scan(node.start, node.end) {
                        return;
                    }
                }
            }
        }
    }

    /// Tree nodes (0 for brute force); node ids run `0..node_count()`.
    pub(crate) fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// A walk over the points near `q` that keeps `bound[node]`, an upper bound on a value of
    /// each node's points, so that later walks can skip nodes. A node is skipped when
    /// `skip_node(floor, bound[node])`, `floor` being a lower bound on its points' distances
    /// from `q`; in a visited leaf each point `j` with `!skip(j)` is offered as
    /// `visit(j, distance)`, which returns its value (`-∞`: none); the leaf's bound becomes
    /// the largest value returned and a visited inner node's the larger of its children's.
    /// Points that `skip` must hold no value. Brute force offers every point and keeps no
    /// bounds.
    pub(crate) fn walk_bounded(
        &self,
        q: &[F],
        bound: &mut [f64],
        skip_node: impl Fn(f64, f64) -> bool,
        skip: impl Fn(usize) -> bool,
        visit: impl FnMut(usize, f64) -> f64,
    ) {
        at_dim!(self, walk_bounded_at(q, bound, skip_node, skip, visit))
    }

    fn walk_bounded_at<const D: usize>(
        &self,
        q: &[F],
        bound: &mut [f64],
        skip_node: impl Fn(f64, f64) -> bool,
        skip: impl Fn(usize) -> bool,
        mut visit: impl FnMut(usize, f64) -> f64,
    ) {
        let qg = self.prepare(q);
        let mut scan = |start: usize, end: usize| -> f64 {
            let mut top = f64::NEG_INFINITY;
            for p in start..end {
                let j = self.order[p];
                if !skip(j) {
                    top = top.max(visit(j, self.distance_at::<D>(q, qg.as_ref(), p)));
                }
            }
            top
        };
        if self.kind == IndexKind::Brute {
            scan(0, self.len());
            return;
        }
        let qc = self.query_coords(q);
        // (node, whether its children have been walked)
        let mut stack = Vec::with_capacity(64);
        stack.push((0usize, false));
        while let Some((id, walked)) = stack.pop() {
            let node = self.nodes[id];
            match node.children {
                Some((l, r)) if walked => bound[id] = bound[l].max(bound[r]),
                _ if skip_node(self.distance_floor(self.lower_bound::<D>(id, &qc)), bound[id]) => {}
                Some((l, r)) => {
                    stack.push((id, true));
                    stack.push((r, false));
                    stack.push((l, false));
                }
                None => bound[id] = scan(node.start, node.end),
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
                self.nearest_counting(
                    self.point(p * n / PROBES),
                    10,
                    &mut read,
                    &mut NearestScratch::default(),
                );
                read
            })
            .sum();
        read <= PROBES * n / 2
    }

    /// The `k` nearest indexed points of `q` (the query itself included when indexed), by
    /// increasing distance, ties to the lower index.
    pub fn nearest(&self, q: &[F], k: usize) -> Vec<(usize, f64)> {
        let mut scratch = NearestScratch::default();
        self.nearest_counting(q, k, &mut 0, &mut scratch);
        scratch.best
    }

    /// [`NeighborIndex::nearest`] into the buffers of `scratch`, reused from one query to the
    /// next.
    pub(crate) fn nearest_reusing<'s>(
        &self,
        q: &[F],
        k: usize,
        scratch: &'s mut NearestScratch,
    ) -> &'s [(usize, f64)] {
        self.nearest_counting(q, k, &mut 0, scratch);
        &scratch.best
    }

    /// [`NeighborIndex::nearest`] into `scratch.best`, adding the number of points whose
    /// distance it computed to `read`.
    fn nearest_counting(&self, q: &[F], k: usize, read: &mut usize, scratch: &mut NearestScratch) {
        at_dim!(self, nearest_at(q, k, read, scratch))
    }

    fn nearest_at<const D: usize>(&self, q: &[F], k: usize, read: &mut usize, scratch: &mut NearestScratch) {
        let k = k.min(self.len());
        let NearestScratch { best, stack, coords } = scratch;
        // The best so far, sorted by (distance, index): k is small, so an insertion into a
        // sorted array beats a heap.
        best.clear();
        if k == 0 {
            return;
        }
        let qg = self.prepare(q);
        let euclidean = self.metric == MetricKind::Euclidean;
        // Euclidean: a point whose squared distance is clearly beyond the k-th best (by more
        // than F's rounding) is passed over before its square root is taken.
        let beyond_of = |best: &[(usize, f64)]| {
            if euclidean && best.len() == k {
                best[k - 1].1 * best[k - 1].1 * (1.0 + 1e-6)
            } else {
                f64::INFINITY
            }
        };
        let mut scan = |start: usize, end: usize, best: &mut Vec<(usize, f64)>| {
            let d = self.dim::<D>();
            *read += end - start;
            let mut beyond = beyond_of(best);
            for p in start..end {
                let dist = if euclidean {
                    let squares =
                        q[..d]
                            .iter()
                            .zip(&self.rows[p * d..(p + 1) * d])
                            .fold(F::zero(), |s, (&x, &y)| {
                                let t = x - y;
                                s + t * t
                            });
                    if squares.to_f64_exact() > beyond {
                        continue;
                    }
                    squares.sqrt().to_f64_exact()
                } else {
                    self.distance_at::<D>(q, qg.as_ref(), p)
                };
                let j = self.order[p];
                let worse = |b: &(usize, f64)| dist < b.1 || (dist == b.1 && j < b.0);
                if best.len() == k && !worse(&best[k - 1]) {
                    continue;
                }
                // Insertion by swaps: k is small, and a memmove call costs more.
                if best.len() < k {
                    best.push((j, dist));
                } else {
                    best[k - 1] = (j, dist);
                }
                let mut at = best.len() - 1;
                while at > 0 && worse(&best[at - 1]) {
                    best.swap(at - 1, at);
                    at -= 1;
                }
                beyond = beyond_of(best);
            }
        };
        if self.kind == IndexKind::Brute {
            scan(0, self.len(), best);
            return;
        }
        self.query_coords_into(q, coords);
        // Euclidean k-d tree: squared bounds against the squared k-th best (with a slack
        // above the rounding of either), no square root per node.
        let squared = euclidean && self.kind == IndexKind::KdTree;
        stack.clear();
        stack.push((0usize, 0.0f64));
        while let Some((id, lb)) = stack.pop() {
            if best.len() == k {
                let r = best[k - 1].1;
                let prune = if squared {
                    lb > r * r * (1.0 + 4.0 * SLACK) + f64::MIN_POSITIVE
                } else {
                    lb > self.tree_radius(r) * (1.0 + SLACK) + f64::MIN_POSITIVE
                };
                if prune {
                    continue;
                }
            }
            let node = self.nodes[id];
            match node.children {
                Some((l, r)) => {
                    // Visit the nearer child first.
                    let (dl, dr) = if squared {
                        (self.gap_squares::<D>(l, coords), self.gap_squares::<D>(r, coords))
                    } else {
                        (self.lower_bound::<D>(l, coords), self.lower_bound::<D>(r, coords))
                    };
                    if dl <= dr {
                        stack.push((r, dr));
                        stack.push((l, dl));
                    } else {
                        stack.push((l, dl));
                        stack.push((r, dr));
                    }
                }
                None => scan(node.start, node.end, best),
            }
        }
    }

    /// The points in the tree's order (neighbouring points one after another).
    pub(crate) fn tree_order(&self) -> &[usize] {
        &self.order
    }

    /// Indexed point `i`'s coordinates (for queries of the indexed points themselves).
    pub fn point(&self, i: usize) -> &[F] {
        self.row(i)
    }

    /// The coordinates of the point at tree position `p` (the same numbers as its row, read
    /// from the index's copy in tree order).
    pub(crate) fn point_at(&self, p: usize) -> &[F] {
        let d = self.x.ncols();
        &self.rows[p * d..(p + 1) * d]
    }

    /// The distance between indexed points `i` and `j`, as a query of point `i` finds it.
    #[cfg(test)]
    pub(crate) fn distance_between(&self, i: usize, j: usize) -> f64 {
        let (a, b) = (self.row(i), self.row(j));
        match self.metric {
            MetricKind::Haversine => F::from_f64_lossy(haversine_prepared(
                &GeoPoint::new(a[0].to_f64_exact(), a[1].to_f64_exact()),
                &GeoPoint::new(b[0].to_f64_exact(), b[1].to_f64_exact()),
            ))
            .to_f64_exact(),
            metric => row_distance(metric, a, b),
        }
    }

    /// A summary of each tree node's points, by node id (none for brute force): `leaf` of a
    /// leaf's range of tree positions, `merge` of its children's summaries; O(n) for the whole
    /// tree.
    pub(crate) fn node_summaries<T: Clone>(
        &self,
        leaf: impl Fn(std::ops::Range<usize>) -> T,
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
                None => leaf(node.start..node.end),
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
        match (self.embedded, self.metric) {
            (true, MetricKind::Cosine) => t * t / 2.0,
            (true, MetricKind::Haversine) => 2.0 * EARTH_RADIUS_KM * (t / 2.0).min(1.0).asin(),
            _ => t,
        }
    }

    /// The tree position `p` of the indexed point with the lowest `score(p, distance(q, point
    /// at p))` (`None`: not a candidate; positions, so that what the closures read per point
    /// can lie in the tree's order, one leaf's points side by side), and that score, found by a
    /// depth-first descent, nearer child first, that skips a node when
    /// `node_floor(node, lower bound on its distances)` — a lower bound on its points' scores,
    /// `None` to skip it outright — is no lower than the best score so far. The descent stops
    /// once a score reaches `floor`, a lower bound on every score. A position for which
    /// `skip(p)` holds is no candidate, and its distance is not computed. `reach(s)` bounds
    /// from above the distances whose score can be below `s`: Euclidean distances beyond it
    /// (by more than a relative 1e-6, for rounding) are passed over before their square roots,
    /// and nodes beyond it before `node_floor`. Deterministic; among equal scores the first
    /// found wins.
    pub(crate) fn lowest_score(
        &self,
        q: &[F],
        floor: f64,
        node_floor: impl Fn(usize, f64) -> Option<f64>,
        skip: impl Fn(usize) -> bool,
        score: impl Fn(usize, f64) -> Option<f64>,
        reach: impl Fn(f64) -> f64,
    ) -> Option<(usize, f64)> {
        at_dim!(self, lowest_score_at(q, floor, node_floor, skip, score, reach))
    }

    fn lowest_score_at<const D: usize>(
        &self,
        q: &[F],
        floor: f64,
        node_floor: impl Fn(usize, f64) -> Option<f64>,
        skip: impl Fn(usize) -> bool,
        score: impl Fn(usize, f64) -> Option<f64>,
        reach: impl Fn(f64) -> f64,
    ) -> Option<(usize, f64)> {
        let qg = self.prepare(q);
        let euclidean = self.metric == MetricKind::Euclidean;
        // The best so far, and the square of `reach` of its score with the slack.
        let mut best: Option<(usize, f64)> = None;
        let mut beyond = f64::INFINITY;
        // Offers the points at positions start..end (a leaf, one closure call each, so the
        // loop over its points compiles as one); true once the best reaches the floor.
        let scan = |start: usize, end: usize, best: &mut Option<(usize, f64)>, beyond: &mut f64| {
            for p in start..end {
                if skip(p) {
                    continue;
                }
                let dist = if euclidean {
                    let d = self.dim::<D>();
                    let squares =
                        q[..d]
                            .iter()
                            .zip(&self.rows[p * d..(p + 1) * d])
                            .fold(F::zero(), |s, (&x, &y)| {
                                let t = x - y;
                                s + t * t
                            });
                    if squares.to_f64_exact() > *beyond {
                        continue;
                    }
                    squares.sqrt().to_f64_exact()
                } else {
                    self.distance_at::<D>(q, qg.as_ref(), p)
                };
                if let Some(s) = score(p, dist) {
                    if best.is_none_or(|b| s < b.1) {
                        *best = Some((p, s));
                        if s <= floor {
                            return true;
                        }
                        let r = reach(s);
                        *beyond = r * r * (1.0 + 1e-6);
                    }
                }
            }
            false
        };
        if self.kind == IndexKind::Brute {
            scan(0, self.len(), &mut best, &mut beyond);
            return best;
        }
        let qc = self.query_coords(q);
        // Euclidean k-d tree: the nodes' squared bounds, each square root taken only for a node
        // within reach.
        let squared = euclidean && self.kind == IndexKind::KdTree;
        let mut stack = Vec::with_capacity(64);
        stack.push((0usize, 0.0f64));
        'descent: while let Some((id, lb)) = stack.pop() {
            let lb = if squared {
                if lb > beyond {
                    continue;
                }
                lb.sqrt()
            } else {
                lb
            };
            let Some(f) = node_floor(id, self.distance_floor(lb)) else {
                continue;
            };
            if best.is_some_and(|b| f >= b.1) {
                continue;
            }
            let node = self.nodes[id];
            match node.children {
                Some((l, r)) => {
                    let (dl, dr) = if squared {
                        (self.gap_squares::<D>(l, &qc), self.gap_squares::<D>(r, &qc))
                    } else {
                        (self.lower_bound::<D>(l, &qc), self.lower_bound::<D>(r, &qc))
                    };
                    if dl <= dr {
                        stack.push((r, dr));
                        stack.push((l, dl));
                    } else {
                        stack.push((l, dl));
                        stack.push((r, dr));
                    }
                }
                None => {
                    if scan(node.start, node.end, &mut best, &mut beyond) {
                        break 'descent;
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
    use ndarray::Array2;
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
