//! `xg bench tools`: the tool-calling scenario. Tools come from BFCL-style
//! MaskBench files (each schema an `anyOf` of `{NAME: ARGUMENTS}` objects,
//! each valid test a call); every request offers N of them — consecutive
//! requests share most of their tools, as a server's do — and its output
//! is a realistic turn in the format (text, then one call with the
//! arguments of a BFCL test). Per engine and request: the compile time,
//! the time to first mask, and "fill the mask, check the token, commit it"
//! per token (the last step: fill the mask, check the turn may end); and
//! xg's cache counters — the compile cache (automata of argument rules
//! compiled by earlier requests) and the vocabulary's mask cache (their
//! token-mask entries).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::{Value, json};
use xg_compiler::tools::{Format, Reasoning};

use super::EngineChoice;
use super::engines::{Engine, Reuse, Setup, Slices};
use super::summary::percentile;

/// `xg bench tools`'s options.
#[derive(Args)]
pub(crate) struct ToolsArgs {
    /// The model's `tokenizer.json` (a Qwen tokenizer for the default
    /// format).
    #[arg(long)]
    tokenizer: PathBuf,
    /// The tool-calling format (`xg tools --format`); LLGuidance runs the
    /// qwen format only.
    #[arg(long, default_value = "qwen")]
    format: String,
    /// Which engines to run.
    #[arg(long, value_enum, default_value_t = EngineChoice::All)]
    engine: EngineChoice,
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
    let engines = super::engines(
        &args.tokenizer,
        args.engine,
        &args.stop,
        Setup::default(),
        Slices::General,
        std::time::Duration::from_secs(2),
    )?;
    let tokenizer = crate::trace::read_tokenizer(&args.tokenizer, None)
        .and_then(|files| {
            tokenizers::Tokenizer::from_bytes(files.json).map_err(|e| anyhow::anyhow!("{e}"))
        })
        .with_context(|| format!("cannot load `{}`", args.tokenizer.display()))?;
    let mut out = BufWriter::new(
        File::create(&args.out)
            .with_context(|| format!("cannot write `{}`", args.out.display()))?,
    );
    outln!(
        "{distinct} tools from the BFCL files among {} files (beyond that, copies under \
         other names); format {format}; {} requests per tool count\n",
        files.len(),
        args.requests
    );
    outln!(
        "{:>10} {:>6} {:>11} {:>11} {:>10} {:>10} {:>10} {:>10}  {:>8} {:>9} {:>9}",
        "engine",
        "tools",
        "compile p50",
        "TTFM p50",
        "tok p50",
        "tok p99",
        "tok mean",
        "tok max",
        "accepted",
        "automata",
        "masks"
    );
    let mut all_accepted = true;
    for &count in &args.tools {
        let count = count.clamp(1, pool.len());
        for engine in &engines {
            let before = engine.reuse();
            let mut requests = Vec::new();
            for r in 0..args.requests {
                // A window sliding by a quarter of its width: neighbours
                // share three quarters of their tools.
                let start = (r * count.div_ceil(4)) % pool.len();
                let offered: Vec<&Tool> = (0..count)
                    .map(|i| &pool[(start + i) % pool.len()])
                    .collect();
                let called = offered[r % offered.len()];
                let request =
                    match bench_request(engine.as_ref(), &offered, called, format, &tokenizer) {
                        Ok(request) => request,
                        Err(error) => {
                            outln!("{:>10} {count:>6}  {error:#}", engine.name());
                            all_accepted = false;
                            break;
                        }
                    };
                writeln!(
                    out,
                    "{}",
                    json!({"engine": engine.name(), "format": format.name(), "tools": count,
                           "request": r, "compile_us": request.compile_us,
                           "ttfm_us": request.ttfm_us, "token_us": request.token_us,
                           "accepted": request.accepted})
                )?;
                requests.push(request);
            }
            if !requests.is_empty() {
                all_accepted &= requests.iter().all(|r| r.accepted);
                let reused = engine
                    .reuse()
                    .zip(before)
                    .map(|(after, before)| reuse_rates(&after, &before));
                outln!("{}", row(engine.name(), &requests, reused));
            }
        }
    }
    out.flush()?;
    outln!(
        "\ncompile: tool list to runtime grammar; TTFM: compile and the first mask; \
         tok: fill the mask, check and commit one token; automata: rule automata reused \
         from xg's compile cache (earlier requests, or equal rules of the same one); \
         masks: xg's mask-cache lookups served by entries of earlier requests or steps.\n\
         results: {}",
        args.out.display()
    );
    Ok(all_accepted)
}

/// The share of automata and of mask-cache lookups reused between `before`
/// and `after`, in percent.
#[allow(clippy::cast_precision_loss, reason = "counts stay far below 2^52")]
fn reuse_rates(after: &Reuse, before: &Reuse) -> (f64, f64) {
    let rate = |reused: u64, built: u64| 100.0 * reused as f64 / (reused + built).max(1) as f64;
    (
        rate(
            after.automata_reused - before.automata_reused,
            after.automata_built - before.automata_built,
        ),
        rate(
            after.masks_reused - before.masks_reused,
            after.masks_built - before.masks_built,
        ),
    )
}

