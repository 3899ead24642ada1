//! The CUDA backend (Cargo feature `cuda`): the kernels of `cuda/*.cu`, compiled with NVRTC
//! for the device's compute capability when the backend is created, and launched through
//! cudarc (cuBLAS for the GEMM form of Euclidean distances). Besides the [`Backend`] kernels,
//! the k-medoids swap scans (`swap.rs`) and power k-means' iterations and the RFF map
//! (`power.rs`) run here. libcuda and libnvrtc are loaded at run time (cudarc's `dynamic-loading`),
//! so a build with the feature runs on machines without CUDA: [`CudaBackend::new`] checks the
//! libraries and the device count first and returns an error instead of letting the loader
//! panic.
//!
//! Pairwise distances stream `x` through the device in row blocks (at most
//! [`CudaBackend::block_bytes`] of output per block), so an n × n matrix larger than device
//! memory is produced block by block into host memory. (Squared) Euclidean distances use the
//! CPU backend's GEMM form (centred on the mean of `y`, clamped at 0, cancelling pairs
//! recomputed directly) when libcublas is found, the direct kernel otherwise; results equal
//! the CPU backend's to rounding, ties to the lowest index.

mod power;
mod swap;

pub use power::POWER_MAX_K;
pub use swap::MAX_K as SWAP_MAX_K;

use super::device::{BoxedGains, BoxedPowerPoints, PointsGains};
use super::{check_pairwise_shapes, fill_c_order, Backend, Nearest, NearestTwo};
use crate::data::standard_layout;
use crate::dissim::Dissimilarity;
use crate::error::{Error, Result};
use crate::metric::{Metric, MetricKind};
use crate::scalar::Scalar;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use ndarray::{Array2, ArrayView2, ArrayViewMut2};
use std::any::TypeId;
use std::sync::Arc;

/// The CUDA C source of the kernels.
pub const KERNELS: &str = concat!(
    include_str!("../../cuda/distances.cu"),
    include_str!("../../cuda/swap_gains.cu"),
    include_str!("../../cuda/power.cu")
);

/// The element types the kernels are compiled for (f32, f64).
pub(crate) trait DeviceFloat:
    cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Copy + Default + 'static
{
    /// `v` rounded to this type.
    fn from_f64(v: f64) -> Self;
}
impl DeviceFloat for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}
impl DeviceFloat for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
}

/// Nearest index, its distance, second index (−1: none), its distance, per point.
type Assignment<T> = (Vec<i32>, Vec<T>, Vec<i32>, Vec<T>);

/// Side of the square thread blocks of the pairwise kernel (`TILE` in the source).
const TILE: u32 = 16;

fn device_error(e: impl std::fmt::Display) -> Error {
    Error::Device(e.to_string())
}

/// Whether libnvrtc can be loaded (needed to compile the kernels).
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to open the library by its candidate names.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Why no CUDA device can be used here, or `None` when one can: the driver library, the
/// compiler library and at least one device are checked without touching anything that
/// would make cudarc's loader panic.
pub fn unavailable() -> Option<String> {
    // SAFETY: only tries to open the library by its candidate names.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Some("the CUDA driver library (libcuda) was not found".into());
    }
    if !nvrtc_present() && std::env::var_os(PTX_ENV).is_none() {
        return Some(format!(
            "the CUDA runtime compiler (libnvrtc) was not found and {PTX_ENV} names no prebuilt PTX"
        ));
    }
    match CudaContext::device_count() {
        Ok(n) if n > 0 => None,
        Ok(_) => Some("no CUDA device found".into()),
        Err(e) => Some(format!("CUDA initialisation failed: {e}")),
    }
}

/// The environment variable naming a prebuilt PTX file of the kernels, used where libnvrtc is
/// missing (scripts/gpu-check.sh ships one with the binaries).
pub const PTX_ENV: &str = "CLUSTR_CUDA_PTX";

