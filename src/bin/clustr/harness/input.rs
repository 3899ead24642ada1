//! Reading input: the CSV header setting, points with the column selection and scaling, matrices, sample weights.

use super::*;

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

/// Whether a command whose method runs on sparse rows reads `input` as such: a sparse file
/// under a metric computed on them (euclidean, sqeuclidean, cosine, manhattan); under other
/// metrics it reads the file's dense form.
pub fn sparse_rows(input: &Path, metric: clustr::MetricKind) -> bool {
    clustr::data::SparseKind::of(input).is_some() && clustr::dissim::check_sparse_metric(metric).is_ok()
}

/// Reads sparse points (.npz, .mtx, svmlight; see `clustr::data::sparse_files`) as sparse
/// rows, for the methods that fit them so: `--standardize` scales the columns without centring
/// them (zscore only), `--columns` and `--drop-columns` are refused (select columns before
/// saving the matrix); errors name the file.
pub fn load_sparse_points<F: Scalar>(path: &Path) -> CliResult<clustr::data::Csr<F>> {
    let opts = points_options();
    let prefixed = |e: Error| CliError::from(e).prefixed(path);
    if !opts.columns.is_all() {
        return Err(CliError::usage(
            "--columns and --drop-columns do not apply to a sparse file: select its columns before saving it",
        ));
    }
    let reading = reading_spinner(path);
    let mut x = clustr::data::read_sparse::<F>(path).map_err(prefixed)?;
    reading.finish_and_clear();
    if let Some(how) = opts.standardize {
        clustr::data::columns::scale_sparse(&mut x, how).map_err(prefixed)?;
    }
    Ok(x)
}

// `--sample-weight` of k-means, mini-batch k-means, GMM, the k-medoids methods, power
// k-means and RFF-KPKM.
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
