//! MagmaClust model files: one JSON object holding what prediction needs — the settings,
//! the hyper-parameters, the mixture weights, the hyper-posterior on the training grid, each
//! training task's memberships (`memberships`: ID and τ row) and the training tasks
//! themselves (the hyper-posterior is recomputed on the prediction grid from them, as
//! MagmaClustR's `pred_magmaclust` does with the trained model's data).

use crate::error::{Error, Result};
use crate::gp::data::{Task, Tasks};
use crate::gp::lbfgs::Lbfgs;
use crate::gp::magmaclust::{HyperPosterior, MagmaClust, MagmaClustModel};
use ndarray::{Array1, Array2};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

/// The format tag written in every model file.
pub const FORMAT: &str = "clustr-magmaclust/1";

#[derive(Serialize, Deserialize)]
struct Membership {
    #[serde(rename = "ID")]
    id: String,
    tau: Vec<f64>,
}

#[derive(Serialize, Deserialize)]
struct HyperPosteriorFile {
    grid: Vec<Vec<f64>>,
    mean: Vec<Vec<f64>>,
    cov: Vec<Vec<Vec<f64>>>,
}

#[derive(Serialize, Deserialize)]
struct TaskFile {
    #[serde(rename = "ID")]
    id: String,
    inputs: Vec<Vec<f64>>,
    outputs: Vec<f64>,
}

#[derive(Serialize, Deserialize)]
struct ModelFile {
    format: String,
    k: usize,
    hypothesis: String,
    kern_k: String,
    kern_i: String,
    prior_mean: f64,
    pen_diag: f64,
    cv_threshold: f64,
    n_iter_max: usize,
    seed: u64,
    mixture_weights: Vec<f64>,
    hp_k: Vec<Vec<f64>>,
    /// Task kernel log-parameters then log noise variance, in the order of `memberships`.
    hp_i: Vec<Vec<f64>>,
    elbo: Vec<f64>,
    converged: bool,
    hyperpost: HyperPosteriorFile,
    memberships: Vec<Membership>,
    data: Vec<TaskFile>,
}

fn rows(a: &Array2<f64>) -> Vec<Vec<f64>> {
    a.rows().into_iter().map(|r| r.to_vec()).collect()
}

fn matrix(path: &Path, what: &str, v: &[Vec<f64>], cols: usize) -> Result<Array2<f64>> {
    if v.iter().any(|r| r.len() != cols) {
        return Err(Error::parse(
            path,
            None,
            None,
            format!("{what}: every row needs {cols} values"),
        ));
    }
    Ok(Array2::from_shape_fn((v.len(), cols), |(i, j)| v[i][j]))
}

/// Writes the model and its training tasks, atomically.
pub fn save_model(path: impl AsRef<Path>, model: &MagmaClustModel, train: &Tasks) -> Result<()> {
    let path = path.as_ref();
    let s = &model.settings;
    let file = ModelFile {
        format: FORMAT.into(),
        k: model.weights.len(),
        hypothesis: s.hypothesis().into(),
        kern_k: s.kernel_k.to_string(),
        kern_i: s.kernel_i.to_string(),
        prior_mean: s.prior_mean,
        pen_diag: s.pen_diag,
        cv_threshold: s.cv_threshold,
        n_iter_max: s.n_iter_max,
        seed: s.seed,
        mixture_weights: model.weights.to_vec(),
        hp_k: model.hp_k.clone(),
        hp_i: model.hp_i.clone(),
        elbo: model.elbos.clone(),
        converged: model.converged,
        hyperpost: HyperPosteriorFile {
            grid: rows(&train.grid),
            mean: rows(&model.hyperpost.mean),
            cov: model.hyperpost.cov.iter().map(rows).collect(),
        },
        memberships: train
            .tasks
            .iter()
            .zip(model.tau.rows())
            .map(|(t, r)| Membership {
                id: t.id.clone(),
                tau: r.to_vec(),
            })
            .collect(),
        data: train
            .tasks
            .iter()
            .map(|t| TaskFile {
                id: t.id.clone(),
                inputs: rows(&t.inputs),
                outputs: t.outputs.to_vec(),
            })
            .collect(),
    };
    crate::data::atomic_write(path, |f| {
        let mut w = std::io::BufWriter::new(f);
        serde_json::to_writer(&mut w, &file).map_err(|e| Error::parse(path, None, None, e.to_string()))?;
        w.flush().map_err(|e| Error::io(path, e))
    })
}

