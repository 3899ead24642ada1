//! Fuzzing of the command line (issue #9), on the stable toolchain like
//! `tests/fuzz_readers.rs`: valid command lines of every subcommand (the seed corpus, `SEEDS`)
//! mutated by replacing, inserting and deleting arguments drawn from a vocabulary of flags and
//! hostile values. Every run must exit 0, or exit 2 with one line `clustr: error: ...` (or the
//! usage, where a subcommand is missing); never panic, crash, hang (20 s) or leave a temporary
//! file behind.
//! CI runs 64 cases; `scripts/fuzz.sh` runs it for a set time with many more.

use proptest::prelude::*;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The binary under test: `CLUSTR_BIN` if set (a copy, so that a long run is not disturbed
/// by rebuilding), else the one cargo built for this test.
fn clustr_bin() -> PathBuf {
    std::env::var_os("CLUSTR_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_clustr")), PathBuf::from)
}

fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

/// Valid command lines, one or more per subcommand (run in a folder holding `good.csv`,
/// `tasks.csv` and `new.csv`).
const SEEDS: &[&str] = &[
    "kmeans good.csv --k 2 --labels-out out.npy --json",
    "minibatch-kmeans good.csv --k 2 --batch-size 4 --json",
    "gmm good.csv --k 2 --covariance diag --proba-out p.csv --json",
    "ppp good.csv --k-min 1 --k-max 3 --seeds 2 --json",
    "dbscan good.csv --eps 1.5 --min-samples 2 --labels-out out.csv",
    "optics good.csv --min-samples 2 --reachability-out r.csv --json",
    "power-kmeans good.csv --k 2 --json",
    "kpkm good.csv --k 2 --sigma median --json",
    "kernel-kmeans good.csv --k 2 --sigma 1.5 --init random --json",
    "rff-kpkm good.csv --k 2 --n-features 16 --json",
    "ip-rff-mkpkm good.csv --k 2 --n-features 16 --typicality-out t.csv",
    "pam good.csv --k 2 --json",
    "fastpam1 good.csv --k 2 --metric manhattan",
    "fastpam2 good.csv --k 2 --dtype f32",
    "fasterpam good.csv --k 2 --init lab --labels-out out.npy",
    "alternating good.csv --k 2",
    "clara good.csv --k 2",
    "fastclara good.csv --k 2",
    "fasterclara good.csv --k 2 --sample-size 6",
    "clarans good.csv --k 2",
    "fastclarans good.csv --k 2",
    "distances good.csv --out d.npy --metric cosine",
    "eval --labels labels.csv --truth labels.csv --data good.csv --json",
    "datasets export blobs --n 50 --k 3 --out b.csv --labels-out bl.npy",
    "datasets list",
    "magmaclust train tasks.csv --k 2 --out m.json",
    "magmaclust select tasks.csv --k-range 1:2 --out s.json",
];

/// Flags of the subcommands and hostile or valid values.
const VOCABULARY: &[&str] = &[
    "--k",
    "--eps",
    "--min-samples",
    "--max-eps",
    "--max-iter",
    "--seed",
    "--threads",
    "--backend",
    "--metric",
    "--dtype",
    "--labels-out",
    "--out",
    "--json",
    "--quiet",
    "--max-memory",
    "--sigma",
    "--sigmas",
    "--n-features",
    "--k-min",
    "--k-max",
    "--seeds",
    "--precomputed",
    "--init",
    "--covariance-type",
    "--algorithm",
    "--batch-size",
    "--sample-size",
    "--proba-out",
    "--plot",
    "--truth",
    "--data",
    "--medoids",
    "--n",
    "--d",
    "--noise",
    "--factor",
    "--k-range",
    "--hypothesis",
    "--grid",
    "--kernel",
    "--help",
    "--distributed",
    "0",
    "1",
    "2",
    "3",
    "-1",
    "0.5",
    "1e308",
    "-1e308",
    "nan",
    "inf",
    "-inf",
    "1e-320",
    "abc",
    "",
    " ",
    "99999999999999999999",
    "18446744073709551615",
    "4294967296",
    "good.csv",
    "tasks.csv",
    "labels.csv",
    "missing.csv",
    "out.npy",
    "out.csv",
    "nope/out.npy",
    "/sys/out.npy",
    "good.csv/x.npy",
    "euclidean",
    "haversine",
    "minkowski:0.5",
    "minkowski:abc",
    "cuda",
    "cpu",
    "f32",
    "f16",
    "k-means++",
    "random",
    "build",
    "full",
    "spherical",
    "elkan",
    "xi",
    "median",
    "1:3",
    "3:1",
    "0:1:5",
    "SE",
    "PERIO+LIN",
    "H00",
    "Hki",
    "64",
    "1K",
    "é",
    "-",
    "--",
    "\u{7f}x",
];