/// The kernels for a compute capability: compiled with NVRTC when it is present, else read
/// from the PTX file named by [`PTX_ENV`] (the driver compiles PTX for newer devices).
fn kernels_ptx(major: i32, minor: i32) -> Result<cudarc::nvrtc::Ptx> {
    if nvrtc_present() {
        return compile_kernels(major, minor);
    }
    match std::env::var(PTX_ENV) {
        Ok(path) => {
            let src = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
            Ok(cudarc::nvrtc::Ptx::from_src(src))
        }
        Err(_) => Err(Error::Unsupported(format!(
            "the CUDA runtime compiler (libnvrtc) was not found and {PTX_ENV} is not set"
        ))),
    }
}

/// Compiles the kernels to PTX for a compute capability (e.g. `(9, 0)`).
pub fn compile_kernels(major: i32, minor: i32) -> Result<cudarc::nvrtc::Ptx> {
    if !nvrtc_present() {
        return Err(Error::Unsupported(
            "the CUDA runtime compiler (libnvrtc) was not found".into(),
        ));
    }
    let opts = cudarc::nvrtc::CompileOptions {
        // No fused multiply-add, so results round like the CPU's scalar code.
        fmad: Some(false),
        options: vec![format!("--gpu-architecture=compute_{major}{minor}")],
        ..Default::default()
    };
    cudarc::nvrtc::compile_ptx_with_opts(KERNELS, opts).map_err(device_error)
}

/// Whether libcublas can be loaded (the GEMM form of (squared) Euclidean distances).
pub fn cublas_present() -> bool {
    // SAFETY: only tries to open the library by its candidate names.
    unsafe { cudarc::cublas::sys::is_culib_present() }
}

/// The GEMM form of (squared) Euclidean distances, as the CPU backend's: both sets centred on
/// the mean of `y`, their squared norms, `-2 x·yᵀ` by cuBLAS, then the epilogue kernel
/// (norms added, clamped at 0, cancellation-prone pairs recomputed directly, the root for
/// Euclidean) in place on the device.
struct SqGemm<F> {
    xc: ndarray::Array2<F>,
    nx: Vec<F>,
    yc: ndarray::Array2<F>,
    ny: Vec<F>,
    root: bool,
}

impl<F: Scalar> SqGemm<F> {
    fn new(x: ArrayView2<F>, y: ArrayView2<F>, root: bool) -> Self {
        let mu: Vec<F> = y
            .columns()
            .into_iter()
            .map(|c| {
                F::from_f64_lossy(c.iter().map(|v| v.to_f64_exact()).sum::<f64>() / y.nrows().max(1) as f64)
            })
            .collect();
        let centred = |a: ArrayView2<F>| {
            let mut c = a.as_standard_layout().into_owned();
            for mut row in c.rows_mut() {
                row.iter_mut().zip(&mu).for_each(|(v, &m)| *v -= m);
            }
            let norms = c
                .rows()
                .into_iter()
                .map(|r| {
                    let r = r.to_slice().expect("owned rows are contiguous");
                    F::dot(r, r)
                })
                .collect();
            (c, norms)
        };
        let ((xc, nx), (yc, ny)) = (centred(x), centred(y));
        SqGemm { xc, nx, yc, ny, root }
    }

    /// The distances on `b`, into `out` (row-major) when given, else left on the device (to
    /// time the device's part).
    fn on(&self, b: &CudaBackend, out: Option<&mut [F]>) -> Result<()> {
        let (xc, yc) = (
            self.xc.as_slice().expect("owned is standard"),
            self.yc.as_slice().expect("owned is standard"),
        );
        macro_rules! typed {
            ($t:ty, $suffix:literal, $tau:expr) => {
                if let (Some(xc), Some(nx), Some(yc), Some(ny)) = (
                    cast::<F, $t>(xc),
                    cast::<F, $t>(&self.nx),
                    cast::<F, $t>(yc),
                    cast::<F, $t>(&self.ny),
                ) {
                    let out = match out {
                        Some(o) => {
                            Some(cast_mut::<F, $t>(o).ok_or_else(|| Error::Device("element type".into()))?)
                        }
                        None => None,
                    };
                    return b.sq_gemm_typed::<$t>(
                        $suffix,
                        (xc, nx),
                        (yc, ny),
                        self.xc.ncols(),
                        ($tau, self.root),
                        out,
                    );
                }
            };
        }
        typed!(f32, "f32", 1e-2f32);
        typed!(f64, "f64", 1e-6f64);
        Err(Error::Unsupported(format!(
            "the CUDA backend has no {} kernels",
            F::DTYPE
        )))
    }
}

