//! Errors and exit codes: `CliError`, the one-line message, library suggestions in the command line's words.

use super::*;

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
