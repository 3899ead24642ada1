//! The command line: the bad-input table (exit code 2, one line naming the problem, no output
//! file left behind) and the happy paths of each subcommand.

mod common;
use clustr::Fit;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn clustr(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clustr"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// Runs clustr, requires exit code 0 and returns the JSON it printed (`what` names the case).
fn run_json(dir: &Path, args: &[&str], what: &str) -> serde_json::Value {
    let out = clustr(dir, args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// A valid .npy with its last `cut` bytes removed.
fn truncated_npy(dir: &Path, cut: usize) {
    let p = dir.join("full.npy");
    clustr::data::write_matrix(&p, ndarray::Array2::<f64>::ones((10, 3)).view(), &[]).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    std::fs::remove_file(&p).unwrap();
    write(dir, "trunc.npy", &bytes[..bytes.len() - cut]);
}

#[test]
fn bad_input_table() {
    // (case, files to create, arguments, words the one-line message must contain)
    type Setup = fn(&Path);
    let rows: Vec<(&str, Setup, Vec<&str>, Vec<&str>)> = vec![
        (
            "empty file",
            |d| drop(write(d, "in.csv", b"")),
            vec!["distances", "in.csv", "--out", "out.npy"],
            vec!["in.csv", "no data rows"],
        ),
        (
            "NaN cell",
            |d| drop(write(d, "in.csv", b"1,2\n3,NaN\n")),
            vec!["distances", "in.csv", "--out", "out.npy"],
            vec!["in.csv", "NaN", "row 1, column 1"],
        ),
        (
            "inf cell",
            |d| drop(write(d, "in.csv", b"1,-inf\n3,4\n")),
            vec!["distances", "in.csv", "--out", "out.npy"],
            vec!["in.csv", "inf", "row 0, column 1"],
        ),
        (
            "ragged CSV",
            |d| drop(write(d, "in.csv", b"a,b,c\n1,2,3\n4,5\n")),
            vec!["distances", "in.csv", "--out", "out.npy"],
            vec!["in.csv", "line 3", "expected 3 fields", "found 2"],
        ),
        (
            "truncated .npy",
            |d| truncated_npy(d, 17),
            vec!["distances", "trunc.npy", "--out", "out.npy"],
            vec!["trunc.npy", "truncated"],
        ),
        (
            "k = 0",
            |_| {},
            vec![
                "datasets",
                "export",
                "blobs",
                "--k",
                "0",
                "--out",
                "out.csv",
                "--labels-out",
                "l.npy",
            ],
            vec!["k = 0"],
        ),
        (
            "k > n",
            |_| {},
            vec![
                "datasets",
                "export",
                "blobs",
                "--k",
                "5",
                "--n",
                "3",
                "--out",
                "out.csv",
                "--labels-out",
                "l.npy",
            ],
            vec!["k = 5", "n = 3"],
        ),
        (
            "unknown metric",
            |d| drop(write(d, "in.csv", b"1,2\n3,4\n")),
            vec!["distances", "in.csv", "--metric", "eucledian", "--out", "out.npy"],
            vec!["metric = eucledian", "unknown metric"],
        ),
        (
            "non-square precomputed",
            |d| {
                write(d, "d.csv", b"0,1,2\n1,0,3\n");
                write(d, "l.csv", b"0\n1\n");
            },
            vec!["eval", "--labels", "l.csv", "--precomputed", "d.csv"],
            vec!["d.csv", "square", "2 x 3"],
        ),
        (
            "asymmetric precomputed",
            |d| {
                write(d, "d.csv", b"0,1\n2,0\n");
                write(d, "l.csv", b"0\n1\n");
            },
            vec!["eval", "--labels", "l.csv", "--precomputed", "d.csv"],
            vec!["not symmetric"],
        ),
        (
            "unknown argument",
            |_| {},
            vec!["distances", "x.csv", "--out", "o.npy", "--bogus"],
            vec!["--bogus"],
        ),
        (
            "non-numeric cell",
            |d| drop(write(d, "in.csv", b"1,2\n3,x4\n")),
            vec!["distances", "in.csv", "--out", "out.npy"],
            vec!["in.csv", "line 2, column 2", "x4"],
        ),
        (
            "missing file",
            |_| {},
            vec!["distances", "none.csv", "--out", "out.npy"],
            vec!["none.csv"],
        ),
        (
            "wrong dtype",
            |d| {
                let mut b = b"\x93NUMPY\x01\x00".to_vec();
                let h = "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }\n";
                b.extend((h.len() as u16).to_le_bytes());
                b.extend(h.as_bytes());
                b.extend([1, 2]);
                write(d, "in.npy", &b);
            },
            vec!["distances", "in.npy", "--out", "out.npy"],
            vec!["in.npy", "unsupported dtype |u1"],
        ),
        (
            "gmm: NaN",
            |d| drop(write(d, "in.csv", b"1,2\n3,NaN\n5,6\n")),
            vec![
                "gmm",
                "in.csv",
                "--k",
                "2",
                "--labels-out",
                "l.csv",
                "--proba-out",
                "p.csv",
            ],
            vec!["in.csv", "NaN", "row 1, column 1"],
        ),
        (
            "gmm: k > n",
            |d| drop(write(d, "in.csv", b"1,2\n3,4\n")),
            vec!["gmm", "in.csv", "--k", "3", "--labels-out", "l.csv"],
            vec!["k = 3", "n = 2"],
        ),
        (
            "gmm: unknown covariance",
            |d| drop(write(d, "in.csv", b"1,2\n3,4\n")),
            vec!["gmm", "in.csv", "--k", "1", "--covariance", "ful"],
            vec!["covariance = ful"],
        ),
        (
            "gmm: init labels of the wrong length",
            |d| {
                write(d, "in.csv", b"1,2\n3,4\n5,6\n");
                write(d, "init.csv", b"0\n1\n");
            },
            vec![
                "gmm",
                "in.csv",
                "--k",
                "2",
                "--init-labels",
                "init.csv",
                "--labels-out",
                "l.csv",
            ],
            vec!["initial responsibilities", "3 x 2", "2 x 2"],
        ),
        (
            "gmm: collapsed points without regularisation",
            |d| drop(write(d, "in.csv", b"1,1\n1,1\n1,1\n1,1\n")),
            vec![
                "gmm",
                "in.csv",
                "--k",
                "2",
                "--reg-covar",
                "0",
                "--labels-out",
                "l.csv",
            ],
            vec!["ill-defined empirical covariance", "reg_covar"],
        ),
        (
            "minibatch-kmeans: batch size 0",
            |d| drop(write(d, "in.csv", b"1,2\n3,4\n")),
            vec![
                "minibatch-kmeans",
                "in.csv",
                "--k",
                "1",
                "--batch-size",
                "0",
                "--labels-out",
                "l.csv",
            ],
            vec!["batch_size = 0"],
        ),
        (
            "minibatch-kmeans: inf in a streamed .npy",
            |d| {
                let mut b = common::npy_header("<f8", 3, 2);
                for v in [1.0f64, 2.0, 3.0, f64::INFINITY, 5.0, 6.0] {
                    b.extend(v.to_le_bytes());
                }
                write(d, "in.npy", &b);
            },
            vec!["minibatch-kmeans", "in.npy", "--k", "2", "--labels-out", "l.csv"],
            vec!["in.npy", "inf", "row 1, column 1"],
        ),
        (
            "ppp: k-min > k-max",
            |d| drop(write(d, "in.csv", b"1,2\n3,4\n5,6\n")),
            vec![
                "ppp",
                "in.csv",
                "--k-min",
                "3",
                "--k-max",
                "2",
                "--labels-out",
                "l.csv",
            ],
            vec!["k_min <= k_max"],
        ),
        (
            "dbscan: negative eps",
            |d| drop(write(d, "in.csv", b"1,2\n3,4\n")),
            vec!["dbscan", "in.csv", "--eps", "-1", "--labels-out", "l.csv"],
            vec!["eps = -1"],
        ),
        (
            "dbscan: min_samples = 0",
            |d| drop(write(d, "in.csv", b"1,2\n3,4\n")),
            vec![
                "dbscan",
                "in.csv",
                "--eps",
                "1",
                "--min-samples",
                "0",
                "--labels-out",
                "l.csv",
            ],
            vec!["min_samples = 0"],
        ),
        (
            "dbscan: --eps-m without haversine",
            |d| drop(write(d, "in.csv", b"1,2\n3,4\n")),
            vec!["dbscan", "in.csv", "--eps-m", "100", "--labels-out", "l.csv"],
            vec!["--eps-m", "haversine"],
        ),
        (
            "dbscan: haversine on three columns",
            |d| drop(write(d, "in.csv", b"1,2,3\n3,4,5\n")),
            vec![
                "dbscan",
                "in.csv",
                "--eps",
                "1",
                "--metric",
                "haversine",
                "--labels-out",
                "l.csv",
            ],
            vec!["latitude, longitude", "expected 2", "got 3"],
        ),
        (
            "optics: dbscan extraction above max_eps",
            |d| drop(write(d, "in.csv", b"1,2\n3,4\n5,6\n")),
            vec![
                "optics",
                "in.csv",
                "--min-samples",
                "2",
                "--max-eps",
                "1",
                "--extract",
                "dbscan",
                "--eps",
                "2",
                "--reachability-out",
                "r.csv",
                "--plot",
                "r.png",
            ],
            vec!["eps = 2", "max_eps"],
        ),
        (
            "optics: reachability to a .npy",
            |d| drop(write(d, "in.csv", b"1,2\n3,4\n5,6\n")),
            vec![
                "optics",
                "in.csv",
                "--min-samples",
                "2",
                "--reachability-out",
                "r.npy",
            ],
            vec!["r.npy", ".csv"],
        ),
        (
            "kpkm: kernel matrix over the memory limit",
            |d| drop(write(d, "in.csv", b"1,2\n3,4\n5,7\n")),
            vec![
                "kpkm",
                "in.csv",
                "--k",
                "2",
                "--max-memory",
                "64",
                "--labels-out",
                "l.csv",
            ],
            vec!["kernel matrix", "rff-kpkm"],
        ),
        (
            "rff-kpkm: bad sigma",
            |d| drop(write(d, "in.csv", b"1,2\n3,4\n5,7\n")),
            vec![
                "rff-kpkm",
                "in.csv",
                "--k",
                "2",
                "--sigma",
                "wide",
                "--labels-out",
                "l.csv",
            ],
            vec!["sigma = wide"],
        ),
        (
            "power-kmeans: positive s0",
            |d| drop(write(d, "in.csv", b"1,2\n3,4\n5,7\n")),
            vec![
                "power-kmeans",
                "in.csv",
                "--k",
                "2",
                "--s0",
                "1",
                "--labels-out",
                "l.csv",
            ],
            vec!["s0 = 1", "negative"],
        ),
        (
            "ip-rff-mkpkm: m_p = 1",
            |d| drop(write(d, "in.csv", b"1,2\n3,4\n5,7\n")),
            vec![
                "ip-rff-mkpkm",
                "in.csv",
                "--k",
                "2",
                "--m-p",
                "1",
                "--typicality-out",
                "t.csv",
                "--labels-out",
                "l.csv",
            ],
            vec!["m_p = 1"],
        ),
    ];
    let mut rows = rows;
    if !cfg!(feature = "mpi") {
        for cmd in [
            "kmeans",
            "gmm",
            "minibatch-kmeans",
            "fasterclara",
            "rff-kpkm",
            "power-kmeans",
        ] {
            rows.push((
                "--distributed without the mpi feature",
                |d| drop(write(d, "in.csv", b"1,2\n3,4\n5,7\n")),
                vec![cmd, "in.csv", "--k", "2", "--distributed"],
                vec!["mpi feature"],
            ));
        }
    }
    for args in [
        vec!["fasterpam", "in.csv", "--k", "2", "--distributed"],
        vec![
            "fasterclara",
            "in.csv",
            "--k",
            "2",
            "--distributed",
            "--precomputed",
        ],
        vec!["clara", "in.csv", "--k", "2", "--distributed", "--silhouette"],
    ] {
        rows.push((
            "--distributed k-medoids other than CLARA on points",
            |d| drop(write(d, "in.csv", b"1,2\n3,4\n5,7\n")),
            args,
            vec!["--distributed runs clara"],
        ));
    }
    // A flag of one group of k-medoids methods is refused by the others, not ignored.
    for (method, flag, value, owners) in [
        ("fasterpam", "--fasttol", Some("0.5"), "fastpam2"),
        ("pam", "--shuffle", None, "fasterpam"),
        ("fasterclara", "--init", Some("build"), "pam, fastpam1"),
        ("fastclarans", "--samples", Some("3"), "clara, fastclara"),
        ("fasterpam", "--numlocal", Some("3"), "clarans, fastclarans"),
    ] {
        let mut args = vec![method, "in.csv", "--k", "2", flag];
        args.extend(value);
        rows.push((
            "a k-medoids flag given to a method it does not belong to",
            |d| drop(write(d, "in.csv", b"1,2\n3,4\n5,7\n")),
            args,
            vec![flag, owners],
        ));
    }
    // Choosing k, columns and standardisation.
    let table: [(&str, Vec<&str>, Vec<&str>); 10] = [
        (
            "--k range backwards",
            vec!["kmeans", "in.csv", "--k", "5:2"],
            vec!["5:2", "A <= B"],
        ),
        (
            "--k range from 0",
            vec!["fasterpam", "in.csv", "--k", "0:3"],
            vec!["0:3", "at least 1"],
        ),
        (
            "--k not a number",
            vec!["gmm", "in.csv", "--k", "2:x"],
            vec!["2:x", "range A:B"],
        ),
        (
            "--k beyond n",
            vec!["kmeans", "in.csv", "--k", "2:9"],
            vec!["k = 9", "n = 6"],
        ),
        (
            "silhouette from k = 1",
            vec!["kmeans", "in.csv", "--k", "1:3"],
            vec!["silhouette", "k starts at 2"],
        ),
        (
            "elbow of two k",
            vec!["rff-kpkm", "in.csv", "--k", "2,3"],
            vec!["elbow needs at least 3"],
        ),
        (
            "BIC of k-means",
            vec!["kmeans", "in.csv", "--k", "2:3", "--criterion", "bic"],
            vec!["bic", "does not apply"],
        ),
        (
            "a range where one k is taken",
            vec!["minibatch-kmeans", "in.csv", "--k", "2:3", "--distributed"],
            vec!["minibatch-kmeans --distributed takes one --k"],
        ),
        (
            "--columns beyond the table",
            vec!["kmeans", "in.csv", "--k", "2", "--columns", "99"],
            vec!["in.csv", "99", "3 columns"],
        ),
        (
            "--standardize a constant column",
            vec!["kmeans", "in.csv", "--k", "2", "--standardize"],
            vec!["in.csv", "column 3", "standard deviation is 0"],
        ),
    ];
    for (case, args, words) in table {
        rows.push((
            case,
            |d| {
                drop(write(
                    d,
                    "in.csv",
                    b"a,b,c\n1,2,7\n3,4,7\n5,7,7\n9,1,7\n8,8,7\n0,3,7\n",
                ))
            },
            args,
            words,
        ));
    }
    rows.push((
        "--standardize robust on a column with an interquartile range of 0",
        |d| drop(write(d, "in.csv", b"1,5\n2,5\n3,5\n4,5\n5,9\n")),
        vec!["kmeans", "in.csv", "--k", "2", "--standardize", "--robust"],
        vec!["column 2", "interquartile range is 0"],
    ));
    rows.push((
        "--standardize with --model-out",
        |d| drop(write(d, "in.csv", b"1,2\n3,4\n5,7\n")),
        vec![
            "kmeans",
            "in.csv",
            "--k",
            "2",
            "--standardize",
            "--model-out",
            "m.json",
        ],
        vec!["--standardize", "--model-out"],
    ));
    rows.push((
        "a column name without a header",
        |d| drop(write(d, "in.csv", b"1,2\n3,4\n5,7\n")),
        vec!["kmeans", "in.csv", "--k", "2", "--drop-columns", "id"],
        vec!["id", "no header"],
    ));
    for (case, setup, args, words) in rows {
        let dir = tempfile::tempdir().unwrap();
        setup(dir.path());
        let before = files(dir.path());
        let out = clustr(dir.path(), &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{case}: exit code; stderr: {stderr}");
        assert_eq!(
            stderr.lines().count(),
            1,
            "{case}: one line expected, got {stderr:?}"
        );
        for w in words {
            assert!(stderr.contains(w), "{case}: {w:?} missing from {stderr:?}");
        }
        assert!(out.stdout.is_empty(), "{case}: stdout should be empty");
        assert_eq!(
            files(dir.path()),
            before,
            "{case}: no output or temporary file may be left"
        );
    }
}

#[test]
fn distances_writes_a_matrix_numpy_can_read_and_json_summary() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "p.csv", b"x,y\n0,0\n3,4\n6,8\n");
    let v = run_json(
        dir.path(),
        &[
            "distances",
            "p.csv",
            "--out",
            "d.npy",
            "--dtype",
            "f64",
            "--json",
            "--threads",
            "1",
        ],
        "",
    );
    assert_eq!(
        (v["n"].as_u64(), v["d"].as_u64(), v["threads"].as_u64()),
        (Some(3), Some(2), Some(1))
    );
    assert_eq!(v["algorithm"], "distances");
    assert!(v["seconds"]["total"].as_f64().unwrap() >= v["seconds"]["distances"].as_f64().unwrap());
    let m = clustr::data::NpyFile::open(dir.path().join("d.npy"))
        .unwrap()
        .to_array::<f64>()
        .unwrap();
    assert_eq!(
        m,
        ndarray::array![[0.0, 5.0, 10.0], [5.0, 0.0, 5.0], [10.0, 5.0, 0.0]]
    );
}

#[test]
fn export_then_eval_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let out = clustr(
        dir.path(),
        &[
            "datasets",
            "export",
            "iris",
            "--out",
            "iris.npy",
            "--labels-out",
            "t.csv",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let v = run_json(
        dir.path(),
        &[
            "eval", "--labels", "t.csv", "--truth", "t.csv", "--data", "iris.npy", "--json",
        ],
        "",
    );
    assert_eq!(v["ari"].as_f64(), Some(1.0));
    assert_eq!(v["acc"].as_f64(), Some(1.0));
    // scikit-learn: silhouette_score(iris.data, iris.target) = 0.5034774406932957.
    assert!((v["silhouette"].as_f64().unwrap() - 0.5034774406932957).abs() < 1e-9);
    let list = clustr(dir.path(), &["datasets", "list"]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(text.contains("digits") && text.contains("1797") && text.contains("geo_hotspots"));
}

#[test]
fn kmedoids_subcommands_agree_with_the_library() {
    let dir = tempfile::tempdir().unwrap();
    assert!(clustr(
        dir.path(),
        &[
            "datasets",
            "export",
            "iris",
            "--out",
            "iris.csv",
            "--labels-out",
            "t.csv"
        ]
    )
    .status
    .success());
    for method in ["pam", "fastpam1", "fastpam2", "fasterpam", "alternating"] {
        let v = run_json(
            dir.path(),
            &[
                method,
                "iris.csv",
                "--k",
                "3",
                "--init",
                "build",
                "--dtype",
                "f64",
                "--json",
                "--labels-out",
                "l.npy",
            ],
            "{method}",
        );
        for key in [
            "algorithm",
            "n",
            "d",
            "k",
            "n_clusters",
            "n_noise",
            "loss",
            "n_iter",
            "converged",
            "backend",
            "threads",
            "seed",
            "seconds",
            "medoids",
            "n_swaps",
        ] {
            assert!(v.get(key).is_some(), "{method}: {key} missing");
        }
        let ds = clustr::datasets::load("iris").unwrap();
        let d = clustr::DenseMatrix::from_points(
            ds.data.view(),
            &clustr::MetricKind::Euclidean,
            &clustr::CpuBackend::default(),
        )
        .unwrap();
        let algo = match method {
            "pam" => clustr::kmedoids::KMedoids::pam(3),
            "fastpam1" => clustr::kmedoids::KMedoids::fastpam1(3),
            "fastpam2" => clustr::kmedoids::KMedoids::fastpam2(3),
            "fasterpam" => clustr::kmedoids::KMedoids::fasterpam(3),
            _ => clustr::kmedoids::KMedoids::alternating(3),
        };
        let m = clustr::Fit::fit(&algo.init(clustr::kmedoids::Init::Build), &d).unwrap();
        assert_eq!(v["medoids"], serde_json::json!(m.medoids), "{method}");
        assert!(
            (v["loss"].as_f64().unwrap() - m.loss).abs() < 1e-9 * m.loss,
            "{method}"
        );
        assert_eq!(
            clustr::data::read_labels(dir.path().join("l.npy")).unwrap(),
            m.labels,
            "{method}"
        );
    }
    // PAM on iris, k = 3, BUILD: kmedoids.pam(D, 3, init="build") gives loss 98.13115488227055, medoids [78, 7, 112].
    let out = clustr(
        dir.path(),
        &["pam", "iris.csv", "--k", "3", "--dtype", "f64", "--json"],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        (v["loss"].as_f64().unwrap() - 98.13115488227055).abs() < 1e-9,
        "{}",
        v["loss"]
    );
    assert_eq!(v["medoids"], serde_json::json!([78, 7, 112]));
}

#[test]
fn sampling_subcommands_report_the_full_data_loss() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        clustr(dir.path(), &["datasets", "export", "wine", "--out", "wine.npy"])
            .status
            .success()
    );
    let ds = clustr::datasets::load("wine").unwrap();
    // (the distances in float64, the command's default)
    let otf = clustr::OnTheFly::new(ds.data.view(), clustr::MetricKind::Manhattan).unwrap();
    for method in ["clara", "fastclara", "fasterclara", "clarans", "fastclarans"] {
        let v = run_json(
            dir.path(),
            &[
                method,
                "wine.npy",
                "--k",
                "4",
                "--metric",
                "manhattan",
                "--seed",
                "3",
                "--json",
            ],
            "{method}",
        );
        let medoids: Vec<usize> = serde_json::from_value(v["medoids"].clone()).unwrap();
        let (loss, _) = clustr::kmedoids::total_deviation(&otf, &medoids);
        assert!(
            (v["loss"].as_f64().unwrap() - loss).abs() <= 1e-9 * loss,
            "{method}"
        );
        assert_eq!(
            v["seconds"]["distances"].as_f64(),
            Some(0.0),
            "{method}: no n x n matrix"
        );
    }
}

#[test]
fn weighted_kmedoids_subcommands_equal_the_library() {
    let dir = tempfile::tempdir().unwrap();
    let x = clustr::datasets::load("wine").unwrap().data;
    clustr::data::write_matrix(dir.path().join("wine.npy"), x.view(), &[]).unwrap();
    let w: Vec<f64> = (0..x.nrows()).map(|i| (i % 4) as f64 * 0.5).collect();
    let csv: String = w.iter().map(|v| format!("{v}\n")).collect();
    write(dir.path(), "w.csv", csv.as_bytes());
    let d = clustr::DenseMatrix::from_points(
        x.view(),
        &clustr::MetricKind::Euclidean,
        &clustr::AnyBackend::default(),
    )
    .unwrap();
    let otf = clustr::OnTheFly::new(x.view(), clustr::MetricKind::Euclidean).unwrap();
    use clustr::kmedoids::{Clara, Clarans, KMedoids};
    for (method, model) in [
        ("pam", KMedoids::pam(3).sample_weight(w.clone()).fit(&d).unwrap()),
        (
            "fasterpam",
            KMedoids::fasterpam(3)
                .seed(2)
                .sample_weight(w.clone())
                .fit(&d)
                .unwrap(),
        ),
        (
            "fasterclara",
            Clara::fasterclara(3)
                .seed(2)
                .sample_weight(w.clone())
                .fit(&otf)
                .unwrap(),
        ),
        (
            "fastclarans",
            Clarans::fastclarans(3)
                .seed(2)
                .sample_weight(w.clone())
                .fit(&otf)
                .unwrap(),
        ),
    ] {
        let v = run_json(
            dir.path(),
            &[
                method,
                "wine.npy",
                "--k",
                "3",
                "--seed",
                "2",
                "--dtype",
                "f64",
                "--sample-weight",
                "w.csv",
                "--json",
            ],
            method,
        );
        let medoids: Vec<usize> = serde_json::from_value(v["medoids"].clone()).unwrap();
        assert_eq!(medoids, model.medoids, "{method}");
        let loss = v["loss"].as_f64().unwrap();
        assert!(
            (loss - model.loss).abs() <= 1e-12 * model.loss,
            "{method}: {loss} vs {}",
            model.loss
        );
    }
}

#[test]
fn hdbscan_and_single_linkage_subcommands() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hdbscan");
    std::fs::copy(fixtures.join("moons_x.npy"), dir.path().join("moons.npy")).unwrap();
    let v = run_json(
        dir.path(),
        &[
            "hdbscan",
            "moons.npy",
            "--min-cluster-size",
            "15",
            "--labels-out",
            "l.npy",
            "--probabilities-out",
            "p.csv",
            "--outlier-scores-out",
            "o.npy",
            "--tree-out",
            "t.npy",
            "--plot",
            "c.png",
            "--json",
        ],
        "hdbscan",
    );
    let labels = clustr::data::read_labels(dir.path().join("l.npy")).unwrap();
    assert_eq!(
        labels,
        clustr::data::read_labels(fixtures.join("moons_labels.npy")).unwrap()
    );
    assert_eq!(v["n_clusters"], 2);
    assert_eq!(
        v["n_noise"].as_u64().unwrap() as usize,
        labels.iter().filter(|&&l| l == -1).count()
    );
    let p = clustr::data::read_matrix::<f64>(dir.path().join("p.csv")).unwrap();
    assert_eq!(p.dim(), (2000, 1));
    let t = clustr::data::read_matrix::<f64>(dir.path().join("t.npy")).unwrap();
    assert_eq!((t.dim(), t[[1998, 3]]), ((1999, 4), 2000.0));
    assert!(std::fs::metadata(dir.path().join("c.png")).unwrap().len() > 1000);
    // The same tree as SVG: title, axes and a legend entry per selected cluster.
    let svg = clustr(
        dir.path(),
        &[
            "hdbscan",
            "moons.npy",
            "--min-cluster-size",
            "15",
            "--plot",
            "c.svg",
            "--quiet",
        ],
    );
    assert!(svg.status.success(), "{}", String::from_utf8_lossy(&svg.stderr));
    let svg = std::fs::read_to_string(dir.path().join("c.svg")).unwrap();
    for text in [
        "HDBSCAN condensed tree",
        "λ = 1 / distance",
        "cluster 0",
        "cluster 1",
        "not selected",
    ] {
        assert!(svg.contains(text), "{text} missing from the condensed tree");
    }
    assert!(!svg.contains("cluster 2"), "two clusters selected");
    // A precomputed matrix: the fixture's directly computed distances, alpha 1.2.
    let x = clustr::data::read_matrix::<f64>(fixtures.join("small_precomputed_x.npy")).unwrap();
    let d = ndarray::Array2::from_shape_fn((x.nrows(), x.nrows()), |(i, j)| {
        let (a, b) = (x[[i, 0]] - x[[j, 0]], x[[i, 1]] - x[[j, 1]]);
        (a * a + b * b).sqrt()
    });
    clustr::data::write_matrix(dir.path().join("d.npy"), d.view(), &[]).unwrap();
    run_json(
        dir.path(),
        &[
            "hdbscan",
            "d.npy",
            "--precomputed",
            "--min-cluster-size",
            "10",
            "--alpha",
            "1.2",
            "--labels-out",
            "dl.npy",
            "--json",
        ],
        "hdbscan --precomputed",
    );
    let labels = clustr::data::read_labels(dir.path().join("dl.npy")).unwrap();
    assert_eq!(
        labels,
        clustr::data::read_labels(fixtures.join("small_precomputed_labels.npy")).unwrap()
    );
    let v = run_json(
        dir.path(),
        &[
            "single-linkage",
            "moons.npy",
            "--n-clusters",
            "3",
            "--labels-out",
            "s.npy",
            "--json",
        ],
        "single-linkage",
    );
    assert_eq!(v["n_clusters"], 3);
}

#[test]
fn mixture_and_minibatch_subcommands() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ok = clustr(
        d,
        &[
            "datasets",
            "export",
            "blobs",
            "--n",
            "600",
            "--k",
            "3",
            "--std",
            "0.5",
            "--seed",
            "1",
            "--out",
            "x.npy",
            "--labels-out",
            "t.csv",
        ],
    );
    assert!(ok.status.success());
    let g = run_json(
        d,
        &[
            "gmm",
            "x.npy",
            "--k",
            "3",
            "--covariance",
            "diag",
            "--proba-out",
            "p.csv",
            "--labels-out",
            "g.csv",
            "--json",
            "--quiet",
        ],
        "gmm",
    );
    for key in ["mean_log_likelihood", "bic", "aic", "weights", "means"] {
        assert!(!g[key].is_null(), "gmm --json lacks {key}");
    }
    let w: Vec<f64> = serde_json::from_value(g["weights"].clone()).unwrap();
    assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    let proba = clustr::data::read_matrix::<f64>(d.join("p.csv")).unwrap();
    assert_eq!(proba.dim(), (600, 3));
    let truth = clustr::data::read_labels(d.join("t.csv")).unwrap();
    let labels = clustr::data::read_labels(d.join("g.csv")).unwrap();
    assert!(clustr::eval::adjusted_rand_score(&truth, &labels).unwrap() > 0.99);
    // Starting from the true labels gives the same fit as the library.
    let x = clustr::data::read_matrix::<f64>(d.join("x.npy")).unwrap();
    let lib = clustr::mixture::GaussianMixture::new(3)
        .init(clustr::mixture::GmmInit::from_labels(&truth, 3).unwrap())
        .fit(&x.view())
        .unwrap();
    let g = run_json(
        d,
        &["gmm", "x.npy", "--k", "3", "--init-labels", "t.csv", "--json"],
        "gmm --init-labels",
    );
    assert_eq!(g["mean_log_likelihood"].as_f64().unwrap(), lib.lower_bound);

    let m = run_json(
        d,
        &[
            "minibatch-kmeans",
            "x.npy",
            "--k",
            "3",
            "--batch-size",
            "100",
            "--labels-out",
            "m.npy",
            "--json",
        ],
        "minibatch",
    );
    let lib = clustr::kmeans::MiniBatchKMeans::new(3)
        .batch_size(100)
        .fit(&x.view())
        .unwrap();
    assert_eq!(m["inertia"].as_f64().unwrap(), lib.inertia);
    assert_eq!(clustr::data::read_labels(d.join("m.npy")).unwrap(), lib.labels);

    let p = run_json(
        d,
        &[
            "ppp",
            "x.npy",
            "--k-max",
            "6",
            "--seeds",
            "5",
            "--labels-out",
            "ppp.csv",
            "--separable-out",
            "s.csv",
            "--json",
        ],
        "ppp",
    );
    assert_eq!(p["chosen_k"].as_u64(), Some(3));
    assert_eq!(p["table"].as_array().unwrap().len(), 5);
    let labels = clustr::data::read_labels(d.join("ppp.csv")).unwrap();
    assert!(clustr::eval::adjusted_rand_score(&truth, &labels).unwrap() > 0.99);
    assert_eq!(clustr::data::read_labels(d.join("s.csv")).unwrap().len(), 600);
}

