//! The description of every method, in one place: its name, family, Python estimator,
//! objective, capabilities (sample weights, k selection, devices, distributed runs), model
//! file (its tag and loader), defaults, and the one call that fits it on points.
//!
//! The command line (its subcommands, summaries and `predict`), the Python package and the
//! test matrices enumerate [`METHODS`], so a method cannot be missing from one of them:
//! tests fail when a subcommand, a Python estimator or a matrix lacks a described method.
//! Adding a method is its module, one entry here and what CONTRIBUTING.md lists. What a
//! model file gives for new points is [`Assign`] (in `assign.rs`).
//!
//! Every estimator fits points with the same call and every model reads its results the same
//! way (the rule: results are the model's public fields, and the [`Clustering`] trait gives
//! the ones all models share, under one name):
//!
//! ```
//! use clustr::methods::METHODS;
//! let x = ndarray::array![[0.0, 0.0], [0.1, 0.0], [0.0, 0.1], [0.1, 0.1],
//!                         [5.0, 5.0], [5.1, 5.0], [5.0, 5.1], [5.1, 5.1]];
//! for method in METHODS {
//!     let Some(fit) = method.fit else { continue }; // (MagmaClust fits tasks, not points)
//!     let model = fit(x.view(), 2)?;
//!     assert_eq!(model.labels().len(), 8, "{}", method.name);
//!     assert!(model.n_clusters() >= 1, "{}", method.name);
//!     assert_eq!(model.loss().is_some(), method.objective.is_some(), "{}", method.name);
//! }
//! # Ok::<(), clustr::Error>(())
//! ```

use crate::backend::{AnyBackend, BackendChoice};
use crate::density::{CorePointPredictor, Dbscan, Hdbscan, HdbscanPredictor, Optics, SingleLinkage};
use crate::error::{Error, Result};
use crate::estimator::{Clustering, Fit};
use crate::kernel::{
    IpRffMkpkm, IpRffMkpkmModel, KernelKMeans, Kpkm, PowerKMeans, PowerKMeansModel, RffKpkm, RffKpkmModel,
};
use crate::kmeans::{
    BisectingKMeans, BisectingKMeansModel, KMeans, KMeansModel, MiniBatchKMeans, MiniBatchKMeansModel,
};
use crate::kmedoids::{Clara, Clarans, KMedoids, MedoidPredictor};
use crate::metric::MetricKind;
use crate::mixture::{GaussianMixture, GaussianMixtureModel, Ppp};
use crate::model_file::SaveLoad;
use ndarray::ArrayView2;
use serde_json::{json, Value};
use std::path::Path;

mod assign;
use assign::load;
pub use assign::Assign;

/// The family a method belongs to (its folder in `src/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// k-means and its variants (`kmeans`).
    KMeans,
    /// k-medoids (`kmedoids`).
    KMedoids,
    /// Density and linkage methods (`density`).
    Density,
    /// Kernel and power k-means (`kernel`).
    Kernel,
    /// Mixture models (`mixture`).
    Mixture,
    /// Gaussian processes (`gp`).
    Gp,
}

/// What the fit's size parameter is: the `usize` given to [`Method::fit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// The number of clusters k (`--k`, `n_clusters`).
    Clusters,
    /// The density methods' `min_samples` (they take no k).
    MinSamples,
    /// HDBSCAN's `min_cluster_size`.
    MinClusterSize,
}

/// A model file: the tag written in its `algorithm` field and the loader of that tag.
#[derive(Clone, Copy)]
pub struct ModelFile {
    /// The file's `algorithm` (several methods may share one: every k-medoids method writes
    /// `kmedoids`).
    pub tag: &'static str,
    /// Reads and checks the file.
    pub load: fn(&Path) -> Result<Box<dyn Assign>>,
}

/// Fits a method on points with its defaults and the given size (see [`Size`]).
pub type FitPoints = fn(ArrayView2<f64>, usize) -> Result<Box<dyn Clustering>>;

/// One method.
#[derive(Clone, Copy)]
pub struct Method {
    /// Its name: the CLI's subcommand and the `algorithm` of its JSON.
    pub name: &'static str,
    /// Its family.
    pub family: Family,
    /// The scikit-learn-style Python estimator that runs it (`KMedoids` runs every k-medoids
    /// method through `method=`), if the package has one.
    pub python: Option<&'static str>,
    /// What its objective is called in summaries (`None`: it has none).
    pub objective: Option<&'static str>,
    /// What the size parameter is.
    pub size: Size,
    /// Whether it takes sample weights.
    pub sample_weight: bool,
    /// Whether the CLI fits it for a range of k and chooses (`--k A:B`, `--criterion`).
    pub select_k: bool,
    /// The work a device backend takes over (`None`: it runs on the CPU only, and refuses a
    /// device backend rather than ignore it).
    pub device: Option<&'static str>,
    /// Whether it runs over several processes (`--distributed`).
    pub distributed: bool,
    /// Its model file, if a fit can write one (`--model-out`, `clustr predict`).
    pub model: Option<ModelFile>,
    /// The one call that fits it on points, `Estimator::new(size).fit(&x)`; `None` for
    /// MagmaClust, which fits functional data (tasks), not points.
    pub fit: Option<FitPoints>,
    /// Its defaults, read from the estimator itself (the one place they are written).
    pub defaults: fn() -> Value,
}

