//! FastPAM1's candidate scans on the GPU (`cuda/swap_gains.cu`) behind [`DeviceGains`].
//!
//! The candidates' rows of the dissimilarity come from a matrix in host memory, or from the
//! points themselves on the device (then no n × n matrix exists on the host: the host's
//! caches use [`DeviceExact`], which computes each dissimilarity with the device's own
//! operations). The whole matrix is kept on the device when it fits (at most
//! [`CudaBackend::resident_bytes`] and 80% of the free memory); otherwise each batch's rows
//! are uploaded or computed with the batch. The search state (points grouped by nearest
//! medoid, removal losses) is uploaded after each swap.

use super::{cast, device_error, metric_code, CudaBackend, DeviceFloat};
use crate::backend::device::{BoxedGains, DeviceExact, DeviceGains, Evaluated, Grouped, PointsGains};
use crate::dissim::Dissimilarity;
use crate::error::{Error, Result};
use crate::metric::Metric;
use crate::scalar::Scalar;
use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use ndarray::ArrayView2;
use std::any::TypeId;

/// Largest k the kernel takes (its k deltas live in shared memory).
pub const MAX_K: usize = 4096;
/// Threads per candidate (`GAIN_THREADS` in the source).
const THREADS: u32 = 256;
/// Most candidates per launch with a resident matrix.
const CANDIDATES: usize = 65536;
/// Most bytes of candidate rows uploaded or computed per launch without one.
const STAGED_BYTES: usize = 256 << 20;
/// Rows of the resident matrix computed per launch from points.
const MATRIX_ROWS: usize = 8192;

/// Row `i` of a dissimilarity in host memory.
type Rows<'g, V> = Box<dyn Fn(usize) -> Option<&'g [V]> + 'g>;

/// Where the candidates' rows come from.
enum Source<'g, T, V> {
    /// A matrix in host memory.
    Host(Rows<'g, V>),
    /// Points (n × dim, on the host and the device) and the metric's code.
    Points {
        host: &'g [V],
        device: CudaSlice<T>,
        dim: usize,
        code: (i32, f64),
    },
}

struct Gains<'g, T: DeviceFloat, V> {
    backend: CudaBackend,
    suffix: &'static str,
    function: CudaFunction,
    n: usize,
    k: usize,
    source: Source<'g, T, V>,
    /// The whole matrix, when it fits in device memory.
    matrix: Option<CudaSlice<T>>,
    members: CudaSlice<i32>,
    offsets: CudaSlice<i32>,
    near_d: CudaSlice<T>,
    seco_d: CudaSlice<T>,
    removal: CudaSlice<f64>,
}

/// Row `i` of the dissimilarity.
fn row<'g, V>(rows: &Rows<'g, V>, i: usize) -> Result<&'g [V]> {
    rows(i).ok_or_else(|| Error::Device(format!("swap gains: row {i} is not in memory")))
}

/// `s` as `&[T]` (`V` and `T` are the same type, checked when the scans are created).
fn same<V: 'static, T: 'static>(s: &[V]) -> Result<&[T]> {
    cast::<V, T>(s).ok_or_else(|| Error::Device("swap gains: element type changed".into()))
}

fn check_k(k: usize) -> Result<()> {
    if k > MAX_K {
        return Err(Error::NotOnDevice(format!(
            "backend = cuda: the swap kernels take k <= {MAX_K} (k = {k})"
        )));
    }
    Ok(())
}

/// The precision suffix of the kernels for `V` (f32 or f64).
fn suffix_of<V: 'static>() -> Result<&'static str> {
    let id = TypeId::of::<V>();
    if id == TypeId::of::<f32>() {
        Ok("f32")
    } else if id == TypeId::of::<f64>() {
        Ok("f64")
    } else {
        Err(Error::NotOnDevice(
            "backend = cuda: the swap kernels take f32 or f64 dissimilarities".into(),
        ))
    }
}

