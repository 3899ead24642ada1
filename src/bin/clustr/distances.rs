//! `clustr distances INPUT --metric M --out D.npy [--dtype f32|f64]`: the full distance matrix,
//! computed and written by blocks of rows (memory O(block × n), so the matrix may exceed
//! memory), renamed into place only when complete. A sparse file (.npz, .mtx, svmlight) under
//! euclidean, sqeuclidean, cosine or manhattan is computed from its sparse rows; under other
//! metrics from its dense form.

use crate::harness::{
    load_points, load_sparse_points, print_json, progress_bar, secs, sparse_rows, CliError, CliResult, Dtype,
    ExecArgs, OutputArgs,
};
use clustr::data::npy::NpyWriter;
use clustr::{Backend, Metric, MetricKind, Scalar};
use ndarray::{s, Array2};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Points, rows = samples (.npy or .csv). A sparse .npz, .mtx or svmlight file is
    /// computed from its sparse rows under euclidean, sqeuclidean, cosine or manhattan, from
    /// its dense form otherwise.
    input: PathBuf,
    /// euclidean, sqeuclidean, manhattan, cosine, minkowski:P, chebyshev, haversine
    /// (haversine: rows are latitude, longitude in degrees; distances in km).
    #[arg(long, default_value = "euclidean")]
    metric: String,
    /// Output .npy file (n × n).
    #[arg(long)]
    out: PathBuf,
    /// Element type of the computation and the output: f32 or f64.
    #[arg(long, value_enum, default_value = "f32")]
    dtype: Dtype,
    #[command(flatten)]
    exec: ExecArgs,
    #[command(flatten)]
    output: OutputArgs,
}

/// Rows per progress step (the backend parallelises within each step).
const STEP_ROWS: usize = 2048;

pub fn run(a: Args) -> CliResult {
    let metric: MetricKind = a.metric.parse()?;
    if a.out.extension().and_then(|e| e.to_str()) != Some("npy") {
        return Err(CliError::usage(format!(
            "--out {}: the distance matrix is written as .npy",
            a.out.display()
        )));
    }
    match a.dtype {
        Dtype::F32 => compute::<f32>(&a, metric),
        Dtype::F64 => compute::<f64>(&a, metric),
    }
}

/// The points as read: dense, or sparse rows under a metric computed on them.
enum Points<F> {
    Dense(Array2<F>),
    Sparse(clustr::data::Csr<F>),
}

fn compute<F: Scalar>(a: &Args, metric: MetricKind) -> CliResult {
    let t0 = Instant::now();
    let x = if sparse_rows(&a.input, metric) {
        Points::Sparse(load_sparse_points::<F>(&a.input)?)
    } else {
        let x = load_points::<F>(&a.input)?;
        metric
            .check_dim(x.ncols())
            .and_then(|()| clustr::data::validate::check_metric_magnitude(x.view(), &metric))
            .map_err(|e| CliError::from(e).prefixed(&a.input))?;
        Points::Dense(x)
    };
    let read_s = secs(t0);
    let (n, d) = match &x {
        Points::Dense(x) => x.dim(),
        Points::Sparse(x) => (x.view().nrows(), x.view().ncols()),
    };
    let bar = progress_bar(n as u64, "distances", "rows", &a.output);
    let t1 = Instant::now();
    let rows = STEP_ROWS.min(n);
    let block_bytes = clustr::memory::product(&[rows, n, size_of::<F>()]);
    clustr::memory::check(
        || format!("a {rows} x {n} block of distances"),
        block_bytes,
        clustr::error::hints::DISTANCE_MATRIX,
    )?;
    let ((), ran) = a.exec.run("distances", |backend| {
        let index = match &x {
            Points::Sparse(x) => Some(
                clustr::dissim::SparseRows::checked(x.view(), metric, block_bytes, "the distance matrix")
                    .map_err(|e| CliError::from(e).prefixed(&a.input))?,
            ),
            Points::Dense(_) => None,
        };
        let mut writer = NpyWriter::<F>::create(&a.out, n, n)?;
        let mut block = Array2::<F>::zeros((rows, n));
        for start in (0..n).step_by(STEP_ROWS) {
            let end = (start + STEP_ROWS).min(n);
            let mut out = block.slice_mut(s![..end - start, ..]);
            if let Some(sparse) = &index {
                sparse.distance_rows(start, out.view_mut());
            } else if let Points::Dense(x) = &x {
                backend.pairwise(x.slice(s![start..end, ..]), x.view(), &metric, out.view_mut())?;
            }
            writer.write_rows(out.view())?;
            bar.inc((end - start) as u64);
        }
        writer.finish()?;
        Ok(())
    })?;
    bar.finish_and_clear();
    let dist_s = secs(t1);
    crate::harness::commit_outputs()?;
    if !a.output.quiet {
        errln!(
            "clustr: wrote {n} x {n} {} {metric} distances to {} in {dist_s:.3} s ({} threads)",
            F::DTYPE,
            a.out.display(),
            ran.threads
        );
    }
    if a.output.json {
        print_json(&json!({
            "algorithm": "distances",
            "n": n,
            "d": d,
            "metric": metric.to_string(),
            "dtype": F::DTYPE,
            "out": a.out.display().to_string(),
            "backend": ran.backend,
            "threads": ran.threads,
            "seconds": {"total": secs(t0), "read": read_s, "distances": dist_s},
        }))?;
    }
    Ok(())
}
