//! Mini-batch k-means (Sculley 2010) with scikit-learn's update rules
//! (`sklearn.cluster.MiniBatchKMeans`, 1.x), over data in memory or streamed from a .npy file
//! larger than memory.
//!
//! As scikit-learn: the initial centres come from greedy k-means++ (or random points, or given
//! centres) on a random sample of `init_size` rows (default 3 × batch_size, at least 3k), the
//! best of `n_init` candidates by inertia on a second random sample; each step assigns a batch
//! to its nearest centres and moves every centre to the running mean of all the points it has
//! been given (per-centre learning rate 1 / count); centres whose count falls below
//! `reassignment_ratio` × the largest are re-seeded from random batch points, every
//! 10·k processed points or whenever a centre has none; the run stops on the centres' squared
//! movement ≤ tol × mean feature variance (when tol > 0) or when the smoothed batch inertia
//! has not improved for `max_no_improvement` steps; a final pass gives every point's label and
//! the inertia (sum of squared distances).
//!
//! Deliberate difference, for streaming: scikit-learn draws every batch uniformly with
//! replacement from the whole array. Here an epoch visits the data in chunks of
//! `chunk_size` rows in a random order, and each chunk's rows in a random order, in batches of
//! `batch_size`: every point is seen once per epoch and only one chunk is in memory. As in
//! scikit-learn, a run makes at most ⌊max_iter · n / batch_size⌋ steps (the last epoch may stop
//! short) and `n_iter` counts the epochs started, ⌈steps · batch_size / n⌉. The same
//! seed gives the same result for data in memory and for the same data in a file, and for any
//! thread count.
//!
//! Distributed (a communicator from [`MiniBatchKMeans::communicator`]): every process holds a
//! contiguous slice of the rows and draws the same epoch order over all rows; each process
//! assigns the batch rows it holds, then the rows with their labels and distances are gathered
//! in batch order on every process (about `batch_size × (d + 2)` values received per step), so
//! each process makes the same update and the result equals one process's bit for bit; the
//! variance scan and the final labelling, the passes over all rows, are split.

use crate::backend::{AnyBackend, Backend};
use crate::comm::SingleProcess;
use crate::comm::{agree, share_rows, single_process, Communicator, Partition, SharedComm};
use crate::data::validate::{
    check_extents_global, check_new_points, check_slice, column_extents, merge_extents, Arithmetic,
};
use crate::data::{CsrView, NpyRows};
use crate::error::{Error, Result};
use crate::estimator::shared_setters;
use crate::estimator::{Clustering, Fit, Predict, Progress, ProgressFn};
use crate::kmeans::init::greedy_kmeans_plus_plus_of;
use crate::kmeans::points::{OwnedPoints, Points};
use crate::kmeans::{random_rows, KMeansInit};
use crate::memory::{check_fit, product, MemoryEstimate};
use crate::model_file::{SaveLoad, StoredArray};
use crate::rng::SeededRng;
use crate::scalar::Scalar;
use ndarray::{s, Array2, ArrayView1, ArrayView2, Axis, CowArray, Ix2};
use rand::seq::SliceRandom;
use rand::SeedableRng;

/// Rows that mini-batch k-means reads in chunks: a matrix in memory or .npy files.
pub trait RowSource<F: Scalar>: Sync {
    /// Number of rows.
    fn nrows(&self) -> usize;
    /// Number of columns.
    fn ncols(&self) -> usize;
    /// Rows `start..end`, a view where possible (a file's rows are read into memory, and
    /// freed when the chunk is dropped).
    fn chunk(&self, start: usize, end: usize) -> Result<CowArray<'_, F, Ix2>>;
}

impl<F: Scalar> RowSource<F> for ArrayView2<'_, F> {
    fn nrows(&self) -> usize {
        ArrayView2::nrows(self)
    }
    fn ncols(&self) -> usize {
        ArrayView2::ncols(self)
    }
    fn chunk(&self, start: usize, end: usize) -> Result<CowArray<'_, F, Ix2>> {
        Ok(crate::data::standard_layout(self.slice(s![start..end, ..])))
    }
}

impl<F: Scalar> RowSource<F> for NpyRows {
    fn nrows(&self) -> usize {
        NpyRows::nrows(self)
    }
    fn ncols(&self) -> usize {
        NpyRows::ncols(self)
    }
    fn chunk(&self, start: usize, end: usize) -> Result<CowArray<'_, F, Ix2>> {
        Ok(CowArray::from(NpyRows::rows_unchecked(self, start, end)?))
    }
}

/// Parameters of mini-batch k-means (the estimator).
///
/// ```
/// use clustr::prelude::*;
/// let x = clustr::datasets::load("iris")?.data;
/// let model = clustr::kmeans::MiniBatchKMeans::new(3).batch_size(32).seed(1).fit(&x.view())?;
/// assert_eq!(model.predict(&x.view())?, model.labels);
/// # Ok::<(), clustr::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct MiniBatchKMeans {
    /// Number of clusters.
    pub k: usize,
    /// Initialisation (k-means++ on a sample, random sample points, or given centres).
    pub init: KMeansInit,
    /// Points per step (default 1024).
    pub batch_size: usize,
    /// Maximum epochs (passes over the data; default 100).
    pub max_iter: usize,
    /// Relative tolerance on the centres' squared movement per step (default 0: off).
    pub tol: f64,
    /// Stop after this many steps without improvement of the smoothed inertia (default 10;
    /// `None`: off).
    pub max_no_improvement: Option<usize>,
    /// Rows sampled for the initialisation (default 3 × batch_size; 3k when below k).
    pub init_size: Option<usize>,
    /// Initialisations tried, the best kept by inertia on a sample (default 1, or 3 for random).
    pub n_init: Option<usize>,
    /// Centres with fewer than this fraction of the largest count are re-seeded (default 0.01).
    pub reassignment_ratio: f64,
    /// Rows per chunk of the epoch order (default: 64 MiB of rows, a multiple of batch_size).
    pub chunk_size: Option<usize>,
    /// Seed.
    pub seed: u64,
    /// Progress callback (after each epoch, with the smoothed batch inertia per point).
    pub progress: Option<ProgressFn>,
    /// The processes of a distributed run (default: this one alone).
    pub comm: SharedComm,
    /// Where the nearest centres of the batches and of the final pass are found (default:
    /// the CPU).
    pub backend: AnyBackend,
    /// The weight of each point (scikit-learn's `sample_weight`; default all 1), as in
    /// [`crate::kmeans::KMeans`]: seeding on the sample ∝ weight, each centre the running
    /// weighted mean of its points (learning rate w / total weight), re-seeding by total
    /// weight, weighted inertias. For [`MiniBatchKMeans::partial_fit`], the first batch's
    /// weights. Not available in a distributed run.
    pub sample_weight: Option<Vec<f64>>,
}

