//! `xg bench tools`: the tool-calling scenario. Tools come from BFCL-style
//! MaskBench files (each schema an `anyOf` of `{NAME: ARGUMENTS}` objects,
//! each valid test a call); every request offers N of them — consecutive
//! requests share most of their tools, as a server's do — and its output
//! is a realistic turn in the format (text, then one call with the
//! arguments of a BFCL test). Per request: the compile time, the time to
//! first mask, and "fill the mask, check the token, commit it" per token;
//! and the vocabulary's mask-cache counters, which show the argument
//! rules' entries shared across requests.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::{Value, json};
use xg_compiler::tools::{Format, Options};
use xg_compiler::{Diagnostics, Limits, Sources, pipeline};
use xg_runtime::{Matcher, TokenId, Vocabulary};

use super::summary::percentile;

/// `xg bench tools`'s options.
#[derive(Args)]
pub(crate) struct ToolsArgs {
    /// The model's `tokenizer.json` (a Qwen tokenizer for the default
    /// format).
    #[arg(long)]
    tokenizer: PathBuf,
    /// The tool-calling format (`xg tools --format`).
    #[arg(long, default_value = "qwen")]
    format: String,
    /// How many tools each request offers; one run per count.
    #[arg(long, value_delimiter = ',', default_value = "1,10,100")]
    tools: Vec<usize>,
    /// More stop token ids (gpt-oss's `<|call|>` for the Harmony format).
    #[arg(long, value_name = "ID", value_delimiter = ',')]
    stop: Vec<u32>,
    /// Requests per tool count.
    #[arg(long, default_value_t = 20)]
    requests: usize,
    /// Where the results go, one JSON object per line per request.
    #[arg(long)]
    out: PathBuf,
    /// BFCL MaskBench files (or directories of them; other files are
    /// skipped).
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// A tool and the arguments of a call of it.
struct Tool {
    name: String,
    parameters: Value,
    call: Value,
}

/// One request's measurements.
struct Request {
    tools: usize,
    compile_us: f64,
    ttfm_us: f64,
    token_us: Vec<f64>,
    accepted: bool,
}

pub(crate) fn run(args: &ToolsArgs) -> Result<bool> {
    let format = Format::from_name(&args.format)
        .with_context(|| format!("unknown format `{}`", args.format))?;
    let files = super::expand(&args.files)?;
    let largest = args.tools.iter().copied().max().unwrap_or(1);
    let (pool, distinct) = pool_of(&files, largest)?;
    let model = crate::trace::Model {
        tokenizer: &args.tokenizer,
        config: None,
        stop: &args.stop,
    };
    let vocabulary = Arc::new(model.load()?.0);
    let tokenizer = tokenizers::Tokenizer::from_file(&args.tokenizer)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("cannot load `{}`", args.tokenizer.display()))?;
    let mut out = BufWriter::new(
        File::create(&args.out)
            .with_context(|| format!("cannot write `{}`", args.out.display()))?,
    );
    println!(
        "{distinct} tools from the BFCL files among {} files (beyond that, copies under \
         other names); format {format}; {} requests per tool count\n",
        files.len(),
        args.requests
    );
    println!(
        "{:>6} {:>11} {:>11} {:>10} {:>10} {:>10} {:>10}  {:>8} {:>9}",
        "tools",
        "compile p50",
        "TTFM p50",
        "tok p50",
        "tok p99",
        "tok mean",
        "tok max",
        "accepted",
        "cache hit"
    );
    let mut all_accepted = true;
    for &count in &args.tools {
        let count = count.clamp(1, pool.len());
        let before = vocabulary.mask_cache().stats();
        let mut requests = Vec::new();
        for r in 0..args.requests {
            // A window sliding by a quarter of its width: neighbours share
            // three quarters of their tools.
            let start = (r * count.div_ceil(4)) % pool.len();
            let offered: Vec<&Tool> = (0..count)
                .map(|i| &pool[(start + i) % pool.len()])
                .collect();
            let called = offered[r % offered.len()];
            let request = bench_request(&offered, called, format, &vocabulary, &tokenizer)?;
            writeln!(
                out,
                "{}",
                json!({"engine": "xg", "format": format.name(), "tools": count, "request": r,
                       "compile_us": request.compile_us, "ttfm_us": request.ttfm_us,
                       "token_us": request.token_us, "accepted": request.accepted})
            )?;
            requests.push(request);
        }
        let after = vocabulary.mask_cache().stats();
        let hits = (after.hits + after.partial_hits) - (before.hits + before.partial_hits);
        let lookups = hits + after.misses - before.misses;
        let mut compile: Vec<f64> = requests.iter().map(|r| r.compile_us).collect();
        let mut ttfm: Vec<f64> = requests.iter().map(|r| r.ttfm_us).collect();
        let mut tokens: Vec<f64> = requests.iter().flat_map(|r| r.token_us.clone()).collect();
        compile.sort_by(f64::total_cmp);
        ttfm.sort_by(f64::total_cmp);
        tokens.sort_by(f64::total_cmp);
        let accepted = requests.iter().filter(|r| r.accepted).count();
        all_accepted &= accepted == requests.len();
        #[allow(clippy::cast_precision_loss, reason = "counts stay far below 2^52")]
        let (mean, rate) = (
            tokens.iter().sum::<f64>() / tokens.len().max(1) as f64,
            100.0 * hits as f64 / lookups.max(1) as f64,
        );
        println!(
            "{:>6} {:>11} {:>11} {:>10} {:>10} {:>10} {:>10}  {:>4}/{:<3} {:>8.1}%",
            requests[0].tools,
            ms(percentile(&compile, 500)),
            ms(percentile(&ttfm, 500)),
            us(percentile(&tokens, 500)),
            us(percentile(&tokens, 990)),
            us(mean),
            us(percentile(&tokens, 1000)),
            accepted,
            requests.len(),
            rate
        );
    }
    out.flush()?;
    println!(
        "\ncompile: tool list to runtime grammar; TTFM: compile and the first mask; \
         tok: fill the mask, check and commit one token; cache hit: mask-cache lookups \
         served by entries of earlier requests or steps.\nresults: {}",
        args.out.display()
    );
    Ok(all_accepted)
}

