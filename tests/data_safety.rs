//! Data safety (issue 18): every numbered case of the issue as a regression test — the command
//! as written there, the exit code, the message and the files afterwards — and two property
//! tests: random finite inputs over the whole f64 range never crash a subcommand or pass a
//! non-finite result, and random sets of output paths are written all or none, never over an
//! input. The number of cases run is printed.

mod common;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn clustr(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clustr"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// Runs clustr under bash with a file-size limit of `kib` KiB and SIGXFSZ ignored, so a write
/// past it fails with EFBIG as on a full disk.
fn clustr_on_full_disk(dir: &Path, kib: u32, args: &[&str]) -> Output {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    Command::new("bash")
        .current_dir(dir)
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {kib}; exec '{}' {}",
            env!("CARGO_BIN_EXE_clustr"),
            quoted.join(" ")
        ))
        .output()
        .unwrap()
}

/// Every file under `dir` (relative path → bytes; folders as empty entries ending in `/`,
/// symbolic links by their target).
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let t = e.file_type().unwrap();
            if t.is_symlink() {
                let target = std::fs::read_link(&p).unwrap();
                out.insert(rel, format!("-> {}", target.display()).into_bytes());
            } else if t.is_dir() {
                out.insert(format!("{rel}/"), Vec::new());
                walk(root, &p, out);
            } else if t.is_file() {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// What is wrong with a run expected to exit `code` with a one-line message containing
/// `needle` (for code 0: nothing on the error line is checked), if anything.
fn judge(o: &Output, code: i32, needle: &str) -> Option<String> {
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.code() != Some(code) {
        return Some(format!(
            "exit {:?}, expected {code}: {}",
            o.status.code(),
            err.trim()
        ));
    }
    if code != 0 {
        if err.trim().lines().count() != 1 {
            return Some(format!("message is not one line: {err:?}"));
        }
        if !err.contains(needle) {
            return Some(format!("message does not contain {needle:?}: {}", err.trim()));
        }
    }
    None
}

/// The failures of one group of cases, and how many ran.
#[derive(Default)]
struct Cases {
    count: usize,
    failures: Vec<String>,
}

impl Cases {
    /// Runs `args` in `dir`, expects `code` and `needle`, and that the files of `dir` are
    /// unchanged when the run fails.
    fn check(&mut self, name: &str, dir: &Path, args: &[&str], code: i32, needle: &str) -> Output {
        self.count += 1;
        let before = snapshot(dir);
        let o = clustr(dir, args);
        if let Some(why) = judge(&o, code, needle) {
            self.failures.push(format!("{name}: {why}"));
        } else if code != 0 && snapshot(dir) != before {
            self.failures
                .push(format!("{name}: a failed run changed the folder"));
        }
        o
    }

    fn expect(&mut self, name: &str, ok: bool, why: impl std::fmt::Display) {
        if !ok {
            self.failures.push(format!("{name}: {why}"));
        }
    }

    fn finish(self, group: &str) {
        println!("{group}: {} cases, {} failures", self.count, self.failures.len());
        assert!(
            self.failures.is_empty(),
            "{} of {} cases wrong:\n{}",
            self.failures.len(),
            self.count,
            self.failures.join("\n")
        );
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Writes the iris data as in.csv (and returns the folder's path as text).
fn with_iris(dir: &Path) -> String {
    let o = clustr(dir, &["datasets", "export", "iris", "--out", "in.csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    dir.to_string_lossy().into_owned()
}

/// Five training tasks and one new task for MagmaClust (long format).
fn with_tasks(dir: &Path) {
    let mut text = String::from("ID,Input,Output\n");
    for t in 0..6 {
        for i in 0..8 {
            let x = i as f64 * 1.2;
            let y = (x + (t % 2) as f64 * 3.0).sin() + 0.01 * ((t * 8 + i) % 5) as f64;
            text.push_str(&format!("{t},{x},{y}\n"));
        }
    }
    write(dir, "tasks.csv", text.as_bytes());
    write(dir, "new.csv", b"ID,Input,Output\nn,0.5,0.3\nn,2,0.8\n");
    let o = clustr(
        dir,
        &["magmaclust", "train", "tasks.csv", "--k", "2", "--out", "m.json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Items 1–3: an output that is an input, two outputs that are one file, an output that is a
/// folder; every spelling of one file.
#[test]
fn outputs_never_replace_inputs_or_each_other() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let abs = with_iris(d);
    std::fs::create_dir(d.join("sub")).unwrap();
    std::os::unix::fs::symlink("in.csv", d.join("link.csv")).unwrap();
    std::fs::hard_link(d.join("in.csv"), d.join("hard.csv")).unwrap();
    let o = clustr(d, &["distances", "in.csv", "--out", "in.npy", "--dtype", "f64"]);
    assert_eq!(o.status.code(), Some(0));
    with_tasks(d);
    let mut c = Cases::default();
    let input_spellings = [
        "in.csv".to_string(),
        "./in.csv".into(),
        "sub/../in.csv".into(),
        format!("{abs}/in.csv"),
        "link.csv".into(),
        "hard.csv".into(),
    ];
    for out in &input_spellings {
        c.check(
            &format!("1. kmeans in.csv --labels-out {out}"),
            d,
            &["kmeans", "in.csv", "--k", "3", "--labels-out", out],
            2,
            "is the input",
        );
    }
    c.check(
        "1. distances in.npy --out in.npy",
        d,
        &["distances", "in.npy", "--out", "in.npy"],
        2,
        "is the input",
    );
    c.check(
        "1. magmaclust predict m.json new.csv --out m.json",
        d,
        &[
            "magmaclust",
            "predict",
            "m.json",
            "new.csv",
            "--grid",
            "0:5:3",
            "--out",
            "m.json",
        ],
        2,
        "is the input",
    );
    c.check(
        "1. --init names the output",
        d,
        &[
            "kmeans",
            "in.csv",
            "--k",
            "3",
            "--init",
            "in.csv",
            "--labels-out",
            "./in.csv",
        ],
        2,
        "is the input",
    );
    for (a, b) in [
        ("a.csv", "./a.csv"),
        ("a.csv", "sub/../a.csv"),
        ("a.csv", &format!("{abs}/a.csv")),
    ] {
        c.check(
            &format!("2. datasets export iris --out {a} --labels-out {b}"),
            d,
            &["datasets", "export", "iris", "--out", a, "--labels-out", b],
            2,
            "are the same file",
        );
    }
    std::fs::create_dir(d.join("l.csv")).unwrap();
    c.check(
        "3. datasets export iris --out ok.csv --labels-out l.csv (a folder)",
        d,
        &[
            "datasets",
            "export",
            "iris",
            "--out",
            "ok.csv",
            "--labels-out",
            "l.csv",
        ],
        2,
        "is a folder",
    );
    c.check(
        "3. kmeans --labels-out an existing folder fails before the fit",
        d,
        &["kmeans", "in.csv", "--k", "3", "--labels-out", "sub"],
        2,
        "is a folder",
    );
    // Symbolic links are written through: the link stays, its target gets the labels.
    std::os::unix::fs::symlink("target.csv", d.join("out-link.csv")).unwrap();
    let o = c.check(
        "1. an output through a symbolic link",
        d,
        &["kmeans", "in.csv", "--k", "3", "--labels-out", "out-link.csv"],
        0,
        "",
    );
    c.expect(
        "1. written through the link",
        o.status.success()
            && std::fs::symlink_metadata(d.join("out-link.csv")).is_ok_and(|m| m.file_type().is_symlink())
            && std::fs::read_to_string(d.join("target.csv")).is_ok_and(|t| t.starts_with("label\n")),
        "the link was replaced or its target not written",
    );
    c.check(
        "1. /dev/null is not an output",
        d,
        &["kmeans", "in.csv", "--k", "3", "--labels-out", "/dev/null"],
        2,
        "not a regular file",
    );
    c.finish("outputs vs inputs");
}

/// Item 3 and 11: on a full disk (a file-size limit) a run with several outputs writes none,
/// leaves every existing file as it was, leaves no temporary, and exits 1.
#[test]
fn a_full_disk_writes_nothing_and_keeps_existing_files() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let o = clustr(d, &["datasets", "export", "digits", "--out", "digits.csv"]);
    assert_eq!(o.status.code(), Some(0));
    with_iris(d);
    with_tasks(d);
    let mut c = Cases::default();
    let runs: Vec<(&str, Vec<&str>)> = vec![
        (
            "gmm",
            vec![
                "gmm",
                "digits.csv",
                "--k",
                "3",
                "--labels-out",
                "old.csv",
                "--proba-out",
                "p.csv",
            ],
        ),
        (
            "ppp",
            vec![
                "ppp",
                "digits.csv",
                "--k-max",
                "3",
                "--seeds",
                "2",
                "--labels-out",
                "old.csv",
                "--separable-out",
                "s.csv",
            ],
        ),
        (
            "optics",
            vec![
                "optics",
                "digits.csv",
                "--labels-out",
                "old.csv",
                "--reachability-out",
                "r.csv",
                "--plot",
                "r.png",
            ],
        ),
        (
            "ip-rff-mkpkm",
            vec![
                "ip-rff-mkpkm",
                "digits.csv",
                "--k",
                "3",
                "--n-features",
                "20",
                "--max-iter",
                "5",
                "--labels-out",
                "old.csv",
                "--typicality-out",
                "t.csv",
            ],
        ),
        (
            "magmaclust train",
            vec![
                "magmaclust",
                "train",
                "tasks.csv",
                "--k",
                "2",
                "--clusters-out",
                "old.csv",
                "--out",
                "model2.json",
            ],
        ),
        (
            "datasets export",
            vec!["datasets", "export", "digits", "--out", "x.csv"],
        ),
        ("optics --plot", vec!["optics", "digits.csv", "--plot", "big.png"]),
    ];
    for (name, args) in runs {
        write(d, "old.csv", b"label\n7\n");
        let before = snapshot(d);
        c.count += 1;
        let o = clustr_on_full_disk(d, 2, &args);
        if let Some(why) = judge(&o, 1, "File too large") {
            c.failures.push(format!("3./11. {name} on a full disk: {why}"));
        }
        c.expect(
            &format!("3. {name}: files afterwards"),
            snapshot(d) == before,
            "the folder changed (an output written, an existing file replaced or a temporary left)",
        );
    }
    // With room, the same gmm run writes both outputs.
    let o = clustr(
        d,
        &[
            "gmm",
            "in.csv",
            "--k",
            "3",
            "--labels-out",
            "old.csv",
            "--proba-out",
            "p.csv",
        ],
    );
    c.expect(
        "3. gmm with room writes both",
        o.status.success()
            && d.join("p.csv").exists()
            && std::fs::read(d.join("old.csv")).unwrap() != b"label\n7\n",
        String::from_utf8_lossy(&o.stderr),
    );
    c.finish("full disk");
}

/// Items 4 and 12: headers, stray cells, byte-order marks.
#[test]
fn a_row_with_a_bad_cell_is_not_a_header() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(d, "stray.csv", b"1,abc\n2,3\n4,5\n");
    write(d, "na.csv", b"NA,2\n2,3\n4,5\n");
    write(d, "named.csv", b"x,y\n2,3\n4,5\n");
    write(d, "plain.csv", b"1,2\n2,3\n4,5\n");
    let mut c = Cases::default();
    c.check(
        "4. a stray cell in the first row",
        d,
        &["kmeans", "stray.csv", "--k", "2"],
        2,
        "line 1, column 2: cannot parse \"abc\"",
    );
    c.check(
        "4. NA in the first row",
        d,
        &["kmeans", "na.csv", "--k", "2"],
        2,
        "line 1, column 1",
    );
    for (file, flag, n) in [
        ("named.csv", None, 2),
        ("plain.csv", None, 3),
        ("plain.csv", Some("--header"), 2),
        ("stray.csv", Some("--header"), 2),
    ] {
        let mut args = vec!["kmeans", file, "--k", "2", "--json"];
        args.extend(flag);
        let o = c.check(&format!("4. {file} {flag:?}"), d, &args, 0, "");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        c.expect(
            &format!("4. {file} {flag:?} rows"),
            v["n"] == n,
            format!("n = {}", v["n"]),
        );
    }
    c.check(
        "4. --no-header on a header",
        d,
        &["kmeans", "named.csv", "--k", "2", "--no-header"],
        2,
        "line 1, column 1",
    );
    c.check(
        "4. --header with --no-header",
        d,
        &["kmeans", "plain.csv", "--k", "2", "--header", "--no-header"],
        2,
        "cannot be used with",
    );
    write(d, "bom.csv", b"\xef\xbb\xbf0\n1\n1\n");
    write(d, "bomh.csv", b"\xef\xbb\xbflabel\n0\n1\n1\n");
    write(d, "t.csv", b"0\n1\n1\n");
    for f in ["bom.csv", "bomh.csv"] {
        let o = c.check(
            &format!("12. labels with a BOM ({f})"),
            d,
            &["eval", "--labels", f, "--truth", "t.csv", "--json"],
            0,
            "",
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        c.expect(&format!("12. {f}: ARI"), v["ari"] == 1.0 && v["n"] == 3, &v);
    }
    c.finish("headers");
}

const MAX: &str = "1.7976931348623157e308";

/// Items 5–7: extreme finite values and duplicate points.
#[test]
fn extreme_values_are_refused_or_handled_never_a_crash() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(d, "p.csv", b"0\n1e155\n");
    write(d, "q.csv", b"0\n1e308\n-1e308\n");
    write(
        d,
        "m.csv",
        format!("{MAX},-{MAX}\n-{MAX},{MAX}\n0,0\n1,1\n").as_bytes(),
    );
    write(d, "w.csv", b"4e155,1\n-4e155,2\n1,3e155\n0,0\n");
    write(d, "l4.csv", b"0\n0\n1\n1\n");
    let mut c = Cases::default();
    for sub in [
        "kmeans",
        "gmm",
        "minibatch-kmeans",
        "power-kmeans",
        "kpkm",
        "rff-kpkm",
    ] {
        for file in ["p.csv", "q.csv", "m.csv"] {
            c.check(
                &format!("5. {sub} {file}"),
                d,
                &[sub, file, "--k", "2"],
                2,
                "column",
            );
        }
    }
    c.check(
        "5. ppp",
        d,
        &["ppp", "q.csv", "--k-max", "2", "--seeds", "2"],
        2,
        "column 0",
    );
    c.check(
        "5. the message names the range",
        d,
        &["kmeans", "p.csv", "--k", "2"],
        2,
        "a column may span at most",
    );
    for (name, args) in [
        ("power-kmeans", vec!["power-kmeans", "w.csv", "--k", "2"]),
        (
            "fasterpam f64",
            vec!["fasterpam", "w.csv", "--k", "2", "--dtype", "f64"],
        ),
        ("fasterpam f32", vec!["fasterpam", "w.csv", "--k", "2"]),
        ("clara f64", vec!["clara", "w.csv", "--k", "2", "--dtype", "f64"]),
        (
            "eval --data",
            vec!["eval", "--labels", "l4.csv", "--data", "w.csv"],
        ),
        (
            "distances",
            vec!["distances", "w.csv", "--out", "o.npy", "--dtype", "f64"],
        ),
        ("dbscan", vec!["dbscan", "w.csv", "--eps", "1"]),
    ] {
        c.check(&format!("6. {name}"), d, &args, 2, "column");
    }
    c.check(
        "5. float32 input beyond its range",
        d,
        &["distances", "p.csv", "--out", "o.npy"],
        2,
        "line 2, column 1: 1e155 is beyond the range of float32",
    );
    // Only subnormal values: squared differences underflow, so the squaring methods refuse
    // (every distance would be 0); Manhattan and Chebyshev distances are exact.
    write(
        d,
        "sub.csv",
        b"5e-324,1e-310\n1e-320,0\n2e-323,3e-322\n0,5e-324\n",
    );
    // (fasterpam computes in float32 by default, where these values read as 0: all equal)
    for args in [
        &["kmeans", "sub.csv", "--k", "2"][..],
        &["gmm", "sub.csv", "--k", "2"],
        &["power-kmeans", "sub.csv", "--k", "2"],
        &["fasterpam", "sub.csv", "--k", "2", "--dtype", "f64"],
    ] {
        c.check(&format!("5. {} on subnormals", args[0]), d, args, 2, "underflows");
    }
    for metric in ["manhattan", "chebyshev"] {
        c.check(
            &format!("5. fasterpam --metric {metric} on subnormals"),
            d,
            &[
                "fasterpam",
                "sub.csv",
                "--k",
                "2",
                "--dtype",
                "f64",
                "--metric",
                metric,
            ],
            0,
            "",
        );
    }
    // Subnormal values beside ordinary ones: a finite result.
    write(d, "mixed.csv", b"5e-324,1\n1e-310,2\n2e-323,30\n0,31\n");
    for sub in [
        "kmeans",
        "gmm",
        "minibatch-kmeans",
        "power-kmeans",
        "fasterpam",
        "dbscan",
    ] {
        let mut args = vec![sub, "mixed.csv", "--json"];
        if sub == "dbscan" {
            args.extend(["--eps", "1"]);
        } else {
            args.extend(["--k", "2"]);
        }
        let o = c.check(
            &format!("5. {sub} on subnormals beside ordinary values"),
            d,
            &args,
            0,
            "",
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        c.expect(
            &format!("5. {sub} on subnormals: finite loss"),
            sub == "dbscan" || v["loss"].is_number(),
            &v["loss"],
        );
    }
    // Item 7: only duplicate points.
    write(d, "dups.csv", b"3,3\n3,3\n3,3\n3,3\n3,3\n3,3\n");
    for sub in ["kmeans", "minibatch-kmeans", "gmm", "power-kmeans"] {
        let o = c.check(
            &format!("7. {sub} on duplicates"),
            d,
            &[sub, "dups.csv", "--k", "2", "--json"],
            0,
            "",
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        c.expect(
            &format!("7. {sub}: clusters in use"),
            v["n_clusters"] == 1,
            &v["n_clusters"],
        );
    }
    for sub in [
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
    ] {
        let o = c.check(
            &format!("7. {sub} on duplicates"),
            d,
            &[sub, "dups.csv", "--k", "2", "--json"],
            0,
            "",
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        c.expect(
            &format!("7. {sub}: two medoids, each its own cluster, loss 0"),
            v["n_clusters"] == 2 && v["loss"] == 0.0 && v["medoids"][0] != v["medoids"][1],
            &v,
        );
    }
    c.finish("extreme values");
}

/// Items 8–10 and 13: memory checks, bounded runs, and messages that name the problem.
#[test]
fn bounded_runs_and_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    with_iris(d);
    with_tasks(d);
    write(d, "good.csv", b"0,0\n0,1\n1,0\n1,1\n10,10\n10,11\n11,10\n11,11\n");
    let mut c = Cases::default();
    c.check(
        "8. magmaclust predict --grid 0:10:100000",
        d,
        &[
            "magmaclust",
            "predict",
            "m.json",
            "new.csv",
            "--grid",
            "0:10:100000",
            "--out",
            "p.csv",
        ],
        2,
        "needs",
    );
    c.check(
        "8. magmaclust predict --max-memory 1M",
        d,
        &[
            "magmaclust",
            "predict",
            "m.json",
            "new.csv",
            "--grid",
            "0:10:3000",
            "--out",
            "p.csv",
            "--max-memory",
            "1M",
        ],
        2,
        "only 1.0 MiB is allowed",
    );
    let t = std::time::Instant::now();
    c.check(
        "9. magmaclust predict --grid 0:10:1000000000",
        d,
        &[
            "magmaclust",
            "predict",
            "m.json",
            "new.csv",
            "--grid",
            "0:10:1000000000",
            "--out",
            "p.csv",
        ],
        2,
        "needs",
    );
    let o = c.check(
        "9. clarans --maxneighbor 1e308",
        d,
        &[
            "clarans",
            "good.csv",
            "--k",
            "2",
            "--maxneighbor",
            "1e308",
            "--json",
        ],
        0,
        "",
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    c.expect(
        "9. clarans finds the two groups",
        v["loss"]
            .as_f64()
            .is_some_and(|l| (l - 4.0 * 2f64.sqrt() - 2.0).abs() < 1e-9 || l < 7.0),
        &v["loss"],
    );
    c.expect(
        "9. both runs bounded",
        t.elapsed().as_secs() < 20,
        format!("{:?}", t.elapsed()),
    );
    // Item 10: a missing required argument is named on the one line.
    for sub in [
        "kmeans",
        "minibatch-kmeans",
        "gmm",
        "power-kmeans",
        "kpkm",
        "kernel-kmeans",
        "rff-kpkm",
        "ip-rff-mkpkm",
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
    ] {
        c.check(
            &format!("10. {sub} without --k"),
            d,
            &[sub, "good.csv"],
            2,
            "missing required argument: --k",
        );
    }
    c.check(
        "10. datasets export without --out",
        d,
        &["datasets", "export", "iris"],
        2,
        "--out",
    );
    c.check(
        "10. distances without --out",
        d,
        &["distances", "good.csv"],
        2,
        "--out",
    );
    // Item 13.
    c.check(
        "13. rff-kpkm --sigma 1e-300",
        d,
        &["rff-kpkm", "in.csv", "--k", "3", "--sigma", "1e-300"],
        2,
        "sigma = 1e-300: the kernel bandwidth must be at least",
    );
    let mut crafted = common::npy_header("<f8", 1 << 62, 1 << 62);
    crafted.extend([0u8; 64]);
    write(d, "crafted.npy", &crafted);
    let o = c.check(
        "13. crafted .npy shape",
        d,
        &["kmeans", "crafted.npy", "--k", "2"],
        2,
        "crafted.npy: corrupt .npy",
    );
    c.expect(
        "13. no advice for a corrupt file",
        !String::from_utf8_lossy(&o.stderr).contains("minibatch"),
        String::from_utf8_lossy(&o.stderr),
    );
    let o = c.check(
        "13. lloyd over the memory limit",
        d,
        &[
            "kmeans",
            "in.csv",
            "--k",
            "3",
            "--algorithm",
            "lloyd",
            "--max-memory",
            "64",
        ],
        2,
        "only 64 B is allowed",
    );
    c.expect(
        "13. no advice to use what was used",
        !String::from_utf8_lossy(&o.stderr).contains("--algorithm lloyd"),
        String::from_utf8_lossy(&o.stderr),
    );
    let o = c.check(
        "13. an output in /proc/self",
        d,
        &["kmeans", "in.csv", "--k", "3", "--labels-out", "/proc/self/x.csv"],
        2,
        "/proc/self/x.csv: cannot create the file",
    );
    c.expect(
        "13. the folder exists",
        !String::from_utf8_lossy(&o.stderr).contains("does not exist"),
        String::from_utf8_lossy(&o.stderr),
    );
    let fifo = d.join("fifo.npy");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    c.check(
        "13. a FIFO as .npy",
        d,
        &["kmeans", "fifo.npy", "--k", "2"],
        2,
        "fifo.npy: not a regular file",
    );
    c.check(
        "13. blobs --std 1e308",
        d,
        &["datasets", "export", "blobs", "--std", "1e308", "--out", "b.csv"],
        2,
        "cluster_std = 1e308",
    );
    for size in ["18446744073709551616", "99999999999T"] {
        c.check(
            &format!("13. --max-memory {size}"),
            d,
            &["kmeans", "in.csv", "--k", "3", "--max-memory", size],
            2,
            "max-memory",
        );
    }
    c.check(
        "13. --max-memory 18446744073709551615 (the largest)",
        d,
        &[
            "kmeans",
            "in.csv",
            "--k",
            "3",
            "--max-memory",
            "18446744073709551615",
        ],
        0,
        "",
    );
    c.finish("bounded runs and messages");
}

/// Item 14: a temporary left by a killed process is recognisable and removed by a later run
/// into the same folder; one of a live process, or newer than the run, is kept.
#[test]
fn stale_temporaries_of_dead_processes_are_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    with_iris(d);
    // A process id that is not running: beyond the kernel's pid_max.
    let dead = write(d, ".clustr-99999999-AbCdEf.tmp", b"partial");
    let live = write(
        d,
        &format!(".clustr-{}-AbCdEf.tmp", std::process::id()),
        b"partial",
    );
    let other = write(d, ".notclustr-99999999-x.tmp", b"keep");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for p in [&dead, &live, &other] {
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    let o = clustr(d, &["kmeans", "in.csv", "--k", "3", "--labels-out", "l.csv"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(!dead.exists(), "the dead process's temporary is removed");
    assert!(live.exists(), "a live process's temporary is kept");
    assert!(other.exists(), "another program's file is kept");
    println!("stale temporaries: 3 cases, 0 failures");
}

/// Item 15: a .npy truncated while minibatch-kmeans streams it: exit 1 naming the file, no
/// output, no signal.
#[test]
fn a_file_truncated_while_streamed_is_an_io_error() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let o = clustr(
        d,
        &[
            "datasets", "export", "blobs", "--n", "400000", "--d", "8", "--k", "4", "--out", "big.npy",
        ],
    );
    assert_eq!(o.status.code(), Some(0));
    let child = Command::new(env!("CARGO_BIN_EXE_clustr"))
        .current_dir(d)
        .args([
            "minibatch-kmeans",
            "big.npy",
            "--k",
            "4",
            "--chunk-size",
            "2000",
            "--max-iter",
            "100000",
            "--max-no-improvement",
            "0",
            "--labels-out",
            "l.npy",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    std::fs::File::options()
        .write(true)
        .open(d.join("big.npy"))
        .unwrap()
        .set_len(100_000)
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("big.npy") && err.contains("truncated while being read"),
        "{err}"
    );
    assert!(!d.join("l.npy").exists());
    println!("truncated stream: 1 case, 0 failures");
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// A finite f64 from anywhere in the range: zeros, ±f64::MAX, subnormals, any bit pattern
    /// (every exponent equally likely), or an ordinary value.
    fn any_finite() -> impl Strategy<Value = f64> {
        prop_oneof![
            Just(0.0),
            Just(f64::MAX),
            Just(-f64::MAX),
            Just(5e-324),
            Just(-2.2e-310),
            any::<u64>()
                .prop_map(f64::from_bits)
                .prop_filter("finite", |v| v.is_finite()),
            -10.0f64..10.0,
        ]
    }

    /// Values of one magnitude: uniform in ±2^e for a random e over the whole range, so that
    /// every scale, up to the largest and down to the subnormals, is also met by data the
    /// algorithms can take.
    fn one_scale(len: usize) -> impl Strategy<Value = Vec<f64>> {
        (-1074i32..=1023).prop_flat_map(move |e| {
            proptest::collection::vec(-1.0f64..1.0, len).prop_map(move |v| {
                v.into_iter()
                    .map(|x| x * 2f64.powi(e / 2) * 2f64.powi(e - e / 2))
                    .collect()
            })
        })
    }

    /// A matrix of 2..10 rows and 1..3 columns as CSV text (shortest round-trip form): cells
    /// of mixed magnitudes, or all of one magnitude.
    fn matrix() -> impl Strategy<Value = String> {
        (2usize..10, 1usize..4).prop_flat_map(|(n, d)| {
            prop_oneof![proptest::collection::vec(any_finite(), n * d), one_scale(n * d)].prop_map(move |v| {
                v.chunks(d)
                    .map(|r| r.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>().join(","))
                    .collect::<Vec<_>>()
                    .join("\n")
                    + "\n"
            })
        })
    }

    /// The subcommands, each with its arguments after the input.
    const SUBS: &[&[&str]] = &[
        &["kmeans", "--k", "2"],
        &["kmeans", "--k", "2", "--dtype", "f32"],
        &["minibatch-kmeans", "--k", "2"],
        &["gmm", "--k", "2"],
        &["ppp", "--k-max", "2", "--seeds", "2"],
        &["power-kmeans", "--k", "2"],
        &["kpkm", "--k", "2"],
        &["kernel-kmeans", "--k", "2"],
        &["rff-kpkm", "--k", "2", "--n-features", "50"],
        &["ip-rff-mkpkm", "--k", "2", "--n-features", "20"],
        &["pam", "--k", "2"],
        &["fastpam2", "--k", "2", "--dtype", "f64"],
        &["fasterpam", "--k", "2", "--metric", "manhattan", "--dtype", "f64"],
        &["alternating", "--k", "2", "--metric", "cosine", "--dtype", "f64"],
        &["clara", "--k", "2", "--dtype", "f64"],
        &["clarans", "--k", "2", "--metric", "chebyshev"],
        &["dbscan", "--eps", "1"],
        &["optics", "--min-samples", "2"],
        &["distances", "--dtype", "f64", "--out", "d.npy"],
        &["distances", "--metric", "cosine", "--out", "d.npy"],
    ];

    /// Keys whose value may be null in a successful run's JSON (not a number at all).
    const MAY_BE_NULL: &[&str] = &["k", "loss", "max_eps"];

    /// The first null or non-finite number in `v` outside [`MAY_BE_NULL`], as a path.
    fn non_finite(v: &serde_json::Value, path: &str) -> Option<String> {
        match v {
            serde_json::Value::Null => Some(path.to_string()),
            serde_json::Value::Array(a) => a
                .iter()
                .enumerate()
                .find_map(|(i, x)| non_finite(x, &format!("{path}[{i}]"))),
            serde_json::Value::Object(o) => o
                .iter()
                .filter(|(k, x)| !(MAY_BE_NULL.contains(&k.as_str()) && x.is_null()))
                .find_map(|(k, x)| non_finite(x, &format!("{path}.{k}"))),
            _ => None,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(24),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Every subcommand on random finite inputs: exit 0 with finite results (the JSON's
        /// numbers, the loss where the algorithm has one, a distance matrix's values), or exit
        /// 2 with one line; never a panic, an abort or a signal.
        #[test]
        fn every_subcommand_exits_0_with_finite_results_or_2(text in matrix()) {
            let tmp = tempfile::tempdir().unwrap();
            let d = tmp.path();
            std::fs::write(d.join("x.csv"), &text).unwrap();
            for sub in SUBS {
                let mut args = vec![sub[0], "x.csv", "--json", "--labels-out", "l.csv"];
                if sub[0] == "distances" {
                    args.pop();
                    args.pop();
                }
                args.extend(&sub[1..]);
                let o = clustr(d, &args);
                let err = String::from_utf8_lossy(&o.stderr);
                match o.status.code() {
                    Some(0) => {
                        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
                            .map_err(|e| TestCaseError::fail(format!("{args:?}: bad JSON {e}")))?;
                        prop_assert!(non_finite(&v, "").is_none(), "{args:?}: non-finite {:?} in {v}", non_finite(&v, ""));
                        let density = ["dbscan", "optics", "distances"].contains(&sub[0]);
                        prop_assert!(density || v["loss"].is_number(), "{args:?}: loss {}", v["loss"]);
                        if sub[0] == "distances" {
                            let m = clustr::data::read_matrix::<f64>(d.join("d.npy")).unwrap();
                            prop_assert!(m.iter().all(|x| x.is_finite()), "{args:?}: non-finite distance");
                        } else {
                            prop_assert!(d.join("l.csv").exists(), "{args:?}: no labels");
                        }
                    }
                    Some(2) => prop_assert_eq!(err.trim().lines().count(), 1, "{:?}: {}", args, err),
                    code => prop_assert!(false, "{:?}: exit {:?}: {}\ninput:\n{}", args, code, err, text),
                }
                let _ = std::fs::remove_file(d.join("l.csv"));
                let _ = std::fs::remove_file(d.join("d.npy"));
            }
        }

        /// Random sets of output paths — one file by different spellings, symbolic and hard
        /// links, the input itself, a folder, a folder that takes no files — for commands with
        /// several outputs: either every output is written (exit 0) or none is, and every file
        /// that existed is byte-identical afterwards except the outputs of a successful run.
        #[test]
        fn outputs_are_all_or_none_and_never_an_input(
            command in 0usize..3,
            picks in proptest::collection::vec(0usize..11, 3),
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let d = tmp.path();
            std::fs::write(d.join("in.csv"), "0,0\n0,1\n1,0\n1,1\n10,10\n10,11\n11,10\n11,11\n").unwrap();
            std::fs::write(d.join("a.csv"), "old a\n").unwrap();
            std::fs::write(d.join("b.csv"), "old b\n").unwrap();
            std::fs::create_dir(d.join("sub")).unwrap();
            std::fs::create_dir(d.join("dir.csv")).unwrap();
            std::os::unix::fs::symlink("a.csv", d.join("link-a.csv")).unwrap();
            std::os::unix::fs::symlink("in.csv", d.join("link-in.csv")).unwrap();
            std::fs::hard_link(d.join("b.csv"), d.join("hard-b.csv")).unwrap();
            let abs_a = d.join("a.csv").to_string_lossy().into_owned();
            let pool: [&str; 11] = [
                "a.csv", "./a.csv", "sub/../a.csv", &abs_a, "link-a.csv", "b.csv", "hard-b.csv",
                "in.csv", "link-in.csv", "dir.csv", "/proc/self/new.csv",
            ];
            let (name, mut args, slots): (&str, Vec<&str>, &[&str]) = match command {
                0 => ("datasets export", vec!["datasets", "export", "iris"], &["--out", "--labels-out"]),
                1 => ("gmm", vec!["gmm", "in.csv", "--k", "2"], &["--labels-out", "--proba-out"]),
                _ => ("ppp", vec!["ppp", "in.csv", "--k-max", "2", "--seeds", "2"], &["--labels-out", "--separable-out"]),
            };
            let outs: Vec<&str> = slots.iter().zip(&picks).map(|(_, &p)| pool[p]).collect();
            for (slot, out) in slots.iter().zip(&outs) {
                args.extend([*slot, *out]);
            }
            let before = snapshot(d);
            let o = clustr(d, &args);
            let after = snapshot(d);
            // The files the outputs resolve to (links followed).
            let target = |p: &str| -> String {
                let p = Path::new(p);
                let p = if p.is_absolute() { p.to_path_buf() } else { d.join(p) };
                let file = std::fs::canonicalize(&p)
                    .unwrap_or_else(|_| std::fs::canonicalize(p.parent().unwrap()).unwrap().join(p.file_name().unwrap()));
                file.strip_prefix(std::fs::canonicalize(d).unwrap()).map(|r| r.to_string_lossy().into_owned())
                    .unwrap_or_default()
            };
            let targets: Vec<String> = outs.iter().map(|o| target(o)).collect();
            match o.status.code() {
                Some(0) => {
                    for t in &targets {
                        prop_assert!(after.contains_key(t) && before.get(t) != after.get(t), "{name} {args:?}: {t} not written");
                    }
                    // (datasets export reads no file: in.csv is an ordinary output there)
                    prop_assert!(
                        command == 0 || !targets.contains(&"in.csv".to_string()),
                        "{name} {args:?}: wrote over the input"
                    );
                    let mut distinct = targets.clone();
                    distinct.sort();
                    distinct.dedup();
                    prop_assert_eq!(distinct.len(), targets.len(), "{} {:?}: two outputs were one file", name, args);
                    for (k, v) in &before {
                        // Hard links share the content of their target.
                        let linked = k == "hard-b.csv" && targets.contains(&"b.csv".to_string())
                            || k == "b.csv" && targets.contains(&"hard-b.csv".to_string());
                        if !targets.contains(k) && !linked {
                            prop_assert_eq!(after.get(k), Some(v), "{} {:?}: {} changed", name, args, k);
                        }
                    }
                }
                Some(1 | 2) => prop_assert_eq!(&after, &before, "{} {:?}: a failed run changed files: {}", name, args, String::from_utf8_lossy(&o.stderr)),
                code => prop_assert!(false, "{} {:?}: exit {:?}", name, args, code),
            }
        }
    }
}

/// The same cases where they apply to the library.
mod library {
    use super::*;
    use clustr::data::output::{commit_staged, discard_staged, stage_outputs};
    use clustr::data::validate::{check_magnitude, Arithmetic};
    use clustr::data::{read_labels, write_labels, NpyFile};
    use ndarray::array;

    /// Staging is process-wide: the tests of this module that write files take turns.
    static WRITES: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Item 3: staged outputs are renamed together; when one rename fails, the files already
    /// replaced get their old content back and nothing else is left.
    #[test]
    fn staged_outputs_commit_all_or_none() {
        let _turn = WRITES.lock().unwrap_or_else(|e| e.into_inner());
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let (a, b) = (d.join("a.csv"), d.join("b.csv"));
        write(d, "a.csv", b"old a\n");
        stage_outputs();
        write_labels(&a, &[1, 2]).unwrap();
        write_labels(&b, &[3]).unwrap();
        assert_eq!(
            std::fs::read(&a).unwrap(),
            b"old a\n",
            "nothing renamed before the commit"
        );
        assert!(!b.exists());
        // b.csv becomes a non-empty folder: its rename fails, a.csv is restored.
        std::fs::create_dir(&b).unwrap();
        std::fs::write(b.join("x"), "x").unwrap();
        assert!(commit_staged().is_err());
        assert_eq!(std::fs::read(&a).unwrap(), b"old a\n", "a.csv restored");
        let left: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 2, "no temporary or backup left: {left:?}");
        // A successful commit, then a discarded batch.
        std::fs::remove_dir_all(&b).unwrap();
        stage_outputs();
        write_labels(&a, &[1, 2]).unwrap();
        write_labels(&b, &[3]).unwrap();
        assert_eq!(commit_staged().unwrap().len(), 2);
        assert_eq!(read_labels(&a).unwrap(), vec![1, 2]);
        stage_outputs();
        write_labels(&a, &[9]).unwrap();
        discard_staged();
        assert_eq!(
            read_labels(&a).unwrap(),
            vec![1, 2],
            "a discarded batch changes nothing"
        );
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 2);
    }

    /// Items 5 and 6: the magnitude check names the column and the range, per arithmetic and
    /// element type; subnormals and ordinary values pass.
    #[test]
    fn magnitude_limits_name_the_column_and_range() {
        let x = array![[0.0, 1.0], [1e155, 2.0]];
        let e = check_magnitude(x.view(), Arithmetic::SQUARES, "k-means")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("column 0 spans 1.000e155") && e.contains("at most"),
            "{e}"
        );
        // Manhattan sums differences, not squares: 1e155 is fine there.
        let l1 = Arithmetic::Differences { p: 1.0, scale: 1.0 };
        assert!(check_magnitude(x.view(), l1, "manhattan").is_ok());
        // ±f64::MAX: sums of values overflow.
        let m = array![[f64::MAX], [-f64::MAX]];
        assert!(check_magnitude(m.view(), l1, "x")
            .unwrap_err()
            .to_string()
            .contains("holds values up to"));
        // In float32 the limits are float32's.
        let f = array![[0.0f32], [1e20]];
        assert!(check_magnitude(f.view(), Arithmetic::SQUARES, "x").is_err());
        assert!(check_magnitude(f.mapv(f64::from).view(), Arithmetic::SQUARES, "x").is_ok());
        // Subnormals beside ordinary values pass; only subnormals underflow when squared.
        let tiny = array![[5e-324, 0.0], [1e-310, 1.0]];
        assert!(check_magnitude(tiny.view(), Arithmetic::SQUARES, "x").is_ok());
        let only_tiny = array![[5e-324, 0.0], [1e-310, -2e-308]];
        let e = check_magnitude(only_tiny.view(), Arithmetic::SQUARES, "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("underflows"), "{e}");
        assert!(check_magnitude(only_tiny.view(), l1, "manhattan").is_ok());
        // Latitudes beyond ±90° are not locations.
        let geo = array![[91.0, 0.0], [0.0, 1e300]];
        assert!(check_magnitude(geo.view(), Arithmetic::Degrees, "haversine").is_err());
        // A library fit refuses as the command line does.
        use clustr::Fit;
        let e = clustr::kmeans::KMeans::new(2).fit(&x.view()).unwrap_err();
        assert!(matches!(e, clustr::Error::OutOfRange(_)), "{e}");
    }

    /// Item 4: a first row with a number in it is data; all non-numbers, a header.
    #[test]
    fn header_rule() {
        use clustr::data::csv::{parse_csv, CsvOptions};
        let p = Path::new("x.csv");
        let parse = |t: &str, h| {
            parse_csv::<f64>(
                t.as_bytes(),
                p,
                &CsvOptions {
                    has_header: h,
                    ..Default::default()
                },
            )
        };
        assert!(parse("1,abc\n2,3\n", None)
            .unwrap_err()
            .to_string()
            .contains("line 1, column 2"));
        assert_eq!(parse("x,y\n2,3\n", None).unwrap().data.nrows(), 1);
        assert_eq!(parse("1,2\n2,3\n", Some(true)).unwrap().data.nrows(), 1);
        assert!(parse("x,y\n2,3\n", Some(false)).is_err());
    }

    /// Item 12: labels with a byte-order mark.
    #[test]
    fn labels_with_a_bom() {
        let _turn = WRITES.lock().unwrap_or_else(|e| e.into_inner());
        let tmp = tempfile::tempdir().unwrap();
        let p = write(tmp.path(), "l.csv", b"\xef\xbb\xbflabel\n3\n4\n");
        assert_eq!(read_labels(&p).unwrap(), vec![3, 4]);
    }

    /// Item 15: a file that shrinks after it was opened is an I/O error naming it.
    #[test]
    fn a_file_truncated_after_opening_is_an_io_error() {
        let _turn = WRITES.lock().unwrap_or_else(|e| e.into_inner());
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("x.npy");
        clustr::data::write_matrix(&p, ndarray::Array2::<f64>::ones((100, 4)).view(), &[]).unwrap();
        let f = NpyFile::open(&p).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(200)
            .unwrap();
        let e = f.to_array::<f64>().unwrap_err();
        assert!(!e.is_input_error(), "an environment failure: exit 1");
        assert!(
            e.to_string().contains("x.npy") && e.to_string().contains("truncated"),
            "{e}"
        );
    }

    /// Item 9: CLARANS' failed tries are capped at the neighbourhood's size.
    #[test]
    fn clarans_tries_are_bounded() {
        use clustr::kmedoids::Clarans;
        assert_eq!(Clarans::new(2).maxneighbor(1e308).effective_maxneighbor(8), 12);
        assert_eq!(
            Clarans::fastclarans(2)
                .maxneighbor(1e308)
                .effective_maxneighbor(8),
            6
        );
        assert_eq!(Clarans::new(2).maxneighbor(5.0).effective_maxneighbor(8), 5);
    }
}