impl MiniBatchKMeans {
    /// Mini-batch k-means with scikit-learn's defaults.
    pub fn new(k: usize) -> Self {
        MiniBatchKMeans {
            k,
            init: KMeansInit::KMeansPlusPlus,
            batch_size: 1024,
            max_iter: 100,
            tol: 0.0,
            max_no_improvement: Some(10),
            init_size: None,
            n_init: None,
            reassignment_ratio: 0.01,
            chunk_size: None,
            seed: 0,
            progress: None,
            comm: single_process(),
            backend: AnyBackend::default(),
            sample_weight: None,
        }
    }
    /// The weight of each point.
    pub fn sample_weight(mut self, w: Vec<f64>) -> Self {
        self.sample_weight = Some(w);
        self
    }
    /// Initialisation.
    pub fn init(mut self, init: KMeansInit) -> Self {
        self.init = init;
        self
    }
    /// Points per step.
    pub fn batch_size(mut self, b: usize) -> Self {
        self.batch_size = b;
        self
    }
    /// Maximum epochs.
    pub fn max_iter(mut self, m: usize) -> Self {
        self.max_iter = m;
        self
    }
    /// Relative tolerance on the centres' movement.
    pub fn tol(mut self, t: f64) -> Self {
        self.tol = t;
        self
    }
    /// Steps without improvement before stopping (`None`: never).
    pub fn max_no_improvement(mut self, m: Option<usize>) -> Self {
        self.max_no_improvement = m;
        self
    }
    /// Rows sampled for the initialisation.
    pub fn init_size(mut self, s: usize) -> Self {
        self.init_size = Some(s);
        self
    }
    /// Initialisations tried.
    pub fn n_init(mut self, n: usize) -> Self {
        self.n_init = Some(n);
        self
    }
    /// Re-seeding threshold.
    pub fn reassignment_ratio(mut self, r: f64) -> Self {
        self.reassignment_ratio = r;
        self
    }
    /// Rows per chunk.
    pub fn chunk_size(mut self, c: usize) -> Self {
        self.chunk_size = Some(c);
        self
    }

    fn validate(&self, n: usize, d: usize) -> Result<()> {
        if n == 0 || d == 0 {
            return Err(Error::EmptyInput {
                what: format!("data has {n} rows and {d} columns"),
            });
        }
        crate::data::validate::check_k(self.k, n)?;
        if self.batch_size == 0 {
            return Err(Error::param("batch_size", 0, "at least one point per step"));
        }
        if self.n_init == Some(0) {
            return Err(Error::param("n_init", 0, "at least one initialisation"));
        }
        if !(self.tol >= 0.0 && self.tol.is_finite()) {
            return Err(Error::param("tol", self.tol, "must be finite and non-negative"));
        }
        if !(0.0..=1.0).contains(&self.reassignment_ratio) {
            return Err(Error::param(
                "reassignment_ratio",
                self.reassignment_ratio,
                "must be in [0, 1]",
            ));
        }
        if self.chunk_size == Some(0) {
            return Err(Error::param("chunk_size", 0, "at least one row"));
        }
        if let Some(w) = &self.sample_weight {
            crate::data::validate::check_sample_weight(w, n, false)?;
            crate::data::validate::check_positive_weights(w, self.k)?;
        }
        self.init.check(self.k, d)
    }

    fn chunk_rows<F: Scalar>(&self, d: usize) -> usize {
        let b = self.batch_size;
        let rows = self
            .chunk_size
            .unwrap_or_else(|| (64 << 20) / (d * std::mem::size_of::<F>()).max(1));
        (rows / b * b).max(b)
    }

    /// Initial centres from a sample of rows (`sample` holds the sample, `w` their weights).
    fn init_centers<F: Scalar, X: Points<F>>(
        &self,
        sample: X,
        w: Option<&[f64]>,
        rng: &mut SeededRng,
    ) -> Result<Array2<F>> {
        let part = Partition {
            offset: 0,
            n_global: sample.nrows(),
        };
        let idx = match &self.init {
            KMeansInit::Given(c) => return Ok(c.mapv(F::from_f64_lossy)),
            KMeansInit::KMeansPlusPlus => {
                greedy_kmeans_plus_plus_of(sample, w, self.k, rng, part, &SingleProcess)?
            }
            KMeansInit::Random => random_rows(rng, sample.nrows(), self.k, w)?,
        };
        Ok(sample.fetch(part, &idx, &SingleProcess))
    }

    /// The weights of rows `idx` of this process (`None` without sample weights).
    fn weights_of(&self, idx: &[usize]) -> Option<Vec<f64>> {
        self.sample_weight
            .as_ref()
            .map(|w| idx.iter().map(|&i| w[i]).collect())
    }

    /// Fits on any row source (streamed chunk by chunk); in a distributed run, on this
    /// process's rows (labels are those of its rows).
    pub fn fit_source<F: Scalar, S: RowSource<F>>(&self, src: &S) -> Result<MiniBatchKMeansModel<F>> {
        self.with_scaled_weights(|est| est.fit_scaled(src))
    }

    /// `fit` run with the sample weights in their overflow-safe form (the largest in [1, 2)),
    /// the model's totals scaled back.
    fn with_scaled_weights<F: Scalar>(
        &self,
        fit: impl FnOnce(&Self) -> Result<MiniBatchKMeansModel<F>>,
    ) -> Result<MiniBatchKMeansModel<F>> {
        let Some(w) = self.sample_weight.as_deref() else {
            return fit(self);
        };
        let scaled = crate::data::validate::ScaledWeights::new(w);
        let mut with_scaled = self.clone();
        with_scaled.sample_weight = Some(scaled.weights.clone());
        let mut model = fit(&with_scaled)?;
        model.inertia = scaled.unscale(model.inertia, "inertia")?;
        for c in model.counts.iter_mut().chain(model.state.counts.iter_mut()) {
            *c = scaled.unscale(*c, "weight of a centre")?;
        }
        Ok(model)
    }

