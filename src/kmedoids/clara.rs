//! CLARA (Kaufman & Rousseeuw 1990) and FastCLARA / FasterCLARA (Schubert & Rousseeuw 2019,
//! 2021): k-medoids on random samples, each sample's medoids scored on all n points; the best
//! medoids so far are kept in the next sample. Memory O(s² + n) for a sample of size s, so
//! with on-the-fly dissimilarities n can far exceed what an n×n matrix allows.
//!
//! Defaults as ELKI: 5 samples of 40 + 2k (CLARA, inner PAM) or 80 + 4k (FastCLARA with
//! FastPAM2, FasterCLARA with FasterPAM) points, BUILD on each sample.

use super::swap::LossOf;
use super::{total_deviation, Init, KMedoids, KMedoidsModel, KValue};
use crate::data::validate::check_k;
use crate::dissim::{DenseMatrix, Dissimilarity};
use crate::error::{Error, Result};
use crate::estimator::{Fit, Progress, ProgressFn};
use crate::memory::{check_fit, product, MemoryEstimate};
use ndarray::Array2;
use num_traits::{ToPrimitive, Zero};
use rand::rngs::StdRng;
use rand::SeedableRng;

/// Which CLARA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaraVariant {
    /// PAM on samples of 40 + 2k.
    Clara,
    /// FastPAM2 on samples of 80 + 4k.
    FastClara,
    /// FasterPAM on samples of 80 + 4k.
    FasterClara,
}

/// Parameters of a CLARA run.
#[derive(Clone, Debug)]
pub struct Clara {
    /// Number of medoids.
    pub k: usize,
    /// Which CLARA.
    pub variant: ClaraVariant,
    /// Number of samples (default 5).
    pub samples: usize,
    /// Sample size; `None` = 40 + 2k (CLARA) or 80 + 4k (Fast/Faster).
    pub sample_size: Option<usize>,
    /// Draw every sample independently instead of keeping the best medoids (default false).
    pub independent: bool,
    /// Maximum passes of the inner algorithm (default 100).
    pub max_iter: usize,
    /// Seed.
    pub seed: u64,
    /// Progress callback (after each sample).
    pub progress: Option<ProgressFn>,
}

impl Clara {
    fn with(k: usize, variant: ClaraVariant) -> Self {
        Clara {
            k,
            variant,
            samples: 5,
            sample_size: None,
            independent: false,
            max_iter: 100,
            seed: 0,
            progress: None,
        }
    }
    /// CLARA.
    pub fn new(k: usize) -> Self {
        Self::with(k, ClaraVariant::Clara)
    }
    /// FastCLARA.
    pub fn fastclara(k: usize) -> Self {
        Self::with(k, ClaraVariant::FastClara)
    }
    /// FasterCLARA.
    pub fn fasterclara(k: usize) -> Self {
        Self::with(k, ClaraVariant::FasterClara)
    }
    /// Number of samples.
    pub fn samples(mut self, s: usize) -> Self {
        self.samples = s;
        self
    }
    /// Sample size.
    pub fn sample_size(mut self, s: usize) -> Self {
        self.sample_size = Some(s);
        self
    }
    /// Independent samples.
    pub fn independent(mut self, b: bool) -> Self {
        self.independent = b;
        self
    }
    /// Inner maximum passes.
    pub fn max_iter(mut self, m: usize) -> Self {
        self.max_iter = m;
        self
    }
    /// Seed.
    pub fn seed(mut self, s: u64) -> Self {
        self.seed = s;
        self
    }
    /// Progress callback.
    pub fn progress(mut self, p: ProgressFn) -> Self {
        self.progress = Some(p);
        self
    }
    /// Name as on the command line.
    pub fn name(&self) -> &'static str {
        match self.variant {
            ClaraVariant::Clara => "clara",
            ClaraVariant::FastClara => "fastclara",
            ClaraVariant::FasterClara => "fasterclara",
        }
    }
    /// The sample size used for `n` points.
    pub fn effective_sample_size(&self, n: usize) -> usize {
        let default = match self.variant {
            ClaraVariant::Clara => 40 + 2 * self.k,
            _ => 80 + 4 * self.k,
        };
        self.sample_size.unwrap_or(default).min(n)
    }

    fn inner(&self) -> KMedoids {
        let m = match self.variant {
            ClaraVariant::Clara => KMedoids::pam(self.k),
            ClaraVariant::FastClara => KMedoids::fastpam2(self.k),
            ClaraVariant::FasterClara => KMedoids::fasterpam(self.k),
        };
        m.init(Init::Build).max_iter(self.max_iter)
    }
}

