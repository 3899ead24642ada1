//! Progress bars and timing.

use super::*;

/// A progress bar of `len` `unit`s (rows, fits) on stderr when it is a terminal and not
/// `--quiet`; hidden otherwise.
pub fn progress_bar(len: u64, what: &str, unit: &str, out: &OutputArgs) -> indicatif::ProgressBar {
    if out.quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{msg}} [{{bar:40}}] {{pos}}/{{len}} {unit}, {{elapsed}} (eta {{eta}})"
        ))
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}

/// Seconds since `t`.
pub fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// A progress bar driven by an algorithm's progress callback (hidden when not a terminal or
/// with --quiet): after the reading spinner of [`load_points`], it names the phase the fit is
/// in (distances, features, init, kernel matrix, then iteration i of at most max), the rate,
/// the time spent and the most time left.
pub fn iteration_bar(
    max_iter: usize,
    what: &str,
    out: &OutputArgs,
) -> (indicatif::ProgressBar, clustr::ProgressFn) {
    let bar = if out.quiet || !std::io::stderr().is_terminal() {
        indicatif::ProgressBar::hidden()
    } else {
        let b = indicatif::ProgressBar::new(max_iter as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{prefix} [{bar:30}] {pos}/{len} {msg} ({per_sec}, {elapsed}, at most {eta} left)",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        b.set_prefix(format!("{what}: starting"));
        b
    };
    let (b, phases) = (bar.clone(), bar.clone());
    let (name, phase_name) = (what.to_string(), what.to_string());
    let f = clustr::ProgressFn::new(move |p: &clustr::Progress| {
        b.set_prefix(format!("{name}: iteration"));
        b.set_position(p.iteration as u64);
        if let Some(o) = p.objective {
            b.set_message(format!("loss {o:.6e}"));
        }
    })
    .with_phases(move |phase| phases.set_prefix(format!("{phase_name}: {phase}")));
    (bar, f)
}
