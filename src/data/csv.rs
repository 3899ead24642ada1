//! Reading delimited text: header auto-detected (a first line of non-numbers only) or forced,
//! delimiter `,` `;` or tab (sniffed from the first line), an optional label column. Errors
//! name the file, line and column.

use super::columns::ColumnSelection;
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use ndarray::Array2;
use std::collections::HashMap;
use std::path::Path;

/// Which column holds labels (removed from the data matrix).
#[derive(Clone, Debug, PartialEq)]
pub enum LabelColumn {
    /// The last column.
    Last,
    /// Zero-based column index.
    Index(usize),
    /// Column named in the header.
    Name(String),
}

/// Options for [`read_csv`].
#[derive(Clone, Debug, Default)]
pub struct CsvOptions {
    /// Field delimiter; sniffed from the first line when `None`.
    pub delimiter: Option<u8>,
    /// Whether the first line is a header; detected when `None`: a header is a first line
    /// whose cells are all non-numbers, so a data row with one bad cell is reported as an
    /// error on its line, never silently dropped as a header.
    pub has_header: Option<bool>,
    /// The label column, if any.
    pub label_column: Option<LabelColumn>,
    /// The columns read as data (all by default); the others are skipped unparsed.
    pub columns: ColumnSelection,
}

/// A numeric table read from a delimited file.
#[derive(Clone, Debug)]
pub struct Table<F> {
    /// The data, rows = points.
    pub data: Array2<F>,
    /// Labels from the label column: integers as written, other text numbered by first
    /// appearance from 0.
    pub labels: Option<Vec<i64>>,
    /// Column names of `data` when the file had a header.
    pub header: Option<Vec<String>>,
}

/// Reads a delimited file of numbers.
pub fn read_csv<F: Scalar>(path: impl AsRef<Path>, opts: &CsvOptions) -> Result<Table<F>> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    parse_csv(&bytes, path, opts)
}

fn sniff_delimiter(bytes: &[u8]) -> u8 {
    let first = bytes
        .split(|&b| b == b'\n')
        .find(|l| !l.iter().all(u8::is_ascii_whitespace))
        .unwrap_or(&[]);
    let count = |d: u8| first.iter().filter(|&&b| b == d).count();
    [b',', b';', b'\t']
        .into_iter()
        .max_by_key(|&d| (count(d), d == b','))
        .unwrap_or(b',')
}

fn parse_number(cell: &str) -> Option<f64> {
    cell.trim().parse::<f64>().ok()
}

/// Parses delimited text (`source` names it in errors).
pub fn parse_csv<F: Scalar>(bytes: &[u8], source: &Path, opts: &CsvOptions) -> Result<Table<F>> {
    let delimiter = opts.delimiter.unwrap_or_else(|| sniff_delimiter(bytes));
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let mut records = Vec::new();
    for rec in reader.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map(|p| p.line() as usize);
            Error::parse(source, line, None, format!("malformed CSV: {e}"))
        })?;
        let line = rec.position().map_or(0, |p| p.line() as usize);
        if rec.len() == 1 && rec[0].is_empty() {
            continue; // blank line
        }
        records.push((line, rec));
    }
    let Some((_, first)) = records.first() else {
        return Err(Error::parse(source, None, None, "file has no data rows"));
    };
    let ncols = first.len();
    let has_header = opts
        .has_header
        .unwrap_or_else(|| first.iter().all(|c| parse_number(c).is_none()));
    let header: Option<Vec<String>> = has_header.then(|| first.iter().map(str::to_string).collect());
    let label_idx = match &opts.label_column {
        None => None,
        Some(LabelColumn::Last) => Some(ncols - 1),
        Some(LabelColumn::Index(i)) if *i < ncols => Some(*i),
        Some(LabelColumn::Index(i)) => {
            return Err(Error::param(
                "label column",
                i,
                format!("the file has {ncols} columns"),
            ))
        }
        Some(LabelColumn::Name(name)) => Some(
            header
                .as_ref()
                .and_then(|h| h.iter().position(|c| c == name))
                .ok_or_else(|| Error::param("label column", name, "no such column in the header"))?,
        ),
    };
    let rows = &records[usize::from(has_header)..];
    if rows.is_empty() {
        return Err(Error::parse(
            source,
            None,
            None,
            "file has a header but no data rows",
        ));
    }
    let mut read = vec![false; ncols];
    for c in opts.columns.resolve(ncols, header.as_deref())? {
        read[c] = Some(c) != label_idx;
    }
    let d = read.iter().filter(|&&r| r).count();
    if d == 0 {
        return Err(Error::param(
            "columns",
            "",
            "no data column is left (only the label column)",
        ));
    }
    let mut data = Array2::<F>::zeros((rows.len(), d));
    let mut raw_labels = Vec::new();
    for (r, (line, rec)) in rows.iter().enumerate() {
        if rec.len() != ncols {
            return Err(Error::parse(
                source,
                Some(*line),
                None,
                format!(
                    "expected {ncols} fields (as on the first line), found {}",
                    rec.len()
                ),
            ));
        }
        let mut j = 0;
        for (c, cell) in rec.iter().enumerate() {
            if Some(c) == label_idx {
                raw_labels.push(cell.to_string());
            }
            if !read[c] {
                continue;
            }
            data[[r, j]] = parse_cell(cell, source, *line, c)?;
            j += 1;
        }
    }
    let labels = label_idx.map(|_| factorize(&raw_labels));
    let header = header.map(|h| {
        h.into_iter()
            .enumerate()
            .filter(|(c, _)| read[*c])
            .map(|(_, s)| s)
            .collect()
    });
    Ok(Table { data, labels, header })
}

