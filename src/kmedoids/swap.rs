//! The SWAP phases: PAM, FastPAM1, FastPAM2 and FasterPAM, over a per-point cache of the
//! nearest and second-nearest medoid (Schubert & Rousseeuw 2019, 2021).
//!
//! The removal loss ΔL[m] = Σ_{o: n(o)=m} (ds(o) − dn(o)) is what removing medoid m alone
//! would cost. For a candidate x, one O(n) scan adjusts a copy of ΔL and accumulates the
//! shared gain of adding x; ΔTD(m, x) = ΔL'[m] + acc for every m at once (FastPAM1).
//!
//! The candidate scans — the O(n²) part of a pass — run on the CPU (rayon) or, with a CUDA
//! backend, by the batched kernel of `kernels/swap_gains.cu` ([`DeviceGains`]): FastPAM1 and
//! FastPAM2 send all candidates of a pass, FasterPAM sends batches evaluated speculatively
//! against the current state and applies the first improving candidate in order, discarding
//! the evaluations after it, so the swaps are the sequential FasterPAM's. PAM stays on the CPU.

use super::{lowest, KValue, Loss, Method, Outcome};
use crate::backend::AnyBackend;
use crate::dissim::{for_each_in_row, Dissimilarity};
use crate::error::Result;
use crate::estimator::{Progress, ProgressFn};
use crate::rng::SeededRng;
use num_traits::{ToPrimitive, Zero};
use rand::seq::SliceRandom;
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

/// The points grouped by their nearest medoid position, as the device kernel reads them:
/// `members[offsets[m]..offsets[m + 1]]` are the points whose nearest medoid is at position
/// `m`, ascending, with their nearest and second-nearest dissimilarities in the same order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Grouped<V> {
    pub members: Vec<i32>,
    pub offsets: Vec<i32>,
    pub near_d: Vec<V>,
    pub seco_d: Vec<V>,
}

/// The best swap position and its ΔTD, for each candidate of a batch.
pub(crate) type Best<L> = Vec<(usize, L)>;

/// [`Best`] and, when asked for, every candidate's k deltas (row-major).
pub(crate) type Evaluated<L = f64> = (Best<L>, Vec<L>);

/// FastPAM1's candidate scan for batches of candidates on a device (the CUDA backend).
pub(crate) trait DeviceGains<V> {
    /// Loads the search state (after every swap).
    fn load_state(&mut self, g: &Grouped<V>, removal: &[f64]) -> Result<()>;
    /// Evaluates the candidates against the loaded state.
    fn evaluate(&mut self, candidates: &[usize], all: bool) -> Result<Evaluated>;
}

/// The candidate scans on a device, with the state it holds.
struct OnDevice<'g, V> {
    gains: Box<dyn DeviceGains<V> + 'g>,
    /// The [`State::version`] the device holds.
    loaded: Option<u64>,
}

