//! The nearest-centre kernel: for every point, its nearest (and second-nearest) centre under
//! squared Euclidean distance — the step k-means (Lloyd, Hamerly's start), mini-batch k-means,
//! CLARA's assignment, predict and the seeding share.
//!
//! **Form.** Points and centres are centred on the centres' mean μ; the score of centre j is
//! `‖c̃ⱼ‖² − 2 x̃·c̃ⱼ`, the squared distance less the point's own ‖x̃‖², computed by a GEMM
//! whose epilogue keeps, per point and per SIMD lane, the smallest and second-smallest score
//! with the smallest's centre. No n × k matrix is written: the dot products live in registers
//! (a 6-row × 4-vector register tile, as a GEMM micro-kernel) and the per-lane minima in a
//! small buffer per point.
//!
//! **Exact.** The GEMM form's scores err by at most β = (d + 2)·u·(‖x̃‖² + 2‖c̃‖²) (u the
//! unit round-off of the element type), so every centre whose exact distance could be the
//! smallest (or second smallest) scores within `bound` = 2(d + 4)·ε·(‖x̃‖² + max‖c̃‖²) ≥ 2β
//! of the smallest (second-smallest) score. Those candidates — usually one or two — are
//! recomputed directly as Σ(x − c)² on the original values, and the winners taken with ties to
//! the lowest index: the labels and distances of a direct computation, whatever the path. A
//! lane whose second-smallest score is itself within the window may hide a third candidate;
//! then that point is computed directly against every centre (rare: two near-equal centres in
//! the same lane). A caller that only reports the distances (Lloyd's iterations) may ask for
//! [`Distances::Approximate`]: the labels are the same, and a single candidate's distance is
//! its score plus ‖x̃‖² (within the bound) instead of a recomputation.
//!
//! **Low dimensions, few centres.** Where a GEMM tile would be mostly blocking and padding,
//! distances are computed directly, with the same result (argmin of the kernel's Σ(x − c)²,
//! ties to the lowest index): at d ≤ 2, eight points side by side against the centres held
//! column by column, summed as the kernels do (at most two non-zero terms, so every
//! summation order rounds alike); at d ≤ 8 with k·d ≤ 128 the same lanes, their sums refined
//! like the GEMM form's scores (the nearest's distance recomputed by the SIMD kernel, every
//! centre on a near-tie); above that with k ≤ 8, each point against all centres by the SIMD
//! kernel. (Measured crossovers, one thread, n = 10,000 to 100,000.)
//!
//! **In the element type.** float32 data run in float32 end to end (centring, norms, GEMM,
//! refinement); float64 in float64.
//!
//! **Blocking.** Rows of points in blocks of [`ROWS`] (one parallel task each; the result does
//! not depend on the thread count: the final choice is exact), centres in panels of one tile
//! width (d × 64 floats, in L1 while the block's rows stream past); when there are fewer row
//! blocks than threads, the centres are split into groups scanned in parallel and the lane
//! minima merged in group order. The instruction set is the backend's ([`crate::scalar::simd::Isa`]):
//! AVX-512 (16 f32 / 8 f64 lanes), AVX2 + FMA (8 / 4), or portable code; the GEMM kernel is
//! written for each, and the lanes path and the per-row finish are the same code compiled for
//! each (no contraction into FMA, so the sums round alike). Each thread's block buffers are
//! reused from block to block.

use super::{Distances, NearestTwo};
pub(crate) use crate::backend::Nearest;
use crate::scalar::simd::Isa;
use crate::scalar::Scalar;
use ndarray::{ArrayView2, Axis};
use rayon::prelude::*;

/// Rows of points per task.
pub(crate) const ROWS: usize = 192;

/// The register tile of an instruction set: `W` lanes per vector, `NV` vectors of centres per
/// panel and `MR` rows of points per micro-step.
#[derive(Clone, Copy, Debug)]
struct Tile {
    w: usize,
    nv: usize,
    mr: usize,
}

impl Tile {
    /// The tile of `isa` for `k` centres: as many vectors per panel as the registers take,
    /// fewer when k is small (a panel of padding centres is wasted work).
    fn of<F: Scalar>(isa: Isa, k: usize) -> Tile {
        let wide = F::DTYPE == "float32";
        let (w, nv_max, mr) = match isa {
            Isa::Avx512 => (if wide { 16 } else { 8 }, 4, 6),
            Isa::Avx2Fma => (if wide { 8 } else { 4 }, 3, 4),
            Isa::Portable => (8, 2, 4),
        };
        let nv = match k.div_ceil(w) {
            0 | 1 => 1,
            2 => 2,
            _ => nv_max,
        }
        .min(nv_max);
        Tile { w, nv, mr }
    }
    fn panel(self) -> usize {
        self.w * self.nv
    }
}

/// The centres prepared once per request: centred, packed in panels (for panel p, d rows of
/// `panel` values, centre p·panel + q in column q; padding centres have zero coordinates and
/// an infinite norm, so they never win), their squared norms, and the originals.
pub(crate) struct Centres<'a, F> {
    original: ArrayView2<'a, F>,
    mu: Vec<F>,
    packed: Vec<F>,
    norms: Vec<F>,
    norm_max: F,
    /// 2(d + 4)·ε, with a margin for its own rounding: times ‖x̃‖² + max‖c̃‖², the window of
    /// the scores' error (see the module comment).
    bound_scale: F,
    tile: Tile,
    isa: Isa,
    /// At d ≤ [`DIRECT_D`]: the centres' coordinates column by column (d × k), for the direct
    /// computation.
    columns: Option<Vec<F>>,
    /// Above [`DIRECT_D`] with at most [`DIRECT_K`] centres: every distance computed by the
    /// SIMD table's kernel (the refinement's own), a GEMM tile being mostly padding.
    rows: bool,
    /// Whether the nearest's distance is recomputed exactly (the labels are exact either way).
    distances: Distances,
    /// The lanes' refinement window (see [`Centres::refine`]), as a factor and a term:
    /// (1 + γ)/(1 − γ) and d times the smallest normal.
    lanes_window: (F, F),
}

