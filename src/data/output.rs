//! Output files, written so that no run loses data.
//!
//! - **Whole or not at all.** Every output is written to a temporary file in the folder of its
//!   target and renamed over the target only when complete ([`atomic_write`]). A failure, a
//!   panic or Ctrl-C ([`remove_pending_outputs`]) leaves no partial file.
//! - **All or none.** Between [`stage_outputs`] and [`commit_staged`], finished outputs wait
//!   as temporaries; the commit renames them all, and if one rename fails, the targets already
//!   replaced get their old content back (kept as hard-linked backups until every rename has
//!   succeeded). [`discard_staged`] removes the waiting temporaries, leaving every existing
//!   file untouched. The command line stages every run.
//! - **Never over an input, never twice.** [`check_outputs`] refuses, before any work, an
//!   output that is an input or another output: by device and inode where the file exists
//!   (hard links, symbolic links, `./`, `..`, absolute paths alike) and by resolved path
//!   (symbolic links followed, folder canonical) where it does not. An existing folder,
//!   device or pipe is not an output either: renaming over it would replace it.
//! - **Symbolic links are written through**, as a shell redirection does: the file the link
//!   points to is replaced, the link stays.
//! - **Recognisable temporaries.** Temporaries are named `.clustr-<pid>-<random>.tmp` (and
//!   `.clustr-<pid>-<random>.bak.tmp` for the backups of a commit). A process killed outright
//!   (SIGKILL, power loss) cannot remove its own; the next run that writes into the same
//!   folder removes those of processes no longer running that are older than itself.

use crate::error::{Error, Result};
use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

/// Prefix of every temporary file clustr creates.
const TEMP_PREFIX: &str = ".clustr-";

/// Writes to `path` atomically: the content goes to a temporary file in the target's folder,
/// which is renamed over the target only when `write` succeeds (or, while outputs are staged,
/// at [`commit_staged`]). On failure nothing is left.
pub fn atomic_write(path: &Path, write: impl FnOnce(&mut File) -> Result<()>) -> Result<()> {
    let mut tmp = temp_beside(path)?;
    write(tmp.as_file_mut())?;
    tmp.persist()
}

/// Whether a file can be created at `path` (its folder exists and is writable), checked by
/// creating and removing a temporary file beside it; the error names `path`.
pub fn check_writable(path: &Path) -> Result<()> {
    temp_beside(path).map(drop)
}

/// Locks a mutex whose data stay valid even if a holder panicked.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Temporary files being written or staged, so that an interrupted run can remove them.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Removes every temporary output file still being written or staged: for a Ctrl-C handler,
/// which then exits, so that an interrupted run leaves no partial output.
pub fn remove_pending_outputs() {
    for p in lock(&PENDING).drain(..) {
        let _ = std::fs::remove_file(p);
    }
}

/// Whether finished outputs wait for [`commit_staged`].
static STAGING: AtomicBool = AtomicBool::new(false);

/// Finished outputs waiting for [`commit_staged`]: (temporary, target).
static STAGED: Mutex<Vec<(tempfile::TempPath, PathBuf)>> = Mutex::new(Vec::new());

/// From now on, finished outputs (of every thread of the process) wait as temporaries until
/// [`commit_staged`] (all renamed) or [`discard_staged`] (all removed), so a run with several
/// outputs writes all or none. Either ends the staging.
pub fn stage_outputs() {
    STAGING.store(true, Ordering::SeqCst);
}

/// Removes every staged output (the targets stay as they were) and ends the staging.
pub fn discard_staged() {
    STAGING.store(false, Ordering::SeqCst);
    let staged = std::mem::take(&mut *lock(&STAGED));
    for (tmp, _) in staged {
        unregister(&tmp);
        drop(tmp); // deletes the file
    }
}

