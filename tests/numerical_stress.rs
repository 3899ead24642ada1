//! Numerical stress (issues #9 and #18): the same three blobs scaled over the whole finite
//! range, from subnormal (1e-320) to near f64::MAX, with near-duplicate points and clusters of
//! very different sizes. Every algorithm either returns a result with valid labels and a
//! finite loss, or a one-line `OutOfRange` error naming the column — never a NaN in a label
//! or a loss, never a panic. Scale-free methods give the same partition at every scale their
//! arithmetic takes (1e-150 to 1e150 at least), and refuse the others.

use clustr::density::Dbscan;
use clustr::kernel::PowerKMeans;
use clustr::kmeans::KMeans;
use clustr::kmedoids::KMedoids;
use clustr::mixture::GaussianMixture;
use clustr::{Clustering, CpuBackend, DenseMatrix, Fit, MetricKind};
use ndarray::Array2;

/// 3 blobs of 400, 40 and 4 points in 3-d, plus near-duplicates of the first point.
fn blobs() -> Array2<f64> {
    let centres = [[0.0, 0.0, 0.0], [10.0, 0.0, 5.0], [0.0, 12.0, -6.0]];
    let sizes = [400, 40, 4];
    let mut rows = Vec::new();
    let mut s: u64 = 7;
    let mut next = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    for (c, &n) in centres.iter().zip(&sizes) {
        for _ in 0..n {
            rows.extend(c.iter().map(|v| v + next()));
        }
    }
    for i in 0..5 {
        rows.extend([rows[0] * (1.0 + i as f64 * 1e-15), rows[1], rows[2]]);
    }
    Array2::from_shape_vec((rows.len() / 3, 3), rows).unwrap()
}

fn check(
    name: &str,
    scale: f64,
    model: Result<&dyn Clustering, &clustr::Error>,
    k: usize,
) -> Option<Vec<i64>> {
    match model {
        Ok(m) => {
            let labels = m.labels();
            assert!(
                labels
                    .iter()
                    .all(|&l| l >= -1 && (l as i128) < k.max(m.n_clusters()) as i128),
                "{name} at {scale:e}: label out of range"
            );
            if let Some(loss) = m.loss() {
                assert!(loss.is_finite(), "{name} at {scale:e}: loss {loss}");
            }
            Some(labels.to_vec())
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(
                !msg.is_empty() && !msg.contains('\n'),
                "{name} at {scale:e}: {msg:?}"
            );
            assert!(
                matches!(e, clustr::Error::OutOfRange(_)),
                "{name} at {scale:e}: {msg}"
            );
            None
        }
    }
}

#[test]
fn huge_and_tiny_magnitudes() {
    let base = blobs();
    let mut reference: std::collections::HashMap<&str, Vec<i64>> = Default::default();
    for scale in [
        1e-320,
        1e-300,
        1e-150,
        1e-20,
        1.0,
        1e20,
        1e150,
        1e200,
        1e300,
        f64::MAX / 20.0,
    ] {
        // Within 1e±150 every algorithm must succeed; beyond, refusing is allowed.
        let must = (1e-150..=1e150).contains(&scale);
        let x = &base * scale;
        let v = x.view();
        let km = KMeans::new(3).seed(1).fit(&v);
        let km_labels = check("k-means", scale, km.as_ref().map(|m| m as &dyn Clustering), 3);
        let gmm = GaussianMixture::new(3).seed(1).fit(&v);
        check("GMM", scale, gmm.as_ref().map(|m| m as &dyn Clustering), 3);
        let pk = PowerKMeans::new(3).seed(1).fit(&v);
        check(
            "power k-means",
            scale,
            pk.as_ref().map(|m| m as &dyn Clustering),
            3,
        );
        let db = Dbscan {
            min_samples: 3.0,
            ..Dbscan::new(1.5 * scale)
        }
        .fit(&v);
        let db_labels = check("DBSCAN", scale, db.as_ref().map(|m| m as &dyn Clustering), 3);
        let pam = DenseMatrix::from_points(v, &MetricKind::Euclidean, &CpuBackend::default())
            .and_then(|d| KMedoids::fasterpam(3).seed(1).fit(&d));
        let pam_labels = check("FasterPAM", scale, pam.as_ref().map(|m| m as &dyn Clustering), 3);
        for (name, labels) in [
            ("k-means", km_labels),
            ("DBSCAN", db_labels),
            ("FasterPAM", pam_labels),
        ] {
            let Some(labels) = labels else {
                assert!(!must, "{name} failed at scale {scale:e}");
                continue;
            };
            let first = reference.entry(name).or_insert_with(|| labels.clone());
            assert_eq!(*first, labels, "{name}: the partition changes at scale {scale:e}");
        }
    }
}
