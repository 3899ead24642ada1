//! From a spanning tree to HDBSCAN's clusters (Campello, Moulavi & Sander 2013; McInnes &
//! Healy, "Accelerated Hierarchical Density Clustering", ICDMW 2017), step for step as
//! scikit-learn's `HDBSCAN` (1.3+), so the labels and probabilities are its own:
//!
//! 1. the single-linkage tree: the edges in increasing weight, each merging the clusters of
//!    its ends into cluster n + i (scipy's linkage layout: left, right, distance, size);
//! 2. the condensed tree: walking the single-linkage tree breadth first from the root, a split
//!    into two parts of at least `min_cluster_size` points makes two new clusters, a smaller
//!    part's points fall out of the cluster at λ = 1 / distance;
//! 3. stability Σ (λ_point − λ_birth) · size per cluster, and the selection: excess of mass
//!    (a cluster is kept when its stability is at least its children's sum, it holds at
//!    most `max_cluster_size` points and, as the `hdbscan` package's
//!    `cluster_selection_epsilon_max`, it was born at a distance 1 / λ_birth of at most that;
//!    the root's distance is the largest 1 / λ of the tree) or the leaves, then
//!    `cluster_selection_epsilon`;
//! 4. labels (a point takes its nearest selected ancestor, clusters numbered in increasing
//!    condensed id), probabilities λ_point / λ_max of the cluster, and GLOSH outlier scores
//!    (Campello et al., TKDD 2015) as the `hdbscan` package: 1 − λ_point / λ_max of the
//!    subtree the point falls from.
//!
//! Kept from scikit-learn on purpose, as they decide its output: a cluster's λ_max for the
//! probabilities is the largest λ in the last contiguous run of its rows of the condensed
//! tree (the tree is not sorted by parent there); `allow_single_cluster` sizes the root as
//! the sum of its child clusters; the epsilon search visits the leaves in increasing id.

use super::mst::Edge;
use crate::NOISE;

/// A merge of the single-linkage tree: clusters `left` and `right` (ids below n are points,
/// n + i the cluster made by merge i) joined at `distance` into `size` points.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Merge {
    /// One cluster.
    pub left: usize,
    /// The other.
    pub right: usize,
    /// The distance (height) of the merge.
    pub distance: f64,
    /// Points of the merged cluster.
    pub size: usize,
}

/// The single-linkage tree of `n` points from the n − 1 edges of a spanning tree, taken in
/// their order (the caller sorts them by weight).
pub(crate) fn single_linkage_tree(n: usize, edges: &[Edge]) -> Vec<Merge> {
    let mut parent: Vec<usize> = (0..2 * n - 1).collect();
    let mut size = vec![1usize; 2 * n - 1];
    let find = |parent: &mut Vec<usize>, mut x: usize| {
        let mut root = x;
        while parent[root] != root {
            root = parent[root];
        }
        while parent[x] != root {
            let next = parent[x];
            parent[x] = root;
            x = next;
        }
        root
    };
    edges
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let (l, r) = (find(&mut parent, e.a), find(&mut parent, e.b));
            let new = n + i;
            parent[l] = new;
            parent[r] = new;
            size[new] = size[l] + size[r];
            Merge {
                left: l,
                right: r,
                distance: e.w,
                size: size[new],
            }
        })
        .collect()
}

/// A row of the condensed tree: `child` (a point below n, else a cluster) leaves `parent` (a
/// cluster, the root being n) at `lambda` = 1 / distance, with `size` points.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CondensedRow {
    /// The cluster left.
    pub parent: usize,
    /// The point or cluster leaving it.
    pub child: usize,
    /// 1 / distance of the split (∞ at distance 0).
    pub lambda: f64,
    /// Points of the child.
    pub size: usize,
}

/// The nodes below `root` breadth first, level by level, left before right.
fn bfs(tree: &[Merge], root: usize) -> Vec<usize> {
    let n = tree.len() + 1;
    let mut out = Vec::new();
    let mut level = vec![root];
    while !level.is_empty() {
        out.extend_from_slice(&level);
        level = level
            .iter()
            .filter(|&&x| x >= n)
            .flat_map(|&x| [tree[x - n].left, tree[x - n].right])
            .collect();
    }
    out
}

