//! scripts/check-deps.py, the check of the library's dependency directions CI runs: it
//! passes on this tree and fails on a copy with an upward import added (a core module naming
//! a family, or a lower core layer naming a higher one, which would close a circle), with a
//! family importing another family, and through a re-export of lib.rs.

use std::path::Path;
use std::process::Command;

fn check(root: &Path) -> (bool, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-deps.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(root)
        .output()
        .expect("python3 runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A copy of src/ with `line` appended to `file`.
fn with_line(file: &str, line: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &dir.path().join("src"),
    );
    let path = dir.path().join("src").join(file);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(line);
    std::fs::write(path, text).unwrap();
    dir
}

#[test]
fn this_tree_follows_the_allowed_directions() {
    let (ok, out) = check(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(ok, "{out}");
}

#[test]
fn an_upward_import_fails_the_check() {
    let dir = with_line("backend/cpu.rs", "\nuse crate::kmedoids::KMedoids;\n");
    let (ok, out) = check(dir.path());
    assert!(!ok);
    assert!(
        out.contains("src/backend/cpu.rs:") && out.contains("backend (core layer 6) -> kmedoids (family)"),
        "{out}"
    );
}

/// The core's own layers: the lowest (`scalar`) importing the backend, `metric` importing
/// `dissim`, and `dissim` importing the backend (which imports `dissim`: a circle) all fail,
/// as does an edge between two modules of one layer.
#[test]
fn a_lower_core_layer_importing_a_higher_one_fails() {
    for (file, line, edge) in [
        (
            "scalar/mod.rs",
            "use crate::backend::Backend as _;",
            "scalar (core layer 1) -> backend (core layer 6)",
        ),
        (
            "metric.rs",
            "use crate::dissim::Dissimilarity as _;",
            "metric (core layer 3) -> dissim (core layer 5)",
        ),
        (
            "dissim.rs",
            "use crate::backend::Backend as _;",
            "dissim (core layer 5) -> backend (core layer 6)",
        ),
        (
            "linalg.rs",
            "use crate::metric::Metric as _;",
            "linalg (core layer 3) -> metric (core layer 3)",
        ),
    ] {
        let dir = with_line(file, &format!("\n{line}\n"));
        let (ok, out) = check(dir.path());
        assert!(!ok && out.contains(edge), "{file}: {out}");
        assert_eq!(out.lines().count(), 1, "{out}");
    }
}

#[test]
fn a_family_importing_another_fails_unless_allowed() {
    let dir = with_line(
        "kmedoids/init.rs",
        "\nfn f() { let _ = crate::density::Dbscan::new(1.0, 2); }\n",
    );
    let (ok, out) = check(dir.path());
    assert!(
        !ok && out.contains("kmedoids (family) -> density (family)"),
        "{out}"
    );
    // mixture -> kmeans is one of the allowed edges.
    let dir = with_line("mixture/ppp.rs", "\nuse crate::kmeans::KMeans as _;\n");
    assert!(check(dir.path()).0);
}

#[test]
fn a_grouped_or_reexported_path_counts_as_its_module() {
    // In a family, `crate::Scalar` is core (re-exported from scalar); `density` in the group
    // is another family.
    let dir = with_line(
        "kmedoids/init.rs",
        "\nuse crate::{\n    Scalar as _,\n    density::Dbscan as _,\n};\n",
    );
    let (ok, out) = check(dir.path());
    assert!(
        !ok && out.contains("kmedoids (family) -> density (family)"),
        "{out}"
    );
    assert_eq!(out.lines().count(), 1, "{out}");
    // In the core, a path through the crate root is refused: the core names modules.
    let dir = with_line("comm.rs", "\nuse crate::Scalar as _;\n");
    let (ok, out) = check(dir.path());
    assert!(!ok && out.contains("through the crate root's re-export"), "{out}");
}
