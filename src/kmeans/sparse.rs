//! k-means on sparse rows ([`CsrView`]) with scikit-learn's semantics (its `_k_means_lloyd`
//! and `_k_means_elkan` on CSR input): centres dense, the nearest centre of a row the argmin
//! of ‖c‖² − 2 x·c (‖x‖² is common to all centres), a row's exact distance to one centre
//! Σ over its stored values of (xⱼ − cⱼ)² − cⱼ², plus ‖c‖² (`_euclidean_sparse_dense`).
//!
//! Where we differ from scikit-learn, for speed and memory, not for results:
//! - x·c for all centres at once: the centres are transposed (d × k) for the assignment, so
//!   each stored value xⱼ adds xⱼ·(row j) to k running sums — contiguous — where scikit-learn
//!   gathers cⱼ from each of the k centre rows (a cache line per value and centre). Every sum
//!   still runs over the row's values in index order, with a separate multiply and add (no
//!   fused multiply-add), as scikit-learn's compiled loop does.
//! - The update's sums are made per cluster, each over its rows in row order (the clusters in
//!   parallel): no per-thread k × d partial sums (scikit-learn keeps one per thread), and the
//!   result does not depend on the thread count.
//!
//! Memory beyond the matrix: the centres, their transpose during the assignment, then the
//! sums (k × d each, never all three at once with the labels' pass), labels and row norms.

use super::lloyd::Totals;
use super::{weight_of, Algorithm, KMeans, KMeansModel, CHUNK};
use crate::backend::{Backend, Distances, Nearest, NearestTwo, Pick};
use crate::comm::{Partition, SingleProcess};
use crate::data::validate::{check_extents, check_same_len, column_extents, merge_extents, Arithmetic};
use crate::data::CsrView;
use crate::error::{Error, Result};
use crate::estimator::{Fit, Predict};
use crate::memory::product;
use crate::scalar::simd::Isa;
use crate::scalar::Scalar;
use ndarray::Array2;
use rayon::prelude::*;

/// Row `(idx, val)`'s squared distance to `c` (Σc² = `c_norm`) in f64, scikit-learn's
/// `_euclidean_sparse_dense` (clamped at 0).
#[inline]
pub(super) fn sq_dist<F: Scalar>((idx, val): (&[u32], &[F]), c: &[F], c_norm: f64) -> f64 {
    let mut r = 0.0f64;
    for (&j, v) in idx.iter().zip(val) {
        let b = c[j as usize].to_f64_exact();
        let t = v.to_f64_exact() - b;
        r += t * t - b * b;
    }
    (r + c_norm).max(0.0)
}

/// The centres as the assignment reads them: transposed (d × k) and their squared norms.
struct Transposed<F> {
    ct: Vec<F>,
    norms: Vec<F>,
    k: usize,
}

impl<F: Scalar> Transposed<F> {
    fn of(centers: &Array2<F>) -> Self {
        let (k, d) = centers.dim();
        let mut ct = vec![F::zero(); k * d];
        for (l, c) in centers.rows().into_iter().enumerate() {
            for (j, &v) in c.iter().enumerate() {
                ct[j * k + l] = v;
            }
        }
        let norms = super::points::centre_norms(centers)
            .into_iter()
            .map(F::from_f64_lossy)
            .collect();
        Transposed { ct, norms, k }
    }

    /// Row i's nearest centre by ‖c‖² − 2 x·c (ties to the lowest index) and that score.
    #[inline(always)]
    fn nearest_row(&self, (idx, val): (&[u32], &[F]), acc: &mut [F]) -> (usize, F) {
        let k = self.k;
        acc.fill(F::zero());
        for (&j, &v) in idx.iter().zip(val) {
            let c = &self.ct[j as usize * k..(j as usize + 1) * k];
            for (a, &cj) in acc.iter_mut().zip(c) {
                *a += cj * v;
            }
        }
        let two = F::from_f64_lossy(2.0);
        let (mut best, mut score) = (0, F::infinity());
        for (l, (&a, &n)) in acc.iter().zip(&self.norms).enumerate() {
            let s = n - two * a;
            if s < score {
                (best, score) = (l, s);
            }
        }
        (best, score)
    }

