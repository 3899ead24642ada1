//! The initial centres: greedy k-means++ (Arthur & Vassilvitskii 2007, with 2 + ⌊ln k⌋
//! candidates per step and the lowest potential kept, as scikit-learn's `kmeans_plusplus`),
//! over one process or the rows of many, and uniform or weighted random rows. Power k-means,
//! the Gaussian mixtures and MagmaClust seed with these too.

use super::points::{centre_norms, Points};
use super::{add_in_order, CHUNK};
use crate::comm::{Communicator, Partition, SingleProcess};
use crate::error::{Error, Result};
use crate::rng::SeededRng;
use crate::scalar::Scalar;
use ndarray::{Array2, ArrayView2, Axis};
use rand::Rng;
use rayon::prelude::*;

/// `k` distinct rows of `n` uniformly at random, or without replacement with probability ∝ w
/// (scikit-learn's random seeding with sample weights).
pub(crate) fn random_rows(rng: &mut SeededRng, n: usize, k: usize, w: Option<&[f64]>) -> Result<Vec<usize>> {
    match w.filter(|w| !equal_weights(w, &SingleProcess)) {
        None => Ok(rand::seq::index::sample(rng, n, k).into_vec()),
        Some(w) => rand::seq::index::sample_weighted(rng, n, |i| w[i], k)
            .map(|idx| idx.into_vec())
            .map_err(|e| Error::param("sample_weight", "given", format!("cannot draw {k} points: {e}"))),
    }
}

/// Whether every weight over all processes is the same: then the draws are those without
/// weights (which they equal in law), so that unit weights give the unweighted result, as in
/// scikit-learn.
fn equal_weights(w: &[f64], comm: &dyn Communicator) -> bool {
    let (lo, hi) = w.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
        (lo.min(v), hi.max(v))
    });
    let all = comm.all_gather_f64(&[lo, hi]);
    let lo = all.iter().step_by(2).copied().fold(f64::INFINITY, f64::min);
    let hi = all
        .iter()
        .skip(1)
        .step_by(2)
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    lo == hi
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
    KMeansPlusPlus::new(k).indices_from(x, rng)
}

/// Greedy k-means++ with scikit-learn's `kmeans_plusplus` parameters: sample weights (the
/// first centre drawn ∝ w, the candidates ∝ w·D², weighted potentials) and the candidates per
/// step (`n_local_trials`, default 2 + ⌊ln k⌋).
#[derive(Clone, Debug, PartialEq)]
pub struct KMeansPlusPlus {
    /// The number of centres.
    pub k: usize,
    /// Candidates per step (`None`: 2 + ⌊ln k⌋).
    pub n_local_trials: Option<usize>,
    /// Sample weights (non-negative, at least k positive).
    pub sample_weight: Option<Vec<f64>>,
    /// Seed of the draws.
    pub seed: u64,
}

impl KMeansPlusPlus {
    /// k centres, scikit-learn's defaults.
    pub fn new(k: usize) -> Self {
        KMeansPlusPlus {
            k,
            n_local_trials: None,
            sample_weight: None,
            seed: 0,
        }
    }

    /// The rows picked as centres, in order, after checking the points and parameters.
    pub fn indices<F: Scalar>(&self, x: ArrayView2<F>) -> Result<Vec<usize>> {
        self.indices_from(x, &mut <SeededRng as rand::SeedableRng>::seed_from_u64(self.seed))
    }