/// The CUDA backend on one device.
#[derive(Clone, Debug)]
pub struct CudaBackend {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
    /// The device's name.
    pub device_name: String,
    /// Most bytes of distances produced per block by [`Backend::pairwise`] (default 512 MiB).
    pub block_bytes: usize,
    /// Most bytes of a dissimilarity matrix kept on the device for the k-medoids swap scans
    /// (default: no limit but 80% of the free memory); a larger one is streamed by candidate
    /// rows.
    pub resident_bytes: usize,
    /// Chosen by `--backend auto`: where a GPU kernel cannot take a request (the swap scans'
    /// k ≤ 4096 and dense f32/f64 matrices, power k-means' k ≤ 64), the CPU runs it instead of
    /// an error.
    pub auto: bool,
    /// The cuBLAS handle on `stream`, created on first use.
    blas: Arc<std::sync::OnceLock<std::result::Result<Arc<cudarc::cublas::CudaBlas>, String>>>,
}

impl CudaBackend {
    /// The cuBLAS handle on this backend's stream (created once); an error without libcublas.
    pub(crate) fn blas(&self) -> Result<Arc<cudarc::cublas::CudaBlas>> {
        if !cublas_present() {
            return Err(Error::Unsupported("cuBLAS (libcublas) was not found".into()));
        }
        self.blas
            .get_or_init(|| {
                cudarc::cublas::CudaBlas::new(self.stream.clone())
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
            .map_err(Error::Device)
    }

    /// `Ok(None)` for an unsupported request when the backend was chosen automatically (the
    /// caller then runs on the CPU), else `r`.
    pub(crate) fn or_cpu<T>(&self, r: Result<T>) -> Result<Option<T>> {
        match r {
            Err(Error::Unsupported(_) | Error::NotOnDevice(_)) if self.auto => Ok(None),
            r => r.map(Some),
        }
    }
}

/// A metric as the kernels' code and parameter.
fn metric_code(kind: Option<MetricKind>) -> Result<(i32, f64)> {
    Ok(match kind {
        Some(MetricKind::SqEuclidean) => (0, 2.0),
        Some(MetricKind::Euclidean) => (1, 2.0),
        Some(MetricKind::Manhattan) => (2, 1.0),
        Some(MetricKind::Cosine) => (3, 2.0),
        Some(MetricKind::Minkowski(p)) if p.is_infinite() => (5, p),
        Some(MetricKind::Minkowski(p)) => (4, p),
        Some(MetricKind::Haversine) => (6, 2.0),
        None => {
            return Err(Error::NotOnDevice(
                "the CUDA backend runs the built-in metrics only, not a user-defined one".into(),
            ))
        }
    })
}

/// `s` as a slice of `T` when `F` is `T`.
fn cast<F: 'static, T: 'static>(s: &[F]) -> Option<&[T]> {
    // SAFETY: same type, checked through TypeId.
    (TypeId::of::<F>() == TypeId::of::<T>())
        .then(|| unsafe { std::slice::from_raw_parts(s.as_ptr().cast(), s.len()) })
}

fn cast_mut<F: 'static, T: 'static>(s: &mut [F]) -> Option<&mut [T]> {
    // SAFETY: same type, checked through TypeId.
    (TypeId::of::<F>() == TypeId::of::<T>())
        .then(|| unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast(), s.len()) })
}

