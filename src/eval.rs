//! Evaluation measures, with scikit-learn's definitions and edge cases (version 1.x):
//! external — adjusted Rand index, normalised mutual information (arithmetic normalisation,
//! scikit-learn's default), clustering accuracy (best one-to-one matching of clusters to
//! classes, by the Hungarian method) and purity; internal — silhouette (from any
//! [`Dissimilarity`]), the medoid silhouette of Van der Laan, Pollard & Bryan (2003) as in the
//! `kmedoids` package, Calinski–Harabasz and Davies–Bouldin.
//!
//! Labels are any integers; −1 (noise) is treated as one more label, as scikit-learn does.

use crate::data::validate::{check_extents, check_points, check_same_len, column_extents, Arithmetic};
use crate::dissim::Dissimilarity;
use crate::error::{Error, Result};
use crate::metric::{Metric, MetricKind};
use crate::scalar::Scalar;
use ndarray::{Array2, ArrayView2};
use num_traits::ToPrimitive;
use rayon::prelude::*;

/// Maps labels to 0..k in increasing label order; returns (ids, k).
fn encode(labels: &[i64]) -> (Vec<usize>, usize) {
    let mut uniq: Vec<i64> = labels.to_vec();
    uniq.sort_unstable();
    uniq.dedup();
    let ids = labels.iter().map(|l| uniq.binary_search(l).unwrap()).collect();
    (ids, uniq.len())
}

/// Contingency table `c[i][j]` = points with true class i and predicted cluster j.
fn contingency(truth: &[i64], pred: &[i64]) -> Result<Vec<Vec<u64>>> {
    check_same_len("labels (truth vs prediction)", truth.len(), pred.len())?;
    if truth.is_empty() {
        return Err(Error::EmptyInput {
            what: "no labels".into(),
        });
    }
    let (t, kt) = encode(truth);
    let (p, kp) = encode(pred);
    let mut c = vec![vec![0u64; kp]; kt];
    for (&i, &j) in t.iter().zip(&p) {
        c[i][j] += 1;
    }
    Ok(c)
}

/// Adjusted Rand index (1 = identical partitions, ≈ 0 for random ones).
pub fn adjusted_rand_score(truth: &[i64], pred: &[i64]) -> Result<f64> {
    let c = contingency(truth, pred)?;
    let n = truth.len() as i128;
    let rows: Vec<i128> = c.iter().map(|r| r.iter().sum::<u64>() as i128).collect();
    let mut cols = vec![0i128; c[0].len()];
    let mut sum_sq = 0i128;
    for r in &c {
        for (j, &v) in r.iter().enumerate() {
            cols[j] += v as i128;
            sum_sq += (v as i128) * (v as i128);
        }
    }
    // scikit-learn's pair confusion matrix (ordered pairs).
    let tp = sum_sq - n;
    let fp = cols.iter().map(|&b| b * b).sum::<i128>() - sum_sq;
    let fn_ = rows.iter().map(|&a| a * a).sum::<i128>() - sum_sq;
    let tn = n * n - fp - fn_ - sum_sq;
    if fn_ == 0 && fp == 0 {
        return Ok(1.0);
    }
    let num = 2.0 * ((tp as f64) * (tn as f64) - (fn_ as f64) * (fp as f64));
    let den = ((tp + fn_) as f64) * ((fn_ + tn) as f64) + ((tp + fp) as f64) * ((fp + tn) as f64);
    Ok(num / den)
}

fn entropy(counts: impl Iterator<Item = u64>, n: f64) -> f64 {
    counts
        .filter(|&c| c > 0)
        .map(|c| {
            let p = c as f64 / n;
            -p * p.ln()
        })
        .sum()
}

/// Normalised mutual information with the arithmetic mean of the entropies.
pub fn normalized_mutual_info_score(truth: &[i64], pred: &[i64]) -> Result<f64> {
    let c = contingency(truth, pred)?;
    let (kt, kp) = (c.len(), c[0].len());
    if kt == 1 && kp == 1 {
        return Ok(1.0);
    }
    let n = truth.len() as f64;
    let rows: Vec<u64> = c.iter().map(|r| r.iter().sum()).collect();
    let cols: Vec<u64> = (0..kp).map(|j| c.iter().map(|r| r[j]).sum()).collect();
    let mut mi = 0.0;
    for (i, r) in c.iter().enumerate() {
        for (j, &v) in r.iter().enumerate() {
            if v > 0 {
                let v = v as f64;
                mi += v / n * ((n * v).ln() - ((rows[i] as f64) * (cols[j] as f64)).ln());
            }
        }
    }
    let mi = mi.max(0.0);
    if mi == 0.0 {
        return Ok(0.0);
    }
    let h = 0.5 * (entropy(rows.into_iter(), n) + entropy(cols.into_iter(), n));
    Ok(mi / h.max(f64::EPSILON))
}

