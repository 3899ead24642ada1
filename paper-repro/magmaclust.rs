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
//!     cargo run --release --example magmaclust -- --scheme-a [--reps 100]
//!
//! Scheme A (`--scheme-a`): why MagmaClust's ARI on scheme A is far below the paper's, by
//! experiment. On the same replicates: k-means on the raw outputs (MagmaClust's start) and on 8
//! cubic B-splines (the paper's baseline), the nearest true cluster mean (what the
//! data allow), and MagmaClust by default, with a strict convergence rule, started from the
//! B-spline k-means and started from the true clusters. Writes magmaclust_scheme_a.md.
//!
//! `--quick`: one replicate; M = 20 and 40 tasks for `--scaling`; two replicates for
//! `--scheme-a` (seconds; CI runs all three).

#[path = "study.rs"]
mod study;

use clustr::eval::adjusted_rand_score;
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
            ari[j].0.push(adjusted_rand_score(&sim.clusters, &model.labels)?);
            let raw = Array2::from_shape_fn((sim.tasks.len(), sim.tasks.tasks[0].outputs.len()), |(i, j)| {
                sim.tasks.tasks[i].outputs[j]
            });
            let km = KMeans::new(k).n_init(50).seed(rep).fit(&raw.view())?;
            ari[j].1.push(adjusted_rand_score(&sim.clusters, &km.labels)?);
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
    md.push_str(
        "\n## Notes\n\n\
         - Scheme A: why our ARI is far below the paper's is measured in magmaclust_scheme_a.md \
         (`--scheme-a`). On our scheme-A data even the Bayes rule (each task to the nearest true \
         cluster mean; the noise is i.i.d. Gaussian) reaches only about 0.83, so the paper's 0.93 \
         was measured on different data. MagmaClust, started from the true clusters or run to a \
         strict convergence rule, gains only about 0.06 over its default fit.\n\
         - Times: one thread on this project's 2-core virtual machine; the paper's are R's on the \
         authors' machine, so only the order of magnitude compares.\n",
    );
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

/// Cubic B-spline basis functions on [lo, hi] with `count` functions (uniform knots,
/// clamped ends), evaluated at `t`: the Cox–de Boor recursion.
fn bspline_basis(t: &[f64], count: usize, lo: f64, hi: f64) -> Array2<f64> {
    let degree = 3;
    let inner = count - degree + 1; // knots spanning [lo, hi]
    let mut knots = vec![lo; degree];
    knots.extend((0..inner).map(|i| lo + (hi - lo) * i as f64 / (inner - 1) as f64));
    knots.extend(vec![hi; degree]);
    let mut out = Array2::zeros((t.len(), count));
    for (r, &x) in t.iter().enumerate() {
        // Degree 0, then raise; the last interval is closed on the right.
        let mut b: Vec<f64> = (0..knots.len() - 1)
            .map(|i| {
                let last = knots[i + 1] == hi && knots[i] < hi;
                f64::from((knots[i] <= x && x < knots[i + 1]) || (last && x == hi))
            })
            .collect();
        for p in 1..=degree {
            b = (0..knots.len() - 1 - p)
                .map(|i| {
                    let left = knots[i + p] - knots[i];
                    let right = knots[i + p + 1] - knots[i + 1];
                    let a = if left > 0.0 {
                        (x - knots[i]) / left * b[i]
                    } else {
                        0.0
                    };
                    let c = if right > 0.0 {
                        (knots[i + p + 1] - x) / right * b[i + 1]
                    } else {
                        0.0
                    };
                    a + c
                })
                .collect();
        }
        out.row_mut(r).assign(&ndarray::ArrayView1::from(&b[..count]));
    }
    out
}

#[test]
fn bsplines_sum_to_one_and_reproduce_a_cubic() {
    let t: Vec<f64> = (0..=100).map(|i| i as f64 / 10.0).collect();
    let b = bspline_basis(&t, 8, 0.0, 10.0);
    for row in b.rows() {
        assert!((row.sum() - 1.0).abs() < 1e-12, "partition of unity");
    }
    // Cubics lie in the span: the least-squares fit of one is exact.
    let y = ndarray::Array1::from_iter(t.iter().map(|x| 0.3 * x * x * x - x * x + 2.0));
    let task = clustr::gp::Task {
        id: "a".into(),
        inputs: ndarray::Array2::from_shape_vec((t.len(), 1), t.clone()).unwrap(),
        outputs: y.clone(),
    };
    let tasks = Tasks::new(vec![task]).unwrap();
    let fit = bspline_smooth(&tasks, 8).unwrap();
    assert!((&fit.row(0) - &y).iter().all(|e| e.abs() < 1e-6));
}