fn ms(us: f64) -> String {
    format!("{:.2} ms", us / 1e3)
}

fn us(us: f64) -> String {
    format!("{us:.1} µs")
}

/// At least `wanted` tools from the BFCL `files`, and how many of them are
/// distinct: beyond those, copies under other names (a server's tools
/// often share argument schemas).
fn pool_of(files: &[PathBuf], wanted: usize) -> Result<(Vec<Tool>, usize)> {
    let mut pool = tools_of(files)?;
    let distinct = pool.len();
    if distinct == 0 {
        bail!("no BFCL tools in the files given");
    }
    for k in distinct..wanted {
        let tool = &pool[k % distinct];
        let copy = Tool {
            name: format!("{}_{}", tool.name, k / distinct + 1),
            parameters: tool.parameters.clone(),
            call: tool.call.clone(),
        };
        pool.push(copy);
    }
    Ok((pool, distinct))
}

/// The tools of BFCL files, each with a call from a valid test; by name,
/// the first definition kept.
fn tools_of(files: &[PathBuf]) -> Result<Vec<Tool>> {
    let mut tools: BTreeMap<String, Tool> = BTreeMap::new();
    for path in files {
        let is_bfcl = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("BFCL_"));
        if !is_bfcl {
            continue;
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read `{}`", path.display()))?;
        let file: Value = serde_json::from_str(&text)
            .with_context(|| format!("`{}` is not JSON", path.display()))?;
        let schema = &file["schema"];
        let branches = match schema.get("anyOf").and_then(Value::as_array) {
            Some(branches) => branches.clone(),
            None => vec![schema.clone()],
        };
        let calls: Vec<&Value> = file["tests"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["valid"] == true)
            .map(|t| &t["data"])
            .collect();
        for branch in branches {
            let Some(properties) = branch.get("properties").and_then(Value::as_object) else {
                continue;
            };
            let [(name, parameters)] = properties.iter().collect::<Vec<_>>()[..] else {
                continue;
            };
            let Some(call) = calls.iter().find_map(|c| c.get(name)) else {
                continue;
            };
            tools.entry(name.clone()).or_insert_with(|| Tool {
                name: name.clone(),
                parameters: parameters.clone(),
                call: call.clone(),
            });
        }
    }
    Ok(tools.into_values().collect())
}

