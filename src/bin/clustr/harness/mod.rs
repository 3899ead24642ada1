//! What every subcommand shares: options for execution and output, loading input, errors and
//! exit codes, JSON output, progress bars.
//!
//! One file per concern: `errors`, `exec`, `input`, `output`, `progress`, `choose_k`; their
//! items are used as `crate::harness::…`.

use clustr::data::{validate::check_points, CsvOptions, NpyRows};
use clustr::error::Suggestion;
use clustr::select_k::{Criterion, Ks, SelectK};
use clustr::{AnyBackend, BackendChoice, Error, Scalar};
use ndarray::Array2;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

mod choose_k;
mod errors;
mod exec;
mod input;
mod output;
mod progress;

pub use choose_k::*;
pub use errors::*;
pub use exec::*;
pub use input::*;
pub use output::*;
pub use progress::*;