/// The condensed tree of a single-linkage tree of n ≥ 2 points.
pub(crate) fn condense(tree: &[Merge], min_cluster_size: usize) -> Vec<CondensedRow> {
    let n = tree.len() + 1;
    let root = 2 * (n - 1);
    let mut relabel = vec![0usize; root + 1];
    relabel[root] = n;
    let mut next_label = n + 1;
    let mut ignore = vec![false; root + 1];
    let mut rows = Vec::with_capacity(2 * n);
    let size_of = |x: usize| if x >= n { tree[x - n].size } else { 1 };
    for node in bfs(tree, root) {
        if ignore[node] || node < n {
            continue;
        }
        let m = tree[node - n];
        let lambda = if m.distance > 0.0 {
            1.0 / m.distance
        } else {
            f64::INFINITY
        };
        let (l, r) = (m.left, m.right);
        let (lc, rc) = (size_of(l), size_of(r));
        let parent = relabel[node];
        let fall_out = |sub: usize, rows: &mut Vec<CondensedRow>, ignore: &mut Vec<bool>| {
            for x in bfs(tree, sub) {
                if x < n {
                    rows.push(CondensedRow {
                        parent,
                        child: x,
                        lambda,
                        size: 1,
                    });
                }
                ignore[x] = true;
            }
        };
        match (lc >= min_cluster_size, rc >= min_cluster_size) {
            (true, true) => {
                for (child, count) in [(l, lc), (r, rc)] {
                    relabel[child] = next_label;
                    next_label += 1;
                    rows.push(CondensedRow {
                        parent,
                        child: relabel[child],
                        lambda,
                        size: count,
                    });
                }
            }
            (false, false) => {
                fall_out(l, &mut rows, &mut ignore);
                fall_out(r, &mut rows, &mut ignore);
            }
            (false, true) => {
                relabel[r] = parent;
                fall_out(l, &mut rows, &mut ignore);
            }
            (true, false) => {
                relabel[l] = parent;
                fall_out(r, &mut rows, &mut ignore);
            }
        }
    }
    rows
}

/// How clusters are chosen from the condensed tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ClusterSelection {
    /// Excess of mass: the most stable clusters (scikit-learn's default).
    #[default]
    Eom,
    /// The leaves of the cluster tree: small, homogeneous clusters.
    Leaf,
}

impl std::str::FromStr for ClusterSelection {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<Self> {
        match s {
            "eom" => Ok(ClusterSelection::Eom),
            "leaf" => Ok(ClusterSelection::Leaf),
            other => Err(crate::Error::param(
                "cluster_selection_method",
                other,
                "expected eom or leaf",
            )),
        }
    }
}

