//! Hamerly's assignment step (Hamerly 2010, "Making k-means even faster"): per point an upper
//! bound on the distance to its centre and one lower bound on the distance to every other
//! centre. Points whose bounds fail are gathered in batches and searched together on the
//! backend's nearest-two kernel (where the paper searches each point alone). Lloyd's labels,
//! up to exact distance ties.

use super::points::{centre_norms, Points};
use crate::backend::{Backend, CpuBackend};
use crate::error::Result;
use crate::metric::MetricKind;
use crate::scalar::Scalar;
use ndarray::Array2;
use rayon::prelude::*;

/// Hamerly's bounds: for each point its centre, an upper bound on the distance to it and a
/// lower bound on the distance to every other centre (Euclidean, not squared).
pub(super) struct Hamerly {
    pub(super) labels: Vec<usize>,
    upper: Vec<f64>,
    lower: Vec<f64>,
}

impl Hamerly {
    /// Exact nearest and second-nearest distances of every point.
    pub(super) fn new<F: Scalar, X: Points<F>>(x: X, centers: &Array2<F>) -> Result<Self> {
        let near = x.nearest_two(None, centers)?;
        Ok(Hamerly {
            labels: near.iter().map(|n| n.first.index).collect(),
            upper: near.iter().map(|n| n.first.distance.to_f64_exact()).collect(),
            lower: near
                .iter()
                .map(|n| n.second.map_or(f64::INFINITY, |s| s.distance.to_f64_exact()))
                .collect(),
        })
    }

    /// Loosens the bounds by how far each centre moved.
    pub(super) fn moved(&mut self, drift: &[f64]) {
        let (mut top, mut second, mut arg) = (0.0f64, 0.0f64, usize::MAX);
        for (j, &p) in drift.iter().enumerate() {
            if p > top {
                (second, top, arg) = (top, p, j);
            } else if p > second {
                second = p;
            }
        }
        self.upper
            .par_iter_mut()
            .zip(self.lower.par_iter_mut())
            .zip(self.labels.par_iter())
            .for_each(|((u, l), &a)| {
                *u += drift[a];
                *l -= if a == arg { second } else { top };
            });
    }

    /// Reassigns the points whose bounds no longer prove their centre nearest: their bound
    /// tightened first, then those it still does not settle searched together on the
    /// nearest-centre kernel (nearest and second nearest, ties to the lowest index).
    pub(super) fn update<F: Scalar, X: Points<F>>(&mut self, x: X, centers: &Array2<F>) -> Result<()> {
        let cpu = CpuBackend::default();
        let d = centers.ncols();
        let c = centers.as_slice().expect("contiguous");
        // Half the distance from each centre to its nearest other centre (its second nearest
        // among the centres: itself is the nearest, or a duplicate at distance 0).
        let half: Vec<f64> = cpu
            .nearest_two(centers.view(), centers.view(), &MetricKind::Euclidean)?
            .iter()
            .map(|n| 0.5 * n.second.map_or(f64::INFINITY, |s| s.distance.to_f64_exact()))
            .collect();
        let norms = centre_norms(centers);
        let sq = x.sq_dist();
        let unsettled: Vec<usize> = self
            .labels
            .par_iter()
            .zip(self.upper.par_iter_mut())
            .zip(self.lower.par_iter())
            .enumerate()
            .filter_map(|(i, ((&a, u), &l))| {
                let m = half[a].max(l);
                if *u <= m {
                    return None;
                }
                *u = sq(i, &c[a * d..(a + 1) * d], norms[a]).sqrt();
                (*u > m).then_some(i)
            })
            .collect();
        for batch in unsettled.chunks(HAMERLY_BATCH) {
            let near = x.nearest_two(Some(batch), centers)?;
            for (&i, n) in batch.iter().zip(near) {
                self.labels[i] = n.first.index;
                self.upper[i] = n.first.distance.to_f64_exact();
                self.lower[i] = n.second.map_or(f64::INFINITY, |s| s.distance.to_f64_exact());
            }
        }
        Ok(())
    }
}

/// Points whose Hamerly bounds fail are searched in batches of this many rows.
const HAMERLY_BATCH: usize = 16_384;
