//! Model files: every model that assigns new points is saved and loaded back with the same
//! parameters (bit for bit) and the same predictions; large arrays are stored as base64 and
//! stay exact; files of another format version, another algorithm or no model at all are
//! refused with a message naming the problem.

use clustr::density::{CorePointPredictor, Dbscan};
use clustr::kernel::{IpRffMkpkm, PowerKMeans, RffKpkm};
use clustr::kmeans::{KMeans, MiniBatchKMeans};
use clustr::kmedoids::KMedoids;
use clustr::metric::MetricKind;
use clustr::mixture::{CovarianceType, GaussianMixture, GaussianMixtureModel};
use clustr::model_file::{algorithm_of, SaveLoad, StoredArray, INLINE_MAX};
use clustr::{Fit, Predict};
use ndarray::Array2;
use std::path::Path;

fn blobs(n: usize, d: usize, seed: u64) -> Array2<f64> {
    clustr::datasets::Blobs::new(n, 4)
        .n_features(d)
        .cluster_std(1.2)
        .seed(seed)
        .generate()
        .unwrap()
        .data
}

/// Saves `m` to a fresh file and loads it back.
fn round_trip<M: SaveLoad>(m: &M, dir: &Path, name: &str) -> M {
    let path = dir.join(name);
    m.save(&path).unwrap();
    assert_eq!(algorithm_of(&path).unwrap(), M::ALGORITHM);
    M::load(&path).unwrap()
}

#[test]
fn every_model_predicts_the_same_after_loading() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = blobs(3000, 5, 1);
    let new = blobs(500, 5, 2);
    let (xv, nv) = (x.view(), new.view());

    let km = KMeans::new(6).seed(1).fit(&xv).unwrap();
    let back = round_trip(&km, d, "kmeans.json");
    assert_eq!(back.centers, km.centers);
    assert_eq!((back.inertia, back.n_iter), (km.inertia, km.n_iter));
    assert_eq!(back.predict(&nv).unwrap(), km.predict(&nv).unwrap());
    assert_eq!(back.transform(nv).unwrap(), km.transform(nv).unwrap());

    let x32 = x.mapv(|v| v as f32);
    let km32 = KMeans::new(6).seed(1).fit(&x32.view()).unwrap();
    let back32 = round_trip(&km32, d, "kmeans32.json");
    assert_eq!(back32.centers, km32.centers);
    let new32 = new.mapv(|v| v as f32);
    assert_eq!(
        back32.predict(&new32.view()).unwrap(),
        km32.predict(&new32.view()).unwrap()
    );

    let mb = MiniBatchKMeans::new(6).batch_size(256).seed(1).fit(&xv).unwrap();
    let mut mb_back = round_trip(&mb, d, "minibatch.json");
    assert_eq!(mb_back.centers, mb.centers);
    assert_eq!(mb_back.counts, mb.counts);
    assert_eq!(mb_back.predict(&nv).unwrap(), mb.predict(&nv).unwrap());
    // A loaded model continues with partial_fit from its centres and counts.
    mb_back.partial_fit(nv).unwrap();
    assert!(mb_back.counts.iter().sum::<f64>() > mb.counts.iter().sum::<f64>());

    for cov in [
        CovarianceType::Full,
        CovarianceType::Tied,
        CovarianceType::Diag,
        CovarianceType::Spherical,
    ] {
        let g = GaussianMixture::new(4)
            .covariance_type(cov)
            .seed(1)
            .fit(&xv)
            .unwrap();
        let back: GaussianMixtureModel = round_trip(&g, d, "gmm.json");
        assert_eq!(back.mixture, g.mixture, "{cov:?}");
        assert_eq!(back.predict_proba(nv).unwrap(), g.predict_proba(nv).unwrap());
        assert_eq!(back.predict(&nv).unwrap(), g.predict(&nv).unwrap());
    }

    let pk = PowerKMeans::new(4).seed(1).fit(&xv).unwrap();
    let back = round_trip(&pk, d, "power.json");
    assert_eq!(back.centers, pk.centers);
    assert_eq!(back.predict(nv).unwrap(), pk.predict(nv).unwrap());
    // Power k-means ends at a hard fixed point: its labels are the nearest centroids.
    assert_eq!(pk.predict(xv).unwrap(), pk.fit.labels);

    let rff = RffKpkm::new(4).n_features(200).seed(1).fit(&xv).unwrap();
    let back = round_trip(&rff, d, "rff.json");
    assert_eq!(back.features, rff.features);
    assert_eq!(back.predict(nv).unwrap(), rff.predict(nv).unwrap());

    let ip = IpRffMkpkm::new(4).n_features(100).seed(1).fit(&xv).unwrap();
    let back = round_trip(&ip, d, "ip.json");
    assert_eq!(back.features, ip.features);
    assert_eq!(back.centers, ip.centers);
    assert_eq!(back.predict(nv).unwrap(), ip.predict(nv).unwrap());
    // Its predictions on the training points are its labels.
    let same = ip
        .predict(xv)
        .unwrap()
        .iter()
        .zip(&ip.labels)
        .filter(|(a, b)| a == b)
        .count();
    assert!(same >= x.nrows() - 2, "{same} of {}", x.nrows());

    for metric in [MetricKind::Euclidean, MetricKind::Manhattan, MetricKind::Cosine] {
        let km = KMedoids::fasterpam(4).seed(1).fit_points(xv, &metric).unwrap();
        let p = km.predictor(xv, &metric).unwrap();
        let back = round_trip(&p, d, "kmedoids.json");
        assert_eq!(back.medoids, p.medoids);
        assert_eq!(back.metric, metric);
        assert_eq!(back.predict(&xv).unwrap(), km.labels, "{metric}");
        assert_eq!(back.predict(&nv).unwrap(), p.predict(&nv).unwrap());
        assert_eq!(back.transform(nv).unwrap(), p.transform(nv).unwrap());
    }
}

