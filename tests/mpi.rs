//! The real distributed run (issue #10, feature `mpi`): `mpirun -n 2 clustr kmeans|gmm|
//! minibatch-kmeans|fasterclara|rff-kpkm --distributed` on a .npy file or a folder of .npy
//! shards gives the labels, objective and iterations of one process.
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

/// Runs `args` (a subcommand and its input, then options) on one process and under `mpirun
/// -n 2 ... --distributed` in `d`, there on `input_two` (a folder of shards of the same rows,
/// say): the same labels, iterations and objective (1e-12 relative).
fn one_equals_two(d: &Path, args: &[&str], input_two: &str) {
    let mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2"];
    let one = clustr_json(d, &[], &[args, &["--labels-out", "one.npy"]].concat());
    let two = clustr_json(
        d,
        &mpirun,
        &[
            &[args[0], input_two],
            &args[2..],
            &["--distributed", "--labels-out", "two.npy"],
        ]
        .concat(),
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
    // The same rows as three shards, cut elsewhere than the two processes' halves.
    std::fs::create_dir(d.join("shards")).unwrap();
    for (i, r) in [0..10_000, 10_000..41_000, 41_000..50_001]
        .into_iter()
        .enumerate()
    {
        let part = ds.data.slice(ndarray::s![r, ..]);
        clustr::data::write_matrix(d.join(format!("shards/part-{i}.npy")), part, &[]).unwrap();
    }
    for (init, input) in [("k-means++", "x.npy"), ("random", "shards")] {
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
            input,
        );
    }
    let common = ["--threads", "1", "--json", "--quiet"];
    for args in [
        &[
            "minibatch-kmeans",
            "x.npy",
            "--k",
            "8",
            "--batch-size",
            "512",
            "--seed",
            "1",
        ][..],
        &["fasterclara", "x.npy", "--k", "8", "--seed", "2"],
        &[
            "rff-kpkm",
            "x.npy",
            "--k",
            "8",
            "--n-features",
            "100",
            "--max-iter",
            "30",
        ],
    ] {
        one_equals_two(d, &[args, &common].concat(), "shards");
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
        "x.npy",
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
