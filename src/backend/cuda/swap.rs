//! FastPAM1's candidate scans on the GPU (`kernels/swap_gains.cu`) behind
//! [`DeviceGains`]: the dissimilarity matrix is uploaded once when it fits in device memory
//! (at most [`CudaBackend::resident_bytes`] and 80% of the free memory), else the candidates'
//! rows are uploaded with each batch. The search state (points grouped by nearest medoid,
//! removal losses) is uploaded after each swap.

use super::{cast, device_error, CudaBackend, DeviceFloat};
use crate::dissim::Dissimilarity;
use crate::error::{Error, Result};
use crate::kmedoids::swap::{DeviceGains, Evaluated, Grouped};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use std::any::TypeId;
use std::sync::Arc;

/// Largest k the kernel takes (its k deltas live in shared memory).
pub const MAX_K: usize = 4096;
/// Threads per candidate (`GAIN_THREADS` in the source).
const THREADS: u32 = 256;
/// Most candidates per launch with a resident matrix.
const CANDIDATES: usize = 65536;
/// Most bytes of candidate rows uploaded per launch without one.
const STAGED_BYTES: usize = 256 << 20;

/// Row `i` of the dissimilarity, in memory.
type Rows<'g, V> = Box<dyn Fn(usize) -> Option<&'g [V]> + 'g>;

struct Gains<'g, T: DeviceFloat, V> {
    stream: Arc<CudaStream>,
    function: CudaFunction,
    n: usize,
    k: usize,
    rows: Rows<'g, V>,
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

impl CudaBackend {
    /// FastPAM1's candidate scans of `d` with `k` medoids on this device: `d` must be a dense
    /// f32 or f64 matrix (rows in memory) and `k` at most [`MAX_K`].
    pub(crate) fn swap_gains<'g, D: Dissimilarity>(
        &self,
        d: &'g D,
        k: usize,
    ) -> Result<Box<dyn DeviceGains<D::Value> + 'g>> {
        if k > MAX_K {
            return Err(Error::Unsupported(format!(
                "backend = cuda: the swap kernels take k <= {MAX_K} (k = {k}); use --backend cpu"
            )));
        }
        if d.row(0).is_none() {
            return Err(Error::Unsupported(
                "backend = cuda: the swap kernels need a dense dissimilarity matrix; use --backend cpu"
                    .into(),
            ));
        }
        let rows: Rows<'g, D::Value> = Box::new(move |i| d.row(i));
        let id = TypeId::of::<D::Value>();
        if id == TypeId::of::<f32>() {
            Ok(Box::new(Gains::<f32, D::Value>::new(
                self,
                "f32",
                d.len(),
                k,
                rows,
            )?))
        } else if id == TypeId::of::<f64>() {
            Ok(Box::new(Gains::<f64, D::Value>::new(
                self,
                "f64",
                d.len(),
                k,
                rows,
            )?))
        } else {
            Err(Error::Unsupported(
                "backend = cuda: the swap kernels take f32 or f64 dissimilarities; use --backend cpu".into(),
            ))
        }
    }
}

impl<'g, T: DeviceFloat, V: Copy + 'static> Gains<'g, T, V> {
    fn new(b: &CudaBackend, suffix: &str, n: usize, k: usize, rows: Rows<'g, V>) -> Result<Self> {
        let s = b.stream.clone();
        let bytes = n.saturating_mul(n).saturating_mul(size_of::<T>());
        let (free, _) = b.ctx.mem_get_info().map_err(device_error)?;
        let matrix = if bytes <= b.resident_bytes && bytes <= free / 5 * 4 {
            let mut m = s.alloc_zeros::<T>(n * n).map_err(device_error)?;
            let per = ((64 << 20) / (n * size_of::<T>())).clamp(1, n);
            let mut staging: Vec<T> = Vec::with_capacity(per * n);
            for start in (0..n).step_by(per) {
                let end = (start + per).min(n);
                staging.clear();
                for i in start..end {
                    staging.extend_from_slice(same(row(&rows, i)?)?);
                }
                s.memcpy_htod(&staging, &mut m.slice_mut(start * n..end * n))
                    .map_err(device_error)?;
            }
            Some(m)
        } else {
            None
        };
        Ok(Gains {
            function: b.function(&format!("swap_gains_{suffix}"))?,
            n,
            k,
            rows,
            matrix,
            members: s.alloc_zeros(n).map_err(device_error)?,
            offsets: s.alloc_zeros(k + 1).map_err(device_error)?,
            near_d: s.alloc_zeros(n).map_err(device_error)?,
            seco_d: s.alloc_zeros(n).map_err(device_error)?,
            removal: s.alloc_zeros(k).map_err(device_error)?,
            stream: s,
        })
    }
}

impl<T: DeviceFloat, V: Copy + 'static> DeviceGains<V> for Gains<'_, T, V> {
    fn load_state(&mut self, g: &Grouped<V>, removal: &[f64]) -> Result<()> {
        let s = &self.stream;
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
        let (n, k, s) = (self.n, self.k, self.stream.clone());
        let chunk = match self.matrix {
            Some(_) => CANDIDATES,
            None => (STAGED_BYTES / (n * size_of::<T>())).max(1),
        };
        let (mut best, mut deltas) = (Vec::with_capacity(candidates.len()), Vec::new());
        for part in candidates.chunks(chunk) {
            let nc = part.len();
            let staged;
            let (rows, row_start): (&CudaSlice<T>, Vec<i64>) = match &self.matrix {
                Some(m) => (m, part.iter().map(|&c| (c * n) as i64).collect()),
                None => {
                    let mut host: Vec<T> = Vec::with_capacity(nc * n);
                    for &c in part {
                        host.extend_from_slice(same(row(&self.rows, c)?)?);
                    }
                    staged = s.clone_htod(&host).map_err(device_error)?;
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