/// One line of the table: an engine's requests at one tool count.
fn row(engine: &str, requests: &[Request], reused: Option<(f64, f64)>) -> String {
    let sorted = |values: Vec<f64>| {
        let mut values = values;
        values.sort_by(f64::total_cmp);
        values
    };
    let compile = sorted(requests.iter().map(|r| r.compile_us).collect());
    let ttfm = sorted(requests.iter().map(|r| r.ttfm_us).collect());
    let tokens = sorted(requests.iter().flat_map(|r| r.token_us.clone()).collect());
    #[allow(clippy::cast_precision_loss, reason = "counts stay far below 2^52")]
    let mean = tokens.iter().sum::<f64>() / tokens.len().max(1) as f64;
    let accepted = requests.iter().filter(|r| r.accepted).count();
    let (automata, masks) = match reused {
        Some((automata, masks)) => (format!("{automata:.1}%"), format!("{masks:.1}%")),
        None => ("–".to_string(), "–".to_string()),
    };
    format!(
        "{engine:>10} {:>6} {:>11} {:>11} {:>10} {:>10} {:>10} {:>10}  {:>4}/{:<3} {automata:>9} {masks:>9}",
        requests[0].tools,
        ms(percentile(&compile, 500)),
        ms(percentile(&ttfm, 500)),
        us(percentile(&tokens, 500)),
        us(percentile(&tokens, 990)),
        us(mean),
        us(percentile(&tokens, 1000)),
        accepted,
        requests.len(),
    )
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

/// Compiles one request with `engine` and runs its output token by token.
fn bench_request(
    engine: &dyn Engine,
    offered: &[&Tool],
    called: &Tool,
    format: Format,
    tokenizer: &tokenizers::Tokenizer,
) -> Result<Request> {
    let list: Value = offered
        .iter()
        .map(|t| json!({"type": "function", "function": {"name": t.name, "parameters": t.parameters}}))
        .collect();
    let started = Instant::now();
    let compiled = engine.compile_tools(&list, format);
    let compile_us = started.elapsed().as_secs_f64() * 1e6;
    let compiled = compiled.map_err(|error| {
        anyhow::anyhow!("the tools do not compile with {}: {error}", engine.name())
    })?;
    let output = output(format, called);
    let ids = tokenizer
        .encode(output.as_str(), false)
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .get_ids()
        .to_vec();
    let mut matcher = compiled.matcher();
    let mut token_us = Vec::with_capacity(ids.len() + 1);
    let mut accepted = true;
    for &token in &ids {
        let started = Instant::now();
        let committed =
            matcher.fill_mask().is_ok() && matcher.allows(token) && matcher.commit(token).is_ok();
        token_us.push(started.elapsed().as_secs_f64() * 1e6);
        if !committed {
            accepted = false;
            break;
        }
    }
    if accepted {
        // The turn must be able to end: the stop token is allowed exactly
        // where the grammar can end.
        let started = Instant::now();
        accepted = matcher.fill_mask().is_ok() && matcher.accepting();
        token_us.push(started.elapsed().as_secs_f64() * 1e6);
    }
    Ok(Request {
        tools: offered.len(),
        compile_us,
        ttfm_us: compile_us + token_us[0],
        token_us,
        accepted,
    })
}

/// A turn calling `tool` in `format`: a sentence, then the call; after
/// reasoning where the format's prompt opens it by default.
fn output(format: Format, tool: &Tool) -> String {
    let turn = call_turn(format, tool);
    if format == Format::CommandReasoning {
        format!("The user wants a lookup.<|END_THINKING|>{turn}")
    } else if format == Format::KimiK3 {
        format!("The user wants a lookup.<|close|>think<|sep|><|open|>response<|sep|>{turn}")
    } else if format.prompt_opens_reasoning() && format.default_reasoning() == Reasoning::Forced {
        format!("The user wants a lookup.\n</think>\n\n{turn}")
    } else {
        turn
    }
}

/// A sentence, then the call of `tool` in `format`.
fn call_turn(format: Format, tool: &Tool) -> String {
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
        Format::Qwen3Coder | Format::Qwen35 => {
            let mut call = format!("{text}\n\n<tool_call>\n<function={name}>\n");
            for (key, value) in xml_arguments(tool) {
                let _ = write!(call, "<parameter={key}>\n{value}\n</parameter>\n");
            }
            call + "</function>\n</tool_call>"
        }
        Format::Harmony => format!(
            "<|channel|>analysis<|message|>{text}<|end|><|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{arguments}"
        ),
        Format::DeepSeekV31 => format!(
            "{text}<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{arguments}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        ),
        Format::DeepSeekV32 | Format::DeepSeekV4 => {
            let block = if format == Format::DeepSeekV4 {
                "tool_calls"
            } else {
                "function_calls"
            };
            let mut call =
                format!("{text}\n\n<｜DSML｜{block}>\n<｜DSML｜invoke name=\"{name}\">\n");
            for (key, value) in tool.call.as_object().into_iter().flatten() {
                let (string, value) = match value {
                    serde_json::Value::String(text) => ("true", text.clone()),
                    other => ("false", other.to_string()),
                };
                let _ = writeln!(
                    call,
                    "<｜DSML｜parameter name=\"{key}\" string=\"{string}\">{value}</｜DSML｜parameter>"
                );
            }
            call + &format!("</｜DSML｜invoke>\n</｜DSML｜{block}>")
        }
        Format::Kimi => format!(
            "{text}<|tool_calls_section_begin|><|tool_call_begin|>functions.{name}:0<|tool_call_argument_begin|>{arguments}<|tool_call_end|><|tool_calls_section_end|>"
        ),
        Format::Glm45 | Format::Glm47 => {
            let mut call = format!("{text}\n<tool_call>{name}\n");
            for (key, value) in xml_arguments(tool) {
                let _ = write!(
                    call,
                    "<arg_key>{key}</arg_key>\n<arg_value>{value}</arg_value>\n"
                );
            }
            call + "</tool_call>"
        }
        Format::MiniMax => {
            let mut call = format!("{text}\n<minimax:tool_call>\n<invoke name=\"{name}\">");
            for (key, value) in xml_arguments(tool) {
                let _ = writeln!(call, "<parameter name=\"{key}\">{value}</parameter>");
            }
            call + "</invoke>\n</minimax:tool_call>"
        }
        Format::MistralV11 => format!("{text}[TOOL_CALLS]{name}[ARGS]{arguments}"),
        Format::KimiK3 => format!(
            "{text}<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool=\"{name}\" index=\"1\"<|sep|>{}<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>",
            xtml_arguments(tool)
        ),
        Format::Gemma4 => format!(
            "{text}<|tool_call>call:{name}{}<tool_call|>",
            gemma_value(&tool.call)
        ),
        Format::CommandReasoning => format!(
            "<|START_ACTION|>[\n    {{\"tool_call_id\": \"0\", \"tool_name\": \"{name}\", \"parameters\": {arguments}}}\n]<|END_ACTION|>"
        ),
        Format::Command => format!(
            "<|START_THINKING|>{text}<|END_THINKING|><|START_ACTION|>[\n    {{\"tool_call_id\": \"0\", \"tool_name\": \"{name}\", \"parameters\": {arguments}}}\n]<|END_ACTION|>"
        ),
        Format::Pythonic | Format::ToolCode => {
            let arguments: Vec<String> = (tool.call.as_object().into_iter().flatten())
                .map(|(key, value)| format!("{key}={}", python_literal(value)))
                .collect();
            let call = format!("{name}({})", arguments.join(", "));
            if format == Format::Pythonic {
                format!("[{call}]")
            } else {
                format!("{text}\n```tool_code\n{call}\n```")
            }
        }
    }
}

/// A call's arguments as Kimi K3 writes them: each typed, a string as it
/// is, any other value as JSON.
fn xtml_arguments(tool: &Tool) -> String {
    let mut arguments = String::new();
    for (key, value) in tool.call.as_object().into_iter().flatten() {
        let kind = match value {
            serde_json::Value::String(_) => "string",
            serde_json::Value::Number(_) => "number",
            serde_json::Value::Bool(_) => "boolean",
            serde_json::Value::Null => "null",
            serde_json::Value::Object(_) => "object",
            serde_json::Value::Array(_) => "array",
        };
        let value = value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_owned);
        let _ = write!(
            arguments,
            "<|open|>argument key=\"{key}\" type=\"{kind}\"<|sep|>{value}<|close|>argument<|sep|>"
        );
    }
    arguments
}

