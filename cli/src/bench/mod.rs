//! `xg bench`: xg side by side with its peers, in one run, on the same data
//! and machine.
//!
//! `xg bench maskbench` runs MaskBench files (`{"schema": …, "tests":
//! [{"data": …, "valid": bool}]}`): per engine, the time to first mask
//! (compile plus the first mask), then every test instance written as
//! compact JSON, tokenized with the model's tokenizer and fed token by
//! token — each step timed as "fill the mask, check the token, commit it".
//! A valid instance must be accepted to its end (where the grammar can
//! stop); an invalid one must be refused at some token. One JSON line per
//! file and engine goes to `--out`, a summary table to stdout and the
//! distributions to an SVG beside the results.

mod engines;
mod open;
mod plot;
mod summary;
mod tools;

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Value, json};

use self::engines::{Engine, Setup, Slices, Xg};
use xg_compiler::json_schema::PropertyOrder;

/// The benchmarks.
#[derive(Subcommand)]
pub(crate) enum Bench {
    /// MaskBench files: time to first mask and per-token mask time, valid
    /// instances accepted and invalid ones rejected, per engine.
    Maskbench(MaskbenchArgs),
    /// Bundles: the time to open one as its precomputed masks grow (it
    /// should not grow), and the first masks with and without them.
    Open(open::OpenArgs),
    /// Tool calling: N tools per request (from BFCL files), compile time,
    /// time to first mask and per-token mask time over a realistic turn,
    /// and the mask cache shared across requests.
    Tools(tools::ToolsArgs),
}

/// `xg bench maskbench`'s options.
#[derive(Args)]
pub(crate) struct MaskbenchArgs {
    /// The model's `tokenizer.json` (the `tokenizer_config.json` beside it,
    /// if any, names the end-of-sequence token).
    #[arg(long)]
    tokenizer: PathBuf,
    /// Which engines to run.
    #[arg(long, value_enum, default_value_t = EngineChoice::All)]
    engine: EngineChoice,
    /// Files benchmarked at once, one per thread (per-token times are
    /// cleanest with at most one per core).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Fresh compile and mask caches for every schema, as a server meets a
    /// schema it has never seen; without it, one of each for the run.
    #[arg(long)]
    cold: bool,
    /// The order object properties may come in (`given`: as the schema
    /// lists them, the language LLGuidance accepts).
    #[arg(long, value_enum, default_value_t = Order::Given)]
    order: Order,
    /// The layout both engines compile: `compact` (`,` and `:`, what
    /// MaskBench's instances are written in) or `flexible` (JSON whitespace
    /// allowed around punctuation, what servers compile by default).
    #[arg(long, value_enum, default_value_t = Layout::Compact)]
    whitespace: Layout,
    /// After the summary, the N files with the highest mean step, per
    /// engine.
    #[arg(long, value_name = "N", default_value_t = 10)]
    worst: usize,
    /// Per file and engine: past this, the file is marked as timed out.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    timeout_ms: u64,
    /// Time each file's first mask and nothing after: no instances are
    /// tokenized or run, so a profile of the run is a profile of compiling.
    #[arg(long)]
    first_mask_only: bool,
    /// Where the results go, one JSON object per line per file and engine;
    /// the plot goes beside it (same name, `.svg`).
    #[arg(long)]
    out: PathBuf,
    /// MaskBench files, or directories of them.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// `--order`'s values.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Order {
    /// As the schema lists them.
    Given,
    /// Any order (xg only; LLGuidance keeps the schema's).
    Any,
}

/// `--whitespace`'s values.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Layout {
    /// No whitespace: `,` and `:`.
    Compact,
    /// JSON whitespace around punctuation (xg: runs of at most
    /// `json_schema::DEFAULT_MAX_WHITESPACE`).
    Flexible,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EngineChoice {
    Xg,
    Llguidance,
    /// Every engine this build has.
    All,
}

/// Runs a benchmark; true if it ran to the end.
pub(crate) fn run(bench: &Bench) -> Result<bool> {
    match bench {
        Bench::Maskbench(args) => maskbench(args),
        Bench::Open(args) => open::run(args),
        Bench::Tools(args) => tools::run(args),
    }
}

/// One file's outcome with one engine.
#[derive(Clone, Debug)]
pub(crate) struct Outcome {
    pub file: String,
    pub engine: &'static str,
    /// Time to first mask, in microseconds; `None` if it did not compile.
    pub compile_us: Option<f64>,
    /// The part of it the first mask took.
    pub first_mask_us: Option<f64>,
    pub compile_error: Option<String>,
    /// Every step of every test, in microseconds.
    pub token_us: Vec<f64>,
    /// `(valid, accepted, steps)` per test instance: its steps are the
    /// next `steps` of `token_us`.
    pub tests: Vec<(bool, bool, usize)>,
    pub timeout: bool,
    /// Why the grammar computed masks without the mask cache, if it did.
    pub cache_fallback: Option<String>,
}

