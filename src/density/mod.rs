//! Density-based clustering: DBSCAN ([`dbscan`]), OPTICS ([`optics`]), HDBSCAN and single
//! linkage ([`hdbscan`], [`linkage`]) over spatial indexes ([`index`]): k-d tree, ball tree (haversine and
//! cosine included) and brute force.
//!
//! For geographic data use [`MetricKind::Haversine`](crate::MetricKind::Haversine): rows are
//! (latitude, longitude) in degrees and every radius (`eps`, `max_eps`) is in kilometres.

pub mod dbscan;
pub mod hdbscan;
pub mod hierarchy;
pub mod index;
pub mod linkage;
pub(crate) mod mst;
pub mod optics;
pub mod prediction;
mod sparse_hoods;

/// What to use instead when a density method's index does not fit (see [`crate::memory`]).
pub use dbscan::{CorePointPredictor, Dbscan, DbscanModel};
pub use hdbscan::{Hdbscan, HdbscanModel};
pub use hierarchy::{ClusterSelection, CondensedRow, Merge};
pub use index::{IndexKind, NeighborIndex};
pub use linkage::{SingleLinkage, SingleLinkageModel};
pub use mst::Edge;
pub use optics::{Extraction, Optics, OpticsModel};
pub use prediction::{ApproximatePrediction, HdbscanPredictor};
