//! `clustr power-kmeans`, `kpkm`, `kernel-kmeans`, `rff-kpkm` and `ip-rff-mkpkm`.

use crate::harness::{insert_k_selection, Chosen, KChoice, WithK};
use crate::harness::{
    secs, AlgoArgs, CliError, CliResult, Dtype, ExecArgs, ModelOutArg, OutputArgs, Processes, Report,
    SampleWeightArg, WithLabels,
};
use clustr::data::write_matrix;
use clustr::kernel::{Bandwidth, IpRffMkpkm, Kernel, KernelKMeans, Kpkm, PowerKMeans, RffKpkm, Schedule};
use clustr::memory::MemoryEstimate;
use clustr::select_k::Criterion;
use clustr::{AnyBackend, Clustering, Fit, Scalar};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

// Options of every command of this module.
#[derive(clap::Args)]
pub struct RunArgs {
    /// Points, rows = samples (.npy or .csv).
    input: PathBuf,
    #[command(flatten)]
    algo: AlgoArgs,
    /// Initial centroids: random (k data points) or k-means++ (in the space the centroids
    /// live in: the data, the random features, or the kernel's implied distance).
    #[arg(long, default_value = "k-means++")]
    init: String,
    /// Runs from different initial centroids; the one with the lowest objective (the kernel
    /// k-means objective at the final labels) is kept. For the annealed methods odd-numbered
    /// runs start at 10·s0.
    #[arg(long, default_value_t = clustr::kernel::DEFAULT_N_INIT)]
    n_init: usize,
    /// Element type of the computation: f32 or f64.
    #[arg(long, value_enum, default_value = "f64")]
    dtype: Dtype,
    #[command(flatten)]
    exec: ExecArgs,
    #[command(flatten)]
    output: OutputArgs,
}

// The annealing of the power k-means commands.
#[derive(clap::Args)]
pub struct AnnealArgs {
    /// Initial power s0 (negative; default −1 for power-kmeans, −10 for the kernel methods).
    #[arg(long, allow_negative_numbers = true)]
    s0: Option<f64>,
    /// Annealing factor: s ← eta·s every 2 iterations [default: 1.04].
    #[arg(long)]
    eta: Option<f64>,
    /// Relative tolerance on the centroids' movement [default: 1e-4].
    #[arg(long)]
    tol: Option<f64>,
}

impl AnnealArgs {
    /// The estimator's default schedule `base` with the options given.
    fn schedule(&self, base: &Schedule, run: &RunArgs) -> Schedule {
        Schedule {
            s0: self.s0.unwrap_or(base.s0),
            eta: self.eta.unwrap_or(base.eta),
            tol: self.tol.unwrap_or(base.tol),
            max_iter: run.algo.max_iter.unwrap_or(base.max_iter),
            ..*base
        }
    }
}

impl RunArgs {
    fn init(&self) -> CliResult<clustr::kernel::PowerInit> {
        Ok(match self.init.as_str() {
            "random" => clustr::kernel::PowerInit::Random,
            "k-means++" | "kmeans++" => clustr::kernel::PowerInit::KMeansPlusPlus,
            other => {
                return Err(CliError::usage(format!(
                    "invalid parameter init = {other}: expected random or k-means++"
                )))
            }
        })
    }
}

/// What every run reports beyond the common fields: its number of runs, and why it did not
/// reach the hard-assignment fixed point when it did not.
fn restarts(fit: &clustr::kernel::PowerFit, n_init: usize) -> serde_json::Map<String, serde_json::Value> {
    let mut e = serde_json::Map::new();
    e.insert("n_init".into(), json!(n_init));
    if !fit.converged {
        e.insert(
            "not_converged".into(),
            json!(format!(
                "labels still changing after {} hard iterations (max_iter); raise --max-iter",
                fit.hard_iter
            )),
        );
    }
    e
}

/// What an annealed run reports besides [`restarts`]: where the annealing ended.
fn annealing(fit: &clustr::kernel::PowerFit, n_init: usize) -> serde_json::Map<String, serde_json::Value> {
    let mut e = restarts(fit, n_init);
    e.insert("s".into(), json!(fit.s));
    e.insert("annealing_steps".into(), json!(fit.annealing_steps));
    e.insert("annealed".into(), json!(fit.annealed));
    e.insert("hard_iter".into(), json!(fit.hard_iter));
    e
}

