//! Cross-checks against scikit-learn (and the `kmedoids` package) on the committed fixture
//! tests/fixtures/sklearn_reference.json, produced by tests/fixtures/make_fixtures.py.

use clustr::backend::CpuBackend;
use clustr::eval;
use clustr::{Backend, DenseMatrix, MetricKind, OnTheFly};
use ndarray::Array2;
use serde_json::Value;

fn fixture() -> Value {
    let text = include_str!("fixtures/sklearn_reference.json");
    serde_json::from_str(text).unwrap()
}

fn matrix(v: &Value) -> Array2<f64> {
    let rows: Vec<Vec<f64>> = serde_json::from_value(v.clone()).unwrap();
    let (n, d) = (rows.len(), rows[0].len());
    Array2::from_shape_vec((n, d), rows.into_iter().flatten().collect()).unwrap()
}

fn ints(v: &Value) -> Vec<i64> {
    serde_json::from_value(v.clone()).unwrap()
}

fn close(a: f64, b: f64, tol: f64, what: &str) {
    assert!(
        (a - b).abs() <= tol * (1.0 + b.abs()),
        "{what}: clustr {a} vs reference {b}"
    );
}

#[test]
fn external_measures_match_sklearn() {
    let f = fixture();
    for (i, case) in f["labels"].as_array().unwrap().iter().enumerate() {
        let (t, p) = (ints(&case["truth"]), ints(&case["pred"]));
        close(
            eval::adjusted_rand_score(&t, &p).unwrap(),
            case["ari"].as_f64().unwrap(),
            1e-9,
            &format!("ARI {i}"),
        );
        close(
            eval::normalized_mutual_info_score(&t, &p).unwrap(),
            case["nmi"].as_f64().unwrap(),
            1e-9,
            &format!("NMI {i}"),
        );
        close(
            eval::accuracy(&t, &p).unwrap(),
            case["acc"].as_f64().unwrap(),
            1e-9,
            &format!("ACC {i}"),
        );
        close(
            eval::purity(&t, &p).unwrap(),
            case["purity"].as_f64().unwrap(),
            1e-9,
            &format!("purity {i}"),
        );
    }
}

#[test]
fn internal_measures_match_sklearn() {
    let f = fixture();
    for case in f["internal"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let x = matrix(&case["x"]);
        let labels = ints(&case["labels"]);
        close(
            eval::calinski_harabasz_score(x.view(), &labels).unwrap(),
            case["calinski_harabasz"].as_f64().unwrap(),
            1e-9,
            &format!("CH {name}"),
        );
        close(
            eval::davies_bouldin_score(x.view(), &labels).unwrap(),
            case["davies_bouldin"].as_f64().unwrap(),
            1e-9,
            &format!("DB {name}"),
        );
        for metric in ["euclidean", "manhattan", "cosine"] {
            let kind: MetricKind = metric.parse().unwrap();
            let expected: Vec<f64> =
                serde_json::from_value(case[format!("silhouette_samples_{metric}")].clone()).unwrap();
            let otf = OnTheFly::new(x.view(), kind).unwrap();
            let got = eval::silhouette_samples(&otf, &labels).unwrap();
            for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
                close(*g, *e, 1e-9, &format!("silhouette {name} {metric} point {i}"));
            }
            let mean = expected.iter().sum::<f64>() / expected.len() as f64;
            close(
                eval::silhouette_score(&otf, &labels).unwrap(),
                mean,
                1e-9,
                "silhouette score",
            );
        }
        let dense =
            DenseMatrix::from_points(x.view(), &MetricKind::Euclidean, &CpuBackend::default()).unwrap();
        let medoids: Vec<usize> = serde_json::from_value(case["medoids"].clone()).unwrap();
        close(
            eval::medoid_silhouette(&dense, &medoids).unwrap().0,
            case["medoid_silhouette"].as_f64().unwrap(),
            1e-9,
            &format!("medoid silhouette {name}"),
        );
    }
}

#[test]
fn pairwise_distances_match_sklearn() {
    let f = &fixture()["distances"];
    let (x, y) = (matrix(&f["x"]), matrix(&f["y"]));
    for gemm in [true, false] {
        let backend = CpuBackend {
            gemm,
            ..Default::default()
        };
        for name in [
            "euclidean",
            "sqeuclidean",
            "manhattan",
            "cosine",
            "minkowski:3",
            "chebyshev",
        ] {
            let kind: MetricKind = name.parse().unwrap();
            let expected = matrix(&f[name]);
            let mut got = Array2::zeros(expected.dim());
            backend
                .pairwise(x.view(), y.view(), &kind, got.view_mut())
                .unwrap();
            for ((i, j), e) in expected.indexed_iter() {
                close(got[[i, j]], *e, 1e-9, &format!("{name} (gemm={gemm}) [{i}][{j}]"));
            }
        }
    }
    let g = matrix(&f["geo"]);
    let expected = matrix(&f["haversine_km"]);
    let mut got = Array2::zeros(expected.dim());
    CpuBackend::default()
        .pairwise(g.view(), g.view(), &MetricKind::Haversine, got.view_mut())
        .unwrap();
    for ((i, j), e) in expected.indexed_iter() {
        close(got[[i, j]], *e, 1e-9, &format!("haversine [{i}][{j}]"));
    }
}