    /// [`KMeansPlusPlus::indices`] drawing from `rng` (the seed unused).
    pub fn indices_from<F: Scalar>(&self, x: ArrayView2<F>, rng: &mut SeededRng) -> Result<Vec<usize>> {
        use crate::data::validate::{
            check_k, check_magnitude, check_points, check_positive_weights, check_sample_weight, Arithmetic,
        };
        check_points(x)?;
        check_k(self.k, x.nrows())?;
        check_magnitude(x, Arithmetic::SQUARES, "k-means++")?;
        if self.n_local_trials == Some(0) {
            return Err(Error::param(
                "n_local_trials",
                0,
                "at least one candidate per step",
            ));
        }
        let scaled = match &self.sample_weight {
            Some(w) => {
                check_sample_weight(w, x.nrows(), false)?;
                check_positive_weights(w, self.k)?;
                crate::data::validate::ScaledWeights::of(Some(w))
            }
            None => None,
        };
        let w = scaled.as_ref().map(|s| s.weights.as_slice());
        let part = Partition {
            offset: 0,
            n_global: x.nrows(),
        };
        let trials = self.n_local_trials.unwrap_or(default_trials(self.k));
        let x = crate::data::standard_layout(x);
        greedy_seeding(x.view(), w, self.k, trials, rng, part, &SingleProcess)
    }
}

crate::estimator::shared_setters!(KMeansPlusPlus { seed });

/// The squared distance of each row of `rows` (contiguous, d columns) to `candidate`, into
/// `out` in f64: the SIMD table's own kernel, one call for all rows, so every value has the
/// bits of `F::sqeuclidean(row, candidate)` (the kernel is symmetric to the bit). At d ≤ 2 it
/// is computed inline, vectorised across rows: with at most two non-zero terms every
/// summation order of the kernels rounds the same way.
pub(super) fn distances_to<F: Scalar>(rows: &[F], candidate: &[F], scratch: &mut [F], out: &mut [f64]) {
    match *candidate {
        [c] => {
            for (o, &a) in out.iter_mut().zip(rows) {
                *o = ((a - c) * (a - c)).to_f64_exact();
            }
        }
        [c0, c1] => {
            for (o, p) in out.iter_mut().zip(rows.chunks_exact(2)) {
                *o = ((p[0] - c0) * (p[0] - c0) + (p[1] - c1) * (p[1] - c1)).to_f64_exact();
            }
        }
        _ => {
            let scratch = &mut scratch[..out.len()];
            (F::simd_table().sqeuclidean_rows)(candidate, rows, scratch);
            for (o, &v) in out.iter_mut().zip(scratch.iter()) {
                *o = v.to_f64_exact();
            }
        }
    }
}

/// One k-means++ step's work: the squared distance of every point to each candidate into
/// `dist` (candidate-major: `dist[t·n + i]`; computed directly, so exact), and for each
/// candidate the potential Σᵢ wᵢ·min(closestᵢ, dist(i, candidate)). Each candidate's sum runs
/// over fixed chunks of rows, in row order, the chunks then added in order, so the result does
/// not depend on the thread count. (A GEMM does not pay here: with a handful of candidates
/// the pass is bound by reading the points.)
fn candidate_potentials<F: Scalar, X: Points<F>>(
    x: X,
    w: Option<&[f64]>,
    candidates: ArrayView2<F>,
    closest: &[f64],
    dist: &mut [f64],
) -> Vec<f64> {
    let (n, d, t) = (x.nrows(), x.ncols(), candidates.nrows());
    let candidates = candidates.as_standard_layout();
    let cand = candidates.as_slice().expect("standard layout");
    let cand_norms = centre_norms(&candidates.to_owned());
    // Each chunk's distances go to its own rows of every candidate's column.
    let mut pieces: Vec<Vec<&mut [f64]>> = (0..n.div_ceil(CHUNK)).map(|_| Vec::with_capacity(t)).collect();
    for column in dist[..t * n].chunks_mut(n.max(1)) {
        for (piece, part) in pieces.iter_mut().zip(column.chunks_mut(CHUNK)) {
            piece.push(part);
        }
    }
    let parts: Vec<Vec<f64>> = pieces
        .into_par_iter()
        .enumerate()
        .map(|(chunk, mut columns)| {
            let first = chunk * CHUNK;
            let len = columns.first().map_or(0, |c| c.len());
            let mut scratch = Vec::new();
            for ((column, candidate), &norm) in columns
                .iter_mut()
                .zip(cand.chunks_exact(d.max(1)))
                .zip(&cand_norms)
            {
                x.sq_distances(first, candidate, norm, &mut scratch, column);
            }
            // The candidates' sums, each in row order, four side by side (in registers).
            let mut pot = Vec::with_capacity(t);
            let closest = &closest[first..first + len];
            let weights = w.map(|w| &w[first..first + len]);
            for group in columns.chunks(4) {
                pot.extend_from_slice(&group_sums(group, closest, weights)[..group.len()]);
            }
            pot
        })
        .collect();
    add_in_order(parts, t)
}

