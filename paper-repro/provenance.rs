//! The first lines of every results file the example binaries write: the command, the commit,
//! the date, the machine and the thread count (the Rust twin of paper-repro/provenance.py).

use std::process::Command;

fn run(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The header, as markdown list lines followed by a blank line; `threads` as the run used them.
pub fn header(threads: usize) -> String {
    let root = env!("CARGO_MANIFEST_DIR");
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
    let mut commit =
        run("git", &["-C", root, "rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    if run("git", &["-C", root, "diff", "--quiet", "HEAD", "--", "src"]).is_none() {
        commit += " (with uncommitted changes under src/)";
    }
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
