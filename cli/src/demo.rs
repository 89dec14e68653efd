//! The main job, `xg` without a subcommand: constrained generation end to
//! end on an embedded default — a tool-calling turn (two tools with JSON
//! Schema arguments, Qwen's format) compiled for the Qwen3 vocabulary
//! vendored in the repository — with seeded random logits standing in for
//! a model. Flags pick another grammar, tokenizer or seed.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use xg_compiler::tools::{Format, Options, Reasoning, ToolChoice};
use xg_compiler::{CompileCache, Limits, Request, pipeline};
use xg_runtime::{Grammar, Matcher, TokenId, Vocabulary};

/// The main job's flags (all optional).
#[derive(Args)]
pub struct DemoArgs {
    /// A grammar to generate from instead of the embedded tool-calling
    /// turn: `.xg`, a JSON Schema, a structural tag or a bundle (decided by
    /// the content).
    #[arg(long, value_name = "FILE")]
    grammar: Option<PathBuf>,
    /// The entry rule of `--grammar`.
    #[arg(
        long = "root",
        visible_alias = "rule",
        value_name = "ROOT",
        default_value = "root",
        requires = "grammar"
    )]
    rule: String,
    /// A model's `tokenizer.json` instead of the embedded Qwen3 one.
    #[arg(long, value_name = "TOKENIZER.json")]
    tokenizer: Option<PathBuf>,
    /// The seed of the stand-in model's random logits.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Stop after this many tokens.
    #[arg(long, default_value_t = 300)]
    max_tokens: usize,
    #[command(flatten)]
    schema: crate::schema::SchemaFlags,
}

/// The tools of the embedded default request.
const TOOLS: &str = r#"[
  {"type": "function", "function": {"name": "get_weather",
    "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {
      "city": {"type": "string", "minLength": 1, "maxLength": 16},
      "unit": {"enum": ["celsius", "fahrenheit"]},
      "days": {"type": "integer", "minimum": 1, "maximum": 7}},
      "required": ["city", "unit"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "search_flights",
    "parameters": {"type": "object", "properties": {
      "from": {"type": "string", "pattern": "^[A-Z]{3}$"},
      "to": {"type": "string", "pattern": "^[A-Z]{3}$"},
      "date": {"type": "string", "format": "date"},
      "passengers": {"type": "integer", "minimum": 1, "maximum": 9}},
      "required": ["from", "to", "date"], "additionalProperties": false}}}
]"#;

/// Runs the main job; true if the output was valid to its end.
pub fn run(args: &DemoArgs, color: bool) -> Result<bool> {
    outln!(
        "xg {} — constrained generation\n",
        env!("CARGO_PKG_VERSION")
    );
    let started = Instant::now();
    let tokenizer = args
        .tokenizer
        .as_deref()
        .unwrap_or(Path::new(crate::trace::EMBEDDED_NAME));
    let model = crate::trace::Model {
        tokenizer,
        config: None,
        stop: &[],
    };
    let vocabulary = Arc::new(model.load()?.0);
    outln!(
        "vocabulary: {} ({} tokens, {:?} tokenizer), loaded in {:.0} ms",
        args.tokenizer
            .as_deref()
            .map_or("Qwen3, embedded".into(), |p| p.display().to_string()),
        vocabulary.len(),
        vocabulary.tokenizer_kind(),
        started.elapsed().as_secs_f64() * 1e3
    );

    let started = Instant::now();
    let grammar = match &args.grammar {
        Some(path) => {
            outln!("grammar: {} (rule `{}`)", path.display(), args.rule);
            crate::load::load_file(path, &args.rule, &args.schema, Some(&vocabulary), color)?
        }
        None => default_grammar(&vocabulary, color)?,
    };
    let compile_ms = started.elapsed().as_secs_f64() * 1e3;
    outln!("grammar: compiled in {compile_ms:.2} ms\n");

    let mut matcher = Matcher::with_vocabulary(Arc::new(grammar), Arc::clone(&vocabulary));
    let mut mask = vec![0u32; vocabulary.mask_words()];
    let mut model = StandIn::new(args.seed);
    let mut times = Vec::new();
    let mut tokens = 0;
    let mut ended = false;
    // On a terminal the streamed output shows the progress; when it goes
    // to a pipe or file, a progress line on the terminal does.
    let progress = std::io::stderr().is_terminal() && !std::io::stdout().is_terminal();
    let mut out = std::io::stdout().lock();
    writeln!(out, "── output (seed {}) ──", args.seed)?;
    while tokens < args.max_tokens {
        let step = Instant::now();
        matcher.fill_next_token_bitmask(&mut mask)?;
        times.push(step.elapsed().as_secs_f64() * 1e6);
        let token = model
            .pick(&mask, &vocabulary)
            .context("the mask allows no token")?;
        if vocabulary.is_stop(token) {
            matcher.accept_token(token)?;
            ended = true;
            break;
        }
        matcher.accept_token(token)?;
        out.write_all(vocabulary.bytes(token))?;
        out.flush()?;
        tokens += 1;
        if progress {
            eprint!(
                "\r{tokens} tokens, last mask {:.0} µs  ",
                times[times.len() - 1]
            );
        }
    }
    if progress {
        eprintln!();
    }
    writeln!(out, "\n──")?;
    writeln!(
        out,
        "{}",
        if ended {
            "ended with the stop token, where the grammar allows it: the output is valid"
        } else {
            "stopped at --max-tokens (the output so far is a valid prefix)"
        }
    )?;
    let first = times[0];
    let mut rest: Vec<f64> = times[1..].to_vec();
    rest.sort_by(f64::total_cmp);
    #[allow(clippy::cast_precision_loss, reason = "counts stay far below 2^52")]
    let mean = rest.iter().sum::<f64>() / rest.len().max(1) as f64;
    writeln!(
        out,
        "\n{tokens} tokens. compile {compile_ms:.2} ms · time to first mask {:.2} ms \
         (compile + first mask, which builds the vocabulary's token trie) · \
         per-token mask mean {mean:.1} µs, p99 {:.1} µs",
        compile_ms + first / 1e3,
        rest.get(rest.len() * 99 / 100).copied().unwrap_or(f64::NAN)
    )?;
    writeln!(
        out,
        "\nNext: `xg tools`, `xg json-schema`, `xg trace`, `xg compile` and `xg bench`; \
         `xg --help` lists them; the book is in book/."
    )?;
    Ok(ended)
}

