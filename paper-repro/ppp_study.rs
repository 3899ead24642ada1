//! PPP (our reading of Sultan 2020, arXiv 2003.04372; see src/mixture/ppp.rs) on generated
//! blobs with known k (several shapes and separations) and on digits, wine (standardised) and
//! iris: the per-k table, the chosen k against the truth, and repeatability — PPP from 20
//! different seeds against plain k-means (one greedy k-means++ start) from the same 20 seeds.
//! Prints markdown and writes paper-repro/results/ppp.md.
//!
//!     cargo run --release --example ppp_study -- [--seeds 20] [--runs 20]
//!
//! `--quick`: the first blobs and iris, 2 seeds and 2 runs (seconds; CI runs it).

#[path = "study.rs"]
mod study;

use clustr::datasets::{load, Blobs};
use clustr::eval::adjusted_rand_score;
use clustr::kmeans::KMeans;
use clustr::mixture::ppp::canonical;
use clustr::mixture::{CovarianceType, Ppp};
use clustr::Fit;
use ndarray::{array, Array2, Axis};
use std::collections::HashSet;
use std::fmt::Write;
use std::time::Instant;

fn standardised(x: Array2<f64>) -> Array2<f64> {
    let mean = x.mean_axis(Axis(0)).unwrap();
    let std = x.std_axis(Axis(0), 0.0).mapv(|s| if s > 0.0 { s } else { 1.0 });
    (x - &mean) / &std
}

struct Case {
    name: String,
    x: Array2<f64>,
    truth: Vec<i64>,
    k_max: usize,
    covariance: CovarianceType,
}

fn blobs(name: &str, b: Blobs, transform: Option<Array2<f64>>) -> Case {
    let d = b.generate().expect("valid generator");
    let x = match transform {
        Some(t) => d.data.dot(&t),
        None => d.data,
    };
    Case {
        name: name.into(),
        x,
        truth: d.target,
        k_max: 10,
        covariance: CovarianceType::Full,
    }
}

fn real(name: &str, standardise: bool, covariance: CovarianceType) -> Case {
    let d = load(name).expect("shipped data set");
    Case {
        name: name.into(),
        x: if standardise { standardised(d.data) } else { d.data },
        truth: d.target,
        k_max: 12,
        covariance,
    }
}

fn main() -> clustr::Result<()> {
    study::begin();
    let quick = study::quick();
    let n_seeds: u64 = study::value("--seeds", if quick { 2 } else { 20 });
    let runs = study::value("--runs", if quick { 2 } else { 20 });
    let mut cases = vec![
        blobs(
            "blobs k=3, 2-d, isotropic",
            Blobs::new(600, 3).center_box(-20.0, 20.0).seed(1),
            None,
        ),
        blobs(
            "blobs k=4, 2-d, anisotropic",
            Blobs::new(800, 4).center_box(-20.0, 20.0).seed(2),
            Some(array![[0.6, -0.64], [-0.41, 0.85]]),
        ),
        blobs(
            "blobs k=5, 5-d, unequal sizes",
            Blobs::new(0, 5)
                .sizes(vec![50, 100, 200, 400, 800])
                .n_features(5)
                .center_box(-20.0, 20.0)
                .seed(3),
            None,
        ),
        blobs(
            "blobs k=6, 3-d, std 0.5 to 2.5",
            Blobs::new(1200, 6)
                .n_features(3)
                .cluster_stds(vec![0.5, 1.0, 1.5, 2.0, 2.5, 1.0])
                .center_box(-30.0, 30.0)
                .seed(4),
            None,
        ),
        blobs(
            "blobs k=8, 10-d",
            Blobs::new(1600, 8).n_features(10).seed(5),
            None,
        ),
        real("iris", false, CovarianceType::Full),
        real("wine", true, CovarianceType::Full),
        real("digits", false, CovarianceType::Diag),
    ];
    if quick {
        cases.retain(|c| c.name.starts_with("blobs k=3") || c.name == "iris");
    }
    let mut out = String::new();
    writeln!(
        out,
        "PPP (clustr's reading of Sultan 2020: stability x GMM agreement, ties within 0.05 to the \
         lowest BIC), k = 2..k_max, {runs} k-means runs per k. Repeatability: {n_seeds} PPP seeds \
         vs plain k-means (one greedy k-means++ start) from the same seeds at the chosen k.\n"
    )
    .unwrap();
    writeln!(
        out,
        "| data | n x d | true k | chosen k | ARI vs truth | PPP partitions over {n_seeds} seeds | \
         k-means partitions over {n_seeds} seeds | k-means mean pairwise ARI | most separable | PPP time (s) |"
    )
    .unwrap();
    writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|").unwrap();
    let mut tables = String::new();
    for case in &cases {
        let true_k = case.truth.iter().copied().collect::<HashSet<_>>().len();
        let params = Ppp::new(2, case.k_max)
            .n_runs(runs)
            .covariance_type(case.covariance);
        let t = Instant::now();
        let first = params.clone().seed(0).fit(&case.x.view())?;
        let secs = t.elapsed().as_secs_f64();
        let mut ppp_partitions = HashSet::new();
        let mut km_partitions = Vec::new();
        for seed in 0..n_seeds {
            let m = if seed == 0 {
                first.clone()
            } else {
                params.clone().seed(seed).fit(&case.x.view())?
            };
            ppp_partitions.insert(m.labels.clone());
            let km = KMeans::new(first.k).n_init(1).seed(seed).fit(&case.x.view())?;
            km_partitions.push(canonical(&km.labels));
        }
        let distinct_km: HashSet<&Vec<i64>> = km_partitions.iter().collect();
        let mut pair_ari = Vec::new();
        for i in 0..km_partitions.len() {
            for j in i + 1..km_partitions.len() {
                pair_ari.push(adjusted_rand_score(&km_partitions[i], &km_partitions[j])?);
            }
        }
        let mean_ari = pair_ari.iter().sum::<f64>() / pair_ari.len().max(1) as f64;
        let ari = adjusted_rand_score(&case.truth, &first.labels)?;
        let sep = first.separable.iter().filter(|&&s| s).count();
        writeln!(
            out,
            "| {} | {} x {} | {true_k} | {} | {ari:.4} | {} | {} | {mean_ari:.4} | {sep} of {} | {secs:.2} |",
            case.name,
            case.x.nrows(),
            case.x.ncols(),
            first.k,
            ppp_partitions.len(),
            distinct_km.len(),
            case.x.nrows()
        )
        .unwrap();
        writeln!(
            tables,
            "\n**{}** (true k = {true_k}, chosen {}):\n",
            case.name, first.k
        )
        .unwrap();
        writeln!(
            tables,
            "| k | stability | agreement | score | BIC | distinct partitions | runs finding the best |"
        )
        .unwrap();
        writeln!(tables, "|---:|---:|---:|---:|---:|---:|---:|").unwrap();
        for r in &first.table {
            let mark = if r.k == first.k { " ←" } else { "" };
            writeln!(
                tables,
                "| {}{mark} | {:.4} | {:.4} | {:.4} | {:.1} | {} | {:.2} |",
                r.k, r.stability, r.agreement, r.score, r.bic, r.distinct_partitions, r.best_fraction
            )
            .unwrap();
        }
        eprintln!("{}: chose {} (truth {true_k}) in {secs:.2} s", case.name, first.k);
    }
    out.push_str("\nPer-k tables (seed 0):\n");
    out.push_str(&tables);
    println!("{out}");
    study::write("ppp.md", rayon::current_num_threads(), &out)?;
    Ok(())
}
