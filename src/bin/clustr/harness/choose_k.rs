//! `--k` with one value or several: the options every clustering subcommand takes, fitting each k and keeping the best by a criterion.

use super::*;

// Options every clustering subcommand takes.
#[derive(clap::Args, Clone, Debug)]
pub struct AlgoArgs {
    /// Number of clusters; or a range A:B (inclusive) or a list A,B,C: each k is fitted and the
    /// best by --criterion kept.
    #[arg(long, value_parser = parse_k_arg)]
    pub k: Ks,
    /// With several k, how to choose: silhouette, medoid-silhouette, calinski-harabasz (ch),
    /// davies-bouldin (db), bic, aic or elbow (default: medoid-silhouette for the k-medoids
    /// methods, bic for gmm, elbow for the kernel methods, silhouette otherwise).
    #[arg(long)]
    pub criterion: Option<String>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Maximum iterations (passes); the algorithm's default when omitted.
    #[arg(long)]
    pub max_iter: Option<usize>,
    /// Write the labels here (.npy int32 or .csv; -1 = noise).
    #[arg(long)]
    pub labels_out: Option<std::path::PathBuf>,
}

/// `--k`: the numbers of clusters to try (one, or several in increasing order), checked once.
fn parse_k_arg(s: &str) -> Result<Ks, String> {
    clustr::select_k::parse_ks(s).map_err(|e| e.to_string())
}

/// How a subcommand chooses among several k: its name on the progress bar, the steps of one
/// fit's bar, its default criterion, and the memory one fit of a given k needs (fits run at
/// once as far as `--max-memory` allows for the largest of them).
pub struct KChoice<'a> {
    pub what: &'a str,
    pub steps: usize,
    pub criterion: Criterion,
    pub memory_of_fit: Box<dyn Fn(usize) -> u64 + 'a>,
}

/// How many of the fits of `ks` may run at once within `limit` bytes: as many as the fit of
/// the k that needs the most allows (at least 1; a fit above the limit is refused by itself).
pub fn fits_at_once(ks: &[usize], memory_of_fit: &dyn Fn(usize) -> u64, limit: u64) -> u64 {
    let largest = ks.iter().map(|&k| memory_of_fit(k)).max().unwrap_or(0);
    (limit / largest.max(1)).clamp(1, ks.len().max(1) as u64)
}

/// What `--k` gave: the model, its k, and with several k the table (`k_selection` in the JSON).
pub struct Chosen<M> {
    pub model: M,
    pub k: usize,
    pub table: Option<serde_json::Value>,
}

/// The estimators whose number of clusters is their field `k`: a copy with another k, for
/// fitting each k of `--k A:B`.
pub trait WithK: Clone {
    fn with_k(&self, k: usize) -> Self;
}

macro_rules! with_k {
    ($($t:ty),*) => {$(
        impl WithK for $t {
            fn with_k(&self, k: usize) -> Self {
                let mut p = self.clone();
                p.k = k;
                p
            }
        }
    )*};
}

with_k!(
    clustr::kmeans::KMeans,
    clustr::kmeans::MiniBatchKMeans,
    clustr::mixture::GaussianMixture,
    clustr::kmedoids::KMedoids,
    clustr::kmedoids::Clara,
    clustr::kmedoids::Clarans,
    clustr::kernel::PowerKMeans,
    clustr::kernel::Kpkm,
    clustr::kernel::KernelKMeans,
    clustr::kernel::RffKpkm,
    clustr::kernel::IpRffMkpkm
);

/// Adds `k_selection` to a report's fields when several k were tried.
pub fn insert_k_selection(
    extra: &mut serde_json::Map<String, serde_json::Value>,
    table: Option<serde_json::Value>,
) {
    if let Some(t) = table {
        extra.insert("k_selection".into(), t);
    }
}

impl AlgoArgs {
    /// The one k of a subcommand that does not choose among several.
    pub fn single_k(&self, command: &str) -> CliResult<usize> {
        match (self.k.as_slice(), &self.criterion) {
            ([k], None) => Ok(*k),
            _ => Err(CliError::usage(format!(
                "{command} takes one --k (no range, list or --criterion)"
            ))),
        }
    }