/// Renames every staged output over its target: all of them, or, if one rename fails, none
/// (the targets replaced so far get their old content back). Ends the staging; returns the
/// targets written.
pub fn commit_staged() -> Result<Vec<PathBuf>> {
    STAGING.store(false, Ordering::SeqCst);
    let staged = std::mem::take(&mut *lock(&STAGED));
    // Existing targets are kept as hard links until every rename has succeeded.
    let backups: Vec<Option<tempfile::TempPath>> = staged.iter().map(|(_, target)| backup(target)).collect();
    let mut done: Vec<PathBuf> = Vec::with_capacity(staged.len());
    let mut failure = None;
    let mut rest = staged.into_iter();
    for (tmp, target) in rest.by_ref() {
        let tmp_path = tmp.to_path_buf();
        match tmp.persist(&target) {
            Ok(()) => {
                unregister(&tmp_path);
                done.push(target);
            }
            Err(e) => {
                unregister(&e.path);
                failure = Some(Error::io(&target, e.error));
                break; // e.path is dropped here: the temporary is removed
            }
        }
    }
    for (tmp, _) in rest {
        unregister(&tmp);
    }
    if let Some(err) = failure {
        for (target, backup) in done.iter().zip(&backups) {
            let _ = match backup {
                Some(b) => std::fs::rename(b, target),
                None => std::fs::remove_file(target),
            };
        }
        return Err(err); // the backups left are removed as they drop
    }
    Ok(done)
}

/// A hard link to `target` beside it, when it exists as a file (and the file system has hard
/// links): the content to restore if a commit fails. Removed when dropped.
fn backup(target: &Path) -> Option<tempfile::TempPath> {
    if !std::fs::metadata(target).is_ok_and(|m| m.is_file()) {
        return None;
    }
    temp_builder(".bak.tmp")
        .make_in(folder_of(target), |b| std::fs::hard_link(target, b))
        .ok()
        .map(|f| f.into_temp_path())
}

/// Names `.clustr-<pid>-<random><suffix>`.
fn temp_builder(suffix: &'static str) -> tempfile::Builder<'static, 'static> {
    static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let prefix = PREFIX.get_or_init(|| format!("{TEMP_PREFIX}{}-", std::process::id()));
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix.as_str()).suffix(suffix);
    builder
}

fn unregister(tmp: &Path) {
    lock(&PENDING).retain(|p| p != tmp);
}

/// A temporary output file, registered in [`PENDING`] from creation until it is persisted
/// or dropped (which deletes it).
pub(crate) struct TempOutput {
    /// The file (taken when persisted).
    file: Option<tempfile::NamedTempFile>,
    /// The file it becomes (symbolic links resolved).
    target: PathBuf,
}

impl TempOutput {
    fn file(&self) -> &tempfile::NamedTempFile {
        self.file.as_ref().expect("present until persisted")
    }

    /// The open file.
    pub(crate) fn as_file_mut(&mut self) -> &mut File {
        self.file.as_mut().expect("present until persisted").as_file_mut()
    }

    /// A second handle on the file.
    pub(crate) fn reopen(&self) -> std::io::Result<File> {
        self.file().reopen()
    }

    /// Moves the file into place, or, while outputs are staged, hands it to the commit.
    pub(crate) fn persist(mut self) -> Result<()> {
        let tmp = self
            .file
            .take()
            .expect("present until persisted")
            .into_temp_path();
        let target = std::mem::take(&mut self.target);
        if STAGING.load(Ordering::SeqCst) {
            let mut staged = lock(&STAGED);
            // A second output to the same target replaces the first (the CLI refuses that
            // earlier; a library caller writing one path twice gets the later content).
            staged.retain(|(old, t)| {
                if *t == target {
                    unregister(old);
                }
                *t != target
            });
            staged.push((tmp, target));
            return Ok(());
        }
        let tmp_path = tmp.to_path_buf();
        let result = tmp.persist(&target).map_err(|e| Error::io(&target, e.error));
        unregister(&tmp_path);
        result
    }
}

impl Drop for TempOutput {
    fn drop(&mut self) {
        // A file not persisted is removed by tempfile as it drops.
        if let Some(f) = &self.file {
            unregister(f.path());
        }
    }
}

