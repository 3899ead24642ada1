//! What a model file gives for new points: [`Assign`], implemented by every model that
//! `clustr predict` loads, and the loader each [`super::ModelFile`] names.

use crate::data::CsrView;
use crate::density::{CorePointPredictor, HdbscanPredictor};
use crate::error::Result;
use crate::estimator::Predict;
use crate::kernel::{IpRffMkpkmModel, PowerKMeansModel, RffKpkmModel};
use crate::kmeans::{BisectingKMeansModel, KMeansModel, MiniBatchKMeansModel};
use crate::kmedoids::MedoidPredictor;
use crate::metric::MetricKind;
use crate::mixture::GaussianMixtureModel;
use crate::model_file::SaveLoad;
use ndarray::{Array2, ArrayView2};
use std::path::Path;

/// What a loaded model gives for new points (f64 rows with the training data's columns).
pub trait Assign {
    /// The cluster of each point (−1: noise, for DBSCAN).
    fn predict(&self, x: ArrayView2<f64>) -> Result<Vec<i64>>;
    /// Each point's distance to each centre (n × k), where the model defines one.
    fn transform(&self, _x: ArrayView2<f64>) -> Option<Result<Array2<f64>>> {
        None
    }
    /// Each point's posterior probabilities (n × k), for mixtures.
    fn predict_proba(&self, _x: ArrayView2<f64>) -> Option<Result<Array2<f64>>> {
        None
    }
    /// Whether [`Assign::transform`] gives distances.
    fn gives_distances(&self) -> bool {
        true
    }
    /// Whether [`Assign::predict_proba`] gives probabilities.
    fn gives_proba(&self) -> bool {
        false
    }
    /// Whether the model assigns sparse rows as such ([`Assign::predict_sparse`],
    /// [`Assign::transform_sparse`]); the others take their dense form.
    fn takes_sparse(&self) -> bool {
        false
    }
    /// [`Assign::predict`] of sparse rows, where [`Assign::takes_sparse`].
    fn predict_sparse(&self, _x: CsrView<f64>) -> Result<Vec<i64>> {
        Err(crate::error::Error::Unsupported(
            "this model assigns dense rows".into(),
        ))
    }
    /// [`Assign::transform`] of sparse rows, where [`Assign::takes_sparse`].
    fn transform_sparse(&self, _x: CsrView<f64>) -> Option<Result<Array2<f64>>> {
        None
    }
}

pub(super) fn load<M: SaveLoad + Assign + 'static>(path: &Path) -> Result<Box<dyn Assign>> {
    Ok(Box::new(M::load(path)?))
}

fn wide<F: crate::scalar::Scalar>(a: Array2<F>) -> Array2<f64> {
    a.mapv(|v| v.to_f64_exact())
}

/// The k-means models, which assign dense and sparse rows alike.
macro_rules! assign_dense_and_sparse {
    ($($model:ident),*) => {$(
        impl Assign for $model<f64> {
            fn predict(&self, x: ArrayView2<f64>) -> Result<Vec<i64>> {
                Predict::predict(self, &x)
            }
            fn transform(&self, x: ArrayView2<f64>) -> Option<Result<Array2<f64>>> {
                Some($model::transform(self, x))
            }
            fn takes_sparse(&self) -> bool {
                true
            }
            fn predict_sparse(&self, x: CsrView<f64>) -> Result<Vec<i64>> {
                Predict::predict(self, &x)
            }
            fn transform_sparse(&self, x: CsrView<f64>) -> Option<Result<Array2<f64>>> {
                Some($model::transform_sparse(self, x))
            }
        }
    )*};
}

assign_dense_and_sparse!(KMeansModel, MiniBatchKMeansModel);

impl Assign for BisectingKMeansModel<f64> {
    fn predict(&self, x: ArrayView2<f64>) -> Result<Vec<i64>> {
        Predict::predict(self, &x)
    }
    fn transform(&self, x: ArrayView2<f64>) -> Option<Result<Array2<f64>>> {
        Some(BisectingKMeansModel::transform(self, x))
    }
}

impl Assign for PowerKMeansModel<f64> {
    fn predict(&self, x: ArrayView2<f64>) -> Result<Vec<i64>> {
        PowerKMeansModel::predict(self, x)
    }
    fn transform(&self, x: ArrayView2<f64>) -> Option<Result<Array2<f64>>> {
        Some(PowerKMeansModel::transform(self, x))
    }
}

impl Assign for GaussianMixtureModel {
    fn predict(&self, x: ArrayView2<f64>) -> Result<Vec<i64>> {
        Predict::predict(self, &x)
    }
    fn predict_proba(&self, x: ArrayView2<f64>) -> Option<Result<Array2<f64>>> {
        Some(GaussianMixtureModel::predict_proba(self, x))
    }
    fn gives_distances(&self) -> bool {
        false
    }
    fn gives_proba(&self) -> bool {
        true
    }
}

impl Assign for MedoidPredictor<f64, MetricKind> {
    fn predict(&self, x: ArrayView2<f64>) -> Result<Vec<i64>> {
        Predict::predict(self, &x)
    }
    fn transform(&self, x: ArrayView2<f64>) -> Option<Result<Array2<f64>>> {
        Some(MedoidPredictor::transform(self, x))
    }
}

impl Assign for CorePointPredictor {
    fn predict(&self, x: ArrayView2<f64>) -> Result<Vec<i64>> {
        Predict::predict(self, &x)
    }
    fn gives_distances(&self) -> bool {
        false
    }
}

/// New points as the `hdbscan` package's `approximate_predict`; their membership vectors
/// (soft clustering) as the probabilities.
impl Assign for HdbscanPredictor {
    fn predict(&self, x: ArrayView2<f64>) -> Result<Vec<i64>> {
        Ok(self.approximate_predict(x)?.labels)
    }
    fn predict_proba(&self, x: ArrayView2<f64>) -> Option<Result<Array2<f64>>> {
        Some(self.membership_vectors(x))
    }
    fn gives_distances(&self) -> bool {
        false
    }
    fn gives_proba(&self) -> bool {
        true
    }
}

impl Assign for RffKpkmModel<f64> {
    fn predict(&self, x: ArrayView2<f64>) -> Result<Vec<i64>> {
        RffKpkmModel::predict(self, x)
    }
    /// In feature space.
    fn transform(&self, x: ArrayView2<f64>) -> Option<Result<Array2<f64>>> {
        Some(
            self.features
                .transform(x)
                .and_then(|f| self.power.transform(f.view()))
                .map(wide),
        )
    }
}

impl Assign for IpRffMkpkmModel<f64> {
    fn predict(&self, x: ArrayView2<f64>) -> Result<Vec<i64>> {
        IpRffMkpkmModel::predict(self, x)
    }
    /// The combined kernel's squared distance.
    fn transform(&self, x: ArrayView2<f64>) -> Option<Result<Array2<f64>>> {
        Some(IpRffMkpkmModel::transform(self, x))
    }
}
