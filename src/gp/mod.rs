//! Gaussian processes for functional data: kernels with analytic gradients ([`kernel`]), an
//! L-BFGS minimiser ([`lbfgs`]), single-task GP regression ([`regression`]), tasks on a union
//! grid ([`data`]) and the paper's simulation scenarios ([`simulate`]): the
//! foundations of MagmaClust (Leroy, Latouche, Guedj & Gey, JMLR 2023; issue #7, in progress).

pub mod data;
pub mod kernel;
pub mod lbfgs;
pub mod magmaclust;
pub mod regression;
pub mod simulate;

pub use data::{Task, Tasks};
pub use kernel::Kernel;
pub use lbfgs::{minimize, Lbfgs, Minimum};
pub use magmaclust::{
    select_nb_cluster, ClusterSelection, HyperPosterior, MagmaClust, MagmaClustModel, MagmaPrediction,
};
pub use regression::{GpModel, GpRegression};
pub use simulate::{Scenario, Simulated, Simulator};
