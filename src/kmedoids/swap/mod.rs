//! The SWAP phases: PAM, FastPAM1, FastPAM2 and FasterPAM, over a per-point cache of the
//! nearest and second-nearest medoid (Schubert & Rousseeuw 2019, 2021).
//!
//! The removal loss ΔL[m] = Σ_{o: n(o)=m} (ds(o) − dn(o)) is what removing medoid m alone
//! would cost. For a candidate x, one O(n) scan adjusts a copy of ΔL and accumulates the
//! shared gain of adding x; ΔTD(m, x) = ΔL'[m] + acc for every m at once (FastPAM1).
//!
//! The candidate scans — the O(n²) part of a pass — run on the CPU (rayon) or, where the
//! backend offers them ([`Backend::swap_gains`]), on a device
//! ([`crate::backend::device::DeviceGains`]): FastPAM1 and
//! FastPAM2 send all candidates of a pass, FasterPAM sends batches evaluated speculatively
//! against the current state and applies the first improving candidate in order, discarding
//! the evaluations after it, so the swaps are the sequential FasterPAM's. PAM stays on the CPU.
//!
//! Files: this one holds the search state and its caches; `pam.rs` (PAM and FastPAM1),
//! `fastpam2.rs` and `fasterpam.rs` each method's passes, the candidate scans on the CPU or
//! the device side by side.

mod fasterpam;
mod fastpam2;
mod pam;
#[cfg(test)]
mod tests;

use super::{lowest, KValue, Method, Outcome};
use crate::backend::device::{BoxedGains, Evaluated, Grouped};
use crate::backend::{AnyBackend, Backend};
use crate::dissim::{for_each_in_row, Dissimilarity};
use crate::error::Result;
use crate::estimator::{Progress, ProgressFn};
use crate::rng::SeededRng;
use num_traits::{ToPrimitive, Zero};
use rayon::prelude::*;

/// A medoid position and the distance to it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Near<V> {
    pub i: u32,
    pub d: V,
}

/// A point's nearest and second-nearest medoid.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rec<V> {
    pub near: Near<V>,
    pub seco: Near<V>,
}

pub(crate) type LossOf<D> = <<D as Dissimilarity>::Value as KValue>::Loss;

/// The candidate scans on a device, with the state it holds.
struct OnDevice<'g, V> {
    gains: BoxedGains<'g, V>,
    /// The [`State::version`] the device holds.
    loaded: Option<u64>,
}

impl<'g, V: KValue> OnDevice<'g, V> {
    /// The device evaluator of `backend` for `d`, or `None` for the CPU (and for PAM, which
    /// stays on the CPU).
    fn new<D: Dissimilarity<Value = V>>(
        d: &'g D,
        k: usize,
        method: Method,
        backend: &AnyBackend,
    ) -> Result<Option<Self>> {
        if method == Method::Pam {
            return Ok(None);
        }
        Ok(backend.swap_gains(d, k)?.map(Self::with))
    }

    fn with(gains: BoxedGains<'g, V>) -> Self {
        OnDevice { gains, loaded: None }
    }

    /// The best position and ΔTD of each candidate (and with `all` the k deltas of each).
    fn evaluate<D: Dissimilarity<Value = V>>(
        &mut self,
        s: &State<'_, D>,
        candidates: &[usize],
        all: bool,
    ) -> Result<Evaluated<V::Loss>> {
        if self.loaded != Some(s.version) {
            let removal: Vec<f64> = s.removal.iter().map(|r| r.to_f64().unwrap_or(f64::NAN)).collect();
            self.gains.load_state(&s.grouped(), &removal)?;
            self.loaded = Some(s.version);
        }
        let (best, deltas) = self.gains.evaluate(candidates, all)?;
        let loss = |v: f64| <V::Loss as num_traits::NumCast>::from(v).unwrap_or_else(V::Loss::zero);
        Ok((
            best.into_iter().map(|(i, v)| (i, loss(v))).collect(),
            deltas.into_iter().map(loss).collect(),
        ))
    }
}

/// The search state: medoids, caches, removal losses and the current loss.
pub(crate) struct State<'a, D: Dissimilarity>
where
    D::Value: KValue,
{
    d: &'a D,
    medoids: &'a mut Vec<usize>,
    recs: Vec<Rec<D::Value>>,
    pub(crate) is_medoid: Vec<bool>,
    removal: Vec<LossOf<D>>,
    pub(crate) loss: LossOf<D>,
    /// Swaps applied so far: what a device's copy of the state is checked against.
    version: u64,
}

