//! `clustr dbscan INPUT --eps E ...`, `clustr optics INPUT ...`, `clustr hdbscan INPUT ...` and
//! `clustr single-linkage INPUT ...`.

use crate::harness::{
    load_points, load_sparse_points, secs, sparse_rows, CliError, CliResult, ExecArgs, ModelOutArg,
    OutputArgs, Report,
};
use clustr::density::{Dbscan, Extraction, Hdbscan, IndexKind, Optics};
use clustr::{Fit, MetricKind};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

// Options shared by both commands.
#[derive(clap::Args)]
pub struct NeighbourArgs {
    /// Points, rows = samples (.npy or .csv); for haversine, latitude and longitude in degrees.
    /// A sparse .npz, .mtx or svmlight file is fitted as sparse rows under euclidean,
    /// sqeuclidean, cosine or manhattan, densified otherwise.
    input: PathBuf,
    /// Points a neighbourhood needs for its centre to be core, the point itself included.
    #[arg(long, default_value_t = 5)]
    min_samples: usize,
    /// Distance: euclidean, manhattan, chebyshev, minkowski:P, cosine, haversine (km), ...
    #[arg(long, default_value = "euclidean")]
    metric: String,
    /// Neighbour index: auto, kdtree, balltree or brute.
    #[arg(long, default_value = "auto")]
    index: String,
    /// Write the labels here (.npy int32 or .csv; -1 = noise).
    #[arg(long)]
    labels_out: Option<PathBuf>,
    /// Weight of each point (.npy or .csv, one value per point): a core neighbourhood needs
    /// min-samples of weight (dbscan also takes negative weights, as scikit-learn).
    #[arg(long)]
    sample_weight: Option<PathBuf>,
    #[command(flatten)]
    exec: ExecArgs,
    #[command(flatten)]
    output: OutputArgs,
}

impl NeighbourArgs {
    fn metric(&self) -> CliResult<MetricKind> {
        Ok(self.metric.parse()?)
    }
    fn index(&self) -> CliResult<IndexKind> {
        Ok(self.index.parse()?)
    }
}

/// A radius from `--X` (in the metric's unit; km for haversine) or `--X-m` (metres).
fn radius(name: &str, value: Option<f64>, metres: Option<f64>, metric: MetricKind) -> CliResult<Option<f64>> {
    match (value, metres) {
        (Some(_), Some(_)) => Err(CliError::usage(format!("give --{name} or --{name}-m, not both"))),
        (None, Some(_)) if metric != MetricKind::Haversine => Err(CliError::usage(format!(
            "--{name}-m (metres) needs --metric haversine; give --{name} in the metric's unit"
        ))),
        (None, Some(m)) => Ok(Some(m / 1000.0)),
        (v, None) => Ok(v),
    }
}

#[derive(clap::Args)]
pub struct DbscanArgs {
    #[command(flatten)]
    common: NeighbourArgs,
    /// Neighbourhood radius, inclusive (kilometres for haversine).
    #[arg(long)]
    eps: Option<f64>,
    /// Neighbourhood radius in metres (haversine only).
    #[arg(long)]
    eps_m: Option<f64>,
    // (the model is the core points with their clusters, eps and the metric: a new point
    // joins the cluster of its nearest core point within eps, else it is noise)
    #[command(flatten)]
    model: ModelOutArg,
}

