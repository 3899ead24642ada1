//! `clustr predict MODEL INPUT [--labels-out L] [--proba-out P] [--transform-out T]`: applies
//! a model file written by a fit's `--model-out` to new points.

use crate::harness::{load_points, print_json, secs, CliError, CliResult, OutputArgs};
use clustr::data::write_matrix;
use clustr::density::CorePointPredictor;
use clustr::kernel::{IpRffMkpkmModel, PowerKMeansModel, RffKpkmModel};
use clustr::kmeans::{KMeansModel, MiniBatchKMeansModel};
use clustr::kmedoids::MedoidPredictor;
use clustr::mixture::GaussianMixtureModel;
use clustr::model_file::{algorithm_of, SaveLoad};
use clustr::{MetricKind, Predict};
use ndarray::{Array2, ArrayView2};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// A model file (`--model-out` of kmeans, minibatch-kmeans, gmm, ppp, the k-medoids
    /// methods, dbscan, power-kmeans, rff-kpkm or ip-rff-mkpkm).
    model: PathBuf,
    /// New points, one per row, with the training data's columns (.npy or .csv).
    input: PathBuf,
    /// Write each point's cluster here (.npy int32 or .csv; −1 = noise for dbscan).
    #[arg(long)]
    labels_out: Option<PathBuf>,
    /// gmm: write each point's posterior probabilities (n × k) here.
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

fn load<M: SaveLoad>(path: &Path) -> CliResult<M> {
    M::load(path).map_err(|e| CliError::from(e).prefixed(path))
}

/// Distances in f64 for writing.
fn wide<F: clustr::Scalar>(a: Array2<F>) -> Array2<f64> {
    a.mapv(|v| v.to_f64_exact())
}

pub fn run(a: Args) -> CliResult {
    let started = Instant::now();
    let algorithm = algorithm_of(&a.model).map_err(|e| CliError::from(e).prefixed(&a.model))?;
    let gives_proba = algorithm == "gmm";
    let gives_distances = !matches!(algorithm.as_str(), "gmm" | "dbscan");
    if a.proba_out.is_some() && !gives_proba {
        return Err(CliError::usage(format!(
            "--proba-out: a {algorithm} model gives no probabilities (only gmm)"
        )));
    }
    if a.transform_out.is_some() && !gives_distances {
        return Err(CliError::usage(format!(
            "--transform-out: a {algorithm} model gives no distances"
        )));
    }
    let t0 = Instant::now();
    let x = load_points::<f64>(&a.input)?;
    let read_s = secs(t0);
    let t1 = Instant::now();
    let prediction = predict(&algorithm, &a, x.view())?;
    let predict_s = secs(t1);
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
            if algorithm == "dbscan" {
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

/// The prediction of the model at `a.model` (its `algorithm`) for the points `v`: labels, and
/// the probabilities or distances the arguments ask for.
fn predict(algorithm: &str, a: &Args, v: ArrayView2<f64>) -> CliResult<Prediction> {
    let want = a.transform_out.is_some();
    let model_path = a.model.as_path();
    Ok(match algorithm {
        "kmeans" => {
            let m: KMeansModel<f64> = load(model_path)?;
            Prediction {
                labels: m.predict(&v)?,
                proba: None,
                distances: want.then(|| m.transform(v)).transpose()?,
            }
        }
        "minibatch-kmeans" => {
            let m: MiniBatchKMeansModel<f64> = load(model_path)?;
            Prediction {
                labels: m.predict(&v)?,
                proba: None,
                distances: want.then(|| m.transform(v)).transpose()?,
            }
        }
        "power-kmeans" => {
            let m: PowerKMeansModel<f64> = load(model_path)?;
            Prediction {
                labels: m.predict(v)?,
                proba: None,
                distances: want.then(|| m.transform(v)).transpose()?,
            }
        }
        "gmm" => {
            let m: GaussianMixtureModel = load(model_path)?;
            Prediction {
                labels: m.predict(&v)?,
                proba: a.proba_out.is_some().then(|| m.predict_proba(v)).transpose()?,
                distances: None,
            }
        }
        "kmedoids" => {
            let m: MedoidPredictor<f64, MetricKind> = load(model_path)?;
            Prediction {
                labels: m.predict(&v)?,
                proba: None,
                distances: want.then(|| m.transform(v)).transpose()?,
            }
        }
        "dbscan" => {
            let m: CorePointPredictor = load(model_path)?;
            Prediction {
                labels: m.predict(&v)?,
                proba: None,
                distances: None,
            }
        }
        "rff-kpkm" => {
            let m: RffKpkmModel<f64> = load(model_path)?;
            let distances = match want {
                true => Some(wide(m.power.transform(m.features.transform(v)?.view())?)),
                false => None,
            };
            Prediction {
                labels: m.predict(v)?,
                proba: None,
                distances,
            }
        }
        "ip-rff-mkpkm" => {
            let m: IpRffMkpkmModel<f64> = load(model_path)?;
            let d = m.transform(v)?;
            Prediction {
                labels: clustr::linalg::argmin_rows(&d),
                proba: None,
                distances: want.then_some(d),
            }
        }
        other => {
            return Err(CliError::usage(format!(
                "{}: a {other} model cannot assign new points",
                a.model.display()
            )))
        }
    })
}
