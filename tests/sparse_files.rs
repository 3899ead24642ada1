//! The sparse file readers against scipy's and scikit-learn's writers
//! (tests/fixtures/make_sparse_fixtures.py): every form of one matrix reads as its dense form,
//! and malformed files are refused with their name (and line, for text).

mod common;

use clustr::data::{read_matrix, read_sparse, Csr};
use common::run_clustr;
use ndarray::Array2;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sparse")
        .join(name)
}

fn dense(name: &str) -> Array2<f64> {
    read_matrix::<f64>(fixture(name)).unwrap()
}

#[test]
fn every_form_reads_as_the_dense_matrix() {
    let expected = dense("dense.npy");
    for name in [
        "csr.npz",
        "csc.npz",
        "coo.npz",
        "csr_int64.npz",
        "csr_f32.npz",
        "general.mtx",
        "array.mtx",
        "rows.svmlight",
    ] {
        let m: Csr<f64> = read_sparse(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(m.view().to_dense(), expected, "{name}");
        // explicit zeros are not stored by any of these writers
        assert_eq!(
            m.view().nnz(),
            expected.iter().filter(|v| **v != 0.0).count(),
            "{name}"
        );
    }
    let m: Csr<f32> = read_sparse(fixture("csr.npz")).unwrap();
    assert_eq!(m.view().to_dense(), expected.mapv(|v| v as f32));
    let sym: Csr<f64> = read_sparse(fixture("symmetric.mtx")).unwrap();
    assert_eq!(sym.view().to_dense(), dense("symmetric_dense.npy"));
    let pattern: Csr<f64> = read_sparse(fixture("pattern.mtx")).unwrap();
    assert_eq!(pattern.view().to_dense(), dense("pattern_dense.npy"));
}

#[test]
fn dense_readers_take_sparse_files_within_the_memory_limit() {
    assert_eq!(
        read_matrix::<f64>(fixture("csr.npz")).unwrap(),
        dense("dense.npy")
    );
    assert_eq!(
        read_matrix::<f64>(fixture("rows.svmlight")).unwrap(),
        dense("dense.npy")
    );
}

#[test]
fn malformed_files_are_refused_naming_the_file() {
    for (name, says) in [
        ("bad_unsorted.svm", "sorted"),
        ("bad_nan.mtx", "non-finite"),
        ("bad_range.mtx", "outside"),
        ("bad_unsorted.npz", "out of order"),
    ] {
        let e = read_sparse::<f64>(fixture(name)).unwrap_err().to_string();
        assert!(e.contains(name) && e.contains(says), "{name}: {e}");
    }
    // a truncated archive, a tampered byte (CRC), a text file named .npz
    let bytes = std::fs::read(fixture("csc.npz")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.npz");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    assert!(read_sparse::<f64>(&cut).is_err());
    let mut tampered = bytes.clone();
    let at = tampered.windows(6).position(|w| w == b"\x93NUMPY").unwrap() + 130; // (in the first member's values)
    tampered[at] ^= 0x40;
    let t = dir.path().join("tampered.npz");
    std::fs::write(&t, &tampered).unwrap();
    let e = read_sparse::<f64>(&t).unwrap_err().to_string();
    assert!(
        e.contains("CRC") || e.contains("npy") || e.contains("member"),
        "{e}"
    );
    let text = dir.path().join("text.npz");
    std::fs::write(&text, "a,b\n1,2\n").unwrap();
    assert!(read_sparse::<f64>(&text).unwrap_err().to_string().contains("zip"));
}

/// `clustr kmeans` and `clustr minibatch-kmeans` fit a sparse file as sparse rows: the same
/// labels and inertia as for the same matrix stored dense.
#[test]
fn the_cli_fits_sparse_files_as_their_dense_form() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in ["kmeans", "minibatch-kmeans"] {
        let fit = |input: &str| {
            let labels = format!("{cmd}-{input}.csv");
            let path = fixture(input);
            let mut args = vec![cmd, path.to_str().unwrap(), "--k", "2", "--seed", "3", "--json"];
            if cmd != "kmeans" {
                args.extend(["--batch-size", "4"]);
            }
            args.extend(["--labels-out", &labels]);
            let report: serde_json::Value = serde_json::from_slice(&run_clustr(dir.path(), &args)).unwrap();
            (
                std::fs::read_to_string(dir.path().join(labels)).unwrap(),
                report["inertia"].as_f64().unwrap(),
            )
        };
        let (dense_labels, dense_inertia) = fit("dense.npy");
        for input in ["csr.npz", "coo.npz", "rows.svmlight"] {
            let (labels, inertia) = fit(input);
            assert_eq!(labels, dense_labels, "{cmd} {input}");
            assert!(
                (inertia - dense_inertia).abs() <= 1e-9 * dense_inertia,
                "{cmd} {input}"
            );
        }
    }
}

/// `clustr dbscan`, `optics`, `hdbscan` and `single-linkage` fit a sparse file as sparse rows (euclidean,
/// manhattan, cosine): the labels of the same matrix stored dense.
#[test]
fn the_cli_density_methods_fit_sparse_files_as_their_dense_form() {
    let dir = tempfile::tempdir().unwrap();
    let settings: [(&str, &[&str]); 4] = [
        ("dbscan", &["--eps", "3", "--min-samples", "2"]),
        ("single-linkage", &["--n-clusters", "3"]),
        ("optics", &["--min-samples", "2", "--min-cluster-size", "2"]),
        (
            "hdbscan",
            &[
                "--min-cluster-size",
                "2",
                "--min-samples",
                "1",
                "--allow-single-cluster",
            ],
        ),
    ];
    for (cmd, args) in settings {
        for metric in ["euclidean", "manhattan"] {
            let fit = |input: &str| {
                let labels = format!("{cmd}-{metric}-{input}.csv");
                let path = fixture(input);
                let mut all = vec![cmd, path.to_str().unwrap(), "--metric", metric];
                all.extend(args.iter());
                all.extend(["--labels-out", &labels]);
                run_clustr(dir.path(), &all);
                std::fs::read_to_string(dir.path().join(labels)).unwrap()
            };
            let dense_labels = fit("dense.npy");
            assert!(
                dense_labels.lines().any(|l| l.trim() == "0"),
                "{cmd} {metric}: no cluster"
            );
            for input in ["csr.npz", "coo.npz", "rows.svmlight"] {
                assert_eq!(fit(input), dense_labels, "{cmd} {metric} {input}");
            }
        }
    }
}

/// The k-medoids commands fit a sparse file as sparse rows (the swap methods on their distance
/// matrix, CLARA and CLARANS with distances computed when needed): the medoids, labels and
/// loss of the same matrix stored dense.
#[test]
fn the_cli_kmedoids_methods_fit_sparse_files_as_their_dense_form() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in ["fasterpam", "pam", "fasterclara", "clarans"] {
        for metric in ["euclidean", "manhattan", "cosine"] {
            let fit = |input: &str| {
                let labels = format!("{cmd}-{metric}-{input}.csv");
                let input = fixture(input);
                let out = run_clustr(
                    dir.path(),
                    &[
                        cmd,
                        input.to_str().unwrap(),
                        "--k",
                        "2",
                        "--seed",
                        "1",
                        "--metric",
                        metric,
                    ]
                    .into_iter()
                    .chain(["--json", "--labels-out", &labels])
                    .collect::<Vec<_>>(),
                );
                let r: serde_json::Value = serde_json::from_slice(&out).unwrap();
                let labels = std::fs::read_to_string(dir.path().join(labels)).unwrap();
                (r["medoids"].clone(), labels, r["loss"].as_f64().unwrap())
            };
            let dense = fit("dense.npy");
            assert!(
                dense.1.lines().any(|l| l.trim() == "1"),
                "{cmd} {metric}: one cluster"
            );
            for input in ["csr.npz", "rows.svmlight"] {
                let (medoids, labels, loss) = fit(input);
                assert_eq!(
                    (&medoids, &labels),
                    (&dense.0, &dense.1),
                    "{cmd} {metric} {input}"
                );
                assert!(
                    (loss - dense.2).abs() <= 1e-12 * (1.0 + dense.2),
                    "{cmd} {metric} {input}"
                );
            }
        }
    }
}

