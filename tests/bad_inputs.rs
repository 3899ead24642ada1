//! The bad-input matrix (issue #9): every clustering subcommand against each bad input, and
//! `eval` and `datasets export` against theirs. A bad
//! input must give exit code 2, a one-line message naming the problem, and no output file; an
//! input with a documented result (k above the distinct points, a zero-variance column, a
//! single point) must either succeed with its output written whole or fail that same clean
//! way — never a panic. A memory limit below a run's estimate (`--max-memory`) stops it the
//! same way. The number of cases run is printed.

mod common;
use std::path::Path;
use std::process::Command;

/// How a subcommand is called: its arguments before and after the input, with `{k}` and
/// `{out}` replaced.
struct Sub {
    name: &'static str,
    args: &'static [&'static str],
    /// Takes --k (the k cases apply).
    has_k: bool,
}

const SUBS: &[Sub] = &[
    Sub {
        name: "kmeans",
        args: &["kmeans", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "bisecting-kmeans",
        args: &["bisecting-kmeans", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "minibatch-kmeans",
        args: &["minibatch-kmeans", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "gmm",
        args: &["gmm", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "ppp",
        args: &[
            "ppp",
            "--k-min",
            "1",
            "--k-max",
            "{k}",
            "--seeds",
            "2",
            "--labels-out",
            "{out}",
        ],
        has_k: true,
    },
    Sub {
        name: "power-kmeans",
        args: &["power-kmeans", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "kpkm",
        args: &["kpkm", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "kernel-kmeans",
        args: &["kernel-kmeans", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "rff-kpkm",
        args: &["rff-kpkm", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "ip-rff-mkpkm",
        args: &["ip-rff-mkpkm", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "pam",
        args: &["pam", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "fastpam1",
        args: &["fastpam1", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "fastpam2",
        args: &["fastpam2", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "fasterpam",
        args: &["fasterpam", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "alternating",
        args: &["alternating", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "clara",
        args: &["clara", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "fastclara",
        args: &["fastclara", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "fasterclara",
        args: &["fasterclara", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "clarans",
        args: &["clarans", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "fastclarans",
        args: &["fastclarans", "--k", "{k}", "--labels-out", "{out}"],
        has_k: true,
    },
    Sub {
        name: "dbscan",
        args: &[
            "dbscan",
            "--eps",
            "1.5",
            "--min-samples",
            "2",
            "--labels-out",
            "{out}",
        ],
        has_k: false,
    },
    Sub {
        name: "optics",
        args: &["optics", "--min-samples", "2", "--labels-out", "{out}"],
        has_k: false,
    },
    Sub {
        name: "hdbscan",
        args: &["hdbscan", "--min-cluster-size", "2", "--labels-out", "{out}"],
        has_k: false,
    },
    Sub {
        name: "single-linkage",
        args: &["single-linkage", "--n-clusters", "2", "--labels-out", "{out}"],
        has_k: false,
    },
    Sub {
        name: "distances",
        args: &["distances", "--out", "{out}"],
        has_k: false,
    },
];

/// Eight distinct 2-d points in two groups.
const GOOD: &str = "0,0\n0,1\n1,0\n1,1\n10,10\n10,11\n11,10\n11,11\n";

fn npy(descr: &str, rows: usize, cols: usize, data: &[u8]) -> Vec<u8> {
    let mut v = common::npy_header(descr, rows, cols);
    v.extend_from_slice(data);
    v
}

/// (case, file name, contents, k, must fail).
fn data_cases() -> Vec<(&'static str, &'static str, Vec<u8>, &'static str, bool)> {
    vec![
        ("empty file", "empty.csv", vec![], "2", true),
        ("header only", "header.csv", b"x,y\n".to_vec(), "2", true),
        ("NaN", "nan.csv", b"0,0\n0,1\n1,nan\n1,1\n".to_vec(), "2", true),
        ("inf", "inf.csv", b"0,0\n0,1\ninf,0\n1,1\n".to_vec(), "2", true),
        (
            "non-numeric cell",
            "text.csv",
            b"0,0\n0,1\n1,abc\n1,1\n".to_vec(),
            "2",
            true,
        ),
        (
            "ragged row",
            "ragged.csv",
            b"0,0\n0,1\n1\n1,1\n".to_vec(),
            "2",
            true,
        ),
        (
            "truncated .npy",
            "trunc.npy",
            npy("<f8", 10, 2, &[0u8; 40]),
            "2",
            true,
        ),
        (
            "wrong dtype .npy",
            "dtype.npy",
            npy("<c16", 4, 2, &[0u8; 128]),
            "2",
            true,
        ),
        ("k = 0", "good.csv", GOOD.as_bytes().to_vec(), "0", true),
        ("k > n", "good.csv", GOOD.as_bytes().to_vec(), "9", true),
        (
            "k > distinct points",
            "dups.csv",
            b"0,0\n0,0\n0,0\n5,5\n5,5\n5,5\n".to_vec(),
            "3",
            false,
        ),
        (
            "zero-variance column",
            "zerovar.csv",
            b"0,7\n1,7\n2,7\n10,7\n11,7\n12,7\n".to_vec(),
            "2",
            false,
        ),
        ("single point", "one.csv", b"3,4\n".to_vec(), "1", false),
        // sparse files (issue #41): every subcommand reads them
        (
            "sparse unsorted indices",
            "unsorted.svm",
            b"1 3:1 2:2\n1 1:1\n1 2:5\n".to_vec(),
            "2",
            true,
        ),
        (
            "sparse duplicate index",
            "dup.svm",
            b"1 2:1 2:2\n1 1:1\n1 2:5\n".to_vec(),
            "2",
            true,
        ),
        (
            "sparse index out of range",
            "range.mtx",
            mtx(&["1 1 1.0", "2 2 1.0", "9 1 1.0"]),
            "2",
            true,
        ),
        (
            "sparse NaN",
            "nan.mtx",
            mtx(&["1 1 1.0", "2 2 nan", "3 1 1.0"]),
            "2",
            true,
        ),
        (
            "sparse entries not as declared",
            "count.mtx",
            mtx(&["1 1 1.0", "2 2 1.0"]),
            "2",
            true,
        ),
        (
            "sparse non-monotone indptr",
            "indptr.npz",
            fixture("bad_indptr.npz"),
            "2",
            true,
        ),
        (
            "sparse shape disagrees",
            "shape.npz",
            fixture("bad_shape.npz"),
            "2",
            true,
        ),
        (
            "sparse truncated archive",
            "cut.npz",
            fixture("csr.npz")[..100].to_vec(),
            "2",
            true,
        ),
    ]
}

/// A 4 x 2 Matrix Market file declaring 3 entries, with these entry lines.
fn mtx(entries: &[&str]) -> Vec<u8> {
    format!(
        "%%MatrixMarket matrix coordinate real general\n4 2 3\n{}\n",
        entries.join("\n")
    )
    .into_bytes()
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sparse")
            .join(name),
    )
    .unwrap()
}

/// Prints a matrix's case count and fails listing every wrong case.
fn report(matrix: &str, count: usize, failures: &[String]) {
    println!("{matrix}: {count} cases, {} failures", failures.len());
    eprintln!("{matrix}: {count} cases");
    assert!(
        failures.is_empty(),
        "{} of {count} cases wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn run(dir: &Path, args: &[String]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_clustr"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

fn fill(sub: &Sub, input: &str, k: &str, out: &str, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = sub
        .args
        .iter()
        .map(|a| a.replace("{k}", k).replace("{out}", out))
        .collect();
    v.insert(1, input.to_string());
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

/// Checks one run; returns a description of what is wrong, if anything.
fn judge(dir: &Path, args: &[String], out: &str, must_fail: bool, needle: &str) -> Option<String> {
    let o = run(dir, args);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    let out_path = dir.join(out);
    let exists = out_path.exists();
    let _ = std::fs::remove_file(&out_path);
    match o.status.code() {
        Some(0) if must_fail => Some(format!("succeeded; expected exit 2 ({needle})")),
        Some(0) => (!exists).then(|| "succeeded without writing its output".to_string()),
        Some(2) => {
            if err.trim().lines().count() != 1 {
                Some(format!("message is not one line: {err:?}"))
            } else if exists {
                Some("left an output file behind".into())
            } else if !err.to_lowercase().contains(&needle.to_lowercase()) {
                Some(format!(
                    "message does not name the problem ({needle}): {}",
                    err.trim()
                ))
            } else {
                None
            }
        }
        code => Some(format!("exit {code:?}: {}", err.trim())),
    }
}

#[test]
fn every_subcommand_refuses_bad_input_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (_, file, bytes, _, _) in data_cases() {
        std::fs::write(d.join(file), bytes).unwrap();
    }
    std::fs::write(d.join("good.csv"), GOOD).unwrap();
    // Needles: a word of the expected message.
    let needle = |case: &str| match case {
        "empty file" | "header only" => "no",
        "NaN" | "inf" => "row",
        "non-numeric cell" => "abc",
        "ragged row" => "line 3",
        "truncated .npy" => "trunc.npy",
        "wrong dtype .npy" => "c16",
        "k = 0" | "k > n" => "k",
        "sparse unsorted indices" | "sparse duplicate index" => "sorted",
        "sparse index out of range" => "outside",
        "sparse NaN" => "non-finite",
        "sparse entries not as declared" => "declared",
        "sparse non-monotone indptr" => "decrease",
        "sparse shape disagrees" => "indptr",
        "sparse truncated archive" => "cut.npz",
        _ => "",
    };
    let mut failures = Vec::new();
    let mut count = 0;
    for sub in SUBS {
        for (case, file, _, k, must_fail) in data_cases() {
            if case.starts_with("k ") && !sub.has_k {
                continue;
            }
            let k = if sub.has_k { k } else { "2" };
            let args = fill(sub, file, k, "out.npy", &[]);
            count += 1;
            if let Some(why) = judge(d, &args, "out.npy", must_fail, needle(case)) {
                failures.push(format!("{} / {case}: {why}", sub.name));
            }
        }
        // Output in a missing folder, under a file, and in /sys (no regular files can be
        // created there, even by root, so it stands for a read-only folder).
        for (case, out) in [
            ("missing directory", "nope/out.npy"),
            ("not a directory", "good.csv/out.npy"),
            ("read-only directory", "/sys/clustr-out.npy"),
        ] {
            let args = fill(sub, "good.csv", "2", out, &[]);
            count += 1;
            if let Some(why) = judge(d, &args, out, true, "cannot create the file") {
                failures.push(format!("{} / {case}: {why}", sub.name));
            }
        }
        // More memory than allowed: stopped before allocating, with the estimate.
        let args = fill(sub, "good.csv", "2", "out.npy", &["--max-memory", "64"]);
        count += 1;
        if let Some(why) = judge(d, &args, "out.npy", true, "only 64 B is allowed") {
            failures.push(format!("{} / memory limit: {why}", sub.name));
        }
    }
    // Density parameters.
    for (sub, args) in [
        (
            "dbscan",
            vec![
                "dbscan",
                "good.csv",
                "--eps",
                "-1",
                "--min-samples",
                "2",
                "--labels-out",
                "out.npy",
            ],
        ),
        (
            "dbscan",
            vec![
                "dbscan",
                "good.csv",
                "--eps",
                "1",
                "--min-samples",
                "0",
                "--labels-out",
                "out.npy",
            ],
        ),
        (
            "optics",
            vec![
                "optics",
                "good.csv",
                "--max-eps",
                "-1",
                "--min-samples",
                "2",
                "--labels-out",
                "out.npy",
            ],
        ),
        (
            "optics",
            vec![
                "optics",
                "good.csv",
                "--min-samples",
                "0",
                "--labels-out",
                "out.npy",
            ],
        ),
    ] {
        count += 1;
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let needle = if args.contains(&"0".to_string()) {
            "min_samples"
        } else {
            "eps"
        };
        if let Some(why) = judge(d, &args, "out.npy", true, needle) {
            failures.push(format!("{sub} / {}: {why}", args[2..].join(" ")));
        }
    }
    // HDBSCAN's and single linkage's parameters (GOOD has 8 points).
    for (args, needle) in [
        (&["hdbscan", "--min-cluster-size", "1"][..], "min_cluster_size"),
        (&["hdbscan", "--min-cluster-size", "9"][..], "number of points"),
        (&["hdbscan", "--min-samples", "0"][..], "min_samples"),
        (
            &["hdbscan", "--min-samples", "9", "--min-cluster-size", "2"][..],
            "number of points",
        ),
        (&["hdbscan", "--alpha", "0"][..], "alpha"),
        (&["hdbscan", "--epsilon", "-1"][..], "cluster_selection_epsilon"),
        (&["hdbscan", "--selection", "top"][..], "eom or leaf"),
        (&["single-linkage", "--n-clusters", "0"][..], "n_clusters"),
        (&["single-linkage", "--n-clusters", "9"][..], "n_clusters"),
        (&["single-linkage", "--distance", "-1"][..], "distance"),
        (&["single-linkage"][..], "--distance"),
        (
            &["hdbscan", "--precomputed", "--min-cluster-size", "2"][..],
            "square",
        ),
    ] {
        count += 1;
        let mut all: Vec<String> = vec![
            args[0].into(),
            "good.csv".into(),
            "--labels-out".into(),
            "out.npy".into(),
        ];
        all.extend(args[1..].iter().map(|s| s.to_string()));
        if let Some(why) = judge(d, &all, "out.npy", true, needle) {
            failures.push(format!("{}: {why}", all.join(" ")));
        }
    }
    // Precomputed dissimilarities for the k-medoids methods.
    std::fs::write(d.join("nonsquare.csv"), "0,1,2\n1,0,3\n").unwrap();
    std::fs::write(d.join("asym.csv"), "0,1,2\n1,0,3\n2,9,0\n").unwrap();
    std::fs::write(d.join("negative.csv"), "0,1,-2\n1,0,3\n-2,3,0\n").unwrap();
    for sub in SUBS.iter().filter(|s| {
        s.args.contains(&"--k")
            && (s.name.contains("pam") || s.name.contains("clara") || s.name == "alternating")
    }) {
        for (case, file, needle) in [
            ("non-square matrix", "nonsquare.csv", "square"),
            ("asymmetric matrix", "asym.csv", "symmetric"),
            ("negative dissimilarity", "negative.csv", "negative"),
        ] {
            count += 1;
            let args = fill(sub, file, "2", "out.npy", &["--precomputed"]);
            if let Some(why) = judge(d, &args, "out.npy", true, needle) {
                failures.push(format!("{} / {case}: {why}", sub.name));
            }
        }
    }
    // Sample weights (GOOD has 8 points): negative, NaN, all zero, too few, two columns; and
    // for k-means, fewer positive weights than k.
    for (name, text) in [
        ("wneg.csv", "1\n1\n1\n-1\n1\n1\n1\n1\n"),
        ("wnan.csv", "1\n1\n1\nNaN\n1\n1\n1\n1\n"),
        ("wzero.csv", "0\n0\n0\n0\n0\n0\n0\n0\n"),
        ("wshort.csv", "1\n1\n1\n"),
        ("wtwo.csv", "1,1\n1,1\n1,1\n1,1\n1,1\n1,1\n1,1\n1,1\n"),
        ("wone.csv", "0\n0\n0\n5\n0\n0\n0\n0\n"),
    ] {
        std::fs::write(d.join(name), text).unwrap();
    }
    let kmedoids = [
        "pam",
        "fastpam1",
        "fastpam2",
        "fasterpam",
        "alternating",
        "clara",
        "fastclara",
        "fasterclara",
        "clarans",
        "fastclarans",
    ];
    for sub in [
        "kmeans",
        "minibatch-kmeans",
        "gmm",
        "power-kmeans",
        "rff-kpkm",
        "dbscan",
        "optics",
    ]
    .into_iter()
    .chain(kmedoids)
    {
        let params: &[&str] = match sub {
            "dbscan" => &["--eps", "2"],
            "optics" => &["--min-samples", "2"],
            _ => &["--k", "2"],
        };
        for (file, needle) in [
            ("wneg.csv", "negative"),
            ("wnan.csv", "row 3"),
            ("wzero.csv", "positive"),
            ("wshort.csv", "expected 8"),
            ("wtwo.csv", "one column"),
            ("wone.csv", "k = 2"),
        ] {
            let seeds_by_weight = !matches!(sub, "dbscan" | "optics") && !kmedoids.contains(&sub);
            if (sub == "dbscan" && matches!(file, "wneg.csv" | "wzero.csv"))
                || (!seeds_by_weight && file == "wone.csv")
            {
                // DBSCAN takes negative and zero weights, as scikit-learn; the density methods
                // have no k; k-medoids needs no k positive weights (its starts are not drawn
                // by weight).
                continue;
            }
            count += 1;
            let mut args: Vec<String> = [
                sub,
                "good.csv",
                "--sample-weight",
                file,
                "--labels-out",
                "out.npy",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            args.extend(params.iter().map(|s| s.to_string()));
            if let Some(why) = judge(d, &args, "out.npy", true, needle) {
                failures.push(format!("{sub} / sample weights {file}: {why}"));
            }
        }
    }
    // eval: bad label, truth, data and matrix files (it writes no file).
    for (name, text) in [
        ("l3.csv", "0\n1\n1\n"),
        ("l2.csv", "0\n1\n"),
        ("ltext.csv", "0\nx\n1\n"),
        ("lnan.csv", "0\nNaN\n1\n"),
        ("lfrac.csv", "1.5\n2\n3\n"),
        ("d3.csv", "0,0\n1,1\n5,5\n"),
        ("d3nan.csv", "0,0\n1,NaN\n5,5\n"),
        ("m3asym.csv", "0,1,2\n1,0,3\n2,9,0\n"),
        ("m3neg.csv", "0,1,-2\n1,0,3\n-2,3,0\n"),
        ("med.csv", "0\n7\n"),
    ] {
        std::fs::write(d.join(name), text).unwrap();
    }
    let eval_cases: &[(&str, &[&str], &str)] = &[
        (
            "empty labels",
            &["--labels", "empty.csv", "--truth", "l3.csv"],
            "no labels",
        ),
        (
            "missing labels",
            &["--labels", "nope.csv", "--truth", "l3.csv"],
            "nope.csv",
        ),
        (
            "truncated .npy labels",
            &["--labels", "trunc.npy", "--truth", "l3.csv"],
            "trunc.npy",
        ),
        (
            "text cell among numbers",
            &["--labels", "ltext.csv", "--truth", "l3.csv"],
            "line 2",
        ),
        ("NaN label", &["--labels", "lnan.csv", "--truth", "l3.csv"], "NaN"),
        (
            "fractional label",
            &["--labels", "lfrac.csv", "--truth", "l3.csv"],
            "1.5",
        ),
        (
            "labels vs truth length",
            &["--labels", "l3.csv", "--truth", "l2.csv"],
            "expected 2, got 3",
        ),
        (
            "NaN in data",
            &["--labels", "l3.csv", "--data", "d3nan.csv"],
            "row 1, column 1",
        ),
        (
            "labels vs data rows",
            &["--labels", "l2.csv", "--data", "d3.csv"],
            "expected 3, got 2",
        ),
        (
            "non-square matrix",
            &["--labels", "l2.csv", "--precomputed", "nonsquare.csv"],
            "square",
        ),
        (
            "asymmetric matrix",
            &["--labels", "l3.csv", "--precomputed", "m3asym.csv"],
            "symmetric",
        ),
        (
            "negative dissimilarity",
            &["--labels", "l3.csv", "--precomputed", "m3neg.csv"],
            "negative",
        ),
        (
            "medoid out of range",
            &["--labels", "l3.csv", "--data", "d3.csv", "--medoids", "med.csv"],
            "medoid",
        ),
        (
            "unknown metric",
            &["--labels", "l3.csv", "--data", "d3.csv", "--metric", "nope"],
            "metric",
        ),
        (
            "nothing to evaluate",
            &["--labels", "l3.csv"],
            "nothing to evaluate",
        ),
    ];
    for (case, args, needle) in eval_cases {
        count += 1;
        let args: Vec<String> = std::iter::once("eval")
            .chain(args.iter().copied())
            .map(String::from)
            .collect();
        if let Some(why) = judge(d, &args, "none", true, needle) {
            failures.push(format!("eval / {case}: {why}"));
        }
    }
    // datasets export: bad parameters and outputs (neither output may be left behind).
    let export_cases: &[(&str, &[&str], &str)] = &[
        ("unknown data set", &["nope", "--out", "o.csv"], "nope"),
        ("k = 0", &["blobs", "--k", "0", "--out", "o.csv"], "k = 0"),
        (
            "k > n",
            &["blobs", "--k", "20", "--n", "10", "--out", "o.csv"],
            "k = 20",
        ),
        ("n = 0", &["moons", "--n", "0", "--out", "o.csv"], "n = 0"),
        (
            "zero dimension",
            &["uniform", "--d", "0", "--out", "o.csv"],
            "n_features",
        ),
        (
            "negative std",
            &["blobs", "--std=-1", "--out", "o.csv"],
            "cluster_std",
        ),
        (
            "negative noise",
            &["moons", "--noise=-1", "--out", "o.csv"],
            "noise",
        ),
        (
            "factor out of range",
            &["circles", "--factor", "2", "--out", "o.csv"],
            "factor",
        ),
        (
            "noise fraction >= 1",
            &["geo_hotspots", "--noise", "1", "--out", "o.csv"],
            "noise",
        ),
        (
            "too many points",
            &["blobs", "--n", "10000000000000", "--out", "o.csv"],
            "fewer points",
        ),
        (
            "output in a missing directory",
            &["iris", "--out", "nope/o.csv"],
            "cannot create the file",
        ),
        (
            "output under a file",
            &["iris", "--out", "good.csv/o.csv"],
            "cannot create the file",
        ),
        (
            "output in a read-only directory",
            &["iris", "--out", "/sys/o.csv"],
            "cannot create the file",
        ),
        (
            "labels output in a missing directory",
            &["iris", "--out", "o.csv", "--labels-out", "nope/l.csv"],
            "cannot create the file",
        ),
        (
            "same file twice",
            &["iris", "--out", "o.csv", "--labels-out", "o.csv"],
            "same file",
        ),
    ];
    for (case, args, needle) in export_cases {
        count += 1;
        let args: Vec<String> = ["datasets", "export"]
            .iter()
            .chain(args.iter())
            .map(|s| s.to_string())
            .collect();
        if let Some(why) = judge(d, &args, "o.csv", true, needle) {
            failures.push(format!("datasets export / {case}: {why}"));
        }
    }
    report("bad-input matrix", count, &failures);
}

/// The weighted subcommands, as (name, arguments after the input), and whether they take a
/// negative weight (DBSCAN, as scikit-learn).
const WEIGHTED: &[(&str, &[&str], bool)] = &[
    ("kmeans", &["--k", "2"], false),
    ("bisecting-kmeans", &["--k", "2"], false),
    ("kmeans", &["--k", "2", "--algorithm", "lloyd"], false),
    ("kmeans", &["--k", "2:3"], false),
    ("minibatch-kmeans", &["--k", "2"], false),
    ("gmm", &["--k", "2"], false),
    ("fasterpam", &["--k", "2"], false),
    ("clara", &["--k", "2"], false),
    ("power-kmeans", &["--k", "2"], false),
    ("rff-kpkm", &["--k", "2"], false),
    ("dbscan", &["--eps", "2", "--min-samples", "2"], true),
    ("optics", &["--min-samples", "2"], false),
];

/// Weights of the 8 points of [`GOOD`] at the edges of f64's range (issue #38): every weighted
/// subcommand either succeeds with finite results and its labels written, or refuses with exit
/// 2 and one line; never a panic, never a NaN or an infinity in its JSON.
#[test]
fn weights_over_the_whole_range_give_finite_results_or_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("good.csv"), GOOD).unwrap();
    let half = f64::MAX / 2.0;
    let weight_sets: Vec<(&str, Vec<f64>)> = vec![
        ("1e307", vec![1e307; 8]),
        ("5e305", vec![5e305; 8]),
        ("f64::MAX", vec![f64::MAX; 8]),
        (
            "MAX/2 and subnormals",
            vec![half, 5e-324, half, 1e-310, half, 5e-324, half, 1.0],
        ),
        (
            "subnormals",
            vec![5e-324, 1e-310, 5e-324, 2e-320, 5e-324, 1e-315, 5e-324, 1e-309],
        ),
        ("one huge", vec![1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, half]),
        (
            "±MAX alternating",
            (0..8)
                .map(|i| if i % 2 == 0 { f64::MAX } else { -f64::MAX })
                .collect(),
        ),
    ];
    let (mut count, mut failures) = (0, Vec::new());
    for (case, w) in &weight_sets {
        let text: String = w.iter().map(|v| format!("{v:e}\n")).collect();
        std::fs::write(d.join("w.csv"), text).unwrap();
        let negative = w.iter().any(|v| *v < 0.0);
        for (sub, args, takes_negative) in WEIGHTED {
            count += 1;
            let mut all: Vec<String> = vec![sub.to_string(), "good.csv".into()];
            all.extend(args.iter().map(|s| s.to_string()));
            all.extend(["--sample-weight", "w.csv", "--labels-out", "out.npy", "--json"].map(String::from));
            let o = run(d, &all);
            let err = String::from_utf8_lossy(&o.stderr).to_string();
            let written = d.join("out.npy").exists();
            let _ = std::fs::remove_file(d.join("out.npy"));
            let what = format!("{sub} {} / {case}", args.join(" "));
            match o.status.code() {
                Some(0) if negative && !takes_negative => {
                    failures.push(format!("{what}: took a negative weight"))
                }
                Some(0) => {
                    let json: serde_json::Value = match serde_json::from_slice(&o.stdout) {
                        Ok(j) => j,
                        Err(e) => {
                            failures.push(format!("{what}: JSON {e}"));
                            continue;
                        }
                    };
                    // serde_json writes a non-finite number as null: a null loss of a method
                    // that has one is a NaN or infinity presented as a result.
                    let has_loss = !matches!(*sub, "dbscan" | "optics");
                    if !written || (has_loss && !json["loss"].is_f64()) {
                        failures.push(format!("{what}: written {written}, loss {}", json["loss"]));
                    }
                }
                Some(2) if err.trim().lines().count() == 1 && !written => {}
                code => failures.push(format!(
                    "{what}: exit {code:?}, written {written}: {}",
                    err.trim()
                )),
            }
        }
    }
    report("weight-range matrix", count, &failures);
}

/// Runs `args` with stdout to `stdout` and stderr to `stderr`; returns the exit code and what
/// reached stderr when it was captured.
fn run_with(
    dir: &Path,
    args: &[String],
    stdout: std::process::Stdio,
    stderr: std::process::Stdio,
) -> (Option<i32>, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_clustr"))
        .current_dir(dir)
        .args(args)
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stderr).to_string())
}

/// A pipe whose reader has already closed: every write to it fails with EPIPE.
fn closed_pipe() -> std::process::Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer.into()
}

fn dev_full() -> std::process::Stdio {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap()
        .into()
}

/// The output-stream policy (issue #38) for every subcommand that prints: stdout read by a
/// reader that closes at once ends the run quietly with exit 141 and the output files whole;
/// stdout on a full device is exit 1 with one line; stderr on a full device changes no exit
/// code (0 for a good run, 2 for a refused one). Never a panic.
#[test]
fn closed_pipes_and_full_devices_end_runs_cleanly() {
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("good.csv"), GOOD).unwrap();
    std::fs::write(d.join("labels.csv"), "0\n0\n0\n0\n1\n1\n1\n1\n").unwrap();
    let k_args = ["--k", "2"];
    let mut commands: Vec<Vec<String>> = Vec::new();
    for sub in SUBS {
        commands.push(fill(sub, "good.csv", "2", "out.npy", &["--json"]));
    }
    let own = |args: &[&str]| args.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    commands.push(own(&["eval", "--labels", "labels.csv", "--data", "good.csv"]));
    commands.push(own(&[
        "eval",
        "--labels",
        "labels.csv",
        "--data",
        "good.csv",
        "--json",
    ]));
    commands.push(own(&["datasets", "list"]));
    let mut tasks = String::from("ID,Input,Output\n");
    for t in 0..6 {
        for i in 0..5 {
            let y = (i as f64 * 0.7).sin() + if t < 3 { 0.0 } else { 4.0 };
            tasks.push_str(&format!("t{t},{i},{y}\n"));
        }
    }
    std::fs::write(d.join("tasks.csv"), tasks).unwrap();
    commands.push(own(&[
        "magmaclust",
        "train",
        "tasks.csv",
        "--k",
        "2",
        "--out",
        "out.npy",
        "--json",
    ]));
    commands.push(own(&["completions", "bash"]));
    commands.push(own(&["--help"]));
    commands.push(own(&["kmeans", "--help"]));
    commands.push(own(&["--version"]));
    commands.push({
        let mut v = own(&["kmeans", "good.csv", "--model-out", "m.json", "--quiet"]);
        v.extend(k_args.map(String::from));
        v
    });
    let (mut count, mut failures) = (0, Vec::new());
    let panicked = |err: &str| err.contains("panicked") || err.contains("RUST_BACKTRACE");
    // The model for predict.
    assert_eq!(run(d, &commands.last().unwrap().clone()).status.code(), Some(0));
    commands.pop();
    commands.push(own(&[
        "predict",
        "m.json",
        "good.csv",
        "--labels-out",
        "out.npy",
        "--json",
    ]));
    for args in &commands {
        let what = args[..2.min(args.len())].join(" ");
        let writes_out = args.iter().any(|a| a == "out.npy");
        // Closed at once.
        count += 1;
        let (code, err) = run_with(d, args, closed_pipe(), Stdio::piped());
        let written = d.join("out.npy").exists();
        let _ = std::fs::remove_file(d.join("out.npy"));
        if code != Some(141)
            || panicked(&err)
            || (writes_out && !written)
            || !err.trim().is_empty() && err.contains("error")
        {
            failures.push(format!(
                "{what} | closed: exit {code:?}, written {written}: {}",
                err.trim()
            ));
        }
        // Full stdout.
        count += 1;
        let (code, err) = run_with(d, args, dev_full(), Stdio::piped());
        let _ = std::fs::remove_file(d.join("out.npy"));
        let line = err.lines().filter(|l| l.contains("error")).count();
        if code != Some(1) || panicked(&err) || line != 1 || !err.contains("No space left") {
            failures.push(format!("{what} | stdout full: exit {code:?}: {}", err.trim()));
        }
        // Full stderr: the exit code of the same run with stderr readable.
        count += 1;
        let (code, _) = run_with(d, args, Stdio::null(), dev_full());
        let _ = std::fs::remove_file(d.join("out.npy"));
        if code != Some(0) {
            failures.push(format!("{what} | stderr full: exit {code:?}"));
        }
    }
    // A refused run keeps its exit code 2 with stderr on a full device.
    count += 1;
    let (code, _) = run_with(
        d,
        &own(&["kmeans", "good.csv", "--k", "0"]),
        Stdio::null(),
        dev_full(),
    );
    if code != Some(2) {
        failures.push(format!("kmeans --k 0 | stderr full: exit {code:?}"));
    }
    report("stream matrix", count, &failures);
}

/// Every described method that fits points is a subcommand of this matrix, and every
/// subcommand of the matrix but `distances` is a described method: a method added to
/// `clustr::methods::METHODS` without its line here fails.
#[test]
fn the_matrix_covers_every_described_method() {
    let subs: Vec<&str> = SUBS
        .iter()
        .map(|s| s.name)
        .filter(|&n| n != "distances")
        .collect();
    for m in clustr::methods::METHODS.iter().filter(|m| m.fit.is_some()) {
        assert!(subs.contains(&m.name), "{} is missing from SUBS", m.name);
    }
    for name in subs {
        assert!(clustr::methods::method(name).is_some(), "{name} is not described");
    }
}

/// An all-zero sparse row under cosine (issue #41): DBSCAN, OPTICS, HDBSCAN and the distance
/// matrix take it as its dense form does (at distance 1 from the other rows), with the same
/// labels as the same rows stored dense.
#[test]
fn an_all_zero_sparse_row_under_cosine_is_taken_as_its_dense_form() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("zero.svm"), "1 1:1 2:1\n1 1:1 2:0.9\n1\n1 3:1\n1 3:2\n").unwrap();
    let dense = ndarray::array![
        [1.0, 1.0, 0.0],
        [1.0, 0.9, 0.0],
        [0.0, 0.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.0, 0.0, 2.0]
    ];
    clustr::data::write_matrix(d.join("zero.npy"), dense.view(), &[]).unwrap();
    let run = |args: &[&str]| {
        common::run_clustr(d, args);
    };
    let settings: [(&str, &[&str]); 3] = [
        ("dbscan", &["--eps", "0.3", "--min-samples", "2"]),
        ("optics", &["--min-samples", "2", "--min-cluster-size", "2"]),
        ("hdbscan", &["--min-cluster-size", "2"]),
    ];
    for (sub, extra) in settings {
        for input in ["zero.svm", "zero.npy"] {
            let mut args = vec![sub, input, "--metric", "cosine", "--labels-out"];
            args.push(if input == "zero.svm" {
                "sparse.csv"
            } else {
                "dense.csv"
            });
            args.extend(extra);
            run(&args);
        }
        let read = |f: &str| std::fs::read_to_string(d.join(f)).unwrap();
        assert_eq!(read("sparse.csv"), read("dense.csv"), "{sub}");
    }
    for input in ["zero.svm", "zero.npy"] {
        let out = format!("{input}.d.npy");
        run(&[
            "distances",
            input,
            "--metric",
            "cosine",
            "--dtype",
            "f64",
            "--out",
            &out,
        ]);
    }
    let sparse = clustr::data::read_matrix::<f64>(d.join("zero.svm.d.npy")).unwrap();
    let dense = clustr::data::read_matrix::<f64>(d.join("zero.npy.d.npy")).unwrap();
    assert_eq!(sparse.row(2).to_vec(), vec![1.0, 1.0, 0.0, 1.0, 1.0]);
    for (a, b) in sparse.iter().zip(&dense) {
        assert!((a - b).abs() <= 1e-12, "{sparse} vs {dense}");
    }
}
