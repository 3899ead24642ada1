//! Input validation shared by every algorithm: each check returns the first problem found,
//! in row-major order, as an [`Error`] that names it.

use crate::error::{Error, Result};
use crate::scalar::Scalar;
use ndarray::ArrayView2;
use num_traits::ToPrimitive;
use rayon::prelude::*;

/// Relative tolerance used to accept a precomputed matrix as symmetric:
/// `|d[i][j] − d[j][i]| ≤ tol · (1 + max(|d[i][j]|, |d[j][i]|))`.
pub const SYMMETRY_TOL: f64 = 1e-6;

/// Checks a data matrix (rows = points): at least one row and one column, all values finite.
pub fn check_points<F: Scalar>(x: ArrayView2<F>) -> Result<()> {
    if x.nrows() == 0 {
        return Err(Error::EmptyInput {
            what: "data has 0 rows".into(),
        });
    }
    if x.ncols() == 0 {
        return Err(Error::EmptyInput {
            what: "data has 0 columns".into(),
        });
    }
    check_finite(x, "data")
}

/// Checks that every value is finite; the error names the first bad cell.
pub fn check_finite<T: ToPrimitive + Copy + Sync>(x: ArrayView2<T>, what: &'static str) -> Result<()> {
    let bad = (0..x.nrows()).into_par_iter().find_map_first(|i| {
        x.row(i).iter().enumerate().find_map(|(j, v)| {
            let v = v.to_f64().unwrap_or(f64::NAN);
            (!v.is_finite()).then_some((i, j, v))
        })
    });
    match bad {
        Some((row, col, value)) => Err(Error::NonFinite {
            what,
            row,
            col,
            value,
        }),
        None => Ok(()),
    }
}

/// Checks a number of clusters against the number of points: `1 ≤ k ≤ n`.
pub fn check_k(k: usize, n: usize) -> Result<()> {
    if k == 0 {
        return Err(Error::param("k", k, "the number of clusters must be at least 1"));
    }
    if k > n {
        return Err(Error::param(
            "k",
            k,
            format!("the number of clusters exceeds the number of points n = {n}"),
        ));
    }
    Ok(())
}

/// Checks that two lengths agree.
pub fn check_same_len(what: &str, expected: usize, got: usize) -> Result<()> {
    if expected != got {
        return Err(Error::ShapeMismatch {
            what: what.into(),
            expected: expected.to_string(),
            got: got.to_string(),
        });
    }
    Ok(())
}

/// [`check_points`] for one process's slice of the rows of a distributed run, which starts at
/// global row `offset`: errors name the global row; a slice may be empty when the whole data
/// is not (`n_global` rows).
pub fn check_slice<F: Scalar>(x: ArrayView2<F>, offset: usize, n_global: usize) -> Result<()> {
    if x.nrows() == 0 && n_global > 0 {
        return Ok(());
    }
    check_points(x).map_err(|e| match e {
        Error::NonFinite {
            what,
            row,
            col,
            value,
        } => Error::NonFinite {
            what,
            row: row + offset,
            col,
            value,
        },
        e => e,
    })
}

/// Checks a precomputed dissimilarity matrix: non-empty, square, finite, non-negative and
/// symmetric within `tol` (see [`SYMMETRY_TOL`]).
pub fn check_dissimilarity_matrix<T: ToPrimitive + Copy + Sync>(d: ArrayView2<T>, tol: f64) -> Result<()> {
    let (rows, cols) = d.dim();
    if rows != cols {
        return Err(Error::NotSquare { rows, cols });
    }
    if rows == 0 {
        return Err(Error::EmptyInput {
            what: "dissimilarity matrix is 0 x 0".into(),
        });
    }
    check_finite(d, "dissimilarity matrix")?;
    let get = |i: usize, j: usize| d[[i, j]].to_f64().unwrap_or(f64::NAN);
    let bad = (0..rows).into_par_iter().find_map_first(|i| {
        (0..cols).find_map(|j| {
            let a = get(i, j);
            if a < 0.0 {
                return Some(Error::NegativeDissimilarity { i, j, value: a });
            }
            if j < i {
                let b = get(j, i);
                if (a - b).abs() > tol * (1.0 + a.abs().max(b.abs())) {
                    return Some(Error::NotSymmetric {
                        i: j,
                        j: i,
                        a: b,
                        b: a,
                    });
                }
            }
            None
        })
    });
    bad.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn points_errors_name_the_cell() {
        let x = array![[1.0f64, 2.0], [3.0, f64::NAN]];
        let e = check_points(x.view()).unwrap_err().to_string();
        assert_eq!(e, "non-finite value NaN in data at row 1, column 1");
        let x = array![[1.0f32, f32::INFINITY]];
        assert!(check_points(x.view())
            .unwrap_err()
            .to_string()
            .contains("row 0, column 1"));
        let empty = ndarray::Array2::<f64>::zeros((0, 3));
        assert!(matches!(
            check_points(empty.view()),
            Err(Error::EmptyInput { .. })
        ));
        let nocols = ndarray::Array2::<f64>::zeros((3, 0));
        assert!(matches!(
            check_points(nocols.view()),
            Err(Error::EmptyInput { .. })
        ));
    }

    #[test]
    fn k_bounds() {
        assert!(check_k(1, 1).is_ok());
        assert!(check_k(0, 5).unwrap_err().to_string().contains("k = 0"));
        assert!(check_k(6, 5).unwrap_err().to_string().contains("n = 5"));
    }

    #[test]
    fn dissimilarity_checks() {
        let ok = array![[0.0, 1.0], [1.0 + 1e-9, 0.0]];
        assert!(check_dissimilarity_matrix(ok.view(), SYMMETRY_TOL).is_ok());
        let asym = array![[0.0, 1.0], [1.5, 0.0]];
        let e = check_dissimilarity_matrix(asym.view(), SYMMETRY_TOL).unwrap_err();
        assert!(matches!(e, Error::NotSymmetric { i: 0, j: 1, .. }), "{e}");
        let neg = array![[0.0, -1.0], [-1.0, 0.0]];
        assert!(matches!(
            check_dissimilarity_matrix(neg.view(), SYMMETRY_TOL),
            Err(Error::NegativeDissimilarity { i: 0, j: 1, .. })
        ));
        let rect = ndarray::Array2::<f64>::zeros((2, 3));
        assert_eq!(
            check_dissimilarity_matrix(rect.view(), SYMMETRY_TOL)
                .unwrap_err()
                .to_string(),
            "dissimilarity matrix must be square, got 2 x 3"
        );
        let ints = array![[0i32, 3], [3, 0]];
        assert!(check_dissimilarity_matrix(ints.view(), 0.0).is_ok());
    }
}