pub fn run_dbscan(a: DbscanArgs) -> CliResult {
    let started = Instant::now();
    let c = &a.common;
    let metric = c.metric()?;
    let eps = radius("eps", a.eps, a.eps_m, metric)?
        .ok_or_else(|| CliError::usage("dbscan needs --eps (or --eps-m with haversine)"))?;
    let mut params = Dbscan::new(eps)
        .min_samples(c.min_samples)
        .metric(metric)
        .index(c.index()?);
    if let Some(p) = &c.sample_weight {
        params = params.sample_weight(crate::harness::read_sample_weight(p)?);
    }
    let ((model, predictor, d, n, fit_s), ran) = c.exec.run("dbscan", |_backend| {
        if sparse_rows(&c.input, metric) {
            if a.model.model_out.is_some() {
                return Err(CliError::usage(
                    "--model-out stores the core points densely: not for a sparse file",
                ));
            }
            let x = load_sparse_points::<f64>(&c.input)?;
            let t = Instant::now();
            let model = params.fit(&x.view())?;
            return Ok((model, None, x.view().ncols(), x.view().nrows(), secs(t)));
        }
        let x = load_points::<f64>(&c.input)?;
        let t = Instant::now();
        let model = params.fit(&x.view())?;
        // (the core points, while the points are in memory)
        let predictor = match &a.model.model_out {
            Some(_) => Some(model.predictor(x.view(), &params)?),
            None => None,
        };
        Ok((model, predictor, x.ncols(), x.nrows(), secs(t)))
    })?;
    if let Some(p) = &predictor {
        a.model.save(p)?;
    }
    let mut extra = serde_json::Map::new();
    extra.insert("eps".into(), json!(eps));
    extra.insert("min_samples".into(), json!(c.min_samples));
    extra.insert("metric".into(), json!(metric.to_string()));
    extra.insert("index".into(), json!(format!("{:?}", model.index).to_lowercase()));
    extra.insert("n_core".into(), json!(model.core_sample_indices.len()));
    report(
        "dbscan",
        &model,
        n,
        d,
        ran,
        &c.labels_out,
        &c.output,
        fit_s,
        extra,
        started,
    )
}

#[allow(clippy::too_many_arguments)]
fn report(
    algorithm: &str,
    model: &dyn clustr::Clustering,
    n: usize,
    d: usize,
    ran: crate::harness::Ran,
    labels_out: &Option<PathBuf>,
    output: &OutputArgs,
    fit_s: f64,
    extra: serde_json::Map<String, serde_json::Value>,
    started: Instant,
) -> CliResult {
    Report {
        algorithm,
        n,
        d: Some(d),
        k: None,
        model,
        ran,
        seed: 0,
        seconds: vec![("fit", fit_s)],
        extra,
    }
    .emit(labels_out.as_deref(), output, started)
}

#[derive(clap::Args)]
pub struct OpticsArgs {
    #[command(flatten)]
    common: NeighbourArgs,
    /// Largest radius considered (default: infinite; kilometres for haversine).
    #[arg(long)]
    max_eps: Option<f64>,
    /// Largest radius in metres (haversine only).
    #[arg(long)]
    max_eps_m: Option<f64>,
    /// Cluster extraction: xi or dbscan (at --eps).
    #[arg(long, default_value = "xi")]
    extract: String,
    /// Steepness of xi clusters.
    #[arg(long, default_value_t = 0.05)]
    xi: f64,
    /// Smallest xi cluster (default: min-samples).
    #[arg(long)]
    min_cluster_size: Option<usize>,
    /// Radius of the DBSCAN extraction (≤ max-eps).
    #[arg(long)]
    eps: Option<f64>,
    /// Radius of the DBSCAN extraction in metres (haversine only).
    #[arg(long)]
    eps_m: Option<f64>,
    /// Write the reachability plot data here (.csv, one row per point in OPTICS order).
    #[arg(long)]
    reachability_out: Option<PathBuf>,
    /// Draw the reachability plot, coloured by cluster: PNG, or SVG for a .svg name.
    #[arg(long)]
    plot: Option<PathBuf>,
}

