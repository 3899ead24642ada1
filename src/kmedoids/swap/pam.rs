//! PAM's SWAP (Kaufman & Rousseeuw 1990) and FastPAM1 (Schubert & Rousseeuw 2019): one best
//! swap per pass, the candidates scanned on the CPU in parallel or on a device (FastPAM1).

use super::{LossOf, Passes, State};
use crate::dissim::Dissimilarity;
use crate::error::Result;
use crate::kmedoids::{KValue, Loss};
use rayon::prelude::*;

/// PAM and FastPAM1: every pass evaluates every candidate against every medoid (PAM by its
/// own O(k·n) ΔTD per pair, FastPAM1 by one O(n) scan per candidate giving all k at once) and
/// applies the single best swap.
pub(super) fn passes<D>(s: &mut State<'_, D>, p: &mut Passes<'_, '_, D::Value>, pam: bool) -> Result<()>
where
    D: Dissimilarity,
    D::Value: KValue,
{
    let (n, k0) = (s.d.len(), s.k());
    while p.n_iter < p.max_iter {
        p.n_iter += 1;
        let cands: Vec<usize> = (0..n).filter(|&x| !s.is_medoid[x]).collect();
        let evals: Vec<(usize, LossOf<D>)> = match p.device.as_mut() {
            Some(dev) => dev.evaluate(s, &cands, false)?.0,
            None if pam => cands.par_iter().map(|&x| s.pam_best(x)).collect(),
            None => cands
                .par_iter()
                .map_init(|| Vec::with_capacity(k0), |buf, &x| s.best_for(x, buf))
                .collect(),
        };
        let mut best: Option<(LossOf<D>, usize, usize)> = None;
        for (&x, &(i, delta)) in cands.iter().zip(&evals) {
            if best.is_none_or(|b| delta < b.0) {
                best = Some((delta, i, x));
            }
        }
        p.report(s.loss)?;
        match best {
            Some((delta, i, x)) if LossOf::<D>::improves(delta, s.loss) => {
                s.swap(i, x);
                p.n_swaps += 1;
            }
            _ => {
                p.converged = true;
                break;
            }
        }
    }
    Ok(())
}
