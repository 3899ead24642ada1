//! The CPU backend: rayon over fixed-size row blocks (so results do not depend on the thread
//! count), SIMD inner loops from [`crate::scalar::simd`], and the GEMM form of squared Euclidean
//! distances, ‖x‖² + ‖y‖² − 2x·y, computed on data centred by the mean of `y` (distances are
//! translation invariant, and centring shrinks the norms that cancel), clamped at 0, with an
//! exact recomputation of the pairs where cancellation could cost accuracy.

use super::nearest::{nearest_into, nearest_seq, Centres, Scratch, Slot};
use super::{check_pairwise_shapes, fill_c_order, Backend, Distances, Nearest, NearestTwo};
use crate::data::standard_layout;
use crate::error::Result;
use crate::linalg::gemm_abt;
use crate::metric::{cosine_from_parts, haversine_prepared, GeoPoint, Metric, MetricKind};
use crate::scalar::Scalar;
use ndarray::{s, Array2, ArrayView2, ArrayViewMut2, Axis};
use rayon::prelude::*;

/// Rows of `x` per task on the pair-by-pair path.
const ROW_BLOCK: usize = 64;
/// Rows of `x` per task on the GEMM path.
const GEMM_BLOCK: usize = 256;
/// Rows of `y` per GEMM tile (256 × 512 outputs stay in the L2 cache for the epilogue).
const GEMM_Y_TILE: usize = 512;
/// Rows of `y` per cache tile on the pair-by-pair path.
const Y_TILE: usize = 256;

/// The CPU backend.
#[derive(Clone, Copy, Debug)]
pub struct CpuBackend {
    /// Use the GEMM forms for Euclidean, squared Euclidean and cosine distances (default true:
    /// faster than the direct SIMD loop at every dimension measured, 4 to 64; see
    /// benches/distances.rs). `false` computes every pair directly.
    pub gemm: bool,
    /// Recompute directly the GEMM-form distances where `d² ≤ τ·(‖x‖² + ‖y‖²)` (τ = 10⁻² in
    /// f32, 10⁻⁶ in f64), so near-zero distances keep full relative accuracy.
    pub exact_recompute: bool,
}

impl Default for CpuBackend {
    fn default() -> Self {
        CpuBackend {
            gemm: true,
            exact_recompute: true,
        }
    }
}

/// What is prepared once from `y` for a request.
enum Plan<F> {
    /// GEMM form: `y` centred on `mu`, its squared norms, and whether to take the root.
    Gemm {
        yc: Array2<F>,
        ny: Vec<F>,
        mu: Vec<F>,
        root: bool,
    },
    /// Cosine as 1 − x̂·ŷ: `y` with unit rows (zero rows stay zero), and which rows are zero.
    CosineGemm { yn: Array2<F>, y_zero: Vec<bool> },
    /// Haversine with `y` converted once to radians and cos(latitude).
    Haversine { y_geo: Vec<GeoPoint> },
    /// Pair by pair; `ny` holds squared norms for cosine.
    Pairs { ny: Vec<F> },
}

