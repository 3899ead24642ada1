//! The bad-input matrix through the library (issue #9): the cases of `tests/bad_inputs.rs`
//! given to every described method's `fit` (`clustr::methods::METHODS`) and to the readers return `Err` with the right variant
//! (and the row, column, line or parameter it names), never a panic; the inputs with a
//! documented result (a zero-variance column, a single point, k above the distinct points)
//! return `Ok` or a parameter error. The number of cases is printed.

mod common;
use clustr::data::read_matrix;
use clustr::density::{Dbscan, Optics};
use clustr::methods::{Method, Size, METHODS};
use clustr::{DenseMatrix, Error, Fit, Result};
use ndarray::{array, Array2};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Whether an error is the expected one.
type IsRight = fn(&Error) -> bool;

/// Every method of the description that fits points (all but MagmaClust), with its one fit
/// call: a method added to `clustr::methods::METHODS` is in this matrix without an edit.
fn algorithms() -> Vec<&'static Method> {
    let all: Vec<&Method> = METHODS.iter().filter(|m| m.fit.is_some()).collect();
    assert!(all.len() + 1 >= METHODS.len(), "only MagmaClust fits no points");
    all
}

/// Eight distinct 2-d points in two groups.
fn good() -> Array2<f64> {
    array![
        [0., 0.],
        [0., 1.],
        [1., 0.],
        [1., 1.],
        [10., 10.],
        [10., 11.],
        [11., 10.],
        [11., 11.]
    ]
}

fn with(v: f64, row: usize, col: usize) -> Array2<f64> {
    let mut x = good();
    x[[row, col]] = v;
    x
}