/// The most centres computed directly above [`DIRECT_D`] (measured: below the GEMM form's
/// time at k = 8 for d = 8 to 128, above it from k = 16 or 32).
const DIRECT_K: usize = 8;

/// The largest d computed directly rather than by the GEMM form.
pub(crate) const DIRECT_D: usize = 2;

/// Points side by side in the direct computation.
const LANES: usize = 8;

/// Up to this d (with at most [`LANES_KD`] coordinates of centres) the distances are summed in lanes of points
/// and the nearest refined by the kernel (see [`Centres::refine`]).
const LANES_D: usize = 8;

/// The most coordinates of all centres (k·d) summed in lanes above [`DIRECT_D`] (beyond, the
/// GEMM form is faster: measured at d = 4 and 8, k = 8 to 64).
const LANES_KD: usize = 128;

/// What [`nearest_lanes`] finds for each of [`LANES`] points: the smallest sum, its centre
/// (the lowest index on ties) and the second-smallest sum.
struct Lanes<F> {
    /// (as floats, exact below 2²⁴ centres as the GEMM form's lane indices; blends of one
    /// width with the sums)
    index: [F; LANES],
    best: [F; LANES],
    second: [F; LANES],
}

/// The nearest of the centres (`columns`, d × k) to each of [`LANES`] points (`points`,
/// row-major, `D` coordinates each): Σ(x − c)² summed coordinate by coordinate (the
/// arithmetic of [`direct_distance`] at D ≤ 2, where it is exact).
#[inline(always)]
fn nearest_lanes<F: Scalar, const D: usize>(points: &[F], columns: &[F]) -> Lanes<F> {
    let k = columns.len() / D;
    let mut p = [[F::zero(); LANES]; D];
    for (l, point) in points.chunks_exact(D).enumerate() {
        for c in 0..D {
            p[c][l] = point[c];
        }
    }
    let mut best = [F::infinity(); LANES];
    let mut second = [F::infinity(); LANES];
    let mut index = [F::zero(); LANES];
    for j in 0..k {
        let jf = F::from_f64_lossy(j as f64);
        let mut v = [F::zero(); LANES];
        for (c, pc) in p.iter().enumerate() {
            let centre = columns[c * k + j];
            for l in 0..LANES {
                let e = pc[l] - centre;
                v[l] = if c == 0 { e * e } else { v[l] + e * e };
            }
        }
        for l in 0..LANES {
            let better = v[l] < best[l];
            // (a select, not `min`: its NaN rule keeps it from vectorising)
            second[l] = if better {
                best[l]
            } else if v[l] < second[l] {
                v[l]
            } else {
                second[l]
            };
            best[l] = if better { v[l] } else { best[l] };
            index[l] = if better { jf } else { index[l] };
        }
    }
    Lanes { index, best, second }
}

/// The lanes path's loop (see [`Centres::lanes_all`]): [`nearest_lanes`] for each group of
/// [`LANES`] points, exact at `D` ≤ [`DIRECT_D`], refined above; returns the points done.
#[inline(always)]
fn lanes_loop<F: Scalar, S: Slot<F>, const D: usize>(
    centres: &Centres<F>,
    x: &[F],
    columns: &[F],
    out: &mut [S],
    root: bool,
) -> usize {
    let mut done = 0;
    for (points, out) in x.chunks_exact(D * LANES).zip(out.chunks_exact_mut(LANES)) {
        let lanes = nearest_lanes::<F, D>(points, columns);
        for (l, (point, o)) in points.chunks_exact(D).zip(out.iter_mut()).enumerate() {
            let mut best = if D <= DIRECT_D {
                // (exact: the kernels' own value)
                NearestTwo {
                    first: Nearest {
                        index: lanes.index[l].to_f64_exact() as usize,
                        distance: lanes.best[l],
                    },
                    second: None,
                }
            } else {
                centres.refine(point, &lanes, l)
            };
            if root {
                best.sqrt_distances();
            }
            o.set(best);
        }
        done += LANES;
    }
    done
}

/// [`lanes_loop`] compiled for AVX-512 (no contraction into FMA: the sums round as before).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn lanes_avx512<F: Scalar, S: Slot<F>, const D: usize>(
    centres: &Centres<F>,
    x: &[F],
    columns: &[F],
    out: &mut [S],
    root: bool,
) -> usize {
    lanes_loop::<F, S, D>(centres, x, columns, out, root)
}

/// [`lanes_loop`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn lanes_avx2<F: Scalar, S: Slot<F>, const D: usize>(
    centres: &Centres<F>,
    x: &[F],
    columns: &[F],
    out: &mut [S],
    root: bool,
) -> usize {
    lanes_loop::<F, S, D>(centres, x, columns, out, root)
}