#[test]
fn density_subcommands() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ok = clustr(
        d,
        &[
            "datasets",
            "export",
            "geo_hotspots",
            "--n",
            "3000",
            "--k",
            "5",
            "--noise",
            "0.2",
            "--out",
            "g.csv",
        ],
    );
    assert!(ok.status.success());
    let a = run_json(
        d,
        &[
            "dbscan",
            "g.csv",
            "--metric",
            "haversine",
            "--eps-m",
            "300",
            "--min-samples",
            "8",
            "--labels-out",
            "a.csv",
            "--json",
        ],
        "dbscan m",
    );
    let b = run_json(
        d,
        &[
            "dbscan",
            "g.csv",
            "--metric",
            "haversine",
            "--eps",
            "0.3",
            "--min-samples",
            "8",
            "--index",
            "brute",
            "--labels-out",
            "b.csv",
            "--json",
        ],
        "dbscan km",
    );
    assert_eq!(a["n_clusters"], b["n_clusters"]);
    assert_eq!(
        clustr::data::read_labels(d.join("a.csv")).unwrap(),
        clustr::data::read_labels(d.join("b.csv")).unwrap()
    );
    assert_eq!(a["index"], "kdtree");
    let o = run_json(
        d,
        &[
            "optics",
            "g.csv",
            "--metric",
            "haversine",
            "--max-eps-m",
            "2000",
            "--min-samples",
            "8",
            "--reachability-out",
            "r.csv",
            "--plot",
            "r.png",
            "--labels-out",
            "o.csv",
            "--json",
        ],
        "optics",
    );
    assert!(o["n_clusters"].as_u64().unwrap() >= 1);
    let text = std::fs::read_to_string(d.join("r.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("position,index,reachability,core_distance,predecessor,label")
    );
    let first: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!((first[0], first[2], first[4]), ("0", "inf", "-1"));
    assert_eq!(text.lines().count(), 3001);
    assert!(std::fs::read(d.join("r.png")).unwrap().starts_with(b"\x89PNG"));
}