impl<'a, D> State<'a, D>
where
    D: Dissimilarity,
    D::Value: KValue,
{
    pub(crate) fn new(d: &'a D, medoids: &'a mut Vec<usize>) -> Self {
        let n = d.len();
        let mut is_medoid = vec![false; n];
        let mut position = vec![u32::MAX; n];
        for (i, &m) in medoids.iter().enumerate() {
            is_medoid[m] = true;
            position[m] = i as u32;
        }
        let recs: Vec<Rec<D::Value>> = (0..n)
            .into_par_iter()
            .map(|o| {
                // A medoid's nearest is itself; otherwise the two smallest, strict `<`.
                let own = position[o];
                let mut near: Option<Near<D::Value>> = (own != u32::MAX).then_some(Near {
                    i: own,
                    d: D::Value::zero(),
                });
                let mut seco: Option<Near<D::Value>> = None;
                for (i, &m) in medoids.iter().enumerate() {
                    let i = i as u32;
                    if i == own {
                        continue;
                    }
                    let cand = Near { i, d: d.get(m, o) };
                    match near {
                        Some(nn) if own != u32::MAX || cand.d >= nn.d => {
                            if seco.is_none_or(|s| cand.d < s.d) {
                                seco = Some(cand);
                            }
                        }
                        _ => {
                            seco = near;
                            near = Some(cand);
                        }
                    }
                }
                let near = near.expect("k >= 1");
                Rec {
                    near,
                    seco: seco.unwrap_or(near),
                }
            })
            .collect();
        let loss = recs.iter().fold(LossOf::<D>::zero(), |a, r| a + r.near.d.widen());
        let mut s = State {
            d,
            medoids,
            recs,
            is_medoid,
            removal: Vec::new(),
            loss,
            version: 0,
        };
        s.update_removal_loss();
        s
    }

    pub(crate) fn k(&self) -> usize {
        self.medoids.len()
    }

    /// The points grouped by nearest medoid position (a counting sort), for the device.
    pub(crate) fn grouped(&self) -> Grouped<D::Value> {
        let k = self.k();
        let mut offsets = vec![0i32; k + 1];
        for r in &self.recs {
            offsets[r.near.i as usize + 1] += 1;
        }
        for m in 0..k {
            offsets[m + 1] += offsets[m];
        }
        let mut next: Vec<usize> = offsets[..k].iter().map(|&o| o as usize).collect();
        let n = self.recs.len();
        let (mut members, mut near_d, mut seco_d) = (
            vec![0i32; n],
            vec![D::Value::zero(); n],
            vec![D::Value::zero(); n],
        );
        for (o, r) in self.recs.iter().enumerate() {
            let j = &mut next[r.near.i as usize];
            members[*j] = o as i32;
            near_d[*j] = r.near.d;
            seco_d[*j] = r.seco.d;
            *j += 1;
        }
        Grouped {
            members,
            offsets,
            near_d,
            seco_d,
        }
    }

    fn update_removal_loss(&mut self) {
        let mut r = vec![LossOf::<D>::zero(); self.k()];
        for rec in &self.recs {
            r[rec.near.i as usize] += rec.seco.d.widen() - rec.near.d.widen();
        }
        self.removal = r;
    }

    /// ΔTD of replacing each medoid position by `x`, into `deltas`; FastPAM1's O(n + k) scan.
    fn candidate_deltas(&self, x: usize, deltas: &mut Vec<LossOf<D>>) {
        deltas.clear();
        deltas.extend_from_slice(&self.removal);
        let mut acc = LossOf::<D>::zero();
        let recs = &self.recs;
        for_each_in_row(self.d, x, |o, dox| {
            let rec = &recs[o];
            if dox < rec.near.d {
                acc += dox.widen() - rec.near.d.widen();
                deltas[rec.near.i as usize] += rec.near.d.widen() - rec.seco.d.widen();
            } else if dox < rec.seco.d {
                deltas[rec.near.i as usize] += dox.widen() - rec.seco.d.widen();
            }
        });
        deltas.iter_mut().for_each(|v| *v += acc);
    }

    /// The best medoid position for candidate `x` (lowest position on ties) and its ΔTD.
    pub(crate) fn best_for(&self, x: usize, deltas: &mut Vec<LossOf<D>>) -> (usize, LossOf<D>) {
        self.candidate_deltas(x, deltas);
        let mut best = (0, deltas[0]);
        for (i, &v) in deltas.iter().enumerate().skip(1) {
            if v < best.1 {
                best = (i, v);
            }
        }
        best
    }

    /// The best medoid position for candidate `x` by PAM's formula (lowest position on ties).
    fn pam_best(&self, x: usize) -> (usize, LossOf<D>) {
        let mut best = (0, self.pam_delta(0, x));
        for i in 1..self.k() {
            let v = self.pam_delta(i, x);
            if v < best.1 {
                best = (i, v);
            }
        }
        best
    }

    /// ΔTD of replacing medoid position `i` by `x` with PAM's O(n) formula.
    pub(crate) fn pam_delta(&self, i: usize, x: usize) -> LossOf<D> {
        let mut delta = LossOf::<D>::zero();
        for_each_in_row(self.d, x, |o, dox| {
            let rec = &self.recs[o];
            if rec.near.i as usize == i {
                let to = if dox < rec.seco.d { dox } else { rec.seco.d };
                delta += to.widen() - rec.near.d.widen();
            } else if dox < rec.near.d {
                delta += dox.widen() - rec.near.d.widen();
            }
        });
        delta
    }

    /// Replaces medoid position `b` by point `x`, updates the caches, the removal losses and
    /// the loss.
    pub(crate) fn swap(&mut self, b: usize, x: usize) {
        let old = self.medoids[b];
        self.version += 1;
        self.medoids[b] = x;
        self.is_medoid[old] = false;
        self.is_medoid[x] = true;
        let bi = b as u32;
        let (d, medoids) = (self.d, &*self.medoids);
        self.recs.par_iter_mut().enumerate().for_each(|(o, rec)| {
            if o == x {
                if rec.near.i != bi {
                    rec.seco = rec.near;
                }
                rec.near = Near {
                    i: bi,
                    d: D::Value::zero(),
                };
                return;
            }
            let dox = d.get(x, o);
            if rec.near.i == bi {
                // The nearest medoid was replaced.
                if dox < rec.seco.d {
                    rec.near = Near { i: bi, d: dox };
                } else {
                    rec.near = rec.seco;
                    rec.seco = second_nearest(d, medoids, rec.near.i, bi, o, dox);
                }
            } else if dox < rec.near.d {
                rec.seco = rec.near;
                rec.near = Near { i: bi, d: dox };
            } else if rec.seco.i == bi {
                // The second nearest was replaced.
                rec.seco = second_nearest(d, medoids, rec.near.i, bi, o, dox);
            } else if dox < rec.seco.d {
                rec.seco = Near { i: bi, d: dox };
            }
        });
        self.loss = self
            .recs
            .iter()
            .fold(LossOf::<D>::zero(), |a, r| a + r.near.d.widen());
        self.update_removal_loss();
    }

    pub(crate) fn outcome(self, n_iter: usize, n_swaps: usize, converged: bool) -> Outcome<LossOf<D>> {
        Outcome {
            loss: self.loss,
            assignment: self.recs.iter().map(|r| r.near.i as usize).collect(),
            n_iter,
            n_swaps,
            converged,
        }
    }
}

