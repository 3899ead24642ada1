//! `clustr pam|fastpam1|fastpam2|fasterpam|alternating|clara|fastclara|fasterclara|clarans|
//! fastclarans INPUT --k K ...`: the k-medoids methods on a precomputed dissimilarity matrix
//! (`--precomputed`) or on points. On points the estimator chooses the path for the backend
//! (the swap methods: the full distance matrix, refused with the memory it needs when it
//! would not fit, or on a device the device's own dissimilarities; the CLARA and CLARANS
//! families: distances on the fly in O(n·k) memory), so the JSON's `seconds.distances` is 0
//! and the distances are part of `seconds.fit`; with `--precomputed` it is the time spent
//! reading the matrix.

use crate::harness::read_matrix;
use crate::harness::{
    iteration_bar, secs, AlgoArgs, CliError, CliResult, Dtype, ExecArgs, ModelOutArg, OutputArgs, Processes,
    Report, SampleWeightArg,
};
use clustr::kmedoids::{Clara, Clarans, Init, KMedoids, KMedoidsModel, KValue};
use clustr::{AnyBackend, Backend as _};
use clustr::{DenseMatrix, Dissimilarity, Fit, MetricKind, OnTheFly, ProgressFn, Scalar};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Points (rows), or with --precomputed a square dissimilarity matrix (.npy or .csv).
    input: PathBuf,
    #[command(flatten)]
    algo: AlgoArgs,
    /// Initialisation of the swap methods: build, lab, random, kmeanspp or first (default:
    /// build for pam and fastpam1, random otherwise, as the kmedoids package).
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
    // (the model is the medoids' coordinates and the metric)
    #[command(flatten)]
    model: ModelOutArg,
    /// Element type of the distance matrix: f32 or f64.
    #[arg(long, value_enum, default_value = "f32")]
    dtype: Dtype,
    /// fastpam2: tolerance of the additional swaps, in [0, 1] (default 1).
    #[arg(long)]
    fasttol: Option<f64>,
    /// fasterpam: visit the candidates in a seeded random order.
    #[arg(long)]
    shuffle: bool,
    /// clara, fastclara, fasterclara: number of samples (default 5).
    #[arg(long)]
    samples: Option<usize>,
    /// clara (default 40 + 2k), fastclara and fasterclara (default 80 + 4k): sample size.
    #[arg(long)]
    sample_size: Option<usize>,
    /// clarans, fastclarans: number of local searches (default 2).
    #[arg(long)]
    numlocal: Option<usize>,
    /// clarans (default 0.0125 of k(n-k)), fastclarans (default 0.025 of n-k): failed tries
    /// before a local search ends; a count when >= 1.
    #[arg(long)]
    maxneighbor: Option<f64>,
    /// Add the silhouette (O(n²) distances) and the medoid silhouette (O(n·k)) to the report.
    #[arg(long)]
    silhouette: bool,
    /// clara, fastclara, fasterclara on points: run as one process of an MPI job (`mpirun -n
    /// P clustr fasterclara --distributed X.npy`): each process holds its slice of the rows,
    /// the samples are gathered, the loss is summed over the processes; rank 0 writes the
    /// labels and prints the summary. Needs the `mpi` feature.
    #[arg(long)]
    distributed: bool,
    // The loss is Σ weight·distance to the medoid; random and LAB starts and CLARA's samples
    // stay uniform draws.
    #[command(flatten)]
    weights: SampleWeightArg,
    #[command(flatten)]
    exec: ExecArgs,
    #[command(flatten)]
    output: OutputArgs,
}

/// The algorithm a subcommand runs.
#[derive(Clone)]
enum Algo {
    Swap(KMedoids),
    Clara(Clara),
    Clarans(Clarans),
}

impl Algo {
    fn fit<D>(&self, d: &D, progress: ProgressFn, backend: &AnyBackend) -> clustr::Result<KMedoidsModel<f64>>
    where
        D: Dissimilarity,
        D::Value: KValue<Loss = f64>,
    {
        match self {
            Algo::Swap(p) => p.clone().progress(progress).backend(backend.clone()).fit(d),
            Algo::Clara(p) => p.clone().progress(progress).fit(d),
            Algo::Clarans(p) => p.clone().progress(progress).fit(d),
        }
    }

    /// Steps of the progress bar: passes, samples or local searches.
    fn steps(&self) -> usize {
        match self {
            Algo::Swap(p) => p.max_iter,
            Algo::Clara(p) => p.samples,
            Algo::Clarans(p) => p.numlocal,
        }
    }
}

