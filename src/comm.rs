//! Communicators: how the processes of a distributed run combine their partial results.
//!
//! A distributed algorithm runs the same code on every process (MPI's "rank"), each on its own
//! contiguous slice of the rows; where the single-process code sums over all rows it sums over
//! its slice and calls [`Communicator::allreduce_sum`]. The sums are combined in rank order
//! (gathered, then added in order on every process), so a run gives the same bits on every
//! process and for every repetition, whatever reduction tree the MPI library would choose.
//! Where even the rounding must not depend on the number of processes (power k-means'
//! annealing amplifies it), [`reproducible_sum`] adds per-block partial sums exactly, and
//! [`row_range`] cuts the rows into slices of whole blocks.
//! [`SingleProcess`] is the default: every call is the identity, so an algorithm never
//! branches on "distributed or not". `Mpi` (feature `mpi`) runs over the system's MPI.

use crate::error::{Error, Result};
use std::fmt::Debug;
use std::sync::Arc;

/// The collective operations the distributed algorithms use.
pub trait Communicator: Debug + Send + Sync {
    /// This process's rank, 0..size.
    fn rank(&self) -> usize;
    /// The number of processes.
    fn size(&self) -> usize;
    /// Every process's `local` (the same length on each), concatenated in rank order.
    fn all_gather_f64(&self, local: &[f64]) -> Vec<f64>;
    /// As [`Communicator::all_gather_f64`], for counts.
    fn all_gather_u64(&self, local: &[u64]) -> Vec<u64>;
    /// Copies `root`'s `buf` into every process's `buf`.
    fn broadcast_f64(&self, buf: &mut [f64], root: usize);

    /// Every process's `local` (the same length on each), concatenated in rank order on
    /// `root`; empty on the others.
    fn gather_f64(&self, local: &[f64], root: usize) -> Vec<f64> {
        let all = self.all_gather_f64(local);
        if self.rank() == root {
            all
        } else {
            Vec::new()
        }
    }

    /// Sums `buf` element-wise over all processes, in rank order; every process gets the sum.
    fn allreduce_sum(&self, buf: &mut [f64]) {
        if self.size() == 1 {
            return;
        }
        let all = self.all_gather_f64(buf);
        buf.fill(0.0);
        for part in all.chunks(buf.len().max(1)) {
            buf.iter_mut().zip(part).for_each(|(a, b)| *a += b);
        }
    }

    /// As [`Communicator::allreduce_sum`], for counts.
    fn allreduce_sum_u64(&self, buf: &mut [u64]) {
        if self.size() == 1 {
            return;
        }
        let all = self.all_gather_u64(buf);
        buf.fill(0);
        for part in all.chunks(buf.len().max(1)) {
            buf.iter_mut().zip(part).for_each(|(a, b)| *a += b);
        }
    }

    /// The rows `start..end` of `n` that this process holds (see [`row_range`]).
    fn row_range(&self, n: usize) -> std::ops::Range<usize> {
        row_range(n, self.rank(), self.size())
    }
}

/// Rows per granule: [`row_range`] starts every slice at a multiple of it, and the algorithms
/// that sum per block of rows (power k-means, RFF-KPKM) use blocks of this size, so that no
/// block is split between processes and [`reproducible_sum`] gives one process's bits.
pub const ROW_GRANULE: usize = 4096;

/// Rank `rank`'s slice of `n` rows split over `size` processes: contiguous, starting at a
/// multiple of [`ROW_GRANULE`], the granules shared out evenly (the first ones one longer);
/// with fewer granules than processes, the last processes hold no rows.
pub fn row_range(n: usize, rank: usize, size: usize) -> std::ops::Range<usize> {
    let granules = n.div_ceil(ROW_GRANULE);
    let (base, extra) = (granules / size, granules % size);
    let start = (rank * base + rank.min(extra)) * ROW_GRANULE;
    let len = (base + usize::from(rank < extra)) * ROW_GRANULE;
    start.min(n)..(start + len).min(n)
}

