//! Bisecting k-means (Steinbach, Karypis & Kumar 2000, "A comparison of document clustering
//! techniques"), with scikit-learn's `BisectingKMeans` semantics: start from one cluster of
//! every point; k − 1 times, choose a leaf of the tree (the one of largest inertia, or of
//! most points) and split it in two with 2-means (`n_init` runs from `init`, keeping the
//! lowest inertia, a run replacing the best only when below it by a relative 1e-6 as
//! scikit-learn); the leaves, left before right, are the clusters. The tolerance is relative
//! to the whole data's mean feature variance, as scikit-learn's.
//!
//! Where we differ: scikit-learn draws its starts from NumPy's stream, which clustr does not
//! reproduce; [`BisectingInit::Given`] takes the starting centres of every split instead, and
//! from them the result equals scikit-learn's (tested against it). With one cluster the
//! centre is the unweighted mean, as scikit-learn's. `n_iter` is the sum of the kept runs'
//! iterations (scikit-learn reports none).

use super::lloyd::lloyd;
use super::{centre_distances, greedy_kmeans_plus_plus, mean_variance, random_rows, Algorithm, KMeansModel};
use crate::backend::AnyBackend;
use crate::comm::{single_process, Partition};
use crate::data::validate::{
    check_k, check_magnitude, check_new_points, check_points, check_positive_weights, check_sample_weight,
    Arithmetic, ScaledWeights,
};
use crate::error::{Error, Result};
use crate::estimator::{shared_setters, Clustering, Fit, Predict, ProgressFn};
use crate::memory::{check_fit, product, MemoryEstimate};
use crate::model_file::{SaveLoad, StoredArray};
use crate::rng::SeededRng;
use crate::scalar::Scalar;
use ndarray::{Array2, ArrayView2, Axis};
use rand::SeedableRng;

/// Which leaf is split next.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BisectingStrategy {
    /// The leaf of largest inertia (sum of weighted squared distances to its centre; the
    /// default, as scikit-learn's `"biggest_inertia"`).
    #[default]
    BiggestInertia,
    /// The leaf of most points (counted, not weighted, as scikit-learn's `"largest_cluster"`).
    LargestCluster,
}

/// How each split's two starting centres are chosen.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum BisectingInit {
    /// Two distinct points of the leaf at random, drawn by weight (the default, as
    /// scikit-learn's).
    #[default]
    Random,
    /// Greedy k-means++ on the leaf.
    KMeansPlusPlus,
    /// The starting centres of every split in order (k − 1 arrays of 2 × d); one run each.
    Given(Vec<Array2<f64>>),
}

/// Bisecting k-means.
///
/// ```
/// use clustr::prelude::*;
/// use clustr::kmeans::BisectingKMeans;
/// let x = ndarray::array![[0.0], [1.0], [10.0], [11.0], [20.0], [21.0]];
/// let model = BisectingKMeans::new(3).fit(&x.view())?;
/// assert_eq!(model.n_clusters(), 3);
/// assert!((model.inertia - 1.5).abs() < 1e-12);
/// # Ok::<(), clustr::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct BisectingKMeans {
    /// Number of clusters (leaves).
    pub k: usize,
    /// The starts of each split (default random points).
    pub init: BisectingInit,
    /// 2-means runs per split, the lowest inertia kept (default 1).
    pub n_init: usize,
    /// Iterations of each run (default 300).
    pub max_iter: usize,
    /// Relative tolerance (default 1e-4), multiplied by the whole data's mean feature
    /// variance.
    pub tol: f64,
    /// Lloyd or Elkan (default Lloyd, as scikit-learn's; the same result).
    pub algorithm: Algorithm,
    /// Which leaf is split next.
    pub bisecting_strategy: BisectingStrategy,
    /// Seed.
    pub seed: u64,
    /// Progress callback (after each split: step i of k − 1).
    pub progress: Option<ProgressFn>,
    /// Weight of each point (`None`: all 1).
    pub sample_weight: Option<Vec<f64>>,
}

