//! Lloyd's iteration (Lloyd 1982) as scikit-learn runs it: assign every point to its nearest
//! centre, move each centre to its points' (weighted) mean, re-seed empty clusters, stop when
//! the labels no longer change or the squared centre shift falls to the tolerance; then a
//! final assignment. The assignment step is Lloyd's own (the backend's nearest-centre kernel,
//! summed while the chunk is in cache) or one of the bound-keeping steps of
//! [`super::elkan`] and [`super::hamerly`], which give the same labels.

use super::elkan::Elkan;
use super::hamerly::Hamerly;
use super::points::{centre_norms, Points};
use super::{dist, weight_of, Algorithm, KMeansModel, CHUNK};
use crate::backend::{AnyBackend, Backend, Distances};
use crate::comm::{Communicator, Partition};
use crate::error::Result;
use crate::estimator::{Progress, ProgressFn};
use crate::scalar::Scalar;
use ndarray::{Array2, ArrayView2, Axis};
use rayon::prelude::*;

/// Rows side by side in the sums: row i is added to copy i mod `COPIES`, so consecutive rows
/// of one cluster do not wait on each other's additions; the copies are added in order when a
/// chunk is merged.
pub(super) const COPIES: usize = 4;

/// What one assignment pass gives the update, for dense or sparse rows.
pub(crate) struct Totals {
    /// Per-cluster weighted coordinate sums, k × d.
    pub(crate) sums: Vec<f64>,
    /// Per-cluster total weights.
    pub(crate) weights: Vec<f64>,
    /// The weighted sum of the pass's distances (0 where the pass measures none).
    pub(crate) inertia: f64,
    /// The cluster of each row.
    pub(crate) labels: Vec<usize>,
}

/// What one assignment pass over dense rows gathers: per-cluster weighted coordinate sums and total weights
/// (f64), the weighted inertia and the labels — per chunk of [`CHUNK`] rows in row order (in
/// [`COPIES`] interleaved copies), then chunk by chunk in order, so the sums do not depend on
/// the thread count. Without sample weights every weight is 1, which leaves each product
/// exact.
struct Sums {
    /// `COPIES` × k × d; after [`Sums::merge`] the total is in the first copy.
    sums: Vec<f64>,
    /// `COPIES` × k.
    weights: Vec<f64>,
    inertia: [f64; COPIES],
    labels: Vec<usize>,
    k: usize,
    d: usize,
}

impl Sums {
    fn new(k: usize, d: usize) -> Self {
        Sums {
            sums: vec![0.0; COPIES * k * d],
            weights: vec![0.0; COPIES * k],
            inertia: [0.0; COPIES],
            labels: Vec::new(),
            k,
            d,
        }
    }

    /// Adds `rows` (rows `first..` of the data) with their clusters.
    fn add<F: Scalar>(
        &mut self,
        rows: ArrayView2<F>,
        first: usize,
        w: Option<&[f64]>,
        labels: impl Iterator<Item = usize>,
    ) {
        let (k, d) = (self.k, self.d);
        debug_assert!(d > 0, "points have coordinates");
        let xs = rows.as_slice().expect("standard layout");
        self.labels.reserve(rows.nrows());
        for (i, (row, l)) in xs.chunks_exact(d).zip(labels).enumerate() {
            let copy = (first + i) % COPIES;
            self.labels.push(l);
            let sums = &mut self.sums[(copy * k + l) * d..(copy * k + l + 1) * d];
            match w {
                // (a weight of 1 leaves every product exact: the same sums as weighted by 1)
                None => {
                    self.weights[copy * k + l] += 1.0;
                    sums.iter_mut().zip(row).for_each(|(s, v)| *s += v.to_f64_exact());
                }
                Some(w) => {
                    let wi = w[first + i];
                    self.weights[copy * k + l] += wi;
                    sums.iter_mut()
                        .zip(row)
                        .for_each(|(s, v)| *s += wi * v.to_f64_exact());
                }
            }
        }
    }

    /// Adds the (weighted) distances of rows `first..` to the inertia.
    fn add_inertia<F: Scalar>(
        &mut self,
        first: usize,
        w: Option<&[f64]>,
        distances: impl Iterator<Item = F>,
    ) {
        for (i, v) in distances.enumerate() {
            self.inertia[(first + i) % COPIES] += weight_of(w, first + i) * v.to_f64_exact();
        }
    }