/// A hint when xi extraction left most points as noise or made very many clusters: the
/// xi steepness found structure at every scale, and a larger minimum cluster size or a
/// DBSCAN cut at the reachability plot's knee usually gives what was meant.
fn optics_hint(model: &clustr::density::OpticsModel, n: usize, metric: MetricKind) -> Option<String> {
    let noise = model.labels.iter().filter(|&&l| l < 0).count();
    let many = model.n_clusters as f64 > (n as f64).sqrt();
    if 2 * noise <= n && !many {
        return None;
    }
    let what = if many {
        format!("{} clusters for {n} points", model.n_clusters)
    } else {
        format!("{noise} of {n} points are noise")
    };
    let size = (n / 20).max(5);
    let cut = match model.knee_eps() {
        Some(e) if metric == MetricKind::Haversine => {
            format!(" or --extract dbscan --eps-m {:.0}", e * 1000.0)
        }
        Some(e) => {
            let decimals = (3 - e.log10().floor() as i32).clamp(0, 12) as usize; // 4 significant digits
            format!(" or --extract dbscan --eps {e:.decimals$}")
        }
        None => String::new(),
    };
    Some(format!(
        "{what} with xi extraction; try --min-cluster-size {size}{cut} (the knee of the reachability plot)"
    ))
}

