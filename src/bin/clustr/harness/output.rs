//! Output: `--json`/`--quiet`, the report of a fit (labels file, JSON, summary), model files, committing outputs.

use super::*;

// Output options.
#[derive(clap::Args, Clone, Debug)]
pub struct OutputArgs {
    /// Print one JSON object on stdout (human-readable output goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// No progress bar or human-readable summary.
    #[arg(long)]
    pub quiet: bool,
}

/// Prints a JSON value on stdout (see [`crate::streams`] for a closed or full stdout).
pub fn print_json(v: &serde_json::Value) -> CliResult {
    outln!("{}", serde_json::to_string_pretty(v).expect("serialisable"))
}

// `--model-out` of the subcommands whose model assigns new points.
#[derive(clap::Args, Clone, Debug)]
pub struct ModelOutArg {
    /// Write the fitted model here (JSON, see `clustr predict`): what assigns new points,
    /// with the command line that fitted it.
    #[arg(long)]
    pub model_out: Option<std::path::PathBuf>,
}

impl ModelOutArg {
    /// Saves `model` if asked (staged with the run's other outputs), recording the command.
    pub fn save<M: clustr::model_file::SaveLoad>(&self, model: &M) -> CliResult {
        if let Some(p) = &self.model_out {
            let args: Vec<String> = std::env::args().skip(1).collect();
            model.save_with(p, serde_json::json!({ "command": args }))?;
        }
        Ok(())
    }

    /// Refuses `--model-out` where the run gives no model that can assign new points.
    pub fn refuse_with(&self, why: Option<&str>) -> CliResult {
        match (why, &self.model_out) {
            (Some(why), Some(_)) => Err(CliError::usage(format!("--model-out: {why}"))),
            _ => Ok(()),
        }
    }
}

/// The result of a clustering subcommand: written as the labels file, the JSON object of the
/// CLI contract, and a human-readable line on stderr.
pub struct Report<'a> {
    pub algorithm: &'a str,
    pub n: usize,
    pub d: Option<usize>,
    pub k: Option<usize>,
    pub model: &'a dyn clustr::Clustering,
    pub ran: Ran,
    pub seed: u64,
    /// Phase timings, e.g. ("distances", s); "total" is added.
    pub seconds: Vec<(&'a str, f64)>,
    /// Algorithm-specific fields (medoids, centers, n_swaps...).
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Report<'_> {
    /// Writes the labels (if asked), then prints the summary. A non-finite objective is never
    /// reported as a result: the input was beyond what the arithmetic could take (exit 2).
    pub fn emit(self, labels_out: Option<&Path>, out: &OutputArgs, started: Instant) -> CliResult {
        if let Some(loss) = self.model.loss().filter(|l| !l.is_finite()) {
            return Err(CliError::from(Error::OutOfRange(format!(
                "{}: the objective came out as {loss}: the input values are beyond what the \
                 algorithm's arithmetic can take; rescale the data",
                self.algorithm
            ))));
        }
        if let Some(p) = labels_out {
            clustr::data::write_labels(p, self.model.labels())?;
        }
        let written = clustr::data::output::commit_staged()?;
        let mut seconds = serde_json::Map::new();
        seconds.insert("total".into(), serde_json::json!(secs(started)));
        for (k, v) in &self.seconds {
            seconds.insert((*k).into(), serde_json::json!(v));
        }
        let m = self.model;
        if !out.quiet {
            // (after the outputs are in place: a failure before this point is one line)
            if let Some(t) = self.extra.get("k_selection") {
                print_k_table(t);
            }
            errln!("clustr: {}", self.summary(secs(started)));
            if !written.is_empty() {
                let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
                errln!("clustr: wrote {}", names.join(", "));
            }
        }
        if out.json {
            let mut v = serde_json::json!({
                "algorithm": self.algorithm,
                "n": self.n,
                "d": self.d,
                "k": self.k,
                "n_clusters": m.n_clusters(),
                "n_noise": m.n_noise(),
                "loss": m.loss(),
                "n_iter": m.n_iter(),
                "converged": m.converged(),
                "backend": self.ran.backend,
                "threads": self.ran.threads,
                "seed": self.seed,
                "seconds": seconds,
            });
            v.as_object_mut().expect("object").extend(self.extra);
            print_json(&v)?;
        }
        Ok(())
    }
}

impl Report<'_> {
    /// The human summary: clusters and noise, the objective under its usual name, iterations
    /// and convergence where the method iterates, the silhouettes and criteria the run
    /// computed, and the time.
    fn summary(&self, seconds: f64) -> String {
        let m = self.model;
        let mut parts = vec![format!(
            "{}: n = {}, {} clusters",
            self.algorithm,
            self.n,
            m.n_clusters()
        )];
        let method = clustr::methods::method(self.algorithm);
        let density = method.is_some_and(|m| m.family == clustr::methods::Family::Density);
        if self.extra.get("dtype").and_then(|v| v.as_str()) == Some("float32") {
            parts.push("float32 distances".into());
        }
        if density || m.n_noise() > 0 {
            let pct = 100.0 * m.n_noise() as f64 / self.n.max(1) as f64;
            parts.push(format!("{} noise points ({pct:.1} %)", m.n_noise()));
        }
        if let Some(loss) = m.loss() {
            let name = method.and_then(|m| m.objective).unwrap_or("objective");
            parts.push(format!("{name} {}", clustr::scalar::readable_to(loss, 6)));
            let state = if m.converged() {
                "converged"
            } else {
                "not converged"
            };
            parts.push(format!("{} iterations ({state})", m.n_iter()));
        }
        for (key, name) in [
            ("silhouette", "silhouette"),
            ("medoid_silhouette", "medoid silhouette"),
            ("bic", "BIC"),
        ] {
            if let Some(v) = self.extra.get(key).and_then(|v| v.as_f64()) {
                parts.push(format!("{name} {}", clustr::scalar::readable_to(v, 4)));
            }
        }
        parts.push(format!("{seconds:.3} s"));
        parts.join(", ")
    }
}

/// Renames every output of the run into place (all or none); called before the summary that
/// says they were written.
pub fn commit_outputs() -> CliResult {
    clustr::data::output::commit_staged()?;
    Ok(())
}