    /// [`Transposed::nearest_row`] for rows `first..first + out.len()`.
    #[inline(always)]
    fn nearest_rows(&self, x: CsrView<F>, first: usize, out: &mut [(usize, F)]) {
        let mut acc = vec![F::zero(); self.k];
        for (t, o) in out.iter_mut().enumerate() {
            *o = self.nearest_row(x.row(first + t), &mut acc);
        }
    }

    /// [`Transposed::nearest_rows`] compiled for the machine's widest instructions.
    fn nearest_rows_best(&self, x: CsrView<F>, first: usize, out: &mut [(usize, F)]) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the instruction set is one the machine has (`Isa::detect`).
        unsafe {
            match Isa::detect() {
                Isa::Avx512 => return nearest_rows_avx512(self, x, first, out),
                Isa::Avx2Fma => return nearest_rows_avx2(self, x, first, out),
                Isa::Portable => {}
            }
        }
        self.nearest_rows(x, first, out);
    }
}

/// [`Transposed::nearest_rows`] compiled for AVX-512.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn nearest_rows_avx512<F: Scalar>(
    t: &Transposed<F>,
    x: CsrView<F>,
    first: usize,
    out: &mut [(usize, F)],
) {
    t.nearest_rows(x, first, out);
}

/// [`Transposed::nearest_rows`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn nearest_rows_avx2<F: Scalar>(
    t: &Transposed<F>,
    x: CsrView<F>,
    first: usize,
    out: &mut [(usize, F)],
) {
    t.nearest_rows(x, first, out);
}

/// The nearest centre of every row: labels and distances (squared; `Exact`: the row's exact
/// distance to its centre, `Approximate`: the score plus ‖x‖², clamped at 0).
pub(super) fn nearest<F: Scalar>(
    x: CsrView<F>,
    centers: &Array2<F>,
    distances: Distances,
) -> Vec<Nearest<F>> {
    let t = Transposed::of(centers);
    let n = x.nrows();
    let mut found = vec![(0usize, F::zero()); n];
    found
        .par_chunks_mut(CHUNK / 8)
        .enumerate()
        .for_each(|(c, out)| t.nearest_rows_best(x, c * (CHUNK / 8), out));
    drop(t);
    let norms = match distances {
        Distances::Exact => super::points::centre_norms(centers),
        Distances::Approximate => Vec::new(),
    };
    found
        .into_par_iter()
        .enumerate()
        .map(|(i, (l, score))| {
            let row = x.row(i);
            let distance = match distances {
                Distances::Exact => F::from_f64_lossy(sq_dist(
                    row,
                    centers.row(l).to_slice().expect("contiguous"),
                    norms[l],
                )),
                Distances::Approximate => {
                    let xx = row.1.iter().fold(F::zero(), |s, &v| s + v * v);
                    (score + xx).max(F::zero())
                }
            };
            Nearest { index: l, distance }
        })
        .collect()
}

/// Lloyd's assignment, then the update's sums (the transposed centres freed before the sums
/// are made); the inertia summed in fixed chunks in row order.
pub(super) fn assign_and_sum<F: Scalar>(
    x: CsrView<F>,
    w: Option<&[f64]>,
    centers: &Array2<F>,
    distances: Distances,
) -> Totals {
    let near = nearest(x, centers, distances);
    let parts: Vec<f64> = near
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(c, part)| {
            part.iter()
                .enumerate()
                .map(|(t, n)| weight_of(w, c * CHUNK + t) * n.distance.to_f64_exact())
                .sum()
        })
        .collect();
    let labels: Vec<usize> = near.into_iter().map(|n| n.index).collect();
    let mut totals = cluster_sums(x, w, &labels, centers.nrows());
    totals.inertia = parts.into_iter().sum();
    totals
}