/// Reads a model file written by [`save_model`]: the model and its training tasks.
pub fn load_model(path: impl AsRef<Path>) -> Result<(MagmaClustModel, Tasks)> {
    let path = path.as_ref();
    let bad = |m: String| Error::parse(path, None, None, m);
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let f: ModelFile = serde_json::from_str(&text).map_err(|e| {
        Error::parse(
            path,
            Some(e.line()),
            Some(e.column()),
            format!("not a MagmaClust model file: {e}"),
        )
    })?;
    if f.format != FORMAT {
        return Err(bad(format!("format {:?}, expected {FORMAT:?}", f.format)));
    }
    let (common_hp_k, common_hp_i) = MagmaClust::parse_hypothesis(&f.hypothesis)?;
    let mut settings = MagmaClust::new(f.k)
        .hypotheses(common_hp_k, common_hp_i)
        .seed(f.seed);
    settings.kernel_k = f.kern_k.parse()?;
    settings.kernel_i = f.kern_i.parse()?;
    settings.prior_mean = f.prior_mean;
    settings.pen_diag = f.pen_diag;
    settings.cv_threshold = f.cv_threshold;
    settings.n_iter_max = f.n_iter_max;
    settings.optimiser = Lbfgs::reference();
    let tasks = f
        .data
        .into_iter()
        .map(|t| {
            let d = t.inputs.first().map_or(0, Vec::len);
            Ok(Task {
                inputs: matrix(path, &format!("inputs of task {}", t.id), &t.inputs, d)?,
                outputs: Array1::from(t.outputs),
                id: t.id,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let train = Tasks::new(tasks)?;
    let (m, k, n) = (train.len(), f.k, train.grid.nrows());
    let (nk, ni) = (settings.kernel_k.n_params(), settings.kernel_i.n_params() + 1);
    let shapes_ok = f.mixture_weights.len() == k
        && f.hp_k.len() == k
        && f.hp_k.iter().all(|h| h.len() == nk)
        && f.hp_i.len() == m
        && f.hp_i.iter().all(|h| h.len() == ni)
        && f.memberships.len() == m
        && f.memberships
            .iter()
            .zip(&train.tasks)
            .all(|(r, t)| r.tau.len() == k && r.id == t.id)
        && f.hyperpost.mean.len() == k
        && f.hyperpost.cov.len() == k
        && f.hyperpost.grid.len() == n;
    if !shapes_ok {
        return Err(bad(format!(
            "inconsistent model: expected K = {k} weights, hyper-parameters and hyper-posteriors, {m} tasks with their memberships and a {n}-point grid"
        )));
    }
    let tau = matrix(
        path,
        "memberships",
        &f.memberships.into_iter().map(|r| r.tau).collect::<Vec<_>>(),
        k,
    )?;
    let hyperpost = HyperPosterior {
        mean: matrix(path, "hyper-posterior means", &f.hyperpost.mean, n)?,
        cov: f
            .hyperpost
            .cov
            .iter()
            .map(|c| matrix(path, "hyper-posterior covariance", c, n))
            .collect::<Result<_>>()?,
    };
    if hyperpost.cov.iter().any(|c| c.nrows() != n) {
        return Err(bad(format!("hyper-posterior covariances must be {n} x {n}")));
    }
    let labels = crate::linalg::argmax_rows(&tau);
    Ok((
        MagmaClustModel {
            weights: Array1::from(f.mixture_weights),
            tau,
            labels,
            hp_k: f.hp_k,
            hp_i: f.hp_i,
            hyperpost,
            elbos: f.elbo,
            converged: f.converged,
            settings,
        },
        train,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gp::simulate::{Scenario, Simulator};

    #[test]
    fn a_saved_model_reads_back_equal() {
        let sim = Simulator {
            n_tasks: 12,
            ..Simulator::new(Scenario::Hk0)
        }
        .generate()
        .unwrap();
        let model = MagmaClust::new(2)
            .hypotheses(false, true)
            .fit(&sim.tasks)
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.json");
        save_model(&p, &model, &sim.tasks).unwrap();
        let (back, train) = load_model(&p).unwrap();
        assert_eq!(back, model);
        assert_eq!(train.grid, sim.tasks.grid);
        std::fs::write(&p, "{\"format\": 1}").unwrap();
        assert!(load_model(&p)
            .unwrap_err()
            .to_string()
            .contains("not a MagmaClust model file"));
    }
}