/// Each task's least-squares fit on `count` cubic B-splines (the paper's k-means baseline uses
/// 8), evaluated on the grid 0, 0.1, …, 10: k-means on these rows compares the smoothed curves
/// in L2. (On the coefficients themselves the two end functions, poorly pinned down when a
/// task has no point near 0 or 10, dominate the distances.)
fn bspline_smooth(tasks: &Tasks, count: usize) -> clustr::Result<Array2<f64>> {
    let grid: Vec<f64> = (0..=100).map(|i| i as f64 / 10.0).collect();
    let on_grid = bspline_basis(&grid, count, 0.0, 10.0);
    let mut out = Array2::zeros((tasks.len(), grid.len()));
    for (i, task) in tasks.tasks.iter().enumerate() {
        let b = bspline_basis(&task.inputs.column(0).to_vec(), count, 0.0, 10.0);
        // Normal equations (BᵀB + εI) c = Bᵀy, through the inverse Cholesky factor.
        let mut btb = b.t().dot(&b);
        btb.diag_mut().iter_mut().for_each(|d| *d += 1e-9);
        let rhs = b.t().dot(&task.outputs);
        let l = clustr::linalg::cholesky_lower(btb.view())
            .ok_or_else(|| clustr::Error::param("B-spline basis", count, "not positive definite"))?;
        let li = clustr::linalg::invert_lower(l.view());
        out.row_mut(i).assign(&on_grid.dot(&li.t().dot(&li.dot(&rhs))));
    }
    Ok(out)
}

