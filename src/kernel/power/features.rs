//! Power k-means' centroids as explicit vectors: in the data's (or the features') own
//! coordinates on the CPU ([`Features`]), or over points a device holds ([`OnDevice`]); both
//! end an iteration from per-block partial sums added in a fixed order.

use super::{hardness, power_weights, Space, Step, BLOCK};
use crate::backend::device::BoxedPowerPoints;
use crate::backend::{Backend, CpuBackend};
use crate::comm::{fetch_rows, Communicator, Partition};
use crate::error::Result;
use crate::metric::MetricKind;
use crate::scalar::Scalar;
use ndarray::{s, Array2, ArrayView2};
use rayon::prelude::*;

/// `Σᵢ wᵢⱼ xᵢ` over one block of rows (k × d): a GEMM in `F`, returned in f64.
pub(crate) fn block_weighted_sum<F: Scalar>(xb: ArrayView2<F>, wb: ArrayView2<F>) -> Array2<f64> {
    let mut out = Array2::<F>::zeros((wb.ncols(), xb.ncols()));
    crate::linalg::gemm_abt(wb.t(), xb.t(), out.view_mut(), F::one());
    out.mapv(|v| v.to_f64_exact())
}

/// `Σᵢ wᵢⱼ xᵢ` (k × d) by fixed row blocks in parallel, summed in block order (so the result
/// does not depend on the thread count).
pub(crate) fn weighted_sums<F: Scalar>(x: ArrayView2<F>, w: &Array2<f64>) -> Array2<f64> {
    let n = x.nrows();
    (0..n.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| {
            let rows = b * BLOCK..((b + 1) * BLOCK).min(n);
            let wb = w.slice(s![rows.clone(), ..]).mapv(F::from_f64_lossy);
            block_weighted_sum(x.slice(s![rows, ..]), wb.view())
        })
        .collect::<Vec<_>>()
        .into_iter()
        .fold(Array2::zeros((w.ncols(), x.ncols())), |acc, p| acc + p)
}

/// Moves every centre to `sums / totals` (a centre without weight stays where it is);
/// returns (`Σ‖new − old‖²`, `Σ‖new‖²`).
pub(crate) fn move_to_means<F: Scalar>(
    centers: &mut Array2<F>,
    sums: &Array2<f64>,
    totals: &[f64],
) -> (f64, f64) {
    let (mut moved, mut norm) = (0.0, 0.0);
    for ((j, c), v) in centers.indexed_iter_mut() {
        let old = v.to_f64_exact();
        let new = if totals[j] > 0.0 {
            sums[[j, c]] / totals[j]
        } else {
            old
        };
        moved += (new - old) * (new - old);
        norm += new * new;
        *v = F::from_f64_lossy(new);
    }
    (moved, norm)
}

/// Ends an iteration from its per-block partial sums (each `[Σwx (k × dim), Σw (k),
/// objective, hardness]`): sums the blocks of all processes (the same bits for any process
/// count) and moves the centroids.
pub(crate) fn step_from_blocks<F: Scalar>(
    centers: &mut Array2<F>,
    parts: &[Vec<f64>],
    part: Partition,
    comm: &dyn Communicator,
) -> Step {
    let (k, dim) = centers.dim();
    let mut all = crate::comm::reproducible_sum(parts, k * dim + k + 2, comm);
    let (objective, hard) = (all[k * dim + k], all[k * dim + k + 1]);
    let totals = all.split_off(k * dim);
    let sums = Array2::from_shape_vec((k, dim), all).expect("k × dim sums");
    let (moved, norm) = move_to_means(centers, &sums, &totals);
    Step {
        objective,
        moved,
        norm,
        hardness: hard / part.n_global as f64,
    }
}

/// Centroids as explicit vectors in the data's (or the features') space; `x` is this
/// process's slice of the rows.
pub(crate) struct Features<'a, F: Scalar> {
    pub x: ArrayView2<'a, F>,
    pub centers: Array2<F>,
    /// ‖xᵢ‖², computed once.
    norms: Vec<f64>,
    backend: CpuBackend,
    part: Partition,
    comm: &'a dyn Communicator,
    /// Sample weights of the rows (`None`: all 1), set by [`Features::weighted`].
    sample_weight: Option<&'a [f64]>,
    /// n / Σ weights, so that the reported hardness is the weighted mean.
    hardness_scale: f64,
}

impl<'a, F: Scalar> Features<'a, F> {
    /// Centroids at rows `seeds` (global indices).
    pub fn new(x: ArrayView2<'a, F>, seeds: &[usize], part: Partition, comm: &'a dyn Communicator) -> Self {
        let norms = crate::linalg::row_sq_norms(x);
        Features {
            x,
            centers: fetch_rows(x, part, seeds, comm),
            norms,
            backend: CpuBackend::default(),
            part,
            comm,
            sample_weight: None,
            hardness_scale: 1.0,
        }
    }

