//! The road-crash hotspot study of Islam et al. (arXiv 2108.03490), which recommends DBSCAN
//! and OPTICS over k-means for finding accident-prone areas in North Carolina's records. The
//! paper's parameters and data were not available (docs/reference-notes.md §4), so this runs
//! the methods on
//! - the generator `GeoHotspots` (North Carolina's box, crashes along 2 km road segments with
//!   50 m spread, plus background crashes), by default 40 hotspots × 500 crashes and 30 % noise;
//! - or any accident CSV: `--csv FILE --lat-col NAME --lon-col NAME` (rows with an empty or
//!   non-numeric coordinate are skipped and counted; e.g. Kaggle's US-Accidents uses
//!   `Start_Lat` and `Start_Lng`),
//!
//! and prints clusters found, noise share, ARI and NMI against the planted hotspots (generator
//! only), silhouette (haversine, on a sample of 5,000 points), Calinski–Harabasz and
//! Davies–Bouldin (on kilometre coordinates of an equirectangular projection), and time. The
//! internal indices are given on the clustered points and with noise as one more cluster, side
//! by side: either alone favours or penalises the methods that call points noise.
//! Writes the table to paper-repro/results/road_accidents.md and a map of the DBSCAN hotspots
//! to paper-repro/results/road_accidents.png.
//!
//!     cargo run --release --example road_accidents -- [--csv crashes.csv --lat-col Start_Lat --lon-col Start_Lng]
//!         [--eps-m 300] [--min-samples 10] [--k 40]
//!     cargo run --release --example road_accidents -- --quick    # 4 hotspots (CI runs it)
//!
//! Parameters and why: eps = 300 m because a hotspot is a stretch of road a few hundred
//! metres long and crashes on it lie within tens of metres of each other (US-Accidents
//! studies use 50–100 m on denser city data); min_samples = 10 crashes makes a hotspot, a
//! common reading of "accident-prone"; OPTICS uses the same min_samples with max_eps = 2 km
//! (the segment length), xi = 0.05 (scikit-learn's default) and clusters of at least
//! 5 × min_samples crashes (with the default min_cluster_size = min_samples, xi splits each
//! road segment into many small dips of the reachability plot); k-means gets k = the number
//! of DBSCAN clusters (k-means has no way to say "noise", which is the paper's point).
//! HDBSCAN (not in the paper; it needs no eps) gets the same min_samples and clusters of at
//! least 5 × min_samples crashes, as OPTICS.

#[path = "study.rs"]
mod study;

use clustr::datasets::GeoHotspots;
use clustr::density::{Dbscan, Hdbscan, Optics};
use clustr::eval::{
    adjusted_rand_score, calinski_harabasz_score, davies_bouldin_score, normalized_mutual_info_score,
    silhouette_score,
};
use clustr::kmeans::KMeans;
use clustr::metric::EARTH_RADIUS_KM;
use clustr::{Fit, MetricKind, OnTheFly};
use ndarray::{Array2, Axis};
use rand::seq::index::sample;
use rand::SeedableRng;
use std::fmt::Write;
use std::time::Instant;

/// Latitude and longitude columns of a CSV with a header, by name.
fn read_accidents(path: &str, lat: &str, lon: &str) -> clustr::Result<(Array2<f64>, usize)> {
    let bad = |m: String| clustr::Error::parse(path, None, None, m);
    let mut r = csv::Reader::from_path(path).map_err(|e| bad(e.to_string()))?;
    let header = r.headers().map_err(|e| bad(e.to_string()))?.clone();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| bad(format!("no column named {name:?}")))
    };
    let (ci, cj) = (col(lat)?, col(lon)?);
    let (mut rows, mut skipped) = (Vec::new(), 0);
    for rec in r.records() {
        let rec = rec.map_err(|e| bad(e.to_string()))?;
        match (
            rec.get(ci).map(str::parse::<f64>),
            rec.get(cj).map(str::parse::<f64>),
        ) {
            (Some(Ok(a)), Some(Ok(b))) if a.is_finite() && b.is_finite() && a.abs() <= 90.0 => {
                rows.extend([a, b])
            }
            _ => skipped += 1,
        }
    }
    let n = rows.len() / 2;
    Ok((Array2::from_shape_vec((n, 2), rows).expect("n x 2"), skipped))
}

