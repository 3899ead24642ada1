//! Data sets: the four classic ones shipped in `datasets/` (embedded in the library), and
//! seeded generators — Gaussian blobs, moons and circles (as scikit-learn's `make_*`, not
//! bit-identical: the random streams differ), uniform noise, and geographic hotspots (points
//! along road-like segments plus background noise in a latitude/longitude box, for the
//! road-accident study).

use crate::data::csv::{parse_csv, CsvOptions, LabelColumn};
use crate::error::{Error, Result};
use crate::metric::EARTH_RADIUS_KM;
use crate::rng::SeededRng;
use crate::NOISE;
use ndarray::Array2;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal, StandardNormal};
use std::path::Path;

/// A data set: points (rows) and their true labels.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// Name.
    pub name: String,
    /// Points, rows = samples.
    pub data: Array2<f64>,
    /// True class of each point (−1 = noise for generated noise points).
    pub target: Vec<i64>,
    /// Column names.
    pub feature_names: Vec<String>,
}

/// The shipped data sets.
pub const SHIPPED: [&str; 4] = ["iris", "wine", "breast_cancer", "digits"];
/// The generators (`clustr datasets export NAME` accepts these too).
pub const GENERATORS: [&str; 5] = ["blobs", "moons", "circles", "uniform", "geo_hotspots"];

/// Loads a shipped data set by name.
pub fn load(name: &str) -> Result<Dataset> {
    let text: &str = match name {
        "iris" => include_str!("../datasets/iris.csv"),
        "wine" => include_str!("../datasets/wine.csv"),
        "breast_cancer" => include_str!("../datasets/breast_cancer.csv"),
        "digits" => include_str!("../datasets/digits.csv"),
        _ => {
            return Err(Error::param(
                "dataset",
                name,
                format!(
                    "unknown; shipped: {}; generators: {}",
                    SHIPPED.join(", "),
                    GENERATORS.join(", ")
                ),
            ))
        }
    };
    let opts = CsvOptions {
        label_column: Some(LabelColumn::Name("target".into())),
        ..Default::default()
    };
    let t = parse_csv::<f64>(text.as_bytes(), Path::new(&format!("datasets/{name}.csv")), &opts)?;
    Ok(Dataset {
        name: name.into(),
        data: t.data,
        target: t.labels.unwrap_or_default(),
        feature_names: t.header.unwrap_or_default(),
    })
}

fn names(d: usize) -> Vec<String> {
    (0..d).map(|j| format!("x{j}")).collect()
}

fn shuffled(name: &str, data: Array2<f64>, target: Vec<i64>, rng: &mut SeededRng) -> Dataset {
    let mut order: Vec<usize> = (0..target.len()).collect();
    order.shuffle(rng);
    let d = data.ncols();
    Dataset {
        name: name.into(),
        data: data.select(ndarray::Axis(0), &order),
        target: order.iter().map(|&i| target[i]).collect(),
        feature_names: names(d),
    }
}

/// Refuses generated values that overflowed (a spread such as `cluster_std = 1e308`), naming
/// the parameter: a data set is always finite, as clustr's own readers require.
fn check_generated(data: &Array2<f64>, name: &'static str, v: f64) -> Result<()> {
    if data.iter().all(|x| x.is_finite()) {
        return Ok(());
    }
    Err(Error::param(
        name,
        format!("{v:e}"),
        "the generated values overflow float64; give a smaller value",
    ))
}

fn check_positive(name: &'static str, v: f64) -> Result<()> {
    if !(v.is_finite() && v >= 0.0) {
        return Err(Error::param(name, v, "must be finite and non-negative"));
    }
    Ok(())
}

/// Isotropic Gaussian blobs, as scikit-learn's `make_blobs`.
#[derive(Clone, Debug)]
pub struct Blobs {
    /// Points per cluster.
    pub sizes: Vec<usize>,
    /// Dimension (default 2).
    pub n_features: usize,
    /// Standard deviation per cluster (default 1.0 each).
    pub cluster_std: Vec<f64>,
    /// Given centres (k × d); drawn uniformly in `center_box` when `None`.
    pub centers: Option<Array2<f64>>,
    /// Box of the random centres (default (−10, 10) as scikit-learn).
    pub center_box: (f64, f64),
    /// Shuffle the rows (default true as scikit-learn).
    pub shuffle: bool,
    /// Seed.
    pub seed: u64,
    /// A k above n given to [`Blobs::new`], reported by [`Blobs::generate`] (the k sizes are
    /// not allocated).
    k_above_n: Option<(usize, usize)>,
}