#[test]
fn kernel_subcommands() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ok = clustr(
        d,
        &[
            "datasets",
            "export",
            "circles",
            "--n",
            "1000",
            "--factor",
            "0.2",
            "--noise",
            "0.05",
            "--out",
            "c.csv",
            "--labels-out",
            "t.csv",
        ],
    );
    assert!(ok.status.success());
    let truth = clustr::data::read_labels(d.join("t.csv")).unwrap();
    for (cmd, extra) in [
        ("kpkm", vec!["--sigma", "0.3"]),
        ("kernel-kmeans", vec!["--sigma", "0.3"]),
        ("rff-kpkm", vec!["--sigma", "0.3", "--n-features", "1500"]),
    ] {
        let mut args = vec![cmd, "c.csv", "--k", "2", "--labels-out", "l.csv", "--json"];
        args.extend(extra);
        let v = run_json(d, &args, cmd);
        assert_eq!(v["algorithm"], cmd);
        assert_eq!(v["converged"], true, "{cmd}");
        assert_eq!(v["n_init"], 10, "{cmd}");
        let labels = clustr::data::read_labels(d.join("l.csv")).unwrap();
        assert!(
            clustr::eval::adjusted_rand_score(&truth, &labels).unwrap() > 0.9,
            "{cmd}"
        );
    }
    let v = run_json(
        d,
        &[
            "ip-rff-mkpkm",
            "c.csv",
            "--k",
            "2",
            "--n-features",
            "200",
            "--typicality-out",
            "t.npy",
            "--json",
        ],
        "ip",
    );
    let w: Vec<f64> = serde_json::from_value(v["kernel_weights"].clone()).unwrap();
    assert_eq!(w.len(), 5);
    assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    let t = clustr::data::read_matrix::<f64>(d.join("t.npy")).unwrap();
    assert_eq!(t.dim(), (1000, 1));
    assert!(t.iter().all(|&v| (0.0..=1.0).contains(&v)));
    let p = run_json(
        d,
        &["power-kmeans", "c.csv", "--k", "2", "--json", "--dtype", "f32"],
        "power",
    );
    assert!(p["s"].as_f64().unwrap() < -1.0);
    // Kernel k-means has no annealing to set.
    let e = clustr(d, &["kernel-kmeans", "c.csv", "--k", "2", "--s0", "-3"]);
    assert_eq!(e.status.code(), Some(2));
}