impl CpuBackend {
    /// `squared` asks for squared Euclidean distances even when the metric is Euclidean
    /// (nearest-centre search compares squares and takes the root of the winners).
    fn plan<F: Scalar>(&self, y: ArrayView2<F>, kind: Option<MetricKind>, squared: bool) -> Plan<F> {
        let euclidean = matches!(kind, Some(MetricKind::Euclidean | MetricKind::SqEuclidean));
        if self.gemm && kind == Some(MetricKind::Cosine) {
            let (yn, y_zero) = unit_rows(y);
            Plan::CosineGemm { yn, y_zero }
        } else if self.gemm && euclidean {
            let mu: Vec<F> = y
                .axis_iter(Axis(1))
                .map(|c| {
                    F::from_f64_lossy(
                        c.iter().map(|v| v.to_f64_exact()).sum::<f64>() / y.nrows().max(1) as f64,
                    )
                })
                .collect();
            let mut yc = y.to_owned();
            for row in yc
                .as_slice_mut()
                .expect("owned is contiguous")
                .chunks_exact_mut(mu.len())
            {
                row.iter_mut().zip(&mu).for_each(|(v, &m)| *v -= m);
            }
            let ny = yc
                .rows()
                .into_iter()
                .map(|r| sq_norm(r.as_slice().unwrap()))
                .collect();
            let root = kind == Some(MetricKind::Euclidean) && !squared;
            Plan::Gemm { yc, ny, mu, root }
        } else if kind == Some(MetricKind::Haversine) {
            Plan::Haversine { y_geo: geo_points(y) }
        } else if kind == Some(MetricKind::Cosine) {
            Plan::Pairs {
                ny: y
                    .rows()
                    .into_iter()
                    .map(|r| sq_norm(r.as_slice().unwrap()))
                    .collect(),
            }
        } else {
            Plan::Pairs { ny: Vec::new() }
        }
    }

    /// Fills one block serially: `out[i][j] = d(xb[i], y[j])`.
    fn block<F: Scalar, M: Metric>(
        &self,
        plan: &Plan<F>,
        metric: &M,
        squared: bool,
        xb: ArrayView2<F>,
        y: ArrayView2<F>,
        mut out: ArrayViewMut2<F>,
    ) {
        match plan {
            Plan::Gemm { yc, ny, mu, root } => {
                let mut xc = xb.to_owned();
                for row in xc
                    .as_slice_mut()
                    .expect("owned is contiguous")
                    .chunks_exact_mut(mu.len())
                {
                    row.iter_mut().zip(mu).for_each(|(v, &m)| *v -= m);
                }
                let nx: Vec<F> = xc
                    .rows()
                    .into_iter()
                    .map(|r| sq_norm(r.as_slice().unwrap()))
                    .collect();
                let tau = F::from_f64_lossy(if F::DTYPE == "float32" { 1e-2 } else { 1e-6 });
                // Tiles of y small enough that the epilogue finds the GEMM output in cache.
                for t in (0..y.nrows()).step_by(GEMM_Y_TILE) {
                    let end = (t + GEMM_Y_TILE).min(y.nrows());
                    let mut tile = out.slice_mut(s![.., t..end]);
                    gemm_abt(
                        xc.view(),
                        yc.slice(s![t..end, ..]),
                        tile.view_mut(),
                        F::from_f64_lossy(-2.0),
                    );
                    let ny = &ny[t..end];
                    for (i, mut row) in tile.rows_mut().into_iter().enumerate() {
                        let row = row.as_slice_mut().expect("output rows are contiguous");
                        let nxi = nx[i];
                        let mut suspect = false;
                        for (v, &nyj) in row.iter_mut().zip(ny) {
                            *v = (*v + nxi + nyj).max(F::zero());
                            suspect |= *v <= tau * (nxi + nyj);
                        }
                        if self.exact_recompute && suspect {
                            let a = xb.row(i);
                            let a = a.as_slice().unwrap();
                            for (j, (v, &nyj)) in row.iter_mut().zip(ny).enumerate() {
                                if *v <= tau * (nxi + nyj) {
                                    *v = F::sqeuclidean(a, y.row(t + j).as_slice().unwrap());
                                }
                            }
                        }
                        if *root {
                            row.iter_mut().for_each(|v| *v = v.sqrt());
                        }
                    }
                }
            }
            Plan::CosineGemm { yn, y_zero } => {
                let (xn, x_zero) = unit_rows(xb);
                gemm_abt(xn.view(), yn.view(), out.view_mut(), F::one());
                let two = F::one() + F::one();
                for (i, mut row) in out.rows_mut().into_iter().enumerate() {
                    let row = row.as_slice_mut().expect("output rows are contiguous");
                    for (v, &yz) in row.iter_mut().zip(y_zero) {
                        *v = match (x_zero[i], yz) {
                            (false, false) => (F::one() - *v).max(F::zero()).min(two),
                            (true, true) => F::zero(),
                            _ => F::one(),
                        };
                    }
                }
            }
            Plan::Haversine { y_geo } => {
                let x_geo = geo_points(xb);
                for (i, mut row) in out.rows_mut().into_iter().enumerate() {
                    for (v, b) in row.iter_mut().zip(y_geo) {
                        *v = F::from_f64_lossy(haversine_prepared(&x_geo[i], b));
                    }
                }
            }
            Plan::Pairs { ny } => {
                let k = F::simd_table();
                match metric.kind() {
                    Some(MetricKind::Euclidean) if squared => {
                        fill_rows(xb, y, out, k.sqeuclidean_rows, |_, _, v| v)
                    }
                    Some(MetricKind::Euclidean) => {
                        fill_rows(xb, y, out, k.sqeuclidean_rows, |_, _, v| v.sqrt())
                    }
                    Some(MetricKind::SqEuclidean) => fill_rows(xb, y, out, k.sqeuclidean_rows, |_, _, v| v),
                    Some(MetricKind::Manhattan) => fill_rows(xb, y, out, k.manhattan_rows, |_, _, v| v),
                    Some(MetricKind::Minkowski(1.0)) => fill_rows(xb, y, out, k.manhattan_rows, |_, _, v| v),
                    Some(MetricKind::Cosine) => {
                        let nx: Vec<F> = xb
                            .rows()
                            .into_iter()
                            .map(|r| sq_norm(r.as_slice().unwrap()))
                            .collect();
                        fill_rows(xb, y, out, k.dot_rows, |i, j, dot| {
                            cosine_from_parts(dot, nx[i], ny[j])
                        })
                    }
                    _ => fill_pairs(xb, y, out, |a, b| metric.distance(a, b)),
                }
            }
        }
    }
}