impl Blobs {
    /// `n` points in `k` clusters of near-equal size (the first `n mod k` get one more).
    pub fn new(n: usize, k: usize) -> Self {
        let k_above_n = (k > n).then_some((k, n));
        let kept = if k > n { 0 } else { k };
        let sizes = (0..kept)
            .map(|i| n / k.max(1) + usize::from(i < n % k.max(1)))
            .collect();
        Blobs {
            k_above_n,
            sizes,
            n_features: 2,
            cluster_std: vec![1.0; kept],
            centers: None,
            center_box: (-10.0, 10.0),
            shuffle: true,
            seed: 0,
        }
    }
    /// Points per cluster (sets k).
    pub fn sizes(mut self, sizes: Vec<usize>) -> Self {
        self.cluster_std
            .resize(sizes.len(), *self.cluster_std.first().unwrap_or(&1.0));
        self.sizes = sizes;
        self.k_above_n = None;
        self
    }
    /// Dimension.
    pub fn n_features(mut self, d: usize) -> Self {
        self.n_features = d;
        self
    }
    /// One standard deviation for every cluster.
    pub fn cluster_std(mut self, s: f64) -> Self {
        self.cluster_std = vec![s; self.sizes.len()];
        self
    }
    /// One standard deviation per cluster.
    pub fn cluster_stds(mut self, s: Vec<f64>) -> Self {
        self.cluster_std = s;
        self
    }
    /// Given centres.
    pub fn centers(mut self, c: Array2<f64>) -> Self {
        self.n_features = c.ncols();
        self.centers = Some(c);
        self
    }
    /// Box of the random centres.
    pub fn center_box(mut self, lo: f64, hi: f64) -> Self {
        self.center_box = (lo, hi);
        self
    }
    /// Whether to shuffle rows.
    pub fn shuffle(mut self, s: bool) -> Self {
        self.shuffle = s;
        self
    }
    /// Seed.
    pub fn seed(mut self, s: u64) -> Self {
        self.seed = s;
        self
    }

    /// Draws the points.
    pub fn generate(&self) -> Result<Dataset> {
        if let Some((k, n)) = self.k_above_n {
            crate::data::validate::check_k(k, n)?;
        }
        let k = self.sizes.len();
        let n: usize = self.sizes.iter().sum();
        crate::data::validate::check_k(k, n)?;
        if self.n_features == 0 {
            return Err(Error::param("n_features", 0, "must be at least 1"));
        }
        check_memory(n, self.n_features)?;
        if self.cluster_std.len() != k {
            return Err(Error::ShapeMismatch {
                what: "cluster_std per cluster".into(),
                expected: k.to_string(),
                got: self.cluster_std.len().to_string(),
            });
        }
        self.cluster_std
            .iter()
            .try_for_each(|&s| check_positive("cluster_std", s))?;
        let (lo, hi) = self.center_box;
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(Error::param(
                "center_box",
                format!("({lo}, {hi})"),
                "needs finite lo < hi",
            ));
        }
        let d = self.n_features;
        let mut rng = SeededRng::seed_from_u64(self.seed);
        let centers = match &self.centers {
            Some(c) if c.dim() == (k, d) => c.clone(),
            Some(c) => {
                return Err(Error::ShapeMismatch {
                    what: "centers".into(),
                    expected: format!("{k} x {d}"),
                    got: format!("{} x {}", c.nrows(), c.ncols()),
                })
            }
            None => Array2::from_shape_fn((k, d), |_| rng.random_range(lo..hi)),
        };
        let mut data = Array2::zeros((n, d));
        let mut target = Vec::with_capacity(n);
        let mut row = 0;
        for (c, &size) in self.sizes.iter().enumerate() {
            for _ in 0..size {
                for j in 0..d {
                    let z: f64 = StandardNormal.sample(&mut rng);
                    data[[row, j]] = centers[[c, j]] + self.cluster_std[c] * z;
                }
                target.push(c as i64);
                row += 1;
            }
        }
        let widest = self.cluster_std.iter().copied().fold(0.0, f64::max);
        check_generated(&data, "cluster_std", widest)?;
        Ok(if self.shuffle {
            shuffled("blobs", data, target, &mut rng)
        } else {
            Dataset {
                name: "blobs".into(),
                data,
                target,
                feature_names: names(d),
            }
        })
    }
}