/// The folder of `path` (`.` for a bare file name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Where writing `path` lands: symbolic links followed to their final target, the folder
/// made canonical. The error names `path` and says why no file can be created there.
pub fn resolve_output(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&p).map_err(|e| Error::io(path, e))?;
                p = folder_of(&p).join(target);
            }
            _ => break,
        }
    }
    let name = p.file_name().ok_or_else(|| {
        Error::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"),
        )
    })?;
    let dir = folder_of(&p);
    let canonical = dir.canonicalize().map_err(|e| {
        use std::io::ErrorKind::*;
        let why = match e.kind() {
            NotFound => "cannot create the file: its folder does not exist",
            NotADirectory => "cannot create the file: part of its folder path is not a folder",
            PermissionDenied => "cannot create the file: permission denied",
            _ => "cannot create the file: its folder cannot be opened",
        };
        Error::io(path, std::io::Error::new(e.kind(), why))
    })?;
    Ok(canonical.join(name))
}

/// The identity of an existing file: (device, inode) on Unix, the canonical path elsewhere.
#[derive(Clone, Debug, PartialEq, Eq)]
enum FileId {
    #[cfg(unix)]
    Inode(u64, u64),
    #[cfg_attr(unix, allow(dead_code))]
    Path(PathBuf),
}

fn file_id(path: &Path) -> Option<FileId> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(FileId::Inode(meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        path.canonicalize().ok().map(FileId::Path)
    }
}

/// One file a command reads or writes, with the name it goes by (such as `--labels-out`).
#[derive(Clone, Copy, Debug)]
pub struct NamedPath<'a> {
    /// How the caller refers to it, e.g. an option name (empty for a positional argument).
    pub name: &'a str,
    /// The path as given.
    pub path: &'a Path,
}

impl std::fmt::Display for NamedPath<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.name.is_empty() {
            write!(f, "{}", self.path.display())
        } else {
            write!(f, "{} {}", self.name, self.path.display())
        }
    }
}

/// Checks, before any work, that every output can be written without losing data: its folder
/// exists and takes new files, it is not an existing folder, device or pipe, it is none of the
/// `inputs`, and no two outputs are the same file. Files are compared by identity (device and
/// inode) where they exist and by resolved path otherwise, never by spelling.
pub fn check_outputs(inputs: &[NamedPath], outputs: &[NamedPath]) -> Result<()> {
    let conflict = |msg: String| Error::OutputConflict(msg);
    let mut seen: Vec<(NamedPath, PathBuf, Option<FileId>)> = Vec::new();
    for out in outputs {
        let resolved = resolve_output(out.path)?;
        match std::fs::metadata(&resolved) {
            Ok(m) if m.is_dir() => {
                return Err(conflict(format!(
                    "{out}: is a folder; give the name of a file to write"
                )))
            }
            Ok(m) if !m.is_file() => {
                return Err(conflict(format!(
                    "{out}: is not a regular file (a device, pipe or socket); outputs are written \
                     to a new file renamed over the path, which would replace it"
                )))
            }
            _ => {}
        }
        let id = file_id(&resolved);
        if let Some((prev, ..)) = seen
            .iter()
            .find(|(_, r, i)| *r == resolved || (id.is_some() && *i == id))
        {
            return Err(conflict(format!(
                "{out} and {prev} are the same file; give each output its own file"
            )));
        }
        for input in inputs {
            let same = match (&id, file_id(input.path)) {
                (Some(a), Some(b)) => *a == b,
                _ => false,
            };
            if same {
                return Err(conflict(format!(
                    "{out} is the input {input}; an output never replaces an input: choose \
                     another file"
                )));
            }
        }
        check_writable(&resolved).map_err(|e| match e {
            Error::Io { source, .. } => Error::io(out.path, source),
            e => e,
        })?;
        seen.push((*out, resolved, id));
    }
    Ok(())
}

/// When this process started writing (the age limit of stale temporaries).
fn run_started() -> SystemTime {
    static STARTED: std::sync::OnceLock<SystemTime> = std::sync::OnceLock::new();
    *STARTED.get_or_init(SystemTime::now)
}

