//! Choosing the number of clusters: fit each k of a list and score every fit by one criterion.
//!
//! The criteria are the usual ones: the silhouette (Rousseeuw 1987; scikit-learn's
//! `silhouette_score`, on a seeded sample of at most [`SelectK::silhouette_sample`] points as
//! its `sample_size` does, because the exact value costs O(n²) distances), the medoid
//! silhouette of k-medoids (Lenssen & Schubert 2022, O(n·k)), the Calinski–Harabasz and
//! Davies–Bouldin indices, BIC and AIC of a Gaussian mixture (scikit-learn's `bic`/`aic`), and
//! the elbow of the loss curve. The elbow is the k whose loss lies furthest below the chord from
//! the first k's loss to the last one's, both axes scaled to [0, 1] (the "Kneedle" rule of
//! Satopää et al. 2011 for a decreasing convex curve); its score is that distance, so a curve
//! without a bend scores 0 everywhere and the smallest k is chosen.
//!
//! A family supplies what only it can compute (a mixture's BIC, a medoid silhouette on its own
//! dissimilarities) through the `own` function of [`SelectK::run`]; the silhouette, CH and DB
//! are otherwise computed from the labels and the points with Euclidean distances.

use crate::data::validate::check_k;
use crate::eval::{calinski_harabasz_score, davies_bouldin_score, silhouette_score};
use crate::{Clustering, Error, MetricKind, OnTheFly, Progress, ProgressFn, Result, Scalar};
use ndarray::ArrayView2;
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// How the fits for different k are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Criterion {
    /// Mean silhouette (higher is better).
    Silhouette,
    /// Medoid silhouette of k-medoids (higher is better).
    MedoidSilhouette,
    /// Calinski–Harabasz index (higher is better).
    CalinskiHarabasz,
    /// Davies–Bouldin index (lower is better).
    DaviesBouldin,
    /// Bayesian information criterion of a mixture (lower is better).
    Bic,
    /// Akaike information criterion of a mixture (lower is better).
    Aic,
    /// The elbow of the loss curve (the distance below the chord; higher is better).
    Elbow,
}

impl Criterion {
    /// Every criterion, in the order of their names.
    pub const ALL: [Criterion; 7] = [
        Criterion::Silhouette,
        Criterion::MedoidSilhouette,
        Criterion::CalinskiHarabasz,
        Criterion::DaviesBouldin,
        Criterion::Bic,
        Criterion::Aic,
        Criterion::Elbow,
    ];

    /// The criterion's name, as parsed.
    pub fn name(self) -> &'static str {
        match self {
            Criterion::Silhouette => "silhouette",
            Criterion::MedoidSilhouette => "medoid-silhouette",
            Criterion::CalinskiHarabasz => "calinski-harabasz",
            Criterion::DaviesBouldin => "davies-bouldin",
            Criterion::Bic => "bic",
            Criterion::Aic => "aic",
            Criterion::Elbow => "elbow",
        }
    }

    /// Whether a larger score is a better k.
    pub fn higher_is_better(self) -> bool {
        !matches!(self, Criterion::DaviesBouldin | Criterion::Bic | Criterion::Aic)
    }

    /// Whether the criterion compares partitions, so is undefined for k = 1.
    fn needs_two_clusters(self) -> bool {
        matches!(
            self,
            Criterion::Silhouette
                | Criterion::MedoidSilhouette
                | Criterion::CalinskiHarabasz
                | Criterion::DaviesBouldin
        )
    }
}

impl std::fmt::Display for Criterion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Criterion {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let s = s.to_ascii_lowercase().replace('_', "-");
        let alias = match s.as_str() {
            "ch" => "calinski-harabasz",
            "db" => "davies-bouldin",
            other => other,
        };
        Criterion::ALL
            .into_iter()
            .find(|c| c.name() == alias)
            .ok_or_else(|| {
                let names: Vec<&str> = Criterion::ALL.iter().map(|c| c.name()).collect();
                Error::param(
                    "criterion",
                    s.clone(),
                    format!("expected one of {}", names.join(", ")),
                )
            })
    }
}

