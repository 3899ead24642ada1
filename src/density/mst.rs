//! Minimum spanning trees of the mutual-reachability distance of HDBSCAN (Campello, Moulavi &
//! Sander, "Density-Based Clustering Based on Hierarchical Density Estimates", PAKDD 2013):
//! mrd(i, j) = max(core(i), core(j), d(i, j) / α), with core(i) the distance from point i to
//! its min_samples-th nearest point, itself included. With every core distance 0 it is the
//! plain distance, whose tree gives single linkage.
//!
//! From points: Borůvka's algorithm (1926) over the k-d or ball tree of [`NeighborIndex`], as
//! the single-tree variant of March, Ram & Gray ("Fast Euclidean minimum spanning tree",
//! KDD 2010): in each round every point finds its nearest point of another component, the
//! descent skipping nodes that lie wholly in the point's own component or whose bound on
//! the distance cannot beat the best so far (mrd is at least core(i), so a point stops as
//! soon as it meets that). A point's answer is kept for the next round while it still leads
//! out of its component; its weight, or the least weight its search cut away, bounds every
//! later answer from below (components only grow), and a point whose bound exceeds the best
//! its component has found so far is not searched. O(n) memory beyond the index; parallel
//! over the points and the same for any thread count. From a precomputed matrix: Prim's
//! algorithm, O(n²) time and O(n) memory beyond the matrix; from points in many dimensions
//! (single linkage) Prim's over the rows through the SIMD kernels ([`prim_points`]).

use super::index::NeighborIndex;
use crate::error::{Error, Result};
use crate::estimator::{Progress, ProgressFn};
use crate::metric::{Metric, MetricKind};
use crate::scalar::Scalar;
use ndarray::ArrayView2;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// An edge of the spanning tree: points `a` and `b` at weight `w`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Edge {
    /// One end.
    pub a: usize,
    /// The other end.
    pub b: usize,
    /// The weight.
    pub w: f64,
}

impl Edge {
    /// Lexicographic (weight, lower end, higher end): a total order, so every choice among
    /// equal weights is made the same way.
    fn key(&self) -> (f64, usize, usize) {
        (self.w, self.a.min(self.b), self.a.max(self.b))
    }
    fn less(&self, o: &Edge) -> bool {
        let (x, y) = (self.key(), o.key());
        x.0 < y.0 || (x.0 == y.0 && (x.1, x.2) < (y.1, y.2))
    }
}

/// Disjoint sets with path halving and union by size.
pub(crate) struct UnionFind {
    parent: Vec<usize>,
    size: Vec<usize>,
}

impl UnionFind {
    pub(crate) fn new(n: usize) -> Self {
        UnionFind {
            parent: (0..n).collect(),
            size: vec![1; n],
        }
    }
    pub(crate) fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }
    /// Joins the sets of `a` and `b`; false when they were one already.
    pub(crate) fn union(&mut self, a: usize, b: usize) -> bool {
        let (mut a, mut b) = (self.find(a), self.find(b));
        if a == b {
            return false;
        }
        if self.size[a] < self.size[b] {
            std::mem::swap(&mut a, &mut b);
        }
        self.parent[b] = a;
        self.size[a] += self.size[b];
        true
    }
}

/// A point's nearest point of another component, its weight, and whether that is certain.
type Lead = (usize, f64, bool);

/// The mutual-reachability weight of a pair.
#[inline]
fn mrd(core_a: f64, core_b: f64, d: f64, alpha: f64) -> f64 {
    // d / 1 is d: no division in the common case.
    core_a.max(core_b).max(if alpha == 1.0 { d } else { d / alpha })
}