impl CudaBackend {
    /// The backend on device `ordinal`, with the kernels compiled for it; an error (never a
    /// panic) when CUDA is missing.
    pub fn new(ordinal: usize) -> Result<Self> {
        if let Some(why) = unavailable() {
            return Err(Error::Unsupported(format!("backend = cuda: {why}")));
        }
        let ctx = CudaContext::new(ordinal).map_err(device_error)?;
        let (major, minor) = ctx.compute_capability().map_err(device_error)?;
        let ptx = kernels_ptx(major, minor)?;
        let module = ctx.load_module(ptx).map_err(device_error)?;
        let device_name = ctx.name().map_err(device_error)?;
        Ok(CudaBackend {
            stream: ctx.default_stream(),
            ctx,
            module,
            device_name,
            block_bytes: 512 << 20,
            resident_bytes: usize::MAX,
            auto: false,
            blas: Arc::default(),
        })
    }

    fn function(&self, name: &str) -> Result<CudaFunction> {
        self.module.load_function(name).map_err(device_error)
    }

    /// Pairwise distances in one precision `T` (f32 or f64).
    fn pairwise_typed<T>(
        &self,
        suffix: &str,
        x: &[T],
        y: &[T],
        d: usize,
        code: (i32, f64),
        out: &mut [T],
    ) -> Result<()>
    where
        T: DeviceFloat,
    {
        let (nx, ny) = (x.len() / d.max(1), y.len() / d.max(1));
        if nx == 0 || ny == 0 {
            return Ok(());
        }
        let f = self.function(&format!("pairwise_{suffix}"))?;
        let s = &self.stream;
        let y_dev = s.clone_htod(y).map_err(device_error)?;
        // (at most 65,535 thread blocks down the grid)
        let rows =
            (self.block_bytes / (ny * std::mem::size_of::<T>())).clamp(1, nx.min(65_535 * TILE as usize));
        let mut out_dev = s.alloc_zeros::<T>(rows * ny).map_err(device_error)?;
        for start in (0..nx).step_by(rows) {
            let nb = rows.min(nx - start);
            let x_dev = s
                .clone_htod(&x[start * d..(start + nb) * d])
                .map_err(device_error)?;
            self.launch_pairwise(
                &f,
                (&x_dev, nb),
                (&y_dev, ny),
                d,
                code,
                &mut out_dev.slice_mut(..),
            )?;
            s.memcpy_dtoh(&out_dev.slice(..nb * ny), &mut out[start * ny..(start + nb) * ny])
                .map_err(device_error)?;
        }
        s.synchronize().map_err(device_error)
    }

