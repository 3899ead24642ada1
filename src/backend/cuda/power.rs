//! Random Fourier features and power k-means' iteration on the GPU (`cuda/power.cu`).
//!
//! [`CudaBackend::rff_map`] maps the rows in blocks and returns the features to the host.
//! [`CudaBackend::power_points_on_device`] keeps the points (the data, or the features) on
//! the device for power k-means' MM loop ([`PowerPoints`]): each iteration uploads the k
//! centroids, computes every row's distances and weights (one warp per row), then per block
//! of [`ROW_GRANULE`] rows the weighted sums, weight totals, objective and hardness in row
//! order; the family adds the blocks and moves the centroids, as its CPU iteration does.
//! Rounding differs from the CPU's (the weighted sums are accumulated in double here, in
//! the points' type there).

use super::{cast, cublas_present, device_error, CudaBackend, DeviceFloat};
use crate::backend::device::{BoxedPowerPoints, PowerPoints};
use crate::comm::ROW_GRANULE;
use crate::error::{Error, Result};
use crate::linalg::row_sq_norms;
use crate::scalar::Scalar;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use ndarray::{Array2, ArrayView2};
use std::any::TypeId;
use std::sync::Arc;

/// Largest k of power k-means on the device (`POWER_MAX_K` in the source).
pub const POWER_MAX_K: usize = 64;

const THREADS: u32 = 256;

fn launch_1d(threads: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((threads as u32).div_ceil(THREADS), 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

impl CudaBackend {
    /// `scale · cos(x Ωᵀ + offset)` for every row of `x` (n × D), as
    /// [`crate::kernel::RandomFourierFeatures::transform`] computes it.
    pub fn rff_map<F: Scalar>(
        &self,
        x: ArrayView2<F>,
        omega: ArrayView2<F>,
        offset: &[F],
        scale: F,
    ) -> Result<Array2<F>> {
        let x = crate::data::standard_layout(x);
        let omega = crate::data::standard_layout(omega);
        let (n, nf) = (x.nrows(), omega.nrows());
        let mut z = Array2::<F>::zeros((n, nf));
        if n == 0 || nf == 0 {
            return Ok(z);
        }
        let zs = z.as_slice_mut().expect("standard");
        if TypeId::of::<F>() == TypeId::of::<f32>() {
            self.rff_map_typed::<F, f32>("f32", x.view(), omega.view(), offset, scale, zs)?;
        } else if TypeId::of::<F>() == TypeId::of::<f64>() {
            self.rff_map_typed::<F, f64>("f64", x.view(), omega.view(), offset, scale, zs)?;
        } else {
            return Err(Error::Unsupported(format!(
                "the CUDA backend has no {} kernels",
                F::DTYPE
            )));
        }
        Ok(z)
    }

    /// [`Self::rff_map`] with `F` = `T`, the rows in blocks of at most `block_bytes` of output.
    /// With cuBLAS, `x Ωᵀ` by GEMM then the bias and cosine by an epilogue kernel in place;
    /// without it, one kernel computes each feature's dot product directly.
    fn rff_map_typed<F: Scalar, T: DeviceFloat>(
        &self,
        suffix: &str,
        x: ArrayView2<F>,
        omega: ArrayView2<F>,
        offset: &[F],
        scale: F,
        z: &mut [F],
    ) -> Result<()>
    where
        cudarc::cublas::CudaBlas: cudarc::cublas::Gemm<T>,
    {
        use cudarc::cublas::{sys::cublasOperation_t, Gemm, GemmConfig};
        let (n, d, nf) = (x.nrows(), x.ncols(), omega.nrows());
        let x: &[T] = same(x.as_slice().expect("standard layout"))?;
        let omega: &[T] = same(omega.as_slice().expect("standard layout"))?;
        let (offset, scale): (&[T], T) = (same(offset)?, same_value(scale)?);
        let z: &mut [T] = same_mut(z)?;
        let s = &self.stream;
        let blas = match cublas_present() && d > 0 {
            true => Some(self.blas()?),
            false => None,
        };
        let f = match blas {
            Some(_) => self.function(&format!("rff_epilogue_{suffix}"))?,
            None => self.function(&format!("rff_map_{suffix}"))?,
        };
        let omega = s.clone_htod(omega).map_err(device_error)?;
        let offset = s.clone_htod(offset).map_err(device_error)?;
        let rows = (self.block_bytes / (nf * size_of::<T>())).clamp(1, n);
        let mut z_dev = s.alloc_zeros::<T>(rows * nf).map_err(device_error)?;
        let (d_i, nf_i) = (d as i32, nf as i32);
        for start in (0..n).step_by(rows) {
            let nb = rows.min(n - start);
            let x_dev = s
                .clone_htod(&x[start * d..(start + nb) * d])
                .map_err(device_error)?;
            let nb_i = nb as i32;
            let mut launch = s.launch_builder(&f);
            let total = (nb * nf) as i64;
            if let Some(blas) = &blas {
                // Row-major z (nb × nf) = x · Ωᵀ is column-major zᵀ = Ωᵀᵀ · x (see SqGemm).
                let cfg = GemmConfig {
                    transa: cublasOperation_t::CUBLAS_OP_T,
                    transb: cublasOperation_t::CUBLAS_OP_N,
                    m: nf_i,
                    n: nb_i,
                    k: d_i,
                    alpha: T::from_f64(1.0),
                    lda: d_i,
                    ldb: d_i,
                    beta: T::from_f64(0.0),
                    ldc: nf_i,
                };
                // SAFETY: omega holds nf × d values, x_dev nb × d, z_dev at least nb × nf.
                unsafe { blas.gemm(cfg, &omega, &x_dev, &mut z_dev) }.map_err(device_error)?;
                launch
                    .arg(&mut z_dev)
                    .arg(&offset)
                    .arg(&total)
                    .arg(&nf_i)
                    .arg(&scale);
            } else {
                launch
                    .arg(&x_dev)
                    .arg(&omega)
                    .arg(&offset)
                    .arg(&mut z_dev)
                    .arg(&nb_i)
                    .arg(&d_i)
                    .arg(&nf_i)
                    .arg(&scale);
            }
            // SAFETY: the arguments match the kernels' signatures (rff_epilogue, rff_map); x
            // holds nb × d values, omega nf × d, offset nf, z nb × nf (at least).
            unsafe { launch.launch(launch_1d(nb * nf)) }.map_err(device_error)?;
            s.memcpy_dtoh(&z_dev.slice(..nb * nf), &mut z[start * nf..(start + nb) * nf])
                .map_err(device_error)?;
        }
        s.synchronize().map_err(device_error)
    }

    /// Power k-means' points `x` (this process's rows) on the device, for `k` centroids (at
    /// most [`POWER_MAX_K`]).
    pub(super) fn power_points_on_device<'a, F: Scalar>(
        &self,
        x: ArrayView2<'a, F>,
        k: usize,
    ) -> Result<BoxedPowerPoints<'a, F>> {
        if k > POWER_MAX_K {
            return Err(Error::NotOnDevice(format!(
                "backend = cuda: power k-means on the GPU takes k <= {POWER_MAX_K} (k = {k})"
            )));
        }
        if TypeId::of::<F>() == TypeId::of::<f32>() {
            Ok(Box::new(Points::<F, f32>::new(self, "f32", x, k)?))
        } else if TypeId::of::<F>() == TypeId::of::<f64>() {
            Ok(Box::new(Points::<F, f64>::new(self, "f64", x, k)?))
        } else {
            Err(Error::Unsupported(format!(
                "the CUDA backend has no {} kernels",
                F::DTYPE
            )))
        }
    }
}

