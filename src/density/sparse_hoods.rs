//! Radius neighbourhoods of sparse rows ([`SparseRows`], scikit-learn's `algorithm="brute"`
//! on sparse input: only the rows sharing a term with the query are touched, the others are
//! found from their norms) and of a precomputed sparse neighbourhood graph (scikit-learn's
//! `metric="precomputed"` with a sparse matrix, as `radius_neighbors_graph(mode="distance")`
//! makes): only the stored entries are neighbours — a row's own point included, as
//! scikit-learn counts it even when its diagonal is not stored.

use crate::data::CsrView;
pub(crate) use crate::dissim::SparseRows;
use crate::error::{Error, Result};
use crate::metric::MetricKind;
use crate::scalar::Scalar;

/// Where each point's neighbours within eps come from.
pub(crate) trait Neighbourhoods: Sync {
    /// Points.
    fn len(&self) -> usize;
    /// Calls `visit(j, distance)` for every point j within `eps` of point `i` (itself
    /// included) for which `skip(j)` is false, in no particular order, until `visit` returns
    /// false (a tree skips without computing the distance).
    fn for_each_near(
        &self,
        i: usize,
        eps: f64,
        skip: impl Fn(usize) -> bool,
        visit: impl FnMut(usize, f64) -> bool,
    );
    /// The `k` points nearest to point `i` (itself included), by increasing (distance, index).
    fn nearest(&self, i: usize, k: usize) -> Vec<(usize, f64)>;
    /// Nodes of the index that [`Self::walk_bounded`] keeps bounds for (none by default).
    fn node_count(&self) -> usize {
        0
    }
    /// A walk from point `i` that keeps per-node bounds (see `NeighborIndex::walk_bounded`);
    /// without nodes, `visit` sees every point within `eps` that `skip` does not exclude.
    fn walk_bounded(
        &self,
        i: usize,
        eps: f64,
        _bound: &mut [f64],
        _skip_node: impl Fn(f64, f64) -> bool,
        skip: impl Fn(usize) -> bool,
        mut visit: impl FnMut(usize, f64) -> f64,
    ) {
        self.for_each_near(i, eps, skip, |j, d| {
            visit(j, d);
            true
        });
    }
    /// The distance from point `i` to the nearest point beyond `beyond` for which `skip` is
    /// false; `bound` as kept by [`Self::walk_bounded`] (`-∞`: a node without such points).
    fn nearest_beyond(
        &self,
        i: usize,
        beyond: f64,
        _bound: &[f64],
        skip: impl Fn(usize) -> bool,
    ) -> Option<f64> {
        let mut nearest: Option<f64> = None;
        self.for_each_near(i, f64::INFINITY, skip, |_, d| {
            if d > beyond && nearest.is_none_or(|m| d < m) {
                nearest = Some(d);
            }
            true
        });
        nearest
    }
}

impl<F: Scalar> Neighbourhoods for super::index::NeighborIndex<'_, F> {
    fn len(&self) -> usize {
        super::index::NeighborIndex::len(self)
    }
    fn for_each_near(
        &self,
        i: usize,
        eps: f64,
        skip: impl Fn(usize) -> bool,
        visit: impl FnMut(usize, f64) -> bool,
    ) {
        self.for_each_within_unless(self.point(i), eps, skip, visit);
    }
    fn nearest(&self, i: usize, k: usize) -> Vec<(usize, f64)> {
        super::index::NeighborIndex::nearest(self, self.point(i), k)
    }
    fn node_count(&self) -> usize {
        super::index::NeighborIndex::node_count(self)
    }
    fn walk_bounded(
        &self,
        i: usize,
        _eps: f64,
        bound: &mut [f64],
        skip_node: impl Fn(f64, f64) -> bool,
        skip: impl Fn(usize) -> bool,
        visit: impl FnMut(usize, f64) -> f64,
    ) {
        super::index::NeighborIndex::walk_bounded(self, self.point(i), bound, skip_node, skip, visit);
    }
    fn nearest_beyond(
        &self,
        i: usize,
        beyond: f64,
        bound: &[f64],
        skip: impl Fn(usize) -> bool,
    ) -> Option<f64> {
        let node_floor = |id: usize, floor: f64| (bound[id] > f64::NEG_INFINITY).then_some(floor);
        let score = |_: usize, d: f64| (d > beyond).then_some(d);
        let order = self.tree_order();
        self.lowest_score(
            self.point(i),
            beyond,
            node_floor,
            |p| skip(order[p]),
            score,
            |s| s,
        )
        .map(|(_, d)| d)
    }
}

