//! Which columns of a table are the points, and how they are scaled: column selection by
//! number (1-based, as `cut -f`: `1,3-5`) or by header name, and standardisation by mean and
//! standard deviation (scikit-learn's `StandardScaler`, population deviation) or by median and
//! interquartile range (`RobustScaler`, quartiles interpolated linearly as numpy's
//! `percentile`). Rows are never dropped, so labels stay aligned with the input's rows.

use crate::error::{Error, Result};
use crate::scalar::Scalar;
use ndarray::{Array2, Axis};

/// One item of a column list: a 0-based index range (inclusive) or a header name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Column {
    /// Columns `first..=last`, 0-based.
    Range(usize, usize),
    /// The column of this header name.
    Name(String),
}

/// The columns to read: those listed in `keep` (all when `None`), less those in `drop`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColumnSelection {
    /// Columns kept, in file order (`None`: every column).
    pub keep: Option<Vec<Column>>,
    /// Columns dropped.
    pub drop: Vec<Column>,
}

/// Parses `1,3-5,name` (numbers 1-based; a name is any item that is not a number or range).
pub fn parse_columns(s: &str) -> Result<Vec<Column>> {
    let bad = |why: String| Error::param("columns", s, why);
    let number = |t: &str| match t.trim().parse::<usize>() {
        Ok(0) => Err(bad("columns are numbered from 1".into())),
        Ok(v) => Ok(Some(v - 1)),
        Err(_) => Ok(None),
    };
    let mut out = Vec::new();
    for item in s.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(bad("an empty item in the list".into()));
        }
        if let Some((a, b)) = item.split_once('-') {
            if let (Some(a), Some(b)) = (number(a)?, number(b)?) {
                if a > b {
                    return Err(bad(format!("the range {item} runs backwards")));
                }
                out.push(Column::Range(a, b));
                continue;
            }
        }
        match number(item)? {
            Some(i) => out.push(Column::Range(i, i)),
            None => out.push(Column::Name(item.to_string())),
        }
    }
    Ok(out)
}

impl ColumnSelection {
    /// Whether every column is read.
    pub fn is_all(&self) -> bool {
        self.keep.is_none() && self.drop.is_empty()
    }

    /// The 0-based indices read, in file order, of a table of `ncols` columns with this
    /// header (names need one).
    pub fn resolve(&self, ncols: usize, header: Option<&[String]>) -> Result<Vec<usize>> {
        let indices = |cols: &[Column], flag: &'static str| -> Result<Vec<usize>> {
            let mut out = Vec::new();
            for c in cols {
                match c {
                    Column::Range(a, b) if *b < ncols => out.extend(*a..=*b),
                    Column::Range(_, b) => {
                        return Err(Error::param(
                            flag,
                            b + 1,
                            format!("the input has {ncols} columns (numbered from 1)"),
                        ))
                    }
                    Column::Name(name) => {
                        let h = header.ok_or_else(|| {
                            Error::param(flag, name, "names a column, but the input has no header")
                        })?;
                        let mut at = h.iter().enumerate().filter(|(_, c)| *c == name).map(|(i, _)| i);
                        let i = at.next().ok_or_else(|| {
                            Error::param(
                                flag,
                                name,
                                format!("no such column; the header has {}", h.join(", ")),
                            )
                        })?;
                        if let Some(again) = at.next() {
                            return Err(Error::param(
                                flag,
                                name,
                                format!(
                                    "the header has it twice (columns {} and {}): choose by number",
                                    i + 1,
                                    again + 1
                                ),
                            ));
                        }
                        out.push(i);
                    }
                }
            }
            Ok(out)
        };
        let mut keep = vec![self.keep.is_none(); ncols];
        for i in indices(self.keep.as_deref().unwrap_or(&[]), "columns")? {
            keep[i] = true;
        }
        for i in indices(&self.drop, "drop-columns")? {
            keep[i] = false;
        }
        let kept: Vec<usize> = (0..ncols).filter(|&i| keep[i]).collect();
        if kept.is_empty() {
            return Err(Error::param("columns", "", "no column is left to cluster"));
        }
        Ok(kept)
    }

    /// The selected columns of a matrix read whole (a .npy file: numbers only).
    pub fn apply<F: Scalar>(&self, x: Array2<F>) -> Result<Array2<F>> {
        if self.is_all() {
            return Ok(x);
        }
        let kept = self.resolve(x.ncols(), None)?;
        Ok(x.select(Axis(1), &kept))
    }
}

/// How columns are standardised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scaling {
    /// (x − mean) / standard deviation (population, as `StandardScaler`).
    ZScore,
    /// (x − median) / interquartile range (as `RobustScaler`).
    Robust,
}

