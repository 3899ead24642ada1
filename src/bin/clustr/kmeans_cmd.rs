//! `clustr kmeans INPUT --k K [--init k-means++|random|FILE] [--n-init N] [--tol T] ...`.

use crate::harness::{
    iteration_bar, load_points, secs, AlgoArgs, CliError, CliResult, Dtype, ExecArgs, OutputArgs, Report,
};
use clustr::data::read_matrix;
use clustr::kmeans::{Algorithm, KMeans, KMeansInit};
use clustr::{Fit, Scalar};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Points, rows = samples (.npy or .csv).
    input: PathBuf,
    #[command(flatten)]
    algo: AlgoArgs,
    /// lloyd, hamerly, elkan or auto (hamerly and elkan keep bounds that skip distance
    /// computations, with Lloyd's result; auto picks one from n, k and d).
    #[arg(long, default_value = "lloyd")]
    algorithm: String,
    /// k-means++ (greedy, as scikit-learn), random, or a .npy/.csv file of k initial centres.
    #[arg(long, default_value = "k-means++")]
    init: String,
    /// Runs from different seeds, the lowest inertia kept (default: 1, or 10 with random).
    #[arg(long)]
    n_init: Option<usize>,
    /// Relative tolerance, multiplied by the mean feature variance.
    #[arg(long, default_value_t = 1e-4)]
    tol: f64,
    /// Element type of the computation: f32 or f64.
    #[arg(long, value_enum, default_value = "f64")]
    dtype: Dtype,
    #[command(flatten)]
    exec: ExecArgs,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn run(a: Args) -> CliResult {
    let algorithm = match a.algorithm.as_str() {
        "lloyd" => Algorithm::Lloyd,
        "hamerly" => Algorithm::Hamerly,
        "elkan" => Algorithm::Elkan,
        "auto" => Algorithm::Auto,
        other => {
            return Err(CliError::usage(format!(
                "invalid parameter algorithm = {other}: expected lloyd, hamerly, elkan or auto"
            )))
        }
    };
    let init = match a.init.as_str() {
        "k-means++" | "kmeans++" | "kmeanspp" => KMeansInit::KMeansPlusPlus,
        "random" => KMeansInit::Random,
        file => KMeansInit::Given(read_matrix::<f64>(file)?),
    };
    let mut params = KMeans::new(a.algo.k)
        .init(init)
        .tol(a.tol)
        .seed(a.algo.seed)
        .algorithm(algorithm);
    if let Some(n) = a.n_init {
        params = params.n_init(n);
    }
    if let Some(m) = a.algo.max_iter {
        params = params.max_iter(m);
    }
    match a.dtype {
        Dtype::F32 => fit::<f32>(params, &a),
        Dtype::F64 => fit::<f64>(params, &a),
    }
}

fn fit<F: Scalar>(params: KMeans, a: &Args) -> CliResult {
    let started = Instant::now();
    let ((model, d, read_s, fit_s), threads) = a.exec.run(|_backend| {
        let t0 = Instant::now();
        let x = load_points::<F>(&a.input)?;
        let read_s = secs(t0);
        let (bar, progress) = iteration_bar(params.max_iter, "kmeans", &a.output);
        let t1 = Instant::now();
        let model = params.clone().progress(progress).fit(&x.view())?;
        bar.finish_and_clear();
        Ok((model, x.ncols(), read_s, secs(t1)))
    })?;
    let mut extra = serde_json::Map::new();
    let centers: Vec<Vec<f64>> = model
        .centers
        .rows()
        .into_iter()
        .map(|r| r.iter().map(|v| v.to_f64_exact()).collect())
        .collect();
    extra.insert("centers".into(), json!(centers));
    extra.insert("inertia".into(), json!(model.inertia));
    extra.insert("kmeans_algorithm".into(), json!(model.algorithm.name()));
    Report {
        algorithm: "kmeans",
        n: model.labels.len(),
        d: Some(d),
        k: Some(a.algo.k),
        model: &model,
        backend: "cpu",
        threads,
        seed: a.algo.seed,
        seconds: vec![("read", read_s), ("fit", fit_s)],
        extra,
    }
    .emit(&a.algo, &a.output, started)
}