impl<'a, F: Scalar> Centres<'a, F> {
    /// Prepares `centres` (k × d, standard layout) for the kernels of `isa`.
    pub(crate) fn new(centres: ArrayView2<'a, F>, isa: Isa) -> Self {
        let (k, d) = centres.dim();
        let tile = Tile::of::<F>(isa, k);
        let p = tile.panel();
        let mu: Vec<F> = centres
            .axis_iter(Axis(1))
            .map(|c| F::from_f64_lossy(c.iter().map(|v| v.to_f64_exact()).sum::<f64>() / k.max(1) as f64))
            .collect();
        let panels = k.div_ceil(p);
        let mut packed = vec![F::zero(); panels * p * d];
        let mut norms = vec![F::infinity(); panels * p];
        let mut centred = vec![F::zero(); d];
        let mut norm_max = F::zero();
        for (j, c) in centres.rows().into_iter().enumerate() {
            for ((o, &v), &m) in centred.iter_mut().zip(c.iter()).zip(&mu) {
                *o = v - m;
            }
            let norm = F::dot(&centred, &centred);
            norms[j] = norm;
            norm_max = norm_max.max(norm);
            let (panel, q) = (j / p, j % p);
            for (t, &v) in centred.iter().enumerate() {
                packed[(panel * d + t) * p + q] = v;
            }
        }
        let lanes = d <= DIRECT_D || (d <= LANES_D && k * d <= LANES_KD);
        let columns = lanes.then(|| centres.t().iter().copied().collect());
        let rows = !lanes && k <= DIRECT_K;
        Centres {
            original: centres,
            mu,
            packed,
            norms,
            norm_max,
            bound_scale: F::from_f64_lossy(2.0 * (d + 4) as f64 * F::epsilon().to_f64_exact() * (1.0 + 1e-3)),
            tile,
            isa,
            columns,
            rows,
            distances: Distances::Exact,
            lanes_window: {
                let d = F::from_f64_lossy(d as f64);
                let gamma = (d + F::from_f64_lossy(2.0)) * F::epsilon() * F::from_f64_lossy(1.01);
                (
                    (F::one() + gamma) / (F::one() - gamma),
                    d * F::min_positive_value(),
                )
            },
        }
    }

    /// These centres searched with distances `distances`.
    pub(crate) fn with_distances(mut self, distances: Distances) -> Self {
        self.distances = distances;
        self
    }

    /// The nearest (and second-nearest) centres of the rows of `x`, computed directly (see
    /// the module's Low dimensions); false (nothing done) above [`DIRECT_D`].
    fn direct<S: Slot<F>>(&self, x: ArrayView2<F>, want_second: bool, out: &mut [S], root: bool) -> bool {
        if !self.rows && self.columns.is_none() {
            return false;
        }
        let d = self.d();
        let x = x.as_slice().expect("standard layout");
        let done = match (want_second, &self.columns) {
            (false, Some(columns)) => self.lanes_all(x, columns, out, root),
            _ => 0,
        };
        // The rows left over; every row at k ≤ DIRECT_K or when the second nearest is wanted.
        let mut dist = Vec::new();
        for (point, o) in x[done * d..].chunks_exact(d.max(1)).zip(out[done..].iter_mut()) {
            let mut best = self.every_centre(point, want_second, &mut dist);
            if root {
                best.sqrt_distances();
            }
            o.set(best);
        }
        true
    }

    /// The lanes path over the whole groups of [`LANES`] points of `x`, compiled for the
    /// instruction set (the sums, comparisons and blends vectorise across the points); returns
    /// the points done.
    fn lanes_all<S: Slot<F>>(&self, x: &[F], columns: &[F], out: &mut [S], root: bool) -> usize {
        macro_rules! by_d {
            ($f:ident) => {
                match self.d() {
                    1 => $f::<F, S, 1>(self, x, columns, out, root),
                    2 => $f::<F, S, 2>(self, x, columns, out, root),
                    3 => $f::<F, S, 3>(self, x, columns, out, root),
                    4 => $f::<F, S, 4>(self, x, columns, out, root),
                    5 => $f::<F, S, 5>(self, x, columns, out, root),
                    6 => $f::<F, S, 6>(self, x, columns, out, root),
                    7 => $f::<F, S, 7>(self, x, columns, out, root),
                    _ => $f::<F, S, 8>(self, x, columns, out, root),
                }
            };
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `self.isa` is an instruction set the machine has (`Isa::detect`).
        unsafe {
            match self.isa {
                Isa::Avx512 => return by_d!(lanes_avx512),
                Isa::Avx2Fma => return by_d!(lanes_avx2),
                Isa::Portable => {}
            }
        }
        by_d!(lanes_loop)
    }

    /// Lane `l`'s nearest centre, exact: the lanes' sums (in their own order) err by at most
    /// γ = (d + 2)·u relative, plus d times the smallest normal where squares underflow; when
    /// the second-smallest sum is beyond the window that leaves, the smallest's centre is the
    /// nearest and only its distance is recomputed by the kernel; otherwise every centre is
    /// (near-ties: rare).
    #[inline(always)]
    fn refine(&self, point: &[F], lanes: &Lanes<F>, l: usize) -> NearestTwo<F> {
        let (ratio, floor) = self.lanes_window;
        let window = lanes.best[l] * ratio + floor;
        if lanes.second[l] > window {
            let index = lanes.index[l].to_f64_exact() as usize;
            let distance = match self.distances {
                Distances::Exact => F::sqeuclidean(point, self.row(index)),
                Distances::Approximate => lanes.best[l],
            };
            return NearestTwo {
                first: Nearest { index, distance },
                second: None,
            };
        }
        self.every_centre(point, false, &mut Vec::new())
    }

    /// `point`'s nearest (and second-nearest) centre from its distance to every centre by the
    /// SIMD kernel, one call for all (`dist`: scratch, reused by the caller).
    fn every_centre(&self, point: &[F], want_second: bool, dist: &mut Vec<F>) -> NearestTwo<F> {
        dist.resize(self.k(), F::zero());
        let centres = self.original.as_slice().expect("standard layout");
        (F::simd_table().sqeuclidean_rows)(point, centres, dist);
        let mut pick = Pick::new(want_second);
        for (j, &v) in dist.iter().enumerate() {
            pick.offer(j, v);
        }
        pick.result()
    }

    fn k(&self) -> usize {
        self.original.nrows()
    }

    fn d(&self) -> usize {
        self.original.ncols()
    }

    fn panels(&self) -> usize {
        self.norms.len() / self.tile.panel()
    }

    /// Centre j's original coordinates.
    fn row(&self, j: usize) -> &[F] {
        let d = self.d();
        &self.original.as_slice().expect("standard layout")[j * d..(j + 1) * d]
    }
}

/// Per point, per lane: the smallest score, the second smallest, and the smallest's centre
/// (as a float, exact below 2²⁴ centres).
struct Track<F> {
    /// Rows × 3·W: best, second, index.
    lanes: Vec<F>,
    w: usize,
}

impl<F: Scalar> Track<F> {
    /// No candidate yet for `rows` rows, in `lanes`' storage.
    fn new(mut lanes: Vec<F>, rows: usize, w: usize) -> Self {
        lanes.clear();
        lanes.resize(rows * 3 * w, F::infinity());
        for r in 0..rows {
            lanes[r * 3 * w + 2 * w..(r + 1) * 3 * w].fill(F::zero());
        }
        Track { lanes, w }
    }

