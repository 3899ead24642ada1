//! `clustr magmaclust train | predict | select`: MagmaClust on tasks in MagmaClustR's long
//! format (columns ID, Output and one or more input columns).

use crate::harness::{print_json, secs, CliError, CliResult, ExecArgs, OutputArgs};
use clustr::gp::{load_model, save_model, select_nb_cluster, MagmaClust, MagmaClustModel, Tasks};
use ndarray::Array2;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Subcommand)]
pub enum MagmaCommand {
    /// Fit MagmaClust with K clusters and write the model file.
    Train(TrainArgs),
    /// Predict a new task from some of its points with a trained model.
    Predict(PredictArgs),
    /// Fit K = a..b and keep the K of largest VBIC (select_nb_cluster).
    Select(SelectArgs),
}

// Settings shared by `train` and `select`.
#[derive(clap::Args)]
pub struct FitArgs {
    /// Training tasks: a CSV with ID, Output and input column(s); at least 2 points per task.
    data: PathBuf,
    /// Hyper-parameters shared (0) or specific to clusters (k) and tasks (i).
    #[arg(long, default_value = "H00")]
    hypothesis: String,
    /// Kernel of the mean processes (SE, PERIO, RQ, LIN, combined with + and *).
    #[arg(long, default_value = "SE")]
    kern_k: String,
    /// Kernel of the tasks.
    #[arg(long, default_value = "SE")]
    kern_i: String,
    /// Relative ELBO change that stops the EM.
    #[arg(long, default_value_t = 1e-3)]
    cv_threshold: f64,
    /// Maximum EM iterations.
    #[arg(long, default_value_t = 25)]
    max_iter: usize,
    /// Seed of the k-means initialisation.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write the model here (JSON: hyper-parameters, mixture weights, hyper-posterior,
    /// memberships and the training tasks).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write each task's cluster and membership probability here (ID,cluster,probability).
    #[arg(long)]
    clusters_out: Option<PathBuf>,
    #[command(flatten)]
    exec: ExecArgs,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(clap::Args)]
pub struct TrainArgs {
    /// Number of clusters (1 is Magma).
    #[arg(long)]
    k: usize,
    #[command(flatten)]
    fit: FitArgs,
}

#[derive(clap::Args)]
pub struct SelectArgs {
    /// The K tried, as FIRST:LAST.
    #[arg(long, default_value = "1:6")]
    k_range: String,
    #[command(flatten)]
    fit: FitArgs,
}

#[derive(clap::Args)]
pub struct PredictArgs {
    /// The model file written by `train` or `select`.
    model: PathBuf,
    /// The new task's observed points (same long format; one task).
    new: PathBuf,
    /// Prediction grid A:B:N (N evenly spaced inputs from A to B; one input dimension).
    #[arg(long, conflicts_with = "inputs")]
    grid: Option<String>,
    /// Prediction inputs, one row per point (.csv or .npy).
    #[arg(long)]
    inputs: Option<PathBuf>,
    /// Write the prediction here: Input,Mean,Var then Mean_k,Var_k,Proba_k for each cluster.
    #[arg(long)]
    out: PathBuf,
    /// Also draw it (PNG, or SVG for a .svg name; one input dimension): the observed points,
    /// the mean, its 95% band, the cluster means and any --held-out points.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Points of the same task kept out of the prediction (same long format), drawn on the
    /// plot as open circles to show how well it predicts them.
    #[arg(long, requires = "plot")]
    held_out: Option<PathBuf>,
    #[command(flatten)]
    exec: ExecArgs,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn run_magmaclust(c: MagmaCommand) -> CliResult {
    match c {
        MagmaCommand::Train(a) => train(a),
        MagmaCommand::Select(a) => select(a),
        MagmaCommand::Predict(a) => predict(a),
    }
}

impl FitArgs {
    fn settings(&self, k: usize) -> CliResult<MagmaClust> {
        let (common_k, common_i) = MagmaClust::parse_hypothesis(&self.hypothesis)?;
        let mut m = MagmaClust::new(k).hypotheses(common_k, common_i).seed(self.seed);
        m.kernel_k = self.kern_k.parse()?;
        m.kernel_i = self.kern_i.parse()?;
        m.cv_threshold = self.cv_threshold;
        m.n_iter_max = self.max_iter;
        Ok(m)
    }

