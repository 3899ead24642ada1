//! The real distributed run (issue #10, feature `mpi`): `mpirun -n 2 clustr kmeans|gmm
//! --distributed` on a .npy file gives the labels, objective and iterations of one process.
//! `.ci/run` installs OpenMPI and runs this; the default test command does not build it.
#![cfg(feature = "mpi")]

use std::path::Path;
use std::process::Command;

fn clustr_json(dir: &Path, launcher: &[&str], args: &[&str]) -> serde_json::Value {
    let mut cmd = match launcher.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(env!("CARGO_BIN_EXE_clustr"));
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_clustr")),
    };
    let out = cmd.current_dir(dir).args(args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{launcher:?} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs `args` on one process and under `mpirun -n 2 ... --distributed` in `d`: the same
/// labels, iterations and objective (1e-12 relative).
fn one_equals_two(d: &Path, args: &[&str]) {
    let mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2"];
    let one = clustr_json(d, &[], &[args, &["--labels-out", "one.npy"]].concat());
    let two = clustr_json(
        d,
        &mpirun,
        &[args, &["--distributed", "--labels-out", "two.npy"]].concat(),
    );
    assert_eq!(two["processes"], 2, "{two}");
    assert_eq!(one["n"], two["n"], "{args:?}");
    assert_eq!(one["n_iter"], two["n_iter"], "{args:?}");
    let (a, b) = (one["loss"].as_f64().unwrap(), two["loss"].as_f64().unwrap());
    assert!((a - b).abs() <= 1e-12 * a.abs(), "{args:?}: objective {a} vs {b}");
    let read = |f: &str| clustr::data::read_labels(d.join(f)).unwrap();
    assert_eq!(read("one.npy"), read("two.npy"), "{args:?}");
}

#[test]
fn mpirun_two_processes_equal_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ds = clustr::datasets::Blobs::new(50_001, 8)
        .n_features(16)
        .cluster_std(3.0)
        .seed(2)
        .generate()
        .unwrap();
    clustr::data::write_matrix(d.join("x.npy"), ds.data.view(), &[]).unwrap();
    for init in ["k-means++", "random"] {
        one_equals_two(
            d,
            &[
                "kmeans",
                "x.npy",
                "--k",
                "8",
                "--init",
                init,
                "--seed",
                "3",
                "--threads",
                "1",
                "--json",
                "--quiet",
            ],
        );
    }
    one_equals_two(
        d,
        &[
            "gmm",
            "x.npy",
            "--k",
            "8",
            "--covariance",
            "diag",
            "--threads",
            "1",
            "--json",
            "--quiet",
        ],
    );
    // Without mpirun a --distributed run is one process of one: the same result.
    let alone = clustr_json(
        d,
        &[],
        &[
            "kmeans",
            "x.npy",
            "--k",
            "8",
            "--distributed",
            "--json",
            "--quiet",
        ],
    );
    assert_eq!(alone["processes"], 1);
}