/// The `hdbscan` package's `cluster_selection_persistence`: the condensed tree with every
/// split whose less persistent child dies within `threshold` (in λ) of the split undone, its
/// two children folded into their parent, then the clusters renumbered consecutively.
///
/// As the package's `simplify_hierarchy`, on the same row order: a cluster's "birth" here is
/// the λ of its last row (kept in single precision, as there), propagated upwards as the
/// maximum over its descendants; sibling splits are visited from the last to the first, so
/// children before parents. A folded split whose more persistent child is a leaf makes its
/// parent a leaf; otherwise the points of the less persistent child leave the parent at the
/// split's λ. Rows of folded clusters disappear; points keep their rows. Where we differ: the
/// package stores every λ of the simplified tree in single precision; here they stay double.
pub(crate) fn simplify(rows: &[CondensedRow], n: usize, threshold: f64) -> Vec<CondensedRow> {
    let cluster_rows: Vec<&CondensedRow> = rows.iter().filter(|r| r.child >= n).collect();
    let Some(last) = cluster_rows.last() else {
        return rows.to_vec();
    };
    let count = last.child + 1 - n;
    let mut leaf = vec![true; count];
    for r in &cluster_rows {
        leaf[r.parent - n] = false;
    }
    let mut birth = vec![0.0f32; count];
    for r in rows {
        birth[r.parent - n] = r.lambda as f32;
    }
    let mut parent_of: Vec<usize> = (n..n + count).collect();
    let mut leave_at: Vec<Option<f64>> = vec![None; count];
    // (sibling rows come in pairs; the last pair first)
    for pair in cluster_rows.chunks_exact(2).rev() {
        let (a, b) = (pair[0], pair[1]);
        let (parent, death) = (b.parent, b.lambda);
        let births = [birth[a.child - n], birth[b.child - n]];
        let highest = births[0].max(births[1]);
        birth[parent - n] = birth[parent - n].max(highest);
        // (the package's comparison, in single precision; the λ kept stay in double)
        if f64::from(births[0].min(births[1]) - death as f32) < threshold {
            let (children, stronger) = ([a.child, b.child], usize::from(births[0] <= births[1]));
            if leaf[children[stronger] - n] {
                leaf[parent - n] = true;
            } else {
                leave_at[children[1 - stronger] - n] = Some(death);
            }
            parent_of[a.child - n] = parent;
            parent_of[b.child - n] = parent;
        }
    }
    // Each cluster's surviving ancestor (parents have smaller ids), then consecutive numbers.
    for c in 0..count {
        parent_of[c] = parent_of[parent_of[c] - n];
    }
    let folded: Vec<bool> = (0..count).map(|c| parent_of[c] != c + n).collect();
    let mut before = vec![0usize; count];
    for c in 1..count {
        before[c] = before[c - 1] + usize::from(folded[c - 1]);
    }
    let renumber = |c: usize| c - before[c - n];
    let mut simplified: Vec<CondensedRow> = rows
        .iter()
        .filter(|r| r.child < n || !folded[r.child - n])
        .map(|r| CondensedRow {
            parent: renumber(parent_of[r.parent - n]),
            child: if r.child < n {
                r.child
            } else {
                renumber(parent_of[r.child - n])
            },
            lambda: leave_at[r.parent - n].unwrap_or(r.lambda),
            size: r.size,
        })
        .collect();
    // Each cluster's rows together (in their order): its λ_max for the probabilities is then
    // the largest of all its rows, as the package takes it.
    simplified.sort_by_key(|r| r.parent);
    simplified
}

/// The cluster selection's parameters.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Selection {
    pub method: ClusterSelection,
    pub allow_single_cluster: bool,
    pub epsilon: f64,
    pub max_cluster_size: Option<usize>,
    pub epsilon_max: f64,
}

/// The clusters of a condensed tree (ids n.. with the root n), its parent links and rows.
struct ClusterTree<'a> {
    rows: &'a [CondensedRow],
    root: usize,
    /// Parent cluster and birth λ of each cluster (by id − root).
    parent: Vec<usize>,
    birth: Vec<f64>,
    size: Vec<usize>,
    /// Child clusters of each cluster, in row order.
    children: Vec<Vec<usize>>,
}

impl<'a> ClusterTree<'a> {
    fn new(rows: &'a [CondensedRow], n: usize) -> Self {
        let root = n;
        let count = rows
            .iter()
            .map(|r| r.parent.max(r.child))
            .filter(|&c| c >= root)
            .max()
            .unwrap_or(root)
            - root
            + 1;
        let mut t = ClusterTree {
            rows,
            root,
            parent: vec![root; count],
            birth: vec![0.0; count],
            size: vec![0; count],
            children: vec![Vec::new(); count],
        };
        for r in rows.iter().filter(|r| r.child >= root) {
            let c = r.child - root;
            t.parent[c] = r.parent;
            t.birth[c] = r.lambda;
            t.size[c] = r.size;
            t.children[r.parent - root].push(r.child);
        }
        t
    }

    fn clusters(&self) -> std::ops::Range<usize> {
        self.root..self.root + self.parent.len()
    }

    /// Σ (λ − λ_birth(parent)) · size over each cluster's rows.
    fn stability(&self) -> Vec<f64> {
        let mut s = vec![0.0; self.parent.len()];
        for r in self.rows {
            let p = r.parent - self.root;
            s[p] += (r.lambda - self.birth[p]) * r.size as f64;
        }
        s
    }

    /// `c` and every cluster below it.
    fn subtree(&self, c: usize) -> Vec<usize> {
        let mut out = vec![c];
        let mut i = 0;
        while i < out.len() {
            out.extend_from_slice(&self.children[out[i] - self.root]);
            i += 1;
        }
        out
    }

