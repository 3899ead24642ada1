//! Fuzzing of the input readers on the stable toolchain (issue #9; `cargo fuzz` needs
//! nightly, which this project's machines cannot fetch): proptest feeds arbitrary bytes, and
//! mutations of valid files, to the CSV parser, the .npy reader, the label reader and the
//! MagmaClust long-format reader. Each must return `Ok` or `Err`, never panic or hang.
//! CI runs 256 cases per target; `scripts/fuzz.sh` runs each for a set time with many more.

mod common;
use clustr::data::{csv::parse_csv, read_labels, CsvOptions, NpyFile};
use clustr::gp::Tasks;
use proptest::prelude::*;
use std::path::Path;

fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// A valid .npy of `rows × cols` f64 (or another dtype), to mutate.
fn npy(descr: &str, rows: usize, cols: usize) -> Vec<u8> {
    let mut v = common::npy_header(descr, rows, cols);
    v.extend(std::iter::repeat_n(0x3fu8, rows * cols * 8));
    v
}

/// Bytes: arbitrary, or a valid seed with a few bytes overwritten, inserted or cut.
fn mutated(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let n = seeds.len();
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        (
            0..n,
            proptest::collection::vec((any::<u16>(), any::<u8>(), 0u8..3), 1..8)
        )
            .prop_map(move |(i, edits)| {
                let mut v = seeds[i].clone();
                for (at, byte, op) in edits {
                    let at = if v.is_empty() {
                        0
                    } else {
                        at as usize % (v.len() + 1)
                    };
                    match op {
                        0 if at < v.len() => v[at] = byte,
                        1 => v.insert(at, byte),
                        _ => v.truncate(at),
                    }
                }
                v
            }),
    ]
}

fn file_with(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn csv_parser(bytes in mutated(vec![
        b"a,b,label\n1,2,x\n3,4,y\n".to_vec(),
        b"1;2;3\n4;5;6\n".to_vec(),
        b"1\t2\n\"3\"\t4e5\n-inf\tnan\n".to_vec(),
    ])) {
        let _ = parse_csv::<f64>(&bytes, Path::new("fuzz.csv"), &CsvOptions::default());
        let _ = parse_csv::<f32>(&bytes, Path::new("fuzz.csv"), &CsvOptions::default());
    }

    #[test]
    fn npy_reader(bytes in mutated(vec![npy("<f8", 3, 2), npy("<i4", 2, 2), npy("<f4", 1, 5), npy("|u1", 4, 1)])) {
        let dir = tempfile::tempdir().unwrap();
        let p = file_with(dir.path(), "x.npy", &bytes);
        if let Ok(f) = NpyFile::open(&p) {
            let _ = f.dim();
            let _ = f.to_array::<f64>();
            let _ = f.to_array::<f32>();
            let _ = f.to_labels();
        }
        let _ = read_labels(&p);
    }

    #[test]
    fn label_reader(bytes in mutated(vec![b"label\n1\n2\n-1\n".to_vec(), b"a\nb\na\n".to_vec()])) {
        let dir = tempfile::tempdir().unwrap();
        let _ = read_labels(file_with(dir.path(), "l.csv", &bytes));
    }

    #[test]
    fn magmaclust_long_format(bytes in mutated(vec![
        b"ID,Input,Output\na,0,1\na,1,2\nb,0.5,3\nb,2,1\n".to_vec(),
        b"ID,Input,Input2,Output\n1,0,0,1\n1,1,1,2\n".to_vec(),
    ])) {
        let dir = tempfile::tempdir().unwrap();
        let p = file_with(dir.path(), "t.csv", &bytes);
        let _ = Tasks::read_long(&p, 1);
        let _ = Tasks::read_long(&p, 2);
    }
}