    /// Appends a later chunk's sums (its copies added in order, then to the first copy here).
    fn merge(&mut self, later: Sums) {
        let (kd, k) = (self.k * self.d, self.k);
        let fold =
            |parts: &[f64], len: usize, i: usize| (1..COPIES).fold(parts[i], |a, c| a + parts[c * len + i]);
        for (i, a) in self.sums[..kd].iter_mut().enumerate() {
            *a += fold(&later.sums, kd, i);
        }
        for (i, a) in self.weights[..k].iter_mut().enumerate() {
            *a += fold(&later.weights, k, i);
        }
        self.inertia[0] += later.inertia.iter().sum::<f64>();
        self.labels.extend(later.labels);
    }

    /// The totals of a merged pass.
    fn into_totals(mut self) -> Totals {
        self.sums.truncate(self.k * self.d);
        self.weights.truncate(self.k);
        Totals {
            sums: self.sums,
            weights: self.weights,
            inertia: self.inertia[0],
            labels: self.labels,
        }
    }

    /// Folds `parts` (chunks of `x` in order) over waves of one chunk per thread, so at most
    /// that many k × d partial sums exist at once.
    fn over<F: Scalar>(
        x: ArrayView2<F>,
        k: usize,
        parts: impl Fn(ArrayView2<F>, usize) -> Result<Vec<Sums>>,
    ) -> Result<Sums> {
        let mut total = Sums::new(k, x.ncols());
        let wave = CHUNK * rayon::current_num_threads().max(1);
        for start in (0..x.nrows()).step_by(wave) {
            let rows = x.slice(ndarray::s![start..(start + wave).min(x.nrows()), ..]);
            for part in parts(rows, start)? {
                total.merge(part);
            }
        }
        Ok(total)
    }
}

/// Per-cluster weighted coordinate sums and weights of `labels`, in f64.
pub(super) fn dense_cluster_sums<F: Scalar>(
    x: ArrayView2<F>,
    w: Option<&[f64]>,
    labels: &[usize],
    k: usize,
) -> Totals {
    let d = x.ncols();
    let parts = |rows: ArrayView2<F>, start: usize| -> Result<Vec<Sums>> {
        Ok(rows
            .axis_chunks_iter(Axis(0), CHUNK)
            .into_par_iter()
            .enumerate()
            .map(|(c, rows)| {
                let mut part = Sums::new(k, d);
                let first = start + c * CHUNK;
                part.add(
                    rows,
                    first,
                    w,
                    labels[first..first + rows.nrows()].iter().copied(),
                );
                part
            })
            .collect())
    };
    Sums::over(x, k, parts)
        .unwrap_or_else(|_| Sums::new(k, d))
        .into_totals()
}

/// Lloyd's assignment and the sums of the update in one pass over the data: each chunk's
/// nearest centres, then its rows added to their clusters while still in cache. The inertia
/// is that of `distances` (approximate ones suffice for a report).
pub(super) fn dense_assign_and_sum<F: Scalar>(
    x: ArrayView2<F>,
    w: Option<&[f64]>,
    backend: &AnyBackend,
    centers: &Array2<F>,
    distances: Distances,
) -> Result<Totals> {
    let (k, d) = centers.dim();
    let sums = Sums::over(x, k, |rows, start| {
        backend.nearest_fold(
            rows,
            centers.view(),
            distances,
            CHUNK,
            || Sums::new(k, d),
            |part, first, rows, near| {
                let first = start + first;
                part.add_inertia(first, w, near.iter().map(|n| n.distance));
                part.add(rows, first, w, near.iter().map(|n| n.index));
            },
        )
    })?;
    Ok(sums.into_totals())
}