/// Values of k to try, checked once (linfa's `ParamGuard` idea): at least one, each at least 1,
/// in strictly increasing order. Made only by [`Ks::new`] and [`parse_ks`], so [`SelectK`]
/// checks only the largest against the number of points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ks(Vec<usize>);

impl Ks {
    /// `ks` if they are values of k to try, else what is wrong with them.
    pub fn new(ks: Vec<usize>) -> Result<Ks> {
        Self::checked(ks, None)
    }

    /// `ks` checked, errors naming `given` (the text they were parsed from) when there is one.
    fn checked(ks: Vec<usize>, given: Option<&str>) -> Result<Ks> {
        let bad = |why: &str| {
            let shown = given.map_or_else(|| format!("{ks:?}"), str::to_string);
            Err(Error::param("k", shown, why.to_string()))
        };
        if ks.is_empty() {
            return bad("no value of k to try");
        }
        if ks.contains(&0) {
            return bad("the number of clusters must be at least 1");
        }
        if ks.windows(2).any(|w| w[0] >= w[1]) {
            return bad("list the values of k in increasing order, each once");
        }
        Ok(Ks(ks))
    }

    /// The values, in increasing order.
    pub fn as_slice(&self) -> &[usize] {
        &self.0
    }
}

impl std::ops::Deref for Ks {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        &self.0
    }
}

/// The values of k to try, from `"4"`, `"2:8"` (inclusive) or `"3,5,8"` (see [`Ks`]).
pub fn parse_ks(s: &str) -> Result<Ks> {
    let bad = |why: &str| Error::param("k", s, why.to_string());
    let number = |t: &str| {
        t.trim()
            .parse::<usize>()
            .map_err(|_| bad("expected a number of clusters, a range A:B or a list A,B,C"))
    };
    let ks: Vec<usize> = if let Some((a, b)) = s.split_once(':') {
        let (a, b) = (number(a)?, number(b)?);
        if a > b {
            return Err(bad("the range A:B needs A <= B"));
        }
        (a..=b).collect()
    } else {
        s.split(',').map(number).collect::<Result<_>>()?
    };
    Ks::checked(ks, Some(s))
}

/// One row of the table: a k, its score, the fit's loss and iterations, and the seconds spent
/// on the fit and its score.
#[derive(Clone, Debug, PartialEq)]
pub struct KScore {
    /// The number of clusters asked for.
    pub k: usize,
    /// The criterion's value (`None` where it is undefined, e.g. a fit that left one cluster).
    pub score: Option<f64>,
    /// The fit's objective.
    pub loss: Option<f64>,
    /// Clusters the fit found (noise excluded).
    pub n_clusters: usize,
    /// Iterations of the fit.
    pub n_iter: usize,
    /// Seconds for the fit and its score.
    pub seconds: f64,
}

/// The outcome: every k's row, the chosen one and its model.
#[derive(Clone, Debug)]
pub struct KSelection<M> {
    /// The criterion the rows were scored by.
    pub criterion: Criterion,
    /// One row per k, in increasing k.
    pub table: Vec<KScore>,
    /// The chosen k.
    pub best_k: usize,
    /// The model fitted with the chosen k.
    pub model: M,
}

/// Parameters of the choice of k.
#[derive(Clone, Debug)]
pub struct SelectK {
    /// The values of k, in increasing order.
    pub ks: Ks,
    /// How the fits are compared.
    pub criterion: Criterion,
    /// Fits run at once (each fit is itself parallel); 1 runs them one after the other.
    pub parallel: usize,
    /// The silhouette is computed on a seeded sample of this many points when n is larger
    /// (default 10,000; scikit-learn's `sample_size`).
    pub silhouette_sample: usize,
    /// Seed of the silhouette's sample.
    pub seed: u64,
    /// Called after each fit with the number of fits done.
    pub progress: Option<ProgressFn>,
}

