//! Kernel power k-means at scale: random Fourier features ([`rff`]), power k-means
//! ([`power`]), exact KPKM, kernel k-means and RFF-KPKM ([`kpkm`]), and the multiple-kernel,
//! possibilistic IP-RFF-MKPKM ([`mkpkm`]).
//!
//! Which formulas are whose: power k-means (Xu & Lange 2019), KPKM (Paul et al. 2020), random
//! Fourier features (Rahimi & Recht 2007), PCM/IPCM memberships (Krishnapuram & Keller 1993;
//! Zhang & Leung 2004) and the MKKM kernel-weight update are the published ones. RFF-KPKM and
//! IP-RFF-MKPKM (Chen, Liang, Liu et al., AAAI 2026) could be read only in their abstract:
//! their assembly here is our reconstruction (docs/reference-notes.md §2.1, §2.3), marked
//! as such in each module.

pub mod kpkm;
pub mod mkpkm;
pub mod power;
pub mod rff;

pub use kpkm::{Kernel, KernelKMeans, KernelModel, Kpkm, RffKpkm, RffKpkmModel};
pub use mkpkm::{IpRffMkpkm, IpRffMkpkmModel};
pub use power::{
    PowerFit, PowerInit, PowerKMeans, PowerKMeansModel, Schedule, DEFAULT_N_INIT, POWER_KMEANS_S0,
};
pub use rff::{Bandwidth, RandomFourierFeatures};
