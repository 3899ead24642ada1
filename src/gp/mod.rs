//! Gaussian processes for functional data: kernels with analytic gradients ([`kernel`]), an
//! L-BFGS minimiser ([`lbfgs`]) and single-task GP regression ([`regression`]), the
//! foundations of MagmaClust (Leroy, Latouche, Guedj & Gey, JMLR 2023; issue #7, in progress).

pub mod kernel;
pub mod lbfgs;
pub mod regression;

pub use kernel::Kernel;
pub use lbfgs::{minimize, Lbfgs, Minimum};
pub use regression::{GpModel, GpRegression};
