//! The `clustr` command line: a thin layer over the library (the contract is the README's "Command line" section).
//!
//! Exit codes: 0 success, 2 bad input or parameters (one line on stderr naming the problem),
//! 1 other failures, 141 when the reader of standard output closed it early (see `streams`),
//! 130 after Ctrl-C (SIGINT) and 143 after SIGTERM (128 + the signal's number). Output files
//! are written whole or not at all.

#[macro_use]
mod streams;
mod datasets_cmd;
mod density_cmd;
mod distances;
mod eval_cmd;
mod gp_cmd;
mod harness;
mod kernel_cmd;
mod kmeans_cmd;
mod kmedoids_cmd;
mod mixture_cmd;
mod predict_cmd;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Scalable clustering: k-medoids, k-means and Gaussian mixtures, DBSCAN/OPTICS, kernel
/// power k-means, MagmaClust.
#[derive(Parser)]
#[command(name = "clustr", version, about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Memory a run may use, such as 512M or 4G (default: 80% of the available memory, or of
    /// the room left under a container's or job's cgroup memory limit); above it a run stops
    /// before allocating, with its estimate and what to use instead.
    #[arg(long, global = true, value_parser = max_memory)]
    max_memory: Option<u64>,
    /// The first line of every CSV input is a header (default: it is one when all its cells
    /// are non-numbers).
    #[arg(long, global = true, conflicts_with = "no_header")]
    header: bool,
    /// The first line of every CSV input is data.
    #[arg(long, global = true)]
    no_header: bool,
    /// The columns of the points to use, numbered from 1 or named in the header: 1,3-5 or
    /// sepal_length,petal_length (the others are skipped unread, so a text column does no harm).
    #[arg(long, global = true)]
    columns: Option<String>,
    /// Columns of the points to leave out, as for --columns: an id or a label column.
    #[arg(long, global = true)]
    drop_columns: Option<String>,
    /// Standardise each column of the points before clustering: mean 0 and standard deviation
    /// 1 (scikit-learn's StandardScaler). Not with --model-out or predict: the scaling is not
    /// stored in the model. Sparse rows (k-means on a .npz, .mtx or svmlight file) are scaled
    /// to standard deviation 1 without centring, which keeps zeros zero (StandardScaler with
    /// with_mean=False; constant columns unchanged; --robust refused).
    #[arg(long, global = true)]
    standardize: bool,
    /// With --standardize: median 0 and interquartile range 1 instead (RobustScaler).
    #[arg(long, global = true, requires = "standardize")]
    robust: bool,
}

/// The files of the command, as (how the user named it, path): its outputs (`--out`,
/// `--*-out`, `--plot`) and its inputs (every other path, and a text option such as `--init`
/// that names an existing file).
type Files = Vec<(String, PathBuf)>;

fn command_files(cmd: &clap::Command, m: &clap::ArgMatches) -> (Files, Files) {
    let (mut inputs, mut outputs) = (Vec::new(), Vec::new());
    let (mut cmd, mut level) = (cmd, Some(m));
    while let Some(m) = level {
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            let name = arg.get_long().map_or(String::new(), |long| format!("--{long}"));
            let output = id == "out" || id == "plot" || id.ends_with("_out");
            if let Ok(Some(path)) = m.try_get_one::<PathBuf>(id) {
                if output {
                    outputs.push((name, path.clone()));
                } else {
                    inputs.push((name, path.clone()));
                }
            } else if let Ok(Some(text)) = m.try_get_one::<String>(id) {
                if Path::new(text).is_file() {
                    inputs.push((name, PathBuf::from(text)));
                }
            }
        }
        level = None;
        if let Some((sub_name, sub)) = m.subcommand() {
            if let Some(sub_cmd) = cmd.find_subcommand(sub_name) {
                (cmd, level) = (sub_cmd, Some(sub));
            }
        }
    }
    (inputs, outputs)
}

