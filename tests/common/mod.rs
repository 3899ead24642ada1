//! Helpers shared by the integration tests.

/// A version-1 .npy header for a C-order `rows × cols` array of `descr` (e.g. `<f8`).
#[allow(dead_code)] // not every test binary uses every helper
pub fn npy_header(descr: &str, rows: usize, cols: usize) -> Vec<u8> {
    let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend((h.len() as u16).to_le_bytes());
    b.extend(h.as_bytes());
    b
}

/// Runs `f` on a pool of `threads` threads.
#[allow(dead_code)] // not every test binary uses every helper
pub fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

/// Runs the clustr binary with `args` in `dir`, asserting that it succeeds; its standard
/// output.
#[allow(dead_code)] // not every test binary uses every helper
pub fn run_clustr(dir: &std::path::Path, args: &[&str]) -> Vec<u8> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clustr"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