impl SelectK {
    /// Tries `ks`, compared by `criterion`, one fit at a time.
    pub fn new(ks: Ks, criterion: Criterion) -> Self {
        SelectK {
            ks,
            criterion,
            parallel: 1,
            silhouette_sample: 10_000,
            seed: 0,
            progress: None,
        }
    }

    /// Fits at once.
    pub fn parallel(mut self, p: usize) -> Self {
        self.parallel = p;
        self
    }

    /// Seed of the silhouette's sample.
    pub fn seed(mut self, s: u64) -> Self {
        self.seed = s;
        self
    }

    /// Fits `fit(k)` for every k and scores it. `own(model, criterion)` gives the family's
    /// own value of a criterion (`None` where it has none: the silhouette, CH and DB then come
    /// from `x` with Euclidean distances). `x` is `None` for a fit on dissimilarities. The
    /// result does not depend on `parallel`.
    pub fn run<F, M>(
        &self,
        n: usize,
        x: Option<ArrayView2<'_, F>>,
        fit: impl Fn(usize) -> Result<M> + Sync,
        own: impl Fn(&M, Criterion) -> Option<Result<f64>> + Sync,
    ) -> Result<KSelection<M>>
    where
        F: Scalar,
        M: Clustering + Send,
    {
        self.check(n)?;
        let done = AtomicUsize::new(0);
        let score_one = |k: usize| -> Result<(M, KScore)> {
            let t = Instant::now();
            let model = fit(k)?;
            let score = match self.criterion {
                Criterion::Elbow => None, // from every loss, below
                c => self.score(&model, c, x, &own)?,
            };
            let row = KScore {
                k,
                score,
                loss: model.loss(),
                n_clusters: model.n_clusters(),
                n_iter: model.n_iter(),
                seconds: t.elapsed().as_secs_f64(),
            };
            if let Some(p) = &self.progress {
                p.report(&Progress {
                    iteration: done.fetch_add(1, Ordering::Relaxed) + 1,
                    max_iter: Some(self.ks.len()),
                    objective: None,
                })?;
            }
            Ok((model, row))
        };
        let mut fitted = Vec::with_capacity(self.ks.len());
        for chunk in self.ks.chunks(self.parallel.max(1)) {
            let done: Vec<Result<(M, KScore)>> = chunk.par_iter().map(|&k| score_one(k)).collect();
            for r in done {
                fitted.push(r?);
            }
        }
        let (models, mut table): (Vec<M>, Vec<KScore>) = fitted.into_iter().unzip();
        if self.criterion == Criterion::Elbow {
            let losses: Vec<Option<f64>> = table.iter().map(|r| r.loss).collect();
            for (row, s) in table.iter_mut().zip(elbow_scores(&self.ks, &losses)?) {
                row.score = Some(s);
            }
        }
        let best = best_row(&table, self.criterion).ok_or_else(|| {
            Error::param(
                "criterion",
                self.criterion,
                "no k gave a defined score (every fit found fewer than 2 clusters)",
            )
        })?;
        let best_k = table[best].k;
        let model = models.into_iter().nth(best).expect("one model per row");
        Ok(KSelection {
            criterion: self.criterion,
            table,
            best_k,
            model,
        })
    }

    /// The largest k against `n` points (the rest of `ks` was checked when it was made) and
    /// the values the criterion needs.
    fn check(&self, n: usize) -> Result<()> {
        check_k(self.ks[self.ks.len() - 1], n)?;
        let first = self.ks[0];
        if self.criterion.needs_two_clusters() && first < 2 {
            return Err(Error::param(
                "k",
                first,
                format!("the {} compares clusters, so k starts at 2", self.criterion),
            ));
        }
        if self.criterion == Criterion::Elbow && self.ks.len() < 3 {
            return Err(Error::param(
                "k",
                format!("{:?}", self.ks.as_slice()),
                "an elbow needs at least 3 values of k",
            ));
        }
        Ok(())
    }