impl Method {
    /// The backend this method runs on for `choice`: the one chosen when a device takes over
    /// part of its work ([`Method::device`]); otherwise the CPU, and `cuda` is refused rather
    /// than ignored. Where the work ran is then the backend's `name()`.
    pub fn backend(&self, choice: BackendChoice) -> Result<AnyBackend> {
        match (self.device, choice) {
            (Some(_), choice) => choice.resolve(),
            (None, BackendChoice::Cuda) => Err(Error::param(
                "backend",
                "cuda",
                format!("{} runs on the CPU only", self.name),
            )),
            (None, _) => Ok(AnyBackend::default()),
        }
    }
}

impl std::fmt::Debug for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Every method, in the order of the CLI's help.
pub static METHODS: &[Method] = &[
    Method {
        name: "kmeans",
        family: Family::KMeans,
        python: Some("KMeans"),
        objective: Some("inertia"),
        size: Size::Clusters,
        sample_weight: true,
        select_k: true,
        device: Some("the assignment step"),
        distributed: true,
        model: Some(ModelFile {
            tag: <KMeansModel<f64> as SaveLoad>::ALGORITHM,
            load: load::<KMeansModel<f64>>,
        }),
        fit: Some(|x, k| boxed(KMeans::new(k).fit(&x))),
        defaults: || {
            let e = KMeans::new(1);
            json!({"init": "k-means++", "n_init": "auto", "max_iter": e.max_iter, "tol": e.tol, "algorithm": "auto"})
        },
    },
    Method {
        name: "bisecting-kmeans",
        family: Family::KMeans,
        python: Some("BisectingKMeans"),
        objective: Some("inertia"),
        size: Size::Clusters,
        sample_weight: true,
        select_k: false,
        device: None,
        distributed: false,
        model: Some(ModelFile {
            tag: <BisectingKMeansModel<f64> as SaveLoad>::ALGORITHM,
            load: load::<BisectingKMeansModel<f64>>,
        }),
        fit: Some(|x, k| boxed(BisectingKMeans::new(k).fit(&x))),
        defaults: || {
            let e = BisectingKMeans::new(1);
            json!({"init": "random", "n_init": e.n_init, "max_iter": e.max_iter, "tol": e.tol,
                   "algorithm": "lloyd", "bisecting_strategy": "biggest_inertia"})
        },
    },
    Method {
        name: "minibatch-kmeans",
        family: Family::KMeans,
        python: Some("MiniBatchKMeans"),
        objective: Some("inertia"),
        size: Size::Clusters,
        sample_weight: true,
        select_k: true,
        device: Some("the nearest-centre searches"),
        distributed: true,
        model: Some(ModelFile {
            tag: <MiniBatchKMeansModel<f64> as SaveLoad>::ALGORITHM,
            load: load::<MiniBatchKMeansModel<f64>>,
        }),
        fit: Some(|x, k| boxed(MiniBatchKMeans::new(k).fit(&x))),
        defaults: || {
            let e = MiniBatchKMeans::new(1);
            json!({"batch_size": e.batch_size, "max_iter": e.max_iter, "tol": e.tol,
                   "max_no_improvement": e.max_no_improvement, "reassignment_ratio": e.reassignment_ratio})
        },
    },
    Method {
        name: "dbscan",
        family: Family::Density,
        python: Some("DBSCAN"),
        objective: None,
        size: Size::MinSamples,
        sample_weight: true,
        select_k: false,
        device: None,
        distributed: false,
        model: Some(ModelFile {
            tag: <CorePointPredictor as SaveLoad>::ALGORITHM,
            load: load::<CorePointPredictor>,
        }),
        fit: Some(|x, m| boxed(Dbscan::new(1.5).min_samples(m).fit(&x))),
        defaults: || {
            let e = Dbscan::new(0.5);
            json!({"eps": e.eps, "min_samples": e.min_samples, "metric": "euclidean"})
        },
    },
    Method {
        name: "optics",
        family: Family::Density,
        python: Some("OPTICS"),
        objective: None,
        size: Size::MinSamples,
        sample_weight: true,
        select_k: false,
        device: None,
        distributed: false,
        model: None,
        fit: Some(|x, m| boxed(Optics::new(m.max(2)).fit(&x))),
        defaults: || {
            let e = Optics::new(5);
            json!({"min_samples": e.min_samples})
        },
    },
    Method {
        name: "hdbscan",
        family: Family::Density,
        python: Some("HDBSCAN"),
        objective: None,
        size: Size::MinClusterSize,
        sample_weight: false,
        select_k: false,
        device: None,
        distributed: false,
        model: Some(ModelFile {
            tag: <HdbscanPredictor as SaveLoad>::ALGORITHM,
            load: load::<HdbscanPredictor>,
        }),
        fit: Some(|x, m| boxed(Hdbscan::new(m.max(2)).fit(&x))),
        defaults: || {
            let e = Hdbscan::new(5);
            json!({"min_cluster_size": e.min_cluster_size, "min_samples": e.min_samples,
                   "cluster_selection_epsilon": e.cluster_selection_epsilon, "alpha": e.alpha})
        },
    },
    Method {
        name: "single-linkage",
        family: Family::Density,
        python: None,
        objective: None,
        size: Size::Clusters,
        sample_weight: false,
        select_k: false,
        device: None,
        distributed: false,
        model: None,
        fit: Some(|x, k| boxed(SingleLinkage::new(k).fit(&x))),
        defaults: || json!({"metric": "euclidean"}),
    },
    Method {
        name: "power-kmeans",
        family: Family::Kernel,
        python: Some("PowerKMeans"),
        objective: Some("objective"),
        size: Size::Clusters,
        sample_weight: true,
        select_k: true,
        device: Some("the iterations"),
        distributed: true,
        model: Some(ModelFile {
            tag: <PowerKMeansModel<f64> as SaveLoad>::ALGORITHM,
            load: load::<PowerKMeansModel<f64>>,
        }),
        fit: Some(|x, k| boxed(PowerKMeans::new(k).fit(&x))),
        defaults: || {
            let e = PowerKMeans::new(1);
            json!({"max_iter": e.schedule.max_iter, "tol": e.schedule.tol, "eta": e.schedule.eta, "n_init": e.n_init})
        },
    },
    Method {
        name: "kpkm",
        family: Family::Kernel,
        python: None,
        objective: Some("objective"),
        size: Size::Clusters,
        sample_weight: false,
        select_k: true,
        device: None,
        distributed: false,
        model: None,
        fit: Some(|x, k| boxed(Kpkm::new(k).fit(&x))),
        defaults: || {
            let e = Kpkm::new(1);
            json!({"max_iter": e.schedule.max_iter, "tol": e.schedule.tol})
        },
    },
    Method {
        name: "kernel-kmeans",
        family: Family::Kernel,
        python: None,
        objective: Some("objective"),
        size: Size::Clusters,
        sample_weight: false,
        select_k: true,
        device: None,
        distributed: false,
        model: None,
        fit: Some(|x, k| boxed(KernelKMeans::new(k).fit(&x))),
        defaults: || {
            let e = KernelKMeans::new(1);
            json!({"max_iter": e.max_iter, "n_init": e.n_init})
        },
    },
    Method {
        name: "rff-kpkm",
        family: Family::Kernel,
        python: Some("RffKpkm"),
        objective: Some("objective"),
        size: Size::Clusters,
        sample_weight: true,
        select_k: true,
        device: Some("the feature map and the iterations"),
        distributed: true,
        model: Some(ModelFile {
            tag: <RffKpkmModel<f64> as SaveLoad>::ALGORITHM,
            load: load::<RffKpkmModel<f64>>,
        }),
        fit: Some(|x, k| boxed(RffKpkm::new(k).n_features(50).fit(&x))),
        defaults: || {
            let e = RffKpkm::new(1);
            json!({"n_components": e.n_features, "max_iter": e.schedule.max_iter, "tol": e.schedule.tol})
        },
    },
    Method {
        name: "ip-rff-mkpkm",
        family: Family::Kernel,
        python: Some("IpRffMkpkm"),
        objective: Some("objective"),
        size: Size::Clusters,
        sample_weight: false,
        select_k: true,
        device: None,
        distributed: false,
        model: Some(ModelFile {
            tag: <IpRffMkpkmModel<f64> as SaveLoad>::ALGORITHM,
            load: load::<IpRffMkpkmModel<f64>>,
        }),
        fit: Some(|x, k| boxed(IpRffMkpkm::new(k).n_features(50).fit(&x))),
        defaults: || {
            let e = IpRffMkpkm::new(1);
            json!({"n_components": e.n_features, "max_iter": e.schedule.max_iter, "n_init": e.n_init})
        },
    },
    Method {
        name: "magmaclust",
        family: Family::Gp,
        python: None,
        objective: Some("negative ELBO"),
        size: Size::Clusters,
        sample_weight: false,
        select_k: false,
        device: None,
        distributed: false,
        model: None,
        fit: None,
        defaults: || json!({}),
    },
    Method {
        name: "gmm",
        family: Family::Mixture,
        python: Some("GaussianMixture"),
        objective: Some("mean log-likelihood"),
        size: Size::Clusters,
        sample_weight: true,
        select_k: true,
        device: None,
        distributed: false,
        model: Some(ModelFile {
            tag: <GaussianMixtureModel as SaveLoad>::ALGORITHM,
            load: load::<GaussianMixtureModel>,
        }),
        fit: Some(|x, k| boxed(GaussianMixture::new(k).fit(&x))),
        defaults: || {
            let e = GaussianMixture::new(1);
            json!({"covariance_type": "full", "tol": e.tol, "reg_covar": e.reg_covar,
                   "max_iter": e.max_iter, "n_init": e.n_init})
        },
    },
    Method {
        name: "ppp",
        family: Family::Mixture,
        python: None,
        objective: Some("inertia"),
        size: Size::Clusters,
        sample_weight: false,
        select_k: false,
        device: None,
        distributed: false,
        model: Some(ModelFile {
            tag: <GaussianMixtureModel as SaveLoad>::ALGORITHM,
            load: load::<GaussianMixtureModel>,
        }),
        fit: Some(|x, k| boxed(Ppp::new(1, k).n_runs(2).fit(&x))),
        defaults: || json!({}),
    },
    kmedoids("pam", None, false, |x, k| boxed(KMedoids::pam(k).fit(&x))),
    kmedoids("fastpam1", Some("the candidate scans"), false, |x, k| {
        boxed(KMedoids::fastpam1(k).fit(&x))
    }),
    kmedoids("fastpam2", Some("the candidate scans"), false, |x, k| {
        boxed(KMedoids::fastpam2(k).fit(&x))
    }),
    kmedoids("fasterpam", Some("the candidate scans"), false, |x, k| {
        boxed(KMedoids::fasterpam(k).fit(&x))
    }),
    kmedoids("alternating", None, false, |x, k| {
        boxed(KMedoids::alternating(k).fit(&x))
    }),
    kmedoids("clara", Some("the assignment of every point"), true, |x, k| {
        boxed(Clara::new(k).fit(&x))
    }),
    kmedoids(
        "fastclara",
        Some("the assignment of every point"),
        true,
        |x, k| boxed(Clara::fastclara(k).fit(&x)),
    ),
    kmedoids(
        "fasterclara",
        Some("the assignment of every point"),
        true,
        |x, k| boxed(Clara::fasterclara(k).fit(&x)),
    ),
    kmedoids("clarans", None, false, |x, k| boxed(Clarans::new(k).fit(&x))),
    kmedoids("fastclarans", None, false, |x, k| {
        boxed(Clarans::fastclarans(k).fit(&x))
    }),
];