/// Scales every column of a sparse matrix in place by its standard deviation (population,
/// implicit zeros included) without centring it — scikit-learn's
/// `StandardScaler(with_mean=False)`, the only standardisation that keeps zeros zero — and
/// returns the scales; a column whose deviation is 0 is left as it is (scale 1, as
/// scikit-learn). `Robust` scaling would centre on the median: refused.
pub fn scale_sparse<F: Scalar>(x: &mut crate::data::Csr<F>, how: Scaling) -> Result<Vec<f64>> {
    if how != Scaling::ZScore {
        return Err(Error::param(
            "standardize",
            "robust",
            "sparse rows are scaled without centring (zscore, as scikit-learn's with_mean=False); \
             robust scaling centres on the median, which would fill in the zeros",
        ));
    }
    let v = x.view();
    let (n, d) = (v.nrows() as f64, v.ncols());
    let mut mean = vec![0.0f64; d];
    let mut count = vec![0usize; d];
    let mut big = vec![0.0f64; d];
    for i in 0..v.nrows() {
        let (idx, val) = v.row(i);
        for (&j, a) in idx.iter().zip(val) {
            mean[j as usize] += a.to_f64_exact() / n;
            count[j as usize] += 1;
        }
    }
    for i in 0..v.nrows() {
        let (idx, val) = v.row(i);
        for (&j, a) in idx.iter().zip(val) {
            let j = j as usize;
            big[j] = big[j].max((a.to_f64_exact() - mean[j]).abs());
        }
    }
    for j in 0..d {
        if (count[j] as f64) < n {
            big[j] = big[j].max(mean[j].abs());
        }
    }
    // Deviations divided by their largest before squaring (no overflow near ±f64::MAX).
    let mut var = vec![0.0f64; d];
    for i in 0..v.nrows() {
        let (idx, val) = v.row(i);
        for (&j, a) in idx.iter().zip(val) {
            let j = j as usize;
            var[j] += ((a.to_f64_exact() - mean[j]) / big[j]).powi(2) / n;
        }
    }
    let scale: Vec<f64> = (0..d)
        .map(|j| {
            if big[j] == 0.0 {
                return 1.0;
            }
            let zeros = (n - count[j] as f64) * (mean[j] / big[j]).powi(2) / n;
            let s = (var[j] + zeros).sqrt() * big[j];
            if s > 0.0 {
                s
            } else {
                1.0
            }
        })
        .collect();
    x.map_values(|j, a| F::from_f64_lossy(a.to_f64_exact() / scale[j]));
    Ok(scale)
}

/// Standardises every column in place and returns each column's (centre, scale). A column
/// whose scale is 0 (constant, or with `Robust` an interquartile range of 0) is refused,
/// named by its 1-based number.
pub fn standardize<F: Scalar>(x: &mut Array2<F>, how: Scaling) -> Result<Vec<(f64, f64)>> {
    if x.nrows() < 2 {
        return Err(Error::param(
            "standardize",
            format!("{} row(s)", x.nrows()),
            "every column of a single row is constant: there is no spread to scale by",
        ));
    }
    let mut stats = Vec::with_capacity(x.ncols());
    for (j, col) in x.columns().into_iter().enumerate() {
        let v: Vec<f64> = col.iter().map(|a| a.to_f64_exact()).collect();
        let (centre, scale) = match how {
            Scaling::ZScore => {
                // Deviations are divided by their largest before squaring, so values near
                // ±f64::MAX do not overflow.
                let n = v.len() as f64;
                let mean = v.iter().map(|a| a / n).sum::<f64>();
                let big = v.iter().map(|a| (a - mean).abs()).fold(0.0, f64::max);
                let var = v.iter().map(|a| ((a - mean) / big).powi(2) / n).sum::<f64>();
                (mean, if big > 0.0 { var.sqrt() * big } else { 0.0 })
            }
            Scaling::Robust => {
                let mut s = v.clone();
                s.sort_by(f64::total_cmp);
                (quantile(&s, 0.5), quantile(&s, 0.75) - quantile(&s, 0.25))
            }
        };
        let constant = v.iter().all(|&a| a == v[0]);
        if constant || !(scale > 0.0 && scale.is_finite() && centre.is_finite()) {
            let scale = if constant { 0.0 } else { scale };
            let what = match how {
                Scaling::ZScore => "standard deviation",
                Scaling::Robust => "interquartile range",
            };
            return Err(Error::param(
                "standardize",
                format!("column {}", j + 1),
                format!(
                    "its {what} is {scale}, so it cannot be scaled; drop column {}",
                    j + 1
                ),
            ));
        }
        stats.push((centre, scale));
    }
    for (mut col, &(centre, scale)) in x.columns_mut().into_iter().zip(&stats) {
        col.mapv_inplace(|a| F::from_f64_lossy((a.to_f64_exact() - centre) / scale));
    }
    Ok(stats)
}