pub fn run_optics(a: OpticsArgs) -> CliResult {
    let started = Instant::now();
    let c = &a.common;
    let metric = c.metric()?;
    let max_eps = radius("max-eps", a.max_eps, a.max_eps_m, metric)?.unwrap_or(f64::INFINITY);
    let extraction = match a.extract.as_str() {
        "xi" => Extraction::Xi(a.xi),
        "dbscan" => Extraction::Dbscan(
            radius("eps", a.eps, a.eps_m, metric)?
                .ok_or_else(|| CliError::usage("--extract dbscan needs --eps (or --eps-m with haversine)"))?,
        ),
        other => {
            return Err(CliError::usage(format!(
                "invalid parameter extract = {other}: expected xi or dbscan"
            )))
        }
    };
    let mut params = Optics::new(c.min_samples)
        .max_eps(max_eps)
        .metric(metric)
        .index(c.index()?)
        .extraction(extraction);
    if let Some(m) = a.min_cluster_size {
        params = params.min_cluster_size(m);
    }
    if let Some(p) = &c.sample_weight {
        params = params.sample_weight(crate::harness::read_sample_weight(p)?);
    }
    if let Some(p) = &a.reachability_out {
        if clustr::data::FileKind::of(p)? != clustr::data::FileKind::Csv {
            return Err(CliError::usage(format!(
                "{}: --reachability-out writes .csv",
                p.display()
            )));
        }
    }
    let ((model, d, n, fit_s), ran) = c.exec.run("optics", |_backend| {
        if sparse_rows(&c.input, metric) {
            let x = load_sparse_points::<f64>(&c.input)?;
            let t = Instant::now();
            let model = params.fit(&x.view())?;
            return Ok((model, x.view().ncols(), x.view().nrows(), secs(t)));
        }
        let x = load_points::<f64>(&c.input)?;
        let t = Instant::now();
        let model = params.fit(&x.view())?;
        Ok((model, x.ncols(), x.nrows(), secs(t)))
    })?;
    // (said after the run succeeded: a failure stays one line)
    let hint = match extraction {
        Extraction::Xi(_) if !c.output.quiet => optics_hint(&model, n, metric),
        _ => None,
    };
    if let Some(p) = &a.reachability_out {
        clustr::data::atomic_write(p, |file| {
            let mut w = std::io::BufWriter::new(file);
            let io = |e| clustr::Error::io(p, e);
            writeln!(w, "position,index,reachability,core_distance,predecessor,label").map_err(io)?;
            for (pos, &i) in model.ordering.iter().enumerate() {
                writeln!(
                    w,
                    "{pos},{i},{:?},{:?},{},{}",
                    model.reachability[i], model.core_distances[i], model.predecessor[i], model.labels[i]
                )
                .map_err(io)?;
            }
            w.flush().map_err(io)
        })?;
    }
    if let Some(p) = &a.plot {
        use clustr::plot::Figure;
        clustr::plot::Reachability {
            ordering: &model.ordering,
            reachability: &model.reachability,
            labels: &model.labels,
        }
        .save(p)?;
    }
    let mut extra = serde_json::Map::new();
    extra.insert("min_samples".into(), json!(c.min_samples));
    extra.insert("max_eps".into(), json!(max_eps.is_finite().then_some(max_eps)));
    extra.insert("metric".into(), json!(metric.to_string()));
    extra.insert("extract".into(), json!(a.extract));
    report(
        "optics",
        &model,
        n,
        d,
        ran,
        &c.labels_out,
        &c.output,
        fit_s,
        extra,
        started,
    )?;
    if let Some(hint) = hint {
        errln!("clustr: optics: {hint}");
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct HdbscanArgs {
    /// Points, rows = samples (.npy or .csv); for haversine, latitude and longitude in degrees.
    /// A sparse .npz, .mtx or svmlight file is fitted as sparse rows under euclidean,
    /// sqeuclidean, cosine or manhattan (brute force, O(n) memory), densified otherwise.
    input: PathBuf,
    /// Smallest cluster (at least 2). Several values, comma-separated (5,10,25,50), select
    /// the clusters of each from one spanning tree: a table of clusters, noise and stability
    /// per value, and with --labels-out one labels file per value (NAME.mcsV.EXT).
    #[arg(long, default_value = "5", value_delimiter = ',', num_args = 1)]
    min_cluster_size: Vec<usize>,
    /// Points a core neighbourhood needs, the point itself included (default: min-cluster-size;
    /// with several values, the smallest).
    #[arg(long)]
    min_samples: Option<usize>,
    /// Distance: euclidean, manhattan, chebyshev, minkowski:P, cosine, haversine (km), ...
    #[arg(long, default_value = "euclidean")]
    metric: String,
    /// Neighbour index: auto, kdtree, balltree or brute.
    #[arg(long, default_value = "auto")]
    index: String,
    /// INPUT is a precomputed square dissimilarity matrix (Prim's algorithm on it, O(n²) time).
    #[arg(long)]
    precomputed: bool,
    /// Cluster selection: eom (excess of mass) or leaf.
    #[arg(long, default_value = "eom")]
    selection: String,
    /// Merge clusters born below this distance (km for haversine; 0 = off).
    #[arg(long, default_value_t = 0.0)]
    epsilon: f64,
    /// Largest cluster eom may select.
    #[arg(long)]
    max_cluster_size: Option<usize>,
    /// Distance scaling of the mutual reachability.
    #[arg(long, default_value_t = 1.0)]
    alpha: f64,
    /// Let the root be the one cluster.
    #[arg(long)]
    allow_single_cluster: bool,
    /// Write the labels here (.npy int32 or .csv; -1 = noise).
    #[arg(long)]
    labels_out: Option<PathBuf>,
    /// Write each point's membership strength here (.npy or .csv).
    #[arg(long)]
    probabilities_out: Option<PathBuf>,
    /// Write each point's GLOSH outlier score here (.npy or .csv).
    #[arg(long)]
    outlier_scores_out: Option<PathBuf>,
    /// Write the single-linkage tree of the mutual reachability here ((n − 1) × 4: left,
    /// right, distance, size, scipy's linkage layout).
    #[arg(long)]
    tree_out: Option<PathBuf>,
    /// Draw the condensed tree (icicle plot: λ = 1/distance downwards, band width = points,
    /// selected clusters coloured): PNG, or SVG for a .svg name.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Write each point's soft cluster membership here (n × clusters, the hdbscan package's
    /// all_points_membership_vectors; each row sums to the probability of being in some
    /// cluster).
    #[arg(long)]
    membership_out: Option<PathBuf>,
    // (the model is the training points, the condensed tree and the selected clusters: `clustr
    // predict` places new points as the hdbscan package's approximate_predict, and its
    // --proba-out gives their membership vectors)
    #[command(flatten)]
    model: ModelOutArg,
    #[command(flatten)]
    exec: ExecArgs,
    #[command(flatten)]
    output: OutputArgs,
}

/// `path` with `.mcsV` before its extension: one labels file per min_cluster_size.
fn per_value_path(path: &std::path::Path, v: usize) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(e) => format!("{stem}.mcs{v}.{}", e.to_string_lossy()),
        None => format!("{stem}.mcs{v}"),
    };
    path.with_file_name(name)
}

