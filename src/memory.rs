//! Memory estimates, checked before a fit allocates.
//!
//! Every algorithm implements [`MemoryEstimate`]: the bytes its fit allocates for `n` points of
//! dimension `d` (input excluded), from its parameters alone. Each fit calls [`check`] before
//! its first large allocation; above [`max_memory`] it returns [`Error::TooLarge`] with the
//! estimate and the algorithm to use instead. The estimates count the terms that grow with
//! n, k, d or the feature count (labels, bounds, responsibilities, matrices, per-thread partial
//! sums); constant overheads are ignored. DBSCAN and OPTICS query neighbourhoods one point at
//! a time without storing them, so their estimate is the index and the per-point arrays.
//!
//! The limit is process-wide: 80% of the memory the process may still take, unless set with
//! [`set_max_memory`] (the CLI's `--max-memory`). What it may take is the system's available
//! memory, or less where the process's control group has a memory limit (cgroup v2
//! `memory.max`, v1 `memory.limit_in_bytes`): a container, a Slurm job or a systemd unit,
//! where going over the limit is a kill, not an error.

use crate::error::{Error, Hint, Result};
use std::sync::atomic::{AtomicU64, Ordering};

/// The bytes a fit needs, from its parameters and the input's shape.
pub trait MemoryEstimate {
    /// Bytes allocated by a fit on `n` points of dimension `d` with `elem_bytes`-byte elements
    /// (4 for f32, 8 for f64), the input itself excluded. For fits on a dissimilarity `d` is 0
    /// and `elem_bytes` is the size of one dissimilarity.
    fn memory_estimate(&self, n: usize, d: usize, elem_bytes: usize) -> u64;
}

/// 0 = not set (use the available memory).
static MAX_MEMORY: AtomicU64 = AtomicU64::new(0);

/// Sets the process-wide limit (`None` = 80% of the memory the process may still take).
pub fn set_max_memory(bytes: Option<u64>) {
    MAX_MEMORY.store(bytes.map_or(0, |b| b.max(1)), Ordering::Relaxed);
}

/// The limit checked by every fit: the value set with [`set_max_memory`], else 80% of the
/// memory the process may still take (`room`), or 8 GiB where neither the system nor the
/// control group says.
pub fn max_memory() -> u64 {
    match MAX_MEMORY.load(Ordering::Relaxed) {
        0 => room(&|p| std::fs::read_to_string(p).ok()).map_or(8 << 30, |b| b / 5 * 4),
        b => b,
    }
}

/// The memory this process may still take: the system's `MemAvailable`, and below it the
/// room left in the innermost limited control group it belongs to (limit − usage, v2 or v1),
/// read through `read` (a file's text, `None` when it cannot be read).
fn room(read: &dyn Fn(&str) -> Option<String>) -> Option<u64> {
    let available = read("/proc/meminfo").and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("MemAvailable:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb.saturating_mul(1024))
    });
    let cgroup = read("/proc/self/cgroup").and_then(|s| cgroup_room(&s, read));
    match (available, cgroup) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    }
}

/// The smallest room (limit − usage) over the control groups of `/proc/self/cgroup`'s
/// memory lines and their parents; `None` when none is limited or readable.
fn cgroup_room(self_cgroup: &str, read: &dyn Fn(&str) -> Option<String>) -> Option<u64> {
    let number = |path: String| read(&path).and_then(|s| s.trim().parse::<u64>().ok());
    let mut best: Option<u64> = None;
    for line in self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        // v2: "0::/path" with memory.max ("max" = none); v1: "N:memory:/path".
        let (root, limit_file, usage_file) = if id == "0" && controllers.is_empty() {
            ("/sys/fs/cgroup", "memory.max", "memory.current")
        } else if controllers.split(',').any(|c| c == "memory") {
            (
                "/sys/fs/cgroup/memory",
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            )
        } else {
            continue;
        };
        // The group and each of its parents (a limit on any of them applies).
        let mut dir = path.trim_end_matches('/');
        loop {
            let base = format!("{root}{dir}");
            // v1 says "no limit" with a huge number (the page-rounded i64::MAX), v2 with "max".
            if let Some(limit) = number(format!("{base}/{limit_file}")).filter(|&l| l < 1 << 60) {
                let used = number(format!("{base}/{usage_file}")).unwrap_or(0);
                let room = limit.saturating_sub(used);
                best = Some(best.map_or(room, |b| b.min(room)));
            }
            if dir.is_empty() {
                break;
            }
            dir = &dir[..dir.rfind('/').unwrap_or(0)];
        }
    }
    best
}

/// Returns [`Error::TooLarge`] when `needed` exceeds [`max_memory`]; `what` says what was to
/// be allocated, `hint` what to use instead.
pub fn check(what: impl FnOnce() -> String, needed: u64, hint: Hint) -> Result<()> {
    let limit = max_memory();
    if needed > limit {
        return Err(Error::TooLarge {
            what: what(),
            needed,
            limit,
            hint,
        });
    }
    Ok(())
}