    /// [`Self::fit_source`] with weights whose largest is in [1, 2).
    fn fit_scaled<F: Scalar, S: RowSource<F>>(&self, src: &S) -> Result<MiniBatchKMeansModel<F>> {
        let comm = &*self.comm;
        let (n_local, d) = (src.nrows(), src.ncols());
        let part = Partition::of(n_local, comm);
        let n = part.n_global;
        if self.sample_weight.is_some() && comm.size() > 1 {
            return Err(Error::param(
                "sample_weight",
                "given",
                "not available in a distributed run",
            ));
        }
        agree(self.validate(n, d), comm)?;
        let w = self.sample_weight.as_deref();
        agree(
            check_fit(
                self,
                "mini-batch k-means",
                n_local,
                d,
                size_of::<F>(),
                crate::error::hints::MINIBATCH,
            ),
            comm,
        )?;
        let chunk = self.chunk_rows::<F>(d);
        let tol = self.tol * scan(src, chunk, part, comm)?;
        let mut rng = SeededRng::seed_from_u64(self.seed);
        let batch = self.batch_size.min(n);
        let init_size = self.init_rows(n, batch);
        let centers = self.initial_centers(|rng| read_sample(src, part, comm, rng, init_size), &mut rng)?;
        let backend = self.backend.clone();
        let mut state = Stepper::new(centers, self.reassignment_ratio, rng);
        let mut conv = Convergence::new(self.max_no_improvement, tol, batch, n);
        let mine = part.offset..part.offset + n_local;
        let read = |lo: usize, hi: usize| {
            // Global rows lo..hi; this process holds lo_l..hi_l of them (maybe none).
            let lo_l = lo.clamp(mine.start, mine.end);
            let hi_l = hi.clamp(lo_l, mine.end);
            Ok((src.chunk(lo_l - part.offset, hi_l - part.offset)?, lo_l, hi_l))
        };
        let step =
            |state: &mut Stepper<F>, (rows, lo_l, hi_l): &(CowArray<F, Ix2>, usize, usize), idx: &[usize]| {
                let held: Vec<usize> = idx
                    .iter()
                    .filter(|i| (*lo_l..*hi_l).contains(i))
                    .map(|i| i - lo_l)
                    .collect();
                // Each process assigns the batch rows it holds; rows, labels and distances are
                // then gathered in batch order (exactly, as f64) on every process.
                let held_rows = rows.select(Axis(0), &held);
                let (labels, dists) = nearest(&backend, held_rows.view(), &state.centers)?;
                let mut ext = Array2::<f64>::zeros((held.len(), d + 3));
                for (r, mut e) in ext.rows_mut().into_iter().enumerate() {
                    e.iter_mut()
                        .zip(held_rows.row(r))
                        .for_each(|(e, v)| *e = v.to_f64_exact());
                    (e[d], e[d + 1]) = (labels[r] as f64, dists[r]);
                    e[d + 2] = w.map_or(1.0, |w| w[lo_l - part.offset + held[r]]);
                }
                let all = share_rows(ext.view(), part, n_local, idx, comm);
                let b = all.slice(s![.., ..d]).mapv(F::from_f64_lossy);
                let labels = all.column(d).iter().map(|&v| v as i64).collect();
                let random_reassign = state.random_reassign(batch);
                Ok(state.apply(
                    b.view(),
                    labels,
                    all.column(d + 1),
                    all.column(d + 2),
                    random_reassign,
                ))
            };
        let converged = self.run_epochs(n, chunk, batch, &mut state, &mut conv, read, step)?;
        // The final assignment of every point.
        let (labels, inertia) = final_assignment(&backend, src, chunk, w, &state.centers, comm)?;
        Ok(MiniBatchKMeansModel::fitted(
            state, labels, inertia, conv.steps, batch, n, converged,
        ))
    }

    /// Rows of the initialisation sample, at most n: `init_size`, or by default 3 × the batch
    /// size; 3k when that is fewer than k (as scikit-learn, which warns when a given
    /// `init_size` is below k).
    fn init_rows(&self, n: usize, batch: usize) -> usize {
        let size = self.init_size.unwrap_or(3 * batch);
        if size < self.k { 3 * self.k } else { size }.min(n)
    }

    /// The epochs' schedule (see the module comment): the chunks of `chunk` rows in a random
    /// order, each chunk's rows in a random order, in batches of `batch`. `read` gives the
    /// chunk of global rows lo..hi; `step` makes one step on the batch of the given global
    /// rows of that chunk and returns the batch inertia and the centres' squared movement.
    /// At most ⌊max_iter · n / batch⌋ steps (scikit-learn's count: `max_iter` epochs' worth
    /// of rows, so the last epoch may stop short). Returns whether a stopping rule ended the
    /// run.
    #[allow(clippy::too_many_arguments)]
    fn run_epochs<F: Scalar, C>(
        &self,
        n: usize,
        chunk: usize,
        batch: usize,
        state: &mut Stepper<F>,
        conv: &mut Convergence,
        mut read: impl FnMut(usize, usize) -> Result<C>,
        mut step: impl FnMut(&mut Stepper<F>, &C, &[usize]) -> Result<(f64, f64)>,
    ) -> Result<bool> {
        let n_chunks = n.div_ceil(chunk);
        let max_steps = self.max_iter.saturating_mul(n) / batch.max(1);
        let mut steps = 0;
        for epoch in 0..self.max_iter {
            let mut order: Vec<usize> = (0..n_chunks).collect();
            order.shuffle(&mut state.rng);
            for c in order {
                let (lo, hi) = (c * chunk, ((c + 1) * chunk).min(n));
                let rows = read(lo, hi)?;
                let mut perm: Vec<usize> = (lo..hi).collect();
                perm.shuffle(&mut state.rng);
                for idx in perm.chunks(batch) {
                    let (inertia, shift) = step(state, &rows, idx)?;
                    if let Some(reason) = conv.done(inertia, shift) {
                        if let Some(p) = &self.progress {
                            p.phase(&format!("Converged ({reason}) at step {}/{max_steps}", steps + 1));
                        }
                        return Ok(true);
                    }
                    steps += 1;
                    if steps >= max_steps {
                        return Ok(false);
                    }
                }
            }
            if let Some(p) = &self.progress {
                p.report(&Progress {
                    iteration: epoch + 1,
                    max_iter: Some(self.max_iter),
                    objective: conv.ewa,
                })?;
            }
        }
        Ok(false)
    }