#[test]
fn magmaclust_train_predict_select() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sim = clustr::gp::Simulator {
        seed: 1,
        n_tasks: 51,
        ..clustr::gp::Simulator::new(clustr::gp::Scenario::H00)
    }
    .generate()
    .unwrap();
    let long = |tasks: &[clustr::gp::Task], upto: usize| {
        let mut csv = String::from("ID,Input,Output\n");
        for t in tasks {
            for (x, y) in t.inputs.column(0).iter().zip(&t.outputs).take(upto) {
                csv.push_str(&format!("{},{x},{y}\n", t.id));
            }
        }
        csv
    };
    write(d, "tasks.csv", long(&sim.tasks.tasks[1..], usize::MAX).as_bytes());
    write(d, "new.csv", long(&sim.tasks.tasks[..1], 20).as_bytes());
    let v = run_json(
        d,
        &[
            "magmaclust",
            "train",
            "tasks.csv",
            "--k",
            "3",
            "--out",
            "model.json",
            "--clusters-out",
            "c.csv",
            "--json",
        ],
        "magmaclust train",
    );
    assert_eq!(v["n_tasks"], 50);
    assert_eq!(v["mixture_weights"].as_array().unwrap().len(), 3);
    assert!(!v["elbo"].as_array().unwrap().is_empty());
    let model: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("model.json")).unwrap()).unwrap();
    assert_eq!(model["memberships"].as_array().unwrap().len(), 50);
    assert_eq!(model["memberships"][0]["ID"], sim.tasks.tasks[1].id.as_str());
    let text = std::fs::read_to_string(d.join("c.csv")).unwrap();
    assert_eq!(text.lines().next(), Some("ID,cluster,probability"));
    let labels: Vec<i64> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(clustr::eval::adjusted_rand_score(&sim.clusters[1..], &labels).unwrap() > 0.9);

    // Predict the held-out task's last 10 points from its first 20.
    let test = &sim.tasks.tasks[0];
    let inputs: String = std::iter::once("Input\n".to_string())
        .chain(test.inputs.column(0).iter().skip(20).map(|x| format!("{x}\n")))
        .collect();
    write(d, "future.csv", inputs.as_bytes());
    run_json(
        d,
        &[
            "magmaclust",
            "predict",
            "model.json",
            "new.csv",
            "--inputs",
            "future.csv",
            "--out",
            "pred.csv",
            "--plot",
            "pred.png",
            "--json",
        ],
        "magmaclust predict",
    );
    let pred = std::fs::read_to_string(d.join("pred.csv")).unwrap();
    let mut lines = pred.lines();
    assert_eq!(
        lines.next(),
        Some("Input,Mean,Var,Mean_0,Var_0,Proba_0,Mean_1,Var_1,Proba_1,Mean_2,Var_2,Proba_2")
    );
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 10);
    let mse = rows
        .iter()
        .zip(test.outputs.iter().skip(20))
        .map(|(r, y)| (r[1] - y).powi(2))
        .sum::<f64>()
        / 10.0;
    assert!(mse < 10.0, "MSE {mse}");
    assert!(rows
        .iter()
        .all(|r| r[2] > 0.0 && (r[5] + r[8] + r[11] - 1.0).abs() < 1e-9));
    assert_eq!(&std::fs::read(d.join("pred.png")).unwrap()[1..4], b"PNG");
    // The same prediction as SVG, with the last 10 points drawn as held out.
    let held: String = long(&sim.tasks.tasks[..1], usize::MAX)
        .lines()
        .enumerate()
        .filter(|&(i, _)| i == 0 || i > 20)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    write(d, "held.csv", held.as_bytes());
    let svg = clustr(
        d,
        &[
            "magmaclust",
            "predict",
            "model.json",
            "new.csv",
            "--inputs",
            "future.csv",
            "--out",
            "p2.csv",
            "--plot",
            "pred.svg",
            "--held-out",
            "held.csv",
        ],
    );
    assert!(svg.status.success(), "{}", String::from_utf8_lossy(&svg.stderr));
    let svg = std::fs::read_to_string(d.join("pred.svg")).unwrap();
    for text in [
        "MagmaClust prediction",
        "input t",
        "output y",
        "held-out points",
        "observed points",
    ] {
        assert!(svg.contains(text), "{text} missing from the plot");
    }
    // Ten open circles of radius 6 for the held-out points, plus one in the legend.
    assert_eq!(svg.matches(r#"r="6""#).count(), 11);
    // --held-out draws on a plot, so it needs one.
    let alone = clustr(
        d,
        &[
            "magmaclust",
            "predict",
            "model.json",
            "new.csv",
            "--inputs",
            "future.csv",
            "--out",
            "p3.csv",
            "--held-out",
            "held.csv",
        ],
    );
    assert_eq!(alone.status.code(), Some(2));
    assert!(!d.join("p3.csv").exists());
    let grid = clustr(
        d,
        &[
            "magmaclust",
            "predict",
            "model.json",
            "new.csv",
            "--grid",
            "0:10:50",
            "--out",
            "g.csv",
        ],
    );
    assert!(grid.status.success(), "{}", String::from_utf8_lossy(&grid.stderr));
    assert_eq!(
        std::fs::read_to_string(d.join("g.csv")).unwrap().lines().count(),
        51
    );

    let s = run_json(
        d,
        &[
            "magmaclust",
            "select",
            "tasks.csv",
            "--k-range",
            "1:4",
            "--out",
            "best.json",
            "--json",
        ],
        "magmaclust select",
    );
    assert_eq!(s["vbic_by_k"].as_array().unwrap().len(), 4);
    assert_eq!(s["k"], s["best_k"]);
    assert!(d.join("best.json").exists());

    // Bad input: exit code 2, one line naming the problem, no output file.
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "magmaclust",
                "train",
                "tasks.csv",
                "--k",
                "2",
                "--hypothesis",
                "Hxx",
                "--out",
                "x.json",
            ],
            "hypothesis",
        ),
        (
            &["magmaclust", "train", "tasks.csv", "--k", "0", "--out", "x.json"],
            "k",
        ),
        (
            &[
                "magmaclust",
                "train",
                "tasks.csv",
                "--k",
                "2",
                "--max-memory",
                "1K",
                "--out",
                "x.json",
            ],
            "only 1.0 KiB is allowed; use fewer tasks",
        ),
        (
            &[
                "magmaclust",
                "select",
                "tasks.csv",
                "--max-memory",
                "lots",
                "--out",
                "x.json",
            ],
            "max-memory",
        ),
        (
            &["magmaclust", "train", "dup.csv", "--k", "1", "--out", "x.json"],
            "line 3",
        ),
        (
            &["magmaclust", "train", "one.csv", "--k", "1", "--out", "x.json"],
            "task b has 1 point",
        ),
        (
            &["magmaclust", "train", "text.csv", "--k", "1", "--out", "x.json"],
            "task a",
        ),
        (
            &["magmaclust", "train", "nocol.csv", "--k", "1", "--out", "x.json"],
            "ID and an Output",
        ),
        (
            &[
                "magmaclust",
                "select",
                "tasks.csv",
                "--k-range",
                "3:1",
                "--out",
                "x.json",
            ],
            "k-range",
        ),
        (
            &[
                "magmaclust",
                "predict",
                "tasks.csv",
                "new.csv",
                "--grid",
                "0:1:5",
                "--out",
                "x.csv",
            ],
            "model file",
        ),
        (
            &[
                "magmaclust",
                "predict",
                "model.json",
                "new.csv",
                "--grid",
                "1:0:5",
                "--out",
                "x.csv",
            ],
            "grid",
        ),
        (
            &[
                "magmaclust",
                "predict",
                "model.json",
                "tasks.csv",
                "--grid",
                "0:1:5",
                "--out",
                "x.csv",
            ],
            "one task",
        ),
    ];
    write(d, "dup.csv", b"ID,Input,Output\na,1,2\na,1,3\n");
    write(d, "one.csv", b"ID,Input,Output\na,1,2\na,2,3\nb,1,2\n");
    write(d, "text.csv", b"ID,Input,Output\na,1,2\na,2,oops\n");
    write(d, "nocol.csv", b"ID,Input\na,1\n");
    for (args, needle) in cases {
        let out = clustr(d, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(
            !d.join("x.json").exists() && !d.join("x.csv").exists(),
            "{args:?}"
        );
    }
}