impl CudaBackend {
    /// FastPAM1's candidate scans of `d` with `k` medoids on this device: `d` must be a dense
    /// f32 or f64 matrix (rows in memory) and `k` at most [`MAX_K`].
    pub(super) fn gains_on_device<'g, D: Dissimilarity>(
        &self,
        d: &'g D,
        k: usize,
    ) -> Result<BoxedGains<'g, D::Value>> {
        check_k(k)?;
        if d.row(0).is_none() {
            return Err(Error::NotOnDevice(
                "backend = cuda: the swap kernels need a dense dissimilarity matrix".into(),
            ));
        }
        let rows: Rows<'g, D::Value> = Box::new(move |i| d.row(i));
        match suffix_of::<D::Value>()? {
            "f32" => Ok(Box::new(Gains::<f32, D::Value>::new(
                self,
                d.len(),
                k,
                Source::Host(rows),
            )?)),
            _ => Ok(Box::new(Gains::<f64, D::Value>::new(
                self,
                d.len(),
                k,
                Source::Host(rows),
            )?)),
        }
    }

    /// FastPAM1's candidate scans of the points `x` (standard layout) under `metric`, the
    /// dissimilarities computed on the device; `None` for a metric [`DeviceExact`] cannot
    /// reproduce on the host.
    pub(super) fn points_gains_on_device<'g, F: Scalar>(
        &self,
        x: ArrayView2<'g, F>,
        metric: &impl Metric,
        k: usize,
    ) -> Result<Option<PointsGains<'g, F>>> {
        check_k(k)?;
        let code = metric_code(metric.kind())?;
        let Some(exact) = DeviceExact::new(x, metric) else {
            return Ok(None);
        };
        let host = x
            .to_slice()
            .ok_or_else(|| Error::Device("points not in standard layout".into()))?;
        let dim = x.ncols();
        let gains: BoxedGains<'g, F> = match suffix_of::<F>()? {
            "f32" => {
                let device = self
                    .stream
                    .clone_htod(same::<F, f32>(host)?)
                    .map_err(device_error)?;
                let source = Source::Points {
                    host,
                    device,
                    dim,
                    code,
                };
                Box::new(Gains::<f32, F>::new(self, x.nrows(), k, source)?)
            }
            _ => {
                let device = self
                    .stream
                    .clone_htod(same::<F, f64>(host)?)
                    .map_err(device_error)?;
                let source = Source::Points {
                    host,
                    device,
                    dim,
                    code,
                };
                Box::new(Gains::<f64, F>::new(self, x.nrows(), k, source)?)
            }
        };
        Ok(Some(PointsGains { exact, gains }))
    }
}

impl<'g, T: DeviceFloat, V: Copy + 'static> Gains<'g, T, V> {
    fn new(b: &CudaBackend, n: usize, k: usize, source: Source<'g, T, V>) -> Result<Self> {
        let suffix = suffix_of::<T>()?;
        let s = b.stream.clone();
        let mut gains = Gains {
            backend: b.clone(),
            suffix,
            function: b.function(&format!("swap_gains_{suffix}"))?,
            n,
            k,
            source,
            matrix: None,
            members: s.alloc_zeros(n).map_err(device_error)?,
            offsets: s.alloc_zeros(k + 1).map_err(device_error)?,
            near_d: s.alloc_zeros(n).map_err(device_error)?,
            seco_d: s.alloc_zeros(n).map_err(device_error)?,
            removal: s.alloc_zeros(k).map_err(device_error)?,
        };
        let bytes = n.saturating_mul(n).saturating_mul(size_of::<T>());
        let (free, _) = b.ctx.mem_get_info().map_err(device_error)?;
        if bytes <= b.resident_bytes && bytes <= free / 5 * 4 {
            let mut m = s.alloc_zeros::<T>(n * n).map_err(device_error)?;
            let all: Vec<usize> = (0..n).collect();
            let per = match gains.source {
                Source::Host(_) => ((64 << 20) / (n * size_of::<T>())).clamp(1, n),
                Source::Points { .. } => MATRIX_ROWS.min(n),
            };
            for part in all.chunks(per) {
                let (start, end) = (part[0], part[0] + part.len());
                gains.rows_into(part, &mut m.slice_mut(start * n..end * n))?;
            }
            gains.matrix = Some(m);
        }
        Ok(gains)
    }

    /// The rows of `candidates` into `out` (row-major, n values each), with their zero
    /// self-dissimilarities.
    fn rows_into(&self, candidates: &[usize], out: &mut cudarc::driver::CudaViewMut<'_, T>) -> Result<()> {
        let (n, s) = (self.n, &self.backend.stream);
        match &self.source {
            Source::Host(rows) => {
                let mut host: Vec<T> = Vec::with_capacity(candidates.len() * n);
                for &c in candidates {
                    host.extend_from_slice(same(row(rows, c)?)?);
                }
                s.memcpy_htod(&host, out).map_err(device_error)
            }
            Source::Points {
                host,
                device,
                dim,
                code,
            } => {
                let dim = *dim;
                let mut coords: Vec<T> = Vec::with_capacity(candidates.len() * dim);
                for &c in candidates {
                    coords.extend_from_slice(same(&host[c * dim..(c + 1) * dim])?);
                }
                let xc = s.clone_htod(&coords).map_err(device_error)?;
                let f = self.backend.function(&format!("pairwise_{}", self.suffix))?;
                self.backend
                    .launch_pairwise(&f, (&xc, candidates.len()), (device, n), dim, *code, out)?;
                let diagonal: Vec<i64> = candidates
                    .iter()
                    .enumerate()
                    .map(|(b, &c)| (b * n + c) as i64)
                    .collect();
                self.backend.set_zero(self.suffix, out, &diagonal)
            }
        }
    }
}