/// Scheme A, by experiment: is MagmaClust's low ARI the data, the initialisation, the
/// hyper-parameter start or the convergence rule? Each row is one change from the default fit
/// (the paper's cv_threshold = 0.01, k-means on the raw outputs as the start), over the same
/// replicates.
fn scheme_a(reps: u64) -> clustr::Result<String> {
    let rows = [
        "k-means on the raw outputs (50 starts): MagmaClust's default start",
        "k-means on each task's 8-cubic-B-spline smooth (50 starts): the paper's baseline",
        "nearest true cluster mean (knows the labels): what the data allow",
        "MagmaClust, default (cv_threshold 0.01, start: k-means on raw outputs)",
        "MagmaClust, cv_threshold 1e-6 and 200 iterations",
        "MagmaClust, start: k-means on the B-spline smooths",
        "MagmaClust, start: the true clusters",
        "MagmaClust, start: the true clusters, prior mean = the mean output",
        "MagmaClust, start: the true clusters, hypothesis Hki (hyper-parameters per cluster and task)",
    ];
    let mut ari: Vec<Vec<f64>> = vec![Vec::new(); rows.len()];
    let mut iterations: Vec<Vec<f64>> = vec![Vec::new(); rows.len()];
    let (mut truth_start_higher, mut compared) = (0, 0);
    for rep in 0..reps {
        let sim = Simulator {
            seed: 1000 + rep,
            n_tasks: 50,
            ..Simulator::new(Scenario::SchemeA)
        }
        .generate()?;
        let k = sim.means.nrows();
        let m = sim.tasks.len();
        let raw = Array2::from_shape_fn((m, sim.tasks.tasks[0].outputs.len()), |(i, j)| {
            sim.tasks.tasks[i].outputs[j]
        });
        let km_raw = KMeans::new(k).n_init(50).seed(rep).fit(&raw.view())?;
        let coef = bspline_smooth(&sim.tasks, 8)?;
        let km_spline = KMeans::new(k).n_init(50).seed(rep).fit(&coef.view())?;
        // Nearest true-cluster mean curve, the means taken from the labelled tasks themselves.
        let mut centre = Array2::<f64>::zeros((k, raw.ncols()));
        let mut size = vec![0.0; k];
        for (i, &c) in sim.clusters.iter().enumerate() {
            centre.row_mut(c as usize).scaled_add(1.0, &raw.row(i));
            size[c as usize] += 1.0;
        }
        for (mut row, &count) in centre.rows_mut().into_iter().zip(&size) {
            if count > 0.0 {
                row.mapv_inplace(|v| v / count);
            }
        }
        let nearest: Vec<i64> = raw
            .rows()
            .into_iter()
            .map(|r| {
                (0..k)
                    .min_by(|&a, &b| {
                        let d = |c: usize| (&r - &centre.row(c)).mapv(|v| v * v).sum();
                        d(a).total_cmp(&d(b))
                    })
                    .unwrap_or(0) as i64
            })
            .collect();
        let one_hot =
            |labels: &[i64]| Array2::from_shape_fn((m, k), |(i, c)| f64::from(labels[i] == c as i64));
        let default = MagmaClust {
            cv_threshold: 0.01,
            ..MagmaClust::new(k).hypotheses(true, true).seed(rep)
        };
        let fits = [
            default.clone(),
            MagmaClust {
                cv_threshold: 1e-6,
                n_iter_max: 200,
                ..default.clone()
            },
            default.clone().init_tau(one_hot(&km_spline.labels)),
            default.clone().init_tau(one_hot(&sim.clusters)),
            MagmaClust {
                prior_mean: raw.mean().unwrap_or(0.0),
                ..default.clone().init_tau(one_hot(&sim.clusters))
            },
            default
                .clone()
                .hypotheses(false, false)
                .init_tau(one_hot(&sim.clusters)),
        ];
        for (row, labels) in [(0, &km_raw.labels), (1, &km_spline.labels), (2, &nearest)] {
            ari[row].push(adjusted_rand_score(&sim.clusters, labels)?);
        }
        let mut elbo = Vec::new();
        for (row, fit) in (3..).zip(&fits) {
            let model = fit.fit(&sim.tasks)?;
            ari[row].push(adjusted_rand_score(&sim.clusters, &model.labels)?);
            iterations[row].push(model.elbos.len() as f64);
            elbo.push(model.elbos.last().copied().unwrap_or(f64::NAN));
        }
        if elbo[0].is_finite() && elbo[3].is_finite() {
            compared += 1;
            truth_start_higher += usize::from(elbo[3] > elbo[0] + 1e-6 * elbo[0].abs());
        }
        eprintln!(
            "scheme A rep {rep}: ARI default {:.3}, truth start {:.3}",
            ari[3][rep as usize], ari[6][rep as usize]
        );
    }
    let mut md = String::new();
    writeln!(md, "# MagmaClust on scheme A: what limits the ARI\n").unwrap();
    writeln!(
        md,
        "{reps} replicates of scheme A (K = 4, M = 50 tasks of N = 30 common points, seeds 1000…), the \
         paper's cv_threshold = 0.01 unless the row says otherwise, one thread. ARI against the \
         simulated clusters.\n"
    )
    .unwrap();
    writeln!(
        md,
        "| method | ARI mean (sd) | median | share ARI = 1 | EM iterations (mean) |"
    )
    .unwrap();
    writeln!(md, "|---|---|---|---|---|").unwrap();
    for (row, name) in rows.iter().enumerate() {
        let (mean, sd) = mean_sd(&ari[row]);
        let ones =
            ari[row].iter().filter(|&&a| a > 1.0 - 1e-12).count() as f64 / ari[row].len().max(1) as f64;
        let it = if iterations[row].is_empty() {
            "-".to_string()
        } else {
            format!("{:.1}", mean_sd(&iterations[row]).0)
        };
        writeln!(
            md,
            "| {name} | {mean:.3} ({sd:.3}) | {:.3} | {ones:.2} | {it} |",
            median(&ari[row])
        )
        .unwrap();
    }
    writeln!(
        md,
        "\nStarted from the true clusters, MagmaClust's final ELBO is higher than the default fit's \
         in {truth_start_higher} of {compared} replicates.\n"
    )
    .unwrap();
    let mean = |row: usize| mean_sd(&ari[row]).0;
    writeln!(
        md,
        "## Reading\n\n\
         - **The data.** The noise is i.i.d. Gaussian with equal variance, so assigning each task to \
         the nearest true cluster mean is the Bayes rule. It reaches {:.2} here. No clustering \
         method can expect more on these data, and the paper's MagmaClust reached 0.93, so the \
         paper's scheme-A data were easier than what this generator (the research code's \
         `simu_scheme_alternate`, term for term) draws. One reason: u ~ U(0, 1) is drawn once per \
         data set, and as u nears 1 the bumps that tell the clusters apart vanish.\n\
         - **Initialisation.** Started from the true clusters, MagmaClust reaches {:.2}, against \
         {:.2} from its default start, and its final ELBO beats the default fit's in only \
         {truth_start_higher} of {compared} replicates. The ELBO does not prefer the true \
         partition, so the start is not what holds the ARI down. A smoother start (k-means on \
         B-spline smooths) is worse: {:.2}.\n\
         - **Convergence rule.** A strict rule (1e-6, up to 200 iterations) gives {:.2}.\n\
         - **Model settings.** From the true clusters, a prior mean equal to the data's mean \
         gives {:.2}, and hyper-parameters per cluster and task (Hki) give {:.2}.\n\
         - **Hyper-parameter start.** Not varied: `MagmaClust` has no setting for it, and the \
         rows above show that no start of the memberships changes the result by more than \
         about 0.06.\n\
         - **What remains.** MagmaClust's mixture of GPs sits about {:.2} below the Bayes rule \
         on these non-GP data, wherever it starts. The same implementation matches the paper \
         on the four GP scenarios (magmaclust.md).",
        mean(2),
        mean(6),
        mean(3),
        mean(5),
        mean(4),
        mean(7),
        mean(8),
        mean(2) - mean(6),
    )
    .unwrap();
    Ok(md)
}

fn main() -> clustr::Result<()> {
    study::begin();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|e| clustr::Error::param("threads", 1, e.to_string()))?;
    let (md, name) = if study::flag("--scheme-a") {
        let reps = study::value("--reps", if study::quick() { 2 } else { 100 });
        (pool.install(|| scheme_a(reps))?, "magmaclust_scheme_a.md")
    } else if study::flag("--scaling") {
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
