//! MagmaClust's tests.

use super::em::{gaussian_objective, gaussian_objective_plus, tau_term};
use super::*;
use crate::gp::data::Task;
use crate::gp::regression::{cholesky_jitter, inverse_from_cholesky};
use crate::gp::simulate::{Scenario, Simulator};
use std::f64::consts::PI;

/// The VM objective's gradient against finite differences.
#[test]
fn vm_gradient_matches_finite_differences() {
    let x = Array2::from_shape_fn((8, 1), |(i, _)| i as f64 * 0.9);
    let r = Array1::from_shape_fn(8, |i| (i as f64).sin());
    let a = r
        .view()
        .insert_axis(ndarray::Axis(1))
        .dot(&r.view().insert_axis(ndarray::Axis(0)))
        + Array2::<f64>::eye(8) * 0.1;
    let p = [0.4, 0.2, -1.0];
    let mut g = [0.0; 3];
    gaussian_objective(
        &Covariance::SquaredExponential,
        &p[..2],
        Some(p[2]),
        x.view(),
        (&a, 1.3),
        1e-10,
        &mut g,
    );
    for j in 0..3 {
        let h = 1e-6;
        let (mut up, mut down) = (p, p);
        up[j] += h;
        down[j] -= h;
        let mut t = [0.0; 3];
        let f = |q: &[f64; 3], t: &mut [f64; 3]| {
            gaussian_objective(
                &Covariance::SquaredExponential,
                &q[..2],
                Some(q[2]),
                x.view(),
                (&a, 1.3),
                1e-10,
                t,
            )
        };
        let fd = (f(&up, &mut t) - f(&down, &mut t)) / (2.0 * h);
        assert!(
            (g[j] - fd).abs() < 1e-5 * (1.0 + fd.abs()),
            "param {j}: {} vs {fd}",
            g[j]
        );
    }
}

/// The new task's objective (`Σ = K + Ĉ`) has the right gradient too.
#[test]
fn marginal_objective_gradient_matches_finite_differences() {
    let x = Array2::from_shape_fn((6, 1), |(i, _)| i as f64 * 1.3);
    let r = Array1::from_shape_fn(6, |i| (i as f64 * 0.7).cos());
    let a = r
        .view()
        .insert_axis(ndarray::Axis(1))
        .dot(&r.view().insert_axis(ndarray::Axis(0)));
    let plus = Covariance::SquaredExponential.matrix(&[-1.0, 0.5], x.view(), x.view());
    let kernel = Covariance::Sum(
        Box::new(Covariance::SquaredExponential),
        Box::new(Covariance::Periodic),
    );
    let p = [0.2, 0.1, -0.3, 0.4, 1.0, -2.0];
    let f = |q: &[f64], g: &mut [f64]| {
        gaussian_objective_plus(
            &kernel,
            &q[..5],
            Some(q[5]),
            x.view(),
            Some(&plus),
            (&a, 0.7),
            1e-10,
            g,
        )
    };
    let mut g = [0.0; 6];
    f(&p, &mut g);
    for j in 0..6 {
        let h = 1e-6;
        let (mut up, mut down) = (p, p);
        up[j] += h;
        down[j] -= h;
        let mut t = [0.0; 6];
        let fd = (f(&up, &mut t) - f(&down, &mut t)) / (2.0 * h);
        assert!(
            (g[j] - fd).abs() < 1e-6 * (1.0 + fd.abs()),
            "param {j}: {} vs {fd}",
            g[j]
        );
    }
}

/// Three tasks on irregular inputs.
fn small_tasks() -> Tasks {
    let task = |id: &str, x: &[f64]| Task {
        id: id.into(),
        inputs: Array2::from_shape_vec((x.len(), 1), x.to_vec()).unwrap(),
        outputs: x
            .iter()
            .map(|t| (t * 0.9).sin() * 3.0 + id.len() as f64)
            .collect(),
    };
    Tasks::new(vec![
        task("a", &[0.0, 1.0, 2.5]),
        task("bb", &[1.0, 3.0]),
        task("c", &[0.5, 2.5, 4.0, 5.0]),
    ])
    .unwrap()
}

