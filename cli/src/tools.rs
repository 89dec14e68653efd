//! `xg tools`: a request's tool list and a model family's format → the
//! `.xg` grammar of the model's turn, compiled when the model's tokenizer
//! is given.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use xg_compiler::tools::{self, Format, Options, Reasoning, ToolChoice};
use xg_compiler::{CompileCache, Limits, Request, pipeline};

use crate::trace::Model;

/// The flags of `xg tools`.
#[derive(Args)]
pub struct ToolsArgs {
    /// The tool list (JSON): an array of OpenAI tools (`{"type":
    /// "function", "function": {"name", "parameters"}}`, or the flat
    /// `{"name", "parameters"}`), or an object with a `tools` array.
    tools: PathBuf,
    /// The model family's format.
    #[arg(long, value_enum)]
    format: FormatArg,
    /// `auto` (text and/or calls), `required` (at least one call), `none`
    /// (text only), or a tool's name (calls of that tool only).
    #[arg(long, default_value = "auto", value_name = "CHOICE")]
    tool_choice: String,
    /// Reasoning before the answer (`<think>…</think>`; Harmony: the
    /// analysis channel); `forced` with a template that opens it in the
    /// prompt (deepseek-v3.1 and v3.2 in thinking mode, glm-4.7, minimax-m2) is the
    /// rest of it. Default: what the family's template does (`forced` for
    /// glm-4.7 and minimax-m2, else `allowed`).
    #[arg(long, value_enum)]
    reasoning: Option<ReasoningArg>,
    /// Only these tools (comma-separated names) may be called, the others
    /// staying in the request (OpenAI's `allowed_tools`); `--tool-choice`
    /// is then `auto` or `required`, the mode.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    allowed_tools: Option<Vec<String>>,
    /// At most one call per turn.
    #[arg(long)]
    no_parallel_calls: bool,
    /// Write and compile the grammar for this model's `tokenizer.json` and
    /// report the time: markers that are the model's special tokens are
    /// written as tokens (the Mistral and Harmony formats name special
    /// tokens, so they compile only with a tokenizer).
    #[arg(long)]
    tokenizer: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum FormatArg {
    /// Qwen2.5 / Qwen3 / Hermes: `<tool_call>` JSON `</tool_call>`.
    Qwen,
    /// Llama 3.x custom tools: `{"name": …, "parameters": …}`.
    Llama3,
    /// Llama 3.1: `<function=NAME>{…}</function>`.
    Llama3Function,
    /// Mistral: `[TOOL_CALLS]` and a JSON array of calls.
    Mistral,
    /// DeepSeek V3 / R1: `<｜tool▁calls▁begin｜>` …
    Deepseek,
    /// gpt-oss Harmony: channels, calls to `functions.NAME`.
    Harmony,
    /// Qwen3-Coder / Qwen3.5: `<function=NAME>` and XML parameters.
    Qwen3Coder,
    /// Qwen3.5: Qwen3-Coder's calls, reasoning opened by the prompt.
    #[value(name = "qwen3.5")]
    Qwen35,
    /// DeepSeek V3.1: `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}`.
    #[value(name = "deepseek-v3.1")]
    DeepseekV31,
    /// DeepSeek V3.2: the DSML block, `<｜DSML｜invoke name=…>` and parameters.
    #[value(name = "deepseek-v3.2")]
    DeepseekV32,
    /// DeepSeek V4: V3.2's calls in a `<｜DSML｜tool_calls>` block.
    #[value(name = "deepseek-v4")]
    DeepseekV4,
    /// Kimi K2: `<|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{…}`.
    #[value(name = "kimi-k2")]
    KimiK2,
    /// Kimi K3 (XTML): `<|open|>call tool="NAME" index="1"<|sep|>` and typed arguments.
    #[value(name = "kimi-k3")]
    KimiK3,
    /// GLM-4.5 / 4.6: `<tool_call>NAME` and `<arg_key>`/`<arg_value>` pairs.
    #[value(name = "glm-4.5")]
    Glm45,
    /// GLM-4.7: GLM-4.5's calls, reasoning opened by the prompt.
    #[value(name = "glm-4.7")]
    Glm47,
    /// MiniMax M2: `<minimax:tool_call>`, `<invoke name=…>`, `<parameter name=…>`.
    #[value(name = "minimax-m2")]
    MinimaxM2,
    /// Pythonic (Llama 4, Gemma 3): `[NAME(KEY=VALUE, …), …]`.
    Pythonic,
    /// Gemma 3's cookbook form: calls in a ```` ```tool_code ```` block, a line each.
    ToolCode,
    /// Gemma 4: `<|tool_call>call:NAME{KEY:VALUE,…}<tool_call|>`.
    #[value(name = "gemma-4")]
    Gemma4,
    /// Command A / R7B: `<|START_ACTION|>` a JSON list of calls `<|END_ACTION|>`.
    #[value(name = "command-a")]
    CommandA,
    /// Command A Reasoning: the prompt opens `<|START_THINKING|>`; answers in `<|START_TEXT|>`.
    #[value(name = "command-a-reasoning")]
    CommandAReasoning,
    /// Mistral tokenizer v11+: `[TOOL_CALLS]NAME[ARGS]{…}` per call.
    #[value(name = "mistral-v11")]
    MistralV11,
}

impl FormatArg {
    fn format(self) -> Format {
        match self {
            FormatArg::Qwen => Format::Qwen,
            FormatArg::Llama3 => Format::Llama3,
            FormatArg::Llama3Function => Format::Llama3Function,
            FormatArg::Mistral => Format::Mistral,
            FormatArg::Deepseek => Format::DeepSeek,
            FormatArg::Harmony => Format::Harmony,
            FormatArg::Qwen3Coder => Format::Qwen3Coder,
            FormatArg::Qwen35 => Format::Qwen35,
            FormatArg::DeepseekV31 => Format::DeepSeekV31,
            FormatArg::DeepseekV32 => Format::DeepSeekV32,
            FormatArg::DeepseekV4 => Format::DeepSeekV4,
            FormatArg::KimiK2 => Format::Kimi,
            FormatArg::KimiK3 => Format::KimiK3,
            FormatArg::Glm45 => Format::Glm45,
            FormatArg::Glm47 => Format::Glm47,
            FormatArg::MinimaxM2 => Format::MiniMax,
            FormatArg::MistralV11 => Format::MistralV11,
            FormatArg::Pythonic => Format::Pythonic,
            FormatArg::ToolCode => Format::ToolCode,
            FormatArg::Gemma4 => Format::Gemma4,
            FormatArg::CommandA => Format::Command,
            FormatArg::CommandAReasoning => Format::CommandReasoning,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum ReasoningArg {
    Allowed,
    Forced,
    Forbidden,
}

impl ToolsArgs {
    fn options(&self) -> Options {
        let format = self.format.format();
        Options {
            format,
            reasoning: match self.reasoning {
                None => format.default_reasoning(),
                Some(ReasoningArg::Allowed) => Reasoning::Allowed,
                Some(ReasoningArg::Forced) => Reasoning::Forced,
                Some(ReasoningArg::Forbidden) => Reasoning::Forbidden,
            },
            tool_choice: match (&self.allowed_tools, self.tool_choice.as_str()) {
                (Some(names), mode) => ToolChoice::Allowed {
                    names: names.clone(),
                    required: mode == "required",
                },
                (None, "auto") => ToolChoice::Auto,
                (None, "required") => ToolChoice::Required,
                (None, "none") => ToolChoice::None,
                (None, name) => ToolChoice::Function(name.to_string()),
            },
            parallel_calls: !self.no_parallel_calls,
        }
    }
}

/// `xg tools`: prints the grammar; true if the tool list makes one (and,
/// with a tokenizer, it compiles).
pub fn run(args: &ToolsArgs, color: bool) -> Result<bool> {
    if args.allowed_tools.is_some() && !matches!(args.tool_choice.as_str(), "auto" | "required") {
        anyhow::bail!(
            "with --allowed-tools, --tool-choice is the mode: `auto` or `required`, not `{}`",
            args.tool_choice
        );
    }
    let (mut request, file, value) = read(&args.tools)?;
    let options = args.options();
    // With the model's vocabulary, markers that are its special tokens are
    // written as tokens.
    if let Some(tokenizer) = &args.tokenizer {
        let (vocabulary, _) = Model {
            tokenizer,
            config: None,
            stop: &[],
        }
        .load()?;
        request.sources.set_vocabulary(Arc::new(vocabulary));
    }
    let text = tools::parse(&value).and_then(|listed| {
        tools::to_xg(&listed, &options, request.sources.vocabulary()).map_err(|error| vec![error])
    });
    let text = match text {
        Ok(text) => text,
        Err(errors) => {
            for error in &errors {
                tools::diagnose(error, &request.sources, file, &mut request.diagnostics);
            }
            eprint!("{}", request.diagnostics.render(&request.sources, color));
            return Ok(false);
        }
    };
    out!("{text}");
    if args.tokenizer.is_none() && matches!(options.format, Format::Mistral | Format::Harmony) {
        eprintln!(
            "note: the {} format names special tokens; give --tokenizer to compile the grammar",
            options.format
        );
        return Ok(true);
    }
    Ok(compile(&value, &options, request, file, color))
}

/// Compiles the tool list, printing diagnostics and the time taken.
fn compile(
    value: &serde_json::Value,
    options: &Options,
    mut request: Request,
    file: xg_compiler::FileId,
    color: bool,
) -> bool {
    let started = Instant::now();
    let grammar = pipeline::tools(&mut request, value, file, options);
    let elapsed = started.elapsed();
    eprint!("{}", request.diagnostics.render(&request.sources, color));
    if let Some(grammar) = grammar {
        // Tables hold more rules than `xg check` counts in the text:
        // dispatch arms and nested repetitions become rules of their own.
        eprintln!(
            "compiled in {:.2} ms into tables of {} rules",
            elapsed.as_secs_f64() * 1e3,
            grammar.tables().rules.len()
        );
    }
    !request.diagnostics.has_errors()
}

/// The tool list's text and JSON, added to a new request (default limits).
fn read(path: &Path) -> Result<(Request, xg_compiler::FileId, serde_json::Value)> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("`{}` is not JSON", path.display()))?;
    let mut request = Request::new(&Limits::default(), &CompileCache::default());
    let file = request.add(path.display().to_string(), &text);
    Ok((request, file, value))
}