impl<F: Scalar> Neighbourhoods for SparseRows<'_, F> {
    fn len(&self) -> usize {
        self.x.nrows()
    }

    fn for_each_near(
        &self,
        i: usize,
        eps: f64,
        skip: impl Fn(usize) -> bool,
        mut visit: impl FnMut(usize, f64) -> bool,
    ) {
        let mut visit = |j: usize, d: f64| skip(j) || visit(j, d);
        let n = self.x.nrows();
        self.with_dots(i, |dots, touched, shared| {
            let mut going = true;
            for &r in touched {
                let r = r as usize;
                let d = self.distance(i, r, dots[r], true);
                if d <= eps {
                    going = visit(r, d);
                    if !going {
                        break;
                    }
                }
            }
            // the rows sharing no term (the query itself shares its terms, unless all-zero)
            if !going {
                return;
            }
            let unshared = |r: u32| !shared[r as usize];
            match self.metric {
                // at 1, or 0 between two all-zero rows (a prefix of by_norm)
                MetricKind::Cosine if eps >= 1.0 => {
                    for r in (0..n as u32).filter(|&r| unshared(r)) {
                        if !visit(r as usize, self.distance(i, r as usize, 0.0, false)) {
                            break;
                        }
                    }
                }
                MetricKind::Cosine => {
                    if self.norms[i] == 0.0 {
                        let zero = self
                            .by_norm
                            .iter()
                            .take_while(|&&r| self.norms[r as usize] == 0.0);
                        for &r in zero {
                            if !visit(r as usize, 0.0) {
                                break;
                            }
                        }
                    }
                }
                _ => {
                    for &r in &self.by_norm {
                        let d = self.distance(i, r as usize, 0.0, false);
                        if d > eps {
                            break; // (the rest have larger norms)
                        }
                        if unshared(r) && !visit(r as usize, d) {
                            break;
                        }
                    }
                }
            }
        });
    }

    /// Every row's distance (the rows sharing a term from their dot products, the others
    /// from the norms), the `k` smallest kept.
    fn nearest(&self, i: usize, k: usize) -> Vec<(usize, f64)> {
        let n = self.x.nrows();
        let k = k.min(n);
        let mut all: Vec<(usize, f64)> = Vec::with_capacity(n);
        self.with_dots(i, |dots, _, shared| {
            all.extend((0..n).map(|r| (r, self.distance(i, r, dots[r], shared[r]))))
        });
        let by = |a: &(usize, f64), b: &(usize, f64)| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0));
        if k < n && k > 0 {
            all.select_nth_unstable_by(k - 1, by);
        }
        all.truncate(k);
        all.sort_by(by);
        all
    }
}

/// A precomputed sparse neighbourhood graph: row i's stored entries are its neighbours at
/// those distances (and i itself at 0).
pub(crate) struct SparseGraph<'a, F> {
    g: CsrView<'a, F>,
}

impl<'a, F: Scalar> SparseGraph<'a, F> {
    /// A square graph with non-negative distances.
    pub(crate) fn new(g: CsrView<'a, F>) -> Result<Self> {
        if g.nrows() != g.ncols() {
            return Err(Error::NotSquare {
                rows: g.nrows(),
                cols: g.ncols(),
            });
        }
        for i in 0..g.nrows() {
            let (idx, val) = g.row(i);
            if let Some((&j, v)) = idx.iter().zip(val).find(|(_, v)| **v < F::zero()) {
                return Err(Error::NegativeDissimilarity {
                    i,
                    j: j as usize,
                    value: v.to_f64_exact(),
                });
            }
        }
        Ok(SparseGraph { g })
    }
}

impl<F: Scalar> Neighbourhoods for SparseGraph<'_, F> {
    fn len(&self) -> usize {
        self.g.nrows()
    }
    /// (the stored neighbours only: fewer than `k` when the row holds fewer)
    fn nearest(&self, i: usize, k: usize) -> Vec<(usize, f64)> {
        let mut near = Vec::new();
        self.for_each_near(
            i,
            f64::INFINITY,
            |_| false,
            |j, d| {
                near.push((j, d));
                true
            },
        );
        near.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        near.truncate(k);
        near
    }
    fn for_each_near(
        &self,
        i: usize,
        eps: f64,
        skip: impl Fn(usize) -> bool,
        mut visit: impl FnMut(usize, f64) -> bool,
    ) {
        let (idx, val) = self.g.row(i);
        if idx.binary_search(&(i as u32)).is_err() && !skip(i) && !visit(i, 0.0) {
            return;
        }
        for (&j, v) in idx.iter().zip(val) {
            let d = v.to_f64_exact();
            if d <= eps && !skip(j as usize) && !visit(j as usize, d) {
                return;
            }
        }
    }
}