    fn leaves(&self) -> Vec<usize> {
        if self.parent.len() == 1 {
            return Vec::new();
        }
        let mut out: Vec<usize> = self
            .subtree(self.root)
            .into_iter()
            .filter(|&c| self.children[c - self.root].is_empty())
            .collect();
        out.sort_unstable();
        out
    }

    /// scikit-learn's `traverse_upwards`: the first ancestor of `leaf` born above `epsilon`.
    fn upwards(&self, epsilon: f64, leaf: usize, allow_single: bool) -> usize {
        let parent = self.parent[leaf - self.root];
        if parent == self.root {
            return if allow_single { parent } else { leaf };
        }
        if 1.0 / self.birth[parent - self.root] > epsilon {
            parent
        } else {
            self.upwards(epsilon, parent, allow_single)
        }
    }

    fn epsilon_search(&self, leaves: &[usize], epsilon: f64, allow_single: bool) -> Vec<usize> {
        let mut selected = Vec::new();
        let mut processed = vec![false; self.parent.len()];
        for &leaf in leaves {
            if 1.0 / self.birth[leaf - self.root] < epsilon {
                if !processed[leaf - self.root] {
                    let up = self.upwards(epsilon, leaf, allow_single);
                    selected.push(up);
                    for c in self.subtree(up).into_iter().skip(1) {
                        processed[c - self.root] = true;
                    }
                }
            } else {
                selected.push(leaf);
            }
        }
        selected
    }

    /// The selected clusters, in increasing id.
    fn select(&self, sel: &Selection, n: usize) -> Vec<usize> {
        let k = self.parent.len();
        let mut chosen = vec![false; k];
        let candidates: Vec<usize> = self
            .clusters()
            .rev()
            .filter(|&c| c != self.root || sel.allow_single_cluster)
            .collect();
        for &c in &candidates {
            chosen[c - self.root] = true;
        }
        let max_size = sel.max_cluster_size.unwrap_or(n + 1);
        let mut size = self.size.clone();
        if sel.allow_single_cluster {
            size[0] = self.children[0].iter().map(|&c| self.size[c - self.root]).sum();
        }
        // The distance each cluster was born at (the root: the largest distance of the tree).
        let born_at = |i: usize| {
            if i == 0 {
                self.rows
                    .iter()
                    .map(|r| 1.0 / r.lambda)
                    .fold(f64::NEG_INFINITY, f64::max)
            } else {
                1.0 / self.birth[i]
            }
        };
        let mut selected: Vec<usize> = match sel.method {
            ClusterSelection::Eom => {
                let mut stability = self.stability();
                for &c in &candidates {
                    let i = c - self.root;
                    let below: f64 = self.children[i].iter().map(|&ch| stability[ch - self.root]).sum();
                    if below > stability[i] || size[i] > max_size || born_at(i) > sel.epsilon_max {
                        chosen[i] = false;
                        stability[i] = below;
                    } else {
                        for d in self.subtree(c).into_iter().skip(1) {
                            chosen[d - self.root] = false;
                        }
                    }
                }
                let eom: Vec<usize> = self.clusters().filter(|&c| chosen[c - self.root]).collect();
                if sel.epsilon != 0.0 && k > 1 {
                    if eom == [self.root] {
                        if sel.allow_single_cluster {
                            eom
                        } else {
                            Vec::new()
                        }
                    } else {
                        self.epsilon_search(&eom, sel.epsilon, sel.allow_single_cluster)
                    }
                } else {
                    eom
                }
            }
            ClusterSelection::Leaf => {
                let leaves = self.leaves();
                // (scikit-learn marks the root when there are no leaves, then keeps only
                // what the search or the leaves give: nothing.)
                if sel.epsilon != 0.0 {
                    self.epsilon_search(&leaves, sel.epsilon, sel.allow_single_cluster)
                } else {
                    leaves
                }
            }
        };
        selected.sort_unstable();
        selected.dedup();
        selected
    }
}