impl<'g, V: KValue> OnDevice<'g, V> {
    /// The device evaluator of `backend` for `d`, or `None` for the CPU (and for PAM, which
    /// stays on the CPU).
    #[cfg_attr(not(feature = "cuda"), allow(unused_variables))]
    fn new<D: Dissimilarity<Value = V>>(
        d: &'g D,
        k: usize,
        method: Method,
        backend: &AnyBackend,
    ) -> Result<Option<Self>> {
        match backend {
            AnyBackend::Cpu(_) => Ok(None),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) if method != Method::Pam => Ok(b.or_cpu(b.swap_gains(d, k))?.map(Self::with)),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(_) => Ok(None),
        }
    }

    #[cfg_attr(not(any(test, feature = "cuda")), allow(dead_code))]
    fn with(gains: Box<dyn DeviceGains<V> + 'g>) -> Self {
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
#[cfg(feature = "cuda")]
pub(crate) fn run_with<'g, D>(
    d: &'g D,
    medoids: &mut Vec<usize>,
    method: Method,
    max_iter: usize,
    rng: &mut SeededRng,
    progress: Option<&ProgressFn>,
    gains: Box<dyn DeviceGains<D::Value> + 'g>,
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

/// [`run`] with the candidate scans on `device`, or the CPU.
fn run_on<'g, D>(
    d: &'g D,
    medoids: &mut Vec<usize>,
    method: Method,
    max_iter: usize,
    rng: &mut SeededRng,
    progress: Option<&ProgressFn>,
    mut device: Option<OnDevice<'g, D::Value>>,
) -> Result<Outcome<LossOf<D>>>
where
    D: Dissimilarity,
    D::Value: KValue,
{
    let n = d.len();
    let k0 = medoids.len();
    let mut s = State::new(d, medoids);
    let report = |iter: usize, loss: LossOf<D>| match progress {
        Some(p) => p.report(&Progress {
            iteration: iter,
            max_iter: Some(max_iter),
            objective: loss.to_f64(),
        }),
        None => Ok(()),
    };
    let (mut n_iter, mut n_swaps, mut converged) = (0, 0, false);
    let mut deltas = Vec::with_capacity(k0);
    match method {
        Method::Pam | Method::FastPam1 => {
            while n_iter < max_iter {
                n_iter += 1;
                let cands: Vec<usize> = (0..n).filter(|&x| !s.is_medoid[x]).collect();
                let evals: Vec<(usize, LossOf<D>)> = match device.as_mut() {
                    Some(dev) => dev.evaluate(&s, &cands, false)?.0,
                    None if method == Method::Pam => cands.par_iter().map(|&x| s.pam_best(x)).collect(),
                    None => cands
                        .par_iter()
                        .map_init(|| Vec::with_capacity(k0), |buf, &x| s.best_for(x, buf))
                        .collect(),
                };
                let mut best: Option<(LossOf<D>, usize, usize)> = None;
                for (&x, &(i, delta)) in cands.iter().zip(&evals) {
                    if best.is_none_or(|b| delta < b.0) {
                        best = Some((delta, i, x));
                    }
                }
                report(n_iter, s.loss)?;
                match best {
                    Some((delta, i, x)) if LossOf::<D>::improves(delta, s.loss) => {
                        s.swap(i, x);
                        n_swaps += 1;
                    }
                    _ => {
                        converged = true;
                        break;
                    }
                }
            }
        }
        Method::FastPam2 { fasttol } => {
            while n_iter < max_iter {
                n_iter += 1;
                let k = s.k();
                let mut best_per: Vec<Option<(LossOf<D>, usize)>> = vec![None; k];
                let mut keep_best = |x: usize, deltas: &[LossOf<D>]| {
                    for (i, &v) in deltas.iter().enumerate() {
                        if best_per[i].is_none_or(|(b, _)| v < b) {
                            best_per[i] = Some((v, x));
                        }
                    }
                };
                let cands: Vec<usize> = (0..n).filter(|&x| !s.is_medoid[x]).collect();
                match device.as_mut() {
                    Some(dev) => {
                        for chunk in cands.chunks((DEVICE_DELTAS / k).max(1)) {
                            let all = dev.evaluate(&s, chunk, true)?.1;
                            for (&x, row) in chunk.iter().zip(all.chunks(k)) {
                                keep_best(x, row);
                            }
                        }
                    }
                    None => {
                        for &x in &cands {
                            s.candidate_deltas(x, &mut deltas);
                            keep_best(x, &deltas);
                        }
                    }
                }
                let mut order: Vec<(LossOf<D>, usize, usize)> = best_per
                    .iter()
                    .enumerate()
                    .filter_map(|(i, b)| b.map(|(v, x)| (v, i, x)))
                    .filter(|&(v, _, _)| LossOf::<D>::improves(v, s.loss))
                    .collect();
                order.sort_by(|a, b| a.0.partial_cmp(&b.0).expect("finite").then(a.1.cmp(&b.1)));
                report(n_iter, s.loss)?;
                let Some(&(first, i0, x0)) = order.first() else {
                    converged = true;
                    break;
                };
                s.swap(i0, x0);
                n_swaps += 1;
                let threshold = (1.0 - fasttol) * first.to_f64().unwrap_or(0.0);
                for &(_, i, x) in &order[1..] {
                    if s.is_medoid[x] {
                        continue;
                    }
                    s.candidate_deltas(x, &mut deltas);
                    let v = deltas[i];
                    if v.to_f64().unwrap_or(0.0) <= threshold && LossOf::<D>::improves(v, s.loss) {
                        s.swap(i, x);
                        n_swaps += 1;
                    }
                }
            }
        }
        Method::FasterPam { shuffle } => {
            let mut order: Vec<usize> = (0..n).collect();
            if shuffle {
                order.shuffle(rng);
            }
            let mut last_swap = usize::MAX; // position in `order` of the last swap
                                            // Candidates are evaluated speculatively in batches against the current state (in
                                            // parallel on the CPU, or on the device); the first improving one in order is
                                            // applied and the evaluations after it are discarded. Each evaluation is the
                                            // sequential one, so the result is exactly the sequential FasterPAM's, for any
                                            // thread count and batch size.
            let threads = rayon::current_num_threads();
            let mut batch = match device {
                Some(_) => DEVICE_BATCH.0,
                None if threads > 1 && n >= 1000 => 4 * threads,
                None => 1,
            };
            while n_iter < max_iter {
                n_iter += 1;
                let swaps_before = n_swaps;
                let mut pos = 0;
                'pass: while pos < n {
                    let mut cands = Vec::with_capacity(batch);
                    while pos < n && cands.len() < batch {
                        if pos == last_swap {
                            break; // a full cycle without a swap since the last one
                        }
                        if !s.is_medoid[order[pos]] {
                            cands.push(pos);
                        }
                        pos += 1;
                    }
                    if cands.is_empty() {
                        break 'pass;
                    }
                    let xs: Vec<usize> = cands.iter().map(|&p| order[p]).collect();
                    let evals: Vec<(usize, LossOf<D>)> = match device.as_mut() {
                        Some(dev) => dev.evaluate(&s, &xs, false)?.0,
                        None if xs.len() == 1 => vec![s.best_for(xs[0], &mut deltas)],
                        None => xs
                            .par_iter()
                            .map_init(|| Vec::with_capacity(k0), |buf, &x| s.best_for(x, buf))
                            .collect(),
                    };
                    let first = evals
                        .iter()
                        .position(|&(_, delta)| LossOf::<D>::improves(delta, s.loss));
                    if let Some(t) = first {
                        let p = cands[t];
                        s.swap(evals[t].0, order[p]);
                        n_swaps += 1;
                        last_swap = p;
                        pos = p + 1;
                        if device.is_some() {
                            batch = (2 * (t + 1)).clamp(DEVICE_BATCH.0, DEVICE_BATCH.1);
                        }
                    } else if pos == last_swap {
                        break 'pass;
                    } else if device.is_some() {
                        batch = (2 * batch).min(DEVICE_BATCH.1);
                    }
                }
                report(n_iter, s.loss)?;
                if n_swaps == swaps_before {
                    converged = true;
                    break;
                }
            }
        }
        Method::Alternating => unreachable!("handled by the alternating module"),
    }
    Ok(s.outcome(n_iter, n_swaps, converged))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dissim::LowerTriangle;

    /// Every incremental ΔTD (FastPAM1 and PAM forms) equals the brute-force difference of
    /// total deviations, exactly on integers (spec acceptance 2).
    #[test]
    fn incremental_deltas_equal_brute_force() {
        use rand::{Rng, SeedableRng};
        let mut rng = SeededRng::seed_from_u64(11);
        for _ in 0..40 {
            let n = rng.random_range(4..25);
            let k = rng.random_range(2..n.min(6));
            let data: Vec<i32> = (0..n * (n - 1) / 2).map(|_| rng.random_range(0..6)).collect();
            let d = LowerTriangle::new(n, data).unwrap();
            let mut medoids = rand::seq::index::sample(&mut rng, n, k).into_vec();
            let s = State::new(&d, &mut medoids);
            let (base, _) = super::super::total_deviation(&d, s.medoids);
            assert_eq!(base, s.loss);
            let mut deltas = Vec::new();
            for x in (0..n).filter(|&x| !s.is_medoid[x]) {
                s.candidate_deltas(x, &mut deltas);
                for i in 0..k {
                    let mut m = s.medoids.clone();
                    m[i] = x;
                    let (after, _) = super::super::total_deviation(&d, &m);
                    assert_eq!(deltas[i], after - base, "candidate {x} position {i}");
                    assert_eq!(s.pam_delta(i, x), after - base);
                }
            }
        }
    }
}

