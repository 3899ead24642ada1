//! Our .npy reader and writer against ndarray-npy, an independent implementation of the
//! format: every supported dtype, C and Fortran order, both directions.

use clustr::data::npy::NpyWriter;
use clustr::data::{read_labels, NpyFile};
use ndarray::{Array1, Array2, ShapeBuilder};
use ndarray_npy::{read_npy, write_npy};

fn sample() -> Array2<f64> {
    Array2::from_shape_fn((7, 5), |(i, j)| (i * 5 + j) as f64 * 0.5 - 3.0)
}

#[test]
fn reads_what_ndarray_npy_writes() {
    let dir = tempfile::tempdir().unwrap();
    let x = sample();
    let p = dir.path().join("c_f64.npy");
    write_npy(&p, &x).unwrap();
    assert_eq!(NpyFile::open(&p).unwrap().to_array::<f64>().unwrap(), x);
    assert_eq!(
        NpyFile::open(&p).unwrap().rows::<f64>(3, 6).unwrap(),
        x.slice(ndarray::s![3..6, ..])
    );

    let p = dir.path().join("c_f32.npy");
    write_npy(&p, &x.mapv(|v| v as f32)).unwrap();
    assert_eq!(NpyFile::open(&p).unwrap().to_array::<f64>().unwrap(), x);

    // Fortran order: the same values laid out column-major.
    let mut f = Array2::<f64>::zeros((7, 5).f());
    f.assign(&x);
    let p = dir.path().join("f_f64.npy");
    write_npy(&p, &f).unwrap();
    let file = NpyFile::open(&p).unwrap();
    assert!(file.header().fortran_order);
    assert_eq!(file.to_array::<f64>().unwrap(), x);
    assert_eq!(
        file.rows::<f32>(2, 4).unwrap(),
        x.slice(ndarray::s![2..4, ..]).mapv(|v| v as f32)
    );

    let ints = Array2::from_shape_fn((3, 2), |(i, j)| (i as i64 - 1) * 1000 + j as i64);
    let p = dir.path().join("i64.npy");
    write_npy(&p, &ints).unwrap();
    assert_eq!(
        NpyFile::open(&p).unwrap().to_array::<f64>().unwrap(),
        ints.mapv(|v| v as f64)
    );
    let p = dir.path().join("i32.npy");
    write_npy(&p, &ints.mapv(|v| v as i32)).unwrap();
    assert_eq!(
        NpyFile::open(&p).unwrap().to_array::<f64>().unwrap(),
        ints.mapv(|v| v as f64)
    );

    let labels = Array1::from(vec![2i32, -1, 0, 7]);
    let p = dir.path().join("labels.npy");
    write_npy(&p, &labels).unwrap();
    assert_eq!(read_labels(&p).unwrap(), vec![2, -1, 0, 7]);
}

#[test]
fn ndarray_npy_reads_what_we_write() {
    let dir = tempfile::tempdir().unwrap();
    let x = sample().mapv(|v| v as f32);
    let p = dir.path().join("ours.npy");
    let mut w = NpyWriter::<f32>::create(&p, 7, 5).unwrap();
    w.write_rows(x.slice(ndarray::s![..3, ..])).unwrap();
    // A non-contiguous block takes the element-by-element path.
    let tail = x.slice(ndarray::s![3.., ..]).t().to_owned();
    w.write_rows(tail.t()).unwrap();
    w.finish().unwrap();
    let back: Array2<f32> = read_npy(&p).unwrap();
    assert_eq!(back, x);

    let p = dir.path().join("labels.npy");
    clustr::data::write_labels(&p, &[3, -1, 0]).unwrap();
    let l: Array1<i32> = read_npy(&p).unwrap();
    assert_eq!(l.to_vec(), vec![3, -1, 0]);

    let p = dir.path().join("m.npy");
    clustr::data::write_matrix(&p, sample().view(), &[]).unwrap();
    let m: Array2<f64> = read_npy(&p).unwrap();
    assert_eq!(m, sample());
}