/// The q-quantile of sorted values, interpolated linearly between order statistics (numpy's
/// default).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (pos - lo as f64) * (sorted[hi] - sorted[lo])
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn parses_numbers_ranges_and_names() {
        assert_eq!(
            parse_columns("1,3-5,petal width").unwrap(),
            vec![
                Column::Range(0, 0),
                Column::Range(2, 4),
                Column::Name("petal width".into())
            ]
        );
        for bad in ["0", "5-3", "1,,2", ""] {
            assert!(parse_columns(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn keeps_and_drops_by_number_and_name() {
        let header: Vec<String> = ["id", "a", "b", "name", "c"].map(String::from).into();
        let keep = ColumnSelection {
            keep: Some(parse_columns("2-3,c").unwrap()),
            drop: vec![],
        };
        assert_eq!(keep.resolve(5, Some(&header)).unwrap(), vec![1, 2, 4]);
        let drop = ColumnSelection {
            keep: None,
            drop: parse_columns("id,4").unwrap(),
        };
        assert_eq!(drop.resolve(5, Some(&header)).unwrap(), vec![1, 2, 4]);
        let too_far = ColumnSelection {
            keep: Some(parse_columns("99").unwrap()),
            drop: vec![],
        };
        assert!(too_far
            .resolve(5, Some(&header))
            .unwrap_err()
            .to_string()
            .contains("5 columns"));
        assert!(drop.resolve(5, None).is_err(), "a name needs a header");
        let nothing = ColumnSelection {
            keep: None,
            drop: parse_columns("1-5").unwrap(),
        };
        assert!(nothing.resolve(5, Some(&header)).is_err());
        let x = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let sel = ColumnSelection {
            keep: None,
            drop: parse_columns("2").unwrap(),
        };
        assert_eq!(sel.apply(x).unwrap(), array![[1.0, 3.0], [4.0, 6.0]]);
    }

    #[test]
    fn zscore_and_robust_match_the_textbook_formulas() {
        let mut x = array![[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [10.0, 40.0]];
        let stats = standardize(&mut x.clone(), Scaling::ZScore).unwrap();
        // mean 4, population sd sqrt(((9 + 4 + 1 + 36) / 4)) = sqrt(12.5)
        assert!((stats[0].0 - 4.0).abs() < 1e-12 && (stats[0].1 - 12.5f64.sqrt()).abs() < 1e-12);
        let robust = standardize(&mut x, Scaling::Robust).unwrap();
        // numpy: median 2.5, q25 1.75, q75 4.75 -> IQR 3
        assert_eq!(robust[0], (2.5, 3.0));
        assert_eq!(x[[0, 0]], (1.0 - 2.5) / 3.0);
        assert_eq!(robust[1], (25.0, 15.0));
    }

    #[test]
    fn values_near_the_largest_float_scale_without_overflow() {
        let mut x = array![[1e300, 1.0], [-1e300, 2.0]];
        let stats = standardize(&mut x, Scaling::ZScore).unwrap();
        assert_eq!(stats[0], (0.0, 1e300));
        assert_eq!(x.column(0).to_vec(), vec![1.0, -1.0]);
    }

    #[test]
    fn a_constant_column_is_refused_by_number() {
        let mut x = array![[1.0, 7.0], [2.0, 7.0]];
        let e = standardize(&mut x, Scaling::ZScore).unwrap_err().to_string();
        assert!(e.contains("column 2") && e.contains("drop column 2"), "{e}");
        assert_eq!(x, array![[1.0, 7.0], [2.0, 7.0]], "nothing is changed on refusal");
    }

    #[test]
    fn a_single_row_is_refused_as_such_and_a_repeated_name_as_ambiguous() {
        let mut x = array![[1.0, 7.0]];
        let e = standardize(&mut x, Scaling::ZScore).unwrap_err().to_string();
        assert!(e.contains("single row") && !e.contains("drop column"), "{e}");
        let header: Vec<String> = ["x", "x", "y"].map(String::from).to_vec();
        let keep = ColumnSelection {
            keep: Some(parse_columns("x").unwrap()),
            drop: Vec::new(),
        };
        let e = keep.resolve(3, Some(&header)).unwrap_err().to_string();
        assert!(e.contains("columns 1 and 2"), "{e}");
        let by_other = ColumnSelection {
            keep: Some(parse_columns("y").unwrap()),
            drop: Vec::new(),
        };
        assert_eq!(by_other.resolve(3, Some(&header)).unwrap(), vec![2]);
    }
}