impl<T: DeviceFloat, V: Copy + 'static> DeviceGains<V> for Gains<'_, T, V> {
    fn load_state(&mut self, g: &Grouped<V>, removal: &[f64]) -> Result<()> {
        let s = &self.backend.stream;
        s.memcpy_htod(&g.members, &mut self.members)
            .map_err(device_error)?;
        s.memcpy_htod(&g.offsets, &mut self.offsets)
            .map_err(device_error)?;
        s.memcpy_htod(same::<V, T>(&g.near_d)?, &mut self.near_d)
            .map_err(device_error)?;
        s.memcpy_htod(same::<V, T>(&g.seco_d)?, &mut self.seco_d)
            .map_err(device_error)?;
        s.memcpy_htod(removal, &mut self.removal).map_err(device_error)
    }

    fn evaluate(&mut self, candidates: &[usize], all: bool) -> Result<Evaluated> {
        let (n, k, s) = (self.n, self.k, self.backend.stream.clone());
        let chunk = match self.matrix {
            Some(_) => CANDIDATES,
            None => (STAGED_BYTES / (n * size_of::<T>())).max(1),
        };
        let (mut best, mut deltas) = (Vec::with_capacity(candidates.len()), Vec::new());
        for part in candidates.chunks(chunk) {
            let nc = part.len();
            let mut staged;
            let (rows, row_start): (&CudaSlice<T>, Vec<i64>) = match &self.matrix {
                Some(m) => (m, part.iter().map(|&c| (c * n) as i64).collect()),
                None => {
                    staged = s.alloc_zeros::<T>(nc * n).map_err(device_error)?;
                    self.rows_into(part, &mut staged.slice_mut(..))?;
                    (&staged, (0..nc).map(|b| (b * n) as i64).collect())
                }
            };
            let row_start = s.clone_htod(&row_start).map_err(device_error)?;
            let mut best_pos = s.alloc_zeros::<i32>(nc).map_err(device_error)?;
            let mut best_delta = s.alloc_zeros::<f64>(nc).map_err(device_error)?;
            let mut all_deltas = s
                .alloc_zeros::<f64>(if all { nc * k } else { 1 })
                .map_err(device_error)?;
            let (nc_i, k_i, want) = (nc as i32, k as i32, i32::from(all));
            let cfg = LaunchConfig {
                grid_dim: (nc as u32, 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: (k * size_of::<f64>()) as u32,
            };
            let mut launch = s.launch_builder(&self.function);
            launch
                .arg(rows)
                .arg(&row_start)
                .arg(&nc_i)
                .arg(&k_i)
                .arg(&self.members)
                .arg(&self.offsets)
                .arg(&self.near_d)
                .arg(&self.seco_d)
                .arg(&self.removal)
                .arg(&want)
                .arg(&mut all_deltas)
                .arg(&mut best_pos)
                .arg(&mut best_delta);
            // SAFETY: the arguments match the kernel's signature; rows + row_start[b] holds n
            // values for each of the nc candidates, the state buffers hold n (members,
            // near_d, seco_d), k + 1 (offsets) and k (removal) values, the outputs nc (and
            // nc × k when `all`).
            unsafe { launch.launch(cfg) }.map_err(device_error)?;
            let pos = s.clone_dtoh(&best_pos).map_err(device_error)?;
            let val = s.clone_dtoh(&best_delta).map_err(device_error)?;
            best.extend(pos.into_iter().map(|p| p as usize).zip(val));
            if all {
                deltas.extend(s.clone_dtoh(&all_deltas).map_err(device_error)?);
            }
        }
        s.synchronize().map_err(device_error)?;
        Ok((best, deltas))
    }
}
