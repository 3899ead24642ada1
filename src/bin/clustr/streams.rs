//! The one policy for the command line's standard output and standard error.
//!
//! - Standard output carries results (the JSON object, tables, completion scripts). A reader
//!   that closes the pipe early (`clustr … --json | head -1`) ends that output quietly: what
//!   is left of it is dropped, the run's output files are still written whole, and the exit
//!   code is 141, as for a Unix tool stopped by SIGPIPE. Any other failure to write it (a full
//!   device) is exit 1 with one line on standard error.
//! - Standard error carries messages, summaries and progress. A message that cannot be
//!   written is dropped: the exit code of a run never depends on whether its message could be
//!   printed.

use crate::harness::{CliError, CliResult};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// The exit code of a run whose standard output was closed by its reader (128 + SIGPIPE).
pub const CLOSED_PIPE_EXIT: u8 = 141;

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `text` to standard output and flushes it (see the module's policy).
pub fn out(text: &str) -> CliResult {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        Err(e) => Err(CliError {
            code: 1,
            message: format!("writing standard output failed: {e}"),
        }),
    }
}

/// Writes `text` to standard error; a failure is ignored (see the module's policy).
pub fn err(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes()).and_then(|()| stderr.flush());
}

/// Whether a reader closed standard output during the run.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// `println!` through [`out`]: evaluates to its [`CliResult`].
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::streams::out(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` through [`err`].
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::streams::err(&format!("{}\n", format_args!($($arg)*)))
    };
}
