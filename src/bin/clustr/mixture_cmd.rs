//! `clustr gmm INPUT --k K [--covariance full|tied|diag|spherical] [--init ...] ...` and
//! `clustr ppp INPUT [--k-min 2] [--k-max 10] [--seeds 20] ...`.

use crate::harness::{insert_k_selection, Chosen, KChoice, WithK};
use crate::harness::{
    iteration_bar, load_points, secs, AlgoArgs, CliError, CliResult, ExecArgs, ModelOutArg, OutputArgs,
    Processes, Report,
};
use clustr::data::{read_labels, write_matrix};
use clustr::memory::MemoryEstimate as _;
use clustr::mixture::{CovarianceType, GaussianMixture, GmmInit, Ppp};
use clustr::select_k::Criterion;
use clustr::Fit;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct GmmArgs {
    /// Points, rows = samples (.npy or .csv).
    input: PathBuf,
    #[command(flatten)]
    algo: AlgoArgs,
    /// full, tied, diag or spherical.
    #[arg(long, default_value = "full")]
    covariance: String,
    /// kmeans, k-means++, random or random_from_data (ignored with --init-labels).
    #[arg(long, default_value = "kmeans")]
    init: String,
    /// Start from the one-hot responsibilities of these labels (0..k-1, one per point).
    #[arg(long)]
    init_labels: Option<PathBuf>,
    /// Runs from different seeds, the highest likelihood kept.
    #[arg(long, default_value_t = 1)]
    n_init: usize,
    /// Stop when the mean log-likelihood changes by less than this.
    #[arg(long, default_value_t = 1e-3)]
    tol: f64,
    /// Added to every variance.
    #[arg(long, default_value_t = 1e-6)]
    reg_covar: f64,
    /// Write the posterior probabilities (n × k) here (.npy or .csv).
    #[arg(long)]
    proba_out: Option<PathBuf>,
    /// Weight of each point (.npy or .csv, one value per point; non-negative, not all zero):
    /// weighted EM, an integer weight counting as that many copies of the row.
    #[arg(long)]
    sample_weight: Option<PathBuf>,
    #[command(flatten)]
    model: ModelOutArg,
    /// Run as one process of an MPI job (`mpirun -n P clustr gmm --distributed X.npy`): each
    /// process reads and fits its slice of the rows; rank 0 writes the labels and prints the
    /// summary (without BIC/AIC). Needs the `mpi` feature.
    #[arg(long)]
    distributed: bool,
    #[command(flatten)]
    exec: ExecArgs,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn run_gmm(a: GmmArgs) -> CliResult {
    let started = Instant::now();
    let ct: CovarianceType = a.covariance.parse()?;
    if a.distributed && (a.proba_out.is_some() || a.init_labels.is_some() || a.sample_weight.is_some()) {
        return Err(CliError::usage(
            "--proba-out, --init-labels and --sample-weight are not available with --distributed",
        ));
    }
    let procs = Processes::new(a.distributed)?;
    if a.distributed {
        a.algo.single_k("gmm --distributed")?;
    }
    let init = match (&a.init_labels, a.init.as_str()) {
        (Some(path), _) => GmmInit::from_labels(&read_labels(path)?, a.algo.single_k("gmm --init-labels")?)?,
        (None, "kmeans") => GmmInit::KMeans,
        (None, "k-means++" | "kmeans++") => GmmInit::KMeansPlusPlus,
        (None, "random") => GmmInit::Random,
        (None, "random_from_data") => GmmInit::RandomFromData,
        (None, other) => {
            return Err(CliError::usage(format!(
                "invalid parameter init = {other}: expected kmeans, k-means++, random or random_from_data"
            )))
        }
    };
    let mut params = GaussianMixture::new(a.algo.k[0])
        .covariance_type(ct)
        .init(init)
        .n_init(a.n_init)
        .tol(a.tol)
        .reg_covar(a.reg_covar)
        .seed(a.algo.seed)
        .communicator(procs.comm.clone());
    if let Some(m) = a.algo.max_iter {
        params = params.max_iter(m);
    }
    if let Some(p) = &a.sample_weight {
        params = params.sample_weight(crate::harness::read_sample_weight(p)?);
    }
    let ((chosen, x, read_s, fit_s, proba), ran) = a.exec.run("gmm", |_backend| {
        let t0 = Instant::now();
        let x = procs.load::<f64>(&a.input)?;
        let read_s = secs(t0);
        let t1 = Instant::now();
        let how = KChoice {
            what: "gmm",
            steps: params.max_iter,
            criterion: Criterion::Bic,
            memory_of_fit: Box::new(|k| params.with_k(k).memory_estimate(x.nrows(), x.ncols(), 8)),
        };
        let fit_k = |k, progress| params.with_k(k).progress(progress).fit(&x.view());
        // BIC and AIC are the mixture's own (its log-likelihood of every row).
        let own = |m: &clustr::mixture::GaussianMixtureModel, c| match c {
            Criterion::Bic => Some(m.bic(x.view())),
            Criterion::Aic => Some(m.aic(x.view())),
            _ => None,
        };
        let chosen = a
            .algo
            .choose(how, &a.output, x.nrows(), Some(x.view()), fit_k, own)?;
        let fit_s = secs(t1);
        let proba = match &a.proba_out {
            Some(_) => Some(chosen.model.predict_proba(x.view())?),
            None => None,
        };
        Ok((chosen, x, read_s, fit_s, proba))
    })?;
    let Chosen { mut model, k, table } = chosen;
    let Some(labels) = procs.gather_labels(std::mem::take(&mut model.labels)) else {
        return Ok(()); // rank 0 writes and reports
    };
    model.labels = labels;
    a.model.save(&model)?;
    let n = model.labels.len();
    if let (Some(path), Some(p)) = (&a.proba_out, &proba) {
        let names: Vec<String> = (0..k).map(|c| format!("p{c}")).collect();
        write_matrix(path, p.view(), &names)?;
    }
    let mix = &model.mixture;
    let mut extra = serde_json::Map::new();
    extra.insert("covariance_type".into(), json!(ct.name()));
    extra.insert("mean_log_likelihood".into(), json!(model.lower_bound));
    // (the criteria need the log-likelihood of all rows: not in a distributed run)
    let criteria = !a.distributed;
    extra.insert(
        "bic".into(),
        json!(criteria.then(|| model.bic(x.view())).transpose()?),
    );
    extra.insert(
        "aic".into(),
        json!(criteria.then(|| model.aic(x.view())).transpose()?),
    );
    extra.insert("processes".into(), json!(procs.comm.size()));
    insert_k_selection(&mut extra, table);
    extra.insert("weights".into(), json!(mix.weights.to_vec()));
    let means: Vec<Vec<f64>> = mix.means.rows().into_iter().map(|r| r.to_vec()).collect();
    extra.insert("means".into(), json!(means));
    Report {
        algorithm: "gmm",
        n,
        d: Some(x.ncols()),
        k: Some(k),
        model: &model,
        ran,
        seed: a.algo.seed,
        seconds: vec![("read", read_s), ("fit", fit_s)],
        extra,
    }
    .emit(a.algo.labels_out.as_deref(), &a.output, started)
}

#[derive(clap::Args)]
pub struct PppArgs {
    /// Points, rows = samples (.npy or .csv).
    input: PathBuf,
    /// Smallest number of clusters tried.
    #[arg(long, default_value_t = 2)]
    k_min: usize,
    /// Largest number of clusters tried.
    #[arg(long, default_value_t = 10)]
    k_max: usize,
    /// k-means runs (seeds) per k.
    #[arg(long, default_value_t = 20)]
    seeds: usize,
    /// Covariance type of the validating GMM: full, tied, diag or spherical.
    #[arg(long, default_value = "full")]
    covariance: String,
    /// Scores within this of the best count as tied; ties go to the lowest BIC.
    #[arg(long, default_value_t = 0.05)]
    tie_tolerance: f64,
    /// Posterior a point needs for its own cluster to be in the most separable set.
    #[arg(long, default_value_t = 0.95)]
    separable_threshold: f64,
    /// Seed of the runs' seeds.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write the consensus labels here (.npy int32 or .csv).
    #[arg(long)]
    labels_out: Option<PathBuf>,
    /// Write 1 for the points of the most separable set, 0 for the others (.npy or .csv).
    #[arg(long)]
    separable_out: Option<PathBuf>,
    // (the model is the validating GMM of the chosen partition)
    #[command(flatten)]
    model: ModelOutArg,
    #[command(flatten)]
    exec: ExecArgs,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn run_ppp(a: PppArgs) -> CliResult {
    let started = Instant::now();
    let params = Ppp::new(a.k_min, a.k_max)
        .n_runs(a.seeds)
        .covariance_type(a.covariance.parse()?)
        .tie_tolerance(a.tie_tolerance)
        .separable_threshold(a.separable_threshold)
        .seed(a.seed);
    let ((model, x, fit_s), ran) = a.exec.run("ppp", |_backend| {
        let x = load_points::<f64>(&a.input)?;
        let (bar, progress) = iteration_bar(a.k_max.saturating_sub(a.k_min) + 1, "ppp", &a.output);
        let t = Instant::now();
        let model = params.clone().progress(progress).fit(&x.view())?;
        bar.finish_and_clear();
        Ok((model, x, secs(t)))
    })?;
    // Output files first, so that a failure to write them is the only message.
    if let Some(p) = &a.labels_out {
        clustr::data::write_labels(p, &model.labels)?;
    }
    a.model.save(&model.gmm)?;
    if let Some(p) = &a.separable_out {
        let flags: Vec<i64> = model.separable.iter().map(|&s| i64::from(s)).collect();
        clustr::data::write_labels(p, &flags)?;
    }
    crate::harness::commit_outputs()?;
    if !a.output.quiet {
        errln!("    k  stability  agreement      score            BIC  distinct   best");
        for r in &model.table {
            errln!(
                "{} {:>3}  {:>9.4}  {:>9.4}  {:>9.4}  {:>13.2}  {:>8}  {:>5.2}",
                if r.k == model.k { '*' } else { ' ' },
                r.k,
                r.stability,
                r.agreement,
                r.score,
                r.bic,
                r.distinct_partitions,
                r.best_fraction
            );
        }
        let n_sep = model.separable.iter().filter(|&&s| s).count();
        errln!(
            "chosen k = {}; most separable set: {n_sep} of {} points",
            model.k,
            x.nrows()
        );
    }
    let table: Vec<serde_json::Value> = model
        .table
        .iter()
        .map(|r| {
            json!({"k": r.k, "stability": r.stability, "agreement": r.agreement, "score": r.score,
                   "bic": r.bic, "distinct_partitions": r.distinct_partitions,
                   "best_fraction": r.best_fraction, "inertia": r.inertia})
        })
        .collect();
    let mut extra = serde_json::Map::new();
    extra.insert("chosen_k".into(), json!(model.k));
    extra.insert("table".into(), json!(table));
    extra.insert(
        "n_separable".into(),
        json!(model.separable.iter().filter(|&&s| s).count()),
    );
    Report {
        algorithm: "ppp",
        n: x.nrows(),
        d: Some(x.ncols()),
        k: Some(model.k),
        model: &model,
        ran,
        seed: a.seed,
        seconds: vec![("fit", fit_s)],
        extra,
    }
    .emit(None, &a.output, started) // (labels written above)
}