/// Checks `params`' estimate for an input of `n` × `d` elements of `elem_bytes` bytes.
pub fn check_fit(
    params: &impl MemoryEstimate,
    algorithm: &str,
    n: usize,
    d: usize,
    elem_bytes: usize,
    hint: Hint,
) -> Result<()> {
    let needed = params.memory_estimate(n, d, elem_bytes);
    let dtype = if elem_bytes == 4 { "f32" } else { "f64" };
    check(
        || {
            if d == 0 {
                format!("{algorithm} on {n} objects")
            } else {
                format!("{algorithm} on {n} x {d} {dtype} points")
            }
        },
        needed,
        hint,
    )
}

/// `a · b · c …` in u64, saturating (estimates never overflow into small numbers).
pub fn product(terms: &[usize]) -> u64 {
    terms.iter().fold(1u64, |acc, &t| acc.saturating_mul(t as u64))
}

/// Parses a size such as `512M`, `4G`, `1.5GiB`, `100000` (bytes); K/M/G/T are powers of 1024.
/// A size of 2^64 bytes or more is refused, whichever way it is written.
pub fn parse_size(s: &str) -> Result<u64> {
    let bad = || {
        Error::param(
            "max-memory",
            s,
            "a size from 1 byte to 16 EiB less one byte, such as 512M, 4G or 1.5GiB",
        )
    };
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.parse().map_err(|_| bad())?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad()),
    };
    // Whole numbers exactly (a float would round 2^64 down to u64::MAX and accept it).
    if let Ok(whole) = num.parse::<u64>() {
        return whole
            .checked_mul(1u64 << shift)
            .filter(|&b| b >= 1)
            .ok_or_else(bad);
    }
    let bytes = v * (1u64 << shift) as f64;
    // 2^64 is the first float above every u64.
    if !(1.0..18_446_744_073_709_551_616.0).contains(&bytes) {
        return Err(bad());
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file system of given texts.
    fn files(entries: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: std::collections::HashMap<String, String> = entries
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        move |p: &str| map.get(p).cloned()
    }

    #[test]
    fn the_room_is_the_smallest_of_the_system_and_the_limited_control_groups() {
        let meminfo = "MemTotal: 32000000 kB\nMemAvailable:   20000000 kB\n";
        // No control group limit: the system's available memory.
        let v1_unlimited = files(&[
            ("/proc/meminfo", meminfo),
            ("/proc/self/cgroup", "4:memory:/job\n0::/\n"),
            (
                "/sys/fs/cgroup/memory/job/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
            (
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
        ]);
        assert_eq!(room(&v1_unlimited), Some(20_000_000 * 1024));
        // cgroup v2 (a container): memory.max − memory.current of the group.
        let v2 = files(&[
            ("/proc/meminfo", meminfo),
            ("/proc/self/cgroup", "0::/user.slice/job\n"),
            ("/sys/fs/cgroup/user.slice/job/memory.max", "4294967296\n"),
            ("/sys/fs/cgroup/user.slice/job/memory.current", "1073741824\n"),
            ("/sys/fs/cgroup/user.slice/memory.max", "max\n"),
        ]);
        assert_eq!(room(&v2), Some(3 << 30));
        // A parent's limit applies too (a Slurm job's step inside the job's group), v1.
        let v1_parent = files(&[
            ("/proc/meminfo", meminfo),
            ("/proc/self/cgroup", "7:memory:/slurm/uid_1/job_9/step_0\n"),
            (
                "/sys/fs/cgroup/memory/slurm/uid_1/job_9/step_0/memory.limit_in_bytes",
                "9223372036854771712",
            ),
            (
                "/sys/fs/cgroup/memory/slurm/uid_1/job_9/memory.limit_in_bytes",
                "2147483648",
            ),
            (
                "/sys/fs/cgroup/memory/slurm/uid_1/job_9/memory.usage_in_bytes",
                "536870912",
            ),
        ]);
        assert_eq!(room(&v1_parent), Some(1536 << 20));
        // Nothing readable: no room known (the caller falls back to 8 GiB).
        assert_eq!(room(&files(&[])), None);
        // Usage above the limit leaves no room, not an underflow.
        let over = files(&[
            ("/proc/self/cgroup", "0::/\n"),
            ("/sys/fs/cgroup/memory.max", "1000"),
            ("/sys/fs/cgroup/memory.current", "5000"),
        ]);
        assert_eq!(room(&over), Some(0));
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("100000").unwrap(), 100_000);
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("4G").unwrap(), 4 << 30);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("2 kb").unwrap(), 2048);
        assert_eq!(parse_size("18446744073709551615").unwrap(), u64::MAX);
        for bad in [
            "",
            "G",
            "-1G",
            "0",
            "1.2.3M",
            "4Q",
            "nan",
            "18446744073709551616",
            "99999999999T",
            "16384P",
            "1e30",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn products_saturate() {
        assert_eq!(product(&[3, 4, 8]), 96);
        assert_eq!(product(&[usize::MAX, usize::MAX]), u64::MAX);
    }

    #[test]
    fn the_default_limit_is_positive() {
        assert!(max_memory() > 0);
    }
}