    /// The best of `n_init` starts (by inertia on one validation sample of `init_size` rows),
    /// each from its own sample of `init_size` rows.
    /// `draw` gives a sample of rows (in their own form) and their global indices.
    fn initial_centers<F: Scalar, P: OwnedPoints<F>>(
        &self,
        mut draw: impl FnMut(&mut SeededRng) -> Result<(P, Vec<usize>)>,
        rng: &mut SeededRng,
    ) -> Result<Array2<F>> {
        let (validation, validation_idx) = draw(rng)?;
        let validation_w = self.weights_of(&validation_idx);
        let n_init = match (&self.init, self.n_init) {
            (_, Some(r)) => r,
            (KMeansInit::Random, None) => 3,
            _ => 1,
        };
        let backend = &self.backend;
        let mut best: Option<(Array2<F>, f64)> = None;
        for _ in 0..n_init {
            let (sample, idx) = draw(rng)?;
            let centers = self.init_centers(sample.points(), self.weights_of(&idx).as_deref(), rng)?;
            let inertia = batch_inertia(backend, validation.points(), validation_w.as_deref(), &centers)?.1;
            if best.as_ref().is_none_or(|b| inertia < b.1) {
                best = Some((centers, inertia));
            }
        }
        Ok(best.expect("n_init >= 1").0)
    }

    /// Streams a .npy file or a folder of .npy shards ([`NpyRows`]; C order, so that a chunk
    /// of rows is a contiguous range); the files' pages are dropped from memory after each
    /// chunk. In a distributed run, `rows` is this process's window.
    pub fn fit_npy<F: Scalar>(&self, rows: &NpyRows) -> Result<MiniBatchKMeansModel<F>> {
        if !rows.c_order() {
            return Err(Error::Unsupported(
                "streaming needs a C-order .npy (rows contiguous); convert it with numpy.ascontiguousarray"
                    .into(),
            ));
        }
        self.fit_source(rows)
    }

    /// Starts incremental fitting on a first batch (scikit-learn's first `partial_fit` call):
    /// initial centres from the batch (which needs at least k rows), then one step.
    pub fn partial_fit<F: Scalar>(&self, batch: ArrayView2<F>) -> Result<MiniBatchKMeansModel<F>> {
        crate::data::validate::check_points(batch)?;
        self.start(crate::data::standard_layout(batch).view())
    }

    /// [`MiniBatchKMeans::partial_fit`] on sparse rows.
    pub fn partial_fit_sparse<F: Scalar>(&self, batch: CsrView<F>) -> Result<MiniBatchKMeansModel<F>> {
        self.start(batch)
    }

    fn start<F: Scalar, X: Points<F>>(&self, batch: X) -> Result<MiniBatchKMeansModel<F>> {
        self.validate(batch.nrows(), batch.ncols())?;
        let mut rng = SeededRng::seed_from_u64(self.seed);
        let init_size = self.init_rows(batch.nrows(), self.batch_size.min(batch.nrows()));
        let idx = rand::seq::index::sample(&mut rng, batch.nrows(), init_size).into_vec();
        let sample_w = self.weights_of(&idx);
        let centers = self.init_centers(batch.subset(&idx).points(), sample_w.as_deref(), &mut rng)?;
        let state = Stepper::new(centers, self.reassignment_ratio, rng);
        let mut model = MiniBatchKMeansModel::fitted(state, Vec::new(), 0.0, 0, 1, 1, false);
        model.step_on(batch, self.sample_weight.as_deref())?;
        Ok(model)
    }
}

shared_setters!(MiniBatchKMeans {
    backend("Here it runs the nearest-centre searches."),
    communicator("The source then holds this process's slice of the rows."),
    seed,
    progress,
});

/// One pass over the source: every value finite (errors name the row in the whole data), and
/// the mean over features of the population variance (scikit-learn's `_tolerance` scale),
/// with chunk results merged by Chan et al.'s formula in chunk order, then over the
/// processes in rank order.
fn scan<F: Scalar, S: RowSource<F>>(
    src: &S,
    chunk: usize,
    part: Partition,
    comm: &dyn Communicator,
) -> Result<f64> {
    let d = src.ncols();
    let mut stats = vec![0.0; 1 + 2 * d]; // count, means, sums of squared deviations
    let mut extents = vec![(f64::INFINITY, f64::NEG_INFINITY); d];
    let local = (|| {
        let n = src.nrows();
        for lo in (0..n).step_by(chunk) {
            let hi = (lo + chunk).min(n);
            let rows = src.chunk(lo, hi)?;
            check_slice(rows.view(), part.offset + lo, part.n_global)?;
            merge_extents(&mut extents, &column_extents(rows.view()));
            let m = (hi - lo) as f64;
            let mut part_stats = vec![m];
            for j in 0..d {
                let col = rows.column(j);
                part_stats.push(col.iter().map(|v| v.to_f64_exact()).sum::<f64>() / m);
            }
            for j in 0..d {
                let cm = part_stats[1 + j];
                part_stats.push(
                    rows.column(j)
                        .iter()
                        .map(|v| (v.to_f64_exact() - cm).powi(2))
                        .sum(),
                );
            }
            merge_moments(&mut stats, &part_stats);
        }
        Ok(())
    })();
    agree(local, comm)?;
    check_extents_global::<F>(
        &extents,
        part.n_global,
        Arithmetic::SQUARES,
        "mini-batch k-means",
        comm,
    )?;
    let all = comm.all_gather_f64(&stats);
    let mut total = vec![0.0; 1 + 2 * d];
    for p in all.chunks(1 + 2 * d) {
        merge_moments(&mut total, p);
    }
    Ok(total[1 + d..].iter().map(|v| v / total[0]).sum::<f64>() / d as f64)
}