impl Outcome {
    fn to_json(&self) -> Value {
        json!({
            "file": self.file,
            "engine": self.engine,
            "compile_us": self.compile_us,
            "first_mask_us": self.first_mask_us,
            "compile_error": self.compile_error,
            "token_us": self.token_us,
            "tests": self.tests.iter().map(|&(valid, accepted, steps)| json!({"valid": valid, "accepted": accepted, "steps": steps})).collect::<Vec<_>>(),
            "timeout": self.timeout,
            "cache_fallback": self.cache_fallback,
        })
    }
}

fn maskbench(args: &MaskbenchArgs) -> Result<bool> {
    let files = expand(&args.files)?;
    let tokenizer = crate::trace::read_tokenizer(&args.tokenizer, None)
        .and_then(|files| {
            tokenizers::Tokenizer::from_bytes(files.json).map_err(|e| anyhow::anyhow!("{e}"))
        })
        .with_context(|| format!("cannot load `{}`", args.tokenizer.display()))?;
    let setup = Setup {
        cold: args.cold,
        order: match args.order {
            Order::Given => PropertyOrder::Given,
            Order::Any => PropertyOrder::Any,
        },
        flexible: args.whitespace == Layout::Flexible,
    };
    let timeout = Duration::from_millis(args.timeout_ms);
    let engines = engines(
        &args.tokenizer,
        args.engine,
        &[],
        setup,
        Slices::Json,
        timeout,
    )?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.max(1))
        .build()
        .context("cannot start the worker threads")?;
    let out = std::sync::Mutex::new(BufWriter::new(
        File::create(&args.out)
            .with_context(|| format!("cannot write `{}`", args.out.display()))?,
    ));
    let done = std::sync::atomic::AtomicUsize::new(0);
    // A count of the files done, rewritten in place on a terminal; a log
    // (stderr not a terminal) would get it as one line of every count.
    let progress = std::io::stderr().is_terminal();
    // Each file's lines are written as soon as it is done, so a long run
    // that is stopped keeps what it measured.
    let outcomes: Vec<Result<Vec<Outcome>>> = pool.install(|| {
        use rayon::prelude::*;
        files
            .par_iter()
            .map(|path| {
                let tokenizer = (!args.first_mask_only).then_some(&tokenizer);
                let outcomes = bench_file(path, &engines, tokenizer, timeout);
                let mut out = out
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                for outcome in &outcomes {
                    writeln!(out, "{}", outcome.to_json())?;
                }
                out.flush()?;
                let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                if progress {
                    eprint!("\r{n}/{} files", files.len());
                }
                Ok(outcomes)
            })
            .collect()
    });
    if progress {
        eprintln!();
    }
    let mut all = Vec::new();
    for outcome in outcomes {
        all.extend(outcome.with_context(|| format!("cannot write `{}`", args.out.display()))?);
    }
    let outcomes = all;
    let names: Vec<&'static str> = engines.iter().map(|e| e.name()).collect();
    outln!(
        "MaskBench: {} files, {} caches, properties in {} order, {} whitespace, {} thread(s)",
        files.len(),
        if args.cold { "cold" } else { "warm" },
        if args.order == Order::Given {
            "the given"
        } else {
            "any"
        },
        if setup.flexible {
            "flexible"
        } else {
            "compact"
        },
        args.threads.max(1)
    );
    out!("{}", summary::table(&outcomes, &names));
    out!("{}", summary::worst(&outcomes, &names, args.worst));
    let svg = args.out.with_extension("svg");
    plot::svg(&outcomes, &names, &svg)?;
    outln!("\nresults: {}\nplot: {}", args.out.display(), svg.display());
    Ok(true)
}

/// The engines `choice` names, for the model's `tokenizer` (xg's stop set
/// extended by `stop`).
fn engines(
    tokenizer: &Path,
    choice: EngineChoice,
    stop: &[u32],
    setup: Setup,
    slices: Slices,
    compile_time: Duration,
) -> Result<Vec<Box<dyn Engine>>> {
    let mut engines: Vec<Box<dyn Engine>> = Vec::new();
    if matches!(choice, EngineChoice::Xg | EngineChoice::All) {
        let model = crate::trace::Model {
            tokenizer,
            config: None,
            stop,
        };
        engines.push(Box::new(Xg::new(model.load()?.0, setup)));
    }
    if matches!(choice, EngineChoice::Llguidance | EngineChoice::All) {
        #[cfg(feature = "llguidance")]
        engines.push(Box::new(engines::llguidance_engine::Llguidance::new(
            tokenizer,
            slices,
            compile_time,
            setup.flexible,
        )?));
        #[cfg(not(feature = "llguidance"))]
        {
            let _ = (slices, compile_time, setup.flexible);
            if choice == EngineChoice::Llguidance {
                bail!("this xg was built without LLGuidance: build with `--features llguidance`");
            }
            eprintln!(
                "note: this xg was built without LLGuidance (`--features llguidance`); running xg only"
            );
        }
    }
    Ok(engines)
}

