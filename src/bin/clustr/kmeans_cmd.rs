//! `clustr kmeans INPUT --k K [--init k-means++|random|FILE] [--n-init N] [--tol T] ...` and
//! `clustr minibatch-kmeans INPUT --k K [--batch-size B] ...` (a .npy input is streamed) and
//! `clustr bisecting-kmeans INPUT --k K [--bisecting-strategy S] ...`.

use crate::harness::{insert_k_selection, silhouette_rows, Chosen, KChoice, WithK};
use crate::harness::{
    load_points, load_sparse_points, secs, AlgoArgs, CliResult, Dtype, ExecArgs, ModelOutArg, OutputArgs,
    Processes, Report,
};
use crate::harness::{read_matrix, CliError, SampleWeightArg};
use clustr::data::FileKind;
use clustr::kmeans::{
    Algorithm, BisectingInit, BisectingKMeans, BisectingStrategy, KMeans, KMeansInit, MiniBatchKMeans,
    MiniBatchKMeansModel,
};
use clustr::memory::MemoryEstimate as _;
use clustr::select_k::Criterion;
use clustr::{Fit, Scalar};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Points, rows = samples (.npy or .csv; or a sparse .npz, .mtx or svmlight file, fitted
    /// as sparse rows: --standardize then scales without centring).
    input: PathBuf,
    #[command(flatten)]
    algo: AlgoArgs,
    /// lloyd, hamerly, elkan or auto (hamerly and elkan keep bounds that skip distance
    /// computations, with Lloyd's result; auto picks one from n, k and d).
    #[arg(long, default_value = "auto")]
    algorithm: String,
    /// k-means++ (greedy, as scikit-learn), random, or a .npy/.csv file of k initial centres.
    #[arg(long, default_value = "k-means++")]
    init: String,
    /// Runs from different seeds, the lowest inertia kept (default: 1, or 10 with random).
    #[arg(long)]
    n_init: Option<usize>,
    /// Relative tolerance, multiplied by the mean feature variance.
    #[arg(long, default_value_t = KMeans::new(1).tol)]
    tol: f64,
    #[command(flatten)]
    weights: SampleWeightArg,
    #[command(flatten)]
    model: ModelOutArg,
    /// Element type of the computation: f32 or f64.
    #[arg(long, value_enum, default_value = "f64")]
    dtype: Dtype,
    /// Run as one process of an MPI job (`mpirun -n P clustr kmeans --distributed X.npy`):
    /// each process reads and fits its slice of the rows; rank 0 writes the labels and prints
    /// the summary. Needs the `mpi` feature.
    #[arg(long)]
    distributed: bool,
    #[command(flatten)]
    exec: ExecArgs,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn run(a: Args) -> CliResult {
    let algorithm: Algorithm = a.algorithm.parse()?;
    let init = kmeans_init(&a.init)?;
    if a.distributed {
        a.algo.single_k("kmeans --distributed")?;
    }
    let mut params = KMeans::new(a.algo.k[0])
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
    params.sample_weight = a.weights.read(a.distributed)?;
    match a.dtype {
        Dtype::F32 => fit::<f32>(params, &a),
        Dtype::F64 => fit::<f64>(params, &a),
    }
}

fn kmeans_init(name: &str) -> CliResult<KMeansInit> {
    Ok(match name {
        "k-means++" | "kmeans++" | "kmeanspp" => KMeansInit::KMeansPlusPlus,
        "random" => KMeansInit::Random,
        file => KMeansInit::Given(read_matrix::<f64>(file)?),
    })
}

fn centers_json<F: Scalar>(centers: &ndarray::Array2<F>) -> serde_json::Value {
    let rows: Vec<Vec<f64>> = centers
        .rows()
        .into_iter()
        .map(|r| r.iter().map(|v| v.to_f64_exact()).collect())
        .collect();
    json!(rows)
}

/// The points of `clustr kmeans`: dense rows, or sparse rows from a sparse file (fitted
/// without densifying them).
enum KMeansPoints<F> {
    Dense(ndarray::Array2<F>),
    Sparse(clustr::data::Csr<F>),
}

fn fit<F: Scalar>(params: KMeans, a: &Args) -> CliResult {
    let started = Instant::now();
    let procs = Processes::new(a.distributed)?;
    let sparse = clustr::data::SparseKind::of(&a.input).is_some();
    if sparse && a.distributed {
        return Err(CliError::usage(
            "a sparse file is fitted on one process: leave out --distributed",
        ));
    }
    let ((chosen, d, read_s, fit_s), ran) = a.exec.run("kmeans", |backend| {
        let t0 = Instant::now();
        let x = if sparse {
            KMeansPoints::Sparse(load_sparse_points::<F>(&a.input)?)
        } else {
            KMeansPoints::Dense(procs.load::<F>(&a.input)?)
        };
        let (n, d) = match &x {
            KMeansPoints::Dense(x) => x.dim(),
            KMeansPoints::Sparse(x) => (x.view().nrows(), x.view().ncols()),
        };
        let read_s = secs(t0);
        let t1 = Instant::now();
        let how = KChoice {
            what: "kmeans",
            steps: params.max_iter,
            // (the silhouette needs dense rows: over sparse ones the elbow of the inertia)
            criterion: if sparse {
                Criterion::Elbow
            } else {
                Criterion::Silhouette
            },
            memory_of_fit: Box::new(|k| match &x {
                KMeansPoints::Dense(_) => params.with_k(k).memory_estimate(n, d, size_of::<F>()),
                KMeansPoints::Sparse(_) => clustr::kmeans::sparse_memory_estimate(n, d, k, size_of::<F>()),
            }),
        };
        let fit_k = |k, progress| {
            let p = params
                .with_k(k)
                .communicator(procs.comm.clone())
                .backend(backend.clone())
                .progress(progress);
            match &x {
                KMeansPoints::Dense(x) => p.fit(&x.view()),
                KMeansPoints::Sparse(x) => p.fit(&x.view()),
            }
        };
        let dense = match &x {
            KMeansPoints::Dense(x) => Some(x.view()),
            KMeansPoints::Sparse(_) => None,
        };
        let chosen = a.algo.choose(how, &a.output, n, dense, fit_k, |_, _| None)?;
        Ok((chosen, d, read_s, secs(t1)))
    })?;
    let Chosen { mut model, k, table } = chosen;
    let Some(labels) = procs.gather_labels(std::mem::take(&mut model.labels)) else {
        return Ok(()); // rank 0 writes and reports
    };
    model.labels = labels;
    a.model.save(&model)?;
    let mut extra = serde_json::Map::new();
    extra.insert("centers".into(), centers_json(&model.centers));
    extra.insert("inertia".into(), json!(model.inertia));
    extra.insert("kmeans_algorithm".into(), json!(model.algorithm.name()));
    extra.insert("processes".into(), json!(procs.comm.size()));
    insert_k_selection(&mut extra, table);
    Report {
        algorithm: "kmeans",
        n: model.labels.len(),
        d: Some(d),
        k: Some(k),
        model: &model,
        ran,
        seed: a.algo.seed,
        seconds: vec![("read", read_s), ("fit", fit_s)],
        extra,
    }
    .emit(a.algo.labels_out.as_deref(), &a.output, started)
}

#[derive(clap::Args)]
pub struct BisectingArgs {
    /// Points, rows = samples (.npy or .csv).
    input: PathBuf,
    #[command(flatten)]
    algo: AlgoArgs,
    /// lloyd or elkan (the same result).
    #[arg(long, default_value = "lloyd")]
    algorithm: String,
    /// Starts of each split: random (two points drawn by weight, scikit-learn's default) or
    /// k-means++.
    #[arg(long, default_value = "random")]
    init: String,
    /// 2-means runs per split, the lowest inertia kept (default 1).
    #[arg(long)]
    n_init: Option<usize>,
    /// Which cluster is split next: biggest_inertia or largest_cluster.
    #[arg(long, default_value = "biggest_inertia")]
    bisecting_strategy: String,
    /// Relative tolerance, multiplied by the mean feature variance (default 1e-4).
    #[arg(long)]
    tol: Option<f64>,
    #[command(flatten)]
    weights: SampleWeightArg,
    #[command(flatten)]
    model: ModelOutArg,
    #[command(flatten)]
    exec: ExecArgs,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn run_bisecting(a: BisectingArgs) -> CliResult {
    let k = a.algo.single_k("bisecting-kmeans")?;
    let mut params = BisectingKMeans::new(k)
        .seed(a.algo.seed)
        .algorithm(match a.algorithm.as_str() {
            "lloyd" => Algorithm::Lloyd,
            "elkan" => Algorithm::Elkan,
            other => {
                return Err(CliError::usage(format!(
                    "--algorithm {other}: use lloyd or elkan"
                )))
            }
        })
        .init(match a.init.as_str() {
            "random" => BisectingInit::Random,
            "k-means++" | "kmeans++" => BisectingInit::KMeansPlusPlus,
            other => {
                return Err(CliError::usage(format!(
                    "--init {other}: use random or k-means++"
                )))
            }
        })
        .bisecting_strategy(match a.bisecting_strategy.as_str() {
            "biggest_inertia" => BisectingStrategy::BiggestInertia,
            "largest_cluster" => BisectingStrategy::LargestCluster,
            other => {
                return Err(CliError::usage(format!(
                    "--bisecting-strategy {other}: use biggest_inertia or largest_cluster"
                )))
            }
        });
    if let Some(n) = a.n_init {
        params = params.n_init(n);
    }
    if let Some(t) = a.tol {
        params = params.tol(t);
    }
    if let Some(m) = a.algo.max_iter {
        params = params.max_iter(m);
    }
    params.sample_weight = a.weights.read(false)?;
    let started = Instant::now();
    let ((model, d, read_s, fit_s), ran) = a.exec.run("bisecting-kmeans", |_backend| {
        let t0 = Instant::now();
        let x = load_points::<f64>(&a.input)?;
        let read_s = secs(t0);
        let t1 = Instant::now();
        let (bar, progress) =
            crate::harness::iteration_bar(k.saturating_sub(1), "bisecting-kmeans", &a.output);
        let model = params.clone().progress(progress).fit(&x.view())?;
        bar.finish_and_clear();
        Ok((model, x.ncols(), read_s, secs(t1)))
    })?;
    a.model.save(&model)?;
    let mut extra = serde_json::Map::new();
    extra.insert("centers".into(), centers_json(&model.centers));
    extra.insert("inertia".into(), json!(model.inertia));
    Report {
        algorithm: "bisecting-kmeans",
        n: model.labels.len(),
        d: Some(d),
        k: Some(k),
        model: &model,
        ran,
        seed: a.algo.seed,
        seconds: vec![("read", read_s), ("fit", fit_s)],
        extra,
    }
    .emit(a.algo.labels_out.as_deref(), &a.output, started)
}

#[derive(clap::Args)]
pub struct MiniBatchArgs {
    /// Points, rows = samples: a .npy file or a folder of .npy shards is streamed in chunks
    /// (it may be larger than memory); a .csv file is read whole; a sparse .npz, .mtx or
    /// svmlight file is fitted as sparse rows (--standardize then scales without centring).
    input: PathBuf,
    #[command(flatten)]
    algo: AlgoArgs,
    /// Points per step.
    #[arg(long, default_value_t = 1024)]
    batch_size: usize,
    /// k-means++ (on a sample), random, or a .npy/.csv file of k initial centres.
    #[arg(long, default_value = "k-means++")]
    init: String,
    /// Initialisations tried on samples, the best kept (default: 1, or 3 with random).
    #[arg(long)]
    n_init: Option<usize>,
    /// Rows sampled for the initialisation (default 3 × batch size; 3k when below k).
    #[arg(long)]
    init_size: Option<usize>,
    /// Relative tolerance on the centres' movement per step (0 = off).
    #[arg(long, default_value_t = 0.0)]
    tol: f64,
    /// Stop after this many steps without improvement of the smoothed inertia (0 = never).
    #[arg(long, default_value_t = 10)]
    max_no_improvement: usize,
    /// Centres with fewer than this fraction of the largest count are re-seeded.
    #[arg(long, default_value_t = 0.01)]
    reassignment_ratio: f64,
    /// Rows per chunk (default: 64 MiB of rows).
    #[arg(long)]
    chunk_size: Option<usize>,
    #[command(flatten)]
    weights: SampleWeightArg,
    #[command(flatten)]
    model: ModelOutArg,
    /// Element type of the computation: f32 or f64.
    #[arg(long, value_enum, default_value = "f64")]
    dtype: Dtype,
    /// Run as one process of an MPI job (`mpirun -n P clustr minibatch-kmeans --distributed
    /// X.npy`): each process streams its slice of the rows; every batch is gathered on all
    /// processes, so the result equals one process's. Needs the `mpi` feature.
    #[arg(long)]
    distributed: bool,
    #[command(flatten)]
    exec: ExecArgs,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn run_minibatch(a: MiniBatchArgs) -> CliResult {
    if a.distributed {
        a.algo.single_k("minibatch-kmeans --distributed")?;
    }
    let mut params = MiniBatchKMeans::new(a.algo.k[0])
        .init(kmeans_init(&a.init)?)
        .batch_size(a.batch_size)
        .tol(a.tol)
        .max_no_improvement((a.max_no_improvement > 0).then_some(a.max_no_improvement))
        .reassignment_ratio(a.reassignment_ratio)
        .seed(a.algo.seed);
    if let Some(n) = a.n_init {
        params = params.n_init(n);
    }
    if let Some(s) = a.init_size {
        params = params.init_size(s);
    }
    if let Some(c) = a.chunk_size {
        params = params.chunk_size(c);
    }
    if let Some(m) = a.algo.max_iter {
        params = params.max_iter(m);
    }
    params.sample_weight = a.weights.read(a.distributed)?;
    match a.dtype {
        Dtype::F32 => fit_minibatch::<f32>(params, &a),
        Dtype::F64 => fit_minibatch::<f64>(params, &a),
    }
}

fn fit_minibatch<F: Scalar>(params: MiniBatchKMeans, a: &MiniBatchArgs) -> CliResult {
    let started = Instant::now();
    let procs = Processes::new(a.distributed)?;
    let sparse = clustr::data::SparseKind::of(&a.input).is_some();
    if sparse && a.distributed {
        return Err(CliError::usage(
            "a sparse file is fitted on one process: leave out --distributed",
        ));
    }
    let ((chosen, d, fit_s), ran) = a.exec.run("minibatch-kmeans", |backend| {
        let t0 = Instant::now();
        let base = params
            .clone()
            .communicator(procs.comm.clone())
            .backend(backend.clone());
        let fit_one = |k, progress| base.with_k(k).progress(progress);
        let params = &params;
        let how = |n: usize, d: usize| KChoice {
            what: "minibatch-kmeans",
            steps: params.max_iter,
            criterion: Criterion::Silhouette,
            memory_of_fit: Box::new(move |k| params.with_k(k).memory_estimate(n, d, size_of::<F>())),
        };
        let streamed =
            a.distributed || a.input.is_dir() || (!sparse && FileKind::of(&a.input)? == FileKind::Npy);
        let (chosen, d) = if sparse {
            let x = load_sparse_points::<F>(&a.input)?;
            let x = x.view();
            let (n, d) = (x.nrows(), x.ncols());
            let how = KChoice {
                what: "minibatch-kmeans",
                steps: params.max_iter,
                // (the silhouette needs dense rows: over sparse ones the elbow of the inertia)
                criterion: Criterion::Elbow,
                memory_of_fit: Box::new(move |k| {
                    params
                        .with_k(k)
                        .sparse_memory_estimate(n, d, x.nnz(), size_of::<F>())
                }),
            };
            let fit = |k, progress| fit_one(k, progress).fit(&x);
            let chosen = a
                .algo
                .choose(how, &a.output, n, None::<ndarray::ArrayView2<F>>, fit, |_, _| {
                    None
                })?;
            (chosen, d)
        } else if streamed {
            let rows = procs.rows(&a.input)?;
            let (n, d) = (rows.nrows(), rows.ncols());
            // With several k, the silhouette's sample is read once and scores every fit (the
            // same rows the in-memory path would sample).
            let several = a.algo.k.len() > 1;
            let sample_rows = if several {
                silhouette_rows(&a.algo.k, n, a.algo.seed)
            } else {
                Vec::new()
            };
            let mut sample = ndarray::Array2::<F>::zeros((sample_rows.len(), d));
            for (r, &i) in sample_rows.iter().enumerate() {
                sample.row_mut(r).assign(&rows.rows::<F>(i, i + 1)?.row(0));
            }
            let own = |m: &MiniBatchKMeansModel<F>, c| match c {
                Criterion::Silhouette => Some((|| {
                    let labels: Vec<i64> = sample_rows.iter().map(|&i| m.labels[i]).collect();
                    let d = clustr::OnTheFly::new(sample.view(), clustr::MetricKind::Euclidean)?;
                    clustr::eval::silhouette_score(&d, &labels)
                })()),
                _ => None,
            };
            let fit = |k, progress| fit_one(k, progress).fit_npy::<F>(&rows);
            let chosen = a
                .algo
                .choose(how(n, d), &a.output, n, None::<ndarray::ArrayView2<F>>, fit, own)
                .map_err(|e| e.prefixed(&a.input))?;
            (chosen, d)
        } else {
            let x = load_points::<F>(&a.input)?;
            let fit = |k, progress| fit_one(k, progress).fit(&x.view());
            let chosen = a.algo.choose(
                how(x.nrows(), x.ncols()),
                &a.output,
                x.nrows(),
                Some(x.view()),
                fit,
                |_, _| None,
            )?;
            (chosen, x.ncols())
        };
        Ok((chosen, d, secs(t0)))
    })?;
    let Chosen { mut model, k, table } = chosen;
    let Some(labels) = procs.gather_labels(std::mem::take(&mut model.labels)) else {
        return Ok(()); // rank 0 writes and reports
    };
    model.labels = labels;
    a.model.save(&model)?;
    let mut extra = serde_json::Map::new();
    extra.insert("centers".into(), centers_json(&model.centers));
    extra.insert("inertia".into(), json!(model.inertia));
    extra.insert("n_steps".into(), json!(model.n_steps));
    extra.insert("processes".into(), json!(procs.comm.size()));
    insert_k_selection(&mut extra, table);
    Report {
        algorithm: "minibatch-kmeans",
        n: model.labels.len(),
        d: Some(d),
        k: Some(k),
        model: &model,
        ran,
        seed: a.algo.seed,
        seconds: vec![("fit", fit_s)],
        extra,
    }
    .emit(a.algo.labels_out.as_deref(), &a.output, started)
}