    /// The criterion's value for one fit; `None` where it is undefined (fewer than 2 clusters).
    fn score<F: Scalar, M: Clustering>(
        &self,
        model: &M,
        c: Criterion,
        x: Option<ArrayView2<'_, F>>,
        own: &(impl Fn(&M, Criterion) -> Option<Result<f64>> + Sync),
    ) -> Result<Option<f64>> {
        let used = model.n_clusters();
        if c.needs_two_clusters() && (used < 2 || used + 1 > model.labels().len()) {
            return Ok(None);
        }
        if let Some(v) = own(model, c) {
            return v.map(Some);
        }
        let Some(x) = x else {
            return Err(Error::param(
                "criterion",
                c,
                "needs the points (not a dissimilarity matrix)",
            ));
        };
        let labels = model.labels();
        Ok(Some(match c {
            Criterion::Silhouette => self.sampled_silhouette(x, labels)?,
            Criterion::CalinskiHarabasz => calinski_harabasz_score(x, labels)?,
            Criterion::DaviesBouldin => davies_bouldin_score(x, labels)?,
            c => return Err(Error::param("criterion", c, "does not apply to this method")),
        }))
    }

    /// The rows the silhouette is computed on for `n` points, in increasing order: all of them,
    /// or a seeded sample of [`SelectK::silhouette_sample`] (a caller that streams its points
    /// reads these rows and scores them itself).
    pub fn silhouette_rows(&self, n: usize) -> Vec<usize> {
        if n <= self.silhouette_sample {
            return (0..n).collect();
        }
        use rand::SeedableRng;
        let mut rng = crate::rng::SeededRng::seed_from_u64(self.seed);
        let mut rows = rand::seq::index::sample(&mut rng, n, self.silhouette_sample).into_vec();
        rows.sort_unstable();
        rows
    }

    /// scikit-learn's `silhouette_score(x, labels, sample_size=…, random_state=seed)` in spirit:
    /// exact up to `silhouette_sample` points, else on a seeded sample of that many (a sample
    /// that holds one cluster only scores `None` upstream, not here: it is kept as drawn).
    fn sampled_silhouette<F: Scalar>(&self, x: ArrayView2<'_, F>, labels: &[i64]) -> Result<f64> {
        let rows = self.silhouette_rows(x.nrows());
        if rows.len() == x.nrows() {
            return silhouette_score(&OnTheFly::new(x, MetricKind::Euclidean)?, labels);
        }
        let xs = x.select(ndarray::Axis(0), &rows);
        let ls: Vec<i64> = rows.iter().map(|&i| labels[i]).collect();
        silhouette_score(&OnTheFly::new(xs.view(), MetricKind::Euclidean)?, &ls)
    }
}

/// The elbow score of each k: how far its loss lies below the chord from the first k's loss to
/// the last one's, with k and the loss both scaled to [0, 1] (0 at both ends).
pub fn elbow_scores(ks: &[usize], losses: &[Option<f64>]) -> Result<Vec<f64>> {
    let losses: Vec<f64> = losses
        .iter()
        .map(|l| l.filter(|v| v.is_finite()))
        .collect::<Option<_>>()
        .ok_or_else(|| Error::param("criterion", "elbow", "needs a finite loss for every k"))?;
    let (k0, k1) = (ks[0] as f64, ks[ks.len() - 1] as f64);
    let lo = losses.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = losses.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if hi <= lo {
        return Ok(vec![0.0; ks.len()]);
    }
    let y = |l: f64| (l - lo) / (hi - lo);
    let (y0, y1) = (y(losses[0]), y(losses[losses.len() - 1]));
    Ok(ks
        .iter()
        .zip(&losses)
        .map(|(&k, &l)| {
            let t = (k as f64 - k0) / (k1 - k0);
            y0 + t * (y1 - y0) - y(l)
        })
        .collect())
}