    /// Launches the pairwise kernel `f`: `out[i * ny + j] = d(x[i], y[j])` for the `nx` rows
    /// of `x` and `ny` of `y` (`d` columns), computed directly (no GEMM form).
    pub(crate) fn launch_pairwise<T: DeviceFloat>(
        &self,
        f: &CudaFunction,
        (x, nx): (&CudaSlice<T>, usize),
        (y, ny): (&CudaSlice<T>, usize),
        d: usize,
        code: (i32, f64),
        out: &mut cudarc::driver::CudaViewMut<'_, T>,
    ) -> Result<()> {
        let (nx_i, ny_i, d_i, ld) = (nx as i32, ny as i32, d as i32, ny as i64);
        let cfg = LaunchConfig {
            grid_dim: ((ny as u32).div_ceil(TILE), (nx as u32).div_ceil(TILE), 1),
            block_dim: (TILE, TILE, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = self.stream.launch_builder(f);
        launch
            .arg(x)
            .arg(y)
            .arg(out)
            .arg(&nx_i)
            .arg(&ny_i)
            .arg(&d_i)
            .arg(&ld)
            .arg(&code.0)
            .arg(&code.1);
        // SAFETY: the arguments match the kernel's signature; the buffers hold (at least)
        // nx × d, ny × d and nx × ny values.
        unsafe { launch.launch(cfg) }.map(|_| ()).map_err(device_error)
    }

    /// Sets `out[i] = 0` on the device for every `i` of `idx`.
    pub(crate) fn set_zero<T: DeviceFloat>(
        &self,
        suffix: &str,
        out: &mut cudarc::driver::CudaViewMut<'_, T>,
        idx: &[i64],
    ) -> Result<()> {
        if idx.is_empty() {
            return Ok(());
        }
        let f = self.function(&format!("set_zero_{suffix}"))?;
        let idx_dev = self.stream.clone_htod(idx).map_err(device_error)?;
        let m = idx.len() as i32;
        let mut launch = self.stream.launch_builder(&f);
        launch.arg(out).arg(&idx_dev).arg(&m);
        // SAFETY: the arguments match the kernel's signature; every index is within `out`
        // (the callers' matrices and rows).
        unsafe { launch.launch(LaunchConfig::for_num_elems(idx.len() as u32)) }
            .map(|_| ())
            .map_err(device_error)
    }

    /// [`SqGemm`] in one precision `T`: row blocks of at most `block_bytes` of output.
    fn sq_gemm_typed<T>(
        &self,
        suffix: &str,
        (xc, nx): (&[T], &[T]),
        (yc, ny): (&[T], &[T]),
        d: usize,
        (tau, root): (T, bool),
        mut out: Option<&mut [T]>,
    ) -> Result<()>
    where
        T: DeviceFloat,
        cudarc::cublas::CudaBlas: cudarc::cublas::Gemm<T>,
    {
        use cudarc::cublas::{sys::cublasOperation_t, Gemm, GemmConfig};
        let (n_x, n_y) = (nx.len(), ny.len());
        if n_x == 0 || n_y == 0 {
            return Ok(());
        }
        let f = self.function(&format!("sq_epilogue_{suffix}"))?;
        let s = &self.stream;
        let blas = self.blas()?;
        let (yc_dev, ny_dev) = (
            s.clone_htod(yc).map_err(device_error)?,
            s.clone_htod(ny).map_err(device_error)?,
        );
        let rows = (self.block_bytes / (n_y * size_of::<T>())).clamp(1, n_x);
        let mut out_dev = s.alloc_zeros::<T>(rows * n_y).map_err(device_error)?;
        let (ny_i, d_i, root_i) = (n_y as i32, d as i32, i32::from(root));
        for start in (0..n_x).step_by(rows) {
            let nb = rows.min(n_x - start);
            let xc_dev = s
                .clone_htod(&xc[start * d..(start + nb) * d])
                .map_err(device_error)?;
            let nx_dev = s.clone_htod(&nx[start..start + nb]).map_err(device_error)?;
            // Row-major out (nb × n_y) = xc · ycᵀ is column-major outᵀ = ycᵀᵀ · xc: with the
            // row-major buffers read as column-major, A = yc (d × n_y, transposed) and
            // B = xc (d × nb).
            let cfg = GemmConfig {
                transa: cublasOperation_t::CUBLAS_OP_T,
                transb: cublasOperation_t::CUBLAS_OP_N,
                m: ny_i,
                n: nb as i32,
                k: d_i,
                alpha: T::from_f64(-2.0),
                lda: d_i,
                ldb: d_i,
                beta: T::from_f64(0.0),
                ldc: ny_i,
            };
            // SAFETY: yc_dev holds n_y × d values, xc_dev nb × d, out_dev at least nb × n_y, as
            // the configuration says.
            unsafe { blas.gemm(cfg, &yc_dev, &xc_dev, &mut out_dev) }.map_err(device_error)?;
            let nb_i = nb as i32;
            let mut launch = s.launch_builder(&f);
            launch
                .arg(&mut out_dev)
                .arg(&xc_dev)
                .arg(&yc_dev)
                .arg(&nx_dev)
                .arg(&ny_dev)
                .arg(&nb_i)
                .arg(&ny_i)
                .arg(&d_i)
                .arg(&tau)
                .arg(&root_i);
            // SAFETY: the arguments match the kernel's signature; out_dev holds nb × n_y
            // values, xc_dev nb × d, yc_dev n_y × d, nx_dev nb, ny_dev n_y.
            unsafe { launch.launch(LaunchConfig::for_num_elems((nb * n_y) as u32)) }.map_err(device_error)?;
            if let Some(out) = out.as_deref_mut() {
                s.memcpy_dtoh(
                    &out_dev.slice(..nb * n_y),
                    &mut out[start * n_y..(start + nb) * n_y],
                )
                .map_err(device_error)?;
            }
        }
        s.synchronize().map_err(device_error)
    }

    /// Seconds the device takes for the squared-Euclidean matrix of `x` with itself by the
    /// GEMM form (uploads, GEMM and epilogue, best of `rounds`), the output consumed in place
    /// (not copied to the host): what the kernels reach before host memory limits them.
    pub fn sqeuclidean_device_seconds<F: Scalar>(&self, x: ArrayView2<F>, rounds: usize) -> Result<f64> {
        if !cublas_present() {
            return Err(Error::Unsupported("cuBLAS (libcublas) was not found".into()));
        }
        let sq = SqGemm::new(x, x, false);
        let mut best = f64::INFINITY;
        for _ in 0..rounds.max(1) {
            let t = std::time::Instant::now();
            sq.on(self, None)?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        Ok(best)
    }

    /// Nearest and second-nearest centres in one precision `T`.
    fn nearest_two_typed<T>(
        &self,
        suffix: &str,
        x: &[T],
        centres: &[T],
        d: usize,
        code: (i32, f64),
    ) -> Result<Assignment<T>>
    where
        T: DeviceFloat,
    {
        let (n, k) = (x.len() / d.max(1), centres.len() / d.max(1));
        if n == 0 {
            return Ok(Default::default());
        }
        let f = self.function(&format!("nearest_two_{suffix}"))?;
        let s = &self.stream;
        let x_dev = s.clone_htod(x).map_err(device_error)?;
        let c_dev = s.clone_htod(centres).map_err(device_error)?;
        let mut first = s.alloc_zeros::<i32>(n).map_err(device_error)?;
        let mut second = s.alloc_zeros::<i32>(n).map_err(device_error)?;
        let mut first_d = s.alloc_zeros::<T>(n).map_err(device_error)?;
        let mut second_d = s.alloc_zeros::<T>(n).map_err(device_error)?;
        let (n_i, k_i, d_i) = (n as i32, k as i32, d as i32);
        let mut launch = s.launch_builder(&f);
        launch
            .arg(&x_dev)
            .arg(&c_dev)
            .arg(&n_i)
            .arg(&k_i)
            .arg(&d_i)
            .arg(&code.0)
            .arg(&code.1)
            .arg(&mut first)
            .arg(&mut first_d)
            .arg(&mut second)
            .arg(&mut second_d);
        // SAFETY: the arguments match the kernel's signature and the buffers' lengths.
        unsafe { launch.launch(LaunchConfig::for_num_elems(n as u32)) }.map_err(device_error)?;
        let out = (
            s.clone_dtoh(&first).map_err(device_error)?,
            s.clone_dtoh(&first_d).map_err(device_error)?,
            s.clone_dtoh(&second).map_err(device_error)?,
            s.clone_dtoh(&second_d).map_err(device_error)?,
        );
        s.synchronize().map_err(device_error)?;
        Ok(out)
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn pairwise<F: Scalar, M: Metric>(
        &self,
        x: ArrayView2<F>,
        y: ArrayView2<F>,
        metric: &M,
        out: ArrayViewMut2<F>,
    ) -> Result<()> {
        check_pairwise_shapes(&x, &y, metric, Some(out.dim()))?;
        let code = metric_code(metric.kind())?;
        if code.0 <= 1 && cublas_present() && x.ncols() > 0 {
            let sq = SqGemm::new(x, y, code.0 == 1);
            return fill_c_order(out, |mut out| {
                let o = out.as_slice_mut().expect("standard layout");
                sq.on(self, Some(o))
            });
        }
        let (x, y) = (standard_layout(x), standard_layout(y));
        let d = x.ncols();
        let (xs, ys) = (x.as_slice().expect("standard"), y.as_slice().expect("standard"));
        fill_c_order(out, |mut out| {
            let o = out.as_slice_mut().expect("standard layout");
            if let (Some(a), Some(b), Some(o)) =
                (cast::<F, f32>(xs), cast::<F, f32>(ys), cast_mut::<F, f32>(o))
            {
                return self.pairwise_typed("f32", a, b, d, code, o);
            }
            let o = out.as_slice_mut().expect("standard layout");
            match (cast::<F, f64>(xs), cast::<F, f64>(ys), cast_mut::<F, f64>(o)) {
                (Some(a), Some(b), Some(o)) => self.pairwise_typed("f64", a, b, d, code, o),
                _ => Err(Error::Unsupported(format!(
                    "the CUDA backend has no {} kernels",
                    F::DTYPE
                ))),
            }
        })
    }

    fn nearest<F: Scalar, M: Metric>(
        &self,
        x: ArrayView2<F>,
        centres: ArrayView2<F>,
        metric: &M,
    ) -> Result<Vec<Nearest<F>>> {
        Ok(self
            .nearest_two(x, centres, metric)?
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
        check_pairwise_shapes(&x, &centres, metric, None)?;
        if centres.nrows() == 0 {
            return Err(Error::EmptyInput {
                what: "no centres to assign to".into(),
            });
        }
        let code = metric_code(metric.kind())?;
        let (x, c) = (standard_layout(x), standard_layout(centres));
        let d = x.ncols();
        let (xs, cs) = (x.as_slice().expect("standard"), c.as_slice().expect("standard"));
        let (first, first_d, second, second_d): (Vec<i32>, Vec<F>, Vec<i32>, Vec<F>) =
            if let (Some(a), Some(b)) = (cast::<F, f32>(xs), cast::<F, f32>(cs)) {
                let (f, fd, s, sd) = self.nearest_two_typed("f32", a, b, d, code)?;
                let conv = |v: Vec<f32>| v.into_iter().map(|t| F::from_f64_lossy(f64::from(t))).collect();
                (f, conv(fd), s, conv(sd))
            } else if let (Some(a), Some(b)) = (cast::<F, f64>(xs), cast::<F, f64>(cs)) {
                let (f, fd, s, sd) = self.nearest_two_typed("f64", a, b, d, code)?;
                let conv = |v: Vec<f64>| v.into_iter().map(F::from_f64_lossy).collect();
                (f, conv(fd), s, conv(sd))
            } else {
                return Err(Error::Unsupported(format!(
                    "the CUDA backend has no {} kernels",
                    F::DTYPE
                )));
            };
        Ok((0..first.len())
            .map(|i| NearestTwo {
                first: Nearest {
                    index: first[i] as usize,
                    distance: first_d[i],
                },
                second: (second[i] >= 0).then(|| Nearest {
                    index: second[i] as usize,
                    distance: second_d[i],
                }),
            })
            .collect())
    }

    fn assigns_off_host(&self) -> bool {
        true
    }

    fn swap_gains<'g, D: Dissimilarity>(
        &self,
        d: &'g D,
        k: usize,
    ) -> Result<Option<BoxedGains<'g, D::Value>>> {
        self.or_cpu(self.gains_on_device(d, k))
    }

    fn points_swap_gains<'g, F: Scalar, M: Metric>(
        &self,
        x: ArrayView2<'g, F>,
        metric: &M,
        k: usize,
    ) -> Result<Option<PointsGains<'g, F>>> {
        Ok(self.or_cpu(self.points_gains_on_device(x, metric, k))?.flatten())
    }

    fn power_points<'a, F: Scalar>(
        &self,
        x: ArrayView2<'a, F>,
        k: usize,
    ) -> Result<Option<BoxedPowerPoints<'a, F>>> {
        self.or_cpu(self.power_points_on_device(x, k))
    }

    fn rff_features<F: Scalar>(
        &self,
        x: ArrayView2<F>,
        omega: ArrayView2<F>,
        offset: &[F],
        scale: F,
    ) -> Result<Option<Array2<F>>> {
        self.rff_map(x, omega, offset, scale).map(Some)
    }
}