/// The spanning tree of the points of `index` under mutual reachability with core distances
/// `core` (n − 1 edges, in the order they were found); `known[i]`, where given, is point i's
/// nearest point (j, weight) under mutual reachability, already certain; `progress` after
/// each round. The rounds run over tree positions (what each search reads about a point lies
/// in the tree's order); every choice among equal weights is made by the points' indices.
pub(crate) fn boruvka<F: Scalar>(
    index: &NeighborIndex<'_, F>,
    core: &[f64],
    alpha: f64,
    known: &[Option<(usize, f64)>],
    progress: Option<&ProgressFn>,
) -> Result<Vec<Edge>> {
    let order = index.tree_order();
    let n = index.len();
    let mut place = vec![0usize; n];
    order.iter().enumerate().for_each(|(p, &i)| place[i] = p);
    let core_at: Vec<f64> = order.iter().map(|&i| core[i]).collect();
    // Components of positions.
    let mut sets = UnionFind::new(n);
    let mut edges = Vec::with_capacity(n.saturating_sub(1));
    let node_core = index.node_summaries(
        |at| core_at[at].iter().copied().fold(f64::INFINITY, f64::min),
        |a, b| a.min(*b),
    );
    // At each position, the nearest position of another component with its weight, and
    // whether that is certain (then kept for the next rounds while it still leads out of the
    // component).
    let mut nearest: Vec<Option<Lead>> = order
        .iter()
        .map(|&i| known.get(i).copied().flatten().map(|(j, w)| (place[j], w, true)))
        .collect();
    // A lower bound on the weight of each position's lightest edge out of its component
    // (which only grows as components merge).
    let mut lower: Vec<f64> = core_at.clone();
    let mut round = 0;
    while edges.len() + 1 < n {
        round += 1;
        let comp: Vec<usize> = (0..n).map(|p| sets.find(p)).collect();
        const MIXED: usize = usize::MAX;
        let node_comp = index.node_summaries(
            |at| {
                let c = comp[at.start];
                if comp[at].iter().all(|&x| x == c) {
                    c
                } else {
                    MIXED
                }
            },
            |a, b| if a == b { *a } else { MIXED },
        );
        // Only a component's lightest edge out matters: each component's bound (the lightest
        // found so far, shared between threads) cuts its points' searches, and a point whose
        // lower bound exceeds it is not searched. A cut search is certain when nothing cut
        // away could have beaten what it found. Where a cut or a skip may hide a point's
        // answer, that answer exceeds the component's lightest, so it is never chosen; the
        // choice does not depend on the order the threads ran in.
        let bound: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(f64::INFINITY.to_bits())).collect();
        for (p, best) in nearest.iter_mut().enumerate() {
            match *best {
                Some((q, w, true)) if comp[q] != comp[p] => {
                    bound[comp[p]].fetch_min(w.to_bits(), Ordering::Relaxed);
                }
                _ => *best = None,
            }
        }
        // By position (an indexed collect, written in place): None where not searched.
        let searched: Vec<Option<(Option<Lead>, f64)>> = (0..n)
            .into_par_iter()
            .map(|p| {
                let own = comp[p];
                let limit = || f64::from_bits(bound[own].load(Ordering::Relaxed));
                if nearest[p].is_some() || lower[p] > limit() {
                    return None;
                }
                let cp = core_at[p];
                let cut = std::cell::Cell::new(f64::INFINITY);
                let found = index.lowest_score(
                    index.point_at(p),
                    cp,
                    |node, d| {
                        if node_comp[node] == own {
                            return None;
                        }
                        let floor = mrd(cp, node_core[node], d, alpha);
                        if floor > limit() {
                            cut.set(cut.get().min(floor));
                            return None;
                        }
                        Some(floor)
                    },
                    |q| comp[q] == own,
                    |q, d| Some(mrd(cp, core_at[q], d, alpha)),
                    // mrd below s needs d/α below s.
                    |s| s * alpha,
                );
                if let Some((_, w)) = found {
                    bound[own].fetch_min(w.to_bits(), Ordering::Relaxed);
                }
                let at_least = found.map_or(cut.get(), |(_, w)| w.min(cut.get()));
                Some((found.map(|(q, w)| (q, w, w <= cut.get())), at_least))
            })
            .collect();
        for (p, answer) in searched.into_iter().enumerate() {
            if let Some((found, at_least)) = answer {
                nearest[p] = found;
                lower[p] = lower[p].max(at_least);
            }
        }
        // Each component's lightest edge out (the total order on the points' indices breaks
        // ties), lightest first.
        let mut lightest: Vec<Option<(Edge, usize, usize)>> = vec![None; n];
        for (p, best) in nearest.iter().enumerate() {
            let Some((q, w, _)) = *best else { continue };
            let e = Edge {
                a: order[p],
                b: order[q],
                w,
            };
            let slot = &mut lightest[comp[p]];
            if slot.is_none_or(|s| e.less(&s.0)) {
                *slot = Some((e, p, q));
            }
        }
        let mut chosen: Vec<(Edge, usize, usize)> = lightest.into_iter().flatten().collect();
        chosen.sort_by(|x, y| {
            let (a, b) = (x.0.key(), y.0.key());
            a.0.total_cmp(&b.0).then((a.1, a.2).cmp(&(b.1, b.2)))
        });
        let before = edges.len();
        for (e, p, q) in chosen {
            if sets.union(p, q) {
                edges.push(e);
            }
        }
        if edges.len() == before {
            return Err(Error::OutOfRange(
                "the spanning tree found no edge between two components".into(),
            ));
        }
        if let Some(p) = progress {
            p.report(&Progress {
                iteration: round,
                max_iter: None,
                objective: None,
            })?;
        }
    }
    Ok(edges)
}

