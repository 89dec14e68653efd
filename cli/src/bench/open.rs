//! `xg bench open`: how long opening a bundle takes as its precomputed
//! masks grow, and what they save on the first masks.
//!
//! One grammar of quoted strings with distinct bounds (`"\"" [^"\\]{0,K}
//! "\""`, each bound its own set of dense mask entries), large enough for
//! the largest size asked for, is written with more and more of its
//! entries precomputed — the tables stay the same, only the masks grow —
//! and each bundle is opened again and again from a temporary file. Then
//! the first masks of a walk into each string are timed with the bundle's
//! entries and with entries built on first use.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use clap::Args;
use xg_compiler::{Request, pipeline};
use xg_runtime::bundle::{self, Masks, Precompute};
use xg_runtime::{Grammar, Matcher, Vocabulary};

use super::summary::percentile;
use crate::trace::Model;

/// `xg bench open`'s options.
#[derive(Args)]
pub(crate) struct OpenArgs {
    /// The model's `tokenizer.json`.
    #[arg(long)]
    tokenizer: PathBuf,
    /// Bundle sizes to try, in megabytes of precomputed masks (about).
    #[arg(long, value_delimiter = ',', default_values_t = [1, 10, 60])]
    megabytes: Vec<usize>,
    /// Opens timed per bundle.
    #[arg(long, default_value_t = 200)]
    opens: usize,
}

/// The grammar with `rules` string rules of distinct bounds.
fn grammar_text(rules: usize) -> String {
    let names: Vec<String> = (0..rules).map(|k| format!("s{k}")).collect();
    let mut text = format!("root ::= {}\n", names.join(" | "));
    for k in 0..rules {
        let _ = writeln!(
            text,
            "s{k} ::= \"\\\"{k}:\" [^\"\\\\]{{0,{}}} \"\\\"\"",
            300 + 7 * k
        );
    }
    text
}

fn compile(text: &str) -> Result<Arc<Grammar>> {
    let mut request = Request::ahead_of_time();
    let file = request.add("bench.xg", text);
    let grammar = pipeline::grammar(&mut request, file, "root");
    let (grammar, _) = request.finish(grammar)?;
    Ok(Arc::new(grammar))
}

/// Runs the benchmark; prints one line per bundle size.
pub(crate) fn run(args: &OpenArgs) -> Result<bool> {
    let model = Model {
        tokenizer: &args.tokenizer,
        config: None,
        stop: &[],
    };
    let load = || -> Result<Arc<Vocabulary>> { Ok(Arc::new(model.load()?.0)) };
    let vocabulary = load()?;
    // Bytes of masks per string rule, from a bundle of one.
    let one = compile(&grammar_text(1))?;
    let one_masks = Masks::precompute(&one, &vocabulary, Precompute::All);
    let per_rule = bundle::write(&one, Some(&one_masks))?.len();
    let per_entry = per_rule / one_masks.len().max(1);
    let largest = args.megabytes.iter().copied().max().unwrap_or(1);
    let rules = (largest << 20).div_ceil(per_rule).max(1);
    let grammar = compile(&grammar_text(rules))?;
    let dir = std::env::temp_dir().join(format!("xg-bench-open-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    outln!(
        "{rules} string rules; tables of {} bytes\n",
        grammar.to_bundle()?.len()
    );
    outln!(
        "{:>8} {:>8}  {:>9} {:>9} {:>9}  {:>12} {:>12}",
        "MB",
        "entries",
        "open p50",
        "open p90",
        "open max",
        "first masks",
        "without"
    );
    for &megabytes in &args.megabytes {
        let entries = (megabytes << 20) / per_entry.max(1);
        let masks = Masks::precompute(&grammar, &vocabulary, Precompute::Costliest(entries));
        let bytes = bundle::write(&grammar, Some(&masks))?;
        let path = dir.join(format!("{megabytes}.xgb"));
        std::fs::write(&path, &bytes)?;
        let mut times: Vec<f64> = (0..args.opens.max(1))
            .map(|_| {
                let started = Instant::now();
                let opened = Grammar::open(&path, Some(&vocabulary));
                let micros = started.elapsed().as_secs_f64() * 1e6;
                opened.map(|_| micros)
            })
            .collect::<Result<_, _>>()?;
        times.sort_by(f64::total_cmp);
        // First masks through every string: entries from the bundle, then
        // built on first use (each with an empty cache).
        let first_masks = |with_bundle: bool| -> Result<f64> {
            let fresh = load()?;
            let grammar = if with_bundle {
                Arc::new(Grammar::open(&path, Some(&fresh))?)
            } else {
                Arc::clone(&grammar)
            };
            let mut mask = vec![0; fresh.mask_words()];
            let started = Instant::now();
            for k in 0..rules {
                let mut matcher =
                    Matcher::with_vocabulary(Arc::clone(&grammar), Arc::clone(&fresh));
                matcher.accept_str(&format!("\"{k}:ab"))?;
                matcher.fill_next_token_bitmask(&mut mask)?;
            }
            Ok(started.elapsed().as_secs_f64() * 1e3)
        };
        let (with, without) = (first_masks(true)?, first_masks(false)?);
        outln!(
            "{:>8.1} {:>8}  {:>7.1}µs {:>7.1}µs {:>7.1}µs  {:>10.1}ms {:>10.1}ms",
            megabytes_of(bytes.len()),
            masks.len(),
            percentile(&times, 500),
            percentile(&times, 900),
            percentile(&times, 1000),
            with,
            without
        );
        std::fs::remove_file(&path)?;
    }
    std::fs::remove_dir(&dir)?;
    Ok(true)
}

#[allow(
    clippy::cast_precision_loss,
    reason = "bundle sizes stay far below 2^52"
)]
fn megabytes_of(bytes: usize) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}
