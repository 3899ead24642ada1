//! Backends run the hot kernels: pairwise distance blocks and nearest-centre assignment.
//! Algorithms never hand-roll a distance loop; they call a [`Backend`] (or a
//! [`crate::Dissimilarity`]).

mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod device;
mod nearest;
pub(crate) use nearest::Pick;

pub use cpu::CpuBackend;
#[cfg(feature = "cuda")]
pub use cuda::CudaBackend;

use crate::dissim::{DenseMatrix, Dissimilarity};
use crate::error::{Error, Result};
use crate::metric::{Metric, MetricKind};
use crate::scalar::Scalar;
use device::{BoxedGains, BoxedPowerPoints, PointsGains};
use ndarray::{Array2, ArrayView2, ArrayViewMut2};
use std::str::FromStr;

impl<F: Scalar> DenseMatrix<'static, F> {
    /// Computes the full matrix of `points` with `backend`, refusing when it would need more
    /// than [`crate::memory::max_memory`].
    pub fn from_points<M: Metric, B: Backend>(
        points: ArrayView2<F>,
        metric: &M,
        backend: &B,
    ) -> Result<Self> {
        DenseMatrix::from_points_filled(points, metric, |out| {
            backend.pairwise(points, points, metric, out)
        })
    }
}

/// The nearest centre of a point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Nearest<F> {
    /// Index of the centre (the lowest index on ties).
    pub index: usize,
    /// Distance to it.
    pub distance: F,
}

/// How exact the distances of a nearest-centre search must be; the labels are exact either
/// way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distances {
    /// The distance of a direct computation, whatever the path.
    Exact,
    /// Within the kernel's error bound of the exact distance (a GEMM score plus the point's
    /// norm): enough where the distances are only reported (Lloyd's inertia per iteration),
    /// and the exact recomputation is saved.
    Approximate,
}

/// The nearest and second-nearest centres of a point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NearestTwo<F> {
    /// The nearest centre.
    pub first: Nearest<F>,
    /// The second nearest (`None` when there is one centre).
    pub second: Option<Nearest<F>>,
}

/// The hot kernels. Every implementation gives results that do not depend on the number of
/// threads.
pub trait Backend: Send + Sync {
    /// Short name for reports (`"cpu"`, `"cuda"`).
    fn name(&self) -> &'static str;

    /// `out[i][j] = metric(x[i], y[j])`; `out` is `x.nrows() × y.nrows()`.
    fn pairwise<F: Scalar, M: Metric>(
        &self,
        x: ArrayView2<F>,
        y: ArrayView2<F>,
        metric: &M,
        out: ArrayViewMut2<F>,
    ) -> Result<()>;

    /// The nearest of `centres` for each row of `x`.
    fn nearest<F: Scalar, M: Metric>(
        &self,
        x: ArrayView2<F>,
        centres: ArrayView2<F>,
        metric: &M,
    ) -> Result<Vec<Nearest<F>>>;

    /// The nearest and second-nearest of `centres` for each row of `x`.
    fn nearest_two<F: Scalar, M: Metric>(
        &self,
        x: ArrayView2<F>,
        centres: ArrayView2<F>,
        metric: &M,
    ) -> Result<Vec<NearestTwo<F>>>;

    /// The nearest centre of every row of `x` under squared Euclidean distance (distances as
    /// exact as `distances` asks), handed to `fold` chunk by chunk while the chunk's rows are
    /// still in cache: chunks of `chunk` rows in parallel, each folded from
    /// `init()` over its rows in order (`fold(acc, first_row, rows, nearest)`, possibly in
    /// several calls per chunk); the results in chunk order, so sums over them do not depend
    /// on the thread count. (Lloyd's k-means assigns and sums each chunk in one pass.)
    fn nearest_fold<F, T, I, G>(
        &self,
        x: ArrayView2<F>,
        centres: ArrayView2<F>,
        _distances: Distances,
        chunk: usize,
        init: I,
        fold: G,
    ) -> Result<Vec<T>>
    where
        F: Scalar,
        T: Send,
        I: Fn() -> T + Sync,
        G: Fn(&mut T, usize, ArrayView2<F>, &[Nearest<F>]) + Sync,
    {
        let near = self.nearest(x, centres, &MetricKind::SqEuclidean)?;
        Ok(fold_chunks(x, &near, chunk, init, fold))
    }

    // Capabilities: what a device may take over from a family. The CPU's answers are the
    // defaults (`false`, `None`: the family runs its own loop).

    /// Whether nearest-centre searches run away from the host, so that an algorithm keeping
    /// per-point bounds on the host (Elkan, Hamerly) gains nothing over Lloyd's.
    fn assigns_off_host(&self) -> bool {
        false
    }

