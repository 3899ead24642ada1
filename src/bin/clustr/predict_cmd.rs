//! `clustr predict MODEL INPUT [--labels-out L] [--proba-out P] [--transform-out T]`: applies
//! a model file written by a fit's `--model-out` to new points.

use crate::harness::{load_points, load_sparse_points, print_json, secs, CliError, CliResult, OutputArgs};
use clustr::data::write_matrix;
use clustr::model_file::algorithm_of;
use ndarray::Array2;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// A model file, written by a fit's `--model-out` (the methods that assign new points).
    model: PathBuf,
    /// New points, one per row, with the training data's columns (.npy or .csv). A sparse
    /// .npz, .mtx or svmlight file is assigned as sparse rows by the k-means and mini-batch
    /// models, densified for the others.
    input: PathBuf,
    /// Write each point's cluster here (.npy int32 or .csv; −1 = noise for dbscan and hdbscan).
    #[arg(long)]
    labels_out: Option<PathBuf>,
    /// Write each point's posterior probabilities (gmm) or soft cluster membership (hdbscan:
    /// the hdbscan package's membership_vector) here, n × k.
    #[arg(long)]
    proba_out: Option<PathBuf>,
    /// Write each point's distance to each centre here (n × k): Euclidean for the k-means
    /// and power models, the model's metric for k-medoids, in feature space for rff-kpkm
    /// and the combined kernel's squared distance for ip-rff-mkpkm.
    #[arg(long)]
    transform_out: Option<PathBuf>,
    #[command(flatten)]
    output: OutputArgs,
}

/// What a model gives for the new points.
struct Prediction {
    labels: Vec<i64>,
    proba: Option<Array2<f64>>,
    distances: Option<Array2<f64>>,
}

pub fn run(a: Args) -> CliResult {
    let started = Instant::now();
    let algorithm = algorithm_of(&a.model).map_err(|e| CliError::from(e).prefixed(&a.model))?;
    let Some(file) = clustr::methods::model_file(&algorithm) else {
        return Err(CliError::usage(format!(
            "{}: a {algorithm} model cannot assign new points",
            a.model.display()
        )));
    };
    let model = (file.load)(&a.model).map_err(|e| CliError::from(e).prefixed(&a.model))?;
    let (gives_proba, gives_distances) = (model.gives_proba(), model.gives_distances());
    if a.proba_out.is_some() && !gives_proba {
        return Err(CliError::usage(format!(
            "--proba-out: a {algorithm} model gives no probabilities (gmm and hdbscan do)"
        )));
    }
    if a.transform_out.is_some() && !gives_distances {
        return Err(CliError::usage(format!(
            "--transform-out: a {algorithm} model gives no distances"
        )));
    }
    let t0 = Instant::now();
    if clustr::data::SparseKind::of(&a.input).is_some() && model.takes_sparse() {
        let x = load_sparse_points::<f64>(&a.input)?;
        let read_s = secs(t0);
        let t1 = Instant::now();
        let prediction = Prediction {
            labels: model.predict_sparse(x.view())?,
            proba: None,
            distances: a
                .transform_out
                .as_ref()
                .and_then(|_| model.transform_sparse(x.view()))
                .transpose()?,
        };
        return finish(&a, &algorithm, prediction, read_s, secs(t1), started);
    }
    let x = load_points::<f64>(&a.input)?;
    let read_s = secs(t0);
    let t1 = Instant::now();
    let prediction = Prediction {
        labels: model.predict(x.view())?,
        proba: a
            .proba_out
            .as_ref()
            .and_then(|_| model.predict_proba(x.view()))
            .transpose()?,
        distances: a
            .transform_out
            .as_ref()
            .and_then(|_| model.transform(x.view()))
            .transpose()?,
    };
    finish(&a, &algorithm, prediction, read_s, secs(t1), started)
}

/// Writes the prediction's outputs and reports.
fn finish(
    a: &Args,
    algorithm: &str,
    prediction: Prediction,
    read_s: f64,
    predict_s: f64,
    started: Instant,
) -> CliResult {
    let k_names = |prefix: &str, m: &Array2<f64>| -> Vec<String> {
        (0..m.ncols()).map(|c| format!("{prefix}{c}")).collect()
    };
    if let Some(p) = &a.labels_out {
        clustr::data::write_labels(p, &prediction.labels)?;
    }
    if let (Some(p), Some(m)) = (&a.proba_out, &prediction.proba) {
        write_matrix(p, m.view(), &k_names("p", m))?;
    }
    if let (Some(p), Some(m)) = (&a.transform_out, &prediction.distances) {
        write_matrix(p, m.view(), &k_names("d", m))?;
    }
    crate::harness::commit_outputs()?;
    let labels = &prediction.labels;
    let n_noise = labels.iter().filter(|&&l| l < 0).count();
    let n_clusters = labels
        .iter()
        .filter(|&&l| l >= 0)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let written: Vec<String> = [&a.labels_out, &a.proba_out, &a.transform_out]
        .into_iter()
        .flatten()
        .map(|p| p.display().to_string())
        .collect();
    if !a.output.quiet {
        errln!(
            "clustr: predict: {algorithm} model, n = {}, {n_clusters} clusters used{}{}, {:.3} s",
            labels.len(),
            if algorithm == "dbscan" || algorithm == "hdbscan" {
                format!(", {n_noise} noise")
            } else {
                String::new()
            },
            if written.is_empty() {
                String::new()
            } else {
                format!(", wrote {}", written.join(", "))
            },
            secs(started)
        );
    }
    if a.output.json {
        print_json(&json!({
            "algorithm": "predict",
            "model_algorithm": algorithm,
            "n": labels.len(),
            "n_clusters_used": n_clusters,
            "n_noise": n_noise,
            "outputs": written,
            "seconds": {"read": read_s, "predict": predict_s, "total": secs(started)},
        }))?;
    }
    Ok(())
}