/// Chan et al.'s merge of (count, means, sums of squared deviations) into `acc`.
fn merge_moments(acc: &mut [f64], part: &[f64]) {
    let d = (acc.len() - 1) / 2;
    let (count, m) = (acc[0], part[0]);
    if m == 0.0 {
        return;
    }
    let total = count + m;
    for j in 0..d {
        let delta = part[1 + j] - acc[1 + j];
        acc[1 + j] += delta * m / total;
        acc[1 + d + j] += part[1 + d + j] + delta * delta * count * m / total;
    }
    acc[0] = total;
}

/// `size` distinct rows drawn at random from all processes' rows, in increasing row order, on
/// every process; with their global indices.
fn read_sample<F: Scalar, S: RowSource<F>>(
    src: &S,
    part: Partition,
    comm: &dyn Communicator,
    rng: &mut SeededRng,
    size: usize,
) -> Result<(Array2<F>, Vec<usize>)> {
    let mut idx = rand::seq::index::sample(rng, part.n_global, size).into_vec();
    idx.sort_unstable();
    let held = part.held(src.nrows(), &idx);
    let mut rows = Array2::<F>::zeros((held.len(), src.ncols()));
    for (r, &i) in held.iter().enumerate() {
        rows.row_mut(r).assign(&src.chunk(i, i + 1)?.row(0));
    }
    Ok((share_rows(rows.view(), part, src.nrows(), &idx, comm), idx))
}

/// Nearest-centre labels of `x` and their (weighted) inertia.
fn batch_inertia<F: Scalar, X: Points<F>>(
    backend: &AnyBackend,
    x: X,
    w: Option<&[f64]>,
    centers: &Array2<F>,
) -> Result<(Vec<i64>, f64)> {
    let (labels, dists) = nearest(backend, x, centers)?;
    let inertia = match w {
        None => dists.iter().sum(),
        Some(w) => dists.iter().zip(w).map(|(d, w)| d * w).sum(),
    };
    Ok((labels, inertia))
}

/// Nearest-centre labels of `x` and the squared distances to them.
fn nearest<F: Scalar, X: Points<F>>(
    backend: &AnyBackend,
    x: X,
    centers: &Array2<F>,
) -> Result<(Vec<i64>, Vec<f64>)> {
    Ok(x.nearest(backend, centers)?
        .into_iter()
        .map(|m| (m.index as i64, m.distance.to_f64_exact()))
        .unzip())
}

/// The state the steps carry: centres, counts, the re-seeding clock and the generator.
#[derive(Clone, Debug, PartialEq)]
struct Stepper<F> {
    centers: Array2<F>,
    counts: Vec<f64>,
    reassignment_ratio: f64,
    since_reassign: usize,
    rng: SeededRng,
    labels: Vec<i64>,
}

impl<F: Scalar> Stepper<F> {
    fn new(centers: Array2<F>, reassignment_ratio: f64, rng: SeededRng) -> Self {
        let k = centers.nrows();
        Stepper {
            centers,
            counts: vec![0.0; k],
            reassignment_ratio,
            since_reassign: 0,
            rng,
            labels: Vec::new(),
        }
    }

    /// scikit-learn's `_random_reassign`: every 10·k processed points, or while a centre has
    /// no points.
    fn random_reassign(&mut self, batch_size: usize) -> bool {
        self.since_reassign += batch_size;
        if self.counts.contains(&0.0) || self.since_reassign >= 10 * self.centers.nrows() {
            self.since_reassign = 0;
            return true;
        }
        false
    }

    /// One mini-batch step (scikit-learn's `_mini_batch_step`) on rows `x` of weights `w`:
    /// returns the batch inertia before the update and the centres' squared movement.
    fn step<X: Points<F>>(
        &mut self,
        backend: &AnyBackend,
        x: X,
        w: ArrayView1<f64>,
        random_reassign: bool,
    ) -> Result<(f64, f64)> {
        let (labels, dists) = nearest(backend, x, &self.centers)?;
        Ok(self.apply(x, labels, ArrayView1::from(&dists), w, random_reassign))
    }

    /// The update of [`Stepper::step`] given the batch's nearest centres, their squared
    /// distances and the rows' weights. Each centre given points moves to the running mean
    /// (its sums over the batch taken in batch order); a re-seeded centre becomes its batch
    /// row instead. Only the centres that change are touched (no k × d work or memory per
    /// step beyond them).
    fn apply<X: Points<F>>(
        &mut self,
        x: X,
        labels: Vec<i64>,
        dists: ArrayView1<f64>,
        w: ArrayView1<f64>,
        random_reassign: bool,
    ) -> (f64, f64) {
        let (k, d) = self.centers.dim();
        let inertia = dists.iter().zip(w).map(|(d, w)| d * w).sum();
        // The batch's rows grouped by centre, in batch order.
        let mut added = vec![0.0f64; k];
        let mut start = vec![0usize; k + 1];
        for (&l, &wi) in labels.iter().zip(w) {
            added[l as usize] += wi;
            start[l as usize + 1] += 1;
        }
        for c in 0..k {
            start[c + 1] += start[c];
        }
        let mut next = start.clone();
        let mut members = vec![0usize; labels.len()];
        for (r, &l) in labels.iter().enumerate() {
            members[next[l as usize]] = r;
            next[l as usize] += 1;
        }
        let old_counts = self.counts.clone();
        for c in (0..k).filter(|&c| added[c] > 0.0) {
            self.counts[c] += added[c];
        }
        let reseeded = if random_reassign && self.reassignment_ratio > 0.0 {
            self.reseed(x.nrows())
        } else {
            vec![None; k]
        };
        // New centres, and their squared movement summed in centre and feature order.
        let (mut shift, mut sums, mut row) = (0.0, vec![0.0f64; d], vec![F::zero(); d]);
        for c in 0..k {
            if let Some(r) = reseeded[c] {
                x.copy_row(r, &mut row);
            } else if added[c] > 0.0 {
                sums.fill(0.0);
                for &r in &members[start[c]..start[c + 1]] {
                    x.add_row(r, w[r], &mut sums);
                }
                let total = old_counts[c] + added[c];
                for ((v, &o), &s) in row.iter_mut().zip(self.centers.row(c)).zip(&sums) {
                    *v = F::from_f64_lossy((o.to_f64_exact() * old_counts[c] + s) / total);
                }
            } else {
                continue;
            }
            for (o, &v) in self.centers.row_mut(c).iter_mut().zip(&row) {
                shift += (v.to_f64_exact() - o.to_f64_exact()).powi(2);
                *o = v;
            }
        }
        self.labels = labels;
        (inertia, shift)
    }