#[cfg(test)]
mod float_tests {
    use super::*;
    use crate::dissim::DenseMatrix;
    use rand::{Rng, SeedableRng};

    /// On f64 dissimilarities every incremental ΔTD is within 1e-9 (relative to the loss) of
    /// the brute-force difference (spec acceptance 2).
    #[test]
    fn incremental_deltas_match_brute_force_on_floats() {
        let mut rng = SeededRng::seed_from_u64(12);
        for _ in 0..20 {
            let n = rng.random_range(5..40);
            let k = rng.random_range(2..n.min(7));
            let x = ndarray::Array2::<f64>::from_shape_fn((n, 3), |_| rng.random_range(-5.0..5.0));
            let d = DenseMatrix::from_points(
                x.view(),
                &crate::MetricKind::Euclidean,
                &crate::CpuBackend::default(),
            )
            .unwrap();
            let mut medoids = rand::seq::index::sample(&mut rng, n, k).into_vec();
            let s = State::new(&d, &mut medoids);
            let (base, _) = super::super::total_deviation(&d, s.medoids);
            let mut deltas: Vec<f64> = Vec::new();
            for x in (0..n).filter(|&x| !s.is_medoid[x]) {
                s.candidate_deltas(x, &mut deltas);
                for i in 0..k {
                    let mut m = s.medoids.clone();
                    m[i] = x;
                    let expected = super::super::total_deviation(&d, &m).0 - base;
                    assert!(
                        (deltas[i] - expected).abs() <= 1e-9 * base,
                        "{} vs {expected}",
                        deltas[i]
                    );
                    assert!((s.pam_delta(i, x) - expected).abs() <= 1e-9 * base);
                }
            }
        }
    }
}