    fn row(&self, r: usize) -> (&[F], &[F], &[F]) {
        let s = &self.lanes[r * 3 * self.w..(r + 1) * 3 * self.w];
        let (best, rest) = s.split_at(self.w);
        let (second, index) = rest.split_at(self.w);
        (best, second, index)
    }

    /// Merges the minima of `other`, which scanned later centres (ties keep this one's).
    fn merge(&mut self, other: &Track<F>) {
        let w = self.w;
        for (a, b) in self
            .lanes
            .chunks_exact_mut(3 * w)
            .zip(other.lanes.chunks_exact(3 * w))
        {
            for l in 0..w {
                let (best, second, idx) = (a[l], a[w + l], a[2 * w + l]);
                let (ob, os, oi) = (b[l], b[w + l], b[2 * w + l]);
                a[w + l] = second.min(os).min(best.max(ob));
                if ob < best {
                    a[l] = ob;
                    a[2 * w + l] = oi;
                } else {
                    a[2 * w + l] = idx;
                }
            }
        }
    }
}

/// Where a result goes: a [`Nearest`] keeps the nearest centre, a [`NearestTwo`] both.
pub(crate) trait Slot<F>: Send {
    /// A value to be overwritten.
    fn empty() -> Self;
    /// Stores the result.
    fn set(&mut self, v: NearestTwo<F>);
}

impl<F: Scalar> Slot<F> for Nearest<F> {
    fn empty() -> Self {
        Nearest {
            index: 0,
            distance: F::zero(),
        }
    }
    fn set(&mut self, v: NearestTwo<F>) {
        *self = v.first;
    }
}

impl<F: Scalar> Slot<F> for NearestTwo<F> {
    fn empty() -> Self {
        NearestTwo {
            first: Nearest::empty(),
            second: None,
        }
    }
    fn set(&mut self, v: NearestTwo<F>) {
        *self = v;
    }
}

impl<F: Scalar> NearestTwo<F> {
    /// Euclidean distances from squared ones.
    pub(crate) fn sqrt_distances(&mut self) {
        self.first.distance = self.first.distance.sqrt();
        if let Some(s) = self.second.as_mut() {
            s.distance = s.distance.sqrt();
        }
    }
}

/// The nearest (and, with `want_second`, second-nearest) centre of every row of `x`
/// (standard layout), with squared Euclidean distances (their roots with `root`), written to
/// `out` (one per row).
pub(crate) fn nearest_into<F: Scalar, S: Slot<F>>(
    x: ArrayView2<F>,
    centres: &Centres<F>,
    want_second: bool,
    out: &mut [S],
    root: bool,
) {
    debug_assert_eq!(out.len(), x.nrows());
    if centres.columns.is_some() || centres.rows {
        x.axis_chunks_iter(Axis(0), ROWS)
            .into_par_iter()
            .zip(out.par_chunks_mut(ROWS))
            .for_each(|(xb, out)| {
                centres.direct(xb, want_second, out, root);
            });
        return;
    }
    let blocks = x.nrows().div_ceil(ROWS);
    let threads = rayon::current_num_threads();
    let panels = centres.panels();
    // Few row blocks, many centres: split the centres too, so every thread has work.
    let groups = if blocks >= threads || panels < 8 {
        1
    } else {
        (threads / blocks.max(1)).clamp(1, panels / 4)
    };
    x.axis_chunks_iter(Axis(0), ROWS)
        .into_par_iter()
        .zip(out.par_chunks_mut(ROWS))
        .for_each_init(Scratch::default, |scratch, (xb, out)| {
            if groups == 1 {
                return nearest_block(xb, centres, want_second, out, root, scratch);
            }
            let block = Block::new(xb, centres, scratch);
            let track = (0..groups)
                .into_par_iter()
                .map(|g| block.scan(panels * g / groups..panels * (g + 1) / groups, Vec::new()))
                .reduce_with(|mut a, b| {
                    a.merge(&b);
                    a
                })
                .expect("at least one group");
            block.finish_all(&track, want_second, out, root);
            block.into_buffers(scratch, track);
        });
}

/// One thread's buffers for its blocks (centred points, norms, lane minima), reused from
/// block to block.
pub(crate) struct Scratch<F> {
    centred: Vec<F>,
    norms: Vec<F>,
    lanes: Vec<F>,
}

impl<F> Default for Scratch<F> {
    fn default() -> Self {
        Scratch {
            centred: Vec::new(),
            norms: Vec::new(),
            lanes: Vec::new(),
        }
    }
}

/// One block of at most [`ROWS`] rows through the GEMM form.
fn nearest_block<F: Scalar, S: Slot<F>>(
    x: ArrayView2<F>,
    centres: &Centres<F>,
    want_second: bool,
    out: &mut [S],
    root: bool,
    scratch: &mut Scratch<F>,
) {
    let block = Block::new(x, centres, scratch);
    let track = block.scan(0..centres.panels(), std::mem::take(&mut scratch.lanes));
    block.finish_all(&track, want_second, out, root);
    block.into_buffers(scratch, track);
}

/// [`nearest_into`] for rows `x` on this thread alone (blocks of [`ROWS`] in order): for a
/// caller that works through its own chunks in parallel.
pub(crate) fn nearest_seq<F: Scalar, S: Slot<F>>(
    x: ArrayView2<F>,
    centres: &Centres<F>,
    want_second: bool,
    out: &mut [S],
    root: bool,
    scratch: &mut Scratch<F>,
) {
    if centres.direct(x, want_second, out, root) {
        return;
    }
    for (xb, out) in x.axis_chunks_iter(Axis(0), ROWS).zip(out.chunks_mut(ROWS)) {
        nearest_block(xb, centres, want_second, out, root, scratch);
    }
}

/// One block of points, centred, padded to whole micro-steps, with their squared norms.
struct Block<'a, 'c, 'o, F> {
    x: ArrayView2<'a, F>,
    centred: Vec<F>,
    norms: Vec<F>,
    centres: &'c Centres<'o, F>,
}