/// Refuses a data set of `n` × `d` points above the memory limit (points, labels and the
/// generator's temporaries).
fn check_memory(n: usize, d: usize) -> Result<()> {
    crate::memory::check(
        || format!("generating {n} x {d} points"),
        crate::memory::product(&[n, d.saturating_add(1), 16]),
        crate::error::hints::GENERATE,
    )
}

fn check_n(n: usize, min: usize) -> Result<()> {
    if n < min {
        return Err(Error::param("n", n, format!("must be at least {min}")));
    }
    Ok(())
}

fn linspace(a: f64, b: f64, n: usize, endpoint: bool) -> impl Iterator<Item = f64> {
    let div = if endpoint {
        n.saturating_sub(1).max(1)
    } else {
        n.max(1)
    } as f64;
    (0..n).map(move |i| a + (b - a) * i as f64 / div)
}

/// Two interleaving half circles (scikit-learn's `make_moons`), with Gaussian noise.
pub fn moons(n: usize, noise: f64, seed: u64) -> Result<Dataset> {
    check_n(n, 2)?;
    check_memory(n, 2)?;
    check_positive("noise", noise)?;
    let (n_out, n_in) = (n / 2, n - n / 2);
    let mut rng = SeededRng::seed_from_u64(seed);
    let mut pts: Vec<[f64; 2]> = linspace(0.0, std::f64::consts::PI, n_out, true)
        .map(|t| [t.cos(), t.sin()])
        .collect();
    pts.extend(linspace(0.0, std::f64::consts::PI, n_in, true).map(|t| [1.0 - t.cos(), 1.0 - t.sin() - 0.5]));
    let target = (0..n).map(|i| i64::from(i >= n_out)).collect();
    let data = noisy(&pts, noise, &mut rng);
    check_generated(&data, "noise", noise)?;
    Ok(shuffled("moons", data, target, &mut rng))
}

/// A small circle inside a large one (scikit-learn's `make_circles`), `factor` = inner/outer
/// radius in (0, 1).
pub fn circles(n: usize, noise: f64, factor: f64, seed: u64) -> Result<Dataset> {
    check_n(n, 2)?;
    check_memory(n, 2)?;
    check_positive("noise", noise)?;
    if !(factor > 0.0 && factor < 1.0) {
        return Err(Error::param("factor", factor, "must be in (0, 1)"));
    }
    let (n_out, n_in) = (n / 2, n - n / 2);
    let mut rng = SeededRng::seed_from_u64(seed);
    let tau = std::f64::consts::TAU;
    let mut pts: Vec<[f64; 2]> = linspace(0.0, tau, n_out, false)
        .map(|t| [t.cos(), t.sin()])
        .collect();
    pts.extend(linspace(0.0, tau, n_in, false).map(|t| [factor * t.cos(), factor * t.sin()]));
    let target = (0..n).map(|i| i64::from(i >= n_out)).collect();
    let data = noisy(&pts, noise, &mut rng);
    check_generated(&data, "noise", noise)?;
    Ok(shuffled("circles", data, target, &mut rng))
}

fn noisy(pts: &[[f64; 2]], noise: f64, rng: &mut SeededRng) -> Array2<f64> {
    Array2::from_shape_fn((pts.len(), 2), |(i, j)| {
        let z: f64 = StandardNormal.sample(rng);
        pts[i][j] + noise * z
    })
}

