//! Gaussian mixtures ([`gmm`]) and PPP ([`ppp`]), which validates k-means partitions with a
//! Gaussian mixture to choose k.

pub mod gmm;
pub mod ppp;

pub use gmm::{CovarianceType, Covariances, GaussianMixture, GaussianMixtureModel, GmmInit, Mixture};
pub use ppp::{Ppp, PppModel, PppRow};