impl BisectingKMeans {
    /// Bisecting k-means into `k` clusters with scikit-learn's defaults.
    pub fn new(k: usize) -> Self {
        BisectingKMeans {
            k,
            init: BisectingInit::Random,
            n_init: 1,
            max_iter: 300,
            tol: 1e-4,
            algorithm: Algorithm::Lloyd,
            bisecting_strategy: BisectingStrategy::BiggestInertia,
            seed: 0,
            progress: None,
            sample_weight: None,
        }
    }
    /// The starts of each split.
    pub fn init(mut self, init: BisectingInit) -> Self {
        self.init = init;
        self
    }
    /// Runs per split.
    pub fn n_init(mut self, n: usize) -> Self {
        self.n_init = n;
        self
    }
    /// Iterations of each run.
    pub fn max_iter(mut self, m: usize) -> Self {
        self.max_iter = m;
        self
    }
    /// Relative tolerance.
    pub fn tol(mut self, t: f64) -> Self {
        self.tol = t;
        self
    }
    /// Lloyd or Elkan.
    pub fn algorithm(mut self, a: Algorithm) -> Self {
        self.algorithm = a;
        self
    }
    /// Which leaf is split next.
    pub fn bisecting_strategy(mut self, s: BisectingStrategy) -> Self {
        self.bisecting_strategy = s;
        self
    }
    /// Weight of each point.
    pub fn sample_weight(mut self, w: Vec<f64>) -> Self {
        self.sample_weight = Some(w);
        self
    }

    /// The best of `n_init` 2-means runs on one cluster's points (the `split`-th split), a
    /// run replacing the best only when its inertia is lower by a relative 1e-6.
    fn bisect<F: Scalar>(
        &self,
        sub: ArrayView2<F>,
        w: Option<&[f64]>,
        split: usize,
        tol: f64,
        rng: &mut SeededRng,
    ) -> Result<KMeansModel<F>> {
        let comm = single_process();
        let part = Partition::of(sub.nrows(), &*comm);
        let mut best: Option<KMeansModel<F>> = None;
        for _ in 0..self.n_init {
            let centers = match &self.init {
                BisectingInit::Given(starts) => starts[split].mapv(F::from_f64_lossy),
                BisectingInit::Random => sub.select(Axis(0), &random_rows(rng, sub.nrows(), 2, w)?),
                BisectingInit::KMeansPlusPlus => {
                    sub.select(Axis(0), &greedy_kmeans_plus_plus(sub, w, 2, rng, part, &*comm)?)
                }
            };
            let backend = AnyBackend::default();
            let run = lloyd(
                sub,
                w,
                part,
                &*comm,
                &backend,
                centers,
                self.algorithm,
                self.max_iter,
                tol,
                None,
            )?;
            if best
                .as_ref()
                .is_none_or(|b| run.inertia < b.inertia * (1.0 - 1e-6))
            {
                best = Some(run);
            }
        }
        Ok(best.expect("n_init >= 1"))
    }

    fn validate(&self, x: ArrayView2<'_, impl Scalar>) -> Result<()> {
        check_points(x)?;
        check_k(self.k, x.nrows())?;
        if self.n_init == 0 {
            return Err(Error::param("n_init", 0, "at least one run"));
        }
        if !(self.tol >= 0.0 && self.tol.is_finite()) {
            return Err(Error::param("tol", self.tol, "must be finite and non-negative"));
        }
        if matches!(self.algorithm, Algorithm::Auto | Algorithm::Hamerly) {
            return Err(Error::param(
                "algorithm",
                format!("{:?}", self.algorithm),
                "must be lloyd or elkan",
            ));
        }
        if let Some(w) = &self.sample_weight {
            check_sample_weight(w, x.nrows(), false)?;
            check_positive_weights(w, self.k)?;
        }
        if let BisectingInit::Given(starts) = &self.init {
            if starts.len() != self.k - 1 || self.n_init != 1 {
                return Err(Error::param(
                    "init",
                    format!("{} arrays", starts.len()),
                    format!("needs k - 1 = {} arrays of 2 x d and n_init = 1", self.k - 1),
                ));
            }
            for s in starts {
                if s.dim() != (2, x.ncols()) || s.iter().any(|v| !v.is_finite()) {
                    return Err(Error::param(
                        "init",
                        format!("{:?}", s.dim()),
                        "each start is 2 x d and finite",
                    ));
                }
            }
        }
        Ok(())
    }
}

