//! What every subcommand shares: options for execution and output, loading input, errors and
//! exit codes, JSON output, progress bars.

use clustr::data::{validate::check_points, CsvOptions, NpyRows};
use clustr::error::Suggestion;
use clustr::select_k::{Criterion, SelectK};
use clustr::{AnyBackend, BackendChoice, Error, Scalar};
use ndarray::Array2;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

/// A failure with its exit code.
#[derive(Debug)]
pub struct CliError {
    pub code: u8,
    pub message: String,
}

impl CliError {
    /// Bad arguments (exit code 2).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            code: 2,
            message: message.into(),
        }
    }
}

impl From<Error> for CliError {
    fn from(e: Error) -> Self {
        CliError {
            code: if e.is_input_error() { 2 } else { 1 },
            message: e.render(cli_words),
        }
    }
}

/// A library suggestion in the command line's words: parameters as flags, methods as
/// subcommands.
pub fn cli_words(s: &Suggestion) -> String {
    match s {
        Suggestion::Set(param, value) => format!("--{} {value}", flag_of(param)),
        Suggestion::Lower(param) => format!("a smaller --{}", flag_of(param)),
        Suggestion::Method(m) => format!("clustr {m}"),
        Suggestion::Other(words) => words.to_string(),
    }
}

/// The flag (without its dashes) that sets a library parameter.
pub fn flag_of(param: &str) -> String {
    match param {
        "covariance_type" => "covariance".into(),
        "n_runs" => "seeds".into(),
        p => p.replace('_', "-"),
    }
}

pub type CliResult<T = ()> = Result<T, CliError>;

/// Prints the one-line error and returns its exit code.
pub fn fail(e: &CliError) -> ExitCode {
    errln!("clustr: error: {}", e.message.replace('\n', " "));
    ExitCode::from(e.code)
}

/// Execution options: threads and backend.
#[derive(clap::Args, Clone, Debug)]
pub struct ExecArgs {
    /// Worker threads (0 = one per core; at most 1024).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=1024))]
    pub threads: u16,
    /// Compute backend: auto, cpu or cuda (feature `cuda`; auto = the GPU when one is usable).
    /// On CUDA: distance matrices, the assignments of kmeans, minibatch-kmeans and CLARA on
    /// points, the swap scans of fastpam1, fastpam2 and fasterpam, and rff-kpkm and
    /// power-kmeans; the rest runs on the CPU.
    #[arg(long, default_value = "auto")]
    pub backend: String,
}

/// Output options.
#[derive(clap::Args, Clone, Debug)]
pub struct OutputArgs {
    /// Print one JSON object on stdout (human-readable output goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// No progress bar or human-readable summary.
    #[arg(long)]
    pub quiet: bool,
}

impl ExecArgs {
    /// Runs `f` on a thread pool of the requested size with the requested backend; returns
    /// its result and the number of threads used.
    pub fn run<T: Send>(&self, f: impl FnOnce(&AnyBackend) -> CliResult<T> + Send) -> CliResult<(T, usize)> {
        let backend = self.backend.parse::<BackendChoice>()?.resolve()?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(self.threads.into())
            .build()
            .map_err(|e| CliError {
                code: 1,
                message: format!("cannot start {} threads: {e}", self.threads),
            })?;
        let threads = pool.current_num_threads();
        let out = pool.install(|| f(&backend))?;
        Ok((out, threads))
    }
}

/// How a subcommand runs: as one process, or (`--distributed`) as one process of an MPI job
/// started by `mpirun` / `srun`, which needs clustr built with the `mpi` feature.
pub struct Processes {
    pub comm: clustr::comm::SharedComm,
    distributed: bool,
}

impl Processes {
    pub fn new(distributed: bool) -> CliResult<Self> {
        let comm = if distributed {
            mpi_world()?
        } else {
            clustr::comm::single_process()
        };
        Ok(Processes { comm, distributed })
    }