/// What a case must return.
enum Expect {
    Empty,
    NonFinite(usize, usize),
    Param(&'static str),
    /// A documented result, or a parameter error.
    OkOrParam,
}

fn judge(r: std::thread::Result<Result<()>>, expect: &Expect) -> Option<String> {
    let r = match r {
        Err(_) => return Some("panicked".into()),
        Ok(r) => r,
    };
    let ok = match (expect, &r) {
        (Expect::Empty, Err(Error::EmptyInput { .. })) => true,
        (Expect::NonFinite(i, j), Err(Error::NonFinite { row, col, .. })) => (row, col) == (i, j),
        (Expect::Param(p), Err(Error::InvalidParameter { name, .. })) => name == p,
        (Expect::OkOrParam, Ok(()) | Err(Error::InvalidParameter { .. })) => true,
        _ => false,
    };
    (!ok).then(|| format!("got {r:?}"))
}

#[test]
fn every_fit_returns_the_right_error() {
    let cases: Vec<(&str, Array2<f64>, usize, Expect)> = vec![
        ("empty", Array2::zeros((0, 2)), 2, Expect::Empty),
        ("no columns", Array2::zeros((5, 0)), 2, Expect::Empty),
        ("NaN", with(f64::NAN, 2, 1), 2, Expect::NonFinite(2, 1)),
        ("inf", with(f64::INFINITY, 7, 0), 2, Expect::NonFinite(7, 0)),
        ("-inf", with(f64::NEG_INFINITY, 0, 1), 2, Expect::NonFinite(0, 1)),
        ("k = 0", good(), 0, Expect::Param("k")),
        ("k > n", good(), 9, Expect::Param("k")),
        (
            "zero-variance column",
            good().mapv(|v| v) * array![[1.0, 0.0]] + array![[0.0, 7.0]],
            2,
            Expect::OkOrParam,
        ),
        ("single point", array![[3.0, 4.0]], 1, Expect::OkOrParam),
        (
            "k > distinct points",
            array![[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [2.0, 2.0], [2.0, 2.0]],
            3,
            Expect::OkOrParam,
        ),
    ];
    let mut failures = Vec::new();
    let mut count = 0;
    for method in algorithms() {
        let (name, fit) = (method.name, method.fit.expect("fits points"));
        let density = method.size != Size::Clusters;
        for (case, x, k, expect) in &cases {
            let expect = match (density, case, expect) {
                // k stands for min_samples (HDBSCAN: min_cluster_size): 0 is refused (OPTICS and
                // HDBSCAN clamp to 2), above n is fine.
                (true, &"k = 0", _) if name == "dbscan" => &Expect::Param("min_samples"),
                (true, &"k = 0" | &"k > n", _) => &Expect::OkOrParam,
                // Single linkage's k is its cut's n_clusters.
                (false, &"k = 0" | &"k > n", _) if name == "single-linkage" => &Expect::Param("n_clusters"),
                // PPP's k is the top of its k range.
                (false, &"k = 0", _) if name == "ppp" => &Expect::Param("k range"),
                _ => expect,
            };
            count += 1;
            let r = catch_unwind(AssertUnwindSafe(|| fit(x.view(), *k).map(drop)));
            if let Some(why) = judge(r, expect) {
                failures.push(format!("{name} / {case}: {why}"));
            }
        }
    }
    // Density parameters.
    let x = good();
    for (case, r, p) in [
        (
            "dbscan eps < 0",
            Dbscan::new(-1.0).fit(&x.view()).map(drop),
            "eps",
        ),
        (
            "dbscan eps = NaN",
            Dbscan::new(f64::NAN).fit(&x.view()).map(drop),
            "eps",
        ),
        (
            "optics max_eps < 0",
            Optics::new(2).max_eps(-1.0).fit(&x.view()).map(drop),
            "max_eps",
        ),
    ] {
        count += 1;
        if let Some(why) = judge(Ok(r), &Expect::Param(p)) {
            failures.push(format!("{case}: {why}"));
        }
    }
    // Precomputed dissimilarities.
    let matrices: [(&str, Array2<f64>, IsRight); 4] = [
        ("non-square", Array2::zeros((2, 3)), |e| {
            matches!(e, Error::NotSquare { rows: 2, cols: 3 })
        }),
        (
            "asymmetric",
            array![[0., 1., 2.], [1., 0., 3.], [2., 9., 0.]],
            |e| matches!(e, Error::NotSymmetric { .. }),
        ),
        (
            "negative",
            array![[0., 1., -2.], [1., 0., 3.], [-2., 3., 0.]],
            |e| matches!(e, Error::NegativeDissimilarity { .. }),
        ),
        ("NaN", array![[0., f64::NAN], [f64::NAN, 0.]], |e| {
            matches!(e, Error::NonFinite { row: 0, col: 1, .. })
        }),
    ];
    for (case, m, right) in matrices {
        count += 1;
        match DenseMatrix::new(m) {
            Err(e) if right(&e) => {}
            r => failures.push(format!("dissimilarity / {case}: got {:?}", r.map(drop))),
        }
    }
    // Files.
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<(&str, &str, Vec<u8>, IsRight)> = vec![
        // A file without data rows is malformed: the error names the file.
        (
            "empty file",
            "empty.csv",
            vec![],
            |e| matches!(e, Error::Parse { msg, .. } if msg.contains("no data rows")),
        ),
        (
            "header only",
            "header.csv",
            b"a,b\n".to_vec(),
            |e| matches!(e, Error::Parse { msg, .. } if msg.contains("no data rows")),
        ),
        ("non-numeric cell", "text.csv", b"1,2\n3,abc\n".to_vec(), |e| {
            matches!(
                e,
                Error::Parse {
                    line: Some(2),
                    col: Some(2),
                    ..
                }
            )
        }),
        ("ragged row", "ragged.csv", b"1,2\n3,4\n5\n".to_vec(), |e| {
            matches!(e, Error::Parse { line: Some(3), .. })
        }),
        (
            "truncated .npy",
            "trunc.npy",
            {
                let mut b = common::npy_header("<f8", 4, 2);
                b.extend([0u8; 40]);
                b
            },
            |e| matches!(e, Error::Parse { .. }),
        ),
        (
            "wrong dtype .npy",
            "c16.npy",
            {
                let mut b = common::npy_header("<c16", 1, 1);
                b.extend([0u8; 16]);
                b
            },
            |e| matches!(e, Error::Parse { .. } | Error::Unsupported(_)),
        ),
        ("missing file", "nope.csv", vec![], |e| {
            matches!(e, Error::Io { .. })
        }),
    ];
    for (case, file, bytes, right) in files {
        let p = dir.path().join(file);
        if case != "missing file" {
            std::fs::write(&p, bytes).unwrap();
        }
        count += 1;
        match catch_unwind(|| read_matrix::<f64>(&p)) {
            Err(_) => failures.push(format!("read / {case}: panicked")),
            Ok(Err(e)) if right(&e) => {}
            Ok(r) => failures.push(format!("read / {case}: got {:?}", r.map(drop))),
        }
    }
    println!(
        "library bad-input matrix: {count} cases, {} failures",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {count} cases wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