/// The number in `cell` (line `line`, 0-based column `c` of `source`) in element type `F`:
/// an empty cell, a non-number, or a finite number beyond `F`'s range is an error naming the
/// cell.
fn parse_cell<F: Scalar>(cell: &str, source: &Path, line: usize, c: usize) -> Result<F> {
    let v = parse_number(cell).ok_or_else(|| {
        let what = if cell.is_empty() {
            "empty cell".to_string()
        } else {
            format!("cannot parse {cell:?} as a number")
        };
        Error::parse(source, Some(line), Some(c + 1), what)
    })?;
    let converted = F::from_f64_lossy(v);
    if v.is_finite() && !converted.is_finite() {
        return Err(Error::parse(
            source,
            Some(line),
            Some(c + 1),
            format!(
                "{cell} is beyond the range of {} (±{:.3e}); read it as float64",
                F::DTYPE,
                F::max_value().to_f64_exact()
            ),
        ));
    }
    Ok(converted)
}

/// Integers as written when every label is an integer; otherwise each distinct text gets the
/// next id in order of first appearance.
pub(crate) fn factorize(raw: &[String]) -> Vec<i64> {
    if let Ok(ints) = raw
        .iter()
        .map(|s| s.trim().parse::<i64>())
        .collect::<std::result::Result<Vec<_>, _>>()
    {
        return ints;
    }
    let mut ids: HashMap<&str, i64> = HashMap::new();
    raw.iter()
        .map(|s| {
            let next = ids.len() as i64;
            *ids.entry(s.as_str()).or_insert(next)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, opts: &CsvOptions) -> Result<Table<f64>> {
        parse_csv(text.as_bytes(), Path::new("x.csv"), opts)
    }

    #[test]
    fn header_delimiter_and_labels() {
        let t = parse(
            "a;b;class\n1;2;x\n3;4.5;y\n5;6;x\n",
            &CsvOptions {
                label_column: Some(LabelColumn::Name("class".into())),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(t.data, ndarray::array![[1.0, 2.0], [3.0, 4.5], [5.0, 6.0]]);
        assert_eq!(t.labels, Some(vec![0, 1, 0]));
        assert_eq!(t.header, Some(vec!["a".to_string(), "b".to_string()]));
        let t = parse("1\t2\n3\t4\n", &CsvOptions::default()).unwrap();
        assert_eq!(t.data, ndarray::array![[1.0, 2.0], [3.0, 4.0]]);
        assert!(t.header.is_none());
        let t = parse(
            "1,2,7\n3,4,-1\n",
            &CsvOptions {
                label_column: Some(LabelColumn::Last),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(t.labels, Some(vec![7, -1]));
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = parse("a,b\n1,2\n3\n", &CsvOptions::default())
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "x.csv: line 3: expected 2 fields (as on the first line), found 1"
        );
        let e = parse("1,2\n3,abc\n", &CsvOptions::default())
            .unwrap_err()
            .to_string();
        assert_eq!(e, "x.csv: line 2, column 2: cannot parse \"abc\" as a number");
        let e = parse("1,2\n3,\n", &CsvOptions::default())
            .unwrap_err()
            .to_string();
        assert_eq!(e, "x.csv: line 2, column 2: empty cell");
        assert!(parse("", &CsvOptions::default())
            .unwrap_err()
            .to_string()
            .contains("no data rows"));
        assert!(parse("a,b\n", &CsvOptions::default())
            .unwrap_err()
            .to_string()
            .contains("no data rows"));
    }

    #[test]
    fn nan_cells_parse_for_validation_to_report() {
        let t = parse("1,nan\n2,3\n", &CsvOptions::default()).unwrap();
        assert!(t.data[[0, 1]].is_nan());
    }
}
