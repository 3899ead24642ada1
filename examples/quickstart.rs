//! Quickstart: clusters the shipped data sets with every family clustr has — k-means (and k
//! chosen by the silhouette), k-medoids, Gaussian mixtures, DBSCAN/OPTICS/HDBSCAN, a kernel
//! method — and MagmaClust on its simulator, and prints a table of quality and time with a key
//! to its columns.
//!
//!     cargo run --release --example quickstart
//!
//! Each data set first gets a `truth` row: the quality measures of the true classes, the
//! yardstick for the algorithms' rows (ARI, NMI and ACC against the truth; silhouette,
//! Calinski–Harabasz and Davies–Bouldin from the data, noise counted as one more cluster).

use clustr::density::{Dbscan, Hdbscan, Optics};
use clustr::eval;
use clustr::gp::{MagmaClust, Scenario, Simulator};
use clustr::kernel::RffKpkm;
use clustr::kmeans::KMeans;
use clustr::kmedoids::{Init, KMedoids};
use clustr::mixture::GaussianMixture;
use clustr::prelude::*;
use clustr::select_k::{Criterion, Ks, SelectK};
use std::time::Instant;

struct Row {
    method: String,
    k: usize,
    labels: Vec<i64>,
    seconds: f64,
}

/// Times `fit` and keeps its labels and clusters found.
fn row<M: Clustering>(
    method: impl Into<String>,
    fit: impl FnOnce() -> clustr::Result<M>,
) -> clustr::Result<Row> {
    let t = Instant::now();
    let model = fit()?;
    Ok(Row {
        method: method.into(),
        k: model.n_clusters(),
        labels: model.labels().to_vec(),
        seconds: t.elapsed().as_secs_f64(),
    })
}

/// A measure, or `-` where it is undefined (one cluster, all noise).
fn cell(v: clustr::Result<f64>, width: usize, decimals: usize) -> String {
    match v {
        Ok(v) if v.is_finite() => format!("{v:>width$.decimals$}"),
        _ => format!("{:>width$}", "-"),
    }
}

fn main() -> clustr::Result<()> {
    let backend = CpuBackend::default();
    println!(
        "{:<14} {:<30} {:>5} {:>3} {:>5} {:>6} {:>6} {:>6} {:>7} {:>9} {:>6} {:>9}",
        "dataset", "method", "n", "k", "noise", "ARI", "NMI", "ACC", "silh.", "CH", "DB", "time (s)"
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
            method: "truth (reference)".into(),
            k,
            labels: ds.target.clone(),
            seconds: dist_s,
        }];
        rows.push(row("kmeans (k-means++ x10)", || {
            KMeans::new(k).n_init(10).fit(&x)
        })?);
        // k chosen by the silhouette among 2..=12, without being told the classes.
        rows.push(row("kmeans, k by silhouette 2..12", || {
            let fit = |k| KMeans::new(k).n_init(10).fit(&x);
            Ok(SelectK::new(Ks::new((2..=12).collect())?, Criterion::Silhouette)
                .run(x.nrows(), Some(x), fit, |_, _| None)?
                .model)
        })?);
        // k-medoids on the same matrix, k = the number of classes.
        for algo in [
            KMedoids::pam(k),
            KMedoids::fastpam1(k),
            KMedoids::fastpam2(k).init(Init::Build),
            KMedoids::fasterpam(k).init(Init::Build),
            KMedoids::fasterpam(k).init(Init::Lab),
            KMedoids::alternating(k).init(Init::Build),
        ] {
            let init = match algo.init {
                Init::Build => "build",
                Init::Lab => "lab",
                _ => "random",
            };
            rows.push(row(format!("{} ({init})", algo.name()), || algo.fit(&d))?);
        }
        rows.push(row("gmm (full covariance)", || {
            GaussianMixture::new(k).seed(0).fit(&x)
        })?);
        // OPTICS with scikit-learn's defaults, then DBSCAN at the knee of its reachability.
        let optics = Optics::new(5).fit(&x)?;
        let eps = optics.knee_eps().unwrap_or(1.0);
        rows.push(row("optics (xi 0.05)", || Optics::new(5).fit(&x))?);
        rows.push(row(format!("dbscan (eps {eps:.3} = knee)"), || {
            Dbscan::new(eps).min_samples(5).fit(&x)
        })?);
        rows.push(row("hdbscan (min cluster size 5)", || Hdbscan::new(5).fit(&x))?);
        rows.push(row("rff-kpkm (D = 1000)", || RffKpkm::new(k).seed(0).fit(&x))?);
        for r in rows {
            let noise = r.labels.iter().filter(|&&l| l < 0).count();
            println!(
                "{:<14} {:<30} {:>5} {:>3} {:>5} {} {} {} {} {} {} {:>9.4}",
                name,
                r.method,
                x.nrows(),
                r.k,
                noise,
                cell(eval::adjusted_rand_score(&ds.target, &r.labels), 6, 3),
                cell(eval::normalized_mutual_info_score(&ds.target, &r.labels), 6, 3),
                cell(eval::accuracy(&ds.target, &r.labels), 6, 3),
                cell(eval::silhouette_score(&d, &r.labels), 7, 3),
                cell(eval::calinski_harabasz_score(x, &r.labels), 9, 1),
                cell(eval::davies_bouldin_score(x, &r.labels), 6, 3),
                r.seconds
            );
        }
    }
    // MagmaClust clusters functions (tasks), not points: 50 simulated curves of 30 points
    // from 3 mean processes.
    let sim = Simulator::new(Scenario::H00).generate()?;
    let t = Instant::now();
    let magma = MagmaClust::new(3).fit(&sim.tasks)?;
    println!(
        "{:<14} {:<30} {:>5} {:>3} {:>5} {} {} {} {:>7} {:>9} {:>6} {:>9.4}",
        "simulated GPs",
        "magmaclust (K = 3)",
        sim.tasks.len(),
        magma.n_clusters(),
        0,
        cell(eval::adjusted_rand_score(&sim.clusters, &magma.labels), 6, 3),
        cell(
            eval::normalized_mutual_info_score(&sim.clusters, &magma.labels),
            6,
            3
        ),
        cell(eval::accuracy(&sim.clusters, &magma.labels), 6, 3),
        "-",
        "-",
        "-",
        t.elapsed().as_secs_f64()
    );
    println!(
        "\nKey: k = clusters found (noise excluded); noise = points labelled noise (density methods).\n\
         ARI (adjusted Rand index), NMI (normalised mutual information), ACC (accuracy under the best\n\
         matching of clusters to classes): agreement with the true classes, 1 = identical, higher is\n\
         better (ARI about 0 for chance). silh. = silhouette in [-1, 1], higher is better; CH =\n\
         Calinski-Harabasz, higher is better; DB = Davies-Bouldin, lower is better (all three from the\n\
         data alone, noise counted as one more cluster; - where undefined). time: truth rows = the\n\
         n x n Euclidean matrix ({} backend); other rows = the algorithm (the k-medoids rows on that\n\
         matrix). MagmaClust's tasks are curves, so it has no point-based measures.",
        backend.name()
    );
    Ok(())
}
