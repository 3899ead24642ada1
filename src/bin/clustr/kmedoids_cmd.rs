//! `clustr pam|fastpam1|fastpam2|fasterpam|alternating INPUT --k K ...`: the k-medoids
//! methods on a precomputed dissimilarity matrix (`--precomputed`) or on points, whose full
//! distance matrix the backend computes first (refused, with the memory it needs, when it
//! would not fit).

use crate::harness::{
    iteration_bar, load_points, secs, AlgoArgs, CliError, CliResult, ExecArgs, OutputArgs, Report,
};
use clustr::data::read_matrix;
use clustr::dissim::memory_budget;
use clustr::kmedoids::{Init, KMedoids};
use clustr::{DenseMatrix, Fit, MetricKind, Scalar};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Points (rows), or with --precomputed a square dissimilarity matrix (.npy or .csv).
    input: PathBuf,
    #[command(flatten)]
    algo: AlgoArgs,
    /// Initialisation: build, lab, random, kmeanspp or first (default: build for pam and
    /// fastpam1, random otherwise, as the kmedoids package).
    #[arg(long)]
    init: Option<String>,
    /// Initial medoids as row indices, e.g. --medoids 0,17,42 (overrides --init).
    #[arg(long, value_delimiter = ',')]
    medoids: Option<Vec<usize>>,
    /// INPUT is a precomputed square dissimilarity matrix.
    #[arg(long)]
    precomputed: bool,
    /// Metric for the distances between points (ignored with --precomputed).
    #[arg(long, default_value = "euclidean")]
    metric: String,
    /// Element type of the distance matrix: f32 or f64.
    #[arg(long, default_value = "f32")]
    dtype: String,
    /// fastpam2: tolerance of the additional swaps, in [0, 1].
    #[arg(long, default_value_t = 1.0)]
    fasttol: f64,
    /// fasterpam: visit the candidates in a seeded random order.
    #[arg(long)]
    shuffle: bool,
    #[command(flatten)]
    exec: ExecArgs,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn run(method: &str, a: Args) -> CliResult {
    let k = a.algo.k;
    let mut params = match method {
        "pam" => KMedoids::pam(k),
        "fastpam1" => KMedoids::fastpam1(k),
        "fastpam2" => KMedoids::fastpam2(k).fasttol(a.fasttol),
        "fasterpam" => KMedoids::fasterpam(k).shuffle(a.shuffle),
        _ => KMedoids::alternating(k),
    }
    .seed(a.algo.seed);
    if let Some(m) = a.algo.max_iter {
        params = params.max_iter(m);
    }
    if let Some(init) = &a.init {
        params = params.init(init.parse()?);
    }
    if let Some(m) = &a.medoids {
        params = params.init(Init::Given(m.clone()));
    }
    match a.dtype.as_str() {
        "f32" | "float32" => fit::<f32>(method, params, &a),
        "f64" | "float64" => fit::<f64>(method, params, &a),
        other => Err(CliError::usage(format!(
            "invalid parameter dtype = {other}: expected f32 or f64"
        ))),
    }
}

fn fit<F: Scalar + clustr::kmedoids::KValue<Loss = f64>>(
    method: &str,
    params: KMedoids,
    a: &Args,
) -> CliResult {
    let started = Instant::now();
    let ((model, d, dist_s, fit_s), threads) = a.exec.run(|backend| {
        let t0 = Instant::now();
        let (matrix, d) = if a.precomputed {
            let m = read_matrix::<F>(&a.input)?;
            (
                DenseMatrix::new(m).map_err(|e| CliError::from(e).prefixed(&a.input))?,
                None,
            )
        } else {
            let metric: MetricKind = a.metric.parse()?;
            let x = load_points::<F>(&a.input)?;
            let dm = DenseMatrix::from_points(x.view(), &metric, backend, memory_budget())
                .map_err(|e| CliError::from(e).prefixed(&a.input))?;
            (dm, Some(x.ncols()))
        };
        let dist_s = secs(t0);
        let (bar, progress) = iteration_bar(params.max_iter, method, &a.output);
        let t1 = Instant::now();
        let model = params.clone().progress(progress).fit(&matrix)?;
        bar.finish_and_clear();
        Ok((model, d, dist_s, secs(t1)))
    })?;
    let mut extra = serde_json::Map::new();
    extra.insert("medoids".into(), json!(model.medoids));
    extra.insert("initial_medoids".into(), json!(model.initial_medoids));
    extra.insert("n_swaps".into(), json!(model.n_swaps));
    let n = model.labels.len();
    Report {
        algorithm: method,
        n,
        d,
        k: Some(a.algo.k),
        model: &model,
        backend: "cpu",
        threads,
        seed: a.algo.seed,
        seconds: vec![("distances", dist_s), ("fit", fit_s)],
        extra,
    }
    .emit(&a.algo, &a.output, started)?;
    Ok(())
}