    /// The input points: all of them, or in a distributed run this process's slice of the
    /// rows of a .npy file or a folder of .npy shards (it reads only those); errors name the
    /// file. (A distributed fit checks the values itself, with every process agreeing.)
    pub fn load<F: Scalar>(&self, path: &Path) -> CliResult<Array2<F>> {
        if !self.distributed && !path.is_dir() {
            return load_points(path);
        }

        let rows = self.rows(path)?;
        let x = rows
            .rows::<F>(0, rows.nrows())
            .map_err(|e| CliError::from(e).prefixed(path))?;
        if !self.distributed {
            check_points(x.view()).map_err(|e| CliError::from(e).prefixed(path))?;
        }
        Ok(x)
    }

    /// The rows this process reads, unread yet: a .npy file or a folder of .npy shards (in
    /// file-name order), in a distributed run this process's contiguous slice of them.
    pub fn rows(&self, path: &Path) -> CliResult<NpyRows> {
        refuse_points_options("a streamed .npy, --distributed or a folder of shards")?;
        if !path.is_dir() && clustr::data::FileKind::of(path)? != clustr::data::FileKind::Npy {
            return Err(CliError::usage(format!(
                "{}: a distributed run reads its rows from a .npy file or a folder of .npy shards",
                path.display()
            )));
        }
        let rows = NpyRows::open(path)?;
        let slice = self.comm.row_range(rows.total_rows());
        Ok(rows.window(slice)?)
    }

    /// All the labels, in row order, on the process that writes and reports (rank 0); `None`
    /// on the others.
    pub fn gather_labels(&self, local: Vec<i64>) -> Option<Vec<i64>> {
        if !self.distributed {
            return Some(local);
        }
        clustr::comm::gather_labels(&local, 0, &*self.comm)
    }
}

/// A model reported with other labels: those of every process, gathered.
pub struct WithLabels<'a> {
    pub model: &'a dyn clustr::Clustering,
    pub labels: Vec<i64>,
}

impl clustr::Clustering for WithLabels<'_> {
    fn labels(&self) -> &[i64] {
        &self.labels
    }
    fn loss(&self) -> Option<f64> {
        self.model.loss()
    }
    fn n_iter(&self) -> usize {
        self.model.n_iter()
    }
    fn converged(&self) -> bool {
        self.model.converged()
    }
}

fn mpi_world() -> CliResult<clustr::comm::SharedComm> {
    #[cfg(feature = "mpi")]
    {
        Ok(std::sync::Arc::new(clustr::comm::Mpi::init()?))
    }
    #[cfg(not(feature = "mpi"))]
    {
        Err(CliError::usage(
            "--distributed needs clustr built with the mpi feature (cargo build --release --features mpi)",
        ))
    }
}

/// `--header` (Some(true)) / `--no-header` (Some(false)); `None`: guessed per file.
static CSV_HEADER: std::sync::OnceLock<Option<bool>> = std::sync::OnceLock::new();

/// Sets the `--header` / `--no-header` choice for every CSV input of the run.
pub fn set_csv_header(header: Option<bool>) {
    let _ = CSV_HEADER.set(header);
}

/// Reads a matrix (.npy or CSV, with the run's header choice), without checking its values.
pub fn read_matrix<F: Scalar>(path: impl AsRef<Path>) -> CliResult<Array2<F>> {
    let csv = CsvOptions {
        has_header: CSV_HEADER.get().copied().flatten(),
        ..Default::default()
    };
    Ok(clustr::data::read_matrix_with(path, &csv)?)
}

/// Reads sample weights: one value per point, as one column (or a 1-d .npy); errors name the
/// file. (Their values are checked by the library against the points.)
pub fn read_sample_weight(path: &Path) -> CliResult<Vec<f64>> {
    let w = read_matrix::<f64>(path)?;
    if w.ncols() != 1 {
        return Err(CliError::usage(format!(
            "{}: sample weights need one column, found {}",
            path.display(),
            w.ncols()
        )));
    }
    Ok(w.into_iter().collect())
}

/// `--columns`, `--drop-columns` and `--standardize`: how the points are taken from INPUT.
#[derive(Clone, Debug, Default)]
pub struct PointsOptions {
    pub columns: clustr::data::columns::ColumnSelection,
    pub standardize: Option<clustr::data::columns::Scaling>,
}

