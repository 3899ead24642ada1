//! Functional data for MagmaClust: tasks (curves, time series) with their own, possibly
//! irregular inputs, matched on a union grid as MagmaClustR does: every input is keyed on 6
//! significant digits (R's `signif(x, 6)`), the grid is the sorted set of distinct keys, and
//! each task is a selection of grid points (a duplicated input inside one task is an error).
//! Inputs may be multi-dimensional; the grid is then sorted lexicographically.
//!
//! The long format is MagmaClustR's: a CSV with a header holding `ID`, `Output` and one or
//! more input columns (`Input`, or any other numeric columns), one row per observation.

use crate::error::{Error, Result};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use std::collections::BTreeMap;
use std::path::Path;

/// R's `signif(x, 6)`: `x` rounded to 6 significant digits.
pub fn signif6(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let e = x.abs().log10().floor() as i32;
    let scale = 10f64.powi(5 - e);
    (x * scale).round() / scale
}

/// A total-order key of an input point (coordinates rounded to 6 significant digits).
fn key(x: ArrayView1<f64>) -> Vec<u64> {
    // Order-preserving bits of the rounded values (sign flipped for a total order).
    x.iter()
        .map(|&v| {
            let b = signif6(v).to_bits();
            if b >> 63 == 1 {
                !b
            } else {
                b | (1 << 63)
            }
        })
        .collect()
}

/// One task: its observations.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    /// Identifier.
    pub id: String,
    /// Inputs, N_i × d.
    pub inputs: Array2<f64>,
    /// Outputs, N_i.
    pub outputs: Array1<f64>,
}

/// A set of tasks with their union grid.
#[derive(Clone, Debug, PartialEq)]
pub struct Tasks {
    /// The tasks, in the order given.
    pub tasks: Vec<Task>,
    /// The union grid of all inputs (N × d), sorted.
    pub grid: Array2<f64>,
    /// For each task, the grid row of each of its observations.
    pub index: Vec<Vec<usize>>,
}