    /// The centres to re-seed: those whose count is below `reassignment_ratio` × the largest
    /// (at most half the batch of `batch_rows` rows, the lowest counts first), each given a
    /// distinct random batch row; their counts become the smallest count of the others.
    fn reseed(&mut self, batch_rows: usize) -> Vec<Option<usize>> {
        let k = self.counts.len();
        let max = self.counts.iter().copied().fold(0.0, f64::max);
        let mut low: Vec<bool> = self
            .counts
            .iter()
            .map(|&c| c < self.reassignment_ratio * max)
            .collect();
        let cap = batch_rows / 2;
        if low.iter().filter(|&&l| l).count() > cap {
            let mut order: Vec<usize> = (0..k).collect();
            order.sort_by(|&a, &b| self.counts[a].total_cmp(&self.counts[b]).then(a.cmp(&b)));
            for &c in &order[cap..] {
                low[c] = false;
            }
        }
        let mut reseeded = vec![None; k];
        let chosen: Vec<usize> = (0..k).filter(|&c| low[c]).collect();
        if chosen.is_empty() {
            return reseeded;
        }
        let rows = rand::seq::index::sample(&mut self.rng, batch_rows, chosen.len()).into_vec();
        for (&c, &r) in chosen.iter().zip(&rows) {
            reseeded[c] = Some(r);
        }
        let floor = (0..k)
            .filter(|&c| !low[c])
            .map(|c| self.counts[c])
            .fold(f64::INFINITY, f64::min);
        for &c in &chosen {
            self.counts[c] = floor;
        }
        reseeded
    }
}

/// scikit-learn's `_mini_batch_convergence`: an exponentially weighted average of the mean
/// batch inertia, stopping on no improvement or on small centre movement.
#[derive(Clone, Debug)]
struct Convergence {
    max_no_improvement: Option<usize>,
    tol: f64,
    batch_size: usize,
    n: usize,
    steps: usize,
    ewa: Option<f64>,
    ewa_min: Option<f64>,
    no_improvement: usize,
}

impl Convergence {
    fn new(max_no_improvement: Option<usize>, tol: f64, batch_size: usize, n: usize) -> Self {
        Convergence {
            max_no_improvement,
            tol,
            batch_size,
            n,
            steps: 0,
            ewa: None,
            ewa_min: None,
            no_improvement: 0,
        }
    }

    /// Whether the run has converged after this step, and why (scikit-learn's words).
    fn done(&mut self, batch_inertia: f64, shift: f64) -> Option<&'static str> {
        let mean = batch_inertia / self.batch_size as f64;
        self.steps += 1;
        if self.steps == 1 {
            return None;
        }
        let alpha = (self.batch_size as f64 * 2.0 / (self.n as f64 + 1.0)).min(1.0);
        let ewa = self.ewa.map_or(mean, |e| e * (1.0 - alpha) + mean * alpha);
        self.ewa = Some(ewa);
        if self.tol > 0.0 && shift <= self.tol {
            return Some("small centers change");
        }
        if self.ewa_min.is_none_or(|m| ewa < m) {
            self.no_improvement = 0;
            self.ewa_min = Some(ewa);
        } else {
            self.no_improvement += 1;
        }
        self.max_no_improvement
            .is_some_and(|m| self.no_improvement >= m)
            .then_some("lack of improvement in inertia")
    }
}

/// A fitted mini-batch k-means model; `partial_fit` continues it.
#[derive(Clone, Debug, PartialEq)]
pub struct MiniBatchKMeansModel<F> {
    /// Centres, k × d.
    pub centers: Array2<F>,
    /// Total weight of the points each centre has been given (their number without sample
    /// weights; scikit-learn's `_counts`).
    pub counts: Vec<f64>,
    /// Label of each point after `fit`; of the last batch after `partial_fit`.
    pub labels: Vec<i64>,
    /// Sum of squared distances of those points to their centres.
    pub inertia: f64,
    /// Epochs started (scikit-learn's `n_iter_`).
    pub n_iter: usize,
    /// Mini-batch steps run.
    pub n_steps: usize,
    /// Whether a stopping rule ended the run before `max_iter` epochs.
    pub converged: bool,
    state: Stepper<F>,
}

impl<F: Scalar> MiniBatchKMeansModel<F> {
    /// The model of a run's state after `n_steps` steps of `batch` rows over `n` rows.
    fn fitted(
        state: Stepper<F>,
        labels: Vec<i64>,
        inertia: f64,
        n_steps: usize,
        batch: usize,
        n: usize,
        converged: bool,
    ) -> Self {
        MiniBatchKMeansModel {
            centers: state.centers.clone(),
            counts: state.counts.clone(),
            labels,
            inertia,
            n_iter: (n_steps * batch).div_ceil(n),
            n_steps,
            converged,
            state,
        }
    }

    /// One more step on `batch` (scikit-learn's later `partial_fit` calls): labels and inertia
    /// become the batch's.
    pub fn partial_fit(&mut self, batch: ArrayView2<F>) -> Result<()> {
        self.partial_fit_weighted(batch, None)
    }

    /// [`MiniBatchKMeansModel::partial_fit`] with the weights of the batch's rows.
    pub fn partial_fit_weighted(&mut self, batch: ArrayView2<F>, w: Option<&[f64]>) -> Result<()> {
        crate::data::validate::check_points(batch)?;
        check_new_points(
            batch,
            self.centers.view(),
            Arithmetic::SQUARES,
            "mini-batch k-means",
        )?;
        self.step_on(crate::data::standard_layout(batch).view(), w)
    }

    /// [`MiniBatchKMeansModel::partial_fit_weighted`] on sparse rows.
    pub fn partial_fit_sparse(&mut self, batch: CsrView<F>, w: Option<&[f64]>) -> Result<()> {
        super::sparse::check_rows(&self.centers, batch)?;
        self.step_on(batch, w)
    }