/// The device path without a device: a CPU twin of `kernels/swap_gains.cu` (the same grouped
/// scan, per medoid then the shared gain) behind [`DeviceGains`], driving the device loops of
/// FastPAM1, FastPAM2 and FasterPAM (state reloads, batches, chunks).
#[cfg(test)]
mod device_loop_tests {
    use super::super::random_medoids;
    use super::*;
    use crate::dissim::DenseMatrix;
    use rand::{Rng, SeedableRng};
    use std::{cell::Cell, rc::Rc};

    struct Twin<'g, D: Dissimilarity> {
        d: &'g D,
        state: Option<(Grouped<D::Value>, Vec<f64>)>,
        loads: Rc<Cell<usize>>,
    }

    impl<D: Dissimilarity> DeviceGains<D::Value> for Twin<'_, D> {
        fn load_state(&mut self, g: &Grouped<D::Value>, removal: &[f64]) -> Result<()> {
            self.state = Some((g.clone(), removal.to_vec()));
            self.loads.set(self.loads.get() + 1);
            Ok(())
        }

        fn evaluate(&mut self, candidates: &[usize], all: bool) -> Result<Evaluated> {
            let (g, removal) = self.state.as_ref().expect("loaded before use");
            let (mut best, mut deltas) = (Vec::new(), Vec::new());
            for &x in candidates {
                let mut acc = 0.0;
                let mut dm: Vec<f64> = removal.clone();
                for (m, dm) in dm.iter_mut().enumerate() {
                    for j in g.offsets[m] as usize..g.offsets[m + 1] as usize {
                        let dox = self.d.get(x, g.members[j] as usize);
                        let (nd, sd) = (g.near_d[j], g.seco_d[j]);
                        let f = |v: D::Value| v.to_f64().unwrap_or(f64::NAN);
                        if dox < nd {
                            acc += f(dox) - f(nd);
                            *dm += f(nd) - f(sd);
                        } else if dox < sd {
                            *dm += f(dox) - f(sd);
                        }
                    }
                }
                let v: Vec<f64> = dm.iter().map(|v| v + acc).collect();
                let mut b = (0, v[0]);
                for (i, &vi) in v.iter().enumerate().skip(1) {
                    if vi < b.1 {
                        b = (i, vi);
                    }
                }
                best.push(b);
                if all {
                    deltas.extend(v);
                }
            }
            Ok((best, deltas))
        }
    }

    fn blobs(n: usize, seed: u64) -> DenseMatrix<'static, f64> {
        let mut rng = SeededRng::seed_from_u64(seed);
        let x = ndarray::Array2::<f64>::from_shape_fn((n, 2), |(i, _)| {
            (i % 7) as f64 * 3.0 + rng.random_range(-1.0..1.0)
        });
        DenseMatrix::from_points(
            x.view(),
            &crate::MetricKind::Euclidean,
            &crate::CpuBackend::default(),
        )
        .unwrap()
    }

    /// The grouped scan gives FastPAM1's deltas for every candidate.
    #[test]
    fn grouped_scan_equals_candidate_deltas() {
        let d = blobs(300, 1);
        let mut medoids = vec![3, 50, 120, 121, 299];
        let s = State::new(&d, &mut medoids);
        let g = s.grouped();
        assert_eq!(g.offsets.last().copied(), Some(300));
        let mut twin = Twin {
            d: &d,
            state: None,
            loads: Rc::default(),
        };
        twin.load_state(&g, &s.removal).unwrap();
        let cands: Vec<usize> = (0..300).filter(|&x| !s.is_medoid[x]).collect();
        let (best, all) = twin.evaluate(&cands, true).unwrap();
        let mut deltas = Vec::new();
        for (c, &x) in cands.iter().enumerate() {
            s.candidate_deltas(x, &mut deltas);
            for (i, &v) in deltas.iter().enumerate() {
                assert!(
                    (all[c * 5 + i] - v).abs() <= 1e-9 * s.loss,
                    "candidate {x} position {i}"
                );
            }
            let (i, v) = s.best_for(x, &mut deltas);
            assert_eq!(best[c].0, i);
            assert!((best[c].1 - v).abs() <= 1e-9 * s.loss);
        }
    }

    /// FastPAM1, FastPAM2 and FasterPAM (natural and shuffled order) through the device loops
    /// take the CPU's swaps: the same medoids, loss, passes and swaps; the state is reloaded
    /// once per swap at most.
    #[test]
    fn device_loops_take_the_cpu_swaps() {
        for (seed, n, k) in [(2, 400, 7), (3, 1500, 12), (4, 2500, 25)] {
            let d = blobs(n, seed);
            let start = random_medoids(n, k, &mut SeededRng::seed_from_u64(seed));
            for method in [
                Method::FastPam1,
                Method::FastPam2 { fasttol: 1.0 },
                Method::FasterPam { shuffle: false },
                Method::FasterPam { shuffle: true },
            ] {
                let (mut on_cpu, mut on_twin) = (start.clone(), start.clone());
                let cpu = run_on(
                    &d,
                    &mut on_cpu,
                    method,
                    100,
                    &mut SeededRng::seed_from_u64(9),
                    None,
                    None,
                )
                .unwrap();
                let loads = Rc::new(Cell::new(0));
                let twin = Twin {
                    d: &d,
                    state: None,
                    loads: loads.clone(),
                };
                let dev = Some(OnDevice::with(Box::new(twin)));
                let got = run_on(
                    &d,
                    &mut on_twin,
                    method,
                    100,
                    &mut SeededRng::seed_from_u64(9),
                    None,
                    dev,
                )
                .unwrap();
                assert_eq!(on_cpu, on_twin, "{method:?} n = {n}");
                assert!(cpu.n_swaps > 0);
                assert_eq!((cpu.n_iter, cpu.n_swaps), (got.n_iter, got.n_swaps), "{method:?}");
                assert_eq!(cpu.assignment, got.assignment);
                assert!((cpu.loss - got.loss).abs() <= 1e-12 * cpu.loss);
                assert!(
                    loads.get() >= 1 && loads.get() <= got.n_swaps + 1,
                    "{} loads",
                    loads.get()
                );
            }
        }
    }
}