/// The flags of one group of methods are refused by the others rather than ignored.
fn refuse_misplaced_flags(method: &str, a: &Args) -> CliResult {
    const SWAP: &[&str] = &["pam", "fastpam1", "fastpam2", "fasterpam", "alternating"];
    const CLARA: &[&str] = &["clara", "fastclara", "fasterclara"];
    const CLARANS: &[&str] = &["clarans", "fastclarans"];
    let flags: [(&str, bool, &[&str]); 8] = [
        ("--init", a.init.is_some(), SWAP),
        ("--medoids", a.medoids.is_some(), SWAP),
        ("--fasttol", a.fasttol.is_some(), &["fastpam2"]),
        ("--shuffle", a.shuffle, &["fasterpam"]),
        ("--samples", a.samples.is_some(), CLARA),
        ("--sample-size", a.sample_size.is_some(), CLARA),
        ("--numlocal", a.numlocal.is_some(), CLARANS),
        ("--maxneighbor", a.maxneighbor.is_some(), CLARANS),
    ];
    match flags
        .iter()
        .find(|(_, given, owners)| *given && !owners.contains(&method))
    {
        Some((flag, _, owners)) => Err(CliError::usage(format!(
            "{flag} applies to {} only, not {method}",
            owners.join(", ")
        ))),
        None => Ok(()),
    }
}

pub fn run(method: &str, a: Args) -> CliResult {
    refuse_misplaced_flags(method, &a)?;
    let k = a.algo.k;
    let max_iter = a.algo.max_iter;
    let weights = a.weights.read(a.distributed)?;
    let algo = match method {
        "clara" | "fastclara" | "fasterclara" => {
            let mut p = match method {
                "clara" => Clara::new(k),
                "fastclara" => Clara::fastclara(k),
                _ => Clara::fasterclara(k),
            }
            .seed(a.algo.seed);
            if let Some(s) = a.samples {
                p = p.samples(s);
            }
            if let Some(s) = a.sample_size {
                p = p.sample_size(s);
            }
            if let Some(m) = max_iter {
                p = p.max_iter(m);
            }
            p.sample_weight = weights;
            Algo::Clara(p)
        }
        "clarans" | "fastclarans" => {
            let mut p = if method == "clarans" {
                Clarans::new(k)
            } else {
                Clarans::fastclarans(k)
            }
            .seed(a.algo.seed);
            if let Some(v) = a.numlocal {
                p = p.numlocal(v);
            }
            if let Some(m) = a.maxneighbor {
                p = p.maxneighbor(m);
            }
            p.sample_weight = weights;
            Algo::Clarans(p)
        }
        _ => {
            let mut p = match method {
                "pam" => KMedoids::pam(k),
                "fastpam1" => KMedoids::fastpam1(k),
                "fastpam2" => KMedoids::fastpam2(k),
                "fasterpam" => KMedoids::fasterpam(k),
                _ => KMedoids::alternating(k),
            }
            .seed(a.algo.seed);
            if let Some(t) = a.fasttol {
                p = p.fasttol(t);
            }
            if a.shuffle {
                p = p.shuffle(true);
            }
            if let Some(m) = max_iter {
                p = p.max_iter(m);
            }
            if let Some(init) = &a.init {
                p = p.init(init.parse()?);
            }
            if let Some(m) = &a.medoids {
                p = p.init(Init::Given(m.clone()));
            }
            p.sample_weight = weights;
            Algo::Swap(p)
        }
    };
    if a.distributed && (!matches!(algo, Algo::Clara(_)) || a.precomputed || a.silhouette) {
        return Err(CliError::usage(
            "--distributed runs clara, fastclara and fasterclara on points, without --precomputed or --silhouette",
        ));
    }
    a.model.refuse_with(match (a.precomputed, a.distributed) {
        (true, _) => Some("a fit on dissimilarities has no coordinates to compare new points with"),
        (_, true) => Some("not available with --distributed"),
        _ => None,
    })?;
    match a.dtype {
        Dtype::F32 => fit::<f32>(method, algo, &a),
        Dtype::F64 => fit::<f64>(method, algo, &a),
    }
}

