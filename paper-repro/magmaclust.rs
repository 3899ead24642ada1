//! The MagmaClust simulation study (Leroy, Latouche, Guedj & Gey, JMLR 2023, §6; settings and
//! the paper's numbers recomputed from its result files in docs/reference-notes.md §3.2).
//!
//! Study (default): `--reps` replicates (100) of the H00 scenario with M = 50 training tasks of
//! 30 common points on seq(0, 10, 0.05), K = 3, and a test task observed on its first 20
//! points and predicted on its last 10: MSE, WCIC95 and training / prediction time of
//! MagmaClust (K = 3), Magma (K = 1) and single-task GP regression; clustering ARI of
//! MagmaClust on H00, Hk0, H0i and Hki data (each fitted under its own hypothesis, with the
//! paper's cv_threshold = 0.01) and on scheme A (K = 4, H00), next to k-means (50 starts) on the raw output vectors, which is also
//! MagmaClust's initialisation. Everything runs on one thread. Writes
//! paper-repro/results/magmaclust.md and an example prediction,
//! paper-repro/results/magmaclust_prediction.png.
//!
//! Scaling (`--scaling`): H00 data, K = 3, N = 30, M = 50 … 5,000 tasks with common inputs,
//! and with inputs drawn per task (up to `--max-m-irregular`, 5,000): time per VEM iteration
//! on one thread. Writes paper-repro/results/magmaclust_scaling.md.
//!
//!     cargo run --release --example magmaclust [-- --reps 100]
//!     cargo run --release --example magmaclust -- --scaling
//!
//! `--quick`: one replicate; M = 20 and 40 tasks for `--scaling` (seconds; CI runs both).

#[path = "study.rs"]
mod study;

use clustr::eval::adjusted_rand_index;
use clustr::gp::{GpRegression, MagmaClust, MagmaPrediction, Scenario, Simulator, Tasks};
use clustr::kmeans::KMeans;
use clustr::Fit;
use ndarray::{s, Array1, Array2};
use std::fmt::Write as _;
use std::time::Instant;

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, var.sqrt())
}

fn median(v: &[f64]) -> f64 {
    let mut w = v.to_vec();
    w.sort_by(f64::total_cmp);
    let n = w.len();
    if n % 2 == 1 {
        w[n / 2]
    } else {
        0.5 * (w[n / 2 - 1] + w[n / 2])
    }
}

/// MSE of the mixture mean and WCIC95 = Σₖ τ*ₖ · 100 · mean(y ∈ μ̂ₖ ± 1.96 √Varₖ).
fn scores(p: &MagmaPrediction, truth: ndarray::ArrayView1<f64>) -> (f64, f64) {
    let mse = (&p.mean - &truth).mapv(|v| v * v).mean().unwrap();
    let wcic = (0..p.tau.len())
        .map(|k| {
            let inside = truth
                .iter()
                .enumerate()
                .filter(|(j, y)| {
                    let half = 1.96 * p.cluster_vars[[k, *j]].sqrt();
                    (*y - p.cluster_means[[k, *j]]).abs() <= half
                })
                .count();
            p.tau[k] * 100.0 * inside as f64 / truth.len() as f64
        })
        .sum();
    (mse, wcic)
}

#[derive(Default)]
struct Method {
    mse: Vec<f64>,
    wcic: Vec<f64>,
    train_s: Vec<f64>,
    pred_s: Vec<f64>,
}

fn hypothesis(sc: Scenario) -> (bool, bool) {
    match sc {
        Scenario::Hk0 => (false, true),
        Scenario::H0i => (true, false),
        Scenario::Hki => (false, false),
        Scenario::H00 | Scenario::SchemeA => (true, true),
    }
}

/// An example prediction to draw: grid, prediction, observed and held-out (inputs, outputs).
type Example = (
    Array1<f64>,
    MagmaPrediction,
    (Vec<f64>, Vec<f64>),
    (Vec<f64>, Vec<f64>),
);

