//! `clustr magmaclust DATA.csv [--k K | --k-max K] [--hypothesis H00|Hk0|H0i|Hki] ...`.

use crate::harness::{secs, AlgoArgs, CliError, CliResult, ExecArgs, OutputArgs, Report};
use clustr::gp::{select_nb_cluster, MagmaClust, Tasks};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct MagmaArgs {
    /// Tasks in MagmaClustR's long format: a CSV with ID, Output and input column(s).
    input: PathBuf,
    /// Number of clusters (1 is Magma).
    #[arg(long)]
    k: Option<usize>,
    /// Choose K in 1..=K_MAX by VBIC instead of giving --k.
    #[arg(long)]
    k_max: Option<usize>,
    /// Hyper-parameters shared (0) or specific to clusters (k) and tasks (i).
    #[arg(long, default_value = "H00")]
    hypothesis: String,
    /// Relative ELBO change that stops the EM.
    #[arg(long, default_value_t = 1e-3)]
    cv_threshold: f64,
    /// Maximum EM iterations.
    #[arg(long, default_value_t = 25)]
    max_iter: usize,
    /// Seed of the k-means initialisation.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write each task's cluster and membership probability here (.csv: ID,cluster,probability).
    #[arg(long)]
    clusters_out: Option<PathBuf>,
    #[command(flatten)]
    exec: ExecArgs,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn run_magmaclust(a: MagmaArgs) -> CliResult {
    let started = Instant::now();
    let (common_k, common_i) = match a.hypothesis.as_str() {
        "H00" => (true, true),
        "Hk0" => (false, true),
        "H0i" => (true, false),
        "Hki" => (false, false),
        other => {
            return Err(CliError::usage(format!(
                "invalid parameter hypothesis = {other}: expected H00, Hk0, H0i or Hki"
            )))
        }
    };
    if a.k.is_some() == a.k_max.is_some() {
        return Err(CliError::usage("give either --k or --k-max"));
    }
    let mut base = MagmaClust::new(a.k.unwrap_or(1))
        .hypotheses(common_k, common_i)
        .seed(a.seed);
    base.cv_threshold = a.cv_threshold;
    base.n_iter_max = a.max_iter;
    let ((model, vbic, tasks, fit_s), threads) = a.exec.run(|_backend| {
        let tasks = Tasks::read_long(&a.input)?;
        let t = Instant::now();
        let (model, vbic) = match a.k_max {
            Some(kmax) => {
                let sel = select_nb_cluster(&tasks, 1..=kmax, &base)?;
                let best = sel
                    .models
                    .into_iter()
                    .find(|m| m.weights.len() == sel.best_k)
                    .expect("best model");
                (best, Some(sel.vbic))
            }
            None => (base.fit(&tasks)?, None),
        };
        Ok((model, vbic, tasks, secs(t)))
    })?;
    if let Some(p) = &a.clusters_out {
        clustr::data::atomic_write(p, |file| {
            let mut w = std::io::BufWriter::new(file);
            let io = |e| clustr::Error::io(p, e);
            writeln!(w, "ID,cluster,probability").map_err(io)?;
            for (i, t) in tasks.tasks.iter().enumerate() {
                let l = model.labels[i];
                writeln!(w, "{},{l},{:?}", t.id, model.tau[[i, l as usize]]).map_err(io)?;
            }
            w.flush().map_err(io)
        })?;
    }
    let mut extra = serde_json::Map::new();
    extra.insert("hypothesis".into(), json!(a.hypothesis));
    extra.insert("elbo".into(), json!(model.elbos.last()));
    extra.insert("vbic".into(), json!(model.vbic()));
    extra.insert("weights".into(), json!(model.weights.to_vec()));
    extra.insert("hp_k".into(), json!(model.hp_k));
    if let Some(v) = vbic {
        extra.insert("vbic_by_k".into(), json!(v));
    }
    let algo = AlgoArgs {
        k: model.weights.len(),
        seed: a.seed,
        max_iter: Some(a.max_iter),
        labels_out: None,
    };
    Report {
        algorithm: "magmaclust",
        n: tasks.len(),
        d: Some(tasks.grid.ncols()),
        k: Some(model.weights.len()),
        model: &model,
        backend: "cpu",
        threads,
        seed: a.seed,
        seconds: vec![("fit", fit_s)],
        extra,
    }
    .emit(&algo, &a.output, started)
}