/// `clustr predict` assigns a sparse file as sparse rows with a k-means or mini-batch model
/// (fitted on sparse or dense rows): the labels and distances of the same rows stored dense.
#[test]
fn predict_assigns_sparse_files_as_their_dense_form() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let clustr = |args: &[&str]| {
        run_clustr(d, args);
    };
    let csr = fixture("csr.npz");
    let (csr, dense) = (csr.to_str().unwrap(), fixture("dense.npy"));
    clustr(&[
        "kmeans",
        csr,
        "--k",
        "2",
        "--seed",
        "3",
        "--model-out",
        "km.model",
    ]);
    clustr(&[
        "minibatch-kmeans",
        csr,
        "--k",
        "2",
        "--seed",
        "3",
        "--batch-size",
        "4",
        "--model-out",
        "mb.model",
    ]);
    for model in ["km.model", "mb.model"] {
        let mut got = Vec::new();
        for input in [csr, dense.to_str().unwrap()] {
            let (labels, dist) = (format!("{model}.labels.csv"), format!("{model}.t.npy"));
            clustr(&[
                "predict",
                model,
                input,
                "--labels-out",
                &labels,
                "--transform-out",
                &dist,
            ]);
            got.push((
                std::fs::read_to_string(d.join(&labels)).unwrap(),
                clustr::data::read_matrix::<f64>(d.join(&dist)).unwrap(),
            ));
        }
        assert_eq!(got[0].0, got[1].0, "{model}");
        assert!(got[0].0.lines().any(|l| l.trim() == "1"), "{model}: one cluster");
        for (a, b) in got[0].1.iter().zip(&got[1].1) {
            assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "{model}: {a} vs {b}");
        }
    }
}
