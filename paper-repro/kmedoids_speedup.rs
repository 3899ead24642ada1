//! The high-k speed-up study of Schubert & Rousseeuw (Information Systems 2021, Table 4-5
//! style): PAM SWAP, FastPAM1, FastPAM2 and FasterPAM from the same BUILD medoids (and
//! FasterPAM from LAB and random medoids) on blobs and digits, for growing k. Prints a
//! markdown table, writes it to paper-repro/results/kmedoids_speedup.md and an SVG plot of
//! the speed-up over PAM SWAP against k to paper-repro/results/kmedoids_speedup.svg.
//!
//!     cargo run --release --example kmedoids_speedup -- [--n 5000,10000] [--k 2,5,10,20,50,100,200]
//!         [--pam-budget 120] [--threads 1]
//!
//! Times are of the swap phase from given medoids (BUILD is computed once and not counted),
//! except the LAB and random rows, which include their (cheap) initialisation. PAM SWAP runs
//! only when its estimated time — the FastPAM1 run's iterations (identical by construction)
//! times PAM's cost per iteration, calibrated on the smallest k — fits in --pam-budget
//! seconds; other cells are marked "skipped" with the estimate.

#[path = "provenance.rs"]
mod provenance;

use clustr::kmedoids::{build, Init, KMedoids};
use clustr::{CpuBackend, DenseMatrix, Fit, MetricKind};
use plotters::prelude::*;
use std::time::Instant;