/// `s` as `&[T]` where `F` is `T`.
fn same<F: 'static, T: 'static>(s: &[F]) -> Result<&[T]> {
    cast::<F, T>(s).ok_or_else(|| Error::Device("element type mismatch".into()))
}

fn same_value<F: Copy + 'static, T: Copy + 'static>(v: F) -> Result<T> {
    Ok(same::<F, T>(std::slice::from_ref(&v))?[0])
}

fn same_mut<F: 'static, T: 'static>(s: &mut [F]) -> Result<&mut [T]> {
    super::cast_mut::<F, T>(s).ok_or_else(|| Error::Device("element type mismatch".into()))
}

/// The points of power k-means on the device.
struct Points<F, T: DeviceFloat> {
    stream: Arc<CudaStream>,
    weights: CudaFunction,
    sums: CudaFunction,
    distances: CudaFunction,
    n: usize,
    dim: usize,
    z: CudaSlice<T>,
    norms: CudaSlice<f64>,
    w: CudaSlice<f64>,
    objective: CudaSlice<f64>,
    hard: CudaSlice<f64>,
    points: std::marker::PhantomData<F>,
}

impl<F: Scalar, T: DeviceFloat> Points<F, T> {
    fn new(b: &CudaBackend, suffix: &str, x: ArrayView2<F>, k: usize) -> Result<Self> {
        let x = crate::data::standard_layout(x);
        let (n, dim) = x.dim();
        let s = b.stream.clone();
        let norms = row_sq_norms(x.view());
        let alloc = |len: usize| s.alloc_zeros::<f64>(len.max(1)).map_err(device_error);
        Ok(Points {
            weights: b.function(&format!("power_weights_{suffix}"))?,
            sums: b.function(&format!("power_block_sums_{suffix}"))?,
            distances: b.function(&format!("power_distances_{suffix}"))?,
            n,
            dim,
            // (a process of a distributed run may hold no rows: one element keeps the
            // allocations valid; no kernel runs then)
            z: match n {
                0 => s.alloc_zeros::<T>(1),
                _ => s.clone_htod(same::<F, T>(x.as_slice().expect("standard"))?),
            }
            .map_err(device_error)?,
            norms: match n {
                0 => s.alloc_zeros::<f64>(1),
                _ => s.clone_htod(&norms),
            }
            .map_err(device_error)?,
            w: alloc(n * k)?,
            objective: alloc(n)?,
            hard: alloc(n)?,
            points: std::marker::PhantomData,
            stream: s,
        })
    }