    /// Writes the requested files, then prints the summary.
    fn finish(
        &self,
        model: &MagmaClustModel,
        tasks: &Tasks,
        mut summary: serde_json::Map<String, serde_json::Value>,
        ran: crate::harness::Ran,
        started: Instant,
    ) -> CliResult {
        if let Some(p) = &self.out {
            save_model(p, model, tasks)?;
        }
        if let Some(p) = &self.clusters_out {
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
        crate::harness::commit_outputs()?;
        let s = &model.settings;
        for (key, value) in [
            ("algorithm", json!("magmaclust")),
            ("n_tasks", json!(tasks.len())),
            ("grid_size", json!(tasks.grid.nrows())),
            ("k", json!(model.weights.len())),
            ("hypothesis", json!(s.hypothesis())),
            ("elbo", json!(model.elbos)),
            ("vbic", json!(model.vbic())),
            ("n_iter", json!(model.elbos.len())),
            ("converged", json!(model.converged)),
            ("mixture_weights", json!(model.weights.to_vec())),
            ("hp_k", json!(model.hp_k)),
            ("backend", json!(ran.backend)),
            ("threads", json!(ran.threads)),
            ("seed", json!(s.seed)),
        ] {
            summary.insert(key.into(), value);
        }
        summary.insert("seconds".into(), json!({ "total": secs(started) }));
        if self.output.json {
            print_json(&serde_json::Value::Object(summary))?;
        } else if !self.output.quiet {
            errln!(
                "magmaclust {}: {} tasks, K = {}, ELBO {:.4} after {} iterations{}, VBIC {:.4}, {:.3} s",
                s.hypothesis(),
                tasks.len(),
                model.weights.len(),
                model.elbos.last().copied().unwrap_or(f64::NAN),
                model.elbos.len(),
                if model.converged { "" } else { " (not converged)" },
                model.vbic(),
                secs(started)
            );
        }
        Ok(())
    }
}

fn train(a: TrainArgs) -> CliResult {
    let started = Instant::now();
    let settings = a.fit.settings(a.k)?;
    let ((model, tasks, fit_s), ran) = a.fit.exec.run("magmaclust", |_backend| {
        let tasks = Tasks::read_long(&a.fit.data, 2)?;
        let t = Instant::now();
        Ok((settings.fit(&tasks)?, tasks, secs(t)))
    })?;
    let mut summary = serde_json::Map::new();
    summary.insert("fit_seconds".into(), json!(fit_s));
    a.fit.finish(&model, &tasks, summary, ran, started)
}

/// `A:B` as an inclusive range of K.
fn parse_k_range(s: &str) -> CliResult<std::ops::RangeInclusive<usize>> {
    let bad = || {
        CliError::usage(format!(
            "invalid parameter k-range = {s}: expected FIRST:LAST with 1 <= FIRST <= LAST"
        ))
    };
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let (a, b): (usize, usize) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a == 0 || a > b {
        return Err(bad());
    }
    Ok(a..=b)
}

fn select(a: SelectArgs) -> CliResult {
    let started = Instant::now();
    let ks = parse_k_range(&a.k_range)?;
    let base = a.fit.settings(*ks.start())?;
    let ((sel, tasks), ran) = a.fit.exec.run("magmaclust", |_backend| {
        let tasks = Tasks::read_long(&a.fit.data, 2)?;
        Ok((select_nb_cluster(&tasks, ks.clone(), &base)?, tasks))
    })?;
    let best = sel
        .models
        .iter()
        .find(|m| m.weights.len() == sel.best_k)
        .expect("the best K was fitted");
    let mut summary = serde_json::Map::new();
    summary.insert("best_k".into(), json!(sel.best_k));
    summary.insert(
        "vbic_by_k".into(),
        json!(sel
            .vbic
            .iter()
            .map(|(k, v)| json!({"k": k, "vbic": v}))
            .collect::<Vec<_>>()),
    );
    if !a.fit.output.json && !a.fit.output.quiet {
        for (k, v) in &sel.vbic {
            errln!("K = {k}: VBIC {v:.4}");
        }
    }
    a.fit.finish(best, &tasks, summary, ran, started)
}

/// `A:B:N`: N evenly spaced inputs from A to B, as (A, B, N).
fn parse_grid(s: &str) -> CliResult<(f64, f64, usize)> {
    let bad = || {
        CliError::usage(format!(
            "invalid parameter grid = {s}: expected A:B:N with A < B and N >= 2"
        ))
    };
    let parts: Vec<&str> = s.split(':').collect();
    let [a, b, n] = parts.as_slice() else {
        return Err(bad());
    };
    let (a, b): (f64, f64) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    if a >= b || !a.is_finite() || !b.is_finite() || !(b - a).is_finite() || n < 2 {
        return Err(bad());
    }
    Ok((a, b, n))
}

fn predict(a: PredictArgs) -> CliResult {
    let started = Instant::now();
    // The grid is built once the model's memory estimate allows it.
    let (grid, inputs) = match (&a.grid, &a.inputs) {
        (Some(g), None) => (Some(parse_grid(g)?), None),
        (None, Some(p)) => {
            let x = crate::harness::read_matrix::<f64>(p)?;
            clustr::data::validate::check_points(x.view()).map_err(|e| CliError::from(e).prefixed(p))?;
            (None, Some(x))
        }
        _ => {
            return Err(CliError::usage(
                "give the prediction inputs with --grid A:B:N or --inputs FILE",
            ))
        }
    };
    if a.plot.is_some() && inputs.as_ref().is_some_and(|x| x.ncols() != 1) {
        return Err(CliError::usage("--plot needs one input dimension"));
    }
    let ((pred, new, t_pred), ran) = a.exec.run("magmaclust", |_backend| {
        let (model, train) = load_model(&a.model)?;
        let new = Tasks::read_long(&a.new, 1)?;
        if new.len() != 1 {
            return Err(CliError::usage(format!(
                "{}: holds {} tasks; predict one task at a time",
                a.new.display(),
                new.len()
            )));
        }
        let task = &new.tasks[0];
        let t_pred = match (grid, inputs) {
            (Some((lo, hi, n)), _) => {
                clustr::memory::check(
                    || format!("MagmaClust prediction of {n} inputs"),
                    model.predict_memory(&train, task.inputs.nrows(), n),
                    clustr::error::hints::MAGMACLUST_PREDICT,
                )?;
                Array2::from_shape_fn((n, 1), |(i, _)| lo + (hi - lo) * i as f64 / (n - 1) as f64)
            }
            (None, inputs) => inputs.unwrap_or_default(),
        };
        if task.inputs.ncols() != train.grid.ncols() || t_pred.ncols() != train.grid.ncols() {
            return Err(CliError::usage(format!(
                "the model has {} input column(s); the new task has {} and the prediction inputs {}",
                train.grid.ncols(),
                task.inputs.ncols(),
                t_pred.ncols()
            )));
        }
        let p = model.predict(&train, task.inputs.view(), task.outputs.view(), t_pred.view())?;
        Ok((p, new, t_pred))
    })?;
    write_prediction(&a.out, &t_pred, &pred)?;
    if let Some(p) = &a.plot {
        let held_out = a.held_out.as_ref().map(|h| Tasks::read_long(h, 1)).transpose()?;
        plot_prediction(p, &t_pred, &pred, &new, held_out.as_ref())?;
    }
    crate::harness::commit_outputs()?;
    let summary = json!({
        "algorithm": "magmaclust predict",
        "n_points": t_pred.nrows(),
        "memberships": pred.tau.to_vec(),
        "hp": pred.hp,
        "backend": ran.backend,
        "threads": ran.threads,
        "seconds": { "total": secs(started) },
    });
    if a.output.json {
        print_json(&summary)?;
    } else if !a.output.quiet {
        errln!(
            "magmaclust predict: {} points, memberships {:?}, {:.3} s",
            t_pred.nrows(),
            pred.tau
                .iter()
                .map(|t| (t * 1e4).round() / 1e4)
                .collect::<Vec<_>>(),
            secs(started)
        );
    }
    Ok(())
}

fn write_prediction(path: &Path, t_pred: &Array2<f64>, p: &clustr::gp::MagmaPrediction) -> CliResult {
    let d = t_pred.ncols();
    let mut header: Vec<String> = if d == 1 {
        vec!["Input".into()]
    } else {
        (1..=d).map(|j| format!("Input_{j}")).collect()
    };
    header.extend(["Mean".into(), "Var".into()]);
    // Clusters numbered from 0, as in --clusters-out and the labels of every other command.
    for k in 0..p.tau.len() {
        header.extend([format!("Mean_{k}"), format!("Var_{k}"), format!("Proba_{k}")]);
    }
    clustr::data::atomic_write(path, |file| {
        let mut w = std::io::BufWriter::new(file);
        let io = |e| clustr::Error::io(path, e);
        writeln!(w, "{}", header.join(",")).map_err(io)?;
        for (j, x) in t_pred.rows().into_iter().enumerate() {
            let mut row: Vec<String> = x.iter().map(|v| format!("{v:?}")).collect();
            row.extend([format!("{:?}", p.mean[j]), format!("{:?}", p.var[j])]);
            for k in 0..p.tau.len() {
                row.extend([
                    format!("{:?}", p.cluster_means[[k, j]]),
                    format!("{:?}", p.cluster_vars[[k, j]]),
                    format!("{:?}", p.tau[k]),
                ]);
            }
            writeln!(w, "{}", row.join(",")).map_err(io)?;
        }
        w.flush().map_err(io)
    })?;
    Ok(())
}

fn plot_prediction(
    path: &Path,
    t_pred: &Array2<f64>,
    p: &clustr::gp::MagmaPrediction,
    new: &Tasks,
    held_out: Option<&Tasks>,
) -> CliResult {
    use clustr::plot::Figure;
    let mut order: Vec<usize> = (0..t_pred.nrows()).collect();
    order.sort_by(|&i, &j| t_pred[[i, 0]].total_cmp(&t_pred[[j, 0]]));
    let pick = |v: &dyn Fn(usize) -> f64| order.iter().map(|&i| v(i)).collect::<Vec<f64>>();
    let cluster_means: Vec<Vec<f64>> = (0..p.tau.len())
        .map(|k| pick(&|i| p.cluster_means[[k, i]]))
        .collect();
    let points = |tasks: &Tasks| -> (Vec<f64>, Vec<f64>) {
        let inputs = tasks.tasks.iter().flat_map(|t| t.inputs.column(0).to_vec());
        let outputs = tasks.tasks.iter().flat_map(|t| t.outputs.to_vec());
        (inputs.collect(), outputs.collect())
    };
    let observed = points(new);
    let held = held_out.map(points);
    let title = format!(
        "MagmaClust prediction (cluster memberships {})",
        p.tau
            .iter()
            .map(|t| format!("{t:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    clustr::plot::Prediction {
        title: &title,
        inputs: &pick(&|i| t_pred[[i, 0]]),
        mean: &pick(&|i| p.mean[i]),
        var: &pick(&|i| p.var[i]),
        cluster_means: &cluster_means,
        observed: (&observed.0, &observed.1),
        held_out: held.as_ref().map(|(x, y)| (x.as_slice(), y.as_slice())),
    }
    .save(path)?;
    Ok(())
}