/// The update's sums for `labels`: each cluster's weighted coordinate sums (k × d, f64) and
/// weight, over its rows in row order, the clusters in parallel.
pub(super) fn cluster_sums<F: Scalar>(
    x: CsrView<F>,
    w: Option<&[f64]>,
    labels: &[usize],
    k: usize,
) -> Totals {
    let d = x.ncols();
    // The rows of each cluster, in row order (a counting sort).
    let mut start = vec![0usize; k + 1];
    labels.iter().for_each(|&l| start[l + 1] += 1);
    for l in 0..k {
        start[l + 1] += start[l];
    }
    let mut next = start.clone();
    let mut by_cluster = vec![0usize; labels.len()];
    for (i, &l) in labels.iter().enumerate() {
        by_cluster[next[l]] = i;
        next[l] += 1;
    }
    let mut sums = vec![0.0f64; k * d];
    let weights: Vec<f64> = sums
        .par_chunks_mut(d)
        .enumerate()
        .map(|(l, s)| {
            let mut total = 0.0;
            for &i in &by_cluster[start[l]..start[l + 1]] {
                let (idx, val) = x.row(i);
                match w {
                    // (a weight of 1 leaves every product exact)
                    None => {
                        total += 1.0;
                        idx.iter()
                            .zip(val)
                            .for_each(|(&j, v)| s[j as usize] += v.to_f64_exact());
                    }
                    Some(w) => {
                        total += w[i];
                        idx.iter()
                            .zip(val)
                            .for_each(|(&j, v)| s[j as usize] += w[i] * v.to_f64_exact());
                    }
                }
            }
            total
        })
        .collect();
    Totals {
        sums,
        weights,
        inertia: 0.0,
        labels: labels.to_vec(),
    }
}

/// The nearest two centres (Euclidean, from [`sq_dist`]) of rows `rows` (all when `None`).
pub(super) fn nearest_two<F: Scalar>(
    x: CsrView<F>,
    rows: Option<&[usize]>,
    centers: &Array2<F>,
) -> Vec<NearestTwo<F>> {
    let norms = super::points::centre_norms(centers);
    let one = |i: usize| {
        let row = x.row(i);
        let mut pick = Pick::new(true);
        for (l, c) in centers.rows().into_iter().enumerate() {
            let v = sq_dist(row, c.to_slice().expect("contiguous"), norms[l]).sqrt();
            pick.offer(l, F::from_f64_lossy(v));
        }
        pick.result()
    };
    match rows {
        None => (0..x.nrows()).into_par_iter().map(one).collect(),
        Some(rows) => rows.par_iter().map(|&i| one(i)).collect(),
    }
}

/// Per feature, the population variance over the rows (implicit zeros included), averaged over
/// the features: scikit-learn's `_tolerance` on sparse input (`mean_variance_axis`).
pub(super) fn mean_variance<F: Scalar>(x: CsrView<F>) -> f64 {
    let (n, d) = (x.nrows() as f64, x.ncols());
    let mut sums = vec![0.0f64; d];
    let mut counts = vec![0usize; d];
    for i in 0..x.nrows() {
        let (idx, val) = x.row(i);
        for (&j, v) in idx.iter().zip(val) {
            sums[j as usize] += v.to_f64_exact();
            counts[j as usize] += 1;
        }
    }
    let means: Vec<f64> = sums.iter().map(|s| s / n).collect();
    let mut squares = vec![0.0f64; d];
    for i in 0..x.nrows() {
        let (idx, val) = x.row(i);
        for (&j, v) in idx.iter().zip(val) {
            squares[j as usize] += (v.to_f64_exact() - means[j as usize]).powi(2);
        }
    }
    // (each implicit zero differs from the mean by the mean)
    let total: f64 = (0..d)
        .map(|j| (squares[j] + (n - counts[j] as f64) * means[j].powi(2)) / n)
        .sum();
    total / d as f64
}

impl<F: Scalar> Fit<CsrView<'_, F>> for KMeans {
    type Model = KMeansModel<F>;

    /// k-means on sparse rows, on one process and the CPU. `Auto` runs Lloyd (measured the
    /// fastest on sparse rows: the transposed centres make its pass cheaper than the per-centre
    /// distances the bounds need).
    fn fit(&self, x: &CsrView<'_, F>) -> Result<KMeansModel<F>> {
        self.fit_sparse(*x, None)
    }
}

impl KMeans {
    /// [`Fit::fit`] on sparse rows from the given initial centres (k × d), moved in: with
    /// `init` = [`KMeansInit::Given`](super::KMeansInit::Given) the estimator holds its own copy of the centres and
    /// the fit makes another in the rows' element type, where this holds none (what matters
    /// when k × d is large beside the rows). `n_init` counts this start as the first run.
    pub fn fit_sparse_from<F: Scalar>(&self, x: CsrView<F>, centers: Array2<F>) -> Result<KMeansModel<F>> {
        super::check_start(centers.view(), self.k, x.ncols())?;
        self.fit_sparse(x, Some(centers))
    }