fn fit<F: Scalar + KValue<Loss = f64>>(method: &str, algo: Algo, a: &Args) -> CliResult {
    let started = Instant::now();
    let procs = Processes::new(a.distributed)?;
    let ((mut model, predictor, d, dist_s, fit_s, sil, backend_name), threads) = a.exec.run(|backend| {
        let t0 = Instant::now();
        // The medoids' coordinates for --model-out, while the points are in memory.
        let predictor_of = |m: &KMedoidsModel<f64>, x: &ndarray::Array2<F>| match &a.model.model_out {
            Some(_) => m.predictor(x.view(), &a.metric.parse::<MetricKind>()?).map(Some),
            None => Ok(None),
        };
        let (bar, progress) = iteration_bar(algo.steps(), method, &a.output);
        let prefixed = |e: clustr::Error| CliError::from(e).prefixed(&a.input);
        let (model, predictor, d, dist_s, fit_s, sil) = if a.precomputed {
            let dm = DenseMatrix::new(read_matrix::<F>(&a.input)?).map_err(prefixed)?;
            let dist_s = secs(t0);
            let (model, fit_s, sil) = fit_on(&algo, &dm, progress, a.silhouette, backend)?;
            (model, None, None, dist_s, fit_s, sil)
        } else {
            // On points the estimator chooses the path for the backend: a distance matrix, the
            // device's own dissimilarities, or distances on the fly (timed as part of the fit).
            let metric: MetricKind = a.metric.parse()?;
            let x = procs.load::<F>(&a.input)?;
            let t1 = Instant::now();
            let model = match &algo {
                Algo::Swap(p) => p
                    .clone()
                    .progress(progress)
                    .backend(backend.clone())
                    .fit_points(x.view(), &metric)
                    .map_err(prefixed)?,
                Algo::Clara(p) => p
                    .clone()
                    .communicator(procs.comm.clone())
                    .backend(backend.clone())
                    .progress(progress)
                    .fit_points(x.view(), &metric)?,
                Algo::Clarans(p) => {
                    let otf = OnTheFly::new(x.view(), metric).map_err(prefixed)?;
                    p.clone().progress(progress).fit(&otf)?
                }
            };
            let fit_s = secs(t1);
            // The silhouette reads every distance: from a matrix again where the fit held one
            // (the swap methods on the host: O(n²) reads, not O(n²·d) distances), else on the fly.
            let sil = match (a.silhouette, &algo) {
                (false, _) => None,
                (true, Algo::Swap(_)) if !backend.assigns_off_host() => {
                    let dm = DenseMatrix::from_points(x.view(), &metric, backend).map_err(prefixed)?;
                    Some((model.silhouette(&dm)?, model.medoid_silhouette(&dm)?))
                }
                (true, _) => {
                    let otf = OnTheFly::new(x.view(), metric).map_err(prefixed)?;
                    Some((model.silhouette(&otf)?, model.medoid_silhouette(&otf)?))
                }
            };
            let predictor = predictor_of(&model, &x)?;
            (model, predictor, Some(x.ncols()), 0.0, fit_s, sil)
        };
        bar.finish_and_clear();
        Ok((model, predictor, d, dist_s, fit_s, sil, backend.name()))
    })?;
    let Some(labels) = procs.gather_labels(std::mem::take(&mut model.labels)) else {
        return Ok(()); // rank 0 writes and reports
    };
    model.labels = labels;
    if let Some(p) = &predictor {
        a.model.save(p)?;
    }
    let mut extra = serde_json::Map::new();
    extra.insert("processes".into(), json!(procs.comm.size()));
    extra.insert("medoids".into(), json!(model.medoids));
    extra.insert("initial_medoids".into(), json!(model.initial_medoids));
    extra.insert("n_swaps".into(), json!(model.n_swaps));
    if let Some((s, ms)) = sil {
        extra.insert("silhouette".into(), json!(s));
        extra.insert("medoid_silhouette".into(), json!(ms));
    }
    let n = model.labels.len();
    Report {
        algorithm: method,
        n,
        d,
        k: Some(a.algo.k),
        model: &model,
        backend: backend_name,
        threads,
        seed: a.algo.seed,
        seconds: vec![("distances", dist_s), ("fit", fit_s)],
        extra,
    }
    .emit(&a.algo, &a.output, started)?;
    Ok(())
}

/// Fits on `d`, then measures the silhouettes if asked: (model, fit seconds, (silhouette,
/// medoid silhouette)).
fn fit_on<D>(
    algo: &Algo,
    d: &D,
    progress: ProgressFn,
    silhouette: bool,
    backend: &AnyBackend,
) -> CliResult<FitOutcome>
where
    D: Dissimilarity,
    D::Value: KValue<Loss = f64>,
{
    let t = Instant::now();
    let model = algo.fit(d, progress, backend)?;
    let fit_s = secs(t);
    let sil = if silhouette {
        Some((model.silhouette(d)?, model.medoid_silhouette(d)?))
    } else {
        None
    };
    Ok((model, fit_s, sil))
}

type FitOutcome = (KMedoidsModel<f64>, f64, Option<(f64, f64)>);
