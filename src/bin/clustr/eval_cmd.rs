//! `clustr eval --labels A [--truth B] [--data X [--metric M] | --precomputed D] [--medoids M]`:
//! external measures against true labels, internal measures from the data or a precomputed
//! dissimilarity matrix.

use crate::harness::read_matrix;
use crate::harness::{load_points, print_json, CliError, CliResult, OutputArgs};
use clustr::data::read_labels;
use clustr::eval;
use clustr::{DenseMatrix, Dissimilarity, MetricKind, OnTheFly};
use serde_json::{json, Map, Value};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Predicted labels (.npy int or .csv).
    #[arg(long)]
    labels: PathBuf,
    /// True labels: adds ARI, NMI, ACC and purity.
    #[arg(long)]
    truth: Option<PathBuf>,
    /// The clustered points: adds silhouette, Calinski–Harabasz and Davies–Bouldin.
    #[arg(long, conflicts_with = "precomputed")]
    data: Option<PathBuf>,
    /// A precomputed square dissimilarity matrix: adds the silhouette from it.
    #[arg(long)]
    precomputed: Option<PathBuf>,
    /// Metric for the silhouette on --data.
    #[arg(long, default_value = "euclidean")]
    metric: String,
    /// Medoid row indices (.npy or .csv): adds the medoid silhouette.
    #[arg(long)]
    medoids: Option<PathBuf>,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn run(a: Args) -> CliResult {
    let labels = read_labels(&a.labels)?;
    let mut out = Map::new();
    out.insert("n".into(), json!(labels.len()));
    if a.truth.is_none() && a.data.is_none() && a.precomputed.is_none() {
        return Err(CliError::usage(
            "nothing to evaluate: give --truth, --data or --precomputed",
        ));
    }
    if let Some(t) = &a.truth {
        let truth = read_labels(t)?;
        out.insert("ari".into(), json!(eval::adjusted_rand_score(&truth, &labels)?));
        out.insert(
            "nmi".into(),
            json!(eval::normalized_mutual_info_score(&truth, &labels)?),
        );
        out.insert("acc".into(), json!(eval::accuracy(&truth, &labels)?));
        out.insert("purity".into(), json!(eval::purity(&truth, &labels)?));
    }
    let medoids: Option<Vec<usize>> = match &a.medoids {
        None => None,
        Some(p) => Some(
            read_labels(p)?
                .into_iter()
                .map(|m| {
                    usize::try_from(m)
                        .map_err(|_| CliError::usage(format!("{}: negative medoid index {m}", p.display())))
                })
                .collect::<CliResult<_>>()?,
        ),
    };
    if let Some(p) = &a.data {
        let metric: MetricKind = a.metric.parse()?;
        let x = load_points::<f64>(p)?;
        let d = OnTheFly::new(x.view(), metric)?;
        internal(&d, &labels, medoids.as_deref(), &mut out)?;
        out.insert(
            "calinski_harabasz".into(),
            json!(eval::calinski_harabasz_score(x.view(), &labels)?),
        );
        out.insert(
            "davies_bouldin".into(),
            json!(eval::davies_bouldin_score(x.view(), &labels)?),
        );
    }
    if let Some(p) = &a.precomputed {
        let m = read_matrix::<f64>(p)?;
        let d = DenseMatrix::new(m).map_err(|e| CliError::from(e).prefixed(p))?;
        internal(&d, &labels, medoids.as_deref(), &mut out)?;
    }
    if a.output.json {
        print_json(&Value::Object(out))?;
    } else {
        for (k, v) in &out {
            outln!("{k:<18} {v}")?;
        }
    }
    Ok(())
}

fn internal<D: Dissimilarity>(
    d: &D,
    labels: &[i64],
    medoids: Option<&[usize]>,
    out: &mut Map<String, Value>,
) -> CliResult {
    out.insert("silhouette".into(), json!(eval::silhouette_score(d, labels)?));
    if let Some(m) = medoids {
        out.insert(
            "medoid_silhouette".into(),
            json!(eval::medoid_silhouette(d, m)?.0),
        );
    }
    Ok(())
}