/// The row with the best defined score (ties: the smallest k).
fn best_row(table: &[KScore], c: Criterion) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, row) in table.iter().enumerate() {
        let Some(s) = row.score.filter(|s| s.is_finite()) else {
            continue;
        };
        let better = match best {
            None => true,
            Some((_, b)) if c.higher_is_better() => s > b,
            Some((_, b)) => s < b,
        };
        if better {
            best = Some((i, s));
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmeans::KMeans;
    use crate::Fit;
    use ndarray::Array2;

    /// Three tight, well-separated groups of 30 points in 2-d.
    fn three_blobs() -> Array2<f64> {
        let centres = [[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]];
        Array2::from_shape_fn((90, 2), |(i, j)| {
            let wobble = ((i * 7 + j * 3) % 11) as f64 / 11.0 - 0.5;
            centres[i / 30][j] + wobble
        })
    }

    fn kmeans_table(c: Criterion, parallel: usize) -> KSelection<crate::kmeans::KMeansModel<f64>> {
        let x = three_blobs();
        SelectK::new(Ks::new((2..=6).collect()).unwrap(), c)
            .parallel(parallel)
            .run(
                x.nrows(),
                Some(x.view()),
                |k| KMeans::new(k).seed(1).fit(&x.view()),
                |_, _| None,
            )
            .unwrap()
    }

    #[test]
    fn parses_single_ranges_and_lists_and_refuses_the_rest() {
        assert_eq!(parse_ks("4").unwrap().as_slice(), [4]);
        assert_eq!(parse_ks("2:5").unwrap().as_slice(), [2, 3, 4, 5]);
        assert_eq!(parse_ks("3,5,8").unwrap().as_slice(), [3, 5, 8]);
        assert_eq!(parse_ks("3:3").unwrap().as_slice(), [3]);
        for bad in ["5:2", "0:3", "0", "a:b", "3,3", "5,3", "", "2:", "1.5"] {
            assert!(parse_ks(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn ks_are_checked_when_made() {
        assert_eq!(Ks::new(vec![2, 5]).unwrap().as_slice(), [2, 5]);
        for bad in [vec![], vec![0, 1], vec![3, 3], vec![4, 2]] {
            let e = Ks::new(bad.clone()).unwrap_err().to_string();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
        // Only the largest is checked against n at the run.
        let sel = SelectK::new(Ks::new(vec![2, 7]).unwrap(), Criterion::Silhouette);
        assert!(sel
            .check(6)
            .unwrap_err()
            .to_string()
            .contains("exceeds the number of points"));
        assert!(sel.check(7).is_ok());
    }

    #[test]
    fn criteria_parse_by_name_and_alias() {
        for c in Criterion::ALL {
            assert_eq!(c.name().parse::<Criterion>().unwrap(), c);
        }
        assert_eq!("CH".parse::<Criterion>().unwrap(), Criterion::CalinskiHarabasz);
        assert_eq!(
            "medoid_silhouette".parse::<Criterion>().unwrap(),
            Criterion::MedoidSilhouette
        );
        assert!("gap".parse::<Criterion>().is_err());
    }

    #[test]
    fn three_blobs_choose_three_by_every_points_criterion() {
        for c in [
            Criterion::Silhouette,
            Criterion::CalinskiHarabasz,
            Criterion::DaviesBouldin,
            Criterion::Elbow,
        ] {
            let s = kmeans_table(c, 1);
            assert_eq!(s.best_k, 3, "{c}: {:?}", s.table);
            assert_eq!(s.model.centers.nrows(), 3);
            assert_eq!(
                s.table.iter().map(|r| r.k).collect::<Vec<_>>(),
                vec![2, 3, 4, 5, 6]
            );
        }
    }

    #[test]
    fn the_silhouette_column_is_the_silhouette_of_each_fit() {
        let x = three_blobs();
        let s = kmeans_table(Criterion::Silhouette, 1);
        for row in &s.table {
            let m = KMeans::new(row.k).seed(1).fit(&x.view()).unwrap();
            let d = OnTheFly::new(x.view(), MetricKind::Euclidean).unwrap();
            let exact = silhouette_score(&d, &m.labels).unwrap();
            assert_eq!(row.score, Some(exact));
            assert_eq!(row.loss, Some(m.inertia));
        }
    }

    #[test]
    fn a_sampled_silhouette_is_the_silhouette_of_the_sample() {
        let x = three_blobs();
        let m = KMeans::new(3).seed(1).fit(&x.view()).unwrap();
        let mut sel = SelectK::new(Ks::new(vec![3]).unwrap(), Criterion::Silhouette).seed(5);
        sel.silhouette_sample = 40;
        let got = sel.sampled_silhouette(x.view(), &m.labels).unwrap();
        use rand::SeedableRng;
        let mut rng = crate::rng::SeededRng::seed_from_u64(5);
        let mut rows = rand::seq::index::sample(&mut rng, 90, 40).into_vec();
        rows.sort_unstable();
        let xs = x.select(ndarray::Axis(0), &rows);
        let ls: Vec<i64> = rows.iter().map(|&i| m.labels[i]).collect();
        let want = silhouette_score(&OnTheFly::new(xs.view(), MetricKind::Euclidean).unwrap(), &ls).unwrap();
        assert_eq!(got, want);
        assert!(got > 0.8, "{got}");
    }

    #[test]
    fn the_result_does_not_depend_on_how_many_fits_run_at_once() {
        let one = kmeans_table(Criterion::Silhouette, 1);
        let three = kmeans_table(Criterion::Silhouette, 3);
        let strip = |t: &[KScore]| t.iter().map(|r| (r.k, r.score, r.loss)).collect::<Vec<_>>();
        assert_eq!(strip(&one.table), strip(&three.table));
        assert_eq!(one.model.labels, three.model.labels);
    }

    #[test]
    fn the_elbow_is_where_the_loss_bends_most_below_the_chord() {
        // Loss falls steeply to k = 3, then slowly: the bend is at 3.
        let ks = [1, 2, 3, 4, 5, 6];
        let losses = [100.0, 60.0, 20.0, 17.0, 15.0, 14.0].map(Some);
        let s = elbow_scores(&ks, &losses).unwrap();
        let best = (0..6).max_by(|&a, &b| s[a].total_cmp(&s[b])).unwrap();
        assert_eq!(ks[best], 3);
        assert_eq!((s[0], s[5]), (0.0, 0.0));
        // A straight line has no elbow.
        let line = elbow_scores(&[1, 2, 3], &[Some(3.0), Some(2.0), Some(1.0)]).unwrap();
        assert!(line.iter().all(|v| v.abs() < 1e-12), "{line:?}");
        assert!(elbow_scores(&[1, 2, 3], &[Some(3.0), None, Some(1.0)]).is_err());
    }

    #[test]
    fn lower_is_better_criteria_and_undefined_scores() {
        let row = |k, score| KScore {
            k,
            score,
            loss: None,
            n_clusters: k,
            n_iter: 1,
            seconds: 0.0,
        };
        let t = vec![
            row(2, Some(5.0)),
            row(3, None),
            row(4, Some(1.0)),
            row(5, Some(1.0)),
        ];
        assert_eq!(best_row(&t, Criterion::Bic), Some(2));
        assert_eq!(best_row(&t, Criterion::Silhouette), Some(0));
        assert_eq!(best_row(&[row(2, None)], Criterion::Silhouette), None);
    }

    #[test]
    fn bad_ranges_are_refused_before_any_fit() {
        let x = three_blobs();
        let run = |ks: Vec<usize>, c| {
            SelectK::new(Ks::new(ks).unwrap(), c).run(
                90,
                Some(x.view()),
                |_| -> Result<crate::kmeans::KMeansModel<f64>> { panic!("fitted") },
                |_, _| None,
            )
        };
        assert!(run(vec![1, 2, 3], Criterion::Silhouette).is_err());
        assert!(run(vec![2, 3], Criterion::Elbow).is_err());
        assert!(run(vec![2, 91], Criterion::Bic).is_err());
        // (no empty list of k can be made: see ks_are_checked_when_made)
        // BIC is the mixture's own; k-means has none.
        let km = SelectK::new(Ks::new(vec![2, 3]).unwrap(), Criterion::Bic).run(
            90,
            Some(x.view()),
            |k| KMeans::new(k).fit(&x.view()),
            |_, _| None,
        );
        assert!(km.unwrap_err().to_string().contains("does not apply"));
    }
}