    /// One step on checked rows; the model unchanged when it fails.
    fn step_on<X: Points<F>>(&mut self, batch: X, w: Option<&[f64]>) -> Result<()> {
        crate::data::validate::check_same_len("number of features", self.centers.ncols(), batch.ncols())?;
        let ones;
        let w = match w {
            Some(w) => {
                crate::data::validate::check_sample_weight(w, batch.nrows(), false)?;
                ArrayView1::from(w)
            }
            None => {
                ones = ndarray::Array1::ones(batch.nrows());
                ones.view()
            }
        };
        let random_reassign = self.state.random_reassign(batch.nrows());
        let before = self.state.clone();
        let (inertia, _) = self
            .state
            .step(&AnyBackend::default(), batch, w, random_reassign)?;
        let finite = |v: &f64| v.is_finite();
        if !(inertia.is_finite() && self.state.counts.iter().all(finite))
            || self.state.centers.iter().any(|c| !c.to_f64_exact().is_finite())
        {
            self.state = before;
            return Err(Error::OutOfRange(
                "the sample weights of the batches so far add up beyond the largest number \
                 (f64::MAX): divide them by a constant; the model is as before this batch"
                    .into(),
            ));
        }
        self.centers = self.state.centers.clone();
        self.counts = self.state.counts.clone();
        self.labels = std::mem::take(&mut self.state.labels);
        self.inertia = inertia;
        self.n_steps += 1;
        Ok(())
    }

    /// Euclidean distance of each point to each centre (n × k).
    pub fn transform(&self, x: ArrayView2<F>) -> Result<Array2<F>> {
        super::centre_distances(x, self.centers.view())
    }

    /// Euclidean distance of each sparse row to each centre (n × k).
    pub fn transform_sparse(&self, x: CsrView<F>) -> Result<Array2<F>> {
        super::sparse::check_rows(&self.centers, x)?;
        Ok(super::sparse::transform(&self.centers, x))
    }
}

/// The stored form of a mini-batch k-means model: the centres and their counts (so
/// `partial_fit` can continue a loaded model) and the fit's summary.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct StoredMiniBatchKMeans {
    centers: StoredArray,
    counts: Vec<f64>,
    inertia: f64,
    n_iter: usize,
    n_steps: usize,
    converged: bool,
    reassignment_ratio: f64,
}

impl<F: Scalar> SaveLoad for MiniBatchKMeansModel<F> {
    const ALGORITHM: &'static str = "minibatch-kmeans";
    type Stored = StoredMiniBatchKMeans;
    fn to_stored(&self) -> StoredMiniBatchKMeans {
        StoredMiniBatchKMeans {
            centers: StoredArray::from_array(&self.centers),
            counts: self.counts.clone(),
            inertia: self.inertia,
            n_iter: self.n_iter,
            n_steps: self.n_steps,
            converged: self.converged,
            reassignment_ratio: self.state.reassignment_ratio,
        }
    }
    /// The model without training labels; a later `partial_fit` continues from the stored
    /// centres and counts, its re-seeding draws starting from seed 0.
    fn from_stored(s: StoredMiniBatchKMeans) -> Result<Self> {
        let centers = crate::kmeans::checked_centers::<F>(&s.centers)?;
        let mut model = MiniBatchKMeansModel::from_parts(centers, s.counts, s.reassignment_ratio, 0, 0)
            .map_err(|e| match e {
                Error::Unsupported(m) => Error::Unsupported(format!("model file: {m}")),
                e => e,
            })?;
        (model.inertia, model.n_iter, model.n_steps) = (s.inertia, s.n_iter, s.n_steps);
        model.converged = s.converged;
        Ok(model)
    }
}

impl<F: Scalar> MiniBatchKMeansModel<F> {
    /// A model to continue from its parts: the centres, their counts and the points seen since
    /// the last re-seeding check (what a caller keeping the state between `partial_fit` calls
    /// hands back, as the Python package does); its re-seeding draws start from `seed`.
    pub fn from_parts(
        centers: Array2<F>,
        counts: Vec<f64>,
        reassignment_ratio: f64,
        points_since_reassign: usize,
        seed: u64,
    ) -> Result<Self> {
        crate::data::validate::check_same_len("centre counts", centers.nrows(), counts.len())?;
        if let Some(c) = counts.iter().find(|c| !(c.is_finite() && **c >= 0.0)) {
            return Err(Error::Unsupported(format!(
                "centre counts: {c} is not a finite, non-negative weight"
            )));
        }
        if !(0.0..=1.0).contains(&reassignment_ratio) {
            return Err(Error::param(
                "reassignment_ratio",
                reassignment_ratio,
                "must be in [0, 1]",
            ));
        }
        let mut state = Stepper::new(centers, reassignment_ratio, SeededRng::seed_from_u64(seed));
        state.counts = counts;
        state.since_reassign = points_since_reassign;
        Ok(MiniBatchKMeansModel::fitted(
            state,
            Vec::new(),
            0.0,
            0,
            1,
            1,
            false,
        ))
    }

    /// Points given since the last re-seeding check (scikit-learn's `_n_since_last_reassign`).
    pub fn points_since_reassign(&self) -> usize {
        self.state.since_reassign
    }
}

impl<F: Scalar> Clustering for MiniBatchKMeansModel<F> {
    fn labels(&self) -> &[i64] {
        &self.labels
    }
    fn loss(&self) -> Option<f64> {
        Some(self.inertia)
    }
    fn n_iter(&self) -> usize {
        self.n_iter
    }
    fn converged(&self) -> bool {
        self.converged
    }
}

impl<F: Scalar> Predict<ArrayView2<'_, F>> for MiniBatchKMeansModel<F> {
    type Output = Vec<i64>;
    /// The nearest centre of each point.
    fn predict(&self, x: &ArrayView2<'_, F>) -> Result<Vec<i64>> {
        check_new_points(*x, self.centers.view(), Arithmetic::SQUARES, "k-means")?;
        Ok(batch_inertia(&AnyBackend::default(), *x, None, &self.centers)?.0)
    }
}

impl<F: Scalar> Predict<CsrView<'_, F>> for MiniBatchKMeansModel<F> {
    type Output = Vec<i64>;
    /// The nearest centre of each sparse row.
    fn predict(&self, x: &CsrView<'_, F>) -> Result<Vec<i64>> {
        super::sparse::check_rows(&self.centers, *x)?;
        Ok(batch_inertia(&AnyBackend::default(), *x, None, &self.centers)?.0)
    }
}

