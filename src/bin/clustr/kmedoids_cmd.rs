//! `clustr pam|fastpam1|fastpam2|fasterpam|alternating|clara|fastclara|fasterclara|clarans|
//! fastclarans INPUT --k K ...`: the k-medoids methods on a precomputed dissimilarity matrix
//! (`--precomputed`) or on points. On points the estimator chooses the path for the backend
//! (the swap methods: the full distance matrix, refused with the memory it needs when it
//! would not fit, or on a device the device's own dissimilarities; the CLARA and CLARANS
//! families: distances on the fly in O(n·k) memory), so the JSON's `seconds.distances` is 0
//! and the distances are part of `seconds.fit`; with `--precomputed` it is the time spent
//! reading the matrix. A sparse file (.npz, .mtx, svmlight) under euclidean, sqeuclidean,
//! cosine or manhattan is fitted as sparse rows (the swap methods on their distance matrix,
//! the sampling ones with distances computed when needed); under other metrics, densified.

use crate::harness::{insert_k_selection, Chosen, KChoice, WithK};
use crate::harness::{load_sparse_points, read_matrix, sparse_rows};
use crate::harness::{
    secs, AlgoArgs, CliError, CliResult, Dtype, ExecArgs, ModelOutArg, OutputArgs, Processes, Report,
    SampleWeightArg,
};
use clustr::dissim::SparseRows;
use clustr::kmedoids::{Clara, Clarans, Init, KMedoids, KMedoidsModel, KValue};
use clustr::select_k::Criterion;
use clustr::{AnyBackend, Backend as _};
use clustr::{DenseMatrix, Dissimilarity, Fit, MetricKind, OnTheFly, ProgressFn, Scalar};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Points (rows), or with --precomputed a square dissimilarity matrix (.npy or .csv). A
    /// sparse .npz, .mtx or svmlight file is fitted as sparse rows under euclidean,
    /// sqeuclidean, cosine or manhattan, densified otherwise.
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
    /// Element type of the distance matrix: f64 (the default: the loss and medoids of the
    /// kmedoids package) or f32 (half the memory; on real data it can end at other medoids).
    #[arg(long, value_enum, default_value = "f64")]
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

    /// The same method and options with another k.
    fn with_k(&self, k: usize) -> Algo {
        match self {
            Algo::Swap(p) => Algo::Swap(p.with_k(k)),
            Algo::Clara(p) => Algo::Clara(p.with_k(k)),
            Algo::Clarans(p) => Algo::Clarans(p.with_k(k)),
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
    if a.distributed || a.medoids.is_some() {
        a.algo
            .single_k(&format!("{method} with --distributed or --medoids"))?;
    }
    let k = a.algo.k[0];
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
    let several = a.algo.k.len() > 1 || a.algo.criterion.is_some();
    let ((chosen, predictor, d, dist_s, fit_s, sil), ran) = a.exec.run(method, |backend| {
        let t0 = Instant::now();
        let prefixed = |e: clustr::Error| CliError::from(e).prefixed(&a.input);
        let metric: MetricKind = a.metric.parse()?;
        let how = |n: usize| KChoice {
            what: method,
            steps: algo.steps(),
            criterion: Criterion::MedoidSilhouette,
            // one fit's labels and nearest-medoid tables (the matrix is shared)
            memory_of_fit: Box::new(move |_| clustr::memory::product(&[n, 64])),
        };
        let (chosen, predictor, d, dist_s, fit_s, sil) = if a.precomputed {
            crate::harness::refuse_points_options("a precomputed dissimilarity matrix")?;
            let dm = DenseMatrix::new(read_matrix::<F>(&a.input)?).map_err(prefixed)?;
            let dist_s = secs(t0);
            let t1 = Instant::now();
            let (chosen, sil) = fit_on::<F, _>(&algo, a, how(dm.len()), None, &dm, backend)?;
            (chosen, None, None, dist_s, secs(t1), sil)
        } else if sparse_rows(&a.input, metric) {
            // Sparse rows: the swap methods on their distance matrix, the sampling ones with
            // the distances computed when needed.
            if a.distributed || a.model.model_out.is_some() {
                return Err(CliError::usage(
                    "--distributed and --model-out take dense points: not a sparse file",
                ));
            }
            let x = load_sparse_points::<F>(&a.input)?;
            let (n, t1) = (x.view().nrows(), Instant::now());
            let (chosen, sil) = if let Algo::Swap(_) = algo {
                let dm = DenseMatrix::from_sparse_rows(x.view(), metric).map_err(prefixed)?;
                fit_on::<F, _>(&algo, a, how(n), None, &dm, backend)?
            } else {
                let rows = SparseRows::checked(x.view(), metric, 0, method).map_err(prefixed)?;
                fit_on::<F, _>(&algo, a, how(n), None, &rows, backend)?
            };
            (chosen, None, Some(x.view().ncols()), 0.0, secs(t1), sil)
        } else {
            let x = procs.load::<F>(&a.input)?;
            let t1 = Instant::now();
            let (chosen, sil) = if several {
                // Several k: one distance matrix (the swap methods) or distances on the fly
                // for every fit, its scores and the silhouettes.
                if let Algo::Swap(_) = algo {
                    let dm = DenseMatrix::from_points(x.view(), &metric, backend).map_err(prefixed)?;
                    fit_on(&algo, a, how(x.nrows()), Some(x.view()), &dm, backend)?
                } else {
                    let otf = OnTheFly::new(x.view(), metric).map_err(prefixed)?;
                    fit_on(&algo, a, how(x.nrows()), Some(x.view()), &otf, backend)?
                }
            } else {
                // One k: the estimator chooses the path for the backend: a distance matrix,
                // the device's own dissimilarities, or distances on the fly.
                let chosen = a
                    .algo
                    .choose::<F, _>(
                        how(x.nrows()),
                        &a.output,
                        x.nrows(),
                        Some(x.view()),
                        |_, p| fit_points(&algo, x.view(), &metric, p, backend, &procs),
                        |_, _| None,
                    )
                    .map_err(|e| e.prefixed(&a.input))?;
                // The silhouette reads every distance: from a matrix again where the fit held
                // one (the swap methods on the host: O(n²) reads, not O(n²·d) distances), else
                // on the fly.
                let sil = match (a.silhouette, &algo) {
                    (false, _) => None,
                    (true, Algo::Swap(_)) if !backend.assigns_off_host() => {
                        let dm = DenseMatrix::from_points(x.view(), &metric, backend).map_err(prefixed)?;
                        silhouettes(true, &dm, &chosen.model)?
                    }
                    (true, _) => {
                        let otf = OnTheFly::new(x.view(), metric).map_err(prefixed)?;
                        silhouettes(true, &otf, &chosen.model)?
                    }
                };
                (chosen, sil)
            };
            let fit_s = secs(t1);
            // The medoids' coordinates for --model-out, while the points are in memory.
            let predictor = match &a.model.model_out {
                Some(_) => Some(chosen.model.predictor(x.view(), &metric)?),
                None => None,
            };
            (chosen, predictor, Some(x.ncols()), 0.0, fit_s, sil)
        };
        Ok((chosen, predictor, d, dist_s, fit_s, sil))
    })?;
    let Chosen { mut model, k, table } = chosen;
    let Some(labels) = procs.gather_labels(std::mem::take(&mut model.labels)) else {
        return Ok(()); // rank 0 writes and reports
    };
    model.labels = labels;
    if let Some(p) = &predictor {
        a.model.save(p)?;
    }
    let mut extra = serde_json::Map::new();
    extra.insert("processes".into(), json!(procs.comm.size()));
    // (the element type of the distances: float32 is announced, as it can change the medoids)
    extra.insert(
        "dtype".into(),
        json!(if a.dtype == Dtype::F32 {
            "float32"
        } else {
            "float64"
        }),
    );
    extra.insert("medoids".into(), json!(model.medoids));
    extra.insert("initial_medoids".into(), json!(model.initial_medoids));
    extra.insert("n_swaps".into(), json!(model.n_swaps));
    if let Some((s, ms)) = sil {
        extra.insert("silhouette".into(), json!(s));
        extra.insert("medoid_silhouette".into(), json!(ms));
    }
    insert_k_selection(&mut extra, table);
    let n = model.labels.len();
    Report {
        algorithm: method,
        n,
        d,
        k: Some(k),
        model: &model,
        ran,
        seed: a.algo.seed,
        seconds: vec![("distances", dist_s), ("fit", fit_s)],
        extra,
    }
    .emit(a.algo.labels_out.as_deref(), &a.output, started)?;
    Ok(())
}

/// The chosen fit and, with `--silhouette`, its (silhouette, medoid silhouette).
type Fitted = (Chosen<KMedoidsModel<f64>>, Option<(f64, f64)>);

/// Fits the one k or each of several on `d`, the fits scored (several k) and measured
/// (`--silhouette`) on the dissimilarities they were fitted on.
fn fit_on<F: Scalar, D>(
    algo: &Algo,
    a: &Args,
    how: KChoice<'_>,
    x: Option<ndarray::ArrayView2<'_, F>>,
    d: &D,
    backend: &AnyBackend,
) -> CliResult<Fitted>
where
    D: Dissimilarity + Sync,
    D::Value: KValue<Loss = f64>,
{
    let chosen = a.algo.choose(
        how,
        &a.output,
        d.len(),
        x,
        |k, p| algo.with_k(k).fit(d, p, backend),
        |m, c| scored_on(d, m, c),
    )?;
    let sil = silhouettes(a.silhouette, d, &chosen.model)?;
    Ok((chosen, sil))
}

/// One fit on points, on the path the estimator chooses for the backend.
fn fit_points<F: Scalar + KValue<Loss = f64>>(
    algo: &Algo,
    x: ndarray::ArrayView2<'_, F>,
    metric: &MetricKind,
    progress: ProgressFn,
    backend: &AnyBackend,
    procs: &Processes,
) -> clustr::Result<KMedoidsModel<f64>> {
    match algo {
        Algo::Swap(p) => p
            .clone()
            .progress(progress)
            .backend(backend.clone())
            .fit_points(x, metric),
        Algo::Clara(p) => p
            .clone()
            .communicator(procs.comm.clone())
            .backend(backend.clone())
            .progress(progress)
            .fit_points(x, metric),
        Algo::Clarans(p) => p.clone().progress(progress).fit(&OnTheFly::new(x, *metric)?),
    }
}

/// The silhouette and the medoid silhouette on `d`, if asked.
fn silhouettes<D: Dissimilarity>(
    asked: bool,
    d: &D,
    m: &KMedoidsModel<f64>,
) -> CliResult<Option<(f64, f64)>> {
    Ok(if asked {
        Some((m.silhouette(d)?, m.medoid_silhouette(d)?))
    } else {
        None
    })
}

/// The k-medoids methods' own scores: both silhouettes on the dissimilarities of the fit.
fn scored_on<D: Dissimilarity>(d: &D, m: &KMedoidsModel<f64>, c: Criterion) -> Option<clustr::Result<f64>> {
    match c {
        Criterion::Silhouette => Some(m.silhouette(d)),
        Criterion::MedoidSilhouette => Some(m.medoid_silhouette(d)),
        _ => None,
    }
}