    /// FastPAM1's candidate scans of `d` with `k` medoids on a device.
    fn swap_gains<'g, D: Dissimilarity>(
        &self,
        d: &'g D,
        k: usize,
    ) -> Result<Option<BoxedGains<'g, D::Value>>> {
        let _ = (d, k);
        Ok(None)
    }

    /// FastPAM1's candidate scans of the points `x` (standard layout) under `metric`, the
    /// dissimilarities computed on the device (no n × n matrix on the host).
    fn points_swap_gains<'g, F: Scalar, M: Metric>(
        &self,
        x: ArrayView2<'g, F>,
        metric: &M,
        k: usize,
    ) -> Result<Option<PointsGains<'g, F>>> {
        let _ = (x, metric, k);
        Ok(None)
    }

    /// Power k-means' points `x` (this process's rows) held on a device for `k` centroids.
    fn power_points<'a, F: Scalar>(
        &self,
        x: ArrayView2<'a, F>,
        k: usize,
    ) -> Result<Option<BoxedPowerPoints<'a, F>>> {
        let _ = (x, k);
        Ok(None)
    }

    /// Random Fourier features `scale · cos(x Ωᵀ + offset)` of every row, computed on a
    /// device.
    fn rff_features<F: Scalar>(
        &self,
        x: ArrayView2<F>,
        omega: ArrayView2<F>,
        offset: &[F],
        scale: F,
    ) -> Result<Option<Array2<F>>> {
        let _ = (x, omega, offset, scale);
        Ok(None)
    }
}

/// The `--backend` choice of the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// CUDA when built in and a device is present, else CPU.
    #[default]
    Auto,
    /// The CPU backend.
    Cpu,
    /// The CUDA backend (feature `cuda`).
    Cuda,
}

impl FromStr for BackendChoice {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(BackendChoice::Auto),
            "cpu" => Ok(BackendChoice::Cpu),
            "cuda" | "gpu" => Ok(BackendChoice::Cuda),
            _ => Err(Error::param("backend", s, "expected auto, cpu or cuda")),
        }
    }
}

impl BackendChoice {
    /// `cpu`: the CPU backend; `cuda`: the CUDA backend, or an error naming what is missing
    /// (the feature, the libraries or a device); `auto`: CUDA when it is built in and a device
    /// is found, else the CPU.
    pub fn resolve(self) -> Result<AnyBackend> {
        match self {
            BackendChoice::Cpu => Ok(AnyBackend::Cpu(CpuBackend::default())),
            BackendChoice::Auto => Ok(match cuda_backend() {
                #[cfg(feature = "cuda")]
                Ok(AnyBackend::Cuda(mut b)) => {
                    b.auto = true;
                    AnyBackend::Cuda(b)
                }
                _ => AnyBackend::Cpu(CpuBackend::default()),
            }),
            BackendChoice::Cuda => cuda_backend(),
        }
    }
}

/// The CUDA backend on device 0, created once per process (the kernels are compiled then).
#[cfg(feature = "cuda")]
fn cuda_backend() -> Result<AnyBackend> {
    static CUDA: std::sync::OnceLock<std::result::Result<CudaBackend, String>> = std::sync::OnceLock::new();
    CUDA.get_or_init(|| CudaBackend::new(0).map_err(|e| e.to_string()))
        .clone()
        .map(AnyBackend::Cuda)
        .map_err(Error::Unsupported)
}

#[cfg(not(feature = "cuda"))]
fn cuda_backend() -> Result<AnyBackend> {
    Err(Error::Unsupported(
        "backend = cuda: this build has no CUDA backend (rebuild with --features cuda)".into(),
    ))
}

/// A backend chosen at run time.
#[derive(Clone, Debug)]
pub enum AnyBackend {
    /// The CPU backend.
    Cpu(CpuBackend),
    /// The CUDA backend.
    #[cfg(feature = "cuda")]
    Cuda(CudaBackend),
}

impl Default for AnyBackend {
    /// The CPU backend (what the algorithms use unless given another).
    fn default() -> Self {
        AnyBackend::Cpu(CpuBackend::default())
    }
}