#[test]
fn dbscan_assigns_new_points_to_the_nearest_core_within_eps() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs(4000, 2, 3);
    let params = Dbscan::new(0.4).min_samples(8);
    let m = params.fit(&x.view()).unwrap();
    let p = m.predictor(x.view(), &params).unwrap();
    // Thousands of core points: stored as base64, exactly.
    assert!(p.core_points.len() > INLINE_MAX);
    let back: CorePointPredictor = round_trip(&p, dir.path(), "dbscan.json");
    assert_eq!(back, p);
    // On the training points: core points keep their cluster and noise stays noise.
    let again = back.predict(&x.view()).unwrap();
    let is_core: std::collections::HashSet<usize> = m.core_sample_indices.iter().copied().collect();
    for (i, (&l, &a)) in m.labels.iter().zip(&again).enumerate() {
        if is_core.contains(&i) || l == -1 {
            assert_eq!(a, l, "point {i}");
        }
    }
    // New points against a brute-force oracle of the rule.
    let new = blobs(300, 2, 4);
    let labels = back.predict(&new.view()).unwrap();
    for (q, &l) in new.rows().into_iter().zip(&labels) {
        let (best, dist) = p
            .core_points
            .rows()
            .into_iter()
            .enumerate()
            .map(|(j, c)| (j, ((q[0] - c[0]).powi(2) + (q[1] - c[1]).powi(2)).sqrt()))
            .fold((0, f64::INFINITY), |b, c| if c.1 < b.1 { c } else { b });
        let expected = if dist <= 0.4 { p.core_labels[best] } else { -1 };
        assert_eq!(l, expected);
    }
    // Haversine: eps in km.
    let geo = ndarray::array![[48.85, 2.35], [48.86, 2.36], [48.85, 2.36], [40.71, -74.0]];
    let params = Dbscan::new(5.0).min_samples(2).metric(MetricKind::Haversine);
    let m = params.fit(&geo.view()).unwrap();
    let p = m.predictor(geo.view(), &params).unwrap();
    let back = round_trip(&p, dir.path(), "geo.json");
    let q = ndarray::array![[48.84, 2.34], [51.5, -0.12]];
    assert_eq!(back.predict(&q.view()).unwrap(), vec![0, -1]);
}

#[test]
fn arrays_round_trip_exactly_in_both_encodings() {
    for n in [3, INLINE_MAX + 1] {
        let a = Array2::from_shape_fn((n, 1), |(i, _)| {
            (i as f64 + 0.1).ln() * 1e-300 + f64::EPSILON * i as f64
        });
        let s = StoredArray::from_array(&a);
        assert_eq!(s.base64.is_some(), n > INLINE_MAX);
        let json = serde_json::to_string(&s).unwrap();
        let back: StoredArray = serde_json::from_str(&json).unwrap();
        assert_eq!(back.to_matrix::<f64>("a").unwrap(), a);
        let a32 = a.mapv(|v| (v * 1e300).min(3e38) as f32);
        let back = StoredArray::from_array(&a32).to_matrix::<f32>("a").unwrap();
        assert_eq!(back, a32);
        let ints: Vec<i64> = (0..n as i64).map(|i| i * 7 - 3).collect();
        assert_eq!(StoredArray::from_ints(&ints).to_ints("i").unwrap(), ints);
        // A model's arrays are finite, and a float32 one within its range.
        let e = StoredArray::from_array(&a.mapv(|v| v / 0.0)).to_matrix::<f64>("a");
        assert!(e.unwrap_err().to_string().contains("not a finite number"));
        let e = StoredArray::from_array(&a.mapv(|_| 1e39)).to_matrix::<f32>("a");
        assert!(e.unwrap_err().to_string().contains("beyond float32's range"));
    }
}

#[test]
fn foreign_and_damaged_files_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = blobs(200, 3, 5);
    let km = KMeans::new(3).fit(&x.view()).unwrap();
    let path = d.join("m.json");
    km.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let err = |p: &Path| {
        <clustr::kmeans::KMeansModel<f64>>::load(p)
            .unwrap_err()
            .to_string()
    };
    // A later major format version.
    let v2 = d.join("v2.json");
    std::fs::write(&v2, text.replace("\"format_version\":1", "\"format_version\":2")).unwrap();
    let e = err(&v2);
    assert!(e.contains("version 2") && e.contains("reads version 1"), "{e}");
    // Fields added by a later minor change are ignored.
    let extra = d.join("extra.json");
    std::fs::write(&extra, text.replacen('{', "{\"added_later\":[1,2],", 1)).unwrap();
    assert_eq!(
        <clustr::kmeans::KMeansModel<f64>>::load(&extra).unwrap().centers,
        km.centers
    );
    // Another algorithm.
    let e = GaussianMixtureModel::load(&path).unwrap_err().to_string();
    assert!(e.contains("a kmeans model, not gmm"), "{e}");
    // Not a model file; truncated; a shape its data do not fill; non-finite centres.
    for (name, content, needle) in [
        ("plain.json", "[1, 2, 3]".to_string(), "not a clustr model file"),
        (
            "trunc.json",
            text[..text.len() / 2].to_string(),
            "not a clustr model file",
        ),
        (
            "shape.json",
            text.replacen("\"shape\":[3,3]", "\"shape\":[4,3]", 1),
            "do not fill",
        ),
    ] {
        let p = d.join(name);
        std::fs::write(&p, content).unwrap();
        let e = err(&p);
        assert!(e.contains(needle), "{name}: {e}");
    }
    assert!(err(&d.join("missing.json")).contains("missing.json"));
}