/// Kilometre coordinates of an equirectangular projection about the data's mean latitude.
fn project_km(geo: &Array2<f64>) -> Array2<f64> {
    let phi0 = geo.column(0).mean().unwrap_or(0.0).to_radians();
    let mut out = Array2::zeros(geo.dim());
    for (mut o, g) in out.rows_mut().into_iter().zip(geo.rows()) {
        o[0] = EARTH_RADIUS_KM * g[1].to_radians() * phi0.cos();
        o[1] = EARTH_RADIUS_KM * g[0].to_radians();
    }
    out
}

/// Silhouette (haversine, on a sample of 5,000), Calinski–Harabasz and Davies–Bouldin (km).
struct Internal {
    silhouette: f64,
    ch: f64,
    db: f64,
}

fn internal(geo: &Array2<f64>, km: &Array2<f64>, rows: &[usize], labels: &[i64]) -> clustr::Result<Internal> {
    if labels.iter().collect::<std::collections::HashSet<_>>().len() < 2 {
        return Ok(Internal {
            silhouette: f64::NAN,
            ch: f64::NAN,
            db: f64::NAN,
        });
    }
    let kept_km = km.select(Axis(0), rows);
    let mut rng = clustr::rng::SeededRng::seed_from_u64(0);
    let s: Vec<usize> = sample(&mut rng, rows.len(), rows.len().min(5000)).into_vec();
    let s_geo = geo.select(Axis(0), &s.iter().map(|&i| rows[i]).collect::<Vec<_>>());
    let s_labels: Vec<i64> = s.iter().map(|&i| labels[i]).collect();
    Ok(Internal {
        silhouette: silhouette_score(&OnTheFly::new(s_geo.view(), MetricKind::Haversine)?, &s_labels)?,
        ch: calinski_harabasz_score(kept_km.view(), labels)?,
        db: davies_bouldin_score(kept_km.view(), labels)?,
    })
}

struct Row {
    method: String,
    clusters: usize,
    noise: f64,
    /// ARI and NMI against the planted hotspots, every point, noise a class of its own on
    /// both sides; `None` without a truth (a CSV).
    agreement: Option<(f64, f64)>,
    /// On the clustered points only.
    clustered: Internal,
    /// On every point, noise one more cluster.
    noise_as_cluster: Internal,
    seconds: f64,
}

fn row(
    method: &str,
    (geo, km): (&Array2<f64>, &Array2<f64>),
    truth: Option<&[i64]>,
    labels: &[i64],
    seconds: f64,
) -> clustr::Result<Row> {
    let keep: Vec<usize> = (0..labels.len()).filter(|&i| labels[i] >= 0).collect();
    let kept_labels: Vec<i64> = keep.iter().map(|&i| labels[i]).collect();
    let clusters = kept_labels.iter().collect::<std::collections::HashSet<_>>().len();
    let noise_label = labels.iter().copied().max().unwrap_or(0) + 1;
    let with_noise: Vec<i64> = labels
        .iter()
        .map(|&l| if l < 0 { noise_label } else { l })
        .collect();
    let every: Vec<usize> = (0..labels.len()).collect();
    let agreement = match truth {
        Some(t) => Some((
            adjusted_rand_score(t, labels)?,
            normalized_mutual_info_score(t, labels)?,
        )),
        None => None,
    };
    Ok(Row {
        method: method.into(),
        clusters,
        noise: 1.0 - keep.len() as f64 / labels.len() as f64,
        agreement,
        clustered: internal(geo, km, &keep, &kept_labels)?,
        noise_as_cluster: internal(geo, km, &every, &with_noise)?,
        seconds,
    })
}

fn draw_map(geo: &Array2<f64>, labels: &[i64], title: String, path: &std::path::Path) -> clustr::Result<()> {
    use clustr::plot::Figure;
    clustr::plot::ClusterScatter {
        title,
        x_label: "longitude (degrees east)".into(),
        y_label: "latitude (degrees north)".into(),
        points: geo.rows().into_iter().map(|g| (g[1], g[0])).collect(),
        labels: labels.to_vec(),
    }
    .save(path)
}