/// The working folder with the input files, one per test thread (so one test never sees
/// another's output being written); removed when the thread ends.
fn workdir() -> PathBuf {
    thread_local! {
        static DIR: tempfile::TempDir = make_workdir();
    }
    DIR.with(|d| d.path().to_path_buf())
}

fn make_workdir() -> tempfile::TempDir {
    {
        let d = tempfile::tempdir().unwrap();
        let w = |name: &str, text: &str| std::fs::write(d.path().join(name), text).unwrap();
        w("good.csv", "0,0\n0,1\n1,0\n1,1\n10,10\n10,11\n11,10\n11,11\n");
        w("labels.csv", "0\n0\n0\n0\n1\n1\n1\n1\n");
        let mut tasks = String::from("ID,Input,Output\n");
        for t in 0..6 {
            for i in 0..5 {
                let y = if t % 2 == 0 { i as f64 } else { -(i as f64) } + 0.1 * t as f64;
                tasks.push_str(&format!("t{t},{i},{y}\n"));
            }
        }
        w("tasks.csv", &tasks);
        w("new.csv", "ID,Input,Output\nn,0,0.1\nn,1,1.2\n");
        d
    }
}

/// A seed command line with a few arguments replaced, inserted or deleted.
fn command_line() -> impl Strategy<Value = Vec<String>> {
    (
        0..SEEDS.len(),
        proptest::collection::vec((0u8..3, any::<u16>(), 0..VOCABULARY.len()), 0..6),
    )
        .prop_map(|(seed, edits)| {
            let mut args: Vec<String> = SEEDS[seed].split(' ').map(String::from).collect();
            for (op, at, word) in edits {
                let word = VOCABULARY[word].to_string();
                let at = at as usize % (args.len() + 1);
                match op {
                    0 if at < args.len() => args[at] = word,
                    1 => args.insert(at, word),
                    _ if at < args.len() && args.len() > 1 => {
                        args.remove(at);
                    }
                    _ => args.push(word),
                }
            }
            args
        })
}

/// Runs clustr with `args`; returns what is wrong, if anything.
fn judge(args: &[String]) -> Option<String> {
    let dir = &workdir();
    let mut child = Command::new(clustr_bin())
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Some("did not finish within 20 s".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    let leftovers: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".clustr-"))
        .collect();
    if !leftovers.is_empty() {
        return Some(format!("left temporary files: {leftovers:?}"));
    }
    match status.code() {
        Some(0) => None,
        Some(2) if err.lines().count() == 1 && err.starts_with("clustr: error: ") => None,
        // A missing subcommand (`clustr`, `clustr datasets`) shows the usage, as git and cargo do.
        Some(2) if err.contains("\nUsage: clustr") && err.contains("\nCommands:\n") => None,
        Some(2) => Some(format!("exit 2 without one error line: {err:?}")),
        code => Some(format!("exit {code:?}: {err}")),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn command_line_arguments(args in command_line()) {
        if let Some(why) = judge(&args) {
            prop_assert!(false, "clustr {}: {why}", args.join(" "));
        }
    }
}

/// Command lines the fuzzing found crashing or hanging, fixed since: each must now fail cleanly.
const REGRESSIONS: &[&str] = &[
    // capacity overflow allocating k cluster sizes before checking k <= n
    "datasets export blobs --n 50 --k 18446744073709551615 --out b.csv --labels-out bl.npy",
    // the memory check's d + 1 overflowed, then the centres' shape did
    "datasets export blobs --n 50 --k 3 --out b.csv --d 18446744073709551615",
    // spawned 100,000 threads
    "kmeans good.csv --k 2 --threads 100000",
];

#[test]
fn fuzzing_regressions() {
    for line in REGRESSIONS {
        let args: Vec<String> = line.split(' ').map(String::from).collect();
        assert_eq!(judge(&args), None, "{line}");
        let out = Command::new(clustr_bin())
            .current_dir(workdir())
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{line}");
    }
}

/// Every seed of the corpus is a valid command line.
#[test]
fn seed_corpus_runs() {
    for seed in SEEDS {
        let args: Vec<String> = seed.split(' ').map(String::from).collect();
        let out = Command::new(clustr_bin())
            .current_dir(workdir())
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{seed}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