impl<'a, 'c, 'o, F: Scalar> Block<'a, 'c, 'o, F> {
    /// The block of rows `x`, in the buffers of `scratch` (taken until
    /// [`Block::into_buffers`]).
    fn new(x: ArrayView2<'a, F>, centres: &'c Centres<'o, F>, scratch: &mut Scratch<F>) -> Self {
        let d = centres.d();
        let rows = x.nrows().next_multiple_of(centres.tile.mr);
        let mut centred = std::mem::take(&mut scratch.centred);
        centred.resize(rows * d, F::zero());
        // (the padding rows: zero, whatever an earlier block left)
        centred[x.nrows() * d..].fill(F::zero());
        let mut norms = std::mem::take(&mut scratch.norms);
        norms.resize(x.nrows(), F::zero());
        let xs = x.as_slice().expect("standard layout");
        (F::simd_table().centre_rows)(xs, &centres.mu, &mut centred, &mut norms);
        Block {
            x,
            centred,
            norms,
            centres,
        }
    }

    /// Returns the buffers (the block's and its lane minima's) to `scratch`.
    fn into_buffers(self, scratch: &mut Scratch<F>, track: Track<F>) {
        scratch.centred = self.centred;
        scratch.norms = self.norms;
        scratch.lanes = track.lanes;
    }

    /// Scans the centre panels `panels` for every row of the block (lane minima in `lanes`'
    /// storage).
    fn scan(&self, panels: std::ops::Range<usize>, lanes: Vec<F>) -> Track<F> {
        let c = self.centres;
        let (tile, d) = (c.tile, c.d());
        let p = tile.panel();
        let rows = self.centred.len() / d.max(1);
        let mut track = Track::new(lanes, rows, tile.w);
        for panel in panels {
            let packed = &c.packed[panel * d * p..(panel + 1) * d * p];
            let norms = &c.norms[panel * p..(panel + 1) * p];
            let first = (panel * p) as f64;
            for r in (0..rows).step_by(tile.mr) {
                let xc = &self.centred[r * d..(r + tile.mr) * d];
                let tr = &mut track.lanes[r * 3 * tile.w..(r + tile.mr) * 3 * tile.w];
                scan_panel(c.isa, tile, xc, packed, norms, F::from_f64_lossy(first), tr);
            }
        }
        track
    }

    /// Every row's result into `out`, compiled for the instruction set (the lanes' reductions
    /// vectorise).
    fn finish_all<S: Slot<F>>(&self, track: &Track<F>, want_second: bool, out: &mut [S], root: bool) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the instruction set is one the machine has (`Isa::detect`).
        unsafe {
            match self.centres.isa {
                Isa::Avx512 => return finish_avx512(self, track, want_second, out, root),
                Isa::Avx2Fma => return finish_avx2(self, track, want_second, out, root),
                Isa::Portable => {}
            }
        }
        self.finish_rows(track, want_second, out, root);
    }

    #[inline(always)]
    fn finish_rows<S: Slot<F>>(&self, track: &Track<F>, want_second: bool, out: &mut [S], root: bool) {
        for (r, o) in out.iter_mut().enumerate() {
            let mut best = self.finish(r, track, want_second);
            if root {
                best.sqrt_distances();
            }
            o.set(best);
        }
    }

    /// Row `r`'s nearest (and second-nearest) centre: the candidates within the error window
    /// recomputed directly, ties to the lowest index.
    #[inline(always)]
    fn finish(&self, r: usize, track: &Track<F>, want_second: bool) -> NearestTwo<F> {
        let c = self.centres;
        let (best, second, index) = track.row(r);
        let point = self.x.row(r);
        let point = point.as_slice().expect("standard layout");
        let bound = c.bound_scale * (self.norms[r] + c.norm_max);
        let [smallest, smallest_index, second_best, smallest_second] = lane_summary(best, second, index);
        // The smallest (or second-smallest) score over all lanes: the window's base.
        let base = if want_second {
            let (mut m1, mut m2) = (F::infinity(), F::infinity());
            for (&b, &s) in best.iter().zip(second) {
                m2 = m2.min(s).min(b.max(m1));
                m1 = m1.min(b);
            }
            m2
        } else {
            smallest
        };
        // (rounded up: a score is within it if ≤ base + bound in exact terms)
        let window = base + bound;
        let window = window + window.abs() * F::epsilon();
        if smallest_second <= window {
            // A lane may hide a third candidate: every centre, directly.
            return c.every_centre(point, want_second, &mut Vec::new());
        }
        if second_best > window && !want_second {
            // (the usual answer: one candidate)
            let index = smallest_index.to_f64_exact() as usize;
            let distance = match c.distances {
                Distances::Exact => F::sqeuclidean(point, c.row(index)),
                // (the score plus the point's norm: within the bound of the exact distance)
                Distances::Approximate => (self.norms[r] + base).max(F::zero()),
            };
            return NearestTwo {
                first: Nearest { index, distance },
                second: None,
            };
        }
        // The lanes' candidates, in increasing index (the pick keeps the first on ties).
        let mut cand = [usize::MAX; 64];
        let mut m = 0;
        for (&b, &j) in best.iter().zip(index) {
            if b <= window {
                cand[m] = j.to_f64_exact() as usize;
                m += 1;
            }
        }
        let cand = &mut cand[..m];
        cand.sort_unstable();
        let mut pick = Pick::new(want_second);
        for &j in cand.iter() {
            pick.offer(j, F::sqeuclidean(point, c.row(j)));
        }
        pick.result()
    }
}