struct Cell {
    method: &'static str,
    seconds: Option<f64>,
    estimate: f64,
    loss: f64,
    n_iter: usize,
    n_swaps: usize,
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn list(name: &str, default: &str) -> Vec<usize> {
    arg(name)
        .unwrap_or_else(|| default.into())
        .split(',')
        .map(|v| v.trim().parse().expect("a number"))
        .collect()
}

fn main() -> clustr::Result<()> {
    let ns = list("--n", "5000,10000");
    let ks = list("--k", "2,5,10,20,50,100,200");
    let budget: f64 = arg("--pam-budget").map_or(120.0, |v| v.parse().expect("seconds"));
    let threads: usize = arg("--threads").map_or(1, |v| v.parse().expect("a count"));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");
    let mut datasets: Vec<(String, ndarray::Array2<f64>)> = ns
        .iter()
        .map(|&n| {
            let x = clustr::datasets::Blobs::new(n, 20)
                .n_features(10)
                .seed(42)
                .generate()
                .expect("blobs")
                .data;
            (format!("blobs n={n}"), x)
        })
        .collect();
    datasets.push(("digits n=1797".into(), clustr::datasets::load("digits")?.data));

    let mut lines = vec![
        format!("k-medoids swap-phase speed-up over PAM SWAP ({threads} thread(s), f64 Euclidean matrix, same BUILD start)."),
        String::new(),
        "| data | k | method | time (s) | speed-up | iterations | swaps | loss |".into(),
        "|---|---:|---|---:|---:|---:|---:|---:|".into(),
    ];
    let mut curves: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (name, x) in &datasets {
        let d = DenseMatrix::from_points(x.view(), &MetricKind::Euclidean, &CpuBackend::default())?;
        let n = x.nrows();
        let mut pam_cost: Option<f64> = None; // seconds per k(n-k)n step of one PAM iteration
        for &k in ks.iter().filter(|&&k| k < n) {
            let start = build(&d, k)?;
            let given = Init::Given(start);
            let timed = |algo: KMedoids| -> clustr::Result<(f64, clustr::kmedoids::KMedoidsModel<f64>)> {
                pool.install(|| {
                    let t = Instant::now();
                    let m = algo.fit(&d)?;
                    Ok((t.elapsed().as_secs_f64(), m))
                })
            };
            let mut cells = Vec::new();
            let (t1, fp1) = timed(KMedoids::fastpam1(k).init(given.clone()))?;
            let steps = (k * (n - k) * n) as f64 * fp1.n_iter as f64;
            let estimate = pam_cost.map_or(0.0, |c| c * steps);
            let pam = if estimate <= budget {
                let (t, m) = timed(KMedoids::pam(k).init(given.clone()))?;
                // Identical on exact arithmetic; on floats a near-tie may go either way.
                if m.medoids != fp1.medoids {
                    eprintln!(
                        "{name} k={k}: PAM loss {} vs FastPAM1 {} (float near-tie)",
                        m.loss, fp1.loss
                    );
                }
                pam_cost.get_or_insert(t / steps);
                Some(t)
            } else {
                None
            };
            cells.push(Cell {
                method: "PAM SWAP",
                seconds: pam,
                estimate,
                loss: fp1.loss,
                n_iter: fp1.n_iter,
                n_swaps: fp1.n_swaps,
            });
            cells.push(Cell {
                method: "FastPAM1",
                seconds: Some(t1),
                estimate: t1,
                loss: fp1.loss,
                n_iter: fp1.n_iter,
                n_swaps: fp1.n_swaps,
            });
            for (method, algo) in [
                ("FastPAM2", KMedoids::fastpam2(k).init(given.clone())),
                ("FasterPAM", KMedoids::fasterpam(k).init(given.clone())),
                ("FasterPAM (LAB)", KMedoids::fasterpam(k).init(Init::Lab)),
                ("FasterPAM (random)", KMedoids::fasterpam(k).init(Init::Random)),
            ] {
                let (t, m) = timed(algo)?;
                cells.push(Cell {
                    method,
                    seconds: Some(t),
                    estimate: t,
                    loss: m.loss,
                    n_iter: m.n_iter,
                    n_swaps: m.n_swaps,
                });
            }
            let reference = pam.unwrap_or(estimate);
            for c in &cells {
                let (time, speedup) = match c.seconds {
                    Some(s) => (format!("{s:.4}"), format!("{:.1}x", reference / s)),
                    None => (format!("skipped (est. {:.0})", c.estimate), "-".into()),
                };
                let speedup = if pam.is_none() && c.seconds.is_some() {
                    format!("{speedup} (vs est.)")
                } else {
                    speedup
                };
                lines.push(format!(
                    "| {name} | {k} | {} | {time} | {speedup} | {} | {} | {:.4} |",
                    c.method, c.n_iter, c.n_swaps, c.loss
                ));
                if let Some(s) = c.seconds {
                    if c.method != "PAM SWAP" && reference > 0.0 {
                        let key = format!("{} ({name})", c.method);
                        match curves.iter_mut().find(|(k2, _)| *k2 == key) {
                            Some((_, pts)) => pts.push((k as f64, reference / s)),
                            None => curves.push((key, vec![(k as f64, reference / s)])),
                        }
                    }
                }
            }
            eprintln!("{name} k={k} done");
        }
    }
    let table = lines.join("\n");
    println!("{table}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("paper-repro/results");
    std::fs::create_dir_all(&dir).map_err(|e| clustr::Error::io(&dir, e))?;
    let md = dir.join("kmedoids_speedup.md");
    std::fs::write(&md, provenance::header(threads) + &table + "\n")
        .map_err(|e| clustr::Error::io(&md, e))?;
    plot(&dir.join("kmedoids_speedup.svg"), &curves, &ks);
    Ok(())
}

fn plot(path: &std::path::Path, curves: &[(String, Vec<(f64, f64)>)], ks: &[usize]) {
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).expect("draw");
    let kmax = *ks.iter().max().unwrap_or(&200) as f64 * 1.2;
    let ymax = curves
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1))
        .fold(10.0, f64::max)
        * 1.5;
    let mut chart = ChartBuilder::on(&root)
        .caption("Swap-phase speed-up over PAM SWAP", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d((1.5f64..kmax).log_scale(), (0.5f64..ymax).log_scale())
        .expect("axes");
    chart
        .configure_mesh()
        .x_desc("k")
        .y_desc("speed-up (x)")
        .draw()
        .expect("mesh");
    for (i, (label, pts)) in curves
        .iter()
        .filter(|(l, _)| !l.contains("random") && !l.contains("LAB"))
        .enumerate()
    {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .expect("series")
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .expect("points");
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .border_style(BLACK)
        .background_style(WHITE)
        .draw()
        .expect("legend");
    root.present().expect("write svg");
}
