//! The default memory limit sees the control group's limit: inside a cgroup limited to
//! 300 MiB, a fit whose estimate is above it stops with exit 2 and the estimate instead of
//! being killed. Needs permission to create a cgroup (root on cgroup v1, or a delegated v2
//! subtree); where that is refused the test says so and passes without checking.

use std::path::PathBuf;
use std::process::Command;

/// A fresh memory cgroup limited to `bytes`, or `None` when this machine does not allow one.
fn limited_cgroup(bytes: u64) -> Option<PathBuf> {
    let name = format!("clustr-test-{}", std::process::id());
    for (root, limit_file) in [
        ("/sys/fs/cgroup/memory", "memory.limit_in_bytes"),
        ("/sys/fs/cgroup", "memory.max"),
    ] {
        let dir = PathBuf::from(root).join(&name);
        if std::fs::create_dir(&dir).is_ok() {
            if std::fs::write(dir.join(limit_file), bytes.to_string()).is_ok() {
                return Some(dir);
            }
            let _ = std::fs::remove_dir(&dir);
        }
    }
    None
}

#[test]
fn a_fit_above_the_cgroup_limit_stops_with_its_estimate() {
    let Some(cgroup) = limited_cgroup(300 << 20) else {
        eprintln!("skipped: cannot create a memory cgroup here");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("points.csv");
    let rows: String = (0..30_000).map(|i| format!("{},{}\n", i % 173, i % 91)).collect();
    std::fs::write(&input, rows).unwrap();
    // The shell moves itself into the cgroup, then becomes clustr.
    let script = format!(
        "echo $$ > {} && exec {} fasterpam {} --k 5 --quiet",
        cgroup.join("cgroup.procs").display(),
        env!("CARGO_BIN_EXE_clustr"),
        input.display()
    );
    let out = Command::new("sh").arg("-c").arg(&script).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // clustr has exited, so the cgroup is empty and can go.
    let _ = std::fs::remove_dir(&cgroup);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("needs 6.7 GiB but only"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