/// Compiles one request and runs its output token by token.
fn bench_request(
    offered: &[&Tool],
    called: &Tool,
    format: Format,
    vocabulary: &Arc<Vocabulary>,
    tokenizer: &tokenizers::Tokenizer,
) -> Result<Request> {
    let list: Value = offered
        .iter()
        .map(|t| json!({"type": "function", "function": {"name": t.name, "parameters": t.parameters}}))
        .collect();
    let mut sources = Sources::new();
    sources.set_vocabulary(Arc::clone(vocabulary));
    let file = sources.add("tools.json", list.to_string(), None);
    let mut diagnostics = Diagnostics::new();
    let started = Instant::now();
    let grammar = pipeline::tools(
        &list,
        &Options::new(format),
        &Limits::default(),
        &mut sources,
        file,
        &mut diagnostics,
    );
    let compile_us = started.elapsed().as_secs_f64() * 1e6;
    let Some(grammar) = grammar else {
        bail!(
            "the tools do not compile:\n{}",
            diagnostics.render(&sources, false)
        );
    };
    let output = output(format, called);
    let ids: Vec<TokenId> = tokenizer
        .encode(output.as_str(), false)
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .get_ids()
        .iter()
        .map(|&id| TokenId::new(id as usize))
        .collect::<Result<_, _>>()?;
    let stop = vocabulary.stop_tokens().first().copied();
    let mut matcher = Matcher::with_vocabulary(Arc::new(grammar), Arc::clone(vocabulary));
    let mut mask = vec![0u32; vocabulary.mask_words()];
    let mut token_us = Vec::with_capacity(ids.len() + 1);
    let mut ttfm_us = 0.0;
    let mut accepted = true;
    for (i, &token) in ids.iter().chain(stop.as_ref()).enumerate() {
        let started = Instant::now();
        matcher.fill_next_token_bitmask(&mut mask)?;
        let allowed = mask[token.as_usize() / 32] >> (token.as_usize() % 32) & 1 == 1;
        let committed = allowed && matcher.accept_token(token).is_ok();
        let elapsed = started.elapsed().as_secs_f64() * 1e6;
        if i == 0 {
            ttfm_us = compile_us + elapsed;
        }
        token_us.push(elapsed);
        if !committed {
            accepted = false;
            break;
        }
    }
    Ok(Request {
        tools: offered.len(),
        compile_us,
        ttfm_us,
        token_us,
        accepted,
    })
}

/// A turn calling `tool` in `format`: a sentence, then the call.
fn output(format: Format, tool: &Tool) -> String {
    let name = &tool.name;
    let arguments = tool.call.to_string();
    let text = "Let me look that up.";
    match format {
        Format::Qwen => format!(
            "{text}\n<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {arguments}}}\n</tool_call>"
        ),
        Format::Llama3 => format!("{{\"name\": \"{name}\", \"parameters\": {arguments}}}"),
        Format::Llama3Function => format!("{text}<function={name}>{arguments}</function>"),
        Format::Mistral => {
            format!("{text}[TOOL_CALLS][{{\"name\": \"{name}\", \"arguments\": {arguments}}}]")
        }
        Format::DeepSeek => format!(
            "{text}<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{arguments}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        ),
        Format::Harmony => format!(
            "<|channel|>analysis<|message|>{text}<|end|><|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{arguments}"
        ),
    }
}
