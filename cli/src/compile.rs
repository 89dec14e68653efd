//! `xg compile`: a grammar as a bundle (`.xgb`), with mask-cache entries
//! precomputed for a model's vocabulary.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use xg_runtime::bundle::{self, Masks, Precompute};

use crate::load::{self, GrammarArgs};
use crate::trace::Model;

/// The arguments of `xg compile`.
#[derive(Args)]
pub struct CompileArgs {
    #[command(flatten)]
    grammar: GrammarArgs,
    /// Where to write the bundle.
    #[arg(short, long, value_name = "OUT.xgb")]
    output: PathBuf,
    /// The model's Hugging Face `tokenizer.json`: precompute masks for it
    /// (and resolve tokens a structural tag names by text).
    #[arg(long)]
    tokenizer: Option<PathBuf>,
    /// The model's `tokenizer_config.json` (default: the one next to the
    /// tokenizer, if any).
    #[arg(long, value_name = "FILE", requires = "tokenizer")]
    tokenizer_config: Option<PathBuf>,
    /// More stop token ids (a generation config's end-of-sequence list).
    #[arg(long, value_name = "ID", value_delimiter = ',', requires = "tokenizer")]
    stop: Vec<u32>,
    /// Which mask-cache entries to build ahead of time: `none`, `auto`
    /// (the costly ones, within a budget), `all`, or a number K (the K
    /// costliest). The rest are built on first use. Default: `auto` with
    /// a tokenizer, `none` without.
    #[arg(long, value_name = "K|auto|all|none")]
    precompute: Option<PrecomputeArg>,
}

/// `--precompute`'s value.
#[derive(Clone, Copy)]
struct PrecomputeArg(Precompute);

impl FromStr for PrecomputeArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(Self(match text {
            "none" => Precompute::None,
            "auto" => Precompute::Auto,
            "all" => Precompute::All,
            _ => Precompute::Costliest(text.parse().map_err(|_| {
                format!("`{text}` is not a number of entries, `auto`, `all` or `none`")
            })?),
        }))
    }
}

/// Compiles and writes the bundle; true on success.
pub fn run(args: &CompileArgs, color: bool) -> Result<bool> {
    let vocabulary = match &args.tokenizer {
        Some(tokenizer) => Some(
            Model {
                tokenizer,
                config: args.tokenizer_config.as_deref(),
                stop: &args.stop,
            }
            .load()
            .map(|(vocabulary, _)| Arc::new(vocabulary))?,
        ),
        None => None,
    };
    let how = match (args.precompute, &vocabulary) {
        (Some(PrecomputeArg(how)), Some(_)) => how,
        (None, Some(_)) => Precompute::Auto,
        (None | Some(PrecomputeArg(Precompute::None)), None) => Precompute::None,
        (Some(_), None) => {
            bail!("precomputing masks needs the model's vocabulary: give --tokenizer")
        }
    };
    let started = Instant::now();
    let grammar = Arc::new(load::load_grammar(
        &args.grammar,
        vocabulary.as_ref(),
        color,
    )?);
    let compiled = started.elapsed();
    let started = Instant::now();
    let masks = vocabulary
        .as_ref()
        .map(|vocabulary| Masks::precompute(&grammar, vocabulary, how));
    let precomputed = started.elapsed();
    let bytes = bundle::write(&grammar, masks.as_ref())?;
    std::fs::write(&args.output, &bytes)
        .with_context(|| format!("cannot write `{}`", args.output.display()))?;
    eprintln!(
        "wrote `{}`: {} bytes; compiled in {:.1} ms",
        args.output.display(),
        bytes.len(),
        compiled.as_secs_f64() * 1e3
    );
    if let Some(masks) = &masks {
        eprintln!(
            "masks: {} of {} entries precomputed in {:.2} s (vocabulary {:016x}); the rest are built on first use",
            masks.len(),
            masks.candidates(),
            precomputed.as_secs_f64(),
            masks.fingerprint()
        );
    }
    Ok(true)
}
