//! The summary table of a MaskBench run: per engine, what compiled, what
//! was accepted and rejected, and the time distributions; again on the
//! files every engine compiled, with per-token times over the instances
//! every engine accepted (like for like); the peers' times as multiples of
//! xg's; and the files with the slowest steps.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::Outcome;

/// Distribution figures of one engine.
struct Figures {
    files: usize,
    compiled: usize,
    errors: usize,
    timeouts: usize,
    valid: (usize, usize),
    invalid: (usize, usize),
    ttfm: Vec<f64>,
    tokens: Vec<f64>,
    /// Grammars that computed masks without the mask cache.
    uncached: usize,
}

impl Figures {
    /// The figures of `outcomes`, per-token times from the tests `timed`
    /// keeps (by outcome and test index).
    fn of<'a>(
        outcomes: impl Iterator<Item = &'a Outcome>,
        timed: &dyn Fn(&Outcome, usize) -> bool,
    ) -> Self {
        let mut figures = Figures {
            files: 0,
            compiled: 0,
            errors: 0,
            timeouts: 0,
            valid: (0, 0),
            invalid: (0, 0),
            ttfm: Vec::new(),
            tokens: Vec::new(),
            uncached: 0,
        };
        for outcome in outcomes {
            figures.files += 1;
            if outcome.timeout {
                figures.timeouts += 1;
            } else if outcome.compile_error.is_some() {
                figures.errors += 1;
            }
            if let Some(us) = outcome.compile_us {
                figures.compiled += 1;
                figures.ttfm.push(us);
            }
            let mut first = 0;
            for (test, &(_, _, steps)) in outcome.tests.iter().enumerate() {
                if timed(outcome, test) {
                    figures
                        .tokens
                        .extend(&outcome.token_us[first..first + steps]);
                }
                first += steps;
            }
            // Steps of a test cut short by the timeout.
            if timed(outcome, outcome.tests.len()) {
                figures.tokens.extend(&outcome.token_us[first..]);
            }
            figures.uncached += usize::from(outcome.cache_fallback.is_some());
            for &(valid, accepted, _) in &outcome.tests {
                if valid {
                    figures.valid.1 += 1;
                    figures.valid.0 += usize::from(accepted);
                } else {
                    figures.invalid.1 += 1;
                    figures.invalid.0 += usize::from(!accepted);
                }
            }
        }
        figures.ttfm.sort_by(f64::total_cmp);
        figures.tokens.sort_by(f64::total_cmp);
        figures
    }
}

/// The value below which `permille` thousandths of the sorted `values`
/// lie (nearest rank; NaN if there are none).
pub(crate) fn percentile(values: &[f64], permille: usize) -> f64 {
    match values.len() {
        0 => f64::NAN,
        n => values[((n - 1) * permille.min(1000) + 500) / 1000],
    }
}

#[allow(clippy::cast_precision_loss, reason = "counts stay far below 2^52")]
fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Percentiles shown for time to first mask, in thousandths.
const TTFM_PERCENTILES: [(&str, usize); 4] =
    [("p50", 500), ("p90", 900), ("p99", 990), ("max", 1000)];

/// Percentiles shown for per-token times, in thousandths.
const TOKEN_PERCENTILES: [(&str, usize); 5] = [
    ("p50", 500),
    ("p90", 900),
    ("p99", 990),
    ("p99.9", 999),
    ("max", 1000),
];

/// The summary of `outcomes` for the engines `names`, as text.
pub(crate) fn table(outcomes: &[Outcome], names: &[&'static str]) -> String {
    let mut out = String::new();
    section(&mut out, "all files", outcomes, names, |_| true, &|_, _| {
        true
    });
    let uncached: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| o.cache_fallback.is_some())
        .collect();
    if !uncached.is_empty() {
        let _ = writeln!(out, "masks computed without the mask cache:");
        for o in uncached {
            let why = o.cache_fallback.as_deref().unwrap_or_default();
            let _ = writeln!(out, "  {} {}: {why}", o.engine, o.file);
        }
    }
    if names.len() > 1 {
        let compiled_by = |name: &str| -> HashSet<&str> {
            outcomes
                .iter()
                .filter(|o| o.engine == name && o.compile_us.is_some() && !o.timeout)
                .map(|o| o.file.as_str())
                .collect()
        };
        let mut common = compiled_by(names[0]);
        for name in &names[1..] {
            let other = compiled_by(name);
            common.retain(|file| other.contains(file));
        }
        // Per file, the tests every engine accepted.
        let mut accepted_by_all: std::collections::HashMap<&str, Vec<bool>> =
            std::collections::HashMap::new();
        for o in outcomes.iter().filter(|o| common.contains(o.file.as_str())) {
            let accepted: Vec<bool> = o.tests.iter().map(|t| t.1).collect();
            accepted_by_all
                .entry(o.file.as_str())
                .and_modify(|all| {
                    for (a, b) in all.iter_mut().zip(&accepted) {
                        *a &= b;
                    }
                    all.truncate(accepted.len());
                })
                .or_insert(accepted);
        }
        out.push('\n');
        section(
            &mut out,
            &format!(
                "files every engine compiled ({}); per-token times over the instances every engine accepted",
                common.len()
            ),
            outcomes,
            names,
            |o| common.contains(o.file.as_str()),
            &|o, test| {
                accepted_by_all
                    .get(o.file.as_str())
                    .is_some_and(|all| all.get(test).copied().unwrap_or(false))
            },
        );
    }
    out
}

