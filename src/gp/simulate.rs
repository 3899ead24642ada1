//! The simulation scenarios of the MagmaClust paper (Leroy et al., JMLR 2023, §6; the settings
//! recovered from its data files, docs/reference-notes.md §3.2):
//!
//! - H00, Hk0, H0i, Hki: K mean processes `μ_k ~ GP(a·t + b, SE(v, ℓ))` drawn on the grid
//!   `0, 0.05, …, 10` with a ~ U(−2, 2), b ~ U(20, 30), (v, ℓ) ~ U[0, 3] × U[0, 1]; each task
//!   picks a cluster uniformly and is `y = μ_k(t) + f(t) + ε` with `f ~ GP(0, SE(v_i, ℓ_i))`
//!   and ε of standard deviation σ_i, (v_i, ℓ_i, σ_i) ~ U[0, 3] × U[0, 1] × U[0, 0.1]. The
//!   first letter says whether the mean processes' hyper-parameters differ across clusters
//!   (k) or are shared (0), the second whether the tasks' differ (i) or are shared (0). Draws
//!   of hyper-parameters are rounded to 2 decimals, as the reference.
//! - Scheme A (non-GP): K = 4, grid 0, 0.1, …, 10,
//!   `y = u + v(1 − u)·max(2.5 − |t − c_k|, 0) + N(0, 0.5²)` with u ~ U(0, 1) per data set,
//!   c_k = 2.5 (k even) or 7.5 (k odd), v = 0.5 for k above 2 and 1 otherwise (k = 1…4).
//!
//! Inputs are N points drawn without replacement from the grid, once for all tasks (common)
//! or per task (irregular).

use crate::error::{Error, Result};
use crate::gp::covariance::Covariance;
use crate::gp::data::{Task, Tasks};
use crate::gp::regression::cholesky_jitter;
use crate::rng::SeededRng;
use ndarray::{Array1, Array2, Axis};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};

/// Which hyper-parameters differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// Shared across clusters and across tasks.
    H00,
    /// Specific to each cluster, shared across tasks.
    Hk0,
    /// Shared across clusters, specific to each task.
    H0i,
    /// Specific to each cluster and to each task.
    Hki,
    /// The non-GP scheme A (K = 4).
    SchemeA,
}

/// A simulated data set.
#[derive(Clone, Debug)]
pub struct Simulated {
    /// The tasks.
    pub tasks: Tasks,
    /// The cluster of each task (0-based).
    pub clusters: Vec<i64>,
    /// The grid the mean processes were drawn on.
    pub grid: Array1<f64>,
    /// The mean processes on the grid (K × |grid|).
    pub means: Array2<f64>,
}

/// The simulator's settings.
#[derive(Clone, Debug)]
pub struct Simulator {
    /// Scenario.
    pub scenario: Scenario,
    /// Number of tasks M.
    pub n_tasks: usize,
    /// Points per task N.
    pub n_points: usize,
    /// Number of clusters K (scheme A: 4).
    pub k: usize,
    /// Inputs shared by all tasks (true) or drawn per task.
    pub common_inputs: bool,
    /// Seed.
    pub seed: u64,
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn uniform(rng: &mut SeededRng, lo: f64, hi: f64) -> f64 {
    round2(rng.random_range(lo..hi))
}

/// A draw from N(mean, K) through the Cholesky factor of K (with jitter).
fn gaussian(rng: &mut SeededRng, mean: &Array1<f64>, cov: &Array2<f64>) -> Result<Array1<f64>> {
    let l = cholesky_jitter(cov, 1e-10)?;
    let z = Array1::from_shape_simple_fn(mean.len(), || StandardNormal.sample(rng));
    Ok(mean + &l.dot(&z))
}

impl Simulator {
    /// The paper's main setting: M = 50 tasks of N = 30 common inputs, K = 3.
    pub fn new(scenario: Scenario) -> Self {
        Simulator {
            scenario,
            n_tasks: 50,
            n_points: 30,
            k: if scenario == Scenario::SchemeA { 4 } else { 3 },
            common_inputs: true,
            seed: 0,
        }
    }