    /// With sample weights (one process: `x` holds every row).
    pub fn weighted(mut self, w: Option<&'a [f64]>) -> Self {
        if let Some(v) = w {
            self.hardness_scale = v.len() as f64 / v.iter().sum::<f64>();
        }
        self.sample_weight = w;
        self
    }
}

impl<F: Scalar> Space for Features<'_, F> {
    fn distances(&self) -> Result<Array2<f64>> {
        let mut d = Array2::<F>::zeros((self.x.nrows(), self.centers.nrows()));
        self.backend.pairwise(
            self.x,
            self.centers.view(),
            &MetricKind::SqEuclidean,
            d.view_mut(),
        )?;
        Ok(d.mapv(|v| v.to_f64_exact()))
    }

    /// Distances, weights and weighted sums block by block in one pass over the rows (the
    /// rows are read once per iteration instead of twice; the pass is memory-bound).
    fn step(&mut self, s: f64) -> Result<Step> {
        let n = self.x.nrows();
        let k = self.centers.nrows();
        let center_norms: Vec<f64> = self
            .centers
            .rows()
            .into_iter()
            .map(|r| r.iter().map(|v| v.to_f64_exact().powi(2)).sum())
            .collect();
        // Per block: Σwx (k × dim), Σw (k), objective, hardness, in one vector.
        let parts: Vec<Vec<f64>> = (0..n.div_ceil(BLOCK))
            .into_par_iter()
            .map(|b| {
                let rows = b * BLOCK..((b + 1) * BLOCK).min(n);
                let xb = self.x.slice(s![rows.clone(), ..]);
                let mut dots = Array2::<F>::zeros((rows.len(), k));
                crate::linalg::gemm_abt(xb, self.centers.view(), dots.view_mut(), F::one());
                let mut d = vec![0.0f64; k];
                let mut w = Array2::<F>::zeros((rows.len(), k));
                let mut totals = vec![0.0f64; k];
                let (mut objective, mut hard) = (0.0, 0.0);
                let mut wrow = vec![0.0f64; k];
                for (r, i) in rows.enumerate() {
                    for j in 0..k {
                        d[j] = (self.norms[i] + center_norms[j] - 2.0 * dots[[r, j]].to_f64_exact()).max(0.0);
                    }
                    let v = self.sample_weight.map_or(1.0, |v| v[i]);
                    objective += v * power_weights(&d, s, &mut wrow);
                    hard += v * self.hardness_scale * hardness(&wrow);
                    if v != 1.0 {
                        wrow.iter_mut().for_each(|w| *w *= v);
                    }
                    for j in 0..k {
                        w[[r, j]] = F::from_f64_lossy(wrow[j]);
                        totals[j] += wrow[j];
                    }
                }
                let mut part = block_weighted_sum(xb, w.view()).into_raw_vec_and_offset().0;
                part.extend(totals);
                part.extend([objective, hard]);
                part
            })
            .collect();
        Ok(step_from_blocks(&mut self.centers, &parts, self.part, self.comm))
    }

    fn comm(&self) -> &dyn Communicator {
        self.comm
    }

    fn sample_weight(&self) -> Option<&[f64]> {
        self.sample_weight
    }
}

/// Centroids on the host over points a device holds
/// ([`crate::backend::Backend::power_points`]); unweighted.
pub(crate) struct OnDevice<'a, F: Scalar> {
    points: BoxedPowerPoints<'a, F>,
    pub centers: Array2<F>,
    part: Partition,
    comm: &'a dyn Communicator,
}

impl<'a, F: Scalar> OnDevice<'a, F> {
    /// Centroids at rows `seeds` (global indices) of `x`, over the device's `points` of `x`.
    pub fn new(
        points: BoxedPowerPoints<'a, F>,
        x: ArrayView2<F>,
        seeds: &[usize],
        part: Partition,
        comm: &'a dyn Communicator,
    ) -> Self {
        let centers = fetch_rows(x, part, seeds, comm);
        OnDevice {
            points,
            centers,
            part,
            comm,
        }
    }
}

impl<F: Scalar> Space for OnDevice<'_, F> {
    fn distances(&self) -> Result<Array2<f64>> {
        self.points.distances(self.centers.view())
    }

    fn step(&mut self, s: f64) -> Result<Step> {
        let parts = self.points.block_sums(self.centers.view(), s)?;
        Ok(step_from_blocks(&mut self.centers, &parts, self.part, self.comm))
    }

    fn comm(&self) -> &dyn Communicator {
        self.comm
    }
}