/// `value` as Gemma 4's template writes it: strings between `<|"|>`,
/// object keys bare and sorted, `None` for null.
fn gemma_value(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::String(text) => format!("<|\"|>{text}<|\"|>"),
        Value::Null => "None".to_string(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(gemma_value).collect();
            format!("[{}]", items.join(","))
        }
        Value::Object(members) => {
            let mut members: Vec<(&String, &Value)> = members.iter().collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            let members: Vec<String> = (members.into_iter())
                .map(|(key, value)| format!("{key}:{}", gemma_value(value)))
                .collect();
            format!("{{{}}}", members.join(","))
        }
        other => other.to_string(),
    }
}

/// `value` as a Python literal: JSON with `True`, `False` and `None`.
fn python_literal(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Null => "None".to_string(),
        Value::Bool(true) => "True".to_string(),
        Value::Bool(false) => "False".to_string(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(python_literal).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(members) => {
            let members: Vec<String> = (members.iter())
                .map(|(key, value)| {
                    format!("{}: {}", Value::from(key.as_str()), python_literal(value))
                })
                .collect();
            format!("{{{}}}", members.join(", "))
        }
        other => other.to_string(),
    }
}

/// A call's arguments as the XML formats write them: a string as it is,
/// any other value as JSON.
fn xml_arguments(tool: &Tool) -> impl Iterator<Item = (&String, String)> {
    tool.call
        .as_object()
        .into_iter()
        .flatten()
        .map(|(key, value)| {
            let value = match value {
                serde_json::Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            (key, value)
        })
}
