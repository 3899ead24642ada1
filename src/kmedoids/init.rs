//! Initial medoids: BUILD (Kaufman & Rousseeuw), LAB (Schubert & Rousseeuw 2019), random,
//! k-means++ for medoids (D¹ sampling, as ELKI's `KMeansPlusPlus` for medoids), first-k.

use super::{lowest, KValue};
use crate::dissim::Dissimilarity;
use crate::error::Result;
use num_traits::{ToPrimitive, Zero};
use rand::rngs::StdRng;
use rand::Rng;
use rayon::prelude::*;

/// The first k points.
pub fn first_k(k: usize) -> Vec<usize> {
    (0..k).collect()
}

/// k distinct points uniformly at random.
pub fn random_medoids(n: usize, k: usize, rng: &mut StdRng) -> Vec<usize> {
    rand::seq::index::sample(rng, n, k).into_vec()
}

/// BUILD: the point with the smallest distance sum, then greedily the point that lowers the
/// total deviation most. O(n²k) dissimilarities, parallel over candidates. When no point
/// lowers it (fewer than k distinct points), the lowest-index point not yet a medoid is taken.
pub fn build<D>(d: &D, k: usize) -> Result<Vec<usize>>
where
    D: Dissimilarity,
    D::Value: KValue,
{
    let n = d.len();
    let mut medoids = Vec::new();
    build_on(d, &(0..n).collect::<Vec<_>>(), k, &mut medoids, true);
    Ok(medoids)
}

/// BUILD restricted to the points `subset`, adding medoids to `medoids` until there are k.
/// Candidates and the deviation both range over `subset`; `dn` distances are to `medoids`.
/// When no candidate lowers the deviation, it takes the best one anyway if
/// `take_without_gain`, else stops and returns false.
fn build_on<D>(d: &D, subset: &[usize], k: usize, medoids: &mut Vec<usize>, take_without_gain: bool) -> bool
where
    D: Dissimilarity,
    D::Value: KValue,
{
    // Distance of each subset point to its nearest chosen medoid (None: no medoid yet).
    let mut dn: Vec<Option<D::Value>> = subset
        .iter()
        .map(|&j| {
            medoids
                .iter()
                .map(|&m| d.get(j, m))
                .reduce(|a, b| if b < a { b } else { a })
        })
        .collect();
    while medoids.len() < k {
        let best = subset
            .par_iter()
            .enumerate()
            .filter(|(_, x)| !medoids.contains(x))
            .map(|(_, &x)| {
                let mut td = <D::Value as KValue>::Loss::zero();
                for (jj, &j) in subset.iter().enumerate() {
                    let dxj = d.get(x, j);
                    td += match dn[jj] {
                        Some(v) if v < dxj => v.widen(),
                        _ => dxj.widen(),
                    };
                }
                (td, x)
            })
            .reduce_with(lowest);
        let Some((td, x)) = best else { break };
        let current: <D::Value as KValue>::Loss = dn
            .iter()
            .map(|v| v.map_or_else(Zero::zero, KValue::widen))
            .fold(Zero::zero(), |a, b| a + b);
        if !medoids.is_empty() && td >= current && !take_without_gain {
            return false;
        }
        medoids.push(x);
        for (jj, &j) in subset.iter().enumerate() {
            let v = d.get(x, j);
            if dn[jj].is_none_or(|c| v < c) {
                dn[jj] = Some(v);
            }
        }
    }
    true
}

/// LAB: for each medoid, BUILD's criterion on a fresh random sample of min(n, 10 + ⌈√n⌉)
/// non-medoids, O(k·s²) dissimilarities.
pub fn lab<D>(d: &D, k: usize, rng: &mut StdRng) -> Result<Vec<usize>>
where
    D: Dissimilarity,
    D::Value: KValue,
{
    let n = d.len();
    let s = lab_sample_size(n);
    let mut medoids = Vec::with_capacity(k);
    while medoids.len() < k {
        let pool: Vec<usize> = (0..n).filter(|i| !medoids.contains(i)).collect();
        let sample: Vec<usize> = rand::seq::index::sample(rng, pool.len(), s.min(pool.len()))
            .into_iter()
            .map(|i| pool[i])
            .collect();
        let next = medoids.len() + 1;
        if !build_on(d, &sample, next, &mut medoids, false) {
            // The sample holds no point distinct from the medoids; the rest may: BUILD's
            // criterion on all remaining points decides (a duplicate if there is none).
            build_on(d, &pool, next, &mut medoids, true);
        }
    }
    Ok(medoids)
}

/// LAB's sample size: min(n, 10 + ⌈√n⌉).
pub fn lab_sample_size(n: usize) -> usize {
    n.min(10 + (n as f64).sqrt().ceil() as usize)
}

/// k-means++ for medoids: the first uniformly, each next with probability proportional to
/// the dissimilarity to the nearest medoid so far (D¹). O(nk) dissimilarities.
pub fn kmeans_plus_plus<D>(d: &D, k: usize, rng: &mut StdRng) -> Result<Vec<usize>>
where
    D: Dissimilarity,
    D::Value: KValue,
{
    let n = d.len();
    let first = rng.random_range(0..n);
    let mut medoids = vec![first];
    let mut dn: Vec<f64> = (0..n).map(|j| d.get(j, first).to_f64().unwrap_or(0.0)).collect();
    while medoids.len() < k {
        let total: f64 = dn.iter().sum();
        if total <= 0.0 {
            // Every remaining point duplicates a medoid: the lowest-index one, as BUILD.
            let next = (0..n).find(|i| !medoids.contains(i)).expect("k <= n");
            medoids.push(next);
            continue;
        }
        let mut r = rng.random_range(0.0..total);
        let mut next = n - 1;
        for (j, &w) in dn.iter().enumerate() {
            if w > 0.0 && r < w {
                next = j;
                break;
            }
            r -= w;
        }
        // Rounding can leave r just past the last positive weight.
        if dn[next] == 0.0 {
            next = dn.iter().rposition(|&w| w > 0.0).expect("total > 0");
        }
        medoids.push(next);
        for (j, v) in dn.iter_mut().enumerate() {
            *v = v.min(d.get(j, next).to_f64().unwrap_or(0.0));
        }
    }
    Ok(medoids)
}