/// Prim's algorithm from object 0 under `weight(i, j)`, reporting each object added as the
/// pair (object added before it, object, its distance to the tree) — Müllner's
/// MST-linkage-core ("Modern hierarchical, agglomerative clustering algorithms", 2011) and
/// scikit-learn's dense HDBSCAN path: not always a tree edge, but the same single-linkage
/// tree. O(n²) weights, O(n) memory.
pub(crate) fn prim(n: usize, weight: impl Fn(usize, usize) -> f64 + Sync) -> Vec<Edge> {
    prim_rows(n, |i, in_tree, out| {
        out.par_iter_mut().enumerate().for_each(|(j, w)| {
            if !in_tree[j] {
                *w = weight(i, j);
            }
        })
    })
}

/// [`prim`] with the weights from each object added as one row: `fill(i, in_tree, out)`
/// writes the weight of i to every object j not yet in the tree into `out[j]` (where
/// computing a row at once is cheaper than one weight at a time).
pub(crate) fn prim_rows(n: usize, mut fill: impl FnMut(usize, &[bool], &mut [f64])) -> Vec<Edge> {
    let mut in_tree = vec![false; n];
    let mut reach = vec![(f64::INFINITY, 0usize); n];
    // (reach of each object, the tree object giving it)
    let mut row = vec![f64::INFINITY; n];
    let mut edges = Vec::with_capacity(n.saturating_sub(1));
    let mut current = 0;
    for _ in 1..n {
        in_tree[current] = true;
        fill(current, &in_tree, &mut row);
        for (j, r) in reach.iter_mut().enumerate() {
            if !in_tree[j] && row[j] < r.0 {
                *r = (row[j], current);
            }
        }
        let (next, &(w, _)) = reach
            .iter()
            .enumerate()
            .filter(|(j, _)| !in_tree[*j])
            .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0).then(a.0.cmp(&b.0)))
            .expect("a point is left");
        edges.push(Edge {
            a: current,
            b: next,
            w,
        });
        current = next;
    }
    edges
}

/// Prim's algorithm from point 0 over the plain distances between the rows of `x` (single
/// linkage in many dimensions, where trees prune little), reporting each point added with the
/// tree point nearest it (the lowest index among equal weights, as [`prim`]). The rows not yet
/// in the tree are kept side by side (a copy, compacted as points join), so each step is one
/// pass of the SIMD row kernels over them, in parallel blocks, then one pass that updates
/// their reach and picks the next. O(n²·d / 2) time, O(n·d) memory.
pub(crate) fn prim_points<F: Scalar>(x: ArrayView2<'_, F>, metric: MetricKind) -> Vec<Edge> {
    const BLOCK: usize = 1024;
    let (n, d) = x.dim();
    let mut rest: Vec<F> = x.iter().skip(d).copied().collect();
    let mut ids: Vec<usize> = (1..n).collect();
    // (weight, tree point giving it) of each point of `rest`
    let mut reach = vec![(f64::INFINITY, 0usize); n.saturating_sub(1)];
    let mut buf = vec![F::zero(); n];
    let table = F::simd_table();
    let mut edges = Vec::with_capacity(n.saturating_sub(1));
    let mut current: Vec<F> = x.row(0).to_vec();
    let mut current_id = 0;
    while !ids.is_empty() {
        let m = ids.len();
        let a = &current;
        buf[..m]
            .par_chunks_mut(BLOCK)
            .zip(rest[..m * d].par_chunks(BLOCK * d))
            .for_each(|(o, ys)| match metric {
                MetricKind::Euclidean | MetricKind::SqEuclidean => (table.sqeuclidean_rows)(a, ys, o),
                MetricKind::Manhattan => (table.manhattan_rows)(a, ys, o),
                _ => o
                    .iter_mut()
                    .zip(ys.chunks_exact(d))
                    .for_each(|(o, y)| *o = metric.distance(a, y)),
            });
        let mut next = 0;
        for t in 0..m {
            let b = buf[t];
            let w = if metric == MetricKind::Euclidean {
                b.sqrt()
            } else {
                b
            }
            .to_f64_exact();
            if w < reach[t].0 {
                reach[t] = (w, current_id);
            }
            let (r, best) = (reach[t].0, reach[next].0);
            if r < best || (r == best && ids[t] < ids[next]) {
                next = t;
            }
        }
        let (w, from) = reach[next];
        let id = ids[next];
        edges.push(Edge { a: from, b: id, w });
        current.copy_from_slice(&rest[next * d..(next + 1) * d]);
        current_id = id;
        // Compact: the last point of `rest` takes the place of the one added.
        let last = m - 1;
        rest.copy_within(last * d..m * d, next * d);
        ids.swap_remove(next);
        reach.swap_remove(next);
    }
    edges
}

