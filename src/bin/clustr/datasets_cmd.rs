//! `clustr datasets list` and `clustr datasets export NAME --out FILE`.

use crate::harness::{CliError, CliResult};
use clustr::data::{write_labels, write_matrix};
use clustr::datasets::{self, Blobs, GeoHotspots, GENERATORS, SHIPPED};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// The shipped data sets and the generators.
    List,
    /// Write a shipped or generated data set's points (.csv or .npy); --labels-out its classes.
    Export(ExportArgs),
}

#[derive(clap::Args)]
struct ExportArgs {
    /// iris, wine, breast_cancer, digits, blobs, moons, circles, uniform or geo_hotspots.
    name: String,
    /// Output file (.csv or .npy).
    #[arg(long)]
    out: PathBuf,
    /// Also write the true labels here (.npy or .csv; −1 = noise).
    #[arg(long)]
    labels_out: Option<PathBuf>,
    /// Generators: number of points.
    #[arg(long, default_value_t = 1000)]
    n: usize,
    /// blobs: clusters; geo_hotspots: hotspots.
    #[arg(long, default_value_t = 3)]
    k: usize,
    /// blobs, uniform: dimension.
    #[arg(long, default_value_t = 2)]
    d: usize,
    /// blobs: cluster standard deviation.
    #[arg(long, default_value_t = 1.0)]
    std: f64,
    /// moons, circles: Gaussian noise; geo_hotspots: fraction of noise points.
    #[arg(long, default_value_t = 0.05)]
    noise: f64,
    /// circles: inner / outer radius.
    #[arg(long, default_value_t = 0.8)]
    factor: f64,
    /// Seed of the generator.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

pub fn run(a: Args) -> CliResult {
    match a.action {
        Action::List => {
            outln!("{:<14} {:>6} {:>4} {:>8}  source", "name", "n", "d", "classes")?;
            for name in SHIPPED {
                let ds = datasets::load(name)?;
                let mut t = ds.target.clone();
                t.sort_unstable();
                t.dedup();
                outln!(
                    "{name:<14} {:>6} {:>4} {:>8}  shipped (datasets/{name}.csv)",
                    ds.data.nrows(),
                    ds.data.ncols(),
                    t.len()
                )?;
            }
            for name in GENERATORS {
                outln!(
                    "{name:<14} {:>6} {:>4} {:>8}  generator (--n, --k, --d, --seed ...)",
                    "-",
                    "-",
                    "-"
                )?;
            }
            Ok(())
        }
        Action::Export(e) => export(e),
    }
}

fn export(e: ExportArgs) -> CliResult {
    let ds = match e.name.as_str() {
        "blobs" => Blobs::new(e.n, e.k)
            .n_features(e.d)
            .cluster_std(e.std)
            .seed(e.seed)
            .generate()?,
        "moons" => datasets::moons(e.n, e.noise, e.seed)?,
        "circles" => datasets::circles(e.n, e.noise, e.factor, e.seed)?,
        "uniform" => datasets::uniform(e.n, e.d, 0.0, 1.0, e.seed)?,
        "geo_hotspots" => {
            if !(0.0..1.0).contains(&e.noise) {
                return Err(CliError::usage(format!(
                    "invalid parameter noise = {}: the noise fraction must be in [0, 1)",
                    e.noise
                )));
            }
            clustr::data::validate::check_k(e.k, e.n)?;
            let n_noise = (e.n as f64 * e.noise).round() as usize;
            let per = (e.n - n_noise) / e.k;
            if per == 0 {
                return Err(CliError::usage(format!(
                    "invalid parameter k = {}: fewer than one point per hotspot",
                    e.k
                )));
            }
            GeoHotspots::new(e.k, per, n_noise).seed(e.seed).generate()?
        }
        name => datasets::load(name)?,
    };
    write_matrix(&e.out, ds.data.view(), &ds.feature_names)?;
    if let Some(p) = &e.labels_out {
        write_labels(p, &ds.target)?;
    }
    crate::harness::commit_outputs()?;
    errln!(
        "clustr: wrote {} ({} x {}) to {}",
        ds.name,
        ds.data.nrows(),
        ds.data.ncols(),
        e.out.display()
    );
    Ok(())
}