fn main() -> clustr::Result<()> {
    study::begin();
    let eps_km = study::value("--eps-m", 300.0) / 1000.0;
    let min_samples: usize = study::value("--min-samples", 10);
    let (geo, truth, source) = match study::arg("--csv") {
        Some(path) => {
            let lat = study::arg("--lat-col").unwrap_or_else(|| "Start_Lat".into());
            let lon = study::arg("--lon-col").unwrap_or_else(|| "Start_Lng".into());
            let (geo, skipped) = read_accidents(&path, &lat, &lon)?;
            (
                geo,
                None,
                format!("{path} ({skipped} rows without coordinates skipped)"),
            )
        }
        None => {
            let k: usize = study::value("--k", if study::quick() { 4 } else { 40 });
            let per = if study::quick() { 200 } else { 500 };
            let d = GeoHotspots::new(k, per, k * per * 3 / 7).seed(1).generate()?;
            (
                d.data,
                Some(d.target),
                format!("GeoHotspots: {k} hotspots x {per} crashes + 30% background, North Carolina's box"),
            )
        }
    };
    let km = project_km(&geo);
    let data = (&geo, &km);
    let truth = truth.as_deref();
    let mut rows = Vec::new();
    let t = Instant::now();
    let db = Dbscan::new(eps_km)
        .min_samples(min_samples)
        .metric(MetricKind::Haversine)
        .fit(&geo.view())?;
    rows.push(row(
        &format!("DBSCAN (eps {:.0} m)", eps_km * 1000.0),
        data,
        truth,
        &db.labels,
        t.elapsed().as_secs_f64(),
    )?);
    let t = Instant::now();
    let op = Optics::new(min_samples)
        .max_eps(2.0)
        .min_cluster_size(5 * min_samples)
        .metric(MetricKind::Haversine)
        .fit(&geo.view())?;
    rows.push(row(
        "OPTICS (xi 0.05, max_eps 2 km, min_cluster_size 5 x min_samples)",
        data,
        truth,
        &op.labels,
        t.elapsed().as_secs_f64(),
    )?);
    let t = Instant::now();
    let hd = Hdbscan::new(5 * min_samples)
        .min_samples(min_samples)
        .metric(MetricKind::Haversine)
        .fit(&geo.view())?;
    rows.push(row(
        "HDBSCAN (eom, min_cluster_size 5 x min_samples)",
        data,
        truth,
        &hd.labels,
        t.elapsed().as_secs_f64(),
    )?);
    let k = db.n_clusters.max(2);
    let t = Instant::now();
    let kmeans = KMeans::new(k).n_init(3).seed(0).fit(&km.view())?;
    rows.push(row(
        &format!("k-means (k = {k}, km coordinates)"),
        data,
        truth,
        &kmeans.labels,
        t.elapsed().as_secs_f64(),
    )?);
    let mut out = String::new();
    writeln!(
        out,
        "Road-crash hotspots, {} points: {source}; min_samples = {min_samples}.\n",
        geo.nrows()
    )
    .unwrap();
    if let Some(t) = truth {
        rows.insert(
            0,
            row("planted hotspots (the truth, for reference)", data, truth, t, 0.0)?,
        );
    }
    let pct = |v: f64| {
        if v.is_nan() {
            "-".to_string()
        } else {
            format!("{v:.3}")
        }
    };
    writeln!(
        out,
        "| method | clusters | noise | ARI | NMI | silhouette: clustered / noise as a cluster | \
         CH: clustered / noise as a cluster | DB: clustered / noise as a cluster | time (s) |"
    )
    .unwrap();
    writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|").unwrap();
    for r in &rows {
        let (ari, nmi) = r
            .agreement
            .map_or(("-".into(), "-".into()), |(a, n)| (pct(a), pct(n)));
        let (c, w) = (&r.clustered, &r.noise_as_cluster);
        writeln!(
            out,
            "| {} | {} | {:.1} % | {ari} | {nmi} | {} / {} | {:.0} / {:.0} | {} / {} | {:.3} |",
            r.method,
            r.clusters,
            100.0 * r.noise,
            pct(c.silhouette),
            pct(w.silhouette),
            c.ch,
            w.ch,
            pct(c.db),
            pct(w.db),
            r.seconds
        )
        .unwrap();
    }
    writeln!(
        out,
        "\nARI and NMI compare with the planted hotspots on every point, background crashes and \
         points a method calls noise each a class of their own. The internal indices are given \
         twice: on the clustered points only (which favours a method that drops the hard points) \
         and on every point with noise as one more cluster (which penalises it). Higher \
         silhouette and CH and lower DB are better. Map of the DBSCAN hotspots: road_accidents.png."
    )
    .unwrap();
    println!("{out}");
    study::write("road_accidents.md", rayon::current_num_threads(), &out)?;
    draw_map(
        &geo,
        &db.labels,
        format!(
            "Road-crash hotspots found by DBSCAN (eps {:.0} m, min_samples {min_samples}): {} clusters",
            eps_km * 1000.0,
            db.n_clusters
        ),
        &study::results_dir().join("road_accidents.png"),
    )?;
    Ok(())
}