fn study(reps: u64) -> clustr::Result<String> {
    let names = ["MagmaClust", "Magma", "GP"];
    let mut methods: Vec<Method> = names.iter().map(|_| Method::default()).collect();
    let scenarios = [
        ("H00", Scenario::H00),
        ("Hk0", Scenario::Hk0),
        ("H0i", Scenario::H0i),
        ("Hki", Scenario::Hki),
        ("Scheme A", Scenario::SchemeA),
    ];
    let mut ari = vec![(Vec::new(), Vec::new()); scenarios.len()];
    let mut example: Option<Example> = None;
    for rep in 0..reps {
        let sim = Simulator {
            seed: rep,
            n_tasks: 51,
            ..Simulator::new(Scenario::H00)
        }
        .generate()?;
        let mut tasks = sim.tasks.tasks.clone();
        let test = tasks.remove(0);
        let train = Tasks::new(tasks)?;
        let (t_obs, y_obs) = (test.inputs.slice(s![..20, ..]), test.outputs.slice(s![..20]));
        let (t_new, y_new) = (test.inputs.slice(s![20.., ..]), test.outputs.slice(s![20..]));
        for (m, k) in [(0, 3), (1, 1)] {
            let t = Instant::now();
            let model = MagmaClust::new(k).fit(&train)?;
            methods[m].train_s.push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            let p = model.predict(&train, t_obs, y_obs, t_new)?;
            methods[m].pred_s.push(t.elapsed().as_secs_f64());
            let (mse, wcic) = scores(&p, y_new);
            methods[m].mse.push(mse);
            methods[m].wcic.push(wcic);
            if rep == 0 && k == 3 {
                let grid = Array2::from_shape_fn((300, 1), |(i, _)| 10.0 * i as f64 / 299.0);
                let full = model.predict(&train, t_obs, y_obs, grid.view())?;
                example = Some((
                    grid.column(0).to_owned(),
                    full,
                    (t_obs.column(0).to_vec(), y_obs.to_vec()),
                    (t_new.column(0).to_vec(), y_new.to_vec()),
                ));
            }
        }
        let t = Instant::now();
        let gp = GpRegression::default().fit(t_obs, y_obs)?;
        let (mean, var) = gp.predict(t_new)?;
        let pred_s = t.elapsed().as_secs_f64();
        let noise = gp.noise.exp();
        let p = MagmaPrediction {
            hp: gp.params.clone(),
            tau: Array1::ones(1),
            cluster_means: mean.clone().insert_axis(ndarray::Axis(0)),
            cluster_vars: (&var + noise).insert_axis(ndarray::Axis(0)),
            var: &var + noise,
            mean,
        };
        let (mse, wcic) = scores(&p, y_new);
        methods[2].mse.push(mse);
        methods[2].wcic.push(wcic);
        methods[2].train_s.push(0.0);
        methods[2].pred_s.push(pred_s);
        for (j, (_, sc)) in scenarios.iter().enumerate() {
            let sim = Simulator {
                seed: 1000 + rep,
                n_tasks: 50,
                ..Simulator::new(*sc)
            }
            .generate()?;
            let k = sim.means.nrows();
            let (ck, ci) = hypothesis(*sc);
            // The paper's clustering runs: train_magmaclust(..., cv_threshold = 0.01).
            let model = MagmaClust {
                cv_threshold: 0.01,
                ..MagmaClust::new(k).hypotheses(ck, ci).seed(rep)
            }
            .fit(&sim.tasks)?;
            ari[j].0.push(adjusted_rand_index(&sim.clusters, &model.labels)?);
            let raw = Array2::from_shape_fn((sim.tasks.len(), sim.tasks.tasks[0].outputs.len()), |(i, j)| {
                sim.tasks.tasks[i].outputs[j]
            });
            let km = KMeans::new(k).n_init(50).seed(rep).fit(&raw.view())?;
            ari[j].1.push(adjusted_rand_index(&sim.clusters, &km.labels)?);
        }
        eprintln!(
            "rep {rep}: MSE MagmaClust {:.3} Magma {:.3} GP {:.3}",
            methods[0].mse.last().unwrap(),
            methods[1].mse.last().unwrap(),
            methods[2].mse.last().unwrap()
        );
    }
    if let Some((grid, p, observed, held_out)) = example {
        use clustr::plot::Figure;
        let cluster_means: Vec<Vec<f64>> = p.cluster_means.rows().into_iter().map(|r| r.to_vec()).collect();
        clustr::plot::Prediction {
            title: "MagmaClust (K = 3) on an H00 test task: 20 points observed, the last 10 held out",
            inputs: grid.as_slice().unwrap_or_default(),
            mean: p.mean.as_slice().unwrap_or_default(),
            var: p.var.as_slice().unwrap_or_default(),
            cluster_means: &cluster_means,
            observed: (&observed.0, &observed.1),
            held_out: Some((&held_out.0, &held_out.1)),
        }
        .save(study::results_dir().join("magmaclust_prediction.png"))?;
    }
    let paper = [
        ("3.67 (8.13)", "1.67", "95.0 (13.2)", "131.9", "0.37"),
        ("31.7 (45.0)", "15.6", "84.4 (27.9)", "61.1", "0.32"),
        ("153.9 (227.6)", "84.3", "78.4 (33.1)", "0", "0.23"),
    ];
    let mut md = String::new();
    writeln!(md, "# MagmaClust simulation study\n").unwrap();
    writeln!(
        md,
        "`cargo run --release --example magmaclust -- --reps {reps}`: {reps} replicates, one thread. Paper values: \
         docs/reference-notes.md §3.2 (100 runs, recomputed from the paper's result files; R on the authors' machine).\n"
    )
    .unwrap();
    writeln!(
        md,
        "## Prediction (H00, M = 50, N = 30, K = 3; last 10 points from the first 20)\n"
    )
    .unwrap();
    writeln!(
        md,
        "| Method | MSE mean (sd) | MSE median | WCIC95 mean (sd) | Train s | Pred s | paper MSE | paper median | paper WCIC95 | paper train s | paper pred s |"
    )
    .unwrap();
    writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|").unwrap();
    for (i, m) in methods.iter().enumerate() {
        let (mm, ms) = mean_sd(&m.mse);
        let (wm, ws) = mean_sd(&m.wcic);
        let p = paper[i];
        writeln!(
            md,
            "| {} | {mm:.2} ({ms:.2}) | {:.2} | {wm:.1} ({ws:.1}) | {:.4} | {:.4} | {} | {} | {} | {} | {} |",
            names[i],
            median(&m.mse),
            mean_sd(&m.train_s).0,
            mean_sd(&m.pred_s).0,
            p.0,
            p.1,
            p.2,
            p.3,
            p.4
        )
        .unwrap();
    }
    let paper_ari = [
        ("0.889 (0.213)", "0.63", "0.807 (0.260)"),
        ("0.926 (0.156)", "0.71", "0.818 (0.267)"),
        ("0.906 (0.141)", "0.46", "0.810 (0.227)"),
        ("0.938 (0.122)", "0.64", "0.859 (0.200)"),
        ("0.934 (0.150)", "0.81", "0.831 (0.286)"),
    ];
    writeln!(
        md,
        "\n## Clustering ARI (M = 50, N = 30; each scenario fitted under its own hypothesis)\n"
    )
    .unwrap();
    writeln!(
        md,
        "| Scenario | MagmaClust ARI mean (sd) | median | share ARI = 1 | k-means on raw outputs | paper MagmaClust | paper share = 1 | paper k-means + B-splines |"
    )
    .unwrap();
    writeln!(md, "|---|---|---|---|---|---|---|---|").unwrap();
    for (j, (name, _)) in scenarios.iter().enumerate() {
        let (am, asd) = mean_sd(&ari[j].0);
        let (km, ksd) = mean_sd(&ari[j].1);
        let ones = ari[j].0.iter().filter(|&&a| a > 1.0 - 1e-12).count() as f64 / ari[j].0.len() as f64;
        let p = paper_ari[j];
        writeln!(
            md,
            "| {name} | {am:.3} ({asd:.3}) | {:.3} | {ones:.2} | {km:.3} ({ksd:.3}) | {} | {} | {} |",
            median(&ari[j].0),
            p.0,
            p.1,
            p.2
        )
        .unwrap();
    }
    Ok(md)
}