/// `n` points uniform in `[low, high)^d`, all labelled noise (−1).
pub fn uniform(n: usize, d: usize, low: f64, high: f64, seed: u64) -> Result<Dataset> {
    check_n(n, 1)?;
    if d == 0 {
        return Err(Error::param("n_features", 0, "must be at least 1"));
    }
    check_memory(n, d)?;
    if !(low.is_finite() && high.is_finite() && low < high) {
        return Err(Error::param(
            "range",
            format!("[{low}, {high})"),
            "needs finite low < high",
        ));
    }
    let mut rng = SeededRng::seed_from_u64(seed);
    Ok(Dataset {
        name: "uniform".into(),
        data: Array2::from_shape_fn((n, d), |_| rng.random_range(low..high)),
        target: vec![NOISE; n],
        feature_names: names(d),
    })
}

/// Accident-like hotspots: points along straight road segments with perpendicular Gaussian
/// jitter, plus uniform background noise, in a latitude/longitude box. Rows are
/// (latitude, longitude) in degrees; labels are the segment index, −1 for noise.
#[derive(Clone, Debug)]
pub struct GeoHotspots {
    /// Number of hotspot segments (k).
    pub n_hotspots: usize,
    /// Points per hotspot.
    pub points_per_hotspot: usize,
    /// Background noise points.
    pub n_noise: usize,
    /// Box (lat_min, lat_max, lon_min, lon_max); default North Carolina
    /// (33.8, 36.6, −84.3, −75.5).
    pub bbox: (f64, f64, f64, f64),
    /// Length of each road segment in km (default 2).
    pub segment_km: f64,
    /// Standard deviation across the road in km (default 0.05).
    pub spread_km: f64,
    /// Seed.
    pub seed: u64,
}

impl GeoHotspots {
    /// `k` hotspots of `per` points each and `noise` background points, with the defaults.
    pub fn new(k: usize, per: usize, noise: usize) -> Self {
        GeoHotspots {
            n_hotspots: k,
            points_per_hotspot: per,
            n_noise: noise,
            bbox: (33.8, 36.6, -84.3, -75.5),
            segment_km: 2.0,
            spread_km: 0.05,
            seed: 0,
        }
    }
    /// Seed.
    pub fn seed(mut self, s: u64) -> Self {
        self.seed = s;
        self
    }