fn named(files: &[(String, PathBuf)]) -> Vec<clustr::data::output::NamedPath<'_>> {
    files
        .iter()
        .map(|(name, path)| clustr::data::output::NamedPath { name, path })
        .collect()
}

/// Checks before any work that every output can be written and replaces neither an input nor
/// another output (see `clustr::data::output::check_outputs`).
fn check_outputs(cmd: &clap::Command, m: &clap::ArgMatches) -> harness::CliResult {
    let (inputs, outputs) = command_files(cmd, m);
    clustr::data::output::check_outputs(&named(&inputs), &named(&outputs))?;
    Ok(())
}

fn max_memory(s: &str) -> Result<u64, String> {
    clustr::memory::parse_size(s).map_err(|e| e.to_string())
}

/// (Each subcommand's arguments are built only when it runs or its help is shown: building all
/// of them was most of `clustr --version`'s time. So the argument structures carry `//`
/// comments: a doc comment would become the description of the subcommand that uses them.)
#[derive(Subcommand)]
#[command(defer = true)]
enum Command {
    /// Full pairwise distance matrix of the rows of INPUT, written as .npy.
    Distances(distances::Args),
    /// External (ARI, NMI, ACC, purity) and internal (silhouette, CH, DB) measures of labels.
    Eval(eval_cmd::Args),
    /// List or export the shipped data sets and the generators.
    Datasets(datasets_cmd::Args),
    /// k-means (Lloyd, scikit-learn's semantics, greedy k-means++).
    Kmeans(kmeans_cmd::Args),
    /// Bisecting k-means (scikit-learn's BisectingKMeans): split the largest cluster in two, k − 1 times.
    BisectingKmeans(kmeans_cmd::BisectingArgs),
    /// Mini-batch k-means (scikit-learn's update rules); streams a .npy larger than memory.
    MinibatchKmeans(kmeans_cmd::MiniBatchArgs),
    /// DBSCAN (scikit-learn's semantics; O(n) memory; haversine eps in km, or --eps-m).
    #[command(allow_negative_numbers = true)]
    Dbscan(density_cmd::DbscanArgs),
    /// OPTICS with xi or DBSCAN extraction, reachability CSV and plot.
    #[command(allow_negative_numbers = true)]
    Optics(density_cmd::OpticsArgs),
    /// HDBSCAN (scikit-learn's semantics): density clusters without eps, O(n) memory.
    #[command(allow_negative_numbers = true)]
    Hdbscan(density_cmd::HdbscanArgs),
    /// Single-linkage clustering (scipy's linkage + fcluster), O(n) memory.
    #[command(allow_negative_numbers = true)]
    SingleLinkage(density_cmd::SingleLinkageArgs),
    /// Power k-means (Xu & Lange 2019): annealed from k-harmonic means to k-means.
    PowerKmeans(kernel_cmd::PowerKMeansArgs),
    /// Exact kernel power k-means on the n × n Gaussian kernel matrix.
    Kpkm(kernel_cmd::KpkmArgs),
    /// Kernel k-means (Lloyd's iterations in the Gaussian kernel's feature space, n × n matrix).
    KernelKmeans(kernel_cmd::KernelKMeansArgs),
    /// Kernel power k-means on random Fourier features (no n × n matrix).
    RffKpkm(kernel_cmd::RffKpkmArgs),
    /// Multiple-kernel, possibilistic RFF kernel power k-means (robust to outliers).
    IpRffMkpkm(kernel_cmd::IpArgs),
    /// MagmaClust: clustering and prediction of functional data (tasks) with multi-task GPs.
    #[command(subcommand)]
    Magmaclust(gp_cmd::MagmaCommand),
    /// Gaussian mixture fitted by EM (scikit-learn's GaussianMixture semantics).
    Gmm(mixture_cmd::GmmArgs),
    /// PPP: k-means partitions validated by a GMM, choosing k (our reading of Sultan 2020).
    Ppp(mixture_cmd::PppArgs),
    /// k-medoids: PAM (BUILD + the original SWAP).
    Pam(kmedoids_cmd::Args),
    /// k-medoids: FastPAM1 (PAM's result, O(k) faster SWAP).
    Fastpam1(kmedoids_cmd::Args),
    /// k-medoids: FastPAM2 (up to k swaps per pass).
    Fastpam2(kmedoids_cmd::Args),
    /// k-medoids: FasterPAM (eager swaps).
    Fasterpam(kmedoids_cmd::Args),
    /// k-medoids: the alternating (k-means-style) heuristic.
    Alternating(kmedoids_cmd::Args),
    /// k-medoids: CLARA (PAM on 5 samples of 40 + 2k; on-the-fly distances).
    Clara(kmedoids_cmd::Args),
    /// k-medoids: FastCLARA (FastPAM2 on 5 samples of 80 + 4k).
    Fastclara(kmedoids_cmd::Args),
    /// k-medoids: FasterCLARA (FasterPAM on 5 samples of 80 + 4k).
    Fasterclara(kmedoids_cmd::Args),
    /// k-medoids: CLARANS (randomised swaps, numlocal 2, maxneighbor 1.25% of k(n-k)).
    Clarans(kmedoids_cmd::Args),
    /// k-medoids: FastCLARANS (random candidates against all medoids, 2.5% of n-k).
    Fastclarans(kmedoids_cmd::Args),
    /// Assign new points with a model file written by a fit's --model-out.
    Predict(predict_cmd::Args),
    /// Print a shell completion script: `clustr completions bash > ~/.local/share/bash-completion/completions/clustr`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

/// `clustr --version`: the version, the commit built from and the optional features enabled.
fn version() -> &'static str {
    let features: Vec<&str> = [("cuda", cfg!(feature = "cuda")), ("mpi", cfg!(feature = "mpi"))]
        .into_iter()
        .filter_map(|(name, on)| on.then_some(name))
        .collect();
    let features = if features.is_empty() {
        "none".to_string()
    } else {
        features.join(", ")
    };
    let text = format!(
        "{} (commit {}; optional features: {features})",
        env!("CARGO_PKG_VERSION"),
        env!("CLUSTR_COMMIT")
    );
    Box::leak(text.into_boxed_str())
}