/// A k-medoids method: all run through Python's `KMedoids(method=name)` and write one model
/// file; the CLARA methods also run distributed.
const fn kmedoids(name: &'static str, device: Option<&'static str>, clara: bool, fit: FitPoints) -> Method {
    Method {
        name,
        family: Family::KMedoids,
        python: Some("KMedoids"),
        objective: Some("loss (sum of distances to the medoids)"),
        size: Size::Clusters,
        sample_weight: true,
        select_k: true,
        device,
        distributed: clara,
        model: Some(ModelFile {
            tag: <MedoidPredictor<f64, MetricKind> as SaveLoad>::ALGORITHM,
            load: load::<MedoidPredictor<f64, MetricKind>>,
        }),
        fit: Some(fit),
        defaults: || {
            let e = KMedoids::fasterpam(1);
            json!({"max_iter": e.max_iter, "metric": "euclidean"})
        },
    }
}

fn boxed<M: Clustering + 'static>(model: Result<M>) -> Result<Box<dyn Clustering>> {
    Ok(Box::new(model?))
}

/// The method called `name`.
pub fn method(name: &str) -> Option<&'static Method> {
    METHODS.iter().find(|m| m.name == name)
}

/// The loader of a model file's tag (its `algorithm`).
pub fn model_file(tag: &str) -> Option<ModelFile> {
    METHODS.iter().filter_map(|m| m.model).find(|f| f.tag == tag)
}
