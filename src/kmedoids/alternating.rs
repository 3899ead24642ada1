//! The alternating (k-means-style, "Voronoi iteration") heuristic: assign each point to its
//! nearest medoid, move each medoid to the member of its cluster with the smallest distance
//! sum, repeat until no medoid moves. A baseline: cheaper passes than SWAP, worse optima.

use super::{total_deviation, KValue, Outcome};
use crate::dissim::Dissimilarity;
use crate::estimator::{Progress, ProgressFn};
use num_traits::{ToPrimitive, Zero};
use rayon::prelude::*;

type LossOf<D> = <<D as Dissimilarity>::Value as KValue>::Loss;

pub(crate) fn run<D>(
    d: &D,
    medoids: &mut [usize],
    max_iter: usize,
    progress: Option<&ProgressFn>,
) -> crate::Result<Outcome<LossOf<D>>>
where
    D: Dissimilarity,
    D::Value: KValue,
{
    let assign = |medoids: &[usize]| {
        let (loss, mut a) = total_deviation(d, medoids);
        // Each medoid belongs to its own cluster, even when it duplicates another medoid.
        for (i, &m) in medoids.iter().enumerate() {
            a[m] = i;
        }
        (loss, a)
    };
    let (mut loss, mut assignment) = assign(medoids);
    let (mut n_iter, mut n_swaps, mut converged) = (0, 0, false);
    while n_iter < max_iter {
        n_iter += 1;
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); medoids.len()];
        for (o, &c) in assignment.iter().enumerate() {
            members[c].push(o);
        }
        let moved: Vec<Option<usize>> = members
            .par_iter()
            .zip(medoids.par_iter())
            .map(|(pts, &m)| {
                let sum = |x: usize| {
                    pts.iter()
                        .fold(LossOf::<D>::zero(), |a, &o| a + d.get(x, o).widen())
                };
                let mut best = (sum(m), m);
                for &x in pts {
                    let v = sum(x);
                    if v < best.0 {
                        best = (v, x);
                    }
                }
                (best.1 != m).then_some(best.1)
            })
            .collect();
        let changes = moved.iter().flatten().count();
        for (m, new) in medoids.iter_mut().zip(&moved) {
            if let Some(x) = new {
                *m = *x;
            }
        }
        (loss, assignment) = assign(medoids);
        if let Some(p) = progress {
            p.report(&Progress {
                iteration: n_iter,
                max_iter: Some(max_iter),
                objective: loss.to_f64(),
            })?;
        }
        if changes == 0 {
            converged = true;
            break;
        }
        n_swaps += changes;
    }
    Ok(Outcome {
        loss,
        assignment,
        n_iter,
        n_swaps,
        converged,
    })
}