impl Tasks {
    /// Checks the tasks (non-empty, same input dimension, finite values, no duplicated input
    /// inside a task), sorts each task's points by input (as the reference's
    /// `arrange(ID, Input)`, so that results do not depend on the order of the points) and
    /// builds the union grid.
    pub fn new(mut tasks: Vec<Task>) -> Result<Self> {
        if tasks.is_empty() {
            return Err(Error::EmptyInput {
                what: "no tasks".into(),
            });
        }
        let d = tasks[0].inputs.ncols();
        let mut all: BTreeMap<Vec<u64>, Vec<f64>> = BTreeMap::new();
        for t in &tasks {
            if t.inputs.nrows() == 0 {
                return Err(Error::EmptyInput {
                    what: format!("task {} has no observations", t.id),
                });
            }
            if t.inputs.ncols() != d || t.inputs.nrows() != t.outputs.len() {
                return Err(Error::ShapeMismatch {
                    what: format!("task {}", t.id),
                    expected: format!("{} inputs of dimension {d} and as many outputs", t.outputs.len()),
                    got: format!(
                        "{} x {} inputs, {} outputs",
                        t.inputs.nrows(),
                        t.inputs.ncols(),
                        t.outputs.len()
                    ),
                });
            }
            crate::data::validate::check_finite(t.inputs.view(), "task inputs")?;
            if let Some((i, v)) = t.outputs.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(Error::NonFinite {
                    what: "task outputs",
                    row: i,
                    col: 0,
                    value: *v,
                });
            }
            let mut seen = std::collections::HashSet::new();
            for row in t.inputs.rows() {
                let k = key(row);
                if !seen.insert(k.clone()) {
                    return Err(Error::param(
                        "inputs",
                        format!("{row}"),
                        format!(
                            "task {} has this input twice (inputs are matched on 6 significant digits)",
                            t.id
                        ),
                    ));
                }
                all.entry(k)
                    .or_insert_with(|| row.iter().map(|&v| signif6(v)).collect());
            }
        }
        for t in tasks.iter_mut() {
            let mut order: Vec<usize> = (0..t.outputs.len()).collect();
            order.sort_by_cached_key(|&a| key(t.inputs.row(a)));
            if order.windows(2).any(|w| w[0] > w[1]) {
                t.inputs = t.inputs.select(ndarray::Axis(0), &order);
                t.outputs = t.outputs.select(ndarray::Axis(0), &order);
            }
        }
        let position: BTreeMap<&Vec<u64>, usize> = all.keys().enumerate().map(|(i, k)| (k, i)).collect();
        let points: Vec<&Vec<f64>> = all.values().collect();
        let grid = Array2::from_shape_fn((points.len(), d), |(i, j)| points[i][j]);
        let index = tasks
            .iter()
            .map(|t| t.inputs.rows().into_iter().map(|r| position[&key(r)]).collect())
            .collect();
        Ok(Tasks { tasks, grid, index })
    }

    /// Number of tasks.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether there are no tasks (never, once built).
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Reads MagmaClustR's long format: a CSV with a header naming `ID` and `Output`; every
    /// other column is an input coordinate. Rows of one ID form a task, in order of first
    /// appearance.
    ///
    /// Every task needs at least `min_points` observations (2 to train: one point says
    /// nothing about a curve). Errors name the task and the line: a missing column, a cell
    /// that is not a number, an input seen twice in a task, a task with too few points.
    pub fn read_long(path: impl AsRef<Path>, min_points: usize) -> Result<Self> {
        let path = path.as_ref();
        let bad = |line: Option<usize>, m: String| Error::parse(path, line, None, m);
        let mut r = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .from_path(path)
            .map_err(|e| bad(None, e.to_string()))?;
        let header = r.headers().map_err(|e| bad(Some(1), e.to_string()))?.clone();
        let find = |name: &str| header.iter().position(|h| h.eq_ignore_ascii_case(name));
        let (id_col, out_col) = match (find("ID"), find("Output")) {
            (Some(i), Some(o)) => (i, o),
            _ => {
                return Err(bad(
                    Some(1),
                    "the header must name an ID and an Output column".into(),
                ))
            }
        };
        let input_cols: Vec<usize> = (0..header.len())
            .filter(|&c| c != id_col && c != out_col)
            .collect();
        if input_cols.is_empty() {
            return Err(bad(Some(1), "no input column (e.g. Input)".into()));
        }
        struct Rows {
            inputs: Vec<f64>,
            outputs: Vec<f64>,
            first_line: usize,
            seen: BTreeMap<Vec<u64>, usize>,
        }
        let mut order: Vec<String> = Vec::new();
        let mut rows: BTreeMap<String, Rows> = BTreeMap::new();
        for (line, rec) in r.records().enumerate() {
            let line = line + 2;
            let rec = rec.map_err(|e| bad(Some(line), e.to_string()))?;
            let id = rec.get(id_col).unwrap_or("").to_string();
            let num = |c: usize| -> Result<f64> {
                let cell = rec.get(c).unwrap_or("");
                cell.parse::<f64>().map_err(|_| {
                    Error::parse(
                        path,
                        Some(line),
                        Some(c + 1),
                        format!("task {id}: cannot parse {cell:?} as a number"),
                    )
                })
            };
            let entry = rows.entry(id.clone()).or_insert_with(|| {
                order.push(id.clone());
                Rows {
                    inputs: Vec::new(),
                    outputs: Vec::new(),
                    first_line: line,
                    seen: BTreeMap::new(),
                }
            });
            let x: Vec<f64> = input_cols.iter().map(|&c| num(c)).collect::<Result<_>>()?;
            if let Some(before) = entry.seen.insert(key(ArrayView1::from(&x)), line) {
                return Err(bad(
                    Some(line),
                    format!(
                        "task {id} has input {x:?} twice (also on line {before}; inputs are matched on 6 significant digits)"
                    ),
                ));
            }
            entry.inputs.extend(x);
            entry.outputs.push(num(out_col)?);
        }
        if order.is_empty() {
            return Err(bad(None, "no data rows".into()));
        }
        if let Some(id) = order.iter().find(|id| rows[*id].outputs.len() < min_points) {
            let r = &rows[id];
            return Err(bad(
                Some(r.first_line),
                format!(
                    "task {id} has {} point(s); at least {min_points} per task are needed",
                    r.outputs.len()
                ),
            ));
        }
        let d = input_cols.len();
        let tasks = order
            .into_iter()
            .map(|id| {
                let r = rows.remove(&id).expect("seen");
                Task {
                    inputs: Array2::from_shape_vec((r.outputs.len(), d), r.inputs).expect("n x d"),
                    outputs: Array1::from(r.outputs),
                    id,
                }
            })
            .collect();
        Tasks::new(tasks)
    }
}