    /// Draws a data set.
    pub fn generate(&self) -> Result<Simulated> {
        let step: f64 = if self.scenario == Scenario::SchemeA {
            0.1
        } else {
            0.05
        };
        let grid: Array1<f64> = (0..=(10.0 / step).round() as usize)
            .map(|i| round2(i as f64 * step))
            .collect();
        if self.n_tasks == 0 || self.k == 0 || self.n_points == 0 || self.n_points > grid.len() {
            return Err(Error::param(
                "simulator",
                format!("M = {}, N = {}, K = {}", self.n_tasks, self.n_points, self.k),
                format!("need M, K >= 1 and 1 <= N <= {}", grid.len()),
            ));
        }
        let mut rng = SeededRng::seed_from_u64(self.seed);
        let g2 = grid.view().insert_axis(Axis(1)).to_owned();
        let se = Covariance::SquaredExponential;
        let (by_cluster, by_task) = match self.scenario {
            Scenario::H00 | Scenario::SchemeA => (false, false),
            Scenario::Hk0 => (true, false),
            Scenario::H0i => (false, true),
            Scenario::Hki => (true, true),
        };
        // Mean processes.
        let mut means = Array2::<f64>::zeros((self.k, grid.len()));
        if self.scenario != Scenario::SchemeA {
            let shared = [uniform(&mut rng, 0.0, 3.0), uniform(&mut rng, 0.0, 1.0)];
            for k in 0..self.k {
                let hp = if by_cluster {
                    [uniform(&mut rng, 0.0, 3.0), uniform(&mut rng, 0.0, 1.0)]
                } else {
                    shared
                };
                let (a, b) = (uniform(&mut rng, -2.0, 2.0), uniform(&mut rng, 20.0, 30.0));
                let prior = grid.mapv(|t| a * t + b);
                let cov = se.matrix(&hp, g2.view(), g2.view());
                means.row_mut(k).assign(&gaussian(&mut rng, &prior, &cov)?);
            }
        }
        let shared_task = [
            uniform(&mut rng, 0.0, 3.0),
            uniform(&mut rng, 0.0, 1.0),
            uniform(&mut rng, 0.0, 0.1),
        ];
        let pick = |rng: &mut SeededRng| {
            let mut idx = rand::seq::index::sample(rng, grid.len(), self.n_points).into_vec();
            idx.sort_unstable();
            idx
        };
        let common = pick(&mut rng);
        // Scheme A's mixing proportion is drawn once per data set, as `simu_scheme_alternate`.
        let u: f64 = rng.random();
        let mut tasks = Vec::with_capacity(self.n_tasks);
        let mut clusters = Vec::with_capacity(self.n_tasks);
        for i in 0..self.n_tasks {
            let k = rng.random_range(0..self.k);
            let idx = if self.common_inputs {
                common.clone()
            } else {
                pick(&mut rng)
            };
            let t: Array1<f64> = idx.iter().map(|&j| grid[j]).collect();
            let y = if self.scenario == Scenario::SchemeA {
                let c = if (k + 1) % 2 == 0 { 2.5 } else { 7.5 };
                let v = if k + 1 > 2 { 0.5 } else { 1.0 };
                t.mapv(|ti| {
                    let z: f64 = StandardNormal.sample(&mut rng);
                    u + v * (1.0 - u) * (2.5 - (ti - c).abs()).max(0.0) + 0.5 * z
                })
            } else {
                let hp = if by_task {
                    [
                        uniform(&mut rng, 0.0, 3.0),
                        uniform(&mut rng, 0.0, 1.0),
                        uniform(&mut rng, 0.0, 0.1),
                    ]
                } else {
                    shared_task
                };
                let tt = t.view().insert_axis(Axis(1)).to_owned();
                let mut cov = se.matrix(&hp[..2], tt.view(), tt.view());
                cov.diag_mut().iter_mut().for_each(|d| *d += hp[2] * hp[2]);
                let mean: Array1<f64> = idx.iter().map(|&j| means[[k, j]]).collect();
                gaussian(&mut rng, &mean, &cov)?
            };
            tasks.push(Task {
                id: format!("ID{}-Clust{}", i + 1, k + 1),
                inputs: t.insert_axis(Axis(1)),
                outputs: y,
            });
            clusters.push(k as i64);
        }
        Ok(Simulated {
            tasks: Tasks::new(tasks)?,
            clusters,
            grid,
            means,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_have_the_documented_shape() {
        for scenario in [
            Scenario::H00,
            Scenario::Hk0,
            Scenario::H0i,
            Scenario::Hki,
            Scenario::SchemeA,
        ] {
            let s = Simulator {
                seed: 3,
                ..Simulator::new(scenario)
            }
            .generate()
            .unwrap();
            assert_eq!(s.tasks.len(), 50);
            assert!(s.tasks.tasks.iter().all(|t| t.outputs.len() == 30));
            assert_eq!(s.tasks.grid.nrows(), 30, "common inputs: one grid of N points");
            let k = if scenario == Scenario::SchemeA { 4 } else { 3 };
            assert!(s.clusters.iter().all(|&c| (0..k as i64).contains(&c)));
            if scenario != Scenario::SchemeA {
                // Mean processes sit around their intercepts in [20, 30] ± slope·10.
                assert!(s.means.iter().all(|v| (-15.0..65.0).contains(v)));
            }
        }
        let irregular = Simulator {
            common_inputs: false,
            ..Simulator::new(Scenario::H00)
        }
        .generate()
        .unwrap();
        assert!(irregular.tasks.grid.nrows() > 30);
        let a = Simulator::new(Scenario::Hki).generate().unwrap();
        let b = Simulator::new(Scenario::Hki).generate().unwrap();
        assert_eq!(a.tasks, b.tasks);
    }
}