fn main() -> ExitCode {
    stop_on_signals();
    // (parsed in place: a copy of the whole command tree was most of the start-up's work)
    let mut command = Cli::command().version(version());
    let parsed = command
        .try_get_matches_from_mut(std::env::args_os())
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let (cli, matches) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            use clap::error::ErrorKind::*;
            if e.kind() == DisplayHelpOnMissingArgumentOrSubcommand {
                let _ = e.print(); // (on stderr)
                return ExitCode::from(2);
            }
            if matches!(e.kind(), DisplayHelp | DisplayVersion) {
                // Help and version are results on stdout: through the stream policy (with
                // clap's colours on a terminal).
                use std::io::IsTerminal;
                let printed = if std::io::stdout().is_terminal() {
                    let _ = e.print();
                    Ok(())
                } else {
                    streams::out(&e.render().to_string())
                };
                return match printed {
                    Err(err) => harness::fail(&err),
                    Ok(()) if streams::stdout_closed() => ExitCode::from(streams::CLOSED_PIPE_EXIT),
                    Ok(()) => ExitCode::SUCCESS,
                };
            }
            return harness::fail(&harness::CliError::usage(usage_error(&e)));
        }
    };
    clustr::memory::set_max_memory(cli.max_memory);
    harness::set_csv_header((cli.header || cli.no_header).then_some(cli.header));
    let list = |s: &Option<String>| s.as_deref().map(clustr::data::columns::parse_columns).transpose();
    let columns = match (list(&cli.columns), list(&cli.drop_columns)) {
        (Ok(keep), Ok(drop)) => clustr::data::columns::ColumnSelection {
            keep,
            drop: drop.unwrap_or_default(),
        },
        (Err(e), _) | (_, Err(e)) => return harness::fail(&e.into()),
    };
    let points = harness::PointsOptions {
        columns,
        standardize: cli.standardize.then_some(if cli.robust {
            clustr::data::columns::Scaling::Robust
        } else {
            clustr::data::columns::Scaling::ZScore
        }),
    };
    if points.standardize.is_some() {
        let (_, outputs) = command_files(&command, &matches);
        if matches!(cli.command, Command::Predict(_)) || outputs.iter().any(|(name, _)| name == "--model-out")
        {
            return harness::fail(&harness::CliError::usage(
                "--standardize is not stored in a model: with --model-out or predict, standardise the file beforehand",
            ));
        }
    }
    harness::set_points_options(points);
    let quiet = matches
        .subcommand()
        .and_then(|(_, m)| m.try_get_one::<bool>("quiet").ok().flatten().copied());
    harness::set_quiet(quiet.unwrap_or(false));
    if let Err(e) = check_outputs(&command, &matches) {
        return harness::fail(&e);
    }
    // Outputs wait until the command succeeds, then are renamed into place together.
    clustr::data::output::stage_outputs();
    let result = match cli.command {
        Command::Distances(a) => distances::run(a),
        Command::Eval(a) => eval_cmd::run(a),
        Command::Datasets(a) => datasets_cmd::run(a),
        Command::Kmeans(a) => kmeans_cmd::run(a),
        Command::Predict(a) => predict_cmd::run(a),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "clustr", &mut script);
            streams::out(&String::from_utf8_lossy(&script))
        }
        Command::MinibatchKmeans(a) => kmeans_cmd::run_minibatch(a),
        Command::BisectingKmeans(a) => kmeans_cmd::run_bisecting(a),
        Command::Dbscan(a) => density_cmd::run_dbscan(a),
        Command::Optics(a) => density_cmd::run_optics(a),
        Command::Hdbscan(a) => density_cmd::run_hdbscan(a),
        Command::SingleLinkage(a) => density_cmd::run_single_linkage(a),
        Command::PowerKmeans(a) => kernel_cmd::run_power_kmeans(a),
        Command::Kpkm(a) => kernel_cmd::run_kpkm(a),
        Command::KernelKmeans(a) => kernel_cmd::run_kernel_kmeans(a),
        Command::RffKpkm(a) => kernel_cmd::run_rff_kpkm(a),
        Command::IpRffMkpkm(a) => kernel_cmd::run_ip_rff_mkpkm(a),
        Command::Magmaclust(a) => gp_cmd::run_magmaclust(a),
        Command::Gmm(a) => mixture_cmd::run_gmm(a),
        Command::Ppp(a) => mixture_cmd::run_ppp(a),
        Command::Pam(a) => kmedoids_cmd::run("pam", a),
        Command::Fastpam1(a) => kmedoids_cmd::run("fastpam1", a),
        Command::Fastpam2(a) => kmedoids_cmd::run("fastpam2", a),
        Command::Fasterpam(a) => kmedoids_cmd::run("fasterpam", a),
        Command::Alternating(a) => kmedoids_cmd::run("alternating", a),
        Command::Clara(a) => kmedoids_cmd::run("clara", a),
        Command::Fastclara(a) => kmedoids_cmd::run("fastclara", a),
        Command::Fasterclara(a) => kmedoids_cmd::run("fasterclara", a),
        Command::Clarans(a) => kmedoids_cmd::run("clarans", a),
        Command::Fastclarans(a) => kmedoids_cmd::run("fastclarans", a),
    };
    match result.and_then(|()| harness::commit_outputs()) {
        Ok(()) if streams::stdout_closed() => ExitCode::from(streams::CLOSED_PIPE_EXIT),
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            clustr::data::output::discard_staged();
            harness::fail(&e)
        }
    }
}