/// Every observation stacked: the mean process's prior covariance C on the grid, the
/// selection P of the observed grid rows, `S = P C Pᵀ + blockdiag Ψᵢ` and the outputs y.
struct Dense {
    c: Array2<f64>,
    p: Array2<f64>,
    s: Array2<f64>,
    y: Array1<f64>,
}

fn dense(data: &Tasks, hp_k: &[f64], hp_i: &[Vec<f64>]) -> Dense {
    let rows: Vec<usize> = data.index.concat();
    let c = Covariance::SquaredExponential.matrix(hp_k, data.grid.view(), data.grid.view());
    let p = Array2::from_shape_fn((rows.len(), data.grid.nrows()), |(a, g)| {
        f64::from(u8::from(rows[a] == g))
    });
    let mut s = p.dot(&c).dot(&p.t());
    let mut at = 0;
    for (t, h) in data.tasks.iter().zip(hp_i) {
        let block = Covariance::SquaredExponential.matrix_with_noise(&h[..2], h[2], t.inputs.view());
        let m = block.nrows();
        s.slice_mut(ndarray::s![at..at + m, at..at + m])
            .zip_mut_with(&block, |a, b| *a += b);
        at += m;
    }
    let y = data
        .tasks
        .iter()
        .flat_map(|t| t.outputs.iter().copied())
        .collect();
    Dense { c, p, s, y }
}

/// The VE step of one cluster is exact Gaussian conditioning: with `y = P μ + e`,
/// `e ~ N(0, blockdiag Ψᵢ)`, `μ ~ N(m, C)` on the grid, the posterior of μ is
/// `m + C Pᵀ S⁻¹ (y − P m)`, `C − C Pᵀ S⁻¹ P C` with `S = P C Pᵀ + blockdiag Ψᵢ`.
#[test]
fn ve_step_equals_dense_gaussian_conditioning() {
    let data = small_tasks();
    let mut settings = MagmaClust::new(1);
    settings.prior_mean = 1.5;
    let hp_i: Vec<Vec<f64>> = vec![vec![0.3, 0.2, -2.0], vec![0.1, -0.4, -1.0], vec![-0.2, 0.5, -3.0]];
    let hp_k = vec![vec![1.2, 0.8]];
    let psi = settings.task_factors(&data, &hp_i).unwrap();
    let tau = Array2::ones((3, 1));
    let (post, _) = settings
        .hyperposterior(data.grid.view(), &data.index, &data, &psi, &tau, &hp_k)
        .unwrap();
    let Dense { c, p, s, y } = dense(&data, &hp_k[0], &hp_i);
    let s_inv = inverse_from_cholesky(&cholesky_jitter(&s, 0.0).unwrap());
    let gain = c.dot(&p.t()).dot(&s_inv);
    let mean = &gain.dot(&(&y - 1.5)) + 1.5;
    let cov = &c - &gain.dot(&p).dot(&c);
    assert!(
        (&post.mean.row(0) - &mean).iter().all(|d| d.abs() < 1e-7),
        "{} vs {mean}",
        post.mean
    );
    assert!((&post.cov[0] - &cov).iter().all(|d| d.abs() < 1e-7));
}

/// K = 1 is Magma, whose VE step is the exact posterior of the mean process: the ELBO
/// (plus the entropy constant ½N(1 + log 2π) we drop) is then the exact log evidence
/// `log N(y; P m, P C Pᵀ + blockdiag Ψᵢ)`, τ ≡ 1 and π = (1).
#[test]
fn k1_is_magma_and_its_elbo_is_the_log_evidence() {
    let data = small_tasks();
    let mut settings = MagmaClust::new(1);
    settings.n_iter_max = 1;
    settings.optimiser.max_iter = 0; // evaluate at the initial hyper-parameters
    let model = settings.fit(&data).unwrap();
    assert_eq!(model.tau, Array2::<f64>::ones((3, 1)));
    assert_eq!(model.weights.to_vec(), vec![1.0]);
    let n = data.grid.nrows();
    let Dense { s, y, .. } = dense(&data, &model.hp_k[0], &model.hp_i);
    let l = cholesky_jitter(&s, 0.0).unwrap();
    let evidence = tau_term(&l, &Array2::zeros(s.dim()), &y, &Array2::zeros(s.dim()));
    let elbo = model.elbos[0] + 0.5 * n as f64 * (1.0 + (2.0 * PI).ln());
    assert!(
        (elbo - evidence).abs() < 1e-6 * evidence.abs(),
        "ELBO {elbo} vs log evidence {evidence}"
    );
}