impl CudaBackend {
    /// The context's device ordinal.
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    /// The device's measured cuBLAS SGEMM throughput on n × n matrices, in GFLOP/s (best
    /// of three after a warm-up): the yardstick of the distance kernels.
    pub fn sgemm_gflops(&self, n: usize) -> Result<f64> {
        use cudarc::cublas::{sys::cublasOperation_t, Gemm, GemmConfig};
        let s = &self.stream;
        let blas = self.blas()?;
        let a = s.clone_htod(&vec![1.0f32; n * n]).map_err(device_error)?;
        let b = s.clone_htod(&vec![0.5f32; n * n]).map_err(device_error)?;
        let mut c = s.alloc_zeros::<f32>(n * n).map_err(device_error)?;
        let ni = n as i32;
        let cfg = GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_N,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: ni,
            n: ni,
            k: ni,
            alpha: 1.0f32,
            lda: ni,
            ldb: ni,
            beta: 0.0f32,
            ldc: ni,
        };
        let mut best = f64::INFINITY;
        for round in 0..4 {
            let t = std::time::Instant::now();
            // SAFETY: the three buffers hold n × n values, as the configuration says.
            unsafe { blas.gemm(cfg, &a, &b, &mut c) }.map_err(device_error)?;
            s.synchronize().map_err(device_error)?;
            if round > 0 {
                best = best.min(t.elapsed().as_secs_f64());
            }
        }
        Ok(2.0 * (n as f64).powi(3) / best / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernels compile with NVRTC for Ampere and Hopper wherever libnvrtc is found
    /// (no device needed); skipped, and said so, where it is not.
    #[test]
    fn kernels_compile_with_nvrtc() {
        if !nvrtc_present() {
            eprintln!("SKIPPED kernels_compile_with_nvrtc: libnvrtc not found (set LD_LIBRARY_PATH)");
            return;
        }
        for (major, minor) in [(8, 0), (9, 0)] {
            let ptx = compile_kernels(major, minor).unwrap().to_src();
            for entry in [
                "pairwise_f32",
                "pairwise_f64",
                "nearest_two_f32",
                "nearest_two_f64",
                "sq_epilogue_f32",
                "sq_epilogue_f64",
                "set_zero_f32",
                "set_zero_f64",
                "swap_gains_f32",
                "swap_gains_f64",
                "rff_map_f32",
                "rff_map_f64",
                "rff_epilogue_f32",
                "rff_epilogue_f64",
                "power_weights_f32",
                "power_weights_f64",
                "power_block_sums_f32",
                "power_block_sums_f64",
                "power_distances_f32",
                "power_distances_f64",
            ] {
                assert!(
                    ptx.contains(&format!(".entry {entry}")),
                    "{entry} missing for sm_{major}{minor}"
                );
            }
        }
    }

    #[test]
    fn unavailable_says_why_without_panicking() {
        match unavailable() {
            Some(why) => eprintln!("no CUDA here: {why}"),
            None => eprintln!("a CUDA device is available"),
        }
        let err = CudaBackend::new(0).err();
        assert_eq!(err.is_some(), unavailable().is_some());
    }
}