/// Writes one value per point as an n × 1 matrix.
fn write_column(path: &std::path::Path, values: &[f64]) -> CliResult {
    let column = ndarray::Array2::from_shape_fn((values.len(), 1), |(i, _)| values[i]);
    clustr::data::write_matrix(path, column.view(), &[])?;
    Ok(())
}

pub fn run_hdbscan(a: HdbscanArgs) -> CliResult {
    let started = Instant::now();
    let metric: MetricKind = a.metric.parse()?;
    let sizes = &a.min_cluster_size;
    let several = sizes.len() > 1;
    if several {
        for (given, flag) in [
            (a.probabilities_out.is_some(), "--probabilities-out"),
            (a.outlier_scores_out.is_some(), "--outlier-scores-out"),
            (a.membership_out.is_some(), "--membership-out"),
            (a.plot.is_some(), "--plot"),
            (a.model.model_out.is_some(), "--model-out"),
        ] {
            if given {
                return Err(CliError::usage(format!(
                    "{flag} takes one --min-cluster-size, not {}",
                    sizes.len()
                )));
            }
        }
    }
    if let Some(&v) = sizes.iter().find(|&&v| v < 2) {
        return Err(clustr::Error::param("min_cluster_size", v, "must be at least 2").into());
    }
    // The labels file of each value, checked as the command line's own outputs are: never
    // over the input, another output or each other.
    let per_value: Vec<(String, PathBuf)> = match (several, &a.labels_out) {
        (true, Some(p)) => sizes
            .iter()
            .map(|&v| (format!("--labels-out ({v})"), per_value_path(p, v)))
            .collect(),
        _ => Vec::new(),
    };
    if !per_value.is_empty() {
        let mut outputs = per_value.clone();
        outputs.extend(a.tree_out.iter().map(|t| ("--tree-out".to_string(), t.clone())));
        let inputs = [(String::new(), a.input.clone())];
        clustr::data::output::check_outputs(&crate::named(&inputs), &crate::named(&outputs))?;
    }
    let first = sizes[0];
    let mut params = Hdbscan::new(first)
        .metric(metric)
        .index(a.index.parse()?)
        .cluster_selection_method(a.selection.parse()?)
        .cluster_selection_epsilon(a.epsilon)
        .alpha(a.alpha)
        .allow_single_cluster(a.allow_single_cluster);
    let min_samples = a.min_samples.unwrap_or(if several {
        sizes.iter().copied().min().unwrap_or(first)
    } else {
        first
    });
    params.min_samples = Some(min_samples);
    params.max_cluster_size = a.max_cluster_size;
    let ((model, predictor, d, n, fit_s), ran) = a.exec.run("hdbscan", |_backend| {
        if a.precomputed {
            crate::harness::refuse_points_options("a precomputed dissimilarity matrix")?;
            a.model
                .refuse_with(Some("prediction needs the points, not their distances"))?;
            if a.membership_out.is_some() {
                return Err(CliError::usage(
                    "--membership-out needs the points, not their distances",
                ));
            }
            let d = clustr::DenseMatrix::new(crate::harness::read_matrix::<f64>(&a.input)?)
                .map_err(|e| CliError::from(e).prefixed(&a.input))?;
            let t = Instant::now();
            let model = params.fit_precomputed(&d)?;
            let n = d.view().nrows();
            return Ok((model, None, n, n, secs(t)));
        }
        if sparse_rows(&a.input, metric) {
            a.model
                .refuse_with(Some("the model stores the points densely: not for a sparse file"))?;
            if a.membership_out.is_some() {
                return Err(CliError::usage("--membership-out: not for a sparse file"));
            }
            let x = load_sparse_points::<f64>(&a.input)?;
            let t = Instant::now();
            let model = params.fit(&x.view())?;
            return Ok((model, None, x.view().ncols(), x.view().nrows(), secs(t)));
        }
        let x = load_points::<f64>(&a.input)?;
        // Steps: the core distances, then Borůvka's rounds (at most log2 n).
        let steps = 2 + x.nrows().max(1).ilog2() as usize;
        let (bar, progress) = crate::harness::iteration_bar(steps, "hdbscan", &a.output);
        let t = Instant::now();
        let model = params.clone().progress(progress).fit(&x.view())?;
        bar.finish_and_clear();
        // (the predictor, while the points are in memory)
        let predictor = match a.model.model_out.is_some() || a.membership_out.is_some() {
            true => Some(model.predictor(x.view(), &params)?),
            false => None,
        };
        Ok((model, predictor, x.ncols(), x.nrows(), secs(t)))
    })?;
    if let Some(p) = &a.probabilities_out {
        write_column(p, &model.probabilities)?;
    }
    if let Some(p) = &a.outlier_scores_out {
        write_column(p, &model.outlier_scores)?;
    }
    if let Some(p) = &a.tree_out {
        let tree = clustr::density::hdbscan::linkage_matrix(&model.single_linkage_tree);
        clustr::data::write_matrix(p, tree.view(), &[])?;
    }
    if let Some(p) = &a.plot {
        model.plot_condensed_tree(p)?;
    }
    if let (Some(p), Some(pr)) = (&a.membership_out, &predictor) {
        let m = pr.all_points_membership_vectors()?;
        let names: Vec<String> = (0..m.ncols()).map(|c| format!("c{c}")).collect();
        clustr::data::write_matrix(p, m.view(), &names)?;
    }
    if let Some(pr) = &predictor {
        a.model.save(pr)?;
    }
    // Every further min_cluster_size from the same tree.
    let mut by_size = Vec::with_capacity(sizes.len());
    for (i, &v) in sizes.iter().enumerate() {
        let refit;
        let m = if v == first {
            &model
        } else {
            let with_v = Hdbscan {
                min_cluster_size: v,
                ..params.clone()
            };
            refit = with_v.fit_spanning_tree(
                n,
                model.minimum_spanning_tree.clone(),
                model.core_distances.clone(),
            )?;
            &refit
        };
        if let Some((_, p)) = per_value.get(i) {
            clustr::data::write_labels(p, &m.labels)?;
        }
        let stability: f64 = m.cluster_stabilities().iter().sum();
        by_size.push(
            json!({"min_cluster_size": v, "n_clusters": m.n_clusters, "n_noise": m.n_noise(),
                            "stability": stability}),
        );
    }
    let mut extra = serde_json::Map::new();
    extra.insert("min_cluster_size".into(), json!(first));
    extra.insert("min_samples".into(), json!(min_samples));
    extra.insert("metric".into(), json!(metric.to_string()));
    extra.insert("selection".into(), json!(a.selection));
    extra.insert("cluster_selection_epsilon".into(), json!(a.epsilon));
    if several {
        extra.insert("by_min_cluster_size".into(), json!(by_size));
    }
    let labels_out = if several { &None } else { &a.labels_out };
    report(
        "hdbscan", &model, n, d, ran, labels_out, &a.output, fit_s, extra, started,
    )?;
    if several && !a.output.quiet {
        errln!("clustr: hdbscan: min_samples {min_samples}, one spanning tree for every min_cluster_size:");
        errln!(
            "{:>18} {:>9} {:>9} {:>12}",
            "min_cluster_size",
            "clusters",
            "noise",
            "stability"
        );
        for row in &by_size {
            let int = |k: &str| row[k].as_u64().unwrap_or(0);
            errln!(
                "{:>18} {:>9} {:>9} {:>12.4}",
                int("min_cluster_size"),
                int("n_clusters"),
                int("n_noise"),
                row["stability"].as_f64().unwrap_or(f64::NAN)
            );
        }
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct SingleLinkageArgs {
    /// Points, rows = samples (.npy or .csv); for haversine, latitude and longitude in degrees.
    /// A sparse .npz, .mtx or svmlight file is fitted as sparse rows under euclidean,
    /// sqeuclidean, cosine or manhattan (Prim's algorithm, O(n) memory), densified otherwise.
    input: PathBuf,
    /// Distance: euclidean, manhattan, chebyshev, minkowski:P, cosine, haversine (km), ...
    #[arg(long, default_value = "euclidean")]
    metric: String,
    /// Cut the tree at this distance: merges at distance ≤ it join (scipy's fcluster
    /// criterion "distance").
    #[arg(long, conflicts_with = "n_clusters")]
    distance: Option<f64>,
    /// Cut the tree into at most this many clusters (fcluster's "maxclust").
    #[arg(long)]
    n_clusters: Option<usize>,
    /// How the spanning tree is found: auto, kdtree or balltree (Borůvka's algorithm over
    /// the tree), brute (Prim's over every pair).
    #[arg(long, default_value = "auto")]
    index: String,
    /// Write the labels here (.npy int32 or .csv).
    #[arg(long)]
    labels_out: Option<PathBuf>,
    /// Write the tree here ((n − 1) × 4: left, right, distance, size; scipy's linkage matrix).
    #[arg(long)]
    tree_out: Option<PathBuf>,
    #[command(flatten)]
    exec: ExecArgs,
    #[command(flatten)]
    output: OutputArgs,
}

/// Single linkage's labels as a model for the report.
struct Flat(Vec<i64>);

impl clustr::Clustering for Flat {
    fn labels(&self) -> &[i64] {
        &self.0
    }
    fn loss(&self) -> Option<f64> {
        None
    }
    fn n_iter(&self) -> usize {
        1
    }
    fn converged(&self) -> bool {
        true
    }
}

pub fn run_single_linkage(a: SingleLinkageArgs) -> CliResult {
    use clustr::density::hdbscan::{single_linkage, Cut};
    let started = Instant::now();
    let metric: MetricKind = a.metric.parse()?;
    let index: IndexKind = a.index.parse()?;
    let cut = match (a.distance, a.n_clusters) {
        (Some(t), None) => Cut::Distance(t),
        (None, Some(k)) => Cut::Clusters(k),
        _ => {
            return Err(CliError::usage(
                "single-linkage needs --distance T or --n-clusters K",
            ))
        }
    };
    let (((labels, tree), d, n, fit_s), ran) = a.exec.run("single-linkage", |_backend| {
        if sparse_rows(&a.input, metric) {
            let x = load_sparse_points::<f64>(&a.input)?;
            let t = Instant::now();
            let out = clustr::density::hdbscan::single_linkage_sparse(x.view(), metric, cut)?;
            return Ok((out, x.view().ncols(), x.view().nrows(), secs(t)));
        }
        let x = load_points::<f64>(&a.input)?;
        let t = Instant::now();
        let out = single_linkage(x.view(), metric, index, cut)?;
        Ok((out, x.ncols(), x.nrows(), secs(t)))
    })?;
    if let Some(p) = &a.tree_out {
        let m = clustr::density::hdbscan::linkage_matrix(&tree);
        clustr::data::write_matrix(p, m.view(), &[])?;
    }
    let mut extra = serde_json::Map::new();
    extra.insert("metric".into(), json!(metric.to_string()));
    extra.insert("distance".into(), json!(a.distance));
    extra.insert("max_height".into(), json!(tree.last().map(|m| m.distance)));
    report(
        "single-linkage",
        &Flat(labels),
        n,
        d,
        ran,
        &a.labels_out,
        &a.output,
        fit_s,
        extra,
        started,
    )
}
