//! What every subcommand shares: options for execution and output, loading input, errors and
//! exit codes, JSON output, progress bars.

use clustr::data::{read_matrix, validate::check_points};
use clustr::{BackendChoice, CpuBackend, Error, Scalar};
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
            message: e.to_string(),
        }
    }
}

pub type CliResult<T = ()> = Result<T, CliError>;

/// Prints the one-line error and returns its exit code.
pub fn fail(e: &CliError) -> ExitCode {
    eprintln!("clustr: error: {}", e.message.replace('\n', " "));
    ExitCode::from(e.code)
}

/// Execution options: threads and backend.
#[derive(clap::Args, Clone, Debug)]
pub struct ExecArgs {
    /// Worker threads (0 = one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Compute backend: auto, cpu or cuda.
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
    pub fn run<T: Send>(&self, f: impl FnOnce(&CpuBackend) -> CliResult<T> + Send) -> CliResult<(T, usize)> {
        let backend = self.backend.parse::<BackendChoice>()?.resolve()?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(self.threads)
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

/// Reads a data matrix and checks it (non-empty, finite); errors name the file.
pub fn load_points<F: Scalar>(path: &Path) -> CliResult<Array2<F>> {
    let x = read_matrix::<F>(path)?;
    check_points(x.view()).map_err(|e| CliError::from(e).prefixed(path))?;
    Ok(x)
}

impl CliError {
    /// Prefixes the message with a file name.
    pub fn prefixed(mut self, path: &Path) -> Self {
        self.message = format!("{}: {}", path.display(), self.message);
        self
    }
}

/// A progress bar on stderr when it is a terminal and not `--quiet`; hidden otherwise.
pub fn progress_bar(len: u64, what: &str, out: &OutputArgs) -> indicatif::ProgressBar {
    if out.quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} rows, {elapsed} (eta {eta})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}

/// Prints a JSON value on stdout.
pub fn print_json(v: &serde_json::Value) {
    println!("{}", serde_json::to_string_pretty(v).expect("serialisable"));
}

/// Seconds since `t`.
pub fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}
