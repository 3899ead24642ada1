//! `--model-out` and `clustr predict`: every subcommand that writes a model, the model applied
//! to the training points gives the fit's labels back; the outputs a model cannot give, a
//! model on dissimilarities, foreign files and outputs naming inputs are refused (exit 2, one
//! line, nothing written).

use std::path::Path;
use std::process::{Command, Output};

fn clustr(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clustr"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

fn ok(dir: &Path, args: &[&str]) {
    let out = clustr(dir, args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Exit 2 with one line naming `needle`, and none of `outputs` created.
fn refused(dir: &Path, args: &[&str], needle: &str, outputs: &[&str]) {
    let out = clustr(dir, args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    for o in outputs {
        assert!(!dir.join(o).exists(), "{args:?} wrote {o}");
    }
}

fn labels(dir: &Path, name: &str) -> Vec<i64> {
    let a: ndarray::Array1<i32> = ndarray_npy::read_npy(dir.join(name)).unwrap();
    a.iter().map(|&v| v as i64).collect()
}

#[test]
fn a_saved_model_gives_the_fit_labels_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = clustr::datasets::Blobs::new(600, 4)
        .n_features(3)
        .seed(3)
        .generate()
        .unwrap()
        .data;
    ndarray_npy::write_npy(d.join("x.npy"), &x).unwrap();
    for (name, args) in [
        ("kmeans", vec!["kmeans", "--k", "4"]),
        ("kmeans32", vec!["kmeans", "--k", "4", "--dtype", "f32"]),
        (
            "minibatch",
            vec!["minibatch-kmeans", "--k", "4", "--batch-size", "128"],
        ),
        ("gmm", vec!["gmm", "--k", "4"]),
        ("fasterpam", vec!["fasterpam", "--k", "4"]),
        ("pam-manhattan", vec!["pam", "--k", "4", "--metric", "manhattan"]),
        ("fasterclara", vec!["fasterclara", "--k", "4"]),
        ("clarans", vec!["clarans", "--k", "4"]),
        ("power", vec!["power-kmeans", "--k", "4"]),
        ("rff", vec!["rff-kpkm", "--k", "4", "--n-features", "200"]),
    ] {
        let (model, fit_labels) = (format!("{name}.json"), format!("{name}.npy"));
        let mut fit = args.clone();
        fit.extend([
            "x.npy",
            "--model-out",
            &model,
            "--labels-out",
            &fit_labels,
            "--quiet",
        ]);
        ok(d, &fit);
        let again = format!("{name}-again.npy");
        ok(
            d,
            &["predict", &model, "x.npy", "--labels-out", &again, "--quiet"],
        );
        assert_eq!(labels(d, &again), labels(d, &fit_labels), "{name}");
    }
    // DBSCAN: core points keep their cluster, noise stays noise (border points join the
    // nearest core's cluster, which may be another than the expansion's).
    ok(
        d,
        &[
            "dbscan",
            "x.npy",
            "--eps",
            "0.8",
            "--model-out",
            "db.json",
            "--labels-out",
            "db.npy",
            "--quiet",
        ],
    );
    ok(
        d,
        &[
            "predict",
            "db.json",
            "x.npy",
            "--labels-out",
            "db-again.npy",
            "--quiet",
        ],
    );
    let (fit, again) = (labels(d, "db.npy"), labels(d, "db-again.npy"));
    let same = fit.iter().zip(&again).filter(|(a, b)| a == b).count();
    assert!(same >= fit.len() * 98 / 100, "{same} of {}", fit.len());
    assert!(fit.iter().zip(&again).all(|(&f, &a)| f != -1 || a == -1));
    // PPP's model is its validating GMM; probabilities and distances where the model has them.
    ok(
        d,
        &[
            "ppp",
            "x.npy",
            "--k-max",
            "5",
            "--seeds",
            "3",
            "--model-out",
            "ppp.json",
            "--quiet",
        ],
    );
    ok(
        d,
        &["predict", "ppp.json", "x.npy", "--proba-out", "p.npy", "--quiet"],
    );
    let p: ndarray::Array2<f64> = ndarray_npy::read_npy(d.join("p.npy")).unwrap();
    assert!(p.rows().into_iter().all(|r| (r.sum() - 1.0).abs() < 1e-9));
    ok(
        d,
        &[
            "predict",
            "kmeans.json",
            "x.npy",
            "--transform-out",
            "t.npy",
            "--quiet",
        ],
    );
    let t: ndarray::Array2<f64> = ndarray_npy::read_npy(d.join("t.npy")).unwrap();
    assert_eq!(t.dim(), (600, 4));
    let best: Vec<i64> = clustr::linalg::argmin_rows(&t);
    assert_eq!(best, labels(d, "kmeans.npy"));
}

#[test]
fn what_a_model_cannot_do_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("x.csv"),
        "0,0\n0,1\n1,0\n1,1\n10,10\n10,11\n11,10\n11,11\n",
    )
    .unwrap();
    std::fs::write(d.join("x3.csv"), "0,0,1\n0,1,1\n").unwrap();
    ok(
        d,
        &["kmeans", "x.csv", "--k", "2", "--model-out", "km.json", "--quiet"],
    );
    ok(
        d,
        &[
            "dbscan",
            "x.csv",
            "--eps",
            "2",
            "--min-samples",
            "2",
            "--model-out",
            "db.json",
            "--quiet",
        ],
    );
    let km = std::fs::read(d.join("km.json")).unwrap();
    refused(
        d,
        &["predict", "km.json", "x.csv", "--proba-out", "p.csv"],
        "no probabilities",
        &["p.csv"],
    );
    refused(
        d,
        &["predict", "db.json", "x.csv", "--transform-out", "t.csv"],
        "no distances",
        &["t.csv"],
    );
    refused(
        d,
        &["predict", "km.json", "x3.csv", "--labels-out", "l.csv"],
        "number of features",
        &["l.csv"],
    );
    refused(
        d,
        &["predict", "x.csv", "x.csv", "--labels-out", "l.csv"],
        "not a clustr model file",
        &["l.csv"],
    );
    // An output naming an input (the model itself) is refused before any work.
    refused(
        d,
        &["predict", "km.json", "x.csv", "--labels-out", "./km.json"],
        "km.json",
        &[],
    );
    assert_eq!(std::fs::read(d.join("km.json")).unwrap(), km);
    refused(
        d,
        &["kmeans", "x.csv", "--k", "2", "--model-out", "x.csv"],
        "x.csv",
        &[],
    );
    // A fit on dissimilarities has no coordinates for new points.
    std::fs::write(d.join("dm.csv"), "0,1,2\n1,0,3\n2,3,0\n").unwrap();
    refused(
        d,
        &[
            "fasterpam",
            "dm.csv",
            "--k",
            "2",
            "--precomputed",
            "--model-out",
            "m.json",
        ],
        "--model-out",
        &["m.json"],
    );
    // A model file of a later format version.
    let text = String::from_utf8(km).unwrap();
    std::fs::write(
        d.join("v9.json"),
        text.replace("\"format_version\":1", "\"format_version\":9"),
    )
    .unwrap();
    refused(
        d,
        &["predict", "v9.json", "x.csv", "--labels-out", "l.csv"],
        "version 9",
        &["l.csv"],
    );
}