    /// Fits `fit(k, progress)` with the one k, or with each of several k keeping the best by the
    /// criterion (the table is printed unless --quiet). `own` gives the family's own value of
    /// a criterion (BIC, medoid silhouette); the silhouette, CH and DB otherwise come from `x`.
    #[allow(clippy::too_many_arguments)]
    pub fn choose<F: Scalar, M: clustr::Clustering + Send>(
        &self,
        how: KChoice<'_>,
        out: &OutputArgs,
        n: usize,
        x: Option<ndarray::ArrayView2<'_, F>>,
        fit: impl Fn(usize, clustr::ProgressFn) -> clustr::Result<M> + Sync,
        own: impl Fn(&M, Criterion) -> Option<clustr::Result<f64>> + Sync,
    ) -> CliResult<Chosen<M>> {
        if let ([k], None) = (self.k.as_slice(), &self.criterion) {
            let (bar, progress) = iteration_bar(how.steps, how.what, out);
            let model = fit(*k, progress)?;
            bar.finish_and_clear();
            return Ok(Chosen {
                model,
                k: *k,
                table: None,
            });
        }
        let criterion = match &self.criterion {
            Some(c) => c.parse()?,
            None => how.criterion,
        };
        let ks = self.k.clone();
        let at_once = fits_at_once(&ks, &how.memory_of_fit, clustr::memory::max_memory());
        let bar = progress_bar(
            ks.len() as u64,
            &format!("{}: fitting each k", how.what),
            "fits",
            out,
        );
        let b = bar.clone();
        let mut select = SelectK::new(ks, criterion)
            .parallel(at_once as usize)
            .seed(self.seed);
        select.progress = Some(clustr::ProgressFn::new(move |p| {
            b.set_position(p.iteration as u64)
        }));
        let quiet = clustr::ProgressFn::new(|_| {});
        let chosen = select.run(n, x, |k| fit(k, quiet.clone()), own)?;
        bar.finish_and_clear();
        let rows: Vec<serde_json::Value> = chosen
            .table
            .iter()
            .map(|r| {
                serde_json::json!({
                    "k": r.k, "score": r.score, "loss": r.loss, "n_clusters": r.n_clusters,
                    "n_iter": r.n_iter, "seconds": r.seconds,
                })
            })
            .collect();
        let table = serde_json::json!({
            "criterion": criterion.name(),
            "higher_is_better": criterion.higher_is_better(),
            "chosen_k": chosen.best_k,
            "table": rows,
        });
        Ok(Chosen {
            model: chosen.model,
            k: chosen.best_k,
            table: Some(table),
        })
    }
}

/// The rows `--k` with several values scores the silhouette on, for `n` points (as
/// [`AlgoArgs::choose`] samples them).
pub fn silhouette_rows(ks: &Ks, n: usize, seed: u64) -> Vec<usize> {
    SelectK::new(ks.clone(), Criterion::Silhouette)
        .seed(seed)
        .silhouette_rows(n)
}

/// The table of a choice of k (the JSON's `k_selection`) on stderr, the chosen row marked.
pub(super) fn print_k_table(t: &serde_json::Value) {
    let criterion = t["criterion"].as_str().unwrap_or("criterion");
    let better = if t["higher_is_better"].as_bool() == Some(true) {
        "higher"
    } else {
        "lower"
    };
    errln!("clustr: choosing k by {criterion} ({better} is better):");
    errln!(
        "      k  {criterion:>18}  {:>14}  {:>8}  {:>10}  {:>9}",
        "loss",
        "clusters",
        "iterations",
        "seconds"
    );
    for r in t["table"].as_array().into_iter().flatten() {
        let mark = if r["k"] == t["chosen_k"] { "*" } else { " " };
        let number = |v: &serde_json::Value, f: fn(f64) -> String| v.as_f64().map_or("-".to_string(), f);
        let score = number(&r["score"], |v| clustr::scalar::readable_to(v, 6));
        let loss = number(&r["loss"], |v| format!("{v:.6e}"));
        errln!(
            "  {mark} {:>4}  {score:>18}  {loss:>14}  {:>8}  {:>10}  {:>9.3}",
            r["k"].as_u64().unwrap_or(0),
            r["n_clusters"].as_u64().unwrap_or(0),
            r["n_iter"].as_u64().unwrap_or(0),
            r["seconds"].as_f64().unwrap_or(0.0)
        );
    }
}