    /// The centroids and their squared norms, on the device.
    fn upload_centers(&self, centers: ArrayView2<F>) -> Result<(CudaSlice<T>, CudaSlice<f64>)> {
        let centers = crate::data::standard_layout(centers);
        let norms: Vec<f64> = centers
            .rows()
            .into_iter()
            .map(|r| r.iter().map(|v| v.to_f64_exact().powi(2)).sum())
            .collect();
        let c = same::<F, T>(centers.as_slice().expect("standard layout"))?;
        Ok((
            self.stream.clone_htod(c).map_err(device_error)?,
            self.stream.clone_htod(&norms).map_err(device_error)?,
        ))
    }
}

impl<F: Scalar, T: DeviceFloat> PowerPoints<F> for Points<F, T> {
    fn distances(&self, centers: ArrayView2<F>) -> Result<Array2<f64>> {
        let k = centers.nrows();
        let mut d = Array2::<f64>::zeros((self.n, k));
        if self.n == 0 {
            return Ok(d);
        }
        let s = &self.stream;
        let (c, cn) = self.upload_centers(centers)?;
        let mut d_dev = s.alloc_zeros::<f64>(self.n * k).map_err(device_error)?;
        let (n_i, dim_i, k_i) = (self.n as i32, self.dim as i32, k as i32);
        let mut launch = s.launch_builder(&self.distances);
        launch
            .arg(&self.z)
            .arg(&self.norms)
            .arg(&c)
            .arg(&cn)
            .arg(&n_i)
            .arg(&dim_i)
            .arg(&k_i)
            .arg(&mut d_dev);
        // SAFETY: the arguments match the kernel's signature; z holds n × dim values, norms
        // n, the centroids k × dim and k, d n × k; one warp per row.
        unsafe { launch.launch(launch_1d(self.n * 32)) }.map_err(device_error)?;
        s.memcpy_dtoh(&d_dev, d.as_slice_mut().expect("standard layout"))
            .map_err(device_error)?;
        s.synchronize().map_err(device_error)?;
        Ok(d)
    }

    fn block_sums(&mut self, centers: ArrayView2<F>, power: f64) -> Result<Vec<Vec<f64>>> {
        let (n, dim, k) = (self.n, self.dim, centers.nrows());
        let width = k * dim + k + 2;
        let blocks = n.div_ceil(ROW_GRANULE);
        let mut parts: Vec<Vec<f64>> = Vec::with_capacity(blocks);
        if n > 0 {
            let s = self.stream.clone();
            let (c, cn) = self.upload_centers(centers)?;
            let (n_i, dim_i, k_i, block_i) = (n as i32, dim as i32, k as i32, ROW_GRANULE as i32);
            let mut launch = s.launch_builder(&self.weights);
            launch
                .arg(&self.z)
                .arg(&self.norms)
                .arg(&c)
                .arg(&cn)
                .arg(&n_i)
                .arg(&dim_i)
                .arg(&k_i)
                .arg(&power)
                .arg(&mut self.w)
                .arg(&mut self.objective)
                .arg(&mut self.hard);
            // SAFETY: the arguments match the kernel's signature; z holds n × dim values, the
            // centroids k × dim (k <= POWER_MAX_K), w n × k, objective and hard n; one warp
            // per row.
            unsafe { launch.launch(launch_1d(n * 32)) }.map_err(device_error)?;
            let mut out = s.alloc_zeros::<f64>(blocks * width).map_err(device_error)?;
            let cfg = LaunchConfig {
                grid_dim: (blocks as u32, (width as u32).div_ceil(THREADS), 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut launch = s.launch_builder(&self.sums);
            launch
                .arg(&self.z)
                .arg(&self.w)
                .arg(&self.objective)
                .arg(&self.hard)
                .arg(&n_i)
                .arg(&dim_i)
                .arg(&k_i)
                .arg(&block_i)
                .arg(&mut out);
            // SAFETY: the arguments match the kernel's signature; out holds blocks × width
            // values, one row of partial sums per block of rows.
            unsafe { launch.launch(cfg) }.map_err(device_error)?;
            let host = s.clone_dtoh(&out).map_err(device_error)?;
            s.synchronize().map_err(device_error)?;
            parts.extend(host.chunks(width).map(<[f64]>::to_vec));
        }
        Ok(parts)
    }
}