/// Prim's algorithm from object 0 as scikit-learn's HDBSCAN runs it over every pair (the
/// lightest object out of the tree next, the lowest index among equal weights, each edge
/// from the first tree object that reached that weight), but over the candidate pairs
/// `adjacent[start[o]..start[o + 1]]` of each object only, `weight(o, p, slot)` with the slot
/// of p in that list. The lists may number the objects in any order (the neighbour index's,
/// so that neighbours lie close in memory): `id[o]` is the index of the object in place o,
/// which breaks ties and names the ends of the edges. The run is the same wherever the
/// candidates hold every pair that is ever a lightest edge out of the tree (every edge of
/// every minimum spanning tree). O(candidates · log n) time.
pub(crate) fn prim_over(
    id: &[usize],
    start: &[usize],
    adjacent: &[u32],
    weight: impl Fn(usize, usize, usize) -> f64,
) -> Vec<Edge> {
    use std::cmp::Reverse;
    // (weight, index, place) as one integer in the order of (total_cmp, index): one
    // comparison.
    let key_of = |w: f64, o: usize| {
        let b = w.to_bits();
        let ordered = if b >> 63 == 1 { !b } else { b | 1 << 63 };
        (u128::from(ordered) << 64) | ((id[o] as u128) << 32) | o as u128
    };
    let n = id.len();
    let mut in_tree = vec![false; n];
    let mut key = vec![(f64::INFINITY, 0usize); n];
    let mut heap = std::collections::BinaryHeap::new();
    let mut edges = Vec::with_capacity(n.saturating_sub(1));
    let Some(mut current) = id.iter().position(|&i| i == 0) else {
        return edges;
    };
    for _ in 1..n {
        in_tree[current] = true;
        for (slot, &p) in adjacent
            .iter()
            .enumerate()
            .take(start[current + 1])
            .skip(start[current])
        {
            let p = p as usize;
            if !in_tree[p] {
                let w = weight(current, p, slot);
                if w < key[p].0 {
                    key[p] = (w, current);
                    heap.push(Reverse(key_of(w, p)));
                }
            }
        }
        let next = loop {
            let Reverse(packed) = heap.pop().expect("the candidates connect every object");
            let p = packed as u32 as usize;
            if !in_tree[p] && packed == key_of(key[p].0, p) {
                break p;
            }
        };
        edges.push(Edge {
            a: id[key[next].1],
            b: id[next],
            w: key[next].0,
        });
        current = next;
    }
    edges
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::density::index::IndexKind;
    use crate::metric::MetricKind;
    use ndarray::Array2;
    use rand::{Rng, SeedableRng};

    /// Borůvka's tree weighs what Prim's over all pairs weighs, edge for edge once sorted (every
    /// minimum spanning tree has the same sorted weights), for every index and metric, with
    /// ties (integer coordinates) and without; and Prim's run over the pairs of the full
    /// graph adds the objects in the order and at the weights of Prim's over the matrix.
    #[test]
    fn boruvka_and_prim_agree() {
        let mut rng = crate::rng::SeededRng::seed_from_u64(5);
        for case in 0..60 {
            let n = rng.random_range(2..150);
            let metric = [
                MetricKind::Euclidean,
                MetricKind::Manhattan,
                MetricKind::Minkowski(f64::INFINITY),
                MetricKind::Haversine,
            ][case % 4];
            let d = if metric == MetricKind::Haversine {
                2
            } else {
                rng.random_range(1..4)
            };
            let ties = case % 3 == 0;
            let x = Array2::from_shape_fn((n, d), |(_, c)| {
                let v: f64 = if ties {
                    rng.random_range(0..8) as f64
                } else {
                    rng.random_range(0.0..8.0)
                };
                if metric == MetricKind::Haversine && c == 0 {
                    v * 10.0 - 40.0
                } else {
                    v
                }
            });
            let kind = [IndexKind::KdTree, IndexKind::BallTree, IndexKind::Brute][case % 3];
            let index = NeighborIndex::build(x.view(), metric, kind).unwrap();
            let ms = rng.random_range(1..6).min(n);
            let alpha = if case % 5 == 0 { 1.5 } else { 1.0 };
            let core: Vec<f64> = (0..n)
                .map(|i| index.nearest(index.point(i), ms).last().unwrap().1)
                .collect();
            let weight = |i: usize, j: usize| mrd(core[i], core[j], index.distance_between(i, j), alpha);
            let tree = boruvka(&index, &core, alpha, &[], None).unwrap();
            assert_eq!(tree.len(), n - 1);
            let mut sets = UnionFind::new(n);
            for e in &tree {
                assert!(sets.union(e.a, e.b), "case {case}: a cycle");
                assert_eq!(e.w, weight(e.a, e.b));
            }
            // The same weights when each point's nearest is given where a point within its
            // core distance has a core distance no larger (HDBSCAN's first round).
            let known: Vec<Option<(usize, f64)>> = (0..n)
                .map(|i| {
                    (0..n)
                        .find(|&j| {
                            j != i && index.distance_between(i, j) <= alpha * core[i] && core[j] <= core[i]
                        })
                        .map(|j| (j, core[i]))
                })
                .collect();
            let seeded = boruvka(&index, &core, alpha, &known, None).unwrap();
            let dense = prim(n, weight);
            let sorted = |v: &[Edge]| {
                let mut w: Vec<f64> = v.iter().map(|e| e.w).collect();
                w.sort_by(f64::total_cmp);
                w
            };
            if metric != MetricKind::Haversine && case % 2 == 0 {
                // Prim's over the rows: the plain distances' tree (SIMD sums: within rounding).
                let plain = prim_points(x.view(), metric);
                let exact = prim(n, |i, j| index.distance_between(i, j));
                let (p, e) = (sorted(&plain), sorted(&exact));
                for (p, e) in p.iter().zip(&e) {
                    assert!((p - e).abs() <= 1e-12 * e.max(1.0), "case {case}: {p} vs {e}");
                }
                let mut sets = UnionFind::new(n);
                assert!(plain.iter().all(|e| sets.union(e.a, e.b)), "case {case}: a cycle");
            }
            assert_eq!(sorted(&tree), sorted(&dense), "case {case}: {metric:?} {kind:?}");
            assert_eq!(sorted(&seeded), sorted(&dense), "case {case}: seeded");
            let start: Vec<usize> = (0..=n).map(|i| i * (n - 1)).collect();
            let adjacent: Vec<u32> = (0..n)
                .flat_map(|i| (0..n).filter(move |&j| j != i).map(|j| j as u32))
                .collect();
            let identity: Vec<usize> = (0..n).collect();
            let over = prim_over(&identity, &start, &adjacent, |i, j, _| weight(i, j));
            let order = |v: &[Edge]| v.iter().map(|e| (e.b, e.w)).collect::<Vec<_>>();
            assert_eq!(order(&over), order(&dense), "case {case}");
            // The same run with the objects listed in another order.
            let id: Vec<usize> = (0..n).map(|o| (n + 2 - o) % n).collect();
            let place = |i: usize| id.iter().position(|&x| x == i).unwrap();
            let (mut start, mut adjacent) = (vec![0], Vec::new());
            for &i in &id {
                adjacent.extend((0..n).filter(|&j| j != i).map(|j| place(j) as u32));
                start.push(adjacent.len());
            }
            let listed = prim_over(&id, &start, &adjacent, |o, p, _| weight(id[o], id[p]));
            assert_eq!(listed, over, "case {case}: listed in another order");
        }
    }
}
