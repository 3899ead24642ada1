//! `--model-out` and `clustr predict`: every subcommand that writes a model, the model applied
//! to the training points gives the fit's labels back; the outputs a model cannot give, a
//! model on dissimilarities, foreign files and outputs naming inputs are refused (exit 2, one
//! line, nothing written).

use std::path::Path;
use std::process::{Command, Output};

/// Eight 2-d points in two groups.
const TWO_GROUPS: &str = "0,0\n0,1\n1,0\n1,1\n10,10\n10,11\n11,10\n11,11\n";

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
    std::fs::write(d.join("x.csv"), TWO_GROUPS).unwrap();
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

/// Every model type saved by the library, loaded by `clustr predict` in a new process and
/// applied to held-out points: the same labels as the in-process model (GMM probabilities
/// within 1e-12, distances equal).
#[test]
fn a_model_loaded_in_a_new_process_predicts_as_the_fitted_one() {
    use clustr::density::Dbscan;
    use clustr::kernel::{IpRffMkpkm, PowerKMeans, RffKpkm};
    use clustr::kmeans::{KMeans, MiniBatchKMeans};
    use clustr::kmedoids::KMedoids;
    use clustr::mixture::GaussianMixture;
    use clustr::model_file::SaveLoad;
    use clustr::{Fit, MetricKind, Predict};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let blobs = |n, seed| {
        clustr::datasets::Blobs::new(n, 4)
            .n_features(3)
            .cluster_std(1.3)
            .seed(seed)
            .generate()
            .unwrap()
            .data
    };
    // (held-out points from the same clusters: every fifth row)
    let all = blobs(1900, 7);
    let split = |keep: fn(usize) -> bool| {
        let rows: Vec<usize> = (0..all.nrows()).filter(|&i| keep(i)).collect();
        all.select(ndarray::Axis(0), &rows)
    };
    let (x, held_out) = (split(|i| i % 5 != 0), split(|i| i % 5 == 0));
    ndarray_npy::write_npy(d.join("new.npy"), &held_out).unwrap();
    let (xv, nv) = (x.view(), held_out.view());
    let predicted = |name: &str, extra: &[&str]| -> Vec<i64> {
        let mut args = vec!["predict", name, "new.npy", "--labels-out", "l.npy", "--quiet"];
        args.extend(extra);
        ok(d, &args);
        labels(d, "l.npy")
    };
    let distances = || -> ndarray::Array2<f64> { ndarray_npy::read_npy(d.join("t.npy")).unwrap() };
    let t = ["--transform-out", "t.npy"];

    let m = KMeans::new(5).seed(1).fit(&xv).unwrap();
    m.save(&d.join("km.json")).unwrap();
    assert_eq!(predicted("km.json", &t), m.predict(&nv).unwrap());
    assert_eq!(distances(), m.transform(nv).unwrap());

    let m = MiniBatchKMeans::new(5).batch_size(128).seed(1).fit(&xv).unwrap();
    m.save(&d.join("mb.json")).unwrap();
    assert_eq!(predicted("mb.json", &t), m.predict(&nv).unwrap());
    assert_eq!(distances(), m.transform(nv).unwrap());

    let m = GaussianMixture::new(4).seed(1).fit(&xv).unwrap();
    m.save(&d.join("gmm.json")).unwrap();
    assert_eq!(
        predicted("gmm.json", &["--proba-out", "p.npy"]),
        m.predict(&nv).unwrap()
    );
    let p: ndarray::Array2<f64> = ndarray_npy::read_npy(d.join("p.npy")).unwrap();
    let expected = m.predict_proba(nv).unwrap();
    assert!(p.iter().zip(&expected).all(|(a, b)| (a - b).abs() <= 1e-12));

    let fit = KMedoids::fasterpam(4)
        .seed(1)
        .fit_points(xv, &MetricKind::Manhattan)
        .unwrap();
    let m = fit.predictor(xv, &MetricKind::Manhattan).unwrap();
    m.save(&d.join("kmed.json")).unwrap();
    assert_eq!(predicted("kmed.json", &t), m.predict(&nv).unwrap());
    assert_eq!(distances(), m.transform(nv).unwrap());

    let params = Dbscan::new(0.5).min_samples(6);
    let m = params.fit(&xv).unwrap().predictor(xv, &params).unwrap();
    m.save(&d.join("db.json")).unwrap();
    let l = predicted("db.json", &[]);
    assert_eq!(l, m.predict(&nv).unwrap());
    let noise = l.iter().filter(|&&v| v == -1).count();
    assert!(noise > 0 && noise < l.len(), "{noise} of {} noise", l.len());

    let m = PowerKMeans::new(4).seed(1).fit(&xv).unwrap();
    m.save(&d.join("pk.json")).unwrap();
    assert_eq!(predicted("pk.json", &t), m.predict(nv).unwrap());
    assert_eq!(distances(), m.transform(nv).unwrap());

    let m = RffKpkm::new(4).n_features(300).seed(1).fit(&xv).unwrap();
    m.save(&d.join("rff.json")).unwrap();
    assert_eq!(predicted("rff.json", &[]), m.predict(nv).unwrap());

    let m = IpRffMkpkm::new(4).n_features(100).seed(1).fit(&xv).unwrap();
    m.save(&d.join("ip.json")).unwrap();
    assert_eq!(predicted("ip.json", &t), m.predict(nv).unwrap());
    assert_eq!(distances(), m.transform(nv).unwrap());
}