/// Labels (−1 noise, clusters numbered by increasing condensed id) and probabilities of the
/// `n` points, with the selected clusters' ids.
pub(crate) fn labels_and_probabilities(
    rows: &[CondensedRow],
    n: usize,
    sel: &Selection,
) -> (Vec<i64>, Vec<f64>, Vec<usize>) {
    let tree = ClusterTree::new(rows, n);
    let selected = tree.select(sel, n);
    let root = tree.root;
    let label_of = |c: usize| selected.binary_search(&c).ok();
    // Each cluster's nearest selected ancestor (itself included), else the root.
    let mut rep = vec![root; tree.parent.len()];
    for c in tree.clusters() {
        // Parents have smaller ids, so theirs is known.
        rep[c - root] = if c == root || label_of(c).is_some() {
            c
        } else {
            rep[tree.parent[c - root] - root]
        };
    }
    let threshold = if sel.epsilon != 0.0 {
        1.0 / sel.epsilon
    } else {
        rows.iter()
            .filter(|r| r.parent == root)
            .map(|r| r.lambda)
            .fold(f64::NEG_INFINITY, f64::max)
    };
    let mut labels = vec![NOISE; n];
    for r in rows.iter().filter(|r| r.child < n) {
        let c = rep[r.parent - root];
        labels[r.child] = if c != root {
            label_of(c).map_or(NOISE, |l| l as i64)
        } else if selected.len() == 1 && sel.allow_single_cluster && r.lambda >= threshold {
            label_of(root).map_or(NOISE, |l| l as i64)
        } else {
            NOISE
        };
    }
    // λ_max: the largest λ of the last contiguous run of each parent's rows.
    let mut deaths = vec![0.0; tree.parent.len()];
    let mut run: Option<(usize, f64)> = None;
    for r in rows {
        run = match run {
            Some((p, m)) if p == r.parent => Some((p, m.max(r.lambda))),
            Some((p, m)) => {
                deaths[p - root] = m;
                Some((r.parent, r.lambda))
            }
            None => Some((r.parent, r.lambda)),
        };
    }
    if let Some((p, m)) = run {
        deaths[p - root] = m;
    }
    let mut probabilities = vec![0.0; n];
    for r in rows.iter().filter(|r| r.child < n) {
        let l = labels[r.child];
        if l == NOISE {
            continue;
        }
        let max = deaths[selected[l as usize] - root];
        probabilities[r.child] = if max == 0.0 || r.lambda.is_infinite() {
            1.0
        } else {
            r.lambda.min(max) / max
        };
    }
    (labels, probabilities, selected)
}

/// The excess-of-mass stability of each of the `selected` clusters (ids of the tree).
pub(crate) fn stabilities(rows: &[CondensedRow], n: usize, selected: &[usize]) -> Vec<f64> {
    let tree = ClusterTree::new(rows, n);
    let stability = tree.stability();
    selected.iter().map(|&c| stability[c - tree.root]).collect()
}

/// GLOSH outlier scores: (λ_max − λ_point) / λ_max, λ_max the largest λ in the subtree of the
/// cluster the point falls from. A core distance of 0 (at least min_samples identical points)
/// makes a λ infinite; the score is then its limit, so every score is finite and in [0, 1]:
/// 0 for a point at λ_point = ∞ (or where λ_max is 0), 1 for a finite λ_point under
/// λ_max = ∞. (The hdbscan package gives NaN for the latter; elsewhere the scores agree.)
pub(crate) fn outlier_scores(rows: &[CondensedRow], n: usize) -> Vec<f64> {
    let tree = ClusterTree::new(rows, n);
    let root = tree.root;
    let mut deaths = vec![0.0f64; tree.parent.len()];
    for r in rows {
        let d = &mut deaths[r.parent - root];
        *d = d.max(r.lambda);
    }
    // Children have larger ids than their parents.
    for c in tree.clusters().rev().filter(|&c| c != root) {
        let (p, d) = (tree.parent[c - root] - root, deaths[c - root]);
        deaths[p] = deaths[p].max(d);
    }
    let mut scores = vec![0.0; n];
    for r in rows.iter().filter(|r| r.child < n) {
        let max = deaths[r.parent - root];
        scores[r.child] = if max == 0.0 || !r.lambda.is_finite() {
            0.0
        } else if max.is_infinite() {
            1.0
        } else {
            (max - r.lambda) / max
        };
    }
    scores
}