/// `--sigma S` or `--sigma median`.
fn bandwidth(s: &str) -> CliResult<Bandwidth> {
    if s == "median" {
        return Ok(Bandwidth::Median);
    }
    s.parse::<f64>().map(Bandwidth::Given).map_err(|_| {
        CliError::usage(format!(
            "invalid parameter sigma = {s}: expected a number or median"
        ))
    })
}

#[derive(clap::Args)]
pub struct PowerKMeansArgs {
    #[command(flatten)]
    power: RunArgs,
    #[command(flatten)]
    anneal: AnnealArgs,
    #[command(flatten)]
    model: ModelOutArg,
    #[command(flatten)]
    weights: SampleWeightArg,
    /// Run as one process of an MPI job (`mpirun -n P clustr power-kmeans --distributed X.npy`):
    /// each process holds its slice of the rows, the weighted sums are summed over the processes; rank 0 writes the
    /// labels and prints the summary. Needs the `mpi` feature.
    #[arg(long)]
    distributed: bool,
}

#[derive(clap::Args)]
pub struct KpkmArgs {
    #[command(flatten)]
    power: RunArgs,
    #[command(flatten)]
    anneal: AnnealArgs,
    /// Gaussian kernel bandwidth: a number or median (the median heuristic).
    #[arg(long, default_value = "median")]
    sigma: String,
}

#[derive(clap::Args)]
pub struct KernelKMeansArgs {
    #[command(flatten)]
    run: RunArgs,
    /// Gaussian kernel bandwidth: a number or median (the median heuristic).
    #[arg(long, default_value = "median")]
    sigma: String,
}

#[derive(clap::Args)]
pub struct RffKpkmArgs {
    #[command(flatten)]
    power: RunArgs,
    #[command(flatten)]
    anneal: AnnealArgs,
    #[command(flatten)]
    model: ModelOutArg,
    #[command(flatten)]
    weights: SampleWeightArg,
    /// Number of random Fourier features D.
    #[arg(long, default_value_t = 1000)]
    n_features: usize,
    /// Gaussian kernel bandwidth: a number or median (the median heuristic).
    #[arg(long, default_value = "median")]
    sigma: String,
    /// Run as one process of an MPI job (`mpirun -n P clustr rff-kpkm --distributed X.npy`):
    /// each process holds its slice of the rows and maps them, the weighted
    /// sums are summed over the processes; rank 0 writes the
    /// labels and prints the summary. Needs the `mpi` feature.
    #[arg(long)]
    distributed: bool,
}

#[derive(clap::Args)]
pub struct IpArgs {
    #[command(flatten)]
    power: RunArgs,
    #[command(flatten)]
    anneal: AnnealArgs,
    #[command(flatten)]
    model: ModelOutArg,
    /// Random Fourier features per kernel.
    #[arg(long, default_value_t = 500)]
    n_features: usize,
    /// Bandwidths of the kernels, comma-separated (default: 1/4, 1/2, 1, 2, 4 x the median).
    #[arg(long, value_delimiter = ',')]
    sigmas: Option<Vec<f64>>,
    /// Typicality exponent m_p (> 1).
    #[arg(long, default_value_t = 2.0)]
    m_p: f64,
    /// Run MKPKM only (no possibilistic stage).
    #[arg(long)]
    no_possibilistic: bool,
    /// Write each point's typicality for its own cluster here (.npy or .csv).
    #[arg(long)]
    typicality_out: Option<PathBuf>,
}

/// How a command of this module fits: its name, its estimator (for the memory of one fit),
/// how it chooses among several k, and its iterations at most (for the progress bar).
struct Family<'a, P> {
    name: &'a str,
    params: &'a P,
    criterion: Criterion,
    steps: usize,
}