/// Issue #38: a model file is validated field by field on load, as strictly as a fit validates
/// its input; points beyond the range the fit accepts are refused by predict as by the fit;
/// a model file is read within `--max-memory`. Each: exit 2, one line, nothing written.
#[test]
fn tampered_models_far_points_and_large_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("x.csv"), TWO_GROUPS).unwrap();
    std::fs::write(d.join("far.csv"), "1e160,0\n").unwrap();
    std::fs::write(d.join("far200.csv"), "1e200,0\n").unwrap();
    for (sub, extra) in [
        ("kmeans", &["--k", "2"][..]),
        ("gmm", &["--k", "2"][..]),
        ("fasterpam", &["--k", "2"][..]),
        ("dbscan", &["--eps", "2", "--min-samples", "2"][..]),
    ] {
        let model = format!("{sub}.json");
        let mut args = vec![sub, "x.csv", "--model-out", &model, "--quiet"];
        args.extend(extra);
        ok(d, &args);
    }
    // Far but finite points: refused as the fit refuses them (no NaN probabilities, no
    // infinite distances, no arbitrary label).
    refused(
        d,
        &["predict", "gmm.json", "far.csv", "--proba-out", "p.npy"],
        "rescale",
        &["p.npy"],
    );
    for m in ["kmeans.json", "fasterpam.json"] {
        refused(
            d,
            &["predict", m, "far200.csv", "--transform-out", "t.npy"],
            "rescale",
            &["t.npy"],
        );
    }
    refused(
        d,
        &["predict", "dbscan.json", "far200.csv", "--labels-out", "l.npy"],
        "rescale",
        &["l.npy"],
    );
    // Tampered fields.
    let text = |m: &str| std::fs::read_to_string(d.join(m)).unwrap();
    let set_array = |m: &str, field: &str, data: &str| {
        let t = text(m);
        let at = t.find(&format!("\"{field}\":")).unwrap();
        let start = at + t[at..].find("\"data\":[").unwrap() + "\"data\":[".len();
        let end = start + t[start..].find(']').unwrap();
        format!("{}{data}{}", &t[..start], &t[end..])
    };
    let core_count = {
        let t = text("dbscan.json");
        let at = t.find("\"core_labels\":").unwrap();
        let start = at + t[at..].find("\"data\":[").unwrap() + "\"data\":[".len();
        t[start..start + t[start..].find(']').unwrap()].split(',').count()
    };
    // The core labels with the first replaced.
    let labels = |first: &str| {
        std::iter::once(first)
            .chain(std::iter::repeat_n("0", core_count - 1))
            .collect::<Vec<_>>()
            .join(",")
    };
    let cases = [
        (
            "dbscan",
            set_array("dbscan.json", "core_labels", &labels("-7")),
            "label -7",
        ),
        (
            "dbscan",
            set_array("dbscan.json", "core_labels", &labels("0.5")),
            "not a int64 value",
        ),
        (
            "kmeans",
            set_array("kmeans.json", "centers", "1e300,0,0,0"),
            "rescale",
        ),
        (
            "fasterpam",
            set_array("fasterpam.json", "medoids", "1e300,0,0,0"),
            "rescale",
        ),
        (
            "kmeans",
            set_array("kmeans.json", "centers", "1e39,0,0,0").replace("float64", "float32"),
            "not a float32 value",
        ),
        (
            "gmm",
            set_array("gmm.json", "covariances", "-1,0,0,-1,1,0,0,1"),
            "positive definite",
        ),
    ];
    for (i, (sub, content, needle)) in cases.iter().enumerate() {
        let name = format!("tampered{i}.json");
        std::fs::write(d.join(&name), content).unwrap();
        refused(
            d,
            &["predict", &name, "x.csv", "--labels-out", "l.npy"],
            needle,
            &["l.npy"],
        );
        let err = String::from_utf8_lossy(&clustr(d, &["predict", &name, "x.csv"]).stderr).to_string();
        assert!(!err.contains("fitting"), "{sub}: {err}");
    }
    // Reading within --max-memory: a 100 MB file against 300M is refused from its size, a
    // device without one while reading, before the file is read whole.
    let big = std::fs::File::create(d.join("big.json")).unwrap();
    big.set_len(100 << 20).unwrap();
    refused(
        d,
        &["predict", "big.json", "x.csv", "--max-memory", "300M"],
        "only 300.0 MiB is allowed",
        &[],
    );
    refused(
        d,
        &["predict", "/dev/zero", "x.csv", "--max-memory", "300M"],
        "at least",
        &[],
    );
}