/// `--backend cuda` where no CUDA backend can run: exit 2, one line saying what is missing, no
/// output; `--backend auto` falls back to the CPU and says so in the JSON.
#[test]
fn backend_cuda_without_a_device_is_a_clear_error() {
    if clustr::BackendChoice::Cuda.resolve().is_ok() {
        eprintln!("SKIPPED: a CUDA device is available here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "in.csv", b"1,2\n3,4\n5,7\n");
    let out = clustr(
        d,
        &["distances", "in.csv", "--out", "out.npy", "--backend", "cuda"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("backend = cuda"), "{err}");
    assert!(!d.join("out.npy").exists());
    let v = run_json(
        d,
        &["fasterpam", "in.csv", "--k", "2", "--backend", "auto", "--json"],
        "fasterpam auto",
    );
    assert_eq!(v["backend"], "cpu");
}

/// A method that gives a device no work (its description's `device` is None) refuses
/// `--backend cuda` with one line, and with `--backend auto` reports the CPU in its JSON, on
/// any machine; an unknown backend is a usage error of one line. Every method of the
/// description is run once with `--backend auto` and its JSON names where it ran.
#[test]
fn cpu_only_methods_refuse_cuda_and_report_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "in.csv", b"1,2\n3,4\n5,7\n9,9\n1,1\n8,8\n");
    for m in clustr::methods::METHODS
        .iter()
        .filter(|m| m.device.is_none() && m.fit.is_some())
    {
        let args: Vec<&str> = match m.name {
            "dbscan" => vec!["dbscan", "in.csv", "--eps", "3"],
            "optics" | "hdbscan" => vec![m.name, "in.csv", "--min-samples", "2"],
            "single-linkage" => vec!["single-linkage", "in.csv", "--n-clusters", "2"],
            "ppp" => vec!["ppp", "in.csv", "--k-min", "1", "--k-max", "2", "--seeds", "2"],
            name => vec![name, "in.csv", "--k", "2"],
        };
        let mut cuda = args.clone();
        cuda.extend(["--backend", "cuda"]);
        let out = clustr(d, &cuda);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", m.name);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("runs on the CPU only"), "{err}");
        let mut auto = args.clone();
        auto.extend(["--backend", "auto", "--json"]);
        let v = run_json(d, &auto, m.name);
        assert_eq!(v["backend"], "cpu", "{}", m.name);
    }
    let out = clustr(d, &["pam", "in.csv", "--k", "2", "--backend", "tpu"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// Ctrl-C (SIGINT) or SIGTERM during a long run stops it promptly (exit 130 or 143, 128 + the
/// signal) and leaves no partial output: the streamed distance matrix's temporary file is
/// removed.
#[cfg(unix)]
#[test]
fn interrupt_leaves_no_partial_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut csv = String::new();
    for i in 0..6000 {
        let row: Vec<String> = (0..64)
            .map(|j| format!("{}", ((i * 31 + j * 17) % 97) as f64 * 0.1))
            .collect();
        csv.push_str(&row.join(","));
        csv.push('\n');
    }
    write(d, "big.csv", csv.as_bytes());
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_clustr"))
            .current_dir(d)
            .args([
                "distances",
                "big.csv",
                "--out",
                "out.npy",
                "--metric",
                "minkowski:3",
                "--dtype",
                "f32",
                "--threads",
                "1",
                "--quiet",
            ])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let temp_files = || {
            std::fs::read_dir(d)
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .file_name()
                        .to_string_lossy()
                        .starts_with(".clustr-")
                })
                .count()
        };
        let started = std::time::Instant::now();
        while temp_files() == 0 {
            assert!(started.elapsed().as_secs() < 60, "the run never started writing");
            assert!(
                child.try_wait().unwrap().is_none(),
                "finished before it could be interrupted"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        let interrupted = std::time::Instant::now();
        let kill = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        let out = child.wait_with_output().unwrap();
        assert!(interrupted.elapsed().as_secs_f64() < 5.0, "slow to stop");
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"));
        assert!(!d.join("out.npy").exists());
        assert_eq!(temp_files(), 0, "a temporary file was left behind");
    }
}

/// A folder of .npy shards reads as the rows of its files in name order: the same result as
/// the whole file (k-means, and mini-batch k-means, which streams the shards).
#[test]
fn a_folder_of_npy_shards_is_one_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = clustr::datasets::Blobs::new(3000, 3)
        .n_features(2)
        .seed(4)
        .generate()
        .unwrap()
        .data;
    clustr::data::write_matrix(d.join("x.npy"), x.view(), &[]).unwrap();
    std::fs::create_dir(d.join("parts")).unwrap();
    for (i, r) in [0..1000, 1000..1700, 1700..3000].into_iter().enumerate() {
        let part = x.slice(ndarray::s![r, ..]);
        clustr::data::write_matrix(d.join(format!("parts/{i:02}.npy")), part, &[]).unwrap();
    }
    for cmd in ["kmeans", "minibatch-kmeans"] {
        let run = |input: &str, out: &str| {
            run_json(
                d,
                &[cmd, input, "--k", "3", "--labels-out", out, "--json", "--quiet"],
                "",
            )
        };
        let (whole, parts) = (run("x.npy", "a.npy"), run("parts", "b.npy"));
        assert_eq!(whole["loss"], parts["loss"], "{cmd}");
        let read = |f: &str| clustr::data::read_labels(d.join(f)).unwrap();
        assert_eq!(read("a.npy"), read("b.npy"), "{cmd}");
    }
}

/// Runs clustr with `input` on its standard input.
fn clustr_stdin(dir: &Path, args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_clustr"))
        .current_dir(dir)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn choosing_k_reports_a_table_and_fits_the_chosen_k() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Three separated groups: every default criterion must choose 3.
    let data = clustr::datasets::Blobs::new(150, 3)
        .centers(ndarray::array![[0.0, 0.0], [8.0, 0.0], [0.0, 8.0]])
        .cluster_std(0.5)
        .seed(4)
        .generate()
        .unwrap();
    clustr::data::write_matrix(d.join("x.npy"), data.data.view(), &[]).unwrap();
    for (cmd, criterion) in [
        ("kmeans", "silhouette"),
        ("fasterpam", "medoid-silhouette"),
        ("clara", "medoid-silhouette"),
        ("gmm", "bic"),
        ("rff-kpkm", "elbow"),
        ("power-kmeans", "silhouette"),
        ("minibatch-kmeans", "silhouette"),
    ] {
        let v = run_json(
            d,
            &[cmd, "x.npy", "--k", "2:6", "--json", "--labels-out", "l.npy"],
            cmd,
        );
        let sel = &v["k_selection"];
        assert_eq!(sel["criterion"], criterion, "{cmd}");
        assert_eq!(sel["chosen_k"], 3, "{cmd}: {sel}");
        assert_eq!(v["k"], 3, "{cmd}");
        let ks: Vec<u64> = sel["table"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["k"].as_u64().unwrap())
            .collect();
        assert_eq!(ks, vec![2, 3, 4, 5, 6], "{cmd}");
        // The reported model is the chosen k's: its labels are those of a plain run with k = 3.
        let labels = clustr::data::read_labels(d.join("l.npy")).unwrap();
        let plain = run_json(
            d,
            &[cmd, "x.npy", "--k", "3", "--json", "--labels-out", "p.npy"],
            cmd,
        );
        assert_eq!(
            labels,
            clustr::data::read_labels(d.join("p.npy")).unwrap(),
            "{cmd}"
        );
        let row3 = &sel["table"][1];
        assert_eq!(row3["loss"], plain["loss"], "{cmd}");
        assert!(plain.get("k_selection").is_none());
    }
    // minibatch-kmeans streams a .npy: its silhouette is that of the labels it wrote.
    let v = run_json(
        d,
        &[
            "minibatch-kmeans",
            "x.npy",
            "--k",
            "2:4",
            "--json",
            "--labels-out",
            "m.npy",
        ],
        "stream",
    );
    let labels = clustr::data::read_labels(d.join("m.npy")).unwrap();
    let otf = clustr::OnTheFly::new(data.data.view(), clustr::MetricKind::Euclidean).unwrap();
    let chosen = &v["k_selection"]["table"][1];
    assert_eq!(chosen["k"], 3);
    let s = clustr::eval::silhouette_score(&otf, &labels).unwrap();
    assert!((chosen["score"].as_f64().unwrap() - s).abs() < 1e-12);
    // The silhouette column is scikit-learn's silhouette of each k's labels.
    let v = run_json(d, &["kmeans", "x.npy", "--k", "2,4", "--json"], "kmeans list");
    for row in v["k_selection"]["table"].as_array().unwrap() {
        let k = row["k"].as_u64().unwrap() as usize;
        let m = clustr::kmeans::KMeans::new(k).fit(&data.data.view()).unwrap();
        let otf = clustr::OnTheFly::new(data.data.view(), clustr::MetricKind::Euclidean).unwrap();
        let s = clustr::eval::silhouette_score(&otf, &m.labels).unwrap();
        assert!((row["score"].as_f64().unwrap() - s).abs() < 1e-12, "k = {k}");
    }
    // Another criterion by name; the human output prints the table and marks the choice.
    let out = clustr(d, &["kmeans", "x.npy", "--k", "2:5", "--criterion", "db"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("choosing k by davies-bouldin (lower is better)"),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.trim_start().starts_with("* ") && l.contains(" 3 ")),
        "{err}"
    );
}

#[test]
fn columns_standardize_and_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let csv = "id,x,name,y\n1,0.0,a,0.0\n2,0.1,b,0.2\n3,10.0,c,10.0\n4,10.2,d,9.9\n5,0.2,e,0.1\n";
    write(d, "t.csv", csv.as_bytes());
    let plain = "x,y\n0.0,0.0\n0.1,0.2\n10.0,10.0\n10.2,9.9\n0.2,0.1\n";
    write(d, "p.csv", plain.as_bytes());
    let want = run_json(
        d,
        &[
            "kmeans",
            "p.csv",
            "--k",
            "2",
            "--json",
            "--labels-out",
            "want.csv",
        ],
        "plain",
    );
    // By number, by name, by dropping: the same points, labels aligned with the rows.
    for sel in [
        vec!["--columns", "2,4"],
        vec!["--columns", "x,y"],
        vec!["--drop-columns", "id,3"],
        vec!["--columns", "2-4", "--drop-columns", "name"],
    ] {
        let mut args = vec!["kmeans", "t.csv", "--k", "2", "--json", "--labels-out", "got.csv"];
        args.extend(&sel);
        let got = run_json(d, &args, &format!("{sel:?}"));
        assert_eq!(got["inertia"], want["inertia"], "{sel:?}");
        assert_eq!(got["d"], 2);
        assert_eq!(
            std::fs::read_to_string(d.join("got.csv")).unwrap(),
            std::fs::read_to_string(d.join("want.csv")).unwrap()
        );
    }
    // A text column left in is still an error naming it.
    let out = clustr(d, &["kmeans", "t.csv", "--k", "2", "--drop-columns", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot parse \"a\""));
    // --standardize: the centres are those of the z-scored points.
    let z = run_json(
        d,
        &["kmeans", "p.csv", "--k", "2", "--json", "--standardize"],
        "zscore",
    );
    let mut x = clustr::data::read_matrix::<f64>(d.join("p.csv")).unwrap();
    clustr::data::columns::standardize(&mut x, clustr::data::columns::Scaling::ZScore).unwrap();
    let m = clustr::kmeans::KMeans::new(2).fit(&x.view()).unwrap();
    assert!((z["inertia"].as_f64().unwrap() - m.inertia).abs() < 1e-12);
    // Standard input as CSV; a .npy on standard input is refused in one line.
    let out = clustr_stdin(d, &["kmeans", "-", "--k", "2", "--json"], plain.as_bytes());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["inertia"], want["inertia"]);
    // /dev/stdin (a pipe here) is read as CSV too, as a shell's process substitution is.
    let out = clustr_stdin(
        d,
        &["kmeans", "/dev/stdin", "--k", "2", "--json"],
        plain.as_bytes(),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["inertia"], want["inertia"]);
    clustr::data::write_matrix(d.join("x.npy"), x.view(), &[]).unwrap();
    let before = files(d);
    let npy = std::fs::read(d.join("x.npy")).unwrap();
    let out = clustr_stdin(d, &["kmeans", "-", "--k", "2", "--labels-out", "o.csv"], &npy);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(".npy") && out.stdout.is_empty(), "{err}");
    assert_eq!(files(d), before);
}

