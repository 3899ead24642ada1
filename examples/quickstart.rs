//! Quickstart: clusters the shipped data sets with every algorithm clustr has so far and
//! prints a table of quality and time.
//!
//!     cargo run --release --example quickstart
//!
//! Each data set first gets a `truth` row: the quality measures of the true classes, the
//! yardstick for the algorithms' rows (ARI, NMI and ACC against the truth; silhouette,
//! Calinski–Harabasz and Davies–Bouldin from the data). Algorithm rows are added here as the
//! algorithm families land.

use clustr::eval;
use clustr::kmeans::KMeans;
use clustr::kmedoids::{Init, KMedoids};
use clustr::prelude::*;
use std::time::Instant;

struct Row {
    dataset: &'static str,
    method: String,
    k: usize,
    labels: Vec<i64>,
    seconds: f64,
}

fn main() -> clustr::Result<()> {
    let backend = CpuBackend::default();
    println!(
        "{:<14} {:<22} {:>5} {:>3} {:>6} {:>6} {:>6} {:>7} {:>9} {:>6} {:>9}",
        "dataset", "method", "n", "k", "ARI", "NMI", "ACC", "silh.", "CH", "DB", "time (s)"
    );
    for name in clustr::datasets::SHIPPED {
        let ds = clustr::datasets::load(name)?;
        let x = ds.data.view();
        let k = {
            let mut t = ds.target.clone();
            t.sort_unstable();
            t.dedup();
            t.len()
        };
        // The full Euclidean matrix through the backend: the input of the medoid methods and
        // of the silhouette below.
        let t0 = Instant::now();
        let d = DenseMatrix::from_points(x, &MetricKind::Euclidean, &backend)?;
        let dist_s = t0.elapsed().as_secs_f64();
        let mut rows = vec![Row {
            dataset: name,
            method: "truth (reference)".into(),
            k,
            labels: ds.target.clone(),
            seconds: dist_s,
        }];
        // k-means (Lloyd, greedy k-means++, 10 runs) on the points.
        let t = Instant::now();
        let km = KMeans::new(k).n_init(10).fit(&x)?;
        rows.push(Row {
            dataset: name,
            method: "kmeans (k-means++ x10)".into(),
            k,
            labels: km.labels().to_vec(),
            seconds: t.elapsed().as_secs_f64(),
        });
        // k-medoids on the same matrix, k = the number of classes.
        for algo in [
            KMedoids::pam(k),
            KMedoids::fastpam1(k),
            KMedoids::fastpam2(k).init(Init::Build),
            KMedoids::fasterpam(k).init(Init::Build),
            KMedoids::fasterpam(k).init(Init::Lab),
            KMedoids::alternating(k).init(Init::Build),
        ] {
            let t = Instant::now();
            let model = algo.fit(&d)?;
            let init = match algo.init {
                Init::Build => "build",
                Init::Lab => "lab",
                _ => "random",
            };
            rows.push(Row {
                dataset: name,
                method: format!("{} ({init})", algo.name()),
                k,
                labels: model.labels().to_vec(),
                seconds: t.elapsed().as_secs_f64(),
            });
        }
        for r in rows {
            println!(
                "{:<14} {:<22} {:>5} {:>3} {:>6.3} {:>6.3} {:>6.3} {:>7.3} {:>9.1} {:>6.3} {:>9.4}",
                r.dataset,
                r.method,
                x.nrows(),
                r.k,
                eval::adjusted_rand_index(&ds.target, &r.labels)?,
                eval::normalized_mutual_info(&ds.target, &r.labels)?,
                eval::accuracy(&ds.target, &r.labels)?,
                eval::silhouette_score(&d, &r.labels)?,
                eval::calinski_harabasz(x, &r.labels)?,
                eval::davies_bouldin(x, &r.labels)?,
                r.seconds
            );
        }
    }
    println!(
        "\ntime: truth rows = the n x n Euclidean matrix ({} backend); other rows = the algorithm on it.",
        backend.name()
    );
    Ok(())
}