/// Element-wise sums of `blocks` (vectors of length `len`, one per block of rows, on all
/// processes) that give the same bits however the blocks are shared out between processes
/// and in whatever order they are added: every value is rounded to a grid common to all
/// processes — per element 2^(e + 1 + ⌈log₂(b + 1)⌉ − 62), e the exponent of the largest
/// magnitude over all b blocks — and the integers are summed exactly. The error is at most
/// b·2^−61·2^⌈log₂(b+1)⌉ of that largest value, as small as a floating-point sum's bound.
/// An element with a NaN or infinite value sums to NaN.
pub fn reproducible_sum(blocks: &[Vec<f64>], len: usize, comm: &dyn Communicator) -> Vec<f64> {
    let mut local = vec![0.0f64; len + 1];
    for b in blocks {
        for (m, v) in local.iter_mut().zip(b) {
            *m = if v.is_finite() && !m.is_nan() {
                (*m).max(v.abs())
            } else {
                f64::NAN
            };
        }
    }
    local[len] = blocks.len() as f64;
    let all = comm.all_gather_f64(&local);
    let mut max = vec![0.0f64; len];
    let mut n_blocks = 0.0;
    for part in all.chunks(len + 1) {
        for (m, &v) in max.iter_mut().zip(part) {
            *m = if v.is_nan() || m.is_nan() {
                f64::NAN
            } else {
                (*m).max(v)
            };
        }
        n_blocks += part[len];
    }
    let headroom = (n_blocks + 1.0).log2().ceil() as i32;
    let grid: Vec<i32> = max
        .iter()
        .map(|&m| {
            // (the exponent of a subnormal or zero maximum is taken as the smallest normal's)
            let e = (((m.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(-1022);
            e + 1 + headroom - 62
        })
        .collect();
    let mut sums = vec![0u64; len];
    for b in blocks {
        for ((s, &v), &g) in sums.iter_mut().zip(b).zip(&grid) {
            if v.is_finite() {
                *s = s.wrapping_add(scale(v, -g).round() as i64 as u64);
            }
        }
    }
    let all = comm.all_gather_u64(&sums);
    let mut total = vec![0u64; len];
    for part in all.chunks(len.max(1)) {
        total
            .iter_mut()
            .zip(part)
            .for_each(|(t, &v)| *t = t.wrapping_add(v));
    }
    total
        .iter()
        .zip(&grid)
        .zip(&max)
        .map(|((&t, &g), &m)| {
            if m.is_nan() {
                f64::NAN
            } else {
                scale(t as i64 as f64, g)
            }
        })
        .collect()
}

/// `v · 2^e`, exactly while the result is a normal number (two steps, so that neither
/// power of two overflows).
fn scale(v: f64, e: i32) -> f64 {
    v * 2f64.powi(e / 2) * 2f64.powi(e - e / 2)
}

/// Where this process's rows sit among all: the first global row index and the total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    /// Global index of this process's first row.
    pub offset: usize,
    /// Rows over all processes.
    pub n_global: usize,
}

impl Partition {
    /// Where the rows of `idx` (global indices) that this process holds, `n_local` rows from
    /// `offset`, sit among its rows, in the order of `idx`.
    pub fn held(&self, n_local: usize, idx: &[usize]) -> Vec<usize> {
        let mine = self.offset..self.offset + n_local;
        idx.iter()
            .filter(|i| mine.contains(i))
            .map(|i| i - self.offset)
            .collect()
    }

    /// Agrees on the partition: every process gives its row count.
    pub fn of(n_local: usize, comm: &dyn Communicator) -> Partition {
        let counts = comm.all_gather_u64(&[n_local as u64]);
        Partition {
            offset: counts[..comm.rank()].iter().sum::<u64>() as usize,
            n_global: counts.iter().sum::<u64>() as usize,
        }
    }
}

/// Rows `idx` (global indices) of the data split over the processes, on every process, in
/// the order of `idx` (`x` is this process's slice).
pub fn fetch_rows<F: crate::scalar::Scalar>(
    x: ndarray::ArrayView2<F>,
    part: Partition,
    idx: &[usize],
    comm: &dyn Communicator,
) -> ndarray::Array2<F> {
    let held = part.held(x.nrows(), idx);
    share_rows(
        x.select(ndarray::Axis(0), &held).view(),
        part,
        x.nrows(),
        idx,
        comm,
    )
}

/// Rows `idx` (global indices) on every process, from `held`: the rows of `idx` this process
/// holds (it holds `n_local` rows from `part.offset`), in the order of `idx`. Each process
/// sends its rows exactly (values travel as f64), padded to the largest share, so a process
/// receives about `idx.len()` rows whatever the number of processes.
pub fn share_rows<F: crate::scalar::Scalar>(
    held: ndarray::ArrayView2<F>,
    part: Partition,
    n_local: usize,
    idx: &[usize],
    comm: &dyn Communicator,
) -> ndarray::Array2<F> {
    let d = held.ncols();
    let shares = comm.all_gather_u64(&[part.offset as u64, n_local as u64, held.nrows() as u64]);
    let width = shares.chunks(3).map(|s| s[2] as usize).max().unwrap_or(0);
    let mut block = vec![0.0; width * d];
    for (b, row) in block.chunks_mut(d.max(1)).zip(held.rows()) {
        b.iter_mut().zip(row).for_each(|(b, v)| *b = v.to_f64_exact());
    }
    let all = comm.all_gather_f64(&block);
    // Each process's rows arrive in the order of `idx`; walk them back into place.
    let mut next = vec![0usize; comm.size()];
    let mut out = ndarray::Array2::<F>::zeros((idx.len(), d));
    for (mut row, &i) in out.rows_mut().into_iter().zip(idx) {
        let owner = shares.chunks(3).position(|s| {
            let (lo, len) = (s[0] as usize, s[1] as usize);
            (lo..lo + len).contains(&i)
        });
        if let Some(q) = owner {
            let start = (q * width + next[q]) * d;
            next[q] += 1;
            row.iter_mut()
                .zip(&all[start..start + d])
                .for_each(|(r, &v)| *r = F::from_f64_lossy(v));
        }
    }
    out
}

/// Makes every process return an error when any one found one (a process that went on alone
/// would wait forever in the next collective): this process's own error, or one naming the
/// process that failed.
pub fn agree(local: Result<()>, comm: &dyn Communicator) -> Result<()> {
    if comm.size() == 1 {
        return local;
    }
    let failed = comm.all_gather_u64(&[u64::from(local.is_err())]);
    match (local, failed.iter().position(|&f| f == 1)) {
        (Err(e), _) => Err(e),
        (Ok(()), Some(rank)) => Err(Error::Unsupported(format!(
            "process {rank} stopped on an error in its part of the data"
        ))),
        (Ok(()), None) => Ok(()),
    }
}

/// Every process's labels (slices of different lengths), concatenated in rank order on `root`
/// (`None` on the others).
pub fn gather_labels(local: &[i64], root: usize, comm: &dyn Communicator) -> Option<Vec<i64>> {
    let lens = comm.all_gather_u64(&[local.len() as u64]);
    let width = lens.iter().copied().max().unwrap_or(0) as usize;
    let mut padded = vec![0.0; width];
    padded.iter_mut().zip(local).for_each(|(p, &l)| *p = l as f64); // labels are small integers: exact in f64
    let all = comm.gather_f64(&padded, root);
    (comm.rank() == root).then(|| {
        all.chunks(width.max(1))
            .zip(&lens)
            .flat_map(|(block, &len)| block[..len as usize].iter().map(|&v| v as i64))
            .collect()
    })
}

/// A shared communicator, as algorithms' parameters hold it.
pub type SharedComm = Arc<dyn Communicator>;

/// One process: every collective is the identity.
#[derive(Clone, Copy, Debug, Default)]
pub struct SingleProcess;

impl Communicator for SingleProcess {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn all_gather_f64(&self, local: &[f64]) -> Vec<f64> {
        local.to_vec()
    }
    fn all_gather_u64(&self, local: &[u64]) -> Vec<u64> {
        local.to_vec()
    }
    fn broadcast_f64(&self, _buf: &mut [f64], _root: usize) {}
}

/// The single-process communicator, shared.
pub fn single_process() -> SharedComm {
    Arc::new(SingleProcess)
}

#[cfg(feature = "mpi")]
pub use self::mpi_comm::Mpi;

#[cfg(feature = "mpi")]
mod mpi_comm {
    use super::{Communicator, Debug, Error, Result};
    use mpi::collective::{CommunicatorCollectives as _, Root as _};
    use mpi::topology::{Communicator as _, SimpleCommunicator};

    /// MPI's world communicator (rsmpi over the system's MPI), initialised with
    /// `MPI_THREAD_SERIALIZED`: collectives may be called from any one thread at a time, which
    /// is how the algorithms call them (from the thread running the fit, never from inside a
    /// parallel loop).
    pub struct Mpi {
        world: SimpleCommunicator,
        _universe: mpi::environment::Universe,
    }

    // SAFETY: MPI is initialised with MPI_THREAD_SERIALIZED (checked in `init`), and the
    // algorithms call the collectives from one thread at a time.
    unsafe impl Send for Mpi {}
    unsafe impl Sync for Mpi {}

    impl Debug for Mpi {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Mpi(rank {} of {})", self.world.rank(), self.world.size())
        }
    }

    impl Mpi {
        /// Initialises MPI (once per process).
        pub fn init() -> Result<Self> {
            use mpi::Threading;
            let (universe, level) = mpi::initialize_with_threading(Threading::Serialized)
                .ok_or_else(|| Error::Unsupported("MPI was already initialised".into()))?;
            if level < Threading::Serialized {
                return Err(Error::Unsupported(format!(
                    "the MPI library gives thread level {level:?}; clustr needs Serialized"
                )));
            }
            Ok(Mpi {
                world: universe.world(),
                _universe: universe,
            })
        }
    }

    impl Communicator for Mpi {
        fn rank(&self) -> usize {
            self.world.rank() as usize
        }
        fn size(&self) -> usize {
            self.world.size() as usize
        }
        fn all_gather_f64(&self, local: &[f64]) -> Vec<f64> {
            let mut all = vec![0.0; local.len() * self.size()];
            self.world.all_gather_into(local, &mut all[..]);
            all
        }
        fn all_gather_u64(&self, local: &[u64]) -> Vec<u64> {
            let mut all = vec![0u64; local.len() * self.size()];
            self.world.all_gather_into(local, &mut all[..]);
            all
        }
        fn broadcast_f64(&self, buf: &mut [f64], root: usize) {
            self.world.process_at_rank(root as i32).broadcast_into(buf);
        }
        fn gather_f64(&self, local: &[f64], root: usize) -> Vec<f64> {
            let root_process = self.world.process_at_rank(root as i32);
            if self.rank() == root {
                let mut all = vec![0.0; local.len() * self.size()];
                root_process.gather_into_root(local, &mut all[..]);
                all
            } else {
                root_process.gather_into(local);
                Vec::new()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_ranges_cover_the_rows_in_granules() {
        for n in [0, 1, 7, 4096, 10_000, 100_000, 1_000_001] {
            for size in 1..6 {
                let ranges: Vec<_> = (0..size).map(|r| row_range(n, r, size)).collect();
                assert_eq!(ranges[0].start, 0);
                assert_eq!(ranges[size - 1].end, n);
                for w in ranges.windows(2) {
                    assert_eq!(w[0].end, w[1].start);
                    assert!(w[1].start % ROW_GRANULE == 0 || w[1].start == n);
                    assert!(w[0].len() >= w[1].len());
                    assert!(w[0].len().div_ceil(ROW_GRANULE) - w[1].len().div_ceil(ROW_GRANULE) <= 1);
                }
            }
        }
    }

    /// The same bits in any order and grouping, close to the exact sum, NaN propagated.
    #[test]
    fn reproducible_sums_do_not_depend_on_the_order() {
        use rand::{Rng, SeedableRng};
        let mut rng = crate::rng::SeededRng::seed_from_u64(1);
        let blocks: Vec<Vec<f64>> = (0..500)
            .map(|i| {
                vec![
                    rng.random::<f64>() * 1e3 - 500.0,
                    rng.random::<f64>() * 1e-200,
                    if i % 2 == 0 { 1e16 } else { -1e16 } + rng.random::<f64>(),
                    0.0,
                ]
            })
            .collect();
        let sum = reproducible_sum(&blocks, 4, &SingleProcess);
        let mut reversed = blocks.clone();
        reversed.reverse();
        assert_eq!(reproducible_sum(&reversed, 4, &SingleProcess), sum);
        let naive: Vec<f64> = (0..4).map(|j| blocks.iter().map(|b| b[j]).sum()).collect();
        // Within a floating-point sum's bound (blocks × largest value × 2⁻⁵², for both sums).
        for (j, largest) in [(0, 500.0), (1, 1e-200), (2, 1e16 + 1.0)] {
            let bound = 2.0 * 500.0 * largest * f64::EPSILON;
            assert!(
                (sum[j] - naive[j]).abs() <= bound,
                "{j}: {} vs {}",
                sum[j],
                naive[j]
            );
        }
        assert_eq!(sum[3], 0.0);
        let mut bad = blocks;
        bad[7][1] = f64::INFINITY;
        let s = reproducible_sum(&bad, 4, &SingleProcess);
        assert!(s[1].is_nan() && s[0] == sum[0]);
    }

    #[test]
    fn single_process_collectives_are_identities() {
        let c = SingleProcess;
        let mut v = vec![1.5, 2.0];
        c.allreduce_sum(&mut v);
        c.broadcast_f64(&mut v, 0);
        assert_eq!(v, vec![1.5, 2.0]);
        assert_eq!(c.all_gather_u64(&[3, 4]), vec![3, 4]);
        assert_eq!((c.rank(), c.size(), c.row_range(5)), (0, 1, 0..5));
    }
}