/// Clustering accuracy: the fraction of points on the best one-to-one matching of predicted
/// clusters to true classes (Hungarian method; unmatched clusters count as errors).
pub fn accuracy(truth: &[i64], pred: &[i64]) -> Result<f64> {
    let c = contingency(truth, pred)?;
    let m = c.len().max(c[0].len());
    let cost: Vec<Vec<i64>> = (0..m)
        .map(|i| {
            (0..m)
                .map(|j| -(c.get(i).and_then(|r| r.get(j)).copied().unwrap_or(0) as i64))
                .collect()
        })
        .collect();
    let assignment = hungarian(&cost);
    let matched: i64 = assignment.iter().enumerate().map(|(i, &j)| -cost[i][j]).sum();
    Ok(matched as f64 / truth.len() as f64)
}

/// Purity: each predicted cluster counts its most frequent true class.
pub fn purity(truth: &[i64], pred: &[i64]) -> Result<f64> {
    let c = contingency(truth, pred)?;
    let kp = c[0].len();
    let hits: u64 = (0..kp).map(|j| c.iter().map(|r| r[j]).max().unwrap_or(0)).sum();
    Ok(hits as f64 / truth.len() as f64)
}

/// Minimum-cost assignment on a square matrix (shortest augmenting paths, O(m³)); returns
/// the column of each row.
pub fn hungarian(cost: &[Vec<i64>]) -> Vec<usize> {
    let m = cost.len();
    const INF: i64 = i64::MAX / 4;
    // 1-based potentials and matching, column 0 is the virtual start.
    let (mut u, mut v) = (vec![0i64; m + 1], vec![0i64; m + 1]);
    let (mut p, mut way) = (vec![0usize; m + 1], vec![0usize; m + 1]);
    for i in 1..=m {
        p[0] = i;
        let mut j0 = 0;
        let mut minv = vec![INF; m + 1];
        let mut used = vec![false; m + 1];
        loop {
            used[j0] = true;
            let i0 = p[j0];
            let (mut delta, mut j1) = (INF, 0);
            for j in 1..=m {
                if !used[j] {
                    let cur = cost[i0 - 1][j - 1] - u[i0] - v[j];
                    if cur < minv[j] {
                        minv[j] = cur;
                        way[j] = j0;
                    }
                    if minv[j] < delta {
                        delta = minv[j];
                        j1 = j;
                    }
                }
            }
            for j in 0..=m {
                if used[j] {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
            if p[j0] == 0 {
                break;
            }
        }
        loop {
            let j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    let mut col = vec![0usize; m];
    for j in 1..=m {
        if p[j] > 0 {
            col[p[j] - 1] = j - 1;
        }
    }
    col
}

fn check_label_count(k: usize, n: usize) -> Result<()> {
    if k < 2 || k > n.saturating_sub(1) {
        return Err(Error::param(
            "labels",
            format!("{k} distinct"),
            format!("needs 2 <= number of labels <= n - 1 = {}", n.saturating_sub(1)),
        ));
    }
    Ok(())
}

/// Silhouette coefficient of each point: (b − a) / max(a, b), with a the mean dissimilarity
/// to the rest of its cluster and b the smallest mean dissimilarity to another cluster; 0 for
/// points alone in their cluster (scikit-learn's `silhouette_samples`).
pub fn silhouette_samples<D: Dissimilarity>(d: &D, labels: &[i64]) -> Result<Vec<f64>> {
    let n = d.len();
    check_same_len("labels vs dissimilarity size", n, labels.len())?;
    let (ids, k) = encode(labels);
    check_label_count(k, n)?;
    let mut sizes = vec![0usize; k];
    ids.iter().for_each(|&c| sizes[c] += 1);
    Ok((0..n)
        .into_par_iter()
        .map(|i| {
            let mut sums = vec![0.0f64; k];
            for j in 0..n {
                sums[ids[j]] += d.get(i, j).to_f64().unwrap_or(f64::NAN);
            }
            let own = ids[i];
            if sizes[own] == 1 {
                return 0.0;
            }
            let a = sums[own] / (sizes[own] - 1) as f64;
            let b = (0..k)
                .filter(|&c| c != own)
                .map(|c| sums[c] / sizes[c] as f64)
                .fold(f64::INFINITY, f64::min);
            let s = (b - a) / a.max(b);
            if s.is_nan() {
                0.0
            } else {
                s
            }
        })
        .collect())
}

/// Mean silhouette coefficient (scikit-learn's `silhouette_score`).
pub fn silhouette_score<D: Dissimilarity>(d: &D, labels: &[i64]) -> Result<f64> {
    let s = silhouette_samples(d, labels)?;
    Ok(s.iter().sum::<f64>() / s.len() as f64)
}

/// Medoid silhouette: the mean over points of 1 − d₁/d₂, with d₁ and d₂ the dissimilarities
/// to the nearest and second-nearest medoid (O(n·k)); returns (mean, per point). As in the
/// `kmedoids` package, a point with d₁ = 0 scores 1 (even when d₂ = 0), and with k = 1 every
/// point scores 1 (d₂ = ∞).
pub fn medoid_silhouette<D: Dissimilarity>(d: &D, medoids: &[usize]) -> Result<(f64, Vec<f64>)> {
    let n = d.len();
    if n == 0 {
        return Err(Error::EmptyInput {
            what: "no points".into(),
        });
    }
    crate::data::validate::check_k(medoids.len(), n)?;
    if let Some(&m) = medoids.iter().find(|&&m| m >= n) {
        return Err(Error::param(
            "medoid",
            m,
            format!("index out of range for n = {n}"),
        ));
    }
    let s: Vec<f64> = (0..n)
        .into_par_iter()
        .map(|i| {
            let (mut d1, mut d2) = (f64::INFINITY, f64::INFINITY);
            for &m in medoids {
                let v = d.get(i, m).to_f64().unwrap_or(f64::NAN);
                if v < d1 {
                    d2 = d1;
                    d1 = v;
                } else if v < d2 {
                    d2 = v;
                }
            }
            if d1 == 0.0 {
                1.0
            } else {
                1.0 - d1 / d2
            }
        })
        .collect();
    Ok((s.iter().sum::<f64>() / n as f64, s))
}

/// A labelled data set's clusters: label ids (0..k), centroids and sizes, in f64.
struct Clusters {
    n: usize,
    k: usize,
    ids: Vec<usize>,
    c: Array2<f64>,
    sizes: Vec<usize>,
}

impl Clusters {
    /// Checks the data and labels (2 ≤ k ≤ n − 1) and computes the centroids.
    fn of<F: Scalar>(x: ArrayView2<F>, labels: &[i64]) -> Result<Self> {
        check_points(x)?;
        let n = x.nrows();
        check_same_len("labels vs data rows", n, labels.len())?;
        let what = "the Calinski–Harabasz and Davies–Bouldin indices";
        check_extents::<f64>(&column_extents(x), n, Arithmetic::SQUARES, what)?;
        let (ids, k) = encode(labels);
        check_label_count(k, n)?;
        let mut c = Array2::<f64>::zeros((k, x.ncols()));
        let mut sizes = vec![0usize; k];
        for (row, &id) in x.rows().into_iter().zip(&ids) {
            sizes[id] += 1;
            c.row_mut(id)
                .iter_mut()
                .zip(row)
                .for_each(|(a, v)| *a += v.to_f64_exact());
        }
        for (mut r, &s) in c.rows_mut().into_iter().zip(&sizes) {
            r.mapv_inplace(|v| v / s as f64);
        }
        Ok(Clusters { n, k, ids, c, sizes })
    }
}

/// Calinski–Harabasz index (variance ratio): between-cluster over within-cluster dispersion,
/// scaled by (n − k)/(k − 1); 1.0 when the within-cluster dispersion is 0.
pub fn calinski_harabasz_score<F: Scalar>(x: ArrayView2<F>, labels: &[i64]) -> Result<f64> {
    let Clusters { n, k, ids, c, sizes } = Clusters::of(x, labels)?;
    let mean: Vec<f64> = (0..x.ncols())
        .map(|j| x.column(j).iter().map(|v| v.to_f64_exact()).sum::<f64>() / n as f64)
        .collect();
    let extra: f64 = (0..k)
        .map(|q| {
            sizes[q] as f64
                * c.row(q)
                    .iter()
                    .zip(&mean)
                    .map(|(a, b)| (a - b).powi(2))
                    .sum::<f64>()
        })
        .sum();
    let intra: f64 = x
        .rows()
        .into_iter()
        .zip(&ids)
        .map(|(r, &q)| {
            r.iter()
                .zip(c.row(q))
                .map(|(v, m)| (v.to_f64_exact() - m).powi(2))
                .sum::<f64>()
        })
        .sum();
    let index = if intra == 0.0 {
        1.0
    } else {
        extra * (n - k) as f64 / (intra * (k as f64 - 1.0))
    };
    finite_index("Calinski–Harabasz", index)
}

/// An index beyond float64's range is an error, not a result.
fn finite_index(name: &str, v: f64) -> Result<f64> {
    if v.is_finite() {
        return Ok(v);
    }
    Err(crate::error::Error::OutOfRange(format!(
        "the {name} index is beyond the range of float64 (a cluster spread almost 0 beside \
         far-apart clusters)"
    )))
}

/// Davies–Bouldin index: the mean over clusters of the worst (sᵢ + sⱼ)/dᵢⱼ, with s the mean
/// Euclidean distance to the centroid and d the distance between centroids (lower is better).
pub fn davies_bouldin_score<F: Scalar>(x: ArrayView2<F>, labels: &[i64]) -> Result<f64> {
    let Clusters { k, ids, c, sizes, .. } = Clusters::of(x, labels)?;
    let euclid = |a: &[f64], b: &[f64]| MetricKind::Euclidean.distance(a, b);
    let mut intra = vec![0.0f64; k];
    let mut row = vec![0.0f64; x.ncols()];
    for (r, &q) in x.rows().into_iter().zip(&ids) {
        row.iter_mut().zip(r).for_each(|(a, v)| *a = v.to_f64_exact());
        intra[q] += euclid(&row, c.row(q).as_slice().unwrap());
    }
    intra.iter_mut().zip(&sizes).for_each(|(s, &m)| *s /= m as f64);
    let cd = Array2::from_shape_fn((k, k), |(i, j)| {
        euclid(c.row(i).as_slice().unwrap(), c.row(j).as_slice().unwrap())
    });
    // numpy.allclose(v, 0): every |v| <= 1e-8.
    if intra.iter().all(|v| v.abs() <= 1e-8) || cd.iter().all(|v| v.abs() <= 1e-8) {
        return Ok(0.0);
    }
    let score: f64 = (0..k)
        .map(|i| {
            (0..k)
                .map(|j| {
                    let d = cd[[i, j]];
                    if d == 0.0 {
                        0.0
                    } else {
                        (intra[i] + intra[j]) / d
                    }
                })
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .sum();
    finite_index("Davies–Bouldin", score / k as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dissim::DenseMatrix;
    use ndarray::array;

    #[test]
    fn spec_silhouette_fixture() {
        // docs/reference-notes.md §1, item 12.
        let d = DenseMatrix::new(array![[0.0, 0.1, 0.3], [0.1, 0.0, 0.2], [0.3, 0.2, 0.0]]).unwrap();
        let s = silhouette_samples(&d, &[0, 0, 1]).unwrap();
        assert!(
            (s[0] - 2.0 / 3.0).abs() < 1e-12 && (s[1] - 0.5).abs() < 1e-12 && s[2] == 0.0,
            "{s:?}"
        );
    }

    #[test]
    fn external_measures_simple_cases() {
        let t = [0, 0, 1, 1];
        assert_eq!(adjusted_rand_score(&t, &[5, 5, 3, 3]).unwrap(), 1.0);
        assert!((normalized_mutual_info_score(&t, &[1, 1, 0, 0]).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(accuracy(&t, &[1, 1, 0, 0]).unwrap(), 1.0);
        assert_eq!(accuracy(&t, &[0, 1, 2, 3]).unwrap(), 0.5);
        assert_eq!(purity(&t, &[0, 1, 2, 3]).unwrap(), 1.0);
        assert_eq!(normalized_mutual_info_score(&[0, 0], &[1, 1]).unwrap(), 1.0);
        assert!(adjusted_rand_score(&t, &[0, 1]).is_err());
        assert!(adjusted_rand_score(&[], &[]).is_err());
    }

    #[test]
    fn hungarian_matches_brute_force() {
        use rand::{Rng, SeedableRng};
        let mut rng = crate::rng::SeededRng::seed_from_u64(3);
        for m in 1..=6 {
            for _ in 0..20 {
                let cost: Vec<Vec<i64>> = (0..m)
                    .map(|_| (0..m).map(|_| rng.random_range(-20..20)).collect())
                    .collect();
                let a = hungarian(&cost);
                let got: i64 = a.iter().enumerate().map(|(i, &j)| cost[i][j]).sum();
                let mut perm: Vec<usize> = (0..m).collect();
                let mut best = i64::MAX;
                permute(&mut perm, 0, &mut |p| {
                    best = best.min(p.iter().enumerate().map(|(i, &j)| cost[i][j]).sum())
                });
                assert_eq!(got, best);
            }
        }
    }

    fn permute(p: &mut Vec<usize>, k: usize, f: &mut dyn FnMut(&[usize])) {
        if k == p.len() {
            f(p);
            return;
        }
        for i in k..p.len() {
            p.swap(k, i);
            permute(p, k + 1, f);
            p.swap(k, i);
        }
    }
}

/// Deprecated: [`adjusted_rand_score`], scikit-learn's name.
#[deprecated(since = "0.1.0", note = "use adjusted_rand_score, scikit-learn's name")]
pub fn adjusted_rand_index(truth: &[i64], pred: &[i64]) -> Result<f64> {
    adjusted_rand_score(truth, pred)
}

/// Deprecated: [`normalized_mutual_info_score`], scikit-learn's name.
#[deprecated(
    since = "0.1.0",
    note = "use normalized_mutual_info_score, scikit-learn's name"
)]
pub fn normalized_mutual_info(truth: &[i64], pred: &[i64]) -> Result<f64> {
    normalized_mutual_info_score(truth, pred)
}

/// Deprecated: [`calinski_harabasz_score`], scikit-learn's name.
#[deprecated(since = "0.1.0", note = "use calinski_harabasz_score, scikit-learn's name")]
pub fn calinski_harabasz<F: Scalar>(x: ArrayView2<F>, labels: &[i64]) -> Result<f64> {
    calinski_harabasz_score(x, labels)
}

/// Deprecated: [`davies_bouldin_score`], scikit-learn's name.
#[deprecated(since = "0.1.0", note = "use davies_bouldin_score, scikit-learn's name")]
pub fn davies_bouldin<F: Scalar>(x: ArrayView2<F>, labels: &[i64]) -> Result<f64> {
    davies_bouldin_score(x, labels)
}

#[cfg(test)]
mod deprecated_names {
    /// The old names stay, for one release, as the same functions.
    #[test]
    #[allow(deprecated)]
    fn old_names_give_the_same_results() {
        let (t, p) = ([0, 0, 1, 1, 2, 2], [0, 0, 1, 2, 2, 2]);
        assert_eq!(
            super::adjusted_rand_index(&t, &p).unwrap(),
            super::adjusted_rand_score(&t, &p).unwrap()
        );
        assert_eq!(
            super::normalized_mutual_info(&t, &p).unwrap(),
            super::normalized_mutual_info_score(&t, &p).unwrap()
        );
        let x = ndarray::array![
            [0.0, 0.0],
            [0.0, 1.0],
            [5.0, 5.0],
            [5.0, 6.0],
            [9.0, 0.0],
            [9.0, 1.0]
        ];
        let l = [0, 0, 1, 1, 2, 2];
        assert_eq!(
            super::calinski_harabasz(x.view(), &l).unwrap(),
            super::calinski_harabasz_score(x.view(), &l).unwrap()
        );
        assert_eq!(
            super::davies_bouldin(x.view(), &l).unwrap(),
            super::davies_bouldin_score(x.view(), &l).unwrap()
        );
    }
}