/// [`Block::finish_all`] compiled for AVX-512.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn finish_avx512<F: Scalar, S: Slot<F>>(
    block: &Block<F>,
    track: &Track<F>,
    want_second: bool,
    out: &mut [S],
    root: bool,
) {
    block.finish_rows(track, want_second, out, root);
}

/// [`Block::finish_all`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn finish_avx2<F: Scalar, S: Slot<F>>(
    block: &Block<F>,
    track: &Track<F>,
    want_second: bool,
    out: &mut [S],
    root: bool,
) {
    block.finish_rows(track, want_second, out, root);
}

/// Over a row's lanes: the smallest best score, its centre, the second-smallest best score
/// and the smallest second score — in a tree of halvings without branches (a chain of `min`s
/// would wait on each, a search for the smallest's lane mispredict).
#[inline(always)]
fn lane_summary<F: Scalar>(best: &[F], second: &[F], index: &[F]) -> [F; 4] {
    match best.len() {
        4 => lane_tree::<F, 4>(best, second, index),
        8 => lane_tree::<F, 8>(best, second, index),
        _ => lane_tree::<F, 16>(best, second, index),
    }
}

/// [`lane_summary`] for `W` lanes (held in registers: W is known).
#[inline(always)]
fn lane_tree<F: Scalar, const W: usize>(best: &[F], second: &[F], index: &[F]) -> [F; 4] {
    let lanes = |v: &[F]| -> [F; W] { v.try_into().expect("W lanes") };
    let (mut m1, mut s, mut ix) = (lanes(best), lanes(second), lanes(index));
    let mut m2 = [F::infinity(); W];
    // (selects rather than `min`, whose NaN rule keeps it from vectorising)
    let lesser = |a: F, b: F| if b < a { b } else { a };
    let mut half = W / 2;
    while half > 0 {
        for i in 0..half {
            let (a, b) = (m1[i], m1[i + half]);
            let lower = b < a;
            m2[i] = lesser(lesser(m2[i], m2[i + half]), if lower { a } else { b });
            m1[i] = if lower { b } else { a };
            ix[i] = if lower { ix[i + half] } else { ix[i] };
            s[i] = lesser(s[i], s[i + half]);
        }
        half /= 2;
    }
    [m1[0], ix[0], m2[0], s[0]]
}

/// The smallest (and second-smallest) of distances offered in increasing index: ties keep the
/// earlier (lower) index.
pub(crate) struct Pick<F> {
    first: Option<Nearest<F>>,
    second: Option<Nearest<F>>,
    want_second: bool,
}

impl<F: Scalar> Pick<F> {
    pub(crate) fn new(want_second: bool) -> Self {
        Pick {
            first: None,
            second: None,
            want_second,
        }
    }

    pub(crate) fn offer(&mut self, index: usize, distance: F) {
        let cand = Nearest { index, distance };
        match self.first {
            Some(f) if distance >= f.distance => {
                if self.want_second && self.second.is_none_or(|s| distance < s.distance) {
                    self.second = Some(cand);
                }
            }
            _ => {
                if self.want_second {
                    self.second = self.first;
                }
                self.first = Some(cand);
            }
        }
    }

    pub(crate) fn result(self) -> NearestTwo<F> {
        NearestTwo {
            first: self.first.expect("k >= 1: the window holds the smallest score"),
            second: self.second,
        }
    }
}

/// One panel (d rows of `tile.panel()` packed coordinates) against `tile.mr` rows: updates
/// the rows' lane minima.
fn scan_panel<F: Scalar>(
    isa: Isa,
    tile: Tile,
    xc: &[F],
    packed: &[F],
    norms: &[F],
    first: F,
    track: &mut [F],
) {
    let d = packed.len() / tile.panel();
    #[cfg(target_arch = "x86_64")]
    {
        use std::any::TypeId;
        // SAFETY: the kernel tables are built only for an instruction set the machine has
        // (`Isa::detect`), and the slices have the lengths the tile implies (checked in the
        // kernels' debug assertions).
        unsafe {
            if TypeId::of::<F>() == TypeId::of::<f32>() {
                let cast = |s: &[F]| std::slice::from_raw_parts(s.as_ptr() as *const f32, s.len());
                let (xc, packed, norms) = (cast(xc), cast(packed), cast(norms));
                let track = std::slice::from_raw_parts_mut(track.as_mut_ptr() as *mut f32, track.len());
                let first = first.to_f64_exact() as f32;
                match isa {
                    Isa::Avx512 => return x86_avx512_f32::scan(tile.nv, xc, d, packed, norms, first, track),
                    Isa::Avx2Fma => return x86_avx2_f32::scan(tile.nv, xc, d, packed, norms, first, track),
                    Isa::Portable => {}
                }
            } else {
                let cast = |s: &[F]| std::slice::from_raw_parts(s.as_ptr() as *const f64, s.len());
                let (xc, packed, norms) = (cast(xc), cast(packed), cast(norms));
                let track = std::slice::from_raw_parts_mut(track.as_mut_ptr() as *mut f64, track.len());
                let first = first.to_f64_exact();
                match isa {
                    Isa::Avx512 => return x86_avx512_f64::scan(tile.nv, xc, d, packed, norms, first, track),
                    Isa::Avx2Fma => return x86_avx2_f64::scan(tile.nv, xc, d, packed, norms, first, track),
                    Isa::Portable => {}
                }
            }
        }
    }
    portable_scan(tile, xc, d, packed, norms, first, track);
}