static POINTS: std::sync::OnceLock<PointsOptions> = std::sync::OnceLock::new();

/// Sets how the points of every INPUT of the run are selected and scaled.
pub fn set_points_options(p: PointsOptions) {
    let _ = POINTS.set(p);
}

fn points_options() -> PointsOptions {
    POINTS.get().cloned().unwrap_or_default()
}

/// `--quiet` of the subcommand that runs (no spinner while reading).
static QUIET: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// Sets whether the run is `--quiet`.
pub fn set_quiet(quiet: bool) {
    let _ = QUIET.set(quiet);
}

/// A spinner naming the file being read (hidden when not a terminal or with --quiet).
fn reading_spinner(path: &Path) -> indicatif::ProgressBar {
    if QUIET.get().copied().unwrap_or(false) || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let s = indicatif::ProgressBar::new_spinner();
    s.set_message(format!("reading {}", path.display()));
    s.enable_steady_tick(std::time::Duration::from_millis(100));
    s
}

/// Refuses `--columns`, `--drop-columns` and `--standardize` where the input is not read
/// whole as points (`what`).
pub fn refuse_points_options(what: &str) -> CliResult {
    let opts = points_options();
    if opts.columns.is_all() && opts.standardize.is_none() {
        return Ok(());
    }
    Err(CliError::usage(format!(
        "--columns, --drop-columns and --standardize apply to points read whole, not to {what}"
    )))
}

/// Reads the points (.npy, CSV, or `-`: CSV on standard input) with the run's column
/// selection, checks them (non-empty, finite) and standardises them if asked; errors name the
/// file.
pub fn load_points<F: Scalar>(path: &Path) -> CliResult<Array2<F>> {
    let opts = points_options();
    let csv = CsvOptions {
        has_header: CSV_HEADER.get().copied().flatten(),
        columns: opts.columns,
        ..Default::default()
    };
    let prefixed = |e: Error| CliError::from(e).prefixed(path);
    let reading = reading_spinner(path);
    let mut x = clustr::data::read_matrix_with::<F>(path, &csv).map_err(prefixed)?;
    reading.finish_and_clear();
    check_points(x.view()).map_err(prefixed)?;
    if let Some(how) = opts.standardize {
        clustr::data::columns::standardize(&mut x, how).map_err(prefixed)?;
    }
    Ok(x)
}

impl CliError {
    /// Prefixes the message with a file name (unless it already starts with it).
    pub fn prefixed(mut self, path: &Path) -> Self {
        let prefix = format!("{}: ", path.display());
        if !self.message.starts_with(&prefix) {
            self.message = format!("{prefix}{}", self.message);
        }
        self
    }
}

/// A progress bar of `len` `unit`s (rows, fits) on stderr when it is a terminal and not
/// `--quiet`; hidden otherwise.
pub fn progress_bar(len: u64, what: &str, unit: &str, out: &OutputArgs) -> indicatif::ProgressBar {
    if out.quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{msg}} [{{bar:40}}] {{pos}}/{{len}} {unit}, {{elapsed}} (eta {{eta}})"
        ))
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}

/// Prints a JSON value on stdout (see [`crate::streams`] for a closed or full stdout).
pub fn print_json(v: &serde_json::Value) -> CliResult {
    outln!("{}", serde_json::to_string_pretty(v).expect("serialisable"))
}

/// Seconds since `t`.
pub fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// Options every clustering subcommand takes.
#[derive(clap::Args, Clone, Debug)]
pub struct AlgoArgs {
    /// Number of clusters; or a range A:B (inclusive) or a list A,B,C: each k is fitted and the
    /// best by --criterion kept.
    #[arg(long, value_parser = parse_k_arg)]
    pub k: Ks,
    /// With several k, how to choose: silhouette, medoid-silhouette, calinski-harabasz (ch),
    /// davies-bouldin (db), bic, aic or elbow (default: medoid-silhouette for the k-medoids
    /// methods, bic for gmm, elbow for the kernel methods, silhouette otherwise).
    #[arg(long)]
    pub criterion: Option<String>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Maximum iterations (passes); the algorithm's default when omitted.
    #[arg(long)]
    pub max_iter: Option<usize>,
    /// Write the labels here (.npy int32 or .csv; -1 = noise).
    #[arg(long)]
    pub labels_out: Option<std::path::PathBuf>,
}