/// One Lloyd run from `centers` (on this process's rows, sums combined over `comm`).
#[allow(clippy::too_many_arguments)]
pub(super) fn lloyd<F: Scalar, X: Points<F>>(
    x: X,
    w: Option<&[f64]>,
    part: Partition,
    comm: &dyn Communicator,
    backend: &AnyBackend,
    mut centers: Array2<F>,
    algorithm: Algorithm,
    max_iter: usize,
    tol: f64,
    progress: Option<&ProgressFn>,
) -> Result<KMeansModel<F>> {
    let (k, d) = centers.dim();
    let mut labels_old: Option<Vec<usize>> = None;
    let (mut n_iter, mut converged) = (0, false);
    let mut bounds: Option<Bounds> = None;
    while n_iter < max_iter {
        n_iter += 1;
        let (step, inertia) = match algorithm {
            Algorithm::Lloyd | Algorithm::Auto => {
                // (the inertia of an iteration is only reported)
                let t = x.assign_and_sum(w, backend, &centers, Distances::Approximate)?;
                let mut inertia = [t.inertia];
                comm.allreduce_sum(&mut inertia);
                (t, Some(inertia[0]))
            }
            Algorithm::Hamerly | Algorithm::Elkan => {
                let b = match bounds.take() {
                    None if algorithm == Algorithm::Hamerly => Bounds::Hamerly(Hamerly::new(x, &centers)?),
                    None => Bounds::Elkan(Elkan::new(x, &centers)),
                    Some(mut b) => {
                        b.update(x, &centers)?;
                        b
                    }
                };
                let t = x.cluster_sums(w, b.labels(), k);
                bounds = Some(b);
                // (the bounds keep no distances: the inertia only when asked, at a pass's cost)
                let inertia = match progress {
                    Some(p) if p.wants_objective() => {
                        let mut i = [x
                            .assign_and_sum(w, backend, &centers, Distances::Approximate)?
                            .inertia];
                        comm.allreduce_sum(&mut i);
                        Some(i[0])
                    }
                    _ => None,
                };
                (t, inertia)
            }
        };
        let Totals {
            sums,
            mut weights,
            labels,
            ..
        } = step;
        let mut sums = Array2::from_shape_vec((k, d), sums).expect("k x d");
        // (only the bounds need the old centres once the new ones are made)
        let old_centers = bounds.is_some().then(|| centers.clone());
        comm.allreduce_sum(sums.as_slice_mut().expect("standard layout"));
        comm.allreduce_sum(&mut weights);
        relocate_empty_clusters(x, w, part, comm, &centers, &labels, &mut sums, &mut weights);
        let mut shift = 0.0;
        for (j, &c) in weights.iter().enumerate() {
            for f in 0..d {
                let new = if c > 0.0 {
                    sums[[j, f]] / c
                } else {
                    centers[[j, f]].to_f64_exact()
                };
                shift += (new - centers[[j, f]].to_f64_exact()).powi(2);
                centers[[j, f]] = F::from_f64_lossy(new);
            }
        }
        drop(sums);
        if let Some(p) = progress {
            p.report(&Progress {
                iteration: n_iter,
                max_iter: Some(max_iter),
                objective: inertia,
            })?;
        }
        if let (Some(h), Some(old)) = (bounds.as_mut(), old_centers) {
            h.moved(&old, &centers);
        }
        let mut changed = [u64::from(labels_old.as_ref() != Some(&labels))];
        comm.allreduce_sum_u64(&mut changed);
        if changed[0] == 0 {
            converged = true; // strict convergence: the labels did not change
            if let Some(p) = progress {
                p.phase(&format!(
                    "Converged at iteration {}: strict convergence.",
                    n_iter - 1
                ));
            }
            break;
        }
        if shift <= tol {
            converged = true;
            if let Some(p) = progress {
                p.phase(&format!(
                    "Converged at iteration {}: center shift {shift:e} within tolerance {tol:e}.",
                    n_iter - 1
                ));
            }
            break;
        }
        labels_old = Some(labels);
    }
    // The final assignment, so labels, centres and inertia agree (after a strict convergence
    // the labels are already those of the final centres).
    let t = x.assign_and_sum(w, backend, &centers, Distances::Exact)?;
    let mut inertia = [t.inertia];
    comm.allreduce_sum(&mut inertia);
    Ok(KMeansModel {
        centers,
        labels: t.labels.into_iter().map(|l| l as i64).collect(),
        inertia: inertia[0],
        n_iter,
        converged,
        algorithm,
    })
}