fn section(
    out: &mut String,
    title: &str,
    outcomes: &[Outcome],
    names: &[&'static str],
    keep: impl Fn(&Outcome) -> bool,
    timed: &dyn Fn(&Outcome, usize) -> bool,
) {
    let figures: Vec<Figures> = names
        .iter()
        .map(|name| {
            Figures::of(
                outcomes.iter().filter(|o| o.engine == *name && keep(o)),
                timed,
            )
        })
        .collect();
    let _ = writeln!(out, "== {title} ==");
    let _ = write!(out, "{:<28}", "");
    for name in names {
        let _ = write!(out, "{name:>16}");
    }
    out.push('\n');
    let mut row = |label: &str, cell: &dyn Fn(&Figures) -> String| {
        let _ = write!(out, "{label:<28}");
        for f in &figures {
            let _ = write!(out, "{:>16}", cell(f));
        }
        out.push('\n');
    };
    row("files", &|f| f.files.to_string());
    row("compiled", &|f| f.compiled.to_string());
    row("compile errors", &|f| f.errors.to_string());
    row("timeouts", &|f| f.timeouts.to_string());
    row("valid accepted", &|f| {
        format!("{}/{}", f.valid.0, f.valid.1)
    });
    row("invalid rejected", &|f| {
        format!("{}/{}", f.invalid.0, f.invalid.1)
    });
    let us = |v: f64| format!("{v:.1}");
    row("TTFM mean (us)", &|f| us(mean(&f.ttfm)));
    for (name, permille) in TTFM_PERCENTILES {
        row(&format!("TTFM {name} (us)"), &|f| {
            us(percentile(&f.ttfm, permille))
        });
    }
    row("tokens", &|f| f.tokens.len().to_string());
    row("per-token mean (us)", &|f| us(mean(&f.tokens)));
    for (name, permille) in TOKEN_PERCENTILES {
        row(&format!("per-token {name} (us)"), &|f| {
            us(percentile(&f.tokens, permille))
        });
    }
    for (label, bound) in [("steps over 1 ms", 1e3), ("steps over 10 ms", 1e4)] {
        row(label, &|f| {
            f.tokens.iter().filter(|&&t| t > bound).count().to_string()
        });
    }
    row("masks without cache", &|f| f.uncached.to_string());
    if figures.len() > 1 {
        let _ = writeln!(out, "-- time as a multiple of {}'s --", names[0]);
        let base = &figures[0];
        let mut ratio_row = |label: &str, stat: &dyn Fn(&Figures) -> f64| {
            let _ = write!(out, "{label:<28}");
            for f in &figures {
                let _ = write!(out, "{:>16}", format!("{:.2}x", stat(f) / stat(base)));
            }
            out.push('\n');
        };
        ratio_row("TTFM mean", &|f| mean(&f.ttfm));
        ratio_row("TTFM p50", &|f| percentile(&f.ttfm, 500));
        ratio_row("per-token mean", &|f| mean(&f.tokens));
        ratio_row("per-token p50", &|f| percentile(&f.tokens, 500));
        ratio_row("per-token p99", &|f| percentile(&f.tokens, 990));
        ratio_row("per-token p99.9", &|f| percentile(&f.tokens, 999));
        ratio_row("per-token max", &|f| percentile(&f.tokens, 1000));
        ratio_row("TTFM p99", &|f| percentile(&f.ttfm, 990));
    }
}

/// Per engine, the `count` files with the highest mean step.
pub(crate) fn worst(outcomes: &[Outcome], names: &[&'static str], count: usize) -> String {
    let mut out = String::new();
    if count == 0 {
        return out;
    }
    for name in names {
        let mut files: Vec<(&Outcome, f64)> = outcomes
            .iter()
            .filter(|o| o.engine == *name && !o.token_us.is_empty())
            .map(|o| (o, mean(&o.token_us)))
            .collect();
        files.sort_by(|a, b| b.1.total_cmp(&a.1));
        let _ = writeln!(
            out,
            "\n-- {name}: the {count} files with the highest mean step --"
        );
        let _ = writeln!(
            out,
            "{:>12} {:>12} {:>8} {:>12}  file",
            "mean (us)", "max (us)", "steps", "TTFM (us)"
        );
        for (o, mean) in files.into_iter().take(count) {
            let max = o.token_us.iter().copied().fold(0.0, f64::max);
            let ttfm = o
                .compile_us
                .map_or_else(|| "-".to_string(), |t| format!("{t:.0}"));
            let _ = writeln!(
                out,
                "{mean:>12.1} {max:>12.1} {:>8} {ttfm:>12}  {}",
                o.token_us.len(),
                o.file
            );
        }
    }
    out
}
