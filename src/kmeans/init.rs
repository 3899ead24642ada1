//! The initial centres: greedy k-means++ (Arthur & Vassilvitskii 2007, with 2 + ⌊ln k⌋
//! candidates per step and the lowest potential kept, as scikit-learn's `kmeans_plusplus`),
//! over one process or the rows of many, and uniform or weighted random rows. Power k-means,
//! the Gaussian mixtures and MagmaClust seed with these too.

use super::{add_in_order, weight_of, CHUNK};
use crate::comm::{fetch_rows, Communicator, Partition, SingleProcess};
use crate::error::{Error, Result};
use crate::rng::SeededRng;
use crate::scalar::Scalar;
use ndarray::{Array2, ArrayView2, Axis};
use rand::Rng;
use rayon::prelude::*;

/// `k` distinct rows of `n` uniformly at random, or without replacement with probability ∝ w
/// (scikit-learn's random seeding with sample weights).
pub(crate) fn random_rows(rng: &mut SeededRng, n: usize, k: usize, w: Option<&[f64]>) -> Result<Vec<usize>> {
    match w {
        None => Ok(rand::seq::index::sample(rng, n, k).into_vec()),
        Some(w) => rand::seq::index::sample_weighted(rng, n, |i| w[i], k)
            .map(|idx| idx.into_vec())
            .map_err(|e| Error::param("sample_weight", "given", format!("cannot draw {k} points: {e}"))),
    }
}

/// Greedy k-means++: the first centre uniformly, then at each step 2 + ⌊ln k⌋ candidates drawn
/// with probability ∝ D² and the one giving the lowest potential kept.
pub fn kmeans_plus_plus<F: Scalar>(x: ArrayView2<F>, k: usize, rng: &mut SeededRng) -> Result<Array2<F>> {
    Ok(x.select(Axis(0), &kmeans_plus_plus_indices(x, k, rng)?))
}

/// The rows greedy k-means++ picks as centres, in order (scikit-learn's `kmeans_plusplus`
/// returns them as `indices`).
pub fn kmeans_plus_plus_indices<F: Scalar>(
    x: ArrayView2<F>,
    k: usize,
    rng: &mut SeededRng,
) -> Result<Vec<usize>> {
    let part = Partition {
        offset: 0,
        n_global: x.nrows(),
    };
    greedy_kmeans_plus_plus(x, None, k, rng, part, &SingleProcess)
}

/// One k-means++ step's work in one pass over the points: the squared distance of every point
/// to each candidate into `dist` (n × candidates, computed directly, so exact), and for each
/// candidate the potential Σᵢ wᵢ·min(closestᵢ, dist(i, candidate)). Summed in fixed chunks of
/// rows, in order, so the result does not depend on the thread count. (A GEMM does not pay
/// here: with a handful of candidates the pass is bound by reading the points.)
fn candidate_potentials<F: Scalar>(
    x: ArrayView2<F>,
    w: Option<&[f64]>,
    candidates: ArrayView2<F>,
    closest: &[f64],
    dist: &mut Array2<f64>,
) -> Vec<f64> {
    let t = candidates.nrows();
    let (x, candidates) = (x.as_standard_layout(), candidates.as_standard_layout());
    let parts: Vec<Vec<f64>> = x
        .axis_chunks_iter(Axis(0), CHUNK)
        .into_par_iter()
        .zip(dist.axis_chunks_iter_mut(Axis(0), CHUNK))
        .zip(closest.par_chunks(CHUNK))
        .enumerate()
        .map(|(chunk, ((rows, mut out), closest))| {
            let mut pot = vec![0.0f64; t];
            let rows_out_closest = rows.rows().into_iter().zip(out.rows_mut()).zip(closest);
            for (i, ((row, mut o), &c)) in rows_out_closest.enumerate() {
                let wi = weight_of(w, chunk * CHUNK + i);
                let row = row.to_slice().expect("standard layout");
                for ((o, p), cand) in o.iter_mut().zip(pot.iter_mut()).zip(candidates.rows()) {
                    *o = F::sqeuclidean(row, cand.to_slice().expect("standard layout")).to_f64_exact();
                    *p += wi * c.min(*o);
                }
            }
            pot
        })
        .collect();
    add_in_order(parts, t)
}