#[test]
fn version_names_the_commit_and_features_and_completions_are_scripts() {
    let dir = tempfile::tempdir().unwrap();
    let out = clustr(dir.path(), &["--version"]);
    let v = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        v.starts_with(&format!("clustr {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
    assert!(v.contains("optional features: "), "{v}");
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef clustr"),
        ("fish", "complete -c clustr"),
    ] {
        let out = clustr(dir.path(), &["completions", shell]);
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{shell}");
        assert!(script.contains(marker), "{shell}: {marker:?} missing");
        assert!(
            script.contains("fasterpam") && script.contains("drop-columns"),
            "{shell}"
        );
    }
    let out = clustr(dir.path(), &["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}

#[test]
fn summaries_say_what_happened_and_optics_hints_at_better_settings() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let iris = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/iris.csv");
    let iris = iris.to_str().unwrap();
    // OPTICS with xi = 0.05 on iris leaves most points as noise: one hint line names the flags
    // and a radius, and that radius is a valid --eps.
    let out = clustr(
        d,
        &[
            "optics",
            iris,
            "--drop-columns",
            "target",
            "--labels-out",
            "l.csv",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let hint = err
        .lines()
        .find(|l| l.starts_with("clustr: optics: ") && l.contains("with xi extraction"))
        .expect("a hint");
    assert!(
        err.trim_end().ends_with(hint),
        "the hint comes last, after the run succeeded: {err}"
    );
    assert!(
        hint.contains("--min-cluster-size") && hint.contains("--extract dbscan --eps "),
        "{hint}"
    );
    let eps = hint
        .split("--eps ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    assert!(eps.parse::<f64>().unwrap() > 0.0, "{hint}");
    let summary = err
        .lines()
        .find(|l| l.starts_with("clustr: optics: n = 150"))
        .expect("summary");
    assert!(
        summary.contains("noise points (") && !summary.contains("loss"),
        "{summary}"
    );
    assert!(
        err.lines()
            .any(|l| l.starts_with("clustr: wrote ") && l.ends_with("l.csv")),
        "{err}"
    );
    let v = run_json(
        d,
        &[
            "optics",
            iris,
            "--drop-columns",
            "target",
            "--extract",
            "dbscan",
            "--eps",
            eps,
            "--json",
            "--quiet",
        ],
        "suggested eps",
    );
    assert!(v["n_clusters"].as_u64().unwrap() >= 2, "{v}");
    // A fit that iterates names its objective, iterations and convergence, and the silhouettes.
    let out = clustr(d, &["fasterpam", iris, "--k", "3", "--silhouette"]);
    let err = String::from_utf8_lossy(&out.stderr);
    for w in [
        "3 clusters",
        "loss (sum of distances to the medoids) ",
        "iterations (converged)",
        "silhouette 0.",
        "medoid silhouette 0.",
    ] {
        assert!(err.contains(w), "{w:?} missing from {err}");
    }
    let out = clustr(d, &["gmm", iris, "--k", "3"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mean log-likelihood") && err.contains("BIC "),
        "{err}"
    );
}

/// Each subcommand's help opens with the description the command list gives it (the
/// subcommands' arguments are built only when used; a doc comment on an argument structure
/// would replace that description).
#[test]
fn every_subcommand_help_opens_with_its_description() {
    let dir = tempfile::tempdir().unwrap();
    let top = String::from_utf8(clustr(dir.path(), &["--help"]).stdout).unwrap();
    let listed: Vec<(String, String)> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| {
            let l = l.trim();
            let (name, about) = l.split_once(' ')?;
            Some((name.to_string(), about.trim().to_string()))
        })
        .filter(|(name, _)| name != "help")
        .collect();
    assert!(listed.len() >= 25, "{top}");
    for (name, about) in listed {
        let out = clustr(dir.path(), &[&name, "--help"]);
        let help = String::from_utf8(out.stdout).unwrap();
        let first = help.lines().next().unwrap_or_default();
        assert!(
            about.starts_with(first.trim_end_matches('.')) || first.starts_with(&about),
            "{name}: {first:?} vs {about:?}"
        );
        assert!(help.contains("Usage: clustr "), "{name}: {help}");
    }
}