/// `--sample-weight` of k-means, mini-batch k-means, GMM, the k-medoids methods, power
/// k-means and RFF-KPKM.
#[derive(clap::Args, Clone, Debug)]
pub struct SampleWeightArg {
    /// Weight of each point (.npy or .csv, one value per point; non-negative, not all 0): the
    /// objective weighs each point by it, so an integer weight counts as that many copies of
    /// the row (k-means++ seeding draws in proportion to it).
    #[arg(long)]
    pub sample_weight: Option<std::path::PathBuf>,
}

impl SampleWeightArg {
    /// The weights, if given (not with --distributed).
    pub fn read(&self, distributed: bool) -> CliResult<Option<Vec<f64>>> {
        match &self.sample_weight {
            Some(_) if distributed => Err(CliError::usage(
                "--sample-weight is not available with --distributed",
            )),
            Some(p) => Ok(Some(read_sample_weight(p)?)),
            None => Ok(None),
        }
    }
}

/// `--model-out` of the subcommands whose model assigns new points.
#[derive(clap::Args, Clone, Debug)]
pub struct ModelOutArg {
    /// Write the fitted model here (JSON, see `clustr predict`): what assigns new points,
    /// with the command line that fitted it.
    #[arg(long)]
    pub model_out: Option<std::path::PathBuf>,
}

impl ModelOutArg {
    /// Saves `model` if asked (staged with the run's other outputs), recording the command.
    pub fn save<M: clustr::model_file::SaveLoad>(&self, model: &M) -> CliResult {
        if let Some(p) = &self.model_out {
            let args: Vec<String> = std::env::args().skip(1).collect();
            model.save_with(p, serde_json::json!({ "command": args }))?;
        }
        Ok(())
    }

    /// Refuses `--model-out` where the run gives no model that can assign new points.
    pub fn refuse_with(&self, why: Option<&str>) -> CliResult {
        match (why, &self.model_out) {
            (Some(why), Some(_)) => Err(CliError::usage(format!("--model-out: {why}"))),
            _ => Ok(()),
        }
    }
}