/// HDBSCAN: `--model-out` and `clustr predict` give the library's approximate_predict and
/// membership vectors, `--membership-out` its all-points membership vectors; several
/// `--min-cluster-size` values give each value's own fit (same min_samples) from one tree;
/// what needs one value or the points is refused.
#[test]
fn hdbscan_models_soft_clustering_and_several_min_cluster_sizes() {
    use clustr::density::Hdbscan;
    use clustr::Fit;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = clustr::datasets::Blobs::new(800, 4)
        .seed(5)
        .generate()
        .unwrap()
        .data;
    let x = ndarray::concatenate![
        ndarray::Axis(0),
        data,
        ndarray::array![[40.0, 40.0], [-40.0, 3.0]]
    ];
    let new = ndarray::array![[0.0, 0.0], [100.0, 100.0], [x[[3, 0]], x[[3, 1]]]];
    ndarray_npy::write_npy(d.join("x.npy"), &x).unwrap();
    ndarray_npy::write_npy(d.join("new.npy"), &new).unwrap();
    ok(
        d,
        &[
            "hdbscan",
            "x.npy",
            "--min-cluster-size",
            "15",
            "--model-out",
            "h.json",
            "--membership-out",
            "all.npy",
            "--quiet",
        ],
    );
    ok(
        d,
        &[
            "predict",
            "h.json",
            "new.npy",
            "--labels-out",
            "l.npy",
            "--proba-out",
            "p.npy",
            "--quiet",
        ],
    );
    let h = Hdbscan::new(15);
    let predictor = h.fit(&x.view()).unwrap().predictor(x.view(), &h).unwrap();
    let want = predictor.approximate_predict(new.view()).unwrap();
    assert_eq!(labels(d, "l.npy"), want.labels);
    assert_eq!(want.labels[1], -1);
    let read = |name: &str| -> ndarray::Array2<f64> { ndarray_npy::read_npy(d.join(name)).unwrap() };
    assert_eq!(read("p.npy"), predictor.membership_vectors(new.view()).unwrap());
    assert_eq!(
        read("all.npy"),
        predictor.all_points_membership_vectors().unwrap()
    );
    assert!(predictor.n_clusters() >= 2);

    ok(
        d,
        &[
            "hdbscan",
            "x.npy",
            "--min-cluster-size",
            "8,15,40",
            "--labels-out",
            "m.npy",
            "--quiet",
        ],
    );
    for v in [8, 15, 40] {
        let fit = Hdbscan::new(v).min_samples(8).fit(&x.view()).unwrap();
        assert_eq!(
            labels(d, &format!("m.mcs{v}.npy")),
            fit.labels,
            "min_cluster_size {v}"
        );
    }
    assert!(!d.join("m.npy").exists());
    refused(
        d,
        &[
            "hdbscan",
            "x.npy",
            "--min-cluster-size",
            "8,15",
            "--model-out",
            "z.json",
        ],
        "--model-out",
        &["z.json"],
    );
    refused(
        d,
        &[
            "hdbscan",
            "x.npy",
            "--min-cluster-size",
            "8,1",
            "--labels-out",
            "z.npy",
        ],
        "min_cluster_size",
        &["z.mcs8.npy"],
    );
    refused(
        d,
        &["hdbscan", "x.npy", "--precomputed", "--model-out", "z.json"],
        "--model-out",
        &["z.json"],
    );
    // A value's labels file that would replace the input, or another value's: refused first.
    std::fs::copy(d.join("x.npy"), d.join("w.mcs8.npy")).unwrap();
    let before = std::fs::read(d.join("w.mcs8.npy")).unwrap();
    refused(
        d,
        &[
            "hdbscan",
            "w.mcs8.npy",
            "--min-cluster-size",
            "8,15",
            "--labels-out",
            "w.npy",
        ],
        "input",
        &["w.mcs15.npy"],
    );
    assert_eq!(std::fs::read(d.join("w.mcs8.npy")).unwrap(), before);
    refused(
        d,
        &[
            "hdbscan",
            "x.npy",
            "--min-cluster-size",
            "8,8",
            "--labels-out",
            "v.npy",
        ],
        "--labels-out",
        &["v.mcs8.npy"],
    );
}