/// The nearest medoid of `o` other than position `skip`, starting from the new medoid at
/// position `b` (distance `dob`); strict `<`, so `b` wins ties.
fn second_nearest<D: Dissimilarity>(
    d: &D,
    medoids: &[usize],
    skip: u32,
    b: u32,
    o: usize,
    dob: D::Value,
) -> Near<D::Value> {
    let mut best = Near { i: b, d: dob };
    for (i, &m) in medoids.iter().enumerate() {
        let i = i as u32;
        if i == skip || i == b {
            continue;
        }
        let v = d.get(m, o);
        if v < best.d {
            best = Near { i, d: v };
        }
    }
    best
}

/// k = 1: the point with the smallest distance sum (exact); parallel, lowest index on ties.
fn single_medoid<D>(d: &D, medoids: &mut [usize]) -> Outcome<LossOf<D>>
where
    D: Dissimilarity,
    D::Value: KValue,
{
    let n = d.len();
    let sum = |x: usize| (0..n).fold(LossOf::<D>::zero(), |a, o| a + d.get(x, o).widen());
    let (loss, best) = (0..n)
        .into_par_iter()
        .map(|x| (sum(x), x))
        .reduce_with(lowest)
        .expect("n >= 1");
    let current = sum(medoids[0]);
    let swapped = best != medoids[0] && loss < current;
    if swapped {
        medoids[0] = best;
    }
    Outcome {
        loss: if swapped { loss } else { current },
        assignment: vec![0; n],
        n_iter: 1,
        n_swaps: usize::from(swapped),
        converged: true,
    }
}