/// A progress bar driven by an algorithm's progress callback (hidden when not a terminal or
/// with --quiet): after the reading spinner of [`load_points`], it names the phase the fit is
/// in (distances, features, init, kernel matrix, then iteration i of at most max), the rate,
/// the time spent and the most time left.
pub fn iteration_bar(
    max_iter: usize,
    what: &str,
    out: &OutputArgs,
) -> (indicatif::ProgressBar, clustr::ProgressFn) {
    let bar = if out.quiet || !std::io::stderr().is_terminal() {
        indicatif::ProgressBar::hidden()
    } else {
        let b = indicatif::ProgressBar::new(max_iter as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{prefix} [{bar:30}] {pos}/{len} {msg} ({per_sec}, {elapsed}, at most {eta} left)",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        b.set_prefix(format!("{what}: starting"));
        b
    };
    let (b, phases) = (bar.clone(), bar.clone());
    let (name, phase_name) = (what.to_string(), what.to_string());
    let f = clustr::ProgressFn::new(move |p: &clustr::Progress| {
        b.set_prefix(format!("{name}: iteration"));
        b.set_position(p.iteration as u64);
        if let Some(o) = p.objective {
            b.set_message(format!("loss {o:.6e}"));
        }
    })
    .with_phases(move |phase| phases.set_prefix(format!("{phase_name}: {phase}")));
    (bar, f)
}

/// The result of a clustering subcommand: written as the labels file, the JSON object of the
/// CLI contract, and a human-readable line on stderr.
pub struct Report<'a> {
    pub algorithm: &'a str,
    pub n: usize,
    pub d: Option<usize>,
    pub k: Option<usize>,
    pub model: &'a dyn clustr::Clustering,
    pub backend: &'a str,
    pub threads: usize,
    pub seed: u64,
    /// Phase timings, e.g. ("distances", s); "total" is added.
    pub seconds: Vec<(&'a str, f64)>,
    /// Algorithm-specific fields (medoids, centers, n_swaps...).
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Report<'_> {
    /// Writes the labels (if asked), then prints the summary. A non-finite objective is never
    /// reported as a result: the input was beyond what the arithmetic could take (exit 2).
    pub fn emit(self, labels_out: Option<&Path>, out: &OutputArgs, started: Instant) -> CliResult {
        if let Some(loss) = self.model.loss().filter(|l| !l.is_finite()) {
            return Err(CliError::from(Error::OutOfRange(format!(
                "{}: the objective came out as {loss}: the input values are beyond what the \
                 algorithm's arithmetic can take; rescale the data",
                self.algorithm
            ))));
        }
        if let Some(p) = labels_out {
            clustr::data::write_labels(p, self.model.labels())?;
        }
        let written = clustr::data::output::commit_staged()?;
        let mut seconds = serde_json::Map::new();
        seconds.insert("total".into(), serde_json::json!(secs(started)));
        for (k, v) in &self.seconds {
            seconds.insert((*k).into(), serde_json::json!(v));
        }
        let m = self.model;
        if !out.quiet {
            // (after the outputs are in place: a failure before this point is one line)
            if let Some(t) = self.extra.get("k_selection") {
                print_k_table(t);
            }
            errln!("clustr: {}", self.summary(secs(started)));
            if !written.is_empty() {
                let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
                errln!("clustr: wrote {}", names.join(", "));
            }
        }
        if out.json {
            let mut v = serde_json::json!({
                "algorithm": self.algorithm,
                "n": self.n,
                "d": self.d,
                "k": self.k,
                "n_clusters": m.n_clusters(),
                "n_noise": m.n_noise(),
                "loss": m.loss(),
                "n_iter": m.n_iter(),
                "converged": m.converged(),
                "backend": self.backend,
                "threads": self.threads,
                "seed": self.seed,
                "seconds": seconds,
            });
            v.as_object_mut().expect("object").extend(self.extra);
            print_json(&v)?;
        }
        Ok(())
    }
}

impl Report<'_> {
    /// The human summary: clusters and noise, the objective under its usual name, iterations
    /// and convergence where the method iterates, the silhouettes and criteria the run
    /// computed, and the time.
    fn summary(&self, seconds: f64) -> String {
        let m = self.model;
        let mut parts = vec![format!(
            "{}: n = {}, {} clusters",
            self.algorithm,
            self.n,
            m.n_clusters()
        )];
        let density = matches!(self.algorithm, "dbscan" | "optics" | "hdbscan" | "single-linkage");
        if self.extra.get("dtype").and_then(|v| v.as_str()) == Some("float32") {
            parts.push("float32 distances".into());
        }
        if density || m.n_noise() > 0 {
            let pct = 100.0 * m.n_noise() as f64 / self.n.max(1) as f64;
            parts.push(format!("{} noise points ({pct:.1} %)", m.n_noise()));
        }
        if let Some(loss) = m.loss() {
            let name = match self.algorithm {
                "kmeans" | "minibatch-kmeans" | "ppp" => "inertia",
                "gmm" => "mean log-likelihood",
                "power-kmeans" | "kpkm" | "kernel-kmeans" | "rff-kpkm" | "ip-rff-mkpkm" => "objective",
                _ => "loss (sum of distances to the medoids)",
            };
            parts.push(format!("{name} {}", clustr::scalar::readable_to(loss, 6)));
            let state = if m.converged() {
                "converged"
            } else {
                "not converged"
            };
            parts.push(format!("{} iterations ({state})", m.n_iter()));
        }
        for (key, name) in [
            ("silhouette", "silhouette"),
            ("medoid_silhouette", "medoid silhouette"),
            ("bic", "BIC"),
        ] {
            if let Some(v) = self.extra.get(key).and_then(|v| v.as_f64()) {
                parts.push(format!("{name} {}", clustr::scalar::readable_to(v, 4)));
            }
        }
        parts.push(format!("{seconds:.3} s"));
        parts.join(", ")
    }
}