fn scaling(max_irregular: usize) -> clustr::Result<String> {
    let mut md = String::new();
    writeln!(md, "# MagmaClust scaling in the number of tasks M\n").unwrap();
    writeln!(
        md,
        "`cargo run --release --example magmaclust -- --scaling`: H00 data, K = 3, N = 30 points per task, one thread; \
         time per VEM iteration = training time / iterations.\n"
    )
    .unwrap();
    writeln!(md, "| inputs | M | grid size | iterations | train s | s per iteration | ms per iteration per 100 tasks |").unwrap();
    writeln!(md, "|---|---|---|---|---|---|---|").unwrap();
    for common in [true, false] {
        let sizes: &[usize] = if study::quick() {
            &[20, 40]
        } else {
            &[50, 100, 200, 500, 1000, 2000, 5000]
        };
        for &m in sizes {
            if !common && m > max_irregular {
                continue;
            }
            let sim = Simulator {
                seed: 7,
                n_tasks: m,
                common_inputs: common,
                ..Simulator::new(Scenario::H00)
            }
            .generate()?;
            let t = Instant::now();
            let model = MagmaClust::new(3).fit(&sim.tasks)?;
            let secs = t.elapsed().as_secs_f64();
            let per = secs / model.elbos.len() as f64;
            let line = format!(
                "| {} | {m} | {} | {} | {secs:.3} | {per:.4} | {:.2} |",
                if common { "common" } else { "per task" },
                sim.tasks.grid.nrows(),
                model.elbos.len(),
                1e3 * per * 100.0 / m as f64
            );
            eprintln!("{line}");
            writeln!(md, "{line}").unwrap();
        }
    }
    Ok(md)
}

fn main() -> clustr::Result<()> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|e| clustr::Error::param("threads", 1, e.to_string()))?;
    let (md, name) = if study::flag("--scaling") {
        let max_irregular = study::value("--max-m-irregular", 5000);
        (pool.install(|| scaling(max_irregular))?, "magmaclust_scaling.md")
    } else {
        let reps = study::value("--reps", if study::quick() { 1 } else { 100 });
        (pool.install(|| study(reps))?, "magmaclust.md")
    };
    print!("{md}");
    study::write(name, 1, &md)?;
    Ok(())
}
