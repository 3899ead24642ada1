//! Sample weights for every k-medoids method: the loss becomes Σₒ wₒ·d(o, medoid of o), so a
//! point of integer weight w counts as w copies of it (the `kmedoids` crate and ELKI have no
//! weights; this is the loss of weighted PAM as in Kaufman & Rousseeuw's weighted objects).
//!
//! The methods run unchanged on [`Weighted`], whose `get(m, o)` is wₒ·d(m, o): the cost of
//! object `o` when served by medoid (or candidate) `m`. It is not symmetric, so every
//! k-medoids routine reads a dissimilarity in that orientation — first the medoid or
//! candidate, then the object whose cost it is — and a row is a candidate's costs. For a
//! symmetric dissimilarity the orientation changes nothing.
//!
//! What the weights do not change: random and LAB initial medoids and CLARA's samples are
//! drawn uniformly over the objects; the first k-means++ medoid too (the later ones are drawn
//! in proportion to wₒ·d). Labels are each object's nearest medoid, also for weight 0.

use super::swap::LossOf;
use super::{nearest_medoids, KMedoidsModel, KValue, Loss};
use crate::data::validate::{check_sample_weight, ScaledWeights};
use crate::dissim::Dissimilarity;
use crate::error::{Error, Result};
use num_traits::{ToPrimitive, Zero};
use rayon::prelude::*;

/// `d` with object `o`'s dissimilarities scaled by its weight `w[o]` (see the module comment).
pub(crate) struct Weighted<'a, D> {
    d: &'a D,
    w: &'a [f64],
}

impl<D: Dissimilarity> Dissimilarity for Weighted<'_, D> {
    type Value = f64;
    fn len(&self) -> usize {
        self.d.len()
    }
    #[inline]
    fn get(&self, m: usize, o: usize) -> f64 {
        self.w[o] * self.d.get(m, o).to_f64().unwrap_or(f64::INFINITY)
    }
}

/// Checks weights of `n` objects for loss type `L`: [`check_sample_weight`]'s rules, and whole
/// numbers up to 2⁵³ for an integer dissimilarity, whose loss stays exact.
pub(crate) fn check_weights<L: Loss>(w: &[f64], n: usize) -> Result<()> {
    check_sample_weight(w, n, false)?;
    if L::WHOLE_WEIGHTS {
        if let Some((i, &v)) = w
            .iter()
            .enumerate()
            .find(|(_, v)| v.fract() != 0.0 || **v > 2f64.powi(53))
        {
            return Err(Error::param(
                "sample weight",
                v,
                format!("of point {i}: an integer dissimilarity takes whole weights up to 2^53 (its loss is exact); use a float one"),
            ));
        }
    }
    Ok(())
}

/// Σₒ wₒ·d(o, nearest medoid) in `d`'s loss type, and each object's nearest medoid position
/// by `d` itself (lowest position on ties, a medoid its own). Parallel over fixed chunks
/// summed in order: the same for any thread count.
pub(crate) fn weighted_deviation<D>(d: &D, w: &[f64], medoids: &[usize]) -> (LossOf<D>, Vec<usize>)
where
    D: Dissimilarity,
    D::Value: KValue,
{
    let own = |o: usize| medoids.iter().position(|&m| m == o);
    let (_, labels) = nearest_medoids(d.len(), medoids.len(), own, |o, i| d.get(medoids[i], o));
    const CHUNK: usize = 4096;
    let parts: Vec<LossOf<D>> = labels
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(c, part)| {
            part.iter().enumerate().fold(LossOf::<D>::zero(), |acc, (j, &l)| {
                let o = c * CHUNK + j;
                acc + Loss::weighted(d.get(medoids[l], o).widen(), w[o])
            })
        })
        .collect();
    (parts.into_iter().fold(LossOf::<D>::zero(), |a, b| a + b), labels)
}

/// Runs `fit` on `d` weighted by `w`; the model's loss is returned in `d`'s loss type and its
/// labels are the nearest medoids by `d` (see [`weighted_deviation`]).
pub(crate) fn fit_weighted<D>(
    d: &D,
    w: &[f64],
    fit: impl FnOnce(&Weighted<'_, D>) -> Result<KMedoidsModel<f64>>,
) -> Result<KMedoidsModel<LossOf<D>>>
where
    D: Dissimilarity,
    D::Value: KValue,
{
    check_weights::<LossOf<D>>(w, d.len())?;
    // A float loss is computed with the weights in their overflow-safe form (every swap
    // decision compares relative changes, unchanged by the scaling) and scaled back; an
    // integer one takes whole weights up to 2^53 and stays exact.
    let scaled = (!<LossOf<D> as Loss>::WHOLE_WEIGHTS).then(|| ScaledWeights::new(w));
    let w = scaled.as_ref().map_or(w, |s| s.weights.as_slice());
    let model = fit(&Weighted { d, w })?;
    let (mut loss, labels) = weighted_deviation(d, w, &model.medoids);
    if let Some(s) = &scaled {
        let total = s.unscale(loss.to_f64().unwrap_or(f64::NAN), "sum of distances")?;
        loss = <LossOf<D> as num_traits::NumCast>::from(total).unwrap_or(loss);
    }
    Ok(KMedoidsModel {
        medoids: model.medoids,
        initial_medoids: model.initial_medoids,
        labels: labels.into_iter().map(|l| l as i64).collect(),
        loss,
        n_iter: model.n_iter,
        n_swaps: model.n_swaps,
        converged: model.converged,
    })
}
