//! Gaussian processes for functional data: covariance functions (kernels) with analytic gradients ([`covariance`]), an
//! L-BFGS minimiser ([`lbfgs`]), single-task GP regression ([`regression`]), tasks on a union
//! grid ([`data`]), the paper's simulation scenarios ([`simulate`]), MagmaClust itself
//! (Leroy, Latouche, Guedj & Gey, JMLR 2023; [`magmaclust`]; Magma is K = 1) and its model
//! files ([`io`]).

pub mod covariance;
pub mod data;
pub mod io;
pub mod lbfgs;
pub mod magmaclust;
pub mod regression;
pub mod simulate;

pub use covariance::Covariance;
pub use data::{Task, Tasks};
pub use io::{load_model, save_model};
pub use lbfgs::{minimize, Lbfgs, Minimum};
pub use magmaclust::{
    select_nb_cluster, ClusterSelection, HyperPosterior, MagmaClust, MagmaClustModel, MagmaPrediction,
};
pub use regression::{GpModel, GpRegression};
pub use simulate::{Scenario, Simulated, Simulator};