/// `count` global rows drawn with probability ∝ `mass` (this process's non-negative masses,
/// whose sum over all processes is `total`): each draw falls in one process's share of the
/// total; that process finds the row.
fn draw_rows(
    rng: &mut SeededRng,
    count: usize,
    mass: impl Iterator<Item = f64>,
    total: f64,
    part: Partition,
    comm: &dyn Communicator,
) -> Vec<usize> {
    let mut acc = 0.0;
    let cumsum: Vec<f64> = mass
        .map(|v| {
            acc += v;
            acc
        })
        .collect();
    let shares = comm.all_gather_f64(&[acc]);
    let mut found = vec![0u64; count];
    for slot in found.iter_mut() {
        let mut r = rng.random::<f64>() * total;
        let mut owner = shares.len() - 1;
        for (q, &share) in shares.iter().enumerate() {
            if r < share || q == shares.len() - 1 {
                owner = q;
                break;
            }
            r -= share;
        }
        if owner == comm.rank() {
            *slot = (part.offset + cumsum.partition_point(|&v| v <= r).min(cumsum.len() - 1)) as u64;
        }
    }
    comm.allreduce_sum_u64(&mut found);
    found.iter().map(|&i| i as usize).collect()
}

/// Greedy k-means++ over the rows of all processes (`x` is this process's slice, `w` its
/// sample weights): the same draws and choices as on one process; returns global row indices.
/// With weights, as scikit-learn: the first centre is drawn ∝ w, the candidates ∝ w·D², and
/// the potentials are weighted sums.
pub(crate) fn greedy_kmeans_plus_plus<F: Scalar>(
    x: ArrayView2<F>,
    w: Option<&[f64]>,
    k: usize,
    rng: &mut SeededRng,
    part: Partition,
    comm: &dyn Communicator,
) -> Result<Vec<usize>> {
    let (n, n_local) = (part.n_global, x.nrows());
    let trials = 2 + (k as f64).ln().floor() as usize;
    let first = match w {
        None => rng.random_range(0..n),
        Some(w) => {
            let mut total = [w.iter().sum::<f64>()];
            comm.allreduce_sum(&mut total);
            draw_rows(rng, 1, w.iter().copied(), total[0], part, comm)[0]
        }
    };
    let mut chosen = vec![first];
    let mut closest = vec![f64::INFINITY; n_local];
    let mut dist = Array2::<f64>::zeros((n_local, 1));
    let first_row = fetch_rows(x, part, &[first], comm);
    let mut potential = [candidate_potentials(x, w, first_row.view(), &closest, &mut dist)[0]];
    closest.iter_mut().zip(dist.column(0)).for_each(|(a, &b)| *a = b);
    comm.allreduce_sum(&mut potential);
    let mut potential = potential[0];
    for _ in 1..k {
        let mass = closest.iter().enumerate().map(|(i, &v)| weight_of(w, i) * v);
        let candidates = draw_rows(rng, trials, mass, potential, part, comm);
        let cand_rows = fetch_rows(x, part, &candidates, comm);
        let mut dist = Array2::<f64>::zeros((n_local, trials));
        let mut potentials = candidate_potentials(x, w, cand_rows.view(), &closest, &mut dist);
        comm.allreduce_sum(&mut potentials);
        let (best, best_pot) = potentials
            .iter()
            .enumerate()
            .fold((0, f64::INFINITY), |b, (t, &p)| if p < b.1 { (t, p) } else { b });
        potential = best_pot;
        closest
            .iter_mut()
            .zip(dist.column(best))
            .for_each(|(a, &b)| *a = a.min(b));
        chosen.push(candidates[best]);
    }
    Ok(chosen)
}
