//! Initial medoids: BUILD (Kaufman & Rousseeuw), LAB (Schubert & Rousseeuw 2019), random,
//! k-means++ for medoids (D¹ sampling, as ELKI's `KMeansPlusPlus` for medoids), first-k.

use super::{lowest, KValue};
use crate::dissim::Dissimilarity;
use crate::error::Result;
use crate::rng::SeededRng;
use num_traits::{ToPrimitive, Zero};
use rand::Rng;
use rayon::prelude::*;

/// The first k points.
pub fn first_k(k: usize) -> Vec<usize> {
    (0..k).collect()
}

/// k distinct points uniformly at random.
pub fn random_medoids(n: usize, k: usize, rng: &mut SeededRng) -> Vec<usize> {
    rand::seq::index::sample(rng, n, k).into_vec()
}

/// BUILD: the point with the smallest distance sum, then greedily the point that lowers the
/// total deviation most. When no point lowers it (fewer than k distinct points), the
/// lowest-index point not yet a medoid is taken.
///
/// The same medoids as the textbook O(n²k) loop (`build_on` over all points), in
/// O(n²·(1 + Σₜ cₜ/n)) dissimilarities, where cₜ is the number of points whose nearest medoid
/// changes at step t (about n/t on clustered data, so O(n² log k)): each candidate's gain
/// Σⱼ max(0, dⱼ − d(x, j)) is kept up to date as the nearest-medoid distances dⱼ fall, only
/// for the points whose dⱼ fell. The kept gains are estimates with a rounding bound; every
/// candidate that the bound cannot rule out is re-evaluated in the textbook loop's own
/// order, so the choice (ties to the lowest index included) is exactly the textbook one.
pub fn build<D>(d: &D, k: usize) -> Result<Vec<usize>>
where
    D: Dissimilarity,
    D::Value: KValue,
{
    let n = d.len();
    let all: Vec<usize> = (0..n).collect();
    let mut medoids = Vec::with_capacity(k);
    if k == 0 || n == 0 {
        return Ok(medoids);
    }
    // The first medoid: the smallest distance sum, as the textbook loop.
    build_on(d, &all, 1, &mut medoids, true);
    let mut gains = Gains::new(d, medoids[0]);
    while medoids.len() < k {
        let x = gains.best(d, &all);
        medoids.push(x);
        gains.add_medoid(d, x);
    }
    Ok(medoids)
}

/// BUILD's state between steps: the nearest-medoid distances and each candidate's gain.
struct Gains<V> {
    /// Distance of each point to its nearest medoid (exact).
    nearest: Vec<V>,
    /// Estimated gain Σⱼ max(0, nearestⱼ − d(x, j)) of each candidate x, in f64.
    gain: Vec<f64>,
    /// Σ of the magnitudes of the terms added into `gain[x]`, for its rounding bound.
    magnitude: Vec<f64>,
    /// Number of terms added into `gain[x]`.
    terms: Vec<u32>,
    is_medoid: Vec<bool>,
}

/// γₘ = m·u/(1 − m·u), the relative bound of m roundings (Higham, Accuracy and Stability of
/// Numerical Algorithms, §3.1), u = 2⁻⁵³.
fn gamma(m: usize) -> f64 {
    let mu = m as f64 * f64::EPSILON / 2.0;
    mu / (1.0 - mu)
}

impl<V: KValue> Gains<V> {
    /// The state after the first medoid `m`: O(n²) dissimilarities.
    fn new<D: Dissimilarity<Value = V>>(d: &D, m: usize) -> Self {
        let n = d.len();
        let nearest: Vec<V> = (0..n).map(|j| d.get(m, j)).collect();
        let near_f: Vec<f64> = nearest.iter().map(|v| to_f64(*v)).collect();
        let (gain, magnitude): (Vec<f64>, Vec<f64>) = (0..n)
            .into_par_iter()
            .map(|x| {
                let mut g = 0.0;
                crate::dissim::for_each_in_row(d, x, |j, v| g += (near_f[j] - to_f64(v)).max(0.0));
                (g, g)
            })
            .unzip();
        let mut is_medoid = vec![false; n];
        is_medoid[m] = true;
        Gains {
            nearest,
            gain,
            magnitude,
            terms: vec![n as u32; n],
            is_medoid,
        }
    }

