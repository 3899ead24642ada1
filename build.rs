//! Records the commit the command-line tool is built from, for `clustr --version`
//! (`unknown` outside a git checkout, such as a build from a source archive).

fn main() {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=CLUSTR_COMMIT={commit}");
    // Re-run when HEAD moves: HEAD itself (a checkout) and the branch it names (a commit).
    if let Some(git_dir) = git(&["rev-parse", "--git-dir"]) {
        let git_dir = std::path::PathBuf::from(git_dir);
        println!("cargo:rerun-if-changed={}", git_dir.join("HEAD").display());
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            let reference = git_dir.join(branch);
            if reference.exists() {
                println!("cargo:rerun-if-changed={}", reference.display());
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