/// Batch sizes of FasterPAM's speculative device evaluations: after a swap at batch position
/// t the next batch holds 2(t + 1) candidates, after a batch without one twice as many, within
/// these bounds (the swaps do not depend on them).
const DEVICE_BATCH: (usize, usize) = (256, 16384);

/// Most deltas (candidates × k) FastPAM2 fetches from the device at once.
const DEVICE_DELTAS: usize = 1 << 22;

/// Runs the swap phase of `method` from `medoids` (updated in place), the candidate scans on
/// `backend` (see the module comment).
pub(crate) fn run<D>(
    d: &D,
    medoids: &mut Vec<usize>,
    method: Method,
    max_iter: usize,
    rng: &mut SeededRng,
    progress: Option<&ProgressFn>,
    backend: &AnyBackend,
) -> Result<Outcome<LossOf<D>>>
where
    D: Dissimilarity,
    D::Value: KValue,
{
    if medoids.len() == 1 && max_iter > 0 {
        return Ok(single_medoid(d, medoids));
    }
    let device = OnDevice::new(d, medoids.len(), method, backend)?;
    run_on(d, medoids, method, max_iter, rng, progress, device)
}

/// [`run`] with the candidate scans on `gains`.
pub(crate) fn run_with<'g, D>(
    d: &'g D,
    medoids: &mut Vec<usize>,
    method: Method,
    max_iter: usize,
    rng: &mut SeededRng,
    progress: Option<&ProgressFn>,
    gains: BoxedGains<'g, D::Value>,
) -> Result<Outcome<LossOf<D>>>
where
    D: Dissimilarity,
    D::Value: KValue,
{
    if medoids.len() == 1 && max_iter > 0 {
        return Ok(single_medoid(d, medoids));
    }
    run_on(
        d,
        medoids,
        method,
        max_iter,
        rng,
        progress,
        Some(OnDevice::with(gains)),
    )
}

/// A swap loop's budget, progress reports, candidate scans and counts.
pub(super) struct Passes<'p, 'g, V> {
    max_iter: usize,
    progress: Option<&'p ProgressFn>,
    device: Option<OnDevice<'g, V>>,
    n_iter: usize,
    n_swaps: usize,
    converged: bool,
}

impl<V> Passes<'_, '_, V> {
    /// Reports the loss after a pass.
    fn report<L: ToPrimitive>(&self, loss: L) -> Result<()> {
        match self.progress {
            Some(p) => p.report(&Progress {
                iteration: self.n_iter,
                max_iter: Some(self.max_iter),
                objective: loss.to_f64(),
            }),
            None => Ok(()),
        }
    }
}

/// [`run`] with the candidate scans on `device`, or the CPU.
fn run_on<'g, D>(
    d: &'g D,
    medoids: &mut Vec<usize>,
    method: Method,
    max_iter: usize,
    rng: &mut SeededRng,
    progress: Option<&ProgressFn>,
    device: Option<OnDevice<'g, D::Value>>,
) -> Result<Outcome<LossOf<D>>>
where
    D: Dissimilarity,
    D::Value: KValue,
{
    let mut s = State::new(d, medoids);
    let mut p = Passes {
        max_iter,
        progress,
        device,
        n_iter: 0,
        n_swaps: 0,
        converged: false,
    };
    match method {
        Method::Pam => pam::passes(&mut s, &mut p, true)?,
        Method::FastPam1 => pam::passes(&mut s, &mut p, false)?,
        Method::FastPam2 { fasttol } => fastpam2::passes(&mut s, &mut p, fasttol)?,
        Method::FasterPam { shuffle } => fasterpam::passes(&mut s, &mut p, shuffle, rng)?,
        Method::Alternating => unreachable!("handled by the alternating module"),
    }
    Ok(s.outcome(p.n_iter, p.n_swaps, p.converged))
}