    /// The textbook choice of the next medoid: the lowest (deviation, index) over the
    /// candidates whose estimated gain is within its rounding bound of the best.
    fn best<D: Dissimilarity<Value = V>>(&self, d: &D, all: &[usize]) -> usize {
        let n = d.len();
        let bound = |x: usize| gamma(self.terms[x] as usize + 4) * self.magnitude[x];
        let candidates = || (0..n).filter(|&x| !self.is_medoid[x]);
        let Some(floor) = candidates().map(|x| self.gain[x] - bound(x)).reduce(f64::max) else {
            return 0;
        };
        // The textbook loop's own rounding of each deviation, at most γₙ of the current one.
        let current: f64 = self.nearest.iter().map(|v| to_f64(*v)).sum();
        let slack = 2.0 * gamma(n + 2) * current;
        let nearest: Vec<Option<V>> = self.nearest.iter().map(|&v| Some(v)).collect();
        candidates()
            .filter(|&x| self.gain[x] + bound(x) >= floor - slack)
            .map(|x| (deviation(d, x, all, &nearest), x))
            .reduce(lowest)
            .map_or(0, |(_, x)| x)
    }

    /// Makes `m` a medoid: the points it is now nearest to lower their distance, and every
    /// candidate's gain from those points falls accordingly, O(n) per such point.
    fn add_medoid<D: Dissimilarity<Value = V>>(&mut self, d: &D, m: usize) {
        self.is_medoid[m] = true;
        let fallen: Vec<(usize, f64, f64)> = (0..d.len())
            .filter_map(|j| {
                let v = d.get(m, j);
                (v < self.nearest[j]).then(|| {
                    let old = to_f64(self.nearest[j]);
                    self.nearest[j] = v;
                    (j, old, to_f64(v))
                })
            })
            .collect();
        const CHUNK: usize = 1024;
        self.gain
            .par_chunks_mut(CHUNK)
            .zip(self.magnitude.par_chunks_mut(CHUNK))
            .zip(self.terms.par_chunks_mut(CHUNK))
            .enumerate()
            .for_each(|(c, ((gain, magnitude), terms))| {
                let start = c * CHUNK;
                for &(j, old, new) in &fallen {
                    let row = d.row(j);
                    for i in 0..gain.len() {
                        // d(start + i, j), read along row j where the matrix holds it (it is
                        // symmetric then).
                        let v = to_f64(row.map_or_else(|| d.get(start + i, j), |r| r[start + i]));
                        if v < old {
                            let kept = (new - v).max(0.0);
                            let lost = old - v;
                            gain[i] += kept - lost;
                            magnitude[i] += kept + lost;
                            terms[i] += 1;
                        }
                    }
                }
            });
    }
}

fn to_f64<V: ToPrimitive>(v: V) -> f64 {
    v.to_f64().unwrap_or(f64::INFINITY)
}