/// Σᵢ wᵢ·min(closestᵢ, columnᵢ) for up to four columns, each summed in row order.
fn group_sums(columns: &[&mut [f64]], closest: &[f64], w: Option<&[f64]>) -> [f64; 4] {
    let mut sums = [0.0f64; 4];
    let col = |j: usize| columns.get(j).map_or(closest, |c| &c[..closest.len()]);
    let (c0, c1, c2, c3) = (col(0), col(1), col(2), col(3));
    match w {
        // (a weight of 1 would multiply exactly)
        None => {
            for (i, &c) in closest.iter().enumerate() {
                sums[0] += c.min(c0[i]);
                sums[1] += c.min(c1[i]);
                sums[2] += c.min(c2[i]);
                sums[3] += c.min(c3[i]);
            }
        }
        Some(w) => {
            for (i, (&c, &wi)) in closest.iter().zip(w).enumerate() {
                sums[0] += wi * c.min(c0[i]);
                sums[1] += wi * c.min(c1[i]);
                sums[2] += wi * c.min(c2[i]);
                sums[3] += wi * c.min(c3[i]);
            }
        }
    }
    sums
}

/// `count` global rows drawn with probability ∝ mass (`cumsum`: the running sums of this
/// process's non-negative masses, whose sum over all processes is `total`): each draw falls in one process's share of the
/// total; that process finds the row.
fn draw_rows(
    rng: &mut SeededRng,
    count: usize,
    cumsum: &[f64],
    total: f64,
    part: Partition,
    comm: &dyn Communicator,
) -> Vec<usize> {
    let shares = comm.all_gather_f64(&[cumsum.last().copied().unwrap_or(0.0)]);
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
    let x = crate::data::standard_layout(x);
    greedy_seeding(x.view(), w, k, default_trials(k), rng, part, comm)
}

/// [`greedy_kmeans_plus_plus`] on any [`Points`] (dense rows in standard layout, or sparse).
pub(super) fn greedy_kmeans_plus_plus_of<F: Scalar, X: Points<F>>(
    x: X,
    w: Option<&[f64]>,
    k: usize,
    rng: &mut SeededRng,
    part: Partition,
    comm: &dyn Communicator,
) -> Result<Vec<usize>> {
    greedy_seeding(x, w, k, default_trials(k), rng, part, comm)
}

/// scikit-learn's number of candidates per step: 2 + ⌊ln k⌋.
fn default_trials(k: usize) -> usize {
    2 + (k as f64).ln().floor() as usize
}