/// The smallest (and with `want_second` the second smallest) of `(index, distance)` pairs in
/// increasing index order; ties go to the lower index.
fn pick<F: Scalar>(it: impl Iterator<Item = (usize, F)>, want_second: bool) -> NearestTwo<F> {
    if want_second {
        return two_smallest(it);
    }
    let mut first: Option<Nearest<F>> = None;
    for (index, distance) in it {
        if first.is_none_or(|b| distance < b.distance) {
            first = Some(Nearest { index, distance });
        }
    }
    NearestTwo {
        first: first.expect("k >= 1"),
        second: None,
    }
}

/// The two smallest values of `(index, distance)` pairs given in increasing index order; ties
/// go to the lower index.
fn two_smallest<F: Scalar>(mut it: impl Iterator<Item = (usize, F)>) -> NearestTwo<F> {
    let (index, distance) = it.next().expect("at least one centre");
    let mut first = Nearest { index, distance };
    let mut second: Option<Nearest<F>> = None;
    for (j, d) in it {
        if d < first.distance {
            second = Some(first);
            first = Nearest {
                index: j,
                distance: d,
            };
        } else if second.is_none_or(|s| d < s.distance) {
            second = Some(Nearest {
                index: j,
                distance: d,
            });
        }
    }
    NearestTwo { first, second }
}

fn geo_points<F: Scalar>(x: ArrayView2<F>) -> Vec<GeoPoint> {
    x.rows()
        .into_iter()
        .map(|r| GeoPoint::new(r[0].to_f64_exact(), r[1].to_f64_exact()))
        .collect()
}

/// Rows scaled to unit length (zero rows kept), and which rows are zero.
fn unit_rows<F: Scalar>(x: ArrayView2<F>) -> (Array2<F>, Vec<bool>) {
    let mut xn = x.to_owned();
    let mut zero = Vec::with_capacity(x.nrows());
    for mut row in xn.rows_mut() {
        let r = row.as_slice_mut().expect("standard layout");
        let norm = sq_norm(r).sqrt();
        zero.push(norm == F::zero());
        if norm > F::zero() {
            r.iter_mut().for_each(|v| *v /= norm);
        }
    }
    (xn, zero)
}