    fn fit_sparse<F: Scalar>(&self, x: CsrView<F>, start: Option<Array2<F>>) -> Result<KMeansModel<F>> {
        let (n, d) = (x.nrows(), x.ncols());
        if self.comm.size() > 1 {
            return Err(Error::Unsupported(
                "k-means on sparse rows runs on one process (a distributed run takes dense rows)".into(),
            ));
        }
        if self.backend.assigns_off_host() {
            return Err(Error::NotOnDevice(
                "k-means on sparse rows runs on the CPU".into(),
            ));
        }
        let part = Partition {
            offset: 0,
            n_global: n,
        };
        self.validate_params(n, d, part)?;
        check_extents::<F>(&x.column_extents(), n, Arithmetic::SQUARES, "k-means")?;
        crate::memory::check(
            || format!("k-means on {n} sparse rows of {d} columns, k = {}", self.k),
            sparse_memory_estimate(n, d, self.k, size_of::<F>()),
            crate::error::hints::KMEANS,
        )?;
        let tol = if self.tol == 0.0 {
            0.0
        } else {
            self.tol * mean_variance(x)
        };
        let algorithm = match self.algorithm {
            Algorithm::Auto => Algorithm::Lloyd,
            a => a,
        };
        self.runs(x, part, &SingleProcess, tol, algorithm, start)
    }
}

/// Bytes k-means allocates beside a sparse matrix of n rows and d columns: the centres, their
/// transpose or the sums (k × d, the larger element), the old centres where bounds are kept,
/// per row the labels (old, new, best), distances, weights and the seeding's candidates.
pub fn sparse_memory_estimate(n: usize, d: usize, k: usize, elem: usize) -> u64 {
    let trials = 3 + (k as f64).ln().max(0.0) as usize;
    product(&[k, d, 2 * elem + 8])
        .saturating_add(product(&[n, 40 + 8 * trials]))
        .saturating_add(product(&[n + k, k + 1, 8]).min(product(&[n, 16])))
}

impl<F: Scalar> KMeansModel<F> {
    /// Euclidean distance of each sparse row to each centre (n × k), scikit-learn's
    /// `transform` on sparse input.
    pub fn transform_sparse(&self, x: CsrView<F>) -> Result<Array2<F>> {
        check_rows(&self.centers, x)?;
        Ok(transform(&self.centers, x))
    }
}

/// The Euclidean distance of each sparse row to each centre (n × k).
pub(super) fn transform<F: Scalar>(centers: &Array2<F>, x: CsrView<F>) -> Array2<F> {
    let norms = super::points::centre_norms(centers);
    let mut out = Array2::<F>::zeros((x.nrows(), centers.nrows()));
    out.axis_iter_mut(ndarray::Axis(0))
        .into_par_iter()
        .enumerate()
        .for_each(|(i, mut o)| {
            for (l, c) in centers.rows().into_iter().enumerate() {
                let v = sq_dist(x.row(i), c.to_slice().expect("contiguous"), norms[l]);
                o[l] = F::from_f64_lossy(v.sqrt());
            }
        });
    out
}

/// New sparse rows against a model's centres: as many columns, values within the fit's range.
pub(super) fn check_rows<F: Scalar>(centers: &Array2<F>, x: CsrView<F>) -> Result<()> {
    check_same_len("number of features", centers.ncols(), x.ncols())?;
    let mut extents = x.column_extents();
    merge_extents(&mut extents, &column_extents(centers.view()));
    check_extents::<F>(
        &extents,
        x.nrows() + centers.nrows(),
        Arithmetic::SQUARES,
        "k-means",
    )
}

impl<F: Scalar> Predict<CsrView<'_, F>> for KMeansModel<F> {
    type Output = Vec<i64>;
    /// The nearest centre of each sparse row.
    fn predict(&self, x: &CsrView<'_, F>) -> Result<Vec<i64>> {
        check_rows(&self.centers, *x)?;
        Ok(nearest(*x, &self.centers, Distances::Approximate)
            .into_iter()
            .map(|n| n.index as i64)
            .collect())
    }
}

impl<F: Scalar> KMeansModel<F> {
    /// The nearest centre of each sparse row and its exact squared distance (what scikit-learn's
    /// `score` sums).
    pub fn nearest_sparse(&self, x: CsrView<F>) -> Result<Vec<Nearest<F>>> {
        check_rows(&self.centers, x)?;
        Ok(nearest(x, &self.centers, Distances::Exact))
    }
}