impl MemoryEstimate for Clara {
    /// The sample's dissimilarity matrix and its k-medoids caches, plus the labels of the
    /// best and the current sample on all n objects.
    fn memory_estimate(&self, n: usize, d: usize, elem: usize) -> u64 {
        let s = self.effective_sample_size(n);
        product(&[s, s, elem])
            .saturating_add(self.inner().memory_estimate(s, d, elem))
            .saturating_add(product(&[n, 24]))
    }
}

impl<D> Fit<D> for Clara
where
    D: Dissimilarity,
    D::Value: KValue,
{
    type Model = KMedoidsModel<<D::Value as KValue>::Loss>;

    fn fit(&self, d: &D) -> Result<Self::Model> {
        let n = d.len();
        if n == 0 {
            return Err(Error::EmptyInput {
                what: "dissimilarity has 0 objects".into(),
            });
        }
        check_k(self.k, n)?;
        if self.samples == 0 {
            return Err(Error::param("samples", 0, "at least one sample"));
        }
        let s = self.effective_sample_size(n);
        if s < self.k {
            return Err(Error::param(
                "sample_size",
                s,
                format!("must be at least k = {}", self.k),
            ));
        }
        check_fit(
            self,
            self.name(),
            n,
            0,
            size_of::<D::Value>(),
            "use a smaller --sample-size",
        )?;
        let mut rng = StdRng::seed_from_u64(self.seed);
        // (full-data loss, medoids, labels) of the best sample so far.
        let mut best: Option<(LossOf<D>, Vec<usize>, Vec<usize>)> = None;
        let mut total_swaps = 0;
        for t in 0..self.samples {
            // The sample: the best medoids so far (unless independent), then random others.
            let mut sample: Vec<usize> = match (&best, self.independent) {
                (Some((_, m, ..)), false) => m.clone(),
                _ => Vec::new(),
            };
            if s >= n {
                sample = (0..n).collect();
            } else {
                // s distinct draws hold at most k of the kept medoids: enough others remain.
                let kept = sample.clone();
                let others = rand::seq::index::sample(&mut rng, n, s)
                    .into_iter()
                    .filter(|i| !kept.contains(i));
                sample.extend(others.take(s - kept.len()));
                sample.sort_unstable();
            }
            let m = Array2::from_shape_fn((s, s), |(a, b)| {
                if a == b {
                    D::Value::zero()
                } else {
                    d.get(sample[a], sample[b])
                }
            });
            let sub = DenseMatrix::new(m)?;
            let model = match self.inner().seed(self.seed.wrapping_add(t as u64)).fit(&sub) {
                Ok(m) => m,
                // A sample with fewer than k distinct objects (duplicated points) is skipped:
                // the data may still have k; the whole data is checked by the inner method.
                Err(Error::InvalidParameter { name: "k", .. }) if s < n => continue,
                Err(e) => return Err(e),
            };
            total_swaps += model.n_swaps;
            let medoids: Vec<usize> = model.medoids.iter().map(|&i| sample[i]).collect();
            let (loss, labels) = total_deviation(d, &medoids);
            if let Some(p) = &self.progress {
                p.report(&Progress {
                    iteration: t + 1,
                    max_iter: Some(self.samples),
                    objective: loss.to_f64(),
                });
            }
            if best.as_ref().is_none_or(|b| loss < b.0) {
                best = Some((loss, medoids, labels));
            }
            if s >= n {
                break; // every sample would be the whole data
            }
        }
        let Some((loss, medoids, labels)) = best else {
            return Err(Error::param(
                "sample_size",
                s,
                format!(
                    "each of the {} samples had fewer than k = {} distinct objects; use a larger sample",
                    self.samples, self.k
                ),
            ));
        };
        Ok(KMedoidsModel {
            initial_medoids: medoids.clone(),
            medoids,
            labels: labels.into_iter().map(|l| l as i64).collect(),
            loss,
            n_iter: self.samples,
            n_swaps: total_swaps,
            converged: true,
        })
    }
}
