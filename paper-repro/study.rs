//! What every paper-repro binary shares: reading its flags, where it writes, and the provenance
//! header (command, commit, date, machine, threads) that starts every results file it writes —
//! the Rust twin of paper-repro/provenance.py.
//!
//! `--quick` runs a seconds-long version of each study; `.ci/run` runs every binary that way, so
//! a flag the CLI no longer takes, or a study that no longer runs, fails CI. Quick runs write
//! under target/paper-repro-quick/, never over the committed results. A flag's bad value is
//! one line on stderr and exit 2.

#![allow(dead_code)] // each binary uses a subset

use std::path::PathBuf;
use std::process::Command;
use std::str::FromStr;

/// The value after `name`, if the flag was given.
pub fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .map(|i| args.get(i + 1).cloned().unwrap_or_else(|| bad(name, "(missing)")))
}

/// Whether the bare flag `name` was given.
pub fn flag(name: &str) -> bool {
    std::env::args().any(|a| a == name)
}

/// Whether this is a `--quick` run.
pub fn quick() -> bool {
    flag("--quick")
}

fn bad(name: &str, value: &str) -> ! {
    eprintln!("error: {name} {value}: not a valid value");
    std::process::exit(2)
}

/// The parsed value of `name`, or `default` when the flag is absent.
pub fn value<T: FromStr>(name: &str, default: T) -> T {
    match arg(name) {
        None => default,
        Some(v) => v.parse().unwrap_or_else(|_| bad(name, &v)),
    }
}

/// A comma-separated list of counts, `default` when the flag is absent.
pub fn list(name: &str, default: &str) -> Vec<usize> {
    let text = arg(name).unwrap_or_else(|| default.into());
    text.split(',')
        .map(|v| v.trim().parse().unwrap_or_else(|_| bad(name, &text)))
        .collect()
}

/// Where results go: paper-repro/results, or target/paper-repro-quick for `--quick` runs.
pub fn results_dir() -> PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = if quick() {
        root.join("target/paper-repro-quick")
    } else {
        root.join("paper-repro/results")
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("error: {}: {e}", dir.display());
        std::process::exit(1)
    }
    dir
}

/// Writes `body` under the provenance header to `name` in [`results_dir`]; returns the path.
pub fn write(name: &str, threads: usize, body: &str) -> clustr::Result<PathBuf> {
    let path = results_dir().join(name);
    std::fs::write(&path, header(threads) + body).map_err(|e| clustr::Error::io(&path, e))?;
    eprintln!("wrote {}", path.display());
    Ok(path)
}

fn run(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit the code was at, with a mark when src/, paper-repro/*.rs or the Cargo files
/// differ from it: read once, at the first call. Each binary calls [`begin`] first, so this is
/// the tree `cargo run` built the binary from, not what the tree became during a long run.
fn commit() -> &'static str {
    static COMMIT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    COMMIT.get_or_init(|| {
        let root = env!("CARGO_MANIFEST_DIR");
        let mut commit =
            run("git", &["-C", root, "rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
        let mut diff = vec!["-C", root, "diff", "--quiet", "HEAD", "--"];
        diff.extend(["src", "paper-repro/*.rs", "Cargo.toml", "Cargo.lock"]);
        if run("git", &diff).is_none() {
            commit += " (with uncommitted changes to the code: src/, paper-repro/*.rs or Cargo files)";
        }
        commit
    })
}

/// Records the commit at the start of the run (see [`commit`]).
pub fn begin() {
    commit();
}

/// The header, as markdown list lines followed by a blank line; `threads` as the run used them.
pub fn header(threads: usize) -> String {
    let mut args = std::env::args();
    let name = args
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_stem()
                .map(|f| f.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    let rest: Vec<String> = args.collect();
    let command = if rest.is_empty() {
        format!("cargo run --release --example {name}")
    } else {
        format!("cargo run --release --example {name} -- {}", rest.join(" "))
    };
    let commit = commit();
    let date = run("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_else(|| "unknown".into());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!(
        "- command: `{command}`\n- commit: {commit}\n- date: {date} (end of the run)\n- machine: {cpu}, {cpus} logical CPUs\n- threads: {threads}\n\n"
    )
}