/// [`greedy_kmeans_plus_plus`] with `trials` candidates per step.
fn greedy_seeding<F: Scalar, X: Points<F>>(
    x: X,
    w: Option<&[f64]>,
    k: usize,
    trials: usize,
    rng: &mut SeededRng,
    part: Partition,
    comm: &dyn Communicator,
) -> Result<Vec<usize>> {
    let (n, n_local) = (part.n_global, x.nrows());
    let w = w.filter(|w| !equal_weights(w, comm));
    // Every step reuses these: each point's squared distance to its nearest centre, the
    // running sums of the draw's masses, and the distances to the step's candidates.
    let mut closest = vec![f64::INFINITY; n_local];
    let mut cumsum = vec![0.0f64; n_local];
    let mut dist = vec![0.0f64; n_local * trials];
    let first = match w {
        None => rng.random_range(0..n),
        Some(w) => {
            let mut acc = 0.0;
            for (s, &wi) in cumsum.iter_mut().zip(w) {
                acc += wi;
                *s = acc;
            }
            let mut total = [acc];
            comm.allreduce_sum(&mut total);
            draw_rows(rng, 1, &cumsum, total[0], part, comm)[0]
        }
    };
    let mut chosen = vec![first];
    let first_row = x.fetch(part, &[first], comm);
    let mut potential = [candidate_potentials(x, w, first_row.view(), &closest, &mut dist)[0]];
    comm.allreduce_sum(&mut potential);
    let mut potential = potential[0];
    let mut best = 0;
    for _ in 1..k {
        // The last step's choice into `closest`, and the draw's running sums, in one pass.
        let mut acc = 0.0;
        let best_column = &dist[best * n_local..(best + 1) * n_local];
        let updated = closest.iter_mut().zip(cumsum.iter_mut()).zip(best_column);
        match w {
            // (a weight of 1 would multiply exactly)
            None => updated.for_each(|((c, s), &b)| {
                *c = c.min(b);
                acc += *c;
                *s = acc;
            }),
            Some(w) => updated.zip(w).for_each(|(((c, s), &b), &wi)| {
                *c = c.min(b);
                acc += wi * *c;
                *s = acc;
            }),
        }
        let candidates = draw_rows(rng, trials, &cumsum, potential, part, comm);
        let cand_rows = x.fetch(part, &candidates, comm);
        let mut potentials = candidate_potentials(x, w, cand_rows.view(), &closest, &mut dist);
        comm.allreduce_sum(&mut potentials);
        let (b, best_pot) = potentials
            .iter()
            .enumerate()
            .fold((0, f64::INFINITY), |b, (t, &p)| if p < b.1 { (t, p) } else { b });
        potential = best_pot;
        best = b;
        chosen.push(candidates[best]);
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmeans::weight_of;
    use rand::SeedableRng;

    /// The seeding as it was before the distance pass was rewritten (three passes, every
    /// candidate's distances kept row by row): the oracle for "the same centres from the same
    /// stream".
    fn reference<F: Scalar>(
        x: ArrayView2<F>,
        w: Option<&[f64]>,
        k: usize,
        rng: &mut SeededRng,
    ) -> Vec<usize> {
        let n = x.nrows();
        let trials = default_trials(k);
        let potentials = |cands: &[usize], closest: &[f64], dist: &mut Vec<Vec<f64>>| -> Vec<f64> {
            let mut parts = Vec::new();
            for start in (0..n).step_by(CHUNK) {
                let mut pot = vec![0.0; cands.len()];
                for i in start..(start + CHUNK).min(n) {
                    let row = x.row(i).to_vec();
                    for (t, &c) in cands.iter().enumerate() {
                        let v = F::sqeuclidean(&row, &x.row(c).to_vec()).to_f64_exact();
                        dist[t][i] = v;
                        pot[t] += weight_of(w, i) * closest[i].min(v);
                    }
                }
                parts.push(pot);
            }
            add_in_order(parts, cands.len())
        };
        let draw = |rng: &mut SeededRng, count: usize, mass: Vec<f64>, total: f64| -> Vec<usize> {
            let mut acc = 0.0;
            let cumsum: Vec<f64> = mass
                .iter()
                .map(|v| {
                    acc += v;
                    acc
                })
                .collect();
            (0..count)
                .map(|_| {
                    let r = rng.random::<f64>() * total;
                    cumsum.partition_point(|&v| v <= r).min(n - 1)
                })
                .collect()
        };
        let first = match w {
            None => rng.random_range(0..n),
            Some(w) => draw(rng, 1, w.to_vec(), w.iter().sum())[0],
        };
        let mut closest = vec![f64::INFINITY; n];
        let mut dist = vec![vec![0.0; n]; trials];
        let mut potential = potentials(&[first], &closest, &mut dist)[0];
        closest.copy_from_slice(&dist[0]);
        let mut chosen = vec![first];
        for _ in 1..k {
            let mass = (0..n).map(|i| weight_of(w, i) * closest[i]).collect();
            let cands = draw(rng, trials, mass, potential);
            let pots = potentials(&cands, &closest, &mut dist);
            let (best, pot) =
                pots.iter()
                    .enumerate()
                    .fold((0, f64::INFINITY), |b, (t, &p)| if p < b.1 { (t, p) } else { b });
            potential = pot;
            closest
                .iter_mut()
                .zip(&dist[best])
                .for_each(|(a, &b)| *a = a.min(b));
            chosen.push(cands[best]);
        }
        chosen
    }

    fn points<F: Scalar>(n: usize, d: usize, seed: u64) -> Array2<F> {
        let mut rng = SeededRng::seed_from_u64(seed);
        // Grouped values with repeats, so ties and duplicate rows occur.
        Array2::from_shape_fn((n, d), |_| {
            F::from_f64_lossy((rng.random_range(0..40) as f64) * 0.37 + rng.random::<f64>())
        })
    }

    #[test]
    fn the_same_centres_as_the_reference_for_the_same_stream() {
        for (n, d, k) in [
            (9000, 1, 12),
            (9000, 2, 40),
            (5000, 3, 9),
            (5000, 5, 20),
            (3000, 8, 30),
            (3000, 17, 7),
            (2000, 64, 25),
        ] {
            for seed in 0..3 {
                let x = points::<f64>(n, d, seed);
                let w: Vec<f64> = (0..n).map(|i| 0.5 + (i % 7) as f64).collect();
                for w in [None, Some(w.as_slice())] {
                    let ours = KMeansPlusPlus {
                        sample_weight: w.map(<[f64]>::to_vec),
                        ..KMeansPlusPlus::new(k)
                    }
                    .indices_from(x.view(), &mut SeededRng::seed_from_u64(seed))
                    .unwrap();
                    let theirs = reference(x.view(), w, k, &mut SeededRng::seed_from_u64(seed));
                    assert_eq!(
                        ours,
                        theirs,
                        "n {n}, d {d}, k {k}, seed {seed}, weighted {}",
                        w.is_some()
                    );
                }
                let x32 = x.mapv(|v| v as f32);
                let ours =
                    kmeans_plus_plus_indices(x32.view(), k, &mut SeededRng::seed_from_u64(seed)).unwrap();
                assert_eq!(
                    ours,
                    reference(x32.view(), None, k, &mut SeededRng::seed_from_u64(seed)),
                    "f32 d {d}"
                );
            }
        }
    }

    #[test]
    fn the_result_does_not_depend_on_the_thread_count() {
        let x = points::<f64>(20_000, 2, 9);
        let run = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| kmeans_plus_plus_indices(x.view(), 50, &mut SeededRng::seed_from_u64(4)).unwrap())
        };
        assert_eq!(run(1), run(3));
    }

    #[test]
    fn n_local_trials_and_bad_parameters() {
        let x = points::<f64>(500, 3, 1);
        let one = KMeansPlusPlus {
            n_local_trials: Some(1),
            ..KMeansPlusPlus::new(5)
        }
        .indices(x.view())
        .unwrap();
        assert_eq!(one.len(), 5);
        assert!(KMeansPlusPlus {
            n_local_trials: Some(0),
            ..KMeansPlusPlus::new(5)
        }
        .indices(x.view())
        .is_err());
        assert!(KMeansPlusPlus::new(501).indices(x.view()).is_err());
        let mut zero = vec![0.0; 500];
        zero[3] = 1.0;
        assert!(KMeansPlusPlus {
            sample_weight: Some(zero),
            ..KMeansPlusPlus::new(2)
        }
        .indices(x.view())
        .is_err());
        let far = Array2::from_shape_fn((4, 2), |(i, _)| if i % 2 == 0 { 1e200 } else { -1e200 });
        assert!(KMeansPlusPlus::new(2).indices(far.view()).is_err());
    }
}