/// Without mean-process uncertainty (a mean-process variance e^−40) the prediction is
/// standard GP regression around the prior mean with the task's hyper-parameters.
#[test]
fn prediction_without_mean_uncertainty_is_gp_regression() {
    let data = small_tasks();
    let mut settings = MagmaClust::new(1);
    settings.prior_mean = 2.0;
    let theta = vec![0.5, 0.3, -2.5];
    let model = MagmaClustModel {
        weights: Array1::ones(1),
        tau: Array2::ones((3, 1)),
        labels: vec![0; 3],
        hp_k: vec![vec![-40.0, 0.0]],
        hp_i: vec![theta.clone(); 3],
        hyperpost: HyperPosterior {
            mean: Array2::zeros((1, 0)),
            cov: vec![],
        },
        elbos: vec![],
        converged: true,
        settings,
    };
    let t_obs = Array2::from_shape_vec((4, 1), vec![0.2, 1.1, 2.0, 3.7]).unwrap();
    let y_obs = ndarray::array![2.5, 3.0, 1.0, 0.4];
    let t_pred = Array2::from_shape_vec((3, 1), vec![0.7, 2.9, 4.5]).unwrap();
    let p = model
        .predict(&data, t_obs.view(), y_obs.view(), t_pred.view())
        .unwrap();
    let gp = crate::gp::GpRegression {
        init_params: Some(theta[..2].to_vec()),
        init_noise: theta[2],
        prior_mean: 2.0,
        optimiser: Lbfgs {
            max_iter: 0,
            ..Lbfgs::reference()
        },
        ..Default::default()
    }
    .fit(t_obs.view(), y_obs.view())
    .unwrap();
    let (mean, var) = gp.predict(t_pred.view()).unwrap();
    let noise = theta[2].exp();
    for j in 0..3 {
        assert!((p.mean[j] - mean[j]).abs() < 1e-8, "{} vs {mean}", p.mean);
        assert!((p.var[j] - noise - var[j]).abs() < 1e-8, "{} vs {var}", p.var);
    }
}

/// The ELBO does not decrease (beyond the optimiser's looseness: 1e-3 relative), τ rows
/// sum to 1, under every hypothesis.
#[test]
fn elbo_does_not_decrease_and_tau_rows_sum_to_one() {
    for (k_shared, i_shared) in [(true, true), (false, true), (true, false), (false, false)] {
        for seed in 0..2 {
            let sim = Simulator {
                seed,
                n_tasks: 20,
                common_inputs: seed == 1,
                ..Simulator::new(Scenario::Hki)
            }
            .generate()
            .unwrap();
            let m = MagmaClust::new(3)
                .hypotheses(k_shared, i_shared)
                .fit(&sim.tasks)
                .unwrap();
            for w in m.elbos.windows(2) {
                assert!(w[1] >= w[0] - 1e-3 * w[0].abs(), "{:?}", m.elbos);
            }
            for r in m.tau.rows() {
                assert!((r.sum() - 1.0).abs() < 1e-12 && r.iter().all(|&t| (0.0..=1.0).contains(&t)));
            }
        }
    }
}

/// Reordering the tasks, or the points inside each task, changes nothing but the order
/// of the results, bit for bit (k-means initialisation included).
#[test]
fn invariant_to_reordering_tasks_and_inputs() {
    for (scenario, common_inputs) in [(Scenario::H00, true), (Scenario::Hki, false)] {
        let sim = Simulator {
            seed: 4,
            n_tasks: 24,
            common_inputs,
            ..Simulator::new(scenario)
        }
        .generate()
        .unwrap();
        let settings = MagmaClust::new(3).hypotheses(scenario == Scenario::H00, scenario == Scenario::H00);
        let base = settings.fit(&sim.tasks).unwrap();
        let m = sim.tasks.len();
        let order: Vec<usize> = (0..m).map(|i| (i * 7 + 3) % m).collect();
        let shuffled: Vec<Task> = order
            .iter()
            .map(|&i| {
                let t = &sim.tasks.tasks[i];
                let rev: Vec<usize> = (0..t.outputs.len()).rev().collect();
                Task {
                    id: t.id.clone(),
                    inputs: t.inputs.select(ndarray::Axis(0), &rev),
                    outputs: t.outputs.select(ndarray::Axis(0), &rev),
                }
            })
            .collect();
        let other = settings.fit(&Tasks::new(shuffled).unwrap()).unwrap();
        let relabelled: Vec<i64> = order.iter().map(|&i| base.labels[i]).collect();
        assert_eq!(relabelled, other.labels);
        assert_eq!(base.tau.select(ndarray::Axis(0), &order), other.tau);
        assert_eq!(base.elbos, other.elbos);
        assert_eq!((&base.hp_k, &base.hyperpost), (&other.hp_k, &other.hyperpost));
    }
}

