//! FastPAM2 (Schubert & Rousseeuw 2019): up to k swaps per pass, each medoid's best
//! candidate in order of gain, the candidates' k deltas from the CPU or a device.

use super::DEVICE_DELTAS;
use super::{LossOf, Passes, State};
use crate::dissim::Dissimilarity;
use crate::error::Result;
use crate::kmedoids::{KValue, Loss};
use num_traits::ToPrimitive;

/// FastPAM2: every pass finds each medoid's best candidate, applies the best swap, then each
/// further one that still improves by at least (1 − fasttol) of the first.
pub(super) fn passes<D>(s: &mut State<'_, D>, p: &mut Passes<'_, '_, D::Value>, fasttol: f64) -> Result<()>
where
    D: Dissimilarity,
    D::Value: KValue,
{
    let (n, k0) = (s.d.len(), s.k());
    let mut deltas = Vec::with_capacity(k0);
    while p.n_iter < p.max_iter {
        p.n_iter += 1;
        let k = s.k();
        let mut best_per: Vec<Option<(LossOf<D>, usize)>> = vec![None; k];
        let mut keep_best = |x: usize, deltas: &[LossOf<D>]| {
            for (i, &v) in deltas.iter().enumerate() {
                if best_per[i].is_none_or(|(b, _)| v < b) {
                    best_per[i] = Some((v, x));
                }
            }
        };
        let cands: Vec<usize> = (0..n).filter(|&x| !s.is_medoid[x]).collect();
        match p.device.as_mut() {
            Some(dev) => {
                for chunk in cands.chunks((DEVICE_DELTAS / k).max(1)) {
                    let all = dev.evaluate(s, chunk, true)?.1;
                    for (&x, row) in chunk.iter().zip(all.chunks(k)) {
                        keep_best(x, row);
                    }
                }
            }
            None => {
                for &x in &cands {
                    s.candidate_deltas(x, &mut deltas);
                    keep_best(x, &deltas);
                }
            }
        }
        let mut order: Vec<(LossOf<D>, usize, usize)> = best_per
            .iter()
            .enumerate()
            .filter_map(|(i, b)| b.map(|(v, x)| (v, i, x)))
            .filter(|&(v, _, _)| LossOf::<D>::improves(v, s.loss))
            .collect();
        order.sort_by(|a, b| a.0.partial_cmp(&b.0).expect("finite").then(a.1.cmp(&b.1)));
        p.report(s.loss)?;
        let Some(&(first, i0, x0)) = order.first() else {
            p.converged = true;
            break;
        };
        s.swap(i0, x0);
        p.n_swaps += 1;
        let threshold = (1.0 - fasttol) * first.to_f64().unwrap_or(0.0);
        for &(_, i, x) in &order[1..] {
            if s.is_medoid[x] {
                continue;
            }
            s.candidate_deltas(x, &mut deltas);
            let v = deltas[i];
            if v.to_f64().unwrap_or(0.0) <= threshold && LossOf::<D>::improves(v, s.loss) {
                s.swap(i, x);
                p.n_swaps += 1;
            }
        }
    }
    Ok(())
}