    /// Draws the points.
    pub fn generate(&self) -> Result<Dataset> {
        let n = self
            .n_hotspots
            .saturating_mul(self.points_per_hotspot)
            .saturating_add(self.n_noise);
        if self.n_hotspots == 0 {
            return Err(Error::param("k", 0, "the number of hotspots must be at least 1"));
        }
        check_n(self.points_per_hotspot, 1)?;
        check_memory(n, 2)?;
        check_positive("segment_km", self.segment_km)?;
        check_positive("spread_km", self.spread_km)?;
        let (la0, la1, lo0, lo1) = self.bbox;
        if !(la0 < la1 && lo0 < lo1 && la0 >= -90.0 && la1 <= 90.0 && lo0 >= -180.0 && lo1 <= 180.0) {
            return Err(Error::param(
                "bbox",
                format!("{:?}", self.bbox),
                "needs lat_min < lat_max within ±90 and lon_min < lon_max within ±180",
            ));
        }
        let km_per_deg = EARTH_RADIUS_KM.to_radians();
        let mut rng = SeededRng::seed_from_u64(self.seed);
        let across = Normal::new(0.0, self.spread_km).expect("checked spread");
        let mut data = Array2::zeros((n, 2));
        let mut target = Vec::with_capacity(n);
        let mut row = 0;
        for h in 0..self.n_hotspots {
            let (clat, clon) = (rng.random_range(la0..la1), rng.random_range(lo0..lo1));
            let bearing: f64 = rng.random_range(0.0..std::f64::consts::PI);
            let (ux, uy) = (bearing.cos(), bearing.sin()); // east, north unit vector
            for _ in 0..self.points_per_hotspot {
                let along = rng.random_range(-0.5..0.5) * self.segment_km;
                let off: f64 = across.sample(&mut rng);
                let (east, north) = (along * ux - off * uy, along * uy + off * ux);
                let lat = clat + north / km_per_deg;
                let lon = clon + east / (km_per_deg * clat.to_radians().cos());
                data[[row, 0]] = lat;
                data[[row, 1]] = lon;
                target.push(h as i64);
                row += 1;
            }
        }
        for _ in 0..self.n_noise {
            data[[row, 0]] = rng.random_range(la0..la1);
            data[[row, 1]] = rng.random_range(lo0..lo1);
            row += 1;
        }
        target.resize(n, NOISE);
        let mut ds = shuffled("geo_hotspots", data, target, &mut rng);
        ds.feature_names = vec!["latitude".into(), "longitude".into()];
        Ok(ds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::{haversine_km, Metric, MetricKind};

    #[test]
    fn shipped_sets_have_documented_shapes() {
        for (name, n, d, k) in [
            ("iris", 150, 4, 3),
            ("wine", 178, 13, 3),
            ("breast_cancer", 569, 30, 2),
            ("digits", 1797, 64, 10),
        ] {
            let ds = load(name).unwrap();
            assert_eq!(ds.data.dim(), (n, d), "{name}");
            let mut t = ds.target.clone();
            t.sort();
            t.dedup();
            assert_eq!(t, (0..k).collect::<Vec<i64>>(), "{name}");
        }
        assert!(load("mnist").is_err());
    }

    #[test]
    fn blobs_sizes_spreads_and_seed() {
        let b = Blobs::new(0, 3)
            .sizes(vec![50, 100, 10])
            .cluster_stds(vec![0.1, 1.0, 0.5])
            .n_features(3)
            .seed(4);
        let a = b.generate().unwrap();
        assert_eq!(a.data.dim(), (160, 3));
        assert_eq!(a.target.iter().filter(|&&t| t == 1).count(), 100);
        let again = b.generate().unwrap();
        assert_eq!(a.data, again.data);
        // Cluster 0 has std 0.1: its points lie close to their mean.
        let pts: Vec<_> = (0..160).filter(|&i| a.target[i] == 0).collect();
        let mean: Vec<f64> = (0..3)
            .map(|j| pts.iter().map(|&i| a.data[[i, j]]).sum::<f64>() / 50.0)
            .collect();
        let var: f64 = pts
            .iter()
            .map(|&i| (0..3).map(|j| (a.data[[i, j]] - mean[j]).powi(2)).sum::<f64>())
            .sum::<f64>()
            / (50.0 * 3.0);
        assert!((var.sqrt() - 0.1).abs() < 0.03, "{}", var.sqrt());
        assert!(Blobs::new(5, 0).generate().is_err());
        assert!(Blobs::new(3, 5).generate().is_err());
    }

    #[test]
    fn moons_circles_geometry() {
        let m = moons(200, 0.0, 1).unwrap();
        for (r, &t) in m.data.rows().into_iter().zip(&m.target) {
            let (cx, cy) = if t == 0 { (0.0, 0.0) } else { (1.0, 0.5) };
            assert!(((r[0] - cx).powi(2) + (r[1] - cy).powi(2) - 1.0).abs() < 1e-9);
        }
        let c = circles(100, 0.0, 0.3, 1).unwrap();
        for (r, &t) in c.data.rows().into_iter().zip(&c.target) {
            let rad = (r[0].powi(2) + r[1].powi(2)).sqrt();
            assert!((rad - if t == 0 { 1.0 } else { 0.3 }).abs() < 1e-9);
        }
    }

    #[test]
    fn geo_hotspots_lie_on_short_segments() {
        let g = GeoHotspots::new(4, 50, 30).seed(2).generate().unwrap();
        assert_eq!(g.data.nrows(), 230);
        assert_eq!(g.target.iter().filter(|&&t| t == NOISE).count(), 30);
        for h in 0..4 {
            let pts: Vec<_> = (0..230).filter(|&i| g.target[i] == h).collect();
            for &i in &pts {
                for &j in &pts {
                    let d = MetricKind::Haversine.distance(
                        g.data.row(i).as_slice().unwrap(),
                        g.data.row(j).as_slice().unwrap(),
                    );
                    assert!(d < 2.0 + 1.0, "hotspot {h}: {d} km");
                }
            }
        }
        assert!(haversine_km(g.data[[0, 0]], g.data[[0, 1]], 35.0, -80.0) < 1000.0);
    }
}