/// The embedded request: the two tools, a call required, Qwen's format.
fn default_grammar(vocabulary: &Arc<Vocabulary>, color: bool) -> Result<Grammar> {
    let tools: serde_json::Value = serde_json::from_str(TOOLS).context("embedded tools")?;
    let mut request = Request::new(&Limits::default(), &CompileCache::default())
        .with_vocabulary(Arc::clone(vocabulary));
    let file = request.add("embedded tools.json", TOOLS);
    let options = Options {
        tool_choice: ToolChoice::Required,
        reasoning: Reasoning::Forbidden,
        parallel_calls: false,
        ..Options::new(Format::Qwen)
    };
    outln!(
        "request: 2 tools (get_weather, search_flights), format {}, a call required",
        options.format
    );
    let grammar = pipeline::tools(&mut request, &tools, file, &options);
    eprint!("{}", request.diagnostics.render(&request.sources, color));
    grammar.context("the embedded tools do not compile")
}

/// Seeded random logits in place of a model: a random allowed token, but —
/// like a model — rarely one of layout whitespace only, and the stop token
/// one time in four where it is allowed (always when it is the only one).
struct StandIn {
    state: u64,
}

impl StandIn {
    fn new(seed: u64) -> Self {
        Self {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
        }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    fn pick(&mut self, mask: &[u32], vocabulary: &Vocabulary) -> Option<TokenId> {
        let allowed: Vec<TokenId> = (0..vocabulary.len())
            .filter(|&i| mask[i / 32] >> (i % 32) & 1 == 1)
            .filter_map(|i| TokenId::new(i).ok())
            .collect();
        if let Some(&stop) = allowed.iter().find(|&&id| vocabulary.is_stop(id))
            && (allowed.len() == 1 || self.next().is_multiple_of(4))
        {
            return Some(stop);
        }
        let allowed: Vec<TokenId> = allowed
            .into_iter()
            .filter(|&id| !vocabulary.is_stop(id))
            .collect();
        let readable: Vec<TokenId> = allowed
            .iter()
            .copied()
            .filter(|&id| {
                let bytes = vocabulary.bytes(id);
                bytes.iter().any(|b| !b.is_ascii_whitespace())
                    && bytes.iter().all(|b| b.is_ascii_graphic() || *b == b' ')
            })
            .collect();
        let pool = if readable.is_empty() {
            &allowed
        } else {
            &readable
        };
        let len = u64::try_from(pool.len()).ok()?;
        pool.get(usize::try_from(self.next() % len.max(1)).ok()?)
            .copied()
    }
}