shared_setters!(BisectingKMeans { seed, progress });

impl MemoryEstimate for BisectingKMeans {
    /// A copy of the leaf being split (at most n × d), its labels and two runs' centres.
    fn memory_estimate(&self, n: usize, d: usize, elem: usize) -> u64 {
        product(&[n, d, elem]).saturating_add(product(&[n, 32]))
    }
}

/// A fitted bisecting k-means: the leaves' centres and the tree that assigns new points.
#[derive(Clone, Debug, PartialEq)]
pub struct BisectingKMeansModel<F> {
    /// Centres of the clusters (the leaves, left before right), k × d.
    pub centers: Array2<F>,
    /// Cluster of each point.
    pub labels: Vec<i64>,
    /// Sum of weighted squared distances to the assigned centre.
    pub inertia: f64,
    /// Iterations of the kept runs, summed over the splits.
    pub n_iter: usize,
    /// Whether every kept run met the stopping rule before `max_iter`.
    pub converged: bool,
    /// The centre of every node of the tree (the root first, then the two halves of each
    /// split in split order), (2k − 1) × d.
    pub tree_centers: Array2<F>,
    /// The children (left, right) of each node; `None` for a leaf.
    pub tree_children: Vec<Option<(usize, usize)>>,
}

impl<F: Scalar> Clustering for BisectingKMeansModel<F> {
    fn labels(&self) -> &[i64] {
        &self.labels
    }
    fn loss(&self) -> Option<f64> {
        Some(self.inertia)
    }
    fn n_iter(&self) -> usize {
        self.n_iter
    }
    fn converged(&self) -> bool {
        self.converged
    }
}

impl<F: Scalar> BisectingKMeansModel<F> {
    /// A model that assigns new points from its tree alone (no training labels or summary),
    /// checked: finite centres within the range a fit accepts, and a tree: every node but the
    /// root the child of exactly one node listed before it.
    pub fn from_tree(tree_centers: Array2<F>, tree_children: Vec<Option<(usize, usize)>>) -> Result<Self> {
        check_points(tree_centers.view())?;
        check_magnitude(tree_centers.view(), Arithmetic::SQUARES, "k-means")?;
        let m = tree_centers.nrows();
        let bad = |why: String| Error::param("tree_children", format!("{m} nodes"), why);
        if tree_children.len() != m {
            return Err(bad(format!("{} entries for {m} centres", tree_children.len())));
        }
        let mut parents = vec![0usize; m];
        for (node, children) in tree_children.iter().enumerate() {
            if let Some((l, r)) = *children {
                for c in [l, r] {
                    if c <= node || c >= m {
                        return Err(bad(format!("node {node} has child {c}")));
                    }
                    parents[c] += 1;
                }
            }
        }
        if parents[0] != 0 || parents[1..].iter().any(|&p| p != 1) {
            return Err(bad("not a tree: every node but the root needs one parent".into()));
        }
        let mut order = Vec::new();
        tree_leaves(&tree_children, 0, &mut order);
        Ok(BisectingKMeansModel {
            centers: tree_centers.select(Axis(0), &order),
            labels: Vec::new(),
            inertia: 0.0,
            n_iter: 0,
            converged: true,
            tree_centers,
            tree_children,
        })
    }

    /// The label of each node of the tree that is a leaf, in the leaves' order.
    fn leaf_labels(&self) -> Vec<Option<usize>> {
        let mut order = Vec::new();
        tree_leaves(&self.tree_children, 0, &mut order);
        let mut label = vec![None; self.tree_children.len()];
        for (l, id) in order.into_iter().enumerate() {
            label[id] = Some(l);
        }
        label
    }