/// Loads the points (this process's slice in a distributed run), runs `fit(k, …)` on them
/// under the thread pool with the chosen backend for the one k or each of several (then keeps
/// the best by the criterion), and reports (rank 0, with every process's labels).
fn run_with<F: Scalar, M: Clustering + Send, P: MemoryEstimate + WithK + Sync>(
    family: Family<'_, P>,
    p: &RunArgs,
    procs: Processes,
    fit: impl Fn(usize, &ndarray::Array2<F>, clustr::ProgressFn, &AnyBackend) -> clustr::Result<M> + Sync,
    extra: impl FnOnce(&M) -> CliResult<serde_json::Map<String, serde_json::Value>>,
) -> CliResult {
    let started = Instant::now();
    if procs.comm.size() > 1 {
        p.algo.single_k(&format!("{} --distributed", family.name))?;
    }
    let ((chosen, d, read_s, fit_s), ran) = p.exec.run(family.name, |backend| {
        let t0 = Instant::now();
        let x = procs.load::<F>(&p.input)?;
        let read_s = secs(t0);
        let t1 = Instant::now();
        let how = KChoice {
            what: family.name,
            steps: family.steps,
            criterion: family.criterion,
            memory_of_fit: Box::new(|k| {
                family
                    .params
                    .with_k(k)
                    .memory_estimate(x.nrows(), x.ncols(), size_of::<F>())
            }),
        };
        let chosen = p.algo.choose(
            how,
            &p.output,
            x.nrows(),
            Some(x.view()),
            |k, progress| fit(k, &x, progress, backend),
            |_, _| None,
        )?;
        Ok((chosen, x.ncols(), read_s, secs(t1)))
    })?;
    let Chosen { model, k, table } = chosen;
    let Some(labels) = procs.gather_labels(model.labels().to_vec()) else {
        return Ok(()); // rank 0 writes and reports
    };
    let mut extra = extra(&model)?;
    extra.insert("processes".into(), json!(procs.comm.size()));
    insert_k_selection(&mut extra, table);
    Report {
        algorithm: family.name,
        n: labels.len(),
        d: Some(d),
        k: Some(k),
        model: &WithLabels {
            model: &model,
            labels,
        },
        ran,
        seed: p.algo.seed,
        seconds: vec![("read", read_s), ("fit", fit_s)],
        extra,
    }
    .emit(p.algo.labels_out.as_deref(), &p.output, started)
}

pub fn run_power_kmeans(a: PowerKMeansArgs) -> CliResult {
    let p = &a.power;
    let mut params = PowerKMeans::new(p.algo.k[0])
        .init(p.init()?)
        .n_init(p.n_init)
        .seed(p.algo.seed);
    params.schedule = a.anneal.schedule(&params.schedule, p);
    params.sample_weight = a.weights.read(a.distributed)?;
    let procs = Processes::new(a.distributed)?;
    fn go<F: Scalar>(p: &RunArgs, procs: Processes, params: PowerKMeans, out: &ModelOutArg) -> CliResult {
        let params = params.communicator(procs.comm.clone());
        let family = Family {
            name: "power-kmeans",
            params: &params,
            criterion: Criterion::Silhouette,
            steps: params.schedule.max_iter,
        };
        run_with::<F, _, _>(
            family,
            p,
            procs,
            |k, x, prog, backend| {
                params
                    .with_k(k)
                    .progress(prog)
                    .backend(backend.clone())
                    .fit(&x.view())
            },
            |m| {
                out.save(m)?;
                Ok(annealing(&m.fit, p.n_init))
            },
        )
    }
    match p.dtype {
        Dtype::F32 => go::<f32>(p, procs, params, &a.model),
        Dtype::F64 => go::<f64>(p, procs, params, &a.model),
    }
}

pub fn run_kpkm(a: KpkmArgs) -> CliResult {
    let p = &a.power;
    let mut params = Kpkm::new(p.algo.k[0])
        .kernel(Kernel::Gaussian(bandwidth(&a.sigma)?))
        .init(p.init()?)
        .n_init(p.n_init)
        .seed(p.algo.seed);
    params.schedule = a.anneal.schedule(&params.schedule, p);
    fn go<F: Scalar>(p: &RunArgs, params: Kpkm) -> CliResult {
        let family = Family {
            name: "kpkm",
            params: &params,
            criterion: Criterion::Elbow,
            steps: params.schedule.max_iter,
        };
        run_with::<F, _, _>(
            family,
            p,
            Processes::new(false)?,
            |k, x, prog, _| params.with_k(k).progress(prog).fit(&x.view()),
            |m: &clustr::kernel::KernelModel| Ok(annealing(&m.fit, p.n_init)),
        )
    }
    match p.dtype {
        Dtype::F32 => go::<f32>(p, params),
        Dtype::F64 => go::<f64>(p, params),
    }
}