/// The portable kernel (any element type; the compiler vectorises what it can).
fn portable_scan<F: Scalar>(
    tile: Tile,
    xc: &[F],
    d: usize,
    packed: &[F],
    norms: &[F],
    first: F,
    track: &mut [F],
) {
    let (w, p, mr) = (tile.w, tile.panel(), tile.mr);
    let two = F::one() + F::one();
    let mut acc = vec![F::zero(); p];
    for r in 0..mr {
        acc.fill(F::zero());
        let x = &xc[r * d..(r + 1) * d];
        for (t, &xv) in x.iter().enumerate() {
            for (a, &c) in acc.iter_mut().zip(&packed[t * p..(t + 1) * p]) {
                *a = xv.mul_add(c, *a);
            }
        }
        let tr = &mut track[r * 3 * w..(r + 1) * 3 * w];
        for (q, (&a, &norm)) in acc.iter().zip(norms).enumerate() {
            let s = norm - two * a;
            let l = q % w;
            let (best, second) = (tr[l], tr[w + l]);
            if s < best {
                tr[2 * w + l] = first + F::from_usize(q).unwrap_or_else(F::zero);
            }
            tr[w + l] = second.min(best.max(s));
            tr[l] = best.min(s);
        }
    }
}

/// An x86 kernel: `MR` rows × `NV` vectors of `W` centres in registers, accumulated over the
/// d coordinates, then folded into the rows' lane minima.
#[cfg(target_arch = "x86_64")]
macro_rules! x86_scan {
    ($m:ident, $feat:literal, $t:ty, $v:ty, $w:expr, $nv:expr, $mr:expr,
     $zero:ident, $load:ident, $store:ident, $set1:ident, $fmadd:ident, $fnmadd:ident,
     $add:ident, $min:ident, $max:ident, $select_lt:path) => {
        mod $m {
            use std::arch::x86_64::*;
            const W: usize = $w;
            const MR: usize = $mr;

            /// The kernel for panels of `nv` vectors (1, 2 or the widest, `$nv`).
            pub(super) unsafe fn scan(
                nv: usize,
                xc: &[$t],
                d: usize,
                packed: &[$t],
                norms: &[$t],
                first: $t,
                track: &mut [$t],
            ) {
                // SAFETY: the caller's (see `scan_panel`).
                unsafe {
                    match nv {
                        1 => scan_nv::<1>(xc, d, packed, norms, first, track),
                        2 => scan_nv::<2>(xc, d, packed, norms, first, track),
                        _ => scan_nv::<$nv>(xc, d, packed, norms, first, track),
                    }
                }
            }

            #[target_feature(enable = $feat)]
            unsafe fn scan_nv<const NV: usize>(
                xc: &[$t],
                d: usize,
                packed: &[$t],
                norms: &[$t],
                first: $t,
                track: &mut [$t],
            ) {
                let p = W * NV;
                debug_assert!(xc.len() >= MR * d && packed.len() >= d * p && norms.len() >= p);
                debug_assert!(track.len() >= MR * 3 * W);
                let (px, pc, pn, pt) = (
                    xc.as_ptr(),
                    packed.as_ptr(),
                    norms.as_ptr(),
                    track.as_mut_ptr(),
                );
                let mut acc = [[$zero(); NV]; MR];
                // SAFETY: t < d, so every load stays within the lengths asserted above.
                unsafe {
                    for t in 0..d {
                        let mut c = [$zero(); NV];
                        for (v, cv) in c.iter_mut().enumerate() {
                            *cv = $load(pc.add(t * p + v * W));
                        }
                        for (r, row) in acc.iter_mut().enumerate() {
                            let xb = $set1(*px.add(r * d + t));
                            for (a, &cv) in row.iter_mut().zip(&c) {
                                *a = $fmadd(xb, cv, *a);
                            }
                        }
                    }
                    let two = $set1(2.0);
                    let mut lane = [0.0 as $t; W];
                    for (l, v) in lane.iter_mut().enumerate() {
                        *v = l as $t;
                    }
                    let lane = $load(lane.as_ptr());
                    for (r, row) in acc.iter().enumerate() {
                        let tr = pt.add(r * 3 * W);
                        let (mut best, mut second, mut idx) =
                            ($load(tr), $load(tr.add(W)), $load(tr.add(2 * W)));
                        for (v, &a) in row.iter().enumerate() {
                            let s = $fnmadd(two, a, $load(pn.add(v * W)));
                            let j = $add(lane, $set1(first + (v * W) as $t));
                            idx = $select_lt(s, best, j, idx);
                            second = $min(second, $max(best, s));
                            best = $min(best, s);
                        }
                        $store(tr, best);
                        $store(tr.add(W), second);
                        $store(tr.add(2 * W), idx);
                    }
                }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod select {
    use std::arch::x86_64::*;
    /// `if s < best { j } else { idx }`, lane by lane.
    #[target_feature(enable = "avx512f")]
    pub fn avx512_ps(s: __m512, best: __m512, j: __m512, idx: __m512) -> __m512 {
        _mm512_mask_blend_ps(_mm512_cmp_ps_mask::<_CMP_LT_OQ>(s, best), idx, j)
    }
    #[target_feature(enable = "avx512f")]
    pub fn avx512_pd(s: __m512d, best: __m512d, j: __m512d, idx: __m512d) -> __m512d {
        _mm512_mask_blend_pd(_mm512_cmp_pd_mask::<_CMP_LT_OQ>(s, best), idx, j)
    }
    #[target_feature(enable = "avx2,fma")]
    pub fn avx2_ps(s: __m256, best: __m256, j: __m256, idx: __m256) -> __m256 {
        _mm256_blendv_ps(idx, j, _mm256_cmp_ps::<_CMP_LT_OQ>(s, best))
    }
    #[target_feature(enable = "avx2,fma")]
    pub fn avx2_pd(s: __m256d, best: __m256d, j: __m256d, idx: __m256d) -> __m256d {
        _mm256_blendv_pd(idx, j, _mm256_cmp_pd::<_CMP_LT_OQ>(s, best))
    }
}

#[cfg(target_arch = "x86_64")]
x86_scan!(
    x86_avx512_f32,
    "avx512f",
    f32,
    __m512,
    16,
    4,
    6,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_fnmadd_ps,
    _mm512_add_ps,
    _mm512_min_ps,
    _mm512_max_ps,
    super::select::avx512_ps
);
#[cfg(target_arch = "x86_64")]
x86_scan!(
    x86_avx512_f64,
    "avx512f",
    f64,
    __m512d,
    8,
    4,
    6,
    _mm512_setzero_pd,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    _mm512_set1_pd,
    _mm512_fmadd_pd,
    _mm512_fnmadd_pd,
    _mm512_add_pd,
    _mm512_min_pd,
    _mm512_max_pd,
    super::select::avx512_pd
);
#[cfg(target_arch = "x86_64")]
x86_scan!(
    x86_avx2_f32,
    "avx2,fma",
    f32,
    __m256,
    8,
    3,
    4,
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_fnmadd_ps,
    _mm256_add_ps,
    _mm256_min_ps,
    _mm256_max_ps,
    super::select::avx2_ps
);
#[cfg(target_arch = "x86_64")]
x86_scan!(
    x86_avx2_f64,
    "avx2,fma",
    f64,
    __m256d,
    4,
    3,
    4,
    _mm256_setzero_pd,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_set1_pd,
    _mm256_fmadd_pd,
    _mm256_fnmadd_pd,
    _mm256_add_pd,
    _mm256_min_pd,
    _mm256_max_pd,
    super::select::avx2_pd
);

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The direct computation: every distance, ties to the lowest index.
    fn brute<F: Scalar>(x: ArrayView2<F>, c: ArrayView2<F>) -> Vec<(usize, usize)> {
        x.rows()
            .into_iter()
            .map(|p| {
                let p = p.to_slice().unwrap();
                let mut ds: Vec<(F, usize)> = c
                    .rows()
                    .into_iter()
                    .enumerate()
                    .map(|(j, q)| (F::sqeuclidean(p, q.to_slice().unwrap()), j))
                    .collect();
                ds.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
                (ds[0].1, ds.get(1).map_or(usize::MAX, |s| s.1))
            })
            .collect()
    }

    fn check<F: Scalar>(isa: Isa, n: usize, k: usize, d: usize, ties: bool, seed: u64) {
        let mut rng = crate::rng::SeededRng::seed_from_u64(seed);
        let gen = |rng: &mut crate::rng::SeededRng, rows| {
            ndarray::Array2::from_shape_fn((rows, d), |_| {
                let v: f64 = if ties {
                    rng.random_range(0..3) as f64
                } else {
                    rng.random_range(-5.0..5.0)
                };
                F::from_f64_lossy(v)
            })
        };
        let x = gen(&mut rng, n);
        let mut c = gen(&mut rng, k);
        if k > 3 {
            // A duplicated centre: the lower index must win.
            let row = c.row(1).to_owned();
            c.row_mut(k - 1).assign(&row);
        }
        let centres = Centres::new(c.view(), isa);
        let want = brute(x.view(), c.view());
        for want_second in [false, true] {
            let none = Nearest {
                index: usize::MAX,
                distance: F::zero(),
            };
            let mut got = vec![
                NearestTwo {
                    first: none,
                    second: None
                };
                n
            ];
            nearest_into(x.view(), &centres, want_second, &mut got, false);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g.first.index, w.0, "{isa:?} {} n{n} k{k} d{d} row {i}", F::DTYPE);
                let exact = F::sqeuclidean(x.row(i).to_slice().unwrap(), c.row(w.0).to_slice().unwrap());
                assert_eq!(g.first.distance, exact);
                if want_second {
                    assert_eq!(
                        g.second.map_or(usize::MAX, |s| s.index),
                        w.1,
                        "{isa:?} second, row {i}"
                    );
                }
            }
        }
        // Approximate distances: the same labels, the distances within the kernel's bound.
        let approximate = Centres::new(c.view(), isa).with_distances(Distances::Approximate);
        let mut got = vec![Nearest::<F>::empty(); n];
        nearest_seq(
            x.view(),
            &approximate,
            false,
            &mut got,
            false,
            &mut Scratch::default(),
        );
        let eps = F::epsilon().to_f64_exact();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                g.index,
                w.0,
                "approximate: {isa:?} {} n{n} k{k} d{d} row {i}",
                F::DTYPE
            );
            let (p, q) = (x.row(i).to_owned(), c.row(w.0).to_owned());
            let exact = F::sqeuclidean(p.as_slice().unwrap(), q.as_slice().unwrap()).to_f64_exact();
            let scale = (F::dot(p.as_slice().unwrap(), p.as_slice().unwrap())
                + F::dot(q.as_slice().unwrap(), q.as_slice().unwrap()))
            .to_f64_exact()
                + 100.0;
            let error = (g.distance.to_f64_exact() - exact).abs();
            assert!(
                g.distance >= F::zero() && error <= 8.0 * (d + 4) as f64 * eps * scale,
                "approximate distance: row {i} {error}"
            );
        }
    }

    #[test]
    fn equals_the_direct_computation_on_every_isa() {
        for isa in [Isa::Portable, Isa::Avx2Fma, Isa::Avx512] {
            if !isa.available() {
                eprintln!("{isa:?} not available here; skipped");
                continue;
            }
            for (n, k, d) in [
                (1, 1, 1),
                (7, 2, 3),
                (200, 5, 2),
                (193, 16, 17),
                (50, 17, 64),
                (400, 100, 5),
                (300, 257, 33),
                (64, 1000, 8),
                // The direct computations: d ≤ 2 in lanes of points and the remainder, and
                // the table's kernel at k ≤ 8.
                (203, 8, 1),
                (333, 40, 2),
                (100, 8, 9),
                (65, 3, 128),
                (301, 12, 4),
                (97, 64, 8),
                (250, 30, 3),
            ] {
                for ties in [false, true] {
                    check::<f32>(isa, n, k, d, ties, (n * k + d) as u64);
                    check::<f64>(isa, n, k, d, ties, (n * k + d) as u64 + 1);
                }
            }
        }
    }
}