/// The element type a subcommand computes in (`--dtype`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// 32-bit floats.
    #[value(alias = "float32")]
    F32,
    /// 64-bit floats.
    #[value(alias = "float64")]
    F64,
}

/// Renames every output of the run into place (all or none); called before the summary that
/// says they were written.
pub fn commit_outputs() -> CliResult {
    clustr::data::output::commit_staged()?;
    Ok(())
}

/// `--k`: the numbers of clusters to try (one, or several in increasing order).
#[derive(Clone, Debug)]
pub struct Ks(pub Vec<usize>);

fn parse_k_arg(s: &str) -> Result<Ks, String> {
    clustr::select_k::parse_ks(s).map(Ks).map_err(|e| e.to_string())
}

/// How a subcommand chooses among several k: its name on the progress bar, the steps of one
/// fit's bar, its default criterion, and the memory one fit of a given k needs (fits run at
/// once as far as `--max-memory` allows for the largest of them).
pub struct KChoice<'a> {
    pub what: &'a str,
    pub steps: usize,
    pub criterion: Criterion,
    pub memory_of_fit: Box<dyn Fn(usize) -> u64 + 'a>,
}

/// How many of the fits of `ks` may run at once within `limit` bytes: as many as the fit of
/// the k that needs the most allows (at least 1; a fit above the limit is refused by itself).
pub fn fits_at_once(ks: &[usize], memory_of_fit: &dyn Fn(usize) -> u64, limit: u64) -> u64 {
    let largest = ks.iter().map(|&k| memory_of_fit(k)).max().unwrap_or(0);
    (limit / largest.max(1)).clamp(1, ks.len().max(1) as u64)
}

/// What `--k` gave: the model, its k, and with several k the table (`k_selection` in the JSON).
pub struct Chosen<M> {
    pub model: M,
    pub k: usize,
    pub table: Option<serde_json::Value>,
}

/// The estimators whose number of clusters is their field `k`: a copy with another k, for
/// fitting each k of `--k A:B`.
pub trait WithK: Clone {
    fn with_k(&self, k: usize) -> Self;
}

macro_rules! with_k {
    ($($t:ty),*) => {$(
        impl WithK for $t {
            fn with_k(&self, k: usize) -> Self {
                let mut p = self.clone();
                p.k = k;
                p
            }
        }
    )*};
}

with_k!(
    clustr::kmeans::KMeans,
    clustr::kmeans::MiniBatchKMeans,
    clustr::mixture::GaussianMixture,
    clustr::kmedoids::KMedoids,
    clustr::kmedoids::Clara,
    clustr::kmedoids::Clarans,
    clustr::kernel::PowerKMeans,
    clustr::kernel::Kpkm,
    clustr::kernel::KernelKMeans,
    clustr::kernel::RffKpkm,
    clustr::kernel::IpRffMkpkm
);

/// Adds `k_selection` to a report's fields when several k were tried.
pub fn insert_k_selection(
    extra: &mut serde_json::Map<String, serde_json::Value>,
    table: Option<serde_json::Value>,
) {
    if let Some(t) = table {
        extra.insert("k_selection".into(), t);
    }
}

impl AlgoArgs {
    /// The one k of a subcommand that does not choose among several.
    pub fn single_k(&self, command: &str) -> CliResult<usize> {
        match (self.k.0.as_slice(), &self.criterion) {
            ([k], None) => Ok(*k),
            _ => Err(CliError::usage(format!(
                "{command} takes one --k (no range, list or --criterion)"
            ))),
        }
    }