pub fn run_kernel_kmeans(a: KernelKMeansArgs) -> CliResult {
    let p = &a.run;
    let mut params = KernelKMeans::new(p.algo.k[0])
        .kernel(Kernel::Gaussian(bandwidth(&a.sigma)?))
        .init(p.init()?)
        .n_init(p.n_init)
        .seed(p.algo.seed);
    if let Some(m) = p.algo.max_iter {
        params = params.max_iter(m);
    }
    fn go<F: Scalar>(p: &RunArgs, params: KernelKMeans) -> CliResult {
        let family = Family {
            name: "kernel-kmeans",
            params: &params,
            criterion: Criterion::Elbow,
            steps: params.max_iter,
        };
        run_with::<F, _, _>(
            family,
            p,
            Processes::new(false)?,
            |k, x, prog, _| params.with_k(k).progress(prog).fit(&x.view()),
            |m: &clustr::kernel::KernelModel| Ok(restarts(&m.fit, p.n_init)),
        )
    }
    match p.dtype {
        Dtype::F32 => go::<f32>(p, params),
        Dtype::F64 => go::<f64>(p, params),
    }
}

pub fn run_rff_kpkm(a: RffKpkmArgs) -> CliResult {
    let p = &a.power;
    let mut params = RffKpkm::new(p.algo.k[0])
        .n_features(a.n_features)
        .bandwidth(bandwidth(&a.sigma)?)
        .init(p.init()?)
        .n_init(p.n_init)
        .seed(p.algo.seed);
    params.schedule = a.anneal.schedule(&params.schedule, p);
    params.sample_weight = a.weights.read(a.distributed)?;
    let procs = Processes::new(a.distributed)?;
    fn go<F: Scalar>(p: &RunArgs, procs: Processes, params: RffKpkm, out: &ModelOutArg) -> CliResult {
        let params = params.communicator(procs.comm.clone());
        let family = Family {
            name: "rff-kpkm",
            params: &params,
            criterion: Criterion::Elbow,
            steps: params.schedule.max_iter,
        };
        run_with::<F, _, _>(
            family,
            p,
            procs,
            |k, x, prog, backend| {
                params
                    .with_k(k)
                    .progress(prog)
                    .backend(backend.clone())
                    .fit(&x.view())
            },
            |m: &clustr::kernel::RffKpkmModel<F>| {
                out.save(m)?;
                let mut e = annealing(&m.power.fit, p.n_init);
                e.insert("sigma".into(), json!(m.features.sigma));
                e.insert("n_features".into(), json!(m.features.n_features()));
                Ok(e)
            },
        )
    }
    match p.dtype {
        Dtype::F32 => go::<f32>(p, procs, params, &a.model),
        Dtype::F64 => go::<f64>(p, procs, params, &a.model),
    }
}

pub fn run_ip_rff_mkpkm(a: IpArgs) -> CliResult {
    let p = &a.power;
    let mut params = IpRffMkpkm::new(p.algo.k[0])
        .n_features(a.n_features)
        .m_p(a.m_p)
        .possibilistic(!a.no_possibilistic)
        .init(p.init()?)
        .n_init(p.n_init)
        .seed(p.algo.seed);
    params.schedule = a.anneal.schedule(&params.schedule, p);
    if let Some(s) = &a.sigmas {
        params = params.sigmas(s.clone());
    }
    fn go<F: Scalar>(
        p: &RunArgs,
        params: IpRffMkpkm,
        out: &Option<PathBuf>,
        model_out: &ModelOutArg,
    ) -> CliResult {
        let family = Family {
            name: "ip-rff-mkpkm",
            params: &params,
            criterion: Criterion::Elbow,
            steps: params.schedule.max_iter,
        };
        run_with::<F, _, _>(
            family,
            p,
            Processes::new(false)?,
            |k, x, prog, _| params.with_k(k).progress(prog).fit(&x.view()),
            |m: &clustr::kernel::IpRffMkpkmModel<F>| {
                model_out.save(m)?;
                let t = m.typicality();
                if let Some(path) = out {
                    let col = ndarray::Array2::from_shape_vec((t.len(), 1), t.clone()).expect("n x 1");
                    write_matrix(path, col.view(), &["typicality".to_string()])?;
                }
                let mut e = serde_json::Map::new();
                e.insert("kernel_weights".into(), json!(m.kernel_weights));
                e.insert(
                    "sigmas".into(),
                    json!(m.features.iter().map(|f| f.sigma).collect::<Vec<_>>()),
                );
                e.insert("scales".into(), json!(m.scales));
                e.insert("s".into(), json!(m.s));
                e.insert("n_init".into(), json!(p.n_init));
                Ok(e)
            },
        )
    }
    match p.dtype {
        Dtype::F32 => go::<f32>(p, params, &a.typicality_out, &a.model),
        Dtype::F64 => go::<f64>(p, params, &a.typicality_out, &a.model),
    }
}
