//! The CPU backend: rayon over fixed-size row blocks (so results do not depend on the thread
//! count), SIMD inner loops from [`super::simd`], and the GEMM form of squared Euclidean
//! distances, ‖x‖² + ‖y‖² − 2x·y, computed on data centred by the mean of `y` (distances are
//! translation invariant, and centring shrinks the norms that cancel), clamped at 0, with an
//! exact recomputation of the pairs where cancellation could cost accuracy.

use super::{check_pairwise_shapes, fill_c_order, Backend, Nearest, NearestTwo};
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
                let k = F::kernels();
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
        Ok(self
            .assign(x, centres, metric, false)?
            .into_iter()
            .map(|n| n.first)
            .collect())
    }

    fn nearest_two<F: Scalar, M: Metric>(
        &self,
        x: ArrayView2<F>,
        centres: ArrayView2<F>,
        metric: &M,
    ) -> Result<Vec<NearestTwo<F>>> {
        self.assign(x, centres, metric, true)
    }
}

impl CpuBackend {
    /// The nearest (and, with `want_second`, second-nearest) centre of each row of `x`.
    fn assign<F: Scalar, M: Metric>(
        &self,
        x: ArrayView2<F>,
        centres: ArrayView2<F>,
        metric: &M,
        want_second: bool,
    ) -> Result<Vec<NearestTwo<F>>> {
        check_pairwise_shapes(&x, &centres, metric, None)?;
        if centres.nrows() == 0 {
            return Err(crate::Error::EmptyInput {
                what: "no centres to assign to".into(),
            });
        }
        let (x, c) = (standard_layout(x), standard_layout(centres));
        let plan = self.plan(c.view(), metric.kind(), true);
        let root = metric.kind() == Some(MetricKind::Euclidean);
        let k = c.nrows();
        let eps = F::epsilon();
        // On the GEMM path, candidates within the form's error bound of the second-smallest
        // value are recomputed exactly, so the winners and their ties are those of exact
        // distances (lowest index first), as on the direct path.
        let refine = match &plan {
            Plan::Gemm { ny, mu, .. } => Some((ny.iter().fold(F::zero(), |m, &v| m.max(v)), mu.as_slice())),
            Plan::CosineGemm { .. } | Plan::Haversine { .. } | Plan::Pairs { .. } => None,
        };
        let d = c.ncols();
        let c_slice = c.as_slice().expect("standard layout");
        let blocks: Vec<Vec<NearestTwo<F>>> = x
            .axis_chunks_iter(Axis(0), GEMM_BLOCK)
            .into_par_iter()
            .map_init(
                // Per-thread buffers, reused across blocks.
                || (Array2::<F>::zeros((GEMM_BLOCK, k)), Vec::<F>::new()),
                |(full, xc), xb| {
                    let mut buf = full.slice_mut(s![..xb.nrows(), ..]);
                    match &plan {
                        // Only the ranking matters before the exact refinement: ‖y‖² − 2x·y, the
                        // squared distance less the row's constant ‖x‖², without clamping.
                        Plan::Gemm { yc, ny, mu, .. } => {
                            let src = xb.to_slice().expect("standard layout");
                            xc.resize(src.len(), F::zero());
                            for (dst, row) in xc.chunks_exact_mut(d).zip(src.chunks_exact(d)) {
                                for ((o, &v), &m) in dst.iter_mut().zip(row).zip(mu) {
                                    *o = v - m;
                                }
                            }
                            let xcv =
                                ArrayView2::from_shape((xb.nrows(), d), &xc[..src.len()]).expect("shape");
                            gemm_abt(xcv, yc.view(), buf.view_mut(), F::from_f64_lossy(-2.0));
                            for row in buf.as_slice_mut().expect("contiguous rows").chunks_exact_mut(k) {
                                row.iter_mut().zip(ny).for_each(|(v, &n)| *v += n);
                            }
                        }
                        _ => self.block(&plan, metric, true, xb, c.view(), buf.view_mut()),
                    }
                    let mut cands: Vec<(usize, F)> = Vec::new();
                    buf.rows()
                        .into_iter()
                        .zip(xb.rows())
                        .map(|(row, point)| {
                            let row = row.to_slice().expect("standard layout");
                            let approx = pick(row.iter().copied().enumerate(), want_second);
                            let mut best = match refine {
                                None => approx,
                                Some((ny_max, mu)) => {
                                    let p = point.to_slice().expect("standard layout");
                                    let nx = p
                                        .iter()
                                        .zip(mu)
                                        .fold(F::zero(), |s, (&v, &m)| s + (v - m) * (v - m));
                                    let bound =
                                        F::from_usize(2 * (p.len() + 4)).unwrap() * eps * (nx + ny_max);
                                    let limit = approx.second.unwrap_or(approx.first).distance + bound;
                                    cands.clear();
                                    for (j, &v) in row.iter().enumerate() {
                                        if v <= limit {
                                            cands.push((j, F::sqeuclidean(p, &c_slice[j * d..(j + 1) * d])));
                                        }
                                    }
                                    if cands.is_empty() {
                                        // (only where the form overflowed: no value passed a
                                        // non-finite limit; the callers refuse such data)
                                        approx
                                    } else {
                                        pick(cands.iter().copied(), want_second)
                                    }
                                }
                            };
                            if root {
                                best.first.distance = best.first.distance.sqrt();
                                if let Some(s) = best.second.as_mut() {
                                    s.distance = s.distance.sqrt();
                                }
                            }
                            best
                        })
                        .collect()
                },
            )
            .collect();
        Ok(blocks.into_iter().flatten().collect())
    }
}