/// Ctrl-C, SIGTERM or SIGHUP stops the run at once and removes the output files being
/// written, so an interrupted run leaves no partial output; the exit code is 128 + the
/// signal's number (130 for SIGINT, 143 for SIGTERM).
fn stop_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            clustr::data::remove_pending_outputs();
            errln!("clustr: interrupted; no output written");
            std::process::exit(128 + signal);
        }
    });
}

/// The one line of a usage error. A missing argument is named (clap lists them on the lines
/// after its first).
fn usage_error(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::MissingRequiredArgument {
        if let Some(ContextValue::Strings(missing)) = e.get(ContextKind::InvalidArg) {
            let s = if missing.len() == 1 { "" } else { "s" };
            return format!("missing required argument{s}: {}", missing.join(", "));
        }
    }
    first_line(&e.to_string())
}

fn first_line(s: &str) -> String {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid arguments")
        .trim_start_matches("error: ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::Cli;

    /// `--k A:B` runs as many fits at once as the largest k's fit allows: here the smallest
    /// fits twice within the limit and the largest once, so one runs at a time.
    #[test]
    fn fits_at_once_are_sized_by_the_largest_k() {
        let memory = |k: usize| 100 * k as u64;
        assert_eq!(crate::harness::fits_at_once(&[1, 2], &memory, 250), 1);
        assert_eq!(crate::harness::fits_at_once(&[2, 1], &memory, 250), 1);
        assert_eq!(crate::harness::fits_at_once(&[1, 2], &memory, 400), 2);
        assert_eq!(crate::harness::fits_at_once(&[1, 2, 3], &memory, 10_000), 3);
        assert_eq!(crate::harness::fits_at_once(&[5], &memory, 10), 1);
    }
    /// Every described method is a subcommand, and every subcommand is a described method or
    /// one of the tools around them.
    #[test]
    fn subcommands_are_the_described_methods() {
        let cli = Cli::command();
        let names: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
        for m in clustr::methods::METHODS {
            assert!(names.contains(&m.name), "{} has no subcommand", m.name);
        }
        let tools = ["distances", "eval", "datasets", "predict", "completions"];
        for name in names {
            assert!(
                tools.contains(&name) || clustr::methods::method(name).is_some(),
                "subcommand {name} is not described in clustr::methods"
            );
        }
    }

    use crate::harness::{cli_words, flag_of};
    use clap::CommandFactory;
    use clustr::error::{hints, Suggestion};

    /// Every suggestion of every library hint, rendered in the command line's words, names a
    /// flag some subcommand has, or a subcommand that exists: a renamed flag fails here.
    #[test]
    fn every_library_hint_names_existing_flags_and_subcommands() {
        // (built whole: the subcommands' arguments are otherwise built only when one runs)
        let mut cli = Cli::command();
        cli.build();
        let subcommands: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
        let has_flag = |flag: &str| {
            cli.get_subcommands()
                .flat_map(|c| std::iter::once(c).chain(c.get_subcommands()))
                .any(|c| c.get_arguments().any(|a| a.get_long() == Some(flag)))
        };
        for hint in hints::ALL {
            for s in hint.suggestions {
                match s {
                    Suggestion::Set(p, _) | Suggestion::Lower(p) => {
                        assert!(has_flag(&flag_of(p)), "{p}: no subcommand has --{}", flag_of(p))
                    }
                    Suggestion::Method(m) => assert!(subcommands.contains(m), "no subcommand {m}"),
                    Suggestion::Other(_) => {}
                }
            }
            let line = hint.render(cli_words);
            assert!(line.starts_with("use ") && !line.contains('_'), "{line}");
        }
        let gmm = hints::GMM.render(cli_words);
        assert_eq!(
            gmm,
            "use --covariance diag, --covariance spherical, a smaller --k or clustr minibatch-kmeans"
        );
        assert_eq!(
            hints::GMM.to_string(),
            "use covariance_type = diag, covariance_type = spherical, a smaller k or minibatch-kmeans"
        );
    }
}