    /// Euclidean distance of each point to each centre (n × k), scikit-learn's `transform`.
    pub fn transform(&self, x: ArrayView2<F>) -> Result<Array2<F>> {
        centre_distances(x, self.centers.view())
    }
}

impl<F: Scalar> Predict<ArrayView2<'_, F>> for BisectingKMeansModel<F> {
    type Output = Vec<i64>;
    /// Down the tree from the root, to the nearer of each node's two halves (the left on a
    /// tie), as scikit-learn's `predict`; not always the nearest leaf centre.
    fn predict(&self, x: &ArrayView2<'_, F>) -> Result<Vec<i64>> {
        check_new_points(
            *x,
            self.tree_centers.view(),
            Arithmetic::SQUARES,
            "bisecting k-means",
        )?;
        let x = crate::data::standard_layout(*x);
        let label = self.leaf_labels();
        let centre = |id: usize| self.tree_centers.row(id);
        Ok(x.rows()
            .into_iter()
            .map(|row| {
                let row = row.as_slice().expect("standard layout");
                let mut node = 0;
                while let Some((l, r)) = self.tree_children[node] {
                    let dl = F::sqeuclidean(row, centre(l).as_slice().expect("standard"));
                    let dr = F::sqeuclidean(row, centre(r).as_slice().expect("standard"));
                    node = if dr < dl { r } else { l };
                }
                label[node].map_or(-1, |l| l as i64)
            })
            .collect())
    }
}

/// The stored form of a bisecting k-means model: the tree and the fit's summary.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct StoredBisectingKMeans {
    tree_centers: StoredArray,
    tree_children: Vec<Option<(usize, usize)>>,
    inertia: f64,
    n_iter: usize,
    converged: bool,
}

impl<F: Scalar> SaveLoad for BisectingKMeansModel<F> {
    const ALGORITHM: &'static str = "bisecting-kmeans";
    type Stored = StoredBisectingKMeans;
    fn to_stored(&self) -> StoredBisectingKMeans {
        StoredBisectingKMeans {
            tree_centers: StoredArray::from_array(&self.tree_centers),
            tree_children: self.tree_children.clone(),
            inertia: self.inertia,
            n_iter: self.n_iter,
            converged: self.converged,
        }
    }
    /// The model without training labels (see [`BisectingKMeansModel::from_tree`]).
    fn from_stored(s: StoredBisectingKMeans) -> Result<Self> {
        let mut model =
            BisectingKMeansModel::from_tree(s.tree_centers.to_matrix("tree_centers")?, s.tree_children)?;
        (model.inertia, model.n_iter, model.converged) = (s.inertia, s.n_iter, s.converged);
        Ok(model)
    }
}

/// The inertia of each cluster: Σ wᵢ·‖xᵢ − c(labelᵢ)‖² over its points (`x` in standard
/// layout).
fn cluster_inertias<F: Scalar>(
    x: ArrayView2<F>,
    w: Option<&[f64]>,
    labels: &[i64],
    centers: ArrayView2<F>,
) -> Vec<f64> {
    let mut sums = vec![0.0; centers.nrows()];
    for (i, (row, &l)) in x.rows().into_iter().zip(labels).enumerate() {
        let c = centers.row(l as usize);
        let dist = F::sqeuclidean(row.as_slice().expect("standard"), c.as_slice().expect("standard"));
        sums[l as usize] += dist.to_f64_exact() * w.map_or(1.0, |w| w[i]);
    }
    sums
}

/// The leaves under `node`, left before right.
fn tree_leaves(children: &[Option<(usize, usize)>], node: usize, out: &mut Vec<usize>) {
    match children[node] {
        None => out.push(node),
        Some((l, r)) => {
            tree_leaves(children, l, out);
            tree_leaves(children, r, out);
        }
    }
}

