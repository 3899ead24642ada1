//! Elkan's assignment step (Elkan 2003, "Using the triangle inequality to accelerate
//! k-means"): per point an upper bound on the distance to its centre and a lower bound on the
//! distance to every centre (n·k memory), updated by how far the centres moved, so that most
//! distances are never computed. Lloyd's labels, up to exact distance ties.

use super::dist;
use super::points::{centre_norms, Points};
use crate::scalar::Scalar;
use ndarray::Array2;
use rayon::prelude::*;

/// Elkan's bounds: each point's centre, an upper bound on the distance to it, and a lower
/// bound on the distance to every centre (row-major n × k).
pub(super) struct Elkan {
    pub(super) labels: Vec<usize>,
    upper: Vec<f64>,
    lower: Vec<f64>,
    k: usize,
}

impl Elkan {
    pub(super) fn new<F: Scalar, X: Points<F>>(x: X, centers: &Array2<F>) -> Self {
        let (k, d) = (centers.nrows(), centers.ncols());
        let c = centers.as_slice().expect("contiguous");
        let norms = centre_norms(centers);
        let sq = x.sq_dist();
        let mut lower = vec![0.0; x.nrows() * k];
        let mut labels = vec![0; x.nrows()];
        let mut upper = vec![0.0; x.nrows()];
        lower
            .par_chunks_mut(k)
            .zip(labels.par_iter_mut())
            .zip(upper.par_iter_mut())
            .enumerate()
            .for_each(|(i, ((l, a), u))| {
                for (j, lj) in l.iter_mut().enumerate() {
                    *lj = sq(i, &c[j * d..(j + 1) * d], norms[j]).sqrt();
                }
                let (mut best, mut bd) = (0, l[0]);
                for (j, &v) in l.iter().enumerate().skip(1) {
                    if v < bd {
                        (best, bd) = (j, v);
                    }
                }
                (*a, *u) = (best, bd);
            });
        Elkan {
            labels,
            upper,
            lower,
            k,
        }
    }

    pub(super) fn moved(&mut self, drift: &[f64]) {
        let k = self.k;
        self.lower
            .par_chunks_mut(k)
            .for_each(|l| l.iter_mut().zip(drift).for_each(|(v, &p)| *v = (*v - p).max(0.0)));
        self.upper
            .par_iter_mut()
            .zip(self.labels.par_iter())
            .for_each(|(u, &a)| *u += drift[a]);
    }

    pub(super) fn update<F: Scalar, X: Points<F>>(&mut self, x: X, centers: &Array2<F>) {
        let (k, d) = (self.k, centers.ncols());
        let c = centers.as_slice().expect("contiguous");
        let row = |j: usize| &c[j * d..(j + 1) * d];
        // Half the centre-to-centre distances, and half the nearest other centre's.
        let mut half_cc = vec![0.0f64; k * k];
        for j in 0..k {
            for q in 0..j {
                let v = 0.5 * dist(row(j), row(q));
                half_cc[j * k + q] = v;
                half_cc[q * k + j] = v;
            }
        }
        let s: Vec<f64> = (0..k)
            .map(|j| {
                (0..k)
                    .filter(|&q| q != j)
                    .map(|q| half_cc[j * k + q])
                    .fold(f64::INFINITY, f64::min)
            })
            .collect();
        let norms = centre_norms(centers);
        let sq = x.sq_dist();
        self.lower
            .par_chunks_mut(k)
            .zip(self.labels.par_iter_mut())
            .zip(self.upper.par_iter_mut())
            .enumerate()
            .for_each(|(i, ((l, a), u))| {
                if *u <= s[*a] {
                    return;
                }
                let mut tight = false;
                for j in 0..k {
                    if j == *a || *u <= l[j] || *u <= half_cc[*a * k + j] {
                        continue;
                    }
                    if !tight {
                        *u = sq(i, row(*a), norms[*a]).sqrt();
                        l[*a] = *u;
                        tight = true;
                        if *u <= l[j] || *u <= half_cc[*a * k + j] {
                            continue;
                        }
                    }
                    let v = sq(i, row(j), norms[j]).sqrt();
                    l[j] = v;
                    // Ties go to the lower index, as Lloyd's argmin.
                    if v < *u || (v == *u && j < *a) {
                        (*a, *u) = (j, v);
                    }
                }
            });
    }
}