/// Whether process `pid` is still running.
fn alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    #[cfg(target_os = "linux")]
    {
        Path::new("/proc").join(pid.to_string()).exists()
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        // SAFETY: signal 0 only checks that the process exists; nothing is sent.
        let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// Removes, once per folder and run, the temporaries of clustr processes that no longer run
/// and that are older than this run (left by a process killed outright).
fn remove_stale_temporaries(dir: &Path) {
    static CLEANED: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
    let started = run_started();
    if !lock(&CLEANED)
        .get_or_insert_with(HashSet::new)
        .insert(dir.to_path_buf())
    {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(pid) = stale_candidate_pid(name) else {
            continue;
        };
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t < started);
        if old && !alive(pid) && entry.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The process id in a clustr temporary's name `.clustr-<pid>-<random>.tmp`.
fn stale_candidate_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(TEMP_PREFIX)?.strip_suffix(".tmp")?;
    let (pid, random) = rest.split_once('-')?;
    (!random.is_empty()).then_some(())?;
    pid.parse().ok()
}

/// A temporary file in the folder of `path`'s resolved target (so the final rename stays on
/// one file system), removed when dropped unless persisted.
pub(crate) fn temp_beside(path: &Path) -> Result<TempOutput> {
    let target = resolve_output(path)?;
    let dir = folder_of(&target);
    remove_stale_temporaries(dir);
    let mut builder = temp_builder(".tmp");
    // Output files get the usual permissions (0666 less the umask), not tempfile's 0600.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let file = builder.tempfile_in(dir).map_err(|e| {
        // Name the output the user asked for, not the temporary file.
        use std::io::ErrorKind::*;
        let why = match e.kind() {
            NotFound => "cannot create the file: this folder does not take new files".to_string(),
            NotADirectory => "cannot create the file: part of its folder path is not a folder".into(),
            PermissionDenied => "cannot create the file: permission denied".into(),
            ReadOnlyFilesystem => "cannot create the file: read-only file system".into(),
            other => format!("cannot create the file: {other}"),
        };
        Error::io(path, std::io::Error::new(e.kind(), why))
    })?;
    lock(&PENDING).push(file.path().to_path_buf());
    Ok(TempOutput {
        file: Some(file),
        target,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporaries_are_recognised_by_name() {
        assert_eq!(stale_candidate_pid(".clustr-1234-AbC123.tmp"), Some(1234));
        assert_eq!(stale_candidate_pid(".clustr-1234-bak5.bak.tmp"), Some(1234));
        assert_eq!(stale_candidate_pid(".clustr-AbC123.tmp"), None);
        assert_eq!(stale_candidate_pid("clustr-1-x.tmp"), None);
        assert_eq!(stale_candidate_pid(".clustr-1-.tmp"), None);
    }

    #[test]
    fn outputs_are_compared_by_identity() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let input = d.join("in.csv");
        std::fs::write(&input, "1\n").unwrap();
        fn named<'a>(name: &'a str, path: &'a Path) -> NamedPath<'a> {
            NamedPath { name, path }
        }
        let dotted = d.join(".").join("in.csv");
        let ins = [named("INPUT", input.as_path())];
        let e = check_outputs(&ins, &[named("--out", dotted.as_path())]).unwrap_err();
        assert!(e.to_string().contains("is the input"), "{e}");
        let a = d.join("a.csv");
        let a2 = d.join("sub").join("..").join("a.csv");
        std::fs::create_dir(d.join("sub")).unwrap();
        let e = check_outputs(
            &[],
            &[named("--out", a.as_path()), named("--labels-out", a2.as_path())],
        )
        .unwrap_err();
        assert!(e.to_string().contains("same file"), "{e}");
        #[cfg(unix)]
        {
            let link = d.join("link.csv");
            std::os::unix::fs::symlink(&input, &link).unwrap();
            assert!(check_outputs(&ins, &[named("--out", link.as_path())]).is_err());
            let hard = d.join("hard.csv");
            std::fs::hard_link(&input, &hard).unwrap();
            assert!(check_outputs(&ins, &[named("--out", hard.as_path())]).is_err());
            // A dangling link and its target, both not yet existing: one file.
            let dangling = d.join("dangling.csv");
            std::os::unix::fs::symlink(d.join("new.csv"), &dangling).unwrap();
            let new = d.join("new.csv");
            assert!(check_outputs(
                &[],
                &[named("--out", dangling.as_path()), named("--x", new.as_path())]
            )
            .is_err());
        }
        let e = check_outputs(&[], &[named("--out", d.join("sub").as_path())]).unwrap_err();
        assert!(e.to_string().contains("is a folder"), "{e}");
        assert!(check_outputs(&ins, &[named("--out", a.as_path())]).is_ok());
    }
}