impl<F: Scalar> Fit<ArrayView2<'_, F>> for BisectingKMeans {
    type Model = BisectingKMeansModel<F>;

    fn fit(&self, x: &ArrayView2<'_, F>) -> Result<BisectingKMeansModel<F>> {
        self.validate(*x)?;
        check_magnitude(*x, Arithmetic::SQUARES, "bisecting k-means")?;
        check_fit(
            self,
            "bisecting k-means",
            x.nrows(),
            x.ncols(),
            size_of::<F>(),
            crate::error::hints::KMEANS,
        )?;
        let x = crate::data::standard_layout(*x);
        let x = x.view();
        let (n, d) = x.dim();
        let tol = self.tol * mean_variance(x, n, &*single_process());
        let scaled = ScaledWeights::of(self.sample_weight.as_deref());
        let w = scaled.as_ref().map(|s| s.weights.as_slice());
        let mut rng = SeededRng::seed_from_u64(self.seed);
        // The tree, node by node: children, centre (rows of `node_centers`), score, and the
        // points of a leaf (taken when it is split).
        let mut children: Vec<Option<(usize, usize)>> = vec![None];
        let mut node_centers: Vec<F> = x.mean_axis(Axis(0)).expect("n >= 1").to_vec();
        let mut scores = vec![0.0];
        let mut members: Vec<Vec<usize>> = vec![(0..n).collect()];
        let (mut n_iter, mut converged) = (0, true);
        for split in 0..self.k - 1 {
            let mut leaf_ids = Vec::new();
            tree_leaves(&children, 0, &mut leaf_ids);
            // The first leaf of the highest score.
            let chosen = leaf_ids
                .into_iter()
                .reduce(|best, id| if scores[id] > scores[best] { id } else { best })
                .expect("the root is a leaf or has leaves");
            let indices = std::mem::take(&mut members[chosen]);
            if indices.len() < 2 {
                return Err(Error::param(
                    "n_clusters",
                    self.k,
                    format!(
                        "the cluster to split next has {} point(s): too many clusters for these points",
                        indices.len()
                    ),
                ));
            }
            let sub = x.select(Axis(0), &indices);
            let sub_w: Option<Vec<f64>> = w.map(|w| indices.iter().map(|&i| w[i]).collect());
            let best = self.bisect(sub.view(), sub_w.as_deref(), split, tol, &mut rng)?;
            n_iter += best.n_iter;
            converged &= best.converged;
            let mut halves = [Vec::new(), Vec::new()];
            for (&i, &label) in indices.iter().zip(&best.labels) {
                halves[label as usize].push(i);
            }
            scores.extend(match self.bisecting_strategy {
                BisectingStrategy::BiggestInertia => {
                    cluster_inertias(sub.view(), sub_w.as_deref(), &best.labels, best.centers.view())
                }
                BisectingStrategy::LargestCluster => halves.iter().map(|h| h.len() as f64).collect(),
            });
            node_centers.extend(best.centers.iter());
            members.extend(halves);
            children[chosen] = Some((children.len(), children.len() + 1));
            children.extend([None, None]);
            if let Some(p) = &self.progress {
                p.report(&crate::estimator::Progress {
                    iteration: split + 1,
                    max_iter: Some(self.k - 1),
                    objective: None,
                })?;
            }
        }
        let tree_centers =
            Array2::from_shape_vec((children.len(), d), node_centers).expect("a centre per node");
        let mut leaf_ids = Vec::new();
        tree_leaves(&children, 0, &mut leaf_ids);
        let centers = tree_centers.select(Axis(0), &leaf_ids);
        let mut labels = vec![0i64; n];
        for (label, &id) in leaf_ids.iter().enumerate() {
            for &i in &members[id] {
                labels[i] = label as i64;
            }
        }
        let mut inertia = cluster_inertias(x, w, &labels, centers.view()).iter().sum();
        if let Some(s) = &scaled {
            inertia = s.unscale(inertia, "inertia")?;
        }
        Ok(BisectingKMeansModel {
            centers,
            labels,
            inertia,
            n_iter,
            converged,
            tree_centers,
            tree_children: children,
        })
    }
}