impl Backend for AnyBackend {
    fn name(&self) -> &'static str {
        match self {
            AnyBackend::Cpu(b) => b.name(),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => b.name(),
        }
    }

    fn pairwise<F: Scalar, M: Metric>(
        &self,
        x: ArrayView2<F>,
        y: ArrayView2<F>,
        metric: &M,
        out: ArrayViewMut2<F>,
    ) -> Result<()> {
        match self {
            AnyBackend::Cpu(b) => b.pairwise(x, y, metric, out),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => b.pairwise(x, y, metric, out),
        }
    }

    fn nearest<F: Scalar, M: Metric>(
        &self,
        x: ArrayView2<F>,
        centres: ArrayView2<F>,
        metric: &M,
    ) -> Result<Vec<Nearest<F>>> {
        match self {
            AnyBackend::Cpu(b) => b.nearest(x, centres, metric),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => b.nearest(x, centres, metric),
        }
    }

    fn nearest_fold<F, T, I, G>(
        &self,
        x: ArrayView2<F>,
        centres: ArrayView2<F>,
        distances: Distances,
        chunk: usize,
        init: I,
        fold: G,
    ) -> Result<Vec<T>>
    where
        F: Scalar,
        T: Send,
        I: Fn() -> T + Sync,
        G: Fn(&mut T, usize, ArrayView2<F>, &[Nearest<F>]) + Sync,
    {
        match self {
            AnyBackend::Cpu(b) => b.nearest_fold(x, centres, distances, chunk, init, fold),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => b.nearest_fold(x, centres, distances, chunk, init, fold),
        }
    }

    fn nearest_two<F: Scalar, M: Metric>(
        &self,
        x: ArrayView2<F>,
        centres: ArrayView2<F>,
        metric: &M,
    ) -> Result<Vec<NearestTwo<F>>> {
        match self {
            AnyBackend::Cpu(b) => b.nearest_two(x, centres, metric),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => b.nearest_two(x, centres, metric),
        }
    }

    fn assigns_off_host(&self) -> bool {
        match self {
            AnyBackend::Cpu(b) => b.assigns_off_host(),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => b.assigns_off_host(),
        }
    }

    fn swap_gains<'g, D: Dissimilarity>(
        &self,
        d: &'g D,
        k: usize,
    ) -> Result<Option<BoxedGains<'g, D::Value>>> {
        match self {
            AnyBackend::Cpu(b) => b.swap_gains(d, k),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => b.swap_gains(d, k),
        }
    }

    fn points_swap_gains<'g, F: Scalar, M: Metric>(
        &self,
        x: ArrayView2<'g, F>,
        metric: &M,
        k: usize,
    ) -> Result<Option<PointsGains<'g, F>>> {
        match self {
            AnyBackend::Cpu(b) => b.points_swap_gains(x, metric, k),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => b.points_swap_gains(x, metric, k),
        }
    }

    fn power_points<'a, F: Scalar>(
        &self,
        x: ArrayView2<'a, F>,
        k: usize,
    ) -> Result<Option<BoxedPowerPoints<'a, F>>> {
        match self {
            AnyBackend::Cpu(b) => b.power_points(x, k),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => b.power_points(x, k),
        }
    }

    fn rff_features<F: Scalar>(
        &self,
        x: ArrayView2<F>,
        omega: ArrayView2<F>,
        offset: &[F],
        scale: F,
    ) -> Result<Option<Array2<F>>> {
        match self {
            AnyBackend::Cpu(b) => b.rff_features(x, omega, offset, scale),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => b.rff_features(x, omega, offset, scale),
        }
    }
}

/// [`Backend::nearest_fold`] over results already computed for all rows.
pub(crate) fn fold_chunks<F, T, I, G>(
    x: ArrayView2<F>,
    near: &[Nearest<F>],
    chunk: usize,
    init: I,
    fold: G,
) -> Vec<T>
where
    F: Scalar,
    T: Send,
    I: Fn() -> T + Sync,
    G: Fn(&mut T, usize, ArrayView2<F>, &[Nearest<F>]) + Sync,
{
    use rayon::prelude::*;
    let chunk = chunk.max(1);
    x.axis_chunks_iter(ndarray::Axis(0), chunk)
        .into_par_iter()
        .zip(near.par_chunks(chunk))
        .enumerate()
        .map(|(c, (rows, near))| {
            let mut acc = init();
            fold(&mut acc, c * chunk, rows, near);
            acc
        })
        .collect()
}

/// Runs `fill` on `out` when it is in standard (C) layout, else on a C-order buffer then
/// copied into `out`: the kernels write contiguous rows.
pub(crate) fn fill_c_order<F: Scalar>(
    mut out: ArrayViewMut2<F>,
    fill: impl FnOnce(ArrayViewMut2<F>) -> Result<()>,
) -> Result<()> {
    if out.is_standard_layout() {
        return fill(out);
    }
    let mut buf = ndarray::Array2::<F>::zeros(out.dim());
    fill(buf.view_mut())?;
    out.assign(&buf);
    Ok(())
}

/// Checks the shapes of a pairwise request.
pub(crate) fn check_pairwise_shapes<F, M: Metric>(
    x: &ArrayView2<F>,
    y: &ArrayView2<F>,
    metric: &M,
    out: Option<(usize, usize)>,
) -> Result<()> {
    if x.ncols() != y.ncols() {
        return Err(Error::ShapeMismatch {
            what: "columns of the two point sets".into(),
            expected: x.ncols().to_string(),
            got: y.ncols().to_string(),
        });
    }
    metric.check_dim(x.ncols())?;
    if let Some(dim) = out {
        if dim != (x.nrows(), y.nrows()) {
            return Err(Error::ShapeMismatch {
                what: "distance block".into(),
                expected: format!("{} x {}", x.nrows(), y.nrows()),
                got: format!("{} x {}", dim.0, dim.1),
            });
        }
    }
    Ok(())
}