fn sq_norm<F: Scalar>(a: &[F]) -> F {
    F::dot(a, a)
}

/// The pair-by-pair loop for any metric, tiled over `y` for cache reuse.
fn fill_pairs<F: Scalar>(
    xb: ArrayView2<F>,
    y: ArrayView2<F>,
    mut out: ArrayViewMut2<F>,
    dist: impl Fn(&[F], &[F]) -> F,
) {
    for t in (0..y.nrows()).step_by(Y_TILE) {
        let end = (t + Y_TILE).min(y.nrows());
        for i in 0..xb.nrows() {
            let a = xb.row(i);
            let a = a.as_slice().unwrap();
            for j in t..end {
                out[[i, j]] = dist(a, y.row(j).as_slice().unwrap());
            }
        }
    }
}

/// The SIMD loop: one row kernel call per (row of `xb`, tile of `y`), then `finish(i, j, raw)`.
fn fill_rows<F: Scalar>(
    xb: ArrayView2<F>,
    y: ArrayView2<F>,
    mut out: ArrayViewMut2<F>,
    rows_kernel: fn(&[F], &[F], &mut [F]),
    finish: impl Fn(usize, usize, F) -> F,
) {
    for t in (0..y.nrows()).step_by(Y_TILE) {
        let end = (t + Y_TILE).min(y.nrows());
        let tile = y.slice(s![t..end, ..]);
        let tile = tile.as_slice().expect("standard layout");
        for i in 0..xb.nrows() {
            let a = xb.row(i);
            let mut o = out.slice_mut(s![i, t..end]);
            let o = o.as_slice_mut().expect("contiguous output row");
            rows_kernel(a.as_slice().unwrap(), tile, o);
            for (j, v) in o.iter_mut().enumerate() {
                *v = finish(i, t + j, *v);
            }
        }
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn pairwise<F: Scalar, M: Metric>(
        &self,
        x: ArrayView2<F>,
        y: ArrayView2<F>,
        metric: &M,
        out: ArrayViewMut2<F>,
    ) -> Result<()> {
        check_pairwise_shapes(&x, &y, metric, Some(out.dim()))?;
        let (x, y) = (standard_layout(x), standard_layout(y));
        let plan = self.plan(y.view(), metric.kind(), false);
        let rb = if matches!(plan, Plan::Gemm { .. }) {
            GEMM_BLOCK
        } else {
            ROW_BLOCK
        };
        fill_c_order(out, |mut out| {
            out.axis_chunks_iter_mut(Axis(0), rb)
                .into_par_iter()
                .enumerate()
                .for_each(|(b, chunk)| {
                    let start = b * rb;
                    let xb = x.slice(s![start..start + chunk.nrows(), ..]);
                    self.block(&plan, metric, false, xb, y.view(), chunk);
                });
            Ok(())
        })
    }

    fn nearest<F: Scalar, M: Metric>(
        &self,
        x: ArrayView2<F>,
        centres: ArrayView2<F>,
        metric: &M,
    ) -> Result<Vec<Nearest<F>>> {
        let mut out = Vec::new();
        self.assign(x, centres, metric, false, &mut out)?;
        Ok(out)
    }

    fn nearest_fold<F, T, I, G>(
        &self,
        x: ArrayView2<F>,
        centres: ArrayView2<F>,
        distances: Distances,
        chunk: usize,
        init: I,
        fold: G,
    ) -> Result<Vec<T>>
    where
        F: Scalar,
        T: Send,
        I: Fn() -> T + Sync,
        G: Fn(&mut T, usize, ArrayView2<F>, &[Nearest<F>]) + Sync,
    {
        let metric = MetricKind::SqEuclidean;
        if !self.fused(Some(metric)) {
            // (all assignments first, then the folds)
            let near = self.nearest(x, centres, &metric)?;
            return Ok(super::fold_chunks(x, &near, chunk, init, fold));
        }
        check_centres(&x, &centres, &metric)?;
        let (x, c) = (standard_layout(x), standard_layout(centres));
        let prepared = Centres::new(c.view(), F::simd_table().isa).with_distances(distances);
        let sub = super::nearest::ROWS;
        Ok(x.axis_chunks_iter(Axis(0), chunk.max(1))
            .into_par_iter()
            .enumerate()
            .map(|(ci, rows)| {
                let mut acc = init();
                let mut near = vec![Nearest::empty(); sub];
                let mut scratch = Scratch::default();
                for (b, xb) in rows.axis_chunks_iter(Axis(0), sub).enumerate() {
                    let near = &mut near[..xb.nrows()];
                    nearest_seq(xb, &prepared, false, near, false, &mut scratch);
                    fold(&mut acc, ci * chunk + b * sub, xb, near);
                }
                acc
            })
            .collect())
    }

    fn nearest_two<F: Scalar, M: Metric>(
        &self,
        x: ArrayView2<F>,
        centres: ArrayView2<F>,
        metric: &M,
    ) -> Result<Vec<NearestTwo<F>>> {
        let mut out = Vec::new();
        self.assign(x, centres, metric, true, &mut out)?;
        Ok(out)
    }
}

/// The shapes of a nearest-centre request agree, and there is a centre to assign to.
fn check_centres<F: Scalar, M: Metric>(x: &ArrayView2<F>, centres: &ArrayView2<F>, metric: &M) -> Result<()> {
    check_pairwise_shapes(x, centres, metric, None)?;
    if centres.nrows() == 0 {
        return Err(crate::error::Error::EmptyInput {
            what: "no centres to assign to".into(),
        });
    }
    Ok(())
}

impl CpuBackend {
    /// Whether the fused nearest-centre kernel serves `kind`: (squared) Euclidean in GEMM form.
    fn fused(&self, kind: Option<MetricKind>) -> bool {
        self.gemm && matches!(kind, Some(MetricKind::Euclidean | MetricKind::SqEuclidean))
    }

    /// The nearest (and, with `want_second`, second-nearest) centre of each row of `x`, into
    /// `out` (resized to one per row; its allocation is reused).
    fn assign<F: Scalar, M: Metric, S: Slot<F> + Clone>(
        &self,
        x: ArrayView2<F>,
        centres: ArrayView2<F>,
        metric: &M,
        want_second: bool,
        out: &mut Vec<S>,
    ) -> Result<()> {
        check_centres(&x, &centres, metric)?;
        let (x, c) = (standard_layout(x), standard_layout(centres));
        let kind = metric.kind();
        out.clear();
        out.resize_with(x.nrows(), S::empty);
        let root = kind == Some(MetricKind::Euclidean);
        if self.fused(kind) {
            // The fused GEMM kernel, exact by refinement (see `nearest`).
            let prepared = Centres::new(c.view(), F::simd_table().isa);
            nearest_into(x.view(), &prepared, want_second, out, root);
            return Ok(());
        }
        let plan = self.plan(c.view(), kind, true);
        let k = c.nrows();
        x.axis_chunks_iter(Axis(0), ROW_BLOCK)
            .into_par_iter()
            .zip(out.par_chunks_mut(ROW_BLOCK))
            .for_each(|(xb, out)| {
                let mut buf = Array2::<F>::zeros((xb.nrows(), k));
                self.block(&plan, metric, true, xb, c.view(), buf.view_mut());
                for (row, o) in buf.rows().into_iter().zip(out) {
                    let mut best = pick(row.iter().copied().enumerate(), want_second);
                    if root {
                        best.sqrt_distances();
                    }
                    o.set(best);
                }
            });
        Ok(())
    }
}