/// Total deviation Σⱼ min(dn[j], d(x, subset[j])) if `x` joined the medoids, summed in the
/// subset's order (`None`: no medoid yet).
fn deviation<D>(d: &D, x: usize, subset: &[usize], dn: &[Option<D::Value>]) -> <D::Value as KValue>::Loss
where
    D: Dissimilarity,
    D::Value: KValue,
{
    let mut td = <D::Value as KValue>::Loss::zero();
    for (jj, &j) in subset.iter().enumerate() {
        let dxj = d.get(x, j);
        td += match dn[jj] {
            Some(v) if v < dxj => v.widen(),
            _ => dxj.widen(),
        };
    }
    td
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
                .map(|&m| d.get(m, j))
                .reduce(|a, b| if b < a { b } else { a })
        })
        .collect();
    while medoids.len() < k {
        let best = subset
            .par_iter()
            .enumerate()
            .filter(|(_, x)| !medoids.contains(x))
            .map(|(_, &x)| (deviation(d, x, subset, &dn), x))
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
pub fn lab<D>(d: &D, k: usize, rng: &mut SeededRng) -> Result<Vec<usize>>
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
pub fn kmeans_plus_plus<D>(d: &D, k: usize, rng: &mut SeededRng) -> Result<Vec<usize>>
where
    D: Dissimilarity,
    D::Value: KValue,
{
    let n = d.len();
    let first = rng.random_range(0..n);
    let mut medoids = vec![first];
    let mut dn: Vec<f64> = (0..n).map(|j| d.get(first, j).to_f64().unwrap_or(0.0)).collect();
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
            *v = v.min(d.get(next, j).to_f64().unwrap_or(0.0));
        }
    }
    Ok(medoids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dissim::DenseMatrix;
    use ndarray::Array2;
    use rand::SeedableRng;

    /// The textbook O(n²k) BUILD loop.
    fn textbook<D: Dissimilarity>(d: &D, k: usize) -> Vec<usize>
    where
        D::Value: KValue,
    {
        let mut medoids = Vec::new();
        build_on(d, &(0..d.len()).collect::<Vec<_>>(), k, &mut medoids, true);
        medoids
    }

    /// A symmetric matrix from `f(i, j)` for i < j, zero diagonal.
    fn symmetric<T: Copy + Default>(n: usize, mut f: impl FnMut(usize, usize) -> T) -> Array2<T> {
        let mut m = Array2::from_elem((n, n), T::default());
        for i in 0..n {
            for j in i + 1..n {
                let v = f(i, j);
                m[[i, j]] = v;
                m[[j, i]] = v;
            }
        }
        m
    }

    #[test]
    fn build_equals_the_textbook_loop() {
        let mut rng = SeededRng::seed_from_u64(7);
        for trial in 0..40 {
            let n = rng.random_range(2..90);
            let k = rng.random_range(1..=n);
            // Euclidean points (clustered), few distinct values (ties everywhere), integers.
            let dim = 1 + trial % 4;
            let pts: Vec<Vec<f64>> = (0..n)
                .map(|_| {
                    (0..dim)
                        .map(|_| rng.random_range(0.0..1.0) + (rng.random_range(0..4) * 10) as f64)
                        .collect()
                })
                .collect();
            let euclid = symmetric(n, |i, j| {
                pts[i]
                    .iter()
                    .zip(&pts[j])
                    .map(|(a, b)| (a - b) * (a - b))
                    .sum::<f64>()
                    .sqrt()
            });
            let d = DenseMatrix::new(euclid.clone()).unwrap();
            assert_eq!(build(&d, k).unwrap(), textbook(&d, k), "euclidean n {n} k {k}");
            let f32s = DenseMatrix::new(euclid.mapv(|v| v as f32)).unwrap();
            assert_eq!(build(&f32s, k).unwrap(), textbook(&f32s, k), "f32 n {n} k {k}");
            let ties = symmetric(n, |_, _| rng.random_range(0..3) as f64 * 0.1);
            let d = DenseMatrix::new(ties).unwrap();
            assert_eq!(build(&d, k).unwrap(), textbook(&d, k), "ties n {n} k {k}");
            let ints = symmetric(n, |_, _| rng.random_range(0..1000i32));
            let d = DenseMatrix::new(ints).unwrap();
            assert_eq!(build(&d, k).unwrap(), textbook(&d, k), "i32 n {n} k {k}");
        }
    }

    #[test]
    fn build_on_duplicates_takes_the_lowest_index() {
        let d = DenseMatrix::new(Array2::<f64>::zeros((6, 6))).unwrap();
        assert_eq!(build(&d, 4).unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(build(&d, 4).unwrap(), textbook(&d, 4));
    }
}