/// A grid extended by more points: the sorted union (on 6 significant digits) of `grid`'s
/// rows and every row of `extra`, with the new position of each old row and of each extra row.
pub fn extend_grid(
    grid: ArrayView2<f64>,
    extra: &[ArrayView2<f64>],
) -> (Array2<f64>, Vec<usize>, Vec<Vec<usize>>) {
    let d = grid.ncols();
    let mut all: BTreeMap<Vec<u64>, Vec<f64>> = BTreeMap::new();
    for row in grid.rows().into_iter().chain(extra.iter().flat_map(|e| e.rows())) {
        all.entry(key(row))
            .or_insert_with(|| row.iter().map(|&v| signif6(v)).collect());
    }
    let position: BTreeMap<&Vec<u64>, usize> = all.keys().enumerate().map(|(i, k)| (k, i)).collect();
    let points: Vec<&Vec<f64>> = all.values().collect();
    let new = Array2::from_shape_fn((points.len(), d), |(i, j)| points[i][j]);
    let old = grid.rows().into_iter().map(|r| position[&key(r)]).collect();
    let extra_pos = extra
        .iter()
        .map(|e| e.rows().into_iter().map(|r| position[&key(r)]).collect())
        .collect();
    (new, old, extra_pos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn task(id: &str, x: &[f64], y: &[f64]) -> Task {
        Task {
            id: id.into(),
            inputs: Array2::from_shape_vec((x.len(), 1), x.to_vec()).unwrap(),
            outputs: Array1::from(y.to_vec()),
        }
    }

    #[test]
    fn union_grid_matches_on_six_significant_digits() {
        assert_eq!(signif6(1.23456789), 1.23457);
        assert_eq!(signif6(-0.000123456789), -0.000123457);
        let t = Tasks::new(vec![
            task("a", &[2.0, 0.5, 1.0], &[1.0, 2.0, 3.0]),
            task("b", &[1.0000001, 3.0], &[4.0, 5.0]),
        ])
        .unwrap();
        assert_eq!(t.grid, array![[0.5], [1.0], [2.0], [3.0]]);
        assert_eq!(t.index, vec![vec![0, 1, 2], vec![1, 3]]);
        assert_eq!(t.tasks[0].outputs, array![2.0, 3.0, 1.0]); // sorted by input
        let dup = Tasks::new(vec![task("c", &[1.0, 1.0000004], &[1.0, 2.0])]).unwrap_err();
        assert!(dup.to_string().contains("task c has this input twice"), "{dup}");
        let negative = Tasks::new(vec![task("n", &[-1.0, -2.0, 0.0], &[1.0, 2.0, 3.0])]).unwrap();
        assert_eq!(negative.grid, array![[-2.0], [-1.0], [0.0]]);
        let extra = array![[-1.5], [0.0], [4.0]];
        let (g, old, new) = extend_grid(negative.grid.view(), &[extra.view()]);
        assert_eq!(g, array![[-2.0], [-1.5], [-1.0], [0.0], [4.0]]);
        assert_eq!((old, new), (vec![0, 2, 3], vec![vec![1, 3, 4]]));
    }

    #[test]
    fn reads_the_long_format() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.csv");
        std::fs::write(&p, "ID,Input,Output\nx,0,1.5\nx,1,2.5\ny,0.5,3\n").unwrap();
        let t = Tasks::read_long(&p, 1).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t.tasks[0].id, "x");
        assert_eq!(t.tasks[1].outputs, array![3.0]);
        assert_eq!(t.grid.nrows(), 3);
        std::fs::write(&p, "ID,Input,Output\nx,0,1.5\nx,abc,2\n").unwrap();
        let e = Tasks::read_long(&p, 1).unwrap_err().to_string();
        assert!(
            e.contains("line 3") && e.contains("task x") && e.contains("abc"),
            "{e}"
        );
        std::fs::write(&p, "ID,Input,Output\nx,0,1.5\nx,1,2.5\ny,0.5,3\n").unwrap();
        let e = Tasks::read_long(&p, 2).unwrap_err().to_string();
        assert!(e.contains("line 4") && e.contains("task y has 1 point"), "{e}");
        std::fs::write(&p, "ID,Input,Output\nx,0,1.5\nx,1,2.5\nx,1.0000001,3\n").unwrap();
        let e = Tasks::read_long(&p, 2).unwrap_err().to_string();
        assert!(
            e.contains("line 4") && e.contains("task x") && e.contains("line 3"),
            "{e}"
        );
        std::fs::write(&p, "Task,Input,Value\n").unwrap();
        assert!(Tasks::read_long(&p, 1)
            .unwrap_err()
            .to_string()
            .contains("ID and an Output"));
    }
}