    /// Fits `fit(k, progress)` with the one k, or with each of several k keeping the best by the
    /// criterion (the table is printed unless --quiet). `own` gives the family's own value of
    /// a criterion (BIC, medoid silhouette); the silhouette, CH and DB otherwise come from `x`.
    #[allow(clippy::too_many_arguments)]
    pub fn choose<F: Scalar, M: clustr::Clustering + Send>(
        &self,
        how: KChoice<'_>,
        out: &OutputArgs,
        n: usize,
        x: Option<ndarray::ArrayView2<'_, F>>,
        fit: impl Fn(usize, clustr::ProgressFn) -> clustr::Result<M> + Sync,
        own: impl Fn(&M, Criterion) -> Option<clustr::Result<f64>> + Sync,
    ) -> CliResult<Chosen<M>> {
        if let ([k], None) = (self.k.0.as_slice(), &self.criterion) {
            let (bar, progress) = iteration_bar(how.steps, how.what, out);
            let model = fit(*k, progress)?;
            bar.finish_and_clear();
            return Ok(Chosen {
                model,
                k: *k,
                table: None,
            });
        }
        let criterion = match &self.criterion {
            Some(c) => c.parse()?,
            None => how.criterion,
        };
        let ks = self.k.0.clone();
        let at_once = fits_at_once(&ks, &how.memory_of_fit, clustr::memory::max_memory());
        let bar = progress_bar(
            ks.len() as u64,
            &format!("{}: fitting each k", how.what),
            "fits",
            out,
        );
        let b = bar.clone();
        let mut select = SelectK::new(ks, criterion)
            .parallel(at_once as usize)
            .seed(self.seed);
        select.progress = Some(clustr::ProgressFn::new(move |p| {
            b.set_position(p.iteration as u64)
        }));
        let quiet = clustr::ProgressFn::new(|_| {});
        let chosen = select.run(n, x, |k| fit(k, quiet.clone()), own)?;
        bar.finish_and_clear();
        let rows: Vec<serde_json::Value> = chosen
            .table
            .iter()
            .map(|r| {
                serde_json::json!({
                    "k": r.k, "score": r.score, "loss": r.loss, "n_clusters": r.n_clusters,
                    "n_iter": r.n_iter, "seconds": r.seconds,
                })
            })
            .collect();
        let table = serde_json::json!({
            "criterion": criterion.name(),
            "higher_is_better": criterion.higher_is_better(),
            "chosen_k": chosen.best_k,
            "table": rows,
        });
        Ok(Chosen {
            model: chosen.model,
            k: chosen.best_k,
            table: Some(table),
        })
    }
}

/// The rows `--k` with several values scores the silhouette on, for `n` points (as
/// [`AlgoArgs::choose`] samples them).
pub fn silhouette_rows(n: usize, seed: u64) -> Vec<usize> {
    SelectK::new(Vec::new(), Criterion::Silhouette)
        .seed(seed)
        .silhouette_rows(n)
}

/// The table of a choice of k (the JSON's `k_selection`) on stderr, the chosen row marked.
fn print_k_table(t: &serde_json::Value) {
    let criterion = t["criterion"].as_str().unwrap_or("criterion");
    let better = if t["higher_is_better"].as_bool() == Some(true) {
        "higher"
    } else {
        "lower"
    };
    errln!("clustr: choosing k by {criterion} ({better} is better):");
    errln!(
        "      k  {criterion:>18}  {:>14}  {:>8}  {:>10}  {:>9}",
        "loss",
        "clusters",
        "iterations",
        "seconds"
    );
    for r in t["table"].as_array().into_iter().flatten() {
        let mark = if r["k"] == t["chosen_k"] { "*" } else { " " };
        let number = |v: &serde_json::Value, f: fn(f64) -> String| v.as_f64().map_or("-".to_string(), f);
        let score = number(&r["score"], |v| clustr::scalar::readable_to(v, 6));
        let loss = number(&r["loss"], |v| format!("{v:.6e}"));
        errln!(
            "  {mark} {:>4}  {score:>18}  {loss:>14}  {:>8}  {:>10}  {:>9.3}",
            r["k"].as_u64().unwrap_or(0),
            r["n_clusters"].as_u64().unwrap_or(0),
            r["n_iter"].as_u64().unwrap_or(0),
            r["seconds"].as_f64().unwrap_or(0.0)
        );
    }
}