impl MemoryEstimate for MiniBatchKMeans {
    /// Labels, the initialisation sample with its k-means++ distances, one batch and the
    /// centres with their counts; the data themselves are streamed from a .npy file.
    fn memory_estimate(&self, n: usize, d: usize, elem: usize) -> u64 {
        let init = self.init_rows(n, self.batch_size.min(n));
        let chunk = self
            .chunk_size
            .unwrap_or((64 << 20) / (d * elem).max(1))
            .max(self.batch_size)
            .min(n);
        product(&[n, 8])
            .saturating_add(product(&[init, d + 8, elem]))
            .saturating_add(product(&[chunk, d + 2, elem]))
            .saturating_add(product(&[self.k, d, 8, 4]))
    }
}

impl<F: Scalar> Fit<ArrayView2<'_, F>> for MiniBatchKMeans {
    type Model = MiniBatchKMeansModel<F>;
    fn fit(&self, x: &ArrayView2<'_, F>) -> Result<MiniBatchKMeansModel<F>> {
        self.fit_source(x)
    }
}

impl<F: Scalar> Fit<CsrView<'_, F>> for MiniBatchKMeans {
    type Model = MiniBatchKMeansModel<F>;
    /// Mini-batch k-means on sparse rows in memory, on one process and the CPU: the same
    /// schedule, draws and updates as for the same rows dense (the tolerance's variance with
    /// the implicit zeros); the centres are dense.
    fn fit(&self, x: &CsrView<'_, F>) -> Result<MiniBatchKMeansModel<F>> {
        let x = *x;
        let (n, d) = (x.nrows(), x.ncols());
        if self.comm.size() > 1 {
            return Err(Error::Unsupported(
                "mini-batch k-means on sparse rows runs on one process (a distributed run takes dense rows)"
                    .into(),
            ));
        }
        if self.backend.assigns_off_host() {
            return Err(Error::NotOnDevice(
                "mini-batch k-means on sparse rows runs on the CPU".into(),
            ));
        }
        self.validate(n, d)?;
        crate::data::validate::check_extents::<F>(
            &x.column_extents(),
            n,
            Arithmetic::SQUARES,
            "mini-batch k-means",
        )?;
        crate::memory::check(
            || {
                format!(
                    "mini-batch k-means on {n} sparse rows of {d} columns, k = {}",
                    self.k
                )
            },
            self.sparse_memory_estimate(n, d, x.nnz(), size_of::<F>()),
            crate::error::hints::MINIBATCH,
        )?;
        self.with_scaled_weights(|est| est.fit_sparse_scaled(x))
    }
}

impl MiniBatchKMeans {
    /// [`Fit::fit`] on sparse rows, with weights whose largest is in [1, 2).
    fn fit_sparse_scaled<F: Scalar>(&self, x: CsrView<F>) -> Result<MiniBatchKMeansModel<F>> {
        let n = x.nrows();
        let w = self.sample_weight.as_deref();
        let tol = self.tol * super::sparse::mean_variance(x);
        let mut rng = SeededRng::seed_from_u64(self.seed);
        let batch = self.batch_size.min(n);
        let init_size = self.init_rows(n, batch);
        let sample = |rng: &mut SeededRng| {
            let mut idx = rand::seq::index::sample(rng, n, init_size).into_vec();
            idx.sort_unstable();
            Ok((x.select_rows(&idx), idx))
        };
        let centers = self.initial_centers(sample, &mut rng)?;
        let backend = AnyBackend::default();
        let mut state = Stepper::new(centers, self.reassignment_ratio, rng);
        let mut conv = Convergence::new(self.max_no_improvement, tol, batch, n);
        let step = |state: &mut Stepper<F>, _: &(), idx: &[usize]| {
            let rows = x.select_rows(idx);
            let ones = ndarray::Array1::ones(idx.len());
            let weights = w.map_or(ones, |w| idx.iter().map(|&i| w[i]).collect());
            let random_reassign = state.random_reassign(batch);
            state.step(&backend, rows.view(), weights.view(), random_reassign)
        };
        let chunk = self.chunk_rows::<F>(x.ncols());
        let converged = self.run_epochs(n, chunk, batch, &mut state, &mut conv, |_, _| Ok(()), step)?;
        let (labels, inertia) = batch_inertia(&backend, x, w, &state.centers)?;
        Ok(MiniBatchKMeansModel::fitted(
            state, labels, inertia, conv.steps, batch, n, converged,
        ))
    }

    /// Bytes mini-batch k-means allocates beside sparse rows: per row the label and the final
    /// assignment's (label, distance); the two initialisation samples (their share of the
    /// stored values) with their k-means++ distances; the centres, a copy of them per step,
    /// and their counts.
    pub fn sparse_memory_estimate(&self, n: usize, d: usize, nnz: usize, elem: usize) -> u64 {
        let init = self.init_rows(n, self.batch_size.min(n));
        let per_row = nnz / n.max(1) + 1;
        product(&[n, 8 + 16])
            .saturating_add(product(&[2 * init, per_row, elem + 4]))
            .saturating_add(product(&[init, 8 * 8]))
            .saturating_add(product(&[self.k, d, 3 * elem + 8]))
    }
}

/// Every row's nearest centre and the (weighted) inertia over all processes, chunk by chunk.
fn final_assignment<F: Scalar, S: RowSource<F>>(
    backend: &AnyBackend,
    src: &S,
    chunk: usize,
    w: Option<&[f64]>,
    centers: &Array2<F>,
    comm: &dyn Communicator,
) -> Result<(Vec<i64>, f64)> {
    let n_local = src.nrows();
    let mut labels = Vec::with_capacity(n_local);
    let mut inertia = [0.0];
    for lo in (0..n_local).step_by(chunk) {
        let hi = (lo + chunk).min(n_local);
        let rows = src.chunk(lo, hi)?;
        let (l, i) = batch_inertia(backend, rows.view(), w.map(|w| &w[lo..hi]), centers)?;
        labels.extend(l);
        inertia[0] += i;
    }
    comm.allreduce_sum(&mut inertia);
    Ok((labels, inertia[0]))
}