/// On the paper's H00 scenario the clusters are recovered (the paper: mean ARI 0.889,
/// median 1.0 over 100 runs).
#[test]
fn recovers_the_clusters_of_simulated_data() {
    let mut aris = Vec::new();
    for seed in 0..3 {
        let sim = Simulator {
            seed,
            n_tasks: 30,
            ..Simulator::new(Scenario::H00)
        }
        .generate()
        .unwrap();
        let m = MagmaClust::new(3).fit(&sim.tasks).unwrap();
        aris.push(crate::eval::adjusted_rand_score(&sim.clusters, &m.labels).unwrap());
        assert!(m.elbos.iter().all(|e| e.is_finite()));
        assert!((m.weights.sum() - 1.0).abs() < 1e-12);
    }
    let mean = aris.iter().sum::<f64>() / aris.len() as f64;
    assert!(mean > 0.8, "ARIs {aris:?}");
}

/// VBIC picks the true K = 3 on simulated H00 data.
#[test]
fn vbic_selects_the_number_of_clusters() {
    let mut right = 0;
    for seed in 0..3 {
        let sim = Simulator {
            seed,
            ..Simulator::new(Scenario::H00)
        }
        .generate()
        .unwrap();
        let sel = select_nb_cluster(&sim.tasks, 1..=5, &MagmaClust::new(1)).unwrap();
        eprintln!("seed {seed}: VBIC {:?} -> K = {}", sel.vbic, sel.best_k);
        assert_eq!(sel.vbic.len(), 5);
        assert_eq!(sel.models[0].weights.len(), 1);
        right += usize::from(sel.best_k == 3);
    }
    assert!(right >= 2, "true K chosen on {right} of 3");
}

/// A held-out task's last 10 points predicted from its first 20 (the paper's protocol):
/// far better than single-task GP regression, with the true cluster found.
#[test]
fn predicts_a_new_task_from_its_cluster() {
    let (mut mse_magma, mut mse_gp) = (0.0, 0.0);
    for seed in 0..3 {
        let sim = Simulator {
            seed,
            n_tasks: 41,
            ..Simulator::new(Scenario::H00)
        }
        .generate()
        .unwrap();
        let mut tasks = sim.tasks.tasks.clone();
        let test = tasks.remove(0);
        let train = Tasks::new(tasks).unwrap();
        let model = MagmaClust::new(3).fit(&train).unwrap();
        let (obs, fut) = (ndarray::s![..20, ..], ndarray::s![20.., ..]);
        let p = model
            .predict(
                &train,
                test.inputs.slice(obs),
                test.outputs.slice(ndarray::s![..20]),
                test.inputs.slice(fut),
            )
            .unwrap();
        let truth = test.outputs.slice(ndarray::s![20..]);
        mse_magma += (&p.mean - &truth).mapv(|v| v * v).mean().unwrap();
        assert!((p.tau.sum() - 1.0).abs() < 1e-12 && p.var.iter().all(|&v| v > 0.0));
        let gp = crate::gp::GpRegression::default()
            .fit(test.inputs.slice(obs), test.outputs.slice(ndarray::s![..20]))
            .unwrap();
        let (m, _) = gp.predict(test.inputs.slice(fut)).unwrap();
        mse_gp += (&m - &truth).mapv(|v| v * v).mean().unwrap();
    }
    eprintln!(
        "MSE over 3 held-out tasks: MagmaClust {:.3}, GP {:.3}",
        mse_magma / 3.0,
        mse_gp / 3.0
    );
    assert!(
        mse_magma < 0.5 * mse_gp,
        "MSE MagmaClust {mse_magma} vs GP {mse_gp}"
    );
}