/// The files of `paths`, directories expanded to their `.json` files, sorted.
fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut inside: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("cannot list `{}`", path.display()))?
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect();
            inside.sort();
            files.extend(inside);
        } else {
            files.push(path.clone());
        }
    }
    if files.is_empty() {
        bail!("no MaskBench files given");
    }
    Ok(files)
}

/// One file through every engine: its first mask, then its instances,
/// tokenized with `tokenizer` (none without one).
fn bench_file(
    path: &Path,
    engines: &[Box<dyn Engine>],
    tokenizer: Option<&tokenizers::Tokenizer>,
    timeout: Duration,
) -> Vec<Outcome> {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let document = std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str::<Value>(&text).map_err(|e| e.to_string()));
    let (schema, tests) = match &document {
        Ok(doc) => (
            doc.get("schema").cloned().unwrap_or(Value::Null),
            tokenizer.map_or(Ok(Vec::new()), |tokenizer| tokenize_tests(doc, tokenizer)),
        ),
        Err(error) => (Value::Null, Err(error.clone())),
    };
    engines
        .iter()
        .map(|engine| {
            let mut outcome = Outcome {
                file: name.clone(),
                engine: engine.name(),
                compile_us: None,
                first_mask_us: None,
                compile_error: None,
                token_us: Vec::new(),
                tests: Vec::new(),
                timeout: false,
                cache_fallback: None,
            };
            match &tests {
                Ok(tests) => bench_engine(engine.as_ref(), &schema, tests, timeout, &mut outcome),
                Err(error) => outcome.compile_error = Some(format!("bad MaskBench file: {error}")),
            }
            outcome
        })
        .collect()
}

/// Each test's validity and tokens: its data as compact JSON (`,` and
/// `:`, non-ASCII as is), tokenized without special tokens.
fn tokenize_tests(
    doc: &Value,
    tokenizer: &tokenizers::Tokenizer,
) -> Result<Vec<(bool, Vec<u32>)>, String> {
    let tests = doc
        .get("tests")
        .and_then(Value::as_array)
        .ok_or("no `tests` list")?;
    tests
        .iter()
        .map(|test| {
            let valid = test.get("valid").and_then(Value::as_bool).unwrap_or(false);
            let text = serde_json::to_string(test.get("data").unwrap_or(&Value::Null))
                .map_err(|e| e.to_string())?;
            let encoding = tokenizer
                .encode(text.as_str(), false)
                .map_err(|e| e.to_string())?;
            Ok((valid, encoding.get_ids().to_vec()))
        })
        .collect()
}

/// Compiles `schema` with `engine` and runs every test through it.
fn bench_engine(
    engine: &dyn Engine,
    schema: &Value,
    tests: &[(bool, Vec<u32>)],
    timeout: Duration,
    outcome: &mut Outcome,
) {
    let own = engine.for_schema();
    let engine = own.as_deref().unwrap_or(engine);
    let start = Instant::now();
    let compiled = match engine.compile(schema, timeout) {
        Ok(compiled) => compiled,
        Err(error) => {
            outcome.timeout = start.elapsed() >= timeout;
            outcome.compile_error = Some(error);
            return;
        }
    };
    outcome.cache_fallback = compiled.cache_fallback();
    let compiled_at = start.elapsed();
    let mut first = compiled.matcher();
    if let Err(error) = first.fill_mask() {
        outcome.compile_error = Some(format!("first mask: {error}"));
        return;
    }
    let ttfm = start.elapsed();
    outcome.compile_us = Some(micros(ttfm));
    outcome.first_mask_us = Some(micros(ttfm.saturating_sub(compiled_at)));
    for (valid, tokens) in tests {
        let mut matcher = compiled.matcher();
        let mut accepted = true;
        let first_step = outcome.token_us.len();
        for &token in tokens {
            let step = Instant::now();
            let allowed = matcher.fill_mask().is_ok() && matcher.allows(token);
            let committed = allowed && matcher.commit(token).is_ok();
            outcome.token_us.push(micros(step.elapsed()));
            if !committed {
                accepted = false;
                break;
            }
            if start.elapsed() >= timeout {
                outcome.timeout = true;
                return;
            }
        }
        let accepted = accepted && matcher.accepting();
        let steps = outcome.token_us.len() - first_step;
        outcome.tests.push((*valid, accepted, steps));
    }
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}
