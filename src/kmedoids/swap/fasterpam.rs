//! FasterPAM (Schubert & Rousseeuw 2021): the first improving swap of each candidate in
//! order, applied eagerly; candidates evaluated speculatively in batches on the CPU or a
//! device, the swaps always the sequential algorithm's.

use super::DEVICE_BATCH;
use super::{LossOf, Passes, State};
use crate::dissim::Dissimilarity;
use crate::error::Result;
use crate::kmedoids::{KValue, Loss};
use crate::rng::SeededRng;
use rand::seq::SliceRandom;
use rayon::prelude::*;

/// FasterPAM: candidates in a fixed (or seeded random) order, the first improving swap
/// applied at once, until a full cycle makes none.
pub(super) fn passes<D>(
    s: &mut State<'_, D>,
    p: &mut Passes<'_, '_, D::Value>,
    shuffle: bool,
    rng: &mut SeededRng,
) -> Result<()>
where
    D: Dissimilarity,
    D::Value: KValue,
{
    let (n, k0) = (s.d.len(), s.k());
    let mut deltas = Vec::with_capacity(k0);
    let mut order: Vec<usize> = (0..n).collect();
    if shuffle {
        order.shuffle(rng);
    }
    let mut last_swap = usize::MAX; // position in `order` of the last swap
                                    // Candidates are evaluated speculatively in batches against the current state (in
                                    // parallel on the CPU, or on the device); the first improving one in order is
                                    // applied and the evaluations after it are discarded. Each evaluation is the
                                    // sequential one, so the result is exactly the sequential FasterPAM's, for any
                                    // thread count and batch size.
    let threads = rayon::current_num_threads();
    let mut batch = match p.device {
        Some(_) => DEVICE_BATCH.0,
        None if threads > 1 && n >= 1000 => 4 * threads,
        None => 1,
    };
    while p.n_iter < p.max_iter {
        p.n_iter += 1;
        let swaps_before = p.n_swaps;
        let mut pos = 0;
        'pass: while pos < n {
            let mut cands = Vec::with_capacity(batch);
            while pos < n && cands.len() < batch {
                if pos == last_swap {
                    break; // a full cycle without a swap since the last one
                }
                if !s.is_medoid[order[pos]] {
                    cands.push(pos);
                }
                pos += 1;
            }
            if cands.is_empty() {
                break 'pass;
            }
            let xs: Vec<usize> = cands.iter().map(|&c| order[c]).collect();
            let evals: Vec<(usize, LossOf<D>)> = match p.device.as_mut() {
                Some(dev) => dev.evaluate(s, &xs, false)?.0,
                None if xs.len() == 1 => vec![s.best_for(xs[0], &mut deltas)],
                None => xs
                    .par_iter()
                    .map_init(|| Vec::with_capacity(k0), |buf, &x| s.best_for(x, buf))
                    .collect(),
            };
            let first = evals
                .iter()
                .position(|&(_, delta)| LossOf::<D>::improves(delta, s.loss));
            if let Some(t) = first {
                let at = cands[t];
                s.swap(evals[t].0, order[at]);
                p.n_swaps += 1;
                last_swap = at;
                pos = at + 1;
                if p.device.is_some() {
                    batch = (2 * (t + 1)).clamp(DEVICE_BATCH.0, DEVICE_BATCH.1);
                }
            } else if pos == last_swap {
                break 'pass;
            } else if p.device.is_some() {
                batch = (2 * batch).min(DEVICE_BATCH.1);
            }
        }
        p.report(s.loss)?;
        if p.n_swaps == swaps_before {
            p.converged = true;
            break;
        }
    }
    Ok(())
}