/// The bound-keeping assignment steps.
enum Bounds {
    Hamerly(Hamerly),
    Elkan(Elkan),
}

impl Bounds {
    fn labels(&self) -> &[usize] {
        match self {
            Bounds::Hamerly(h) => &h.labels,
            Bounds::Elkan(e) => &e.labels,
        }
    }
    fn update<F: Scalar, X: Points<F>>(&mut self, x: X, centers: &Array2<F>) -> Result<()> {
        match self {
            Bounds::Hamerly(h) => h.update(x, centers),
            Bounds::Elkan(e) => {
                e.update(x, centers);
                Ok(())
            }
        }
    }
    fn moved<F: Scalar>(&mut self, old: &Array2<F>, new: &Array2<F>) {
        let drift = drifts(old, new);
        match self {
            Bounds::Hamerly(h) => h.moved(&drift),
            Bounds::Elkan(e) => e.moved(&drift),
        }
    }
}

/// How far each centre moved.
fn drifts<F: Scalar>(old: &Array2<F>, new: &Array2<F>) -> Vec<f64> {
    (0..new.nrows())
        .map(|j| {
            dist(
                old.row(j).to_slice().expect("contiguous"),
                new.row(j).to_slice().expect("contiguous"),
            )
        })
        .collect()
}

/// scikit-learn's `_relocate_empty_clusters_dense`: each cluster of no weight takes the point
/// farthest from its assigned centre (farthest first, ties to the lowest row); the point and
/// its weight leave its old cluster. Over processes, each proposes its farthest points and the
/// farthest of all are taken (`sums` and `weights` are already the totals).
#[allow(clippy::too_many_arguments)]
fn relocate_empty_clusters<F: Scalar, X: Points<F>>(
    x: X,
    w: Option<&[f64]>,
    part: Partition,
    comm: &dyn Communicator,
    centers: &Array2<F>,
    labels: &[usize],
    sums: &mut Array2<f64>,
    weights: &mut [f64],
) {
    let empty: Vec<usize> = (0..weights.len()).filter(|&j| weights[j] == 0.0).collect();
    if empty.is_empty() {
        return;
    }
    let norms = centre_norms(centers);
    let sq = x.sq_dist();
    let dist: Vec<f64> = (0..x.nrows())
        .into_par_iter()
        .map(|i| {
            sq(
                i,
                centers.row(labels[i]).to_slice().expect("contiguous"),
                norms[labels[i]],
            )
        })
        .collect();
    let mut order: Vec<usize> = (0..x.nrows()).collect();
    order.sort_by(|&a, &b| dist[b].total_cmp(&dist[a]).then(a.cmp(&b)));
    // This process's farthest points: (distance, global row, label, weight, coordinates),
    // padded.
    let (m, d) = (empty.len(), x.ncols());
    let width = 4 + d;
    let mut mine = vec![f64::NEG_INFINITY; m * width];
    for (slot, &i) in order.iter().take(m).enumerate() {
        let c = &mut mine[slot * width..(slot + 1) * width];
        c[0] = dist[i];
        c[1] = (part.offset + i) as f64;
        c[2] = labels[i] as f64;
        c[3] = weight_of(w, i);
        c[4..].fill(0.0);
        x.add_row(i, 1.0, &mut c[4..]);
    }
    let all = comm.all_gather_f64(&mine);
    let mut candidates: Vec<&[f64]> = all.chunks(width).filter(|c| c[1] >= 0.0).collect();
    candidates.sort_by(|a, b| b[0].total_cmp(&a[0]).then(a[1].total_cmp(&b[1])));
    if candidates.first().is_none_or(|c| c[0] == 0.0) {
        // Every point sits on its centre (more centres than distinct points): moving a centre
        // would gain nothing, so none moves (as scikit-learn).
        return;
    }
    for (&new_cluster, c) in empty.iter().zip(&candidates) {
        let (old, wi) = (c[2] as usize, c[3]);
        for f in 0..d {
            sums[[old, f]] -= wi * c[4 + f];
            sums[[new_cluster, f]] = wi * c[4 + f];
        }
        weights[new_cluster] = wi;
        weights[old] -= wi;
    }
}
