//! Tool calling: a request's tool definitions (OpenAI style: a name and a
//! JSON Schema for the arguments) and a model family's format → the grammar
//! of the model's turn: reasoning, free text, then calls, each dispatched
//! to its tool's argument schema.
//!
//! The grammar is written as `.xg` text ([`to_xg`]) on top of the format
//! files of the standard library (`std/qwen.xg`, `std/harmony.xg`, …), so
//! what a request compiles to can be printed, read and edited (`xg tools`),
//! and goes through the same front end as any grammar
//! ([`crate::pipeline::tools`]). Argument schemas are embedded with
//! `%json`; a tool's argument rules have the same structure in every
//! request that lists it, so their token masks are shared across requests
//! through the vocabulary's mask cache.

use std::fmt::{self, Write as _};

use serde_json::Value;

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::json_schema::locate::locate;
use crate::source::{FileId, Sources, Span};
use crate::syntax::print::string as literal;
use xg_runtime::Vocabulary;

/// A model family's tool-calling format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Qwen2.5, Qwen3, Hermes: `<tool_call>\n{"name": …, "arguments": …}\n</tool_call>`.
    Qwen,
    /// Llama 3.1–3.3 custom tools in JSON: `{"name": …, "parameters": …}`.
    Llama3,
    /// Llama 3.1's `<function=NAME>{…}</function>` form.
    Llama3Function,
    /// Mistral (tokenizer v3): the token `[TOOL_CALLS]`, then a JSON array of calls.
    Mistral,
    /// DeepSeek V3 / R1: `<｜tool▁calls▁begin｜>…<｜tool▁calls▁end｜>`.
    DeepSeek,
    /// gpt-oss Harmony: channels `analysis`, `commentary`, `final`; calls
    /// to `functions.NAME` on `commentary`, the recipient in the channel's
    /// header or the message's.
    Harmony,
    /// Qwen3-Coder (and Qwen3.5): `<tool_call>\n<function=NAME>\n`, then
    /// each argument as `<parameter=KEY>\nVALUE\n</parameter>\n`, then
    /// `</function>\n</tool_call>`; a string value is raw text, others JSON.
    Qwen3Coder,
    /// DeepSeek V3.1: `<｜tool▁calls▁begin｜>`, then each call as
    /// `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>`, then
    /// `<｜tool▁calls▁end｜>`. In thinking mode the prompt opens the
    /// reasoning ([`Reasoning::Forced`]).
    DeepSeekV31,
    /// DeepSeek V3.2: its DSML block, `<｜DSML｜function_calls>`, each call
    /// `<｜DSML｜invoke name="NAME">` with arguments as
    /// `<｜DSML｜parameter name="KEY" string="true|false">VALUE</｜DSML｜parameter>`,
    /// then `</｜DSML｜function_calls>`; reasoning as V3.1's.
    DeepSeekV32,
    /// DeepSeek V4: V3.2's calls in a `<｜DSML｜tool_calls>` block; the
    /// prompt opens the reasoning in thinking mode (else closes it).
    DeepSeekV4,
    /// Kimi K2 (Instruct, Thinking, K2.5): a section between
    /// `<|tool_calls_section_begin|>` and `<|tool_calls_section_end|>`, each
    /// call `<|tool_call_begin|>functions.NAME:INDEX<|tool_call_argument_begin|>{…}<|tool_call_end|>`.
    Kimi,
    /// GLM-4.5 and 4.6: `<tool_call>NAME`, then each argument as
    /// `<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>` (line breaks
    /// between), then `</tool_call>`; a string value is raw text.
    Glm45,
    /// GLM-4.7: GLM-4.5's calls without the line breaks, and reasoning the
    /// prompt opens (`<think>` ends it unless thinking is off).
    Glm47,
    /// MiniMax M2: `<minimax:tool_call>`, each call `<invoke name="NAME">`
    /// with arguments as `<parameter name="KEY">VALUE</parameter>`, then
    /// `</minimax:tool_call>`; the prompt opens the reasoning.
    MiniMax,
    /// Pythonic calls (Llama 4, Llama 3.2's pythonic template, Gemma 3 as
    /// vLLM prompts it): the whole turn is `[NAME(KEY=VALUE, …), …]`, each
    /// value a Python literal, or text that does not begin with `[`; Llama
    /// 4's `<|python_start|>` … `<|python_end|>` may wrap the calls.
    Pythonic,
    /// Command A and Command R7B: optional reasoning between
    /// `<|START_THINKING|>` and `<|END_THINKING|>`, then either calls, a
    /// JSON list of `{"tool_call_id": …, "tool_name": …, "parameters": …}`
    /// between `<|START_ACTION|>` and `<|END_ACTION|>`, or the answer
    /// between `<|START_RESPONSE|>` and `<|END_RESPONSE|>`.
    Command,
    /// Mistral with tokenizer v11 and later (Mistral Small 3.2, Magistral,
    /// Devstral): each call `[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{…}`, the id
    /// optional.
    MistralV11,
    /// Kimi K3 (XTML): the prompt opens the `think` channel (or, thinking
    /// off, `response`); the turn closes it with `<|close|>think<|sep|>`,
    /// writes `<|open|>response<|sep|>` text `<|close|>response<|sep|>`,
    /// then optionally `<|open|>tools<|sep|>` and each call as
    /// `<|open|>call tool="NAME" index="N"<|sep|>`, its arguments in
    /// [`XmlStyle::KimiK3`], `<|close|>call<|sep|>`, then
    /// `<|close|>tools<|sep|>`, and ends with `<|close|>message<|sep|>`.
    KimiK3,
    /// Calls in a Python code block (Gemma 3 and 2 as Google's cookbook
    /// prompts them): text, then ```` ```tool_code ```` and a line per call,
    /// `NAME(KEY=VALUE, …)` (or inside `print(…)`), each value a Python
    /// literal, then ```` ``` ````.
    ToolCode,
    /// Qwen3.5: Qwen3-Coder's calls, and reasoning the prompt opens
    /// (`<think>` ends the prompt unless thinking is off).
    Qwen35,
    /// Command A Reasoning: the prompt opens `<|START_THINKING|>` (thinking
    /// off: writes `<|START_THINKING|><|END_THINKING|>`); the turn ends the
    /// reasoning, then calls as Command A's or the answer between
    /// `<|START_TEXT|>` and `<|END_TEXT|>`.
    CommandReasoning,
    /// Gemma 4: optional reasoning `<|channel>thought…<channel|>`, text,
    /// then calls `<|tool_call>call:NAME{KEY:VALUE,…}<tool_call|>` in
    /// Gemma's notation (keys bare and sorted, strings between `<|"|>`
    /// tokens), then more text.
    Gemma4,
}

impl Format {
    /// Every format, in the order the documentation lists them.
    pub const ALL: [Format; 22] = [
        Format::Qwen,
        Format::Qwen3Coder,
        Format::Qwen35,
        Format::Llama3,
        Format::Llama3Function,
        Format::Pythonic,
        Format::ToolCode,
        Format::Gemma4,
        Format::Mistral,
        Format::MistralV11,
        Format::DeepSeek,
        Format::DeepSeekV31,
        Format::DeepSeekV32,
        Format::DeepSeekV4,
        Format::Kimi,
        Format::KimiK3,
        Format::Glm45,
        Format::Glm47,
        Format::MiniMax,
        Format::Command,
        Format::CommandReasoning,
        Format::Harmony,
    ];

    /// The format's name on the command line (`qwen`, `llama3-function`, …).
    pub fn name(self) -> &'static str {
        match self {
            Format::Qwen => "qwen",
            Format::Llama3 => "llama3",
            Format::Llama3Function => "llama3-function",
            Format::Mistral => "mistral",
            Format::DeepSeek => "deepseek",
            Format::Harmony => "harmony",
            Format::Qwen3Coder => "qwen3-coder",
            Format::Qwen35 => "qwen3.5",
            Format::Gemma4 => "gemma-4",
            Format::CommandReasoning => "command-a-reasoning",
            Format::DeepSeekV31 => "deepseek-v3.1",
            Format::DeepSeekV32 => "deepseek-v3.2",
            Format::DeepSeekV4 => "deepseek-v4",
            Format::Kimi => "kimi-k2",
            Format::KimiK3 => "kimi-k3",
            Format::ToolCode => "tool-code",
            Format::Glm45 => "glm-4.5",
            Format::Glm47 => "glm-4.7",
            Format::MiniMax => "minimax-m2",
            Format::MistralV11 => "mistral-v11",
            Format::Pythonic => "pythonic",
            Format::Command => "command-a",
        }
    }

    /// Whether the family's template opens the reasoning in the prompt
    /// (its generation prompt ends with `<think>` in thinking mode; Kimi
    /// K3's with `<|open|>think<|sep|>`), so that forced reasoning is the
    /// rest of the block.
    pub fn prompt_opens_reasoning(self) -> bool {
        matches!(
            self,
            Format::DeepSeekV31
                | Format::DeepSeekV32
                | Format::DeepSeekV4
                | Format::Glm47
                | Format::MiniMax
                | Format::KimiK3
                | Format::Qwen35
                | Format::CommandReasoning
        )
    }

    /// The reasoning a turn has when the request does not say: what the
    /// family's template does by default (GLM-4.7, MiniMax M2, Kimi K3 and
    /// Qwen3.5 open the reasoning in the prompt), else
    /// [`Reasoning::Allowed`].
    pub fn default_reasoning(self) -> Reasoning {
        match self {
            Format::Glm47
            | Format::MiniMax
            | Format::KimiK3
            | Format::Qwen35
            | Format::CommandReasoning => Reasoning::Forced,
            _ => Reasoning::Allowed,
        }
    }

    /// The format called `name`.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }
}

impl Format {
    /// How the format writes a call's arguments, if as XML.
    fn xml_style(self) -> Option<XmlStyle> {
        match self {
            Format::Qwen3Coder | Format::Qwen35 => Some(XmlStyle::Qwen),
            Format::Glm45 | Format::Glm47 => Some(XmlStyle::Glm),
            Format::MiniMax => Some(XmlStyle::MiniMax),
            Format::DeepSeekV32 | Format::DeepSeekV4 => Some(XmlStyle::DeepSeek),
            Format::KimiK3 => Some(XmlStyle::KimiK3),
            _ => None,
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the model may do before answering: reasoning in `<think>…</think>`
/// (in Harmony: messages on the `analysis` channel).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Reasoning {
    /// Reasoning may come first.
    #[default]
    Allowed,
    /// Reasoning must come first.
    Forced,
    /// No reasoning.
    Forbidden,
}

/// Which calls the turn may or must contain (OpenAI's `tool_choice`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum ToolChoice {
    /// Text, calls, or both, as the format allows.
    #[default]
    Auto,
    /// At least one call, no answer text.
    Required,
    /// Text only.
    None,
    /// Calls of this tool only, at least one.
    Function(String),
    /// Calls of these listed tools only (OpenAI's `allowed_tools`): the
    /// others stay in the request, so the prompt, and the cache, are the
    /// same whichever subset a turn allows. With `required`, at least one
    /// call and no answer text; else as `Auto`.
    Allowed {
        /// The names of the tools the turn may call.
        names: Vec<String>,
        /// Whether a call is required (`mode: "required"`).
        required: bool,
    },
}

/// How a request's tools become a grammar.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// The model family's format.
    pub format: Format,
    /// Reasoning before the answer.
    pub reasoning: Reasoning,
    /// Which calls are allowed or required.
    pub tool_choice: ToolChoice,
    /// Several calls in one turn (OpenAI's `parallel_tool_calls`). Harmony
    /// ends a turn at its first call whatever this says.
    pub parallel_calls: bool,
}

impl Options {
    /// `format` with its default reasoning ([`Format::default_reasoning`]),
    /// tool choice `auto` and parallel calls.
    pub fn new(format: Format) -> Self {
        Self {
            format,
            reasoning: format.default_reasoning(),
            tool_choice: ToolChoice::default(),
            parallel_calls: true,
        }
    }
}

/// One callable tool.
#[derive(Clone, Debug, PartialEq)]
pub struct Tool {
    /// The function's name: ASCII letters, digits, `_`, `-` and `.`.
    pub name: String,
    /// The JSON Schema of its arguments.
    pub parameters: Value,
    /// The JSON pointer of its definition in the request.
    pub pointer: String,
}

/// A tool list or option that cannot become a grammar, with the JSON
/// pointer of the offending part of the tool list (`#` for the whole).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError {
    /// Where, as a JSON pointer into the tool list.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.pointer, self.message)
    }
}

impl std::error::Error for ToolError {}

/// `error` as a diagnostic at the part of the tool list (the text of `file`
/// in `sources`) its pointer names.
pub fn diagnose(error: &ToolError, sources: &Sources, file: FileId, diagnostics: &mut Diagnostics) {
    let span = locate(sources.text(file), &error.pointer).map_or(Span::new(file, 0, 0), |range| {
        Span::new(file, range.start, range.end)
    });
    diagnostics.push(Diagnostic::error("tools", error.to_string(), span, "here"));
}

/// Reads a request's tool list: an array (or `{"tools": [...]}`) of OpenAI
/// Chat Completions tools (`{"type": "function", "function": {"name",
/// "parameters", …}}`), Responses API tools (`{"type": "function", "name",
/// "parameters"}`) or bare `{"name", "parameters"}` objects. A tool without
/// `parameters` takes none (`{}`). Every problem is reported at once.
pub fn parse(tools: &Value) -> Result<Vec<Tool>, Vec<ToolError>> {
    if let Some(pointer) = crate::json_schema::too_deep(tools) {
        return Err(vec![error(
            &pointer,
            crate::json_schema::too_deep_message(),
        )]);
    }
    let (list, base) = match tools {
        Value::Array(list) => (list, String::from("#")),
        Value::Object(object) => match object.get("tools") {
            Some(Value::Array(list)) => (list, String::from("#/tools")),
            _ => {
                return Err(vec![error(
                    "#",
                    "expected an array of tools, or an object with a `tools` array",
                )]);
            }
        },
        _ => return Err(vec![error("#", "expected an array of tools")]),
    };
    let mut parsed = Vec::new();
    let mut errors = Vec::new();
    for (i, tool) in list.iter().enumerate() {
        let pointer = format!("{base}/{i}");
        match parse_tool(tool, &pointer) {
            Ok(tool) => parsed.push(tool),
            Err(e) => errors.push(e),
        }
    }
    for (i, tool) in parsed.iter().enumerate() {
        if parsed[..i].iter().any(|t| t.name == tool.name) {
            errors.push(error(
                &format!("{}/name", tool.pointer),
                format!("a second tool named `{}`", tool.name),
            ));
        }
    }
    if errors.is_empty() {
        Ok(parsed)
    } else {
        Err(errors)
    }
}

fn parse_tool(tool: &Value, pointer: &str) -> Result<Tool, ToolError> {
    let Some(object) = tool.as_object() else {
        return Err(error(pointer, "a tool is a JSON object"));
    };
    let (function, pointer) = match object.get("type") {
        Some(Value::String(kind)) if kind != "function" => {
            return Err(error(
                &format!("{pointer}/type"),
                format!("only function tools are called through a grammar, not `{kind}`"),
            ));
        }
        Some(kind) if !kind.is_string() => {
            return Err(error(&format!("{pointer}/type"), "expected a string"));
        }
        _ => match object.get("function") {
            Some(Value::Object(function)) => (function, format!("{pointer}/function")),
            Some(_) => return Err(error(&format!("{pointer}/function"), "expected an object")),
            None => (object, pointer.to_string()),
        },
    };
    let name = match function.get("name") {
        Some(Value::String(name)) => name,
        Some(_) => return Err(error(&format!("{pointer}/name"), "expected a string")),
        None => return Err(error(&pointer, "a tool needs a `name`")),
    };
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        return Err(error(
            &format!("{pointer}/name"),
            format!(
                "`{name}` is not a function name (ASCII letters, digits, `_`, `-` and `.`, not empty)"
            ),
        ));
    }
    let parameters = match function.get("parameters") {
        None | Some(Value::Null) => {
            serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false})
        }
        Some(Value::Bool(true)) => serde_json::json!({"type": "object"}),
        Some(schema @ Value::Object(_)) => schema.clone(),
        Some(Value::Bool(false)) => {
            return Err(error(
                &format!("{pointer}/parameters"),
                "`false` accepts no arguments: the tool could never be called",
            ));
        }
        Some(_) => {
            return Err(error(
                &format!("{pointer}/parameters"),
                "expected a JSON Schema (an object)",
            ));
        }
    };
    Ok(Tool {
        name: name.clone(),
        parameters,
        pointer,
    })
}

fn error(pointer: &str, message: impl Into<String>) -> ToolError {
    ToolError {
        pointer: pointer.to_string(),
        message: message.into(),
    }
}

/// The `.xg` grammar of a turn calling `tools` as `options` say. A format's
/// marker (`<|tool_call_begin|>`, `[ARGS]`, …) is written as the special
/// token of that name where `vocabulary` has one (`Token("…")`), else as
/// text: tokenizers differ on which markers are special. Errors: a tool
/// choice naming no listed tool, or requiring a call with no tools.
pub fn to_xg(
    tools: &[Tool],
    options: &Options,
    vocabulary: Option<&Vocabulary>,
) -> Result<String, ToolError> {
    let listed = |name: &String| {
        tools.iter().find(|t| &t.name == name).ok_or_else(|| {
            error(
                "#",
                format!("the tool choice names `{name}`, which is not a listed tool"),
            )
        })
    };
    let callable: Vec<&Tool> = match &options.tool_choice {
        ToolChoice::None => Vec::new(),
        ToolChoice::Function(name) => vec![listed(name)?],
        ToolChoice::Allowed { names, .. } => {
            // In the request's order, each once.
            for name in names {
                listed(name)?;
            }
            tools.iter().filter(|t| names.contains(&t.name)).collect()
        }
        ToolChoice::Auto | ToolChoice::Required => tools.iter().collect(),
    };
    let must_call = matches!(
        options.tool_choice,
        ToolChoice::Required | ToolChoice::Function(_) | ToolChoice::Allowed { required: true, .. }
    );
    if must_call && callable.is_empty() {
        return Err(error(
            "#",
            "the tool choice requires a call, and no tools are listed",
        ));
    }
    let writer = Writer {
        options,
        tools: with_argument_rules(callable),
        must_call,
        vocabulary,
    };
    Ok(writer.write())
}

/// The head of the rule of the answer's text: captured as `text`
/// ([`xg_runtime::TEXT_CAPTURE`]).
const TEXT: &str = "text [capture]";

/// An optional line break, as `.xg` text with the space that follows it.
const LINE_BREAK: &str = "\"\\n\"? ";

/// GLM-4.5's reasoning rules: a line break may come before `<think>`.
const LEAD: [(&str, &str); 2] = [
    ("lead_think", "\"\\n\"? reasoning.think"),
    ("lead_block", "\"\\n\"? reasoning.block"),
];

/// What opens reasoning; the answer text never contains it.
const THINK: &str = "<think>";

/// Free text without [`THINK`] (a tag dispatch excluding it).
const FREE_TEXT: &str = "dispatch(exclude=(\"<think>\")) {}";

/// The name a call's arguments are captured under
/// ([`xg_runtime::Matcher::captures`]): `tool:` and the tool's name.
pub fn capture_name(tool: &Tool) -> String {
    format!("tool:{}", tool.name)
}

/// Each tool with a rule name for its arguments: `args_` and the tool's
/// name with `-` and `.` made `_`, numbered when two tools would share one.
fn with_argument_rules(tools: Vec<&Tool>) -> Vec<(&Tool, String)> {
    let mut named: Vec<(&Tool, String)> = Vec::with_capacity(tools.len());
    for tool in tools {
        let base = format!("args_{}", tool.name.replace(['-', '.'], "_"));
        let mut name = base.clone();
        let mut n = 2;
        while named.iter().any(|(_, taken)| *taken == name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        named.push((tool, name));
    }
    named
}

/// Writes one grammar.
struct Writer<'a> {
    options: &'a Options,
    /// The tools the turn may call, each with its arguments' rule.
    tools: Vec<(&'a Tool, String)>,
    /// Tool choice `required` or a named function.
    must_call: bool,
    /// The model's vocabulary, which says which markers are special tokens.
    vocabulary: Option<&'a Vocabulary>,
}

impl Writer<'_> {
    fn write(&self) -> String {
        let options = self.options;
        let mut out = String::new();
        let choice = match &options.tool_choice {
            ToolChoice::Auto => "auto".to_string(),
            ToolChoice::Required => "required".to_string(),
            ToolChoice::None => "none".to_string(),
            ToolChoice::Function(name) => format!("`{name}`"),
            ToolChoice::Allowed { names, required } => format!(
                "{} of {}",
                if *required { "required" } else { "auto" },
                names
                    .iter()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let _ = writeln!(
            out,
            "# Written by `xg tools --format {}`: {} tool(s), tool choice {choice}, {} calls, reasoning {}.",
            options.format,
            self.tools.len(),
            if options.parallel_calls {
                "parallel"
            } else {
                "single"
            },
            match options.reasoning {
                Reasoning::Allowed => "allowed",
                Reasoning::Forced => "forced",
                Reasoning::Forbidden => "forbidden",
            }
        );
        let format = options.format;
        if format == Format::Harmony {
            out.push_str("import \"std/harmony.xg\" as harmony;\n");
        } else if matches!(
            format,
            Format::Command | Format::CommandReasoning | Format::KimiK3 | Format::Gemma4
        ) {
            // Their own reasoning markers.
        } else if options.reasoning != Reasoning::Forbidden {
            out.push_str("import \"std/reasoning.xg\" as reasoning;\n");
        }
        if format == Format::Mistral && !self.tools.is_empty() {
            out.push_str("import \"std/mistral.xg\" as mistral;\n");
        }
        out.push('\n');
        let rules = match format {
            Format::Qwen => self.qwen(),
            Format::Llama3 => self.llama3(),
            Format::Llama3Function => self.llama3_function(),
            Format::Mistral => self.mistral(),
            Format::DeepSeek => self.deepseek(),
            Format::Harmony => self.harmony(),
            Format::Qwen3Coder | Format::Qwen35 => self.qwen3_coder(),
            Format::DeepSeekV31 => self.deepseek_v31(),
            Format::DeepSeekV32 => self.dsml("function_calls"),
            Format::DeepSeekV4 => self.dsml("tool_calls"),
            Format::Kimi => self.kimi(),
            Format::Glm45 | Format::Glm47 => self.glm(),
            Format::MiniMax => self.minimax(),
            Format::MistralV11 => self.mistral_v11(),
            Format::Pythonic => self.pythonic(),
            Format::Command | Format::CommandReasoning => self.command(),
            Format::KimiK3 => self.kimi_k3(),
            Format::ToolCode => self.tool_code(),
            Format::Gemma4 => self.gemma4(),
        };
        for (name, body) in &rules {
            let _ = writeln!(out, "{name} ::= {body}\n");
        }
        for (name, body) in LEAD {
            if rules.iter().any(|(_, used)| used.contains(name)) {
                let _ = writeln!(out, "{name} ::= {body}\n");
            }
        }
        self.argument_rules(&mut out);
        out.pop();
        out
    }

    /// The rules of each callable tool's arguments (captured under the
    /// tool's name) in the format's notation, and the rules they share.
    fn argument_rules(&self, out: &mut String) {
        for (tool, rule) in &self.tools {
            // Each call's arguments are captured under the tool's name.
            let captured = format!("{rule} [capture={}]", literal(&capture_name(tool)));
            if self.options.format == Format::Gemma4 {
                for (name, body) in gemma_arguments(rule, &tool.parameters, self.vocabulary) {
                    let head = if name == *rule { &captured } else { &name };
                    let _ = writeln!(out, "{head} ::= {body}\n");
                }
            } else if matches!(self.options.format, Format::Pythonic | Format::ToolCode) {
                for (name, body) in keyword_arguments(rule, &tool.parameters) {
                    let head = if name == *rule { &captured } else { &name };
                    let _ = writeln!(out, "{head} ::= {body}\n");
                }
            } else if let Some(style) = self.options.format.xml_style() {
                for (name, body) in style.arguments(rule, &tool.parameters, self.vocabulary) {
                    if name != *rule {
                        let _ = writeln!(out, "{name} ::= {body}\n");
                    } else if matches!(style, XmlStyle::Qwen | XmlStyle::KimiK3) {
                        let _ = writeln!(out, "{captured} ::= {body}\n");
                    } else {
                        // The line break after the call's opening is part of
                        // its arguments: they begin at one place, so a call
                        // starts once.
                        let _ = writeln!(out, "{captured} ::= \"\\n\"? {body}\n");
                    }
                }
            } else {
                let _ = writeln!(out, "{captured} ::= %json {}\n", tool.parameters);
            }
        }
        if let Some(style) = self
            .options
            .format
            .xml_style()
            .filter(|_| !self.tools.is_empty())
        {
            let _ = writeln!(out, "{}", style.text_rule(self.vocabulary));
        }
        if self.options.format == Format::Gemma4 {
            for (name, body) in gemma_values(self.vocabulary) {
                if out.contains(name) {
                    let _ = writeln!(out, "{name} ::= {body}\n");
                }
            }
        }
    }

    /// `<think>` reasoning before the answer, as the options say; forced
    /// reasoning the prompt opened is the rest of the block.
    fn think(&self) -> String {
        self.reasoning("think", "thought reasoning.ws")
    }

    /// The reasoning block before text, as the options say: without the
    /// white space after it, which the text holds (so the turn reads one
    /// way, and the text is captured once).
    fn block(&self) -> String {
        self.reasoning("block", "thought")
    }

    /// The rule `whole` of `std/reasoning.xg` as the options say, or
    /// `opened` where forced reasoning was opened by the prompt. GLM-4.5
    /// writes a line break before `<think>`: its rules `lead_think` and
    /// `lead_block` ([`LEAD`]) take it, rules of their own so that the
    /// root's first items are the same in every request (their mask-cache
    /// entries are then shared).
    fn reasoning(&self, whole: &str, opened: &str) -> String {
        let format = self.options.format;
        let rule = if format == Format::Glm45 {
            format!("lead_{whole}")
        } else {
            format!("reasoning.{whole}")
        };
        match self.options.reasoning {
            Reasoning::Allowed => format!("{rule}? "),
            Reasoning::Forced if format.prompt_opens_reasoning() => format!("reasoning.{opened} "),
            Reasoning::Forced => format!("{rule} "),
            Reasoning::Forbidden => String::new(),
        }
    }

    /// Whether the model's vocabulary has a special token named `text`.
    fn is_special(&self, text: &str) -> bool {
        self.vocabulary
            .is_some_and(|vocabulary| vocabulary.special_token(text).is_some())
    }

    /// A format's marker: its special token where the vocabulary has one,
    /// else its text.
    fn marker(&self, text: &str) -> String {
        marker(self.vocabulary, text)
    }

    /// The root of a format whose calls come in one section after the text:
    /// the marker `open`, the calls (the rule `call`), each after `apart`,
    /// which also ends the last, then the marker `close`.
    fn section(&self, open: &str, apart: &str, close: &str) -> Vec<(&'static str, String)> {
        let one = format!("{apart}call");
        let calls = format!("{} {apart}{}", self.repeated(&one, ""), self.marker(close));
        self.sectioned(open, &calls)
    }

    /// The root of a format whose calls come in one section after the text,
    /// opened by the marker `open`; `after` is the rest of the section.
    fn sectioned(&self, open: &str, after: &str) -> Vec<(&'static str, String)> {
        if !self.is_special(open) {
            let one = format!("{} {after}", literal(open));
            return self.triggered(open, after, &one, None);
        }
        // Free text never holds a special token: the section follows it.
        let section = format!("{} {after}", self.marker(open));
        self.special_calls(&section)
    }

    /// The root of a format whose calls (`calls`, one or more) begin with a
    /// special token, so the text before them is any free text.
    fn special_calls(&self, calls: &str) -> Vec<(&'static str, String)> {
        let root = ("root", self.text_or_calls(calls, true));
        if self.must_call {
            vec![root]
        } else {
            vec![root, (TEXT, FREE_TEXT.to_string())]
        }
    }

    /// The body of a root of text (the rule `text`) and calls (`calls`):
    /// text alone without tools, calls alone when one is required, else
    /// text then optional calls (`after_text`) or one of the two; with
    /// reasoning first as the options say.
    fn text_or_calls(&self, calls: &str, after_text: bool) -> String {
        let (think, block) = (self.think(), self.block());
        if self.tools.is_empty() {
            format!("{block}text")
        } else if self.must_call {
            format!("{think}{calls}")
        } else if after_text {
            format!("{block}text ({calls})?")
        } else {
            format!("{think}{calls} | {block}text")
        }
    }

    /// The options of the answer text's dispatch: `once` (it ends after
    /// its arm), and the strings the text must not contain — `excluded`,
    /// and `<think>`: reasoning comes before the text or not at all, so
    /// the turn reads one way (the text's capture never holds reasoning).
    fn dispatch(once: bool, excluded: &[&str]) -> String {
        let mut excluded: Vec<String> = excluded.iter().map(|e| literal(e)).collect();
        excluded.push(literal(THINK));
        let mut options = Vec::new();
        if once {
            options.push("once".to_string());
        }
        if !excluded.is_empty() {
            options.push(format!("exclude=({})", excluded.join(", ")));
        }
        if options.is_empty() {
            "dispatch".to_string()
        } else {
            format!("dispatch({})", options.join(", "))
        }
    }

    /// One alternative per callable tool, written by `each` from the tool
    /// and its arguments' rule.
    fn calls(&self, each: impl Fn(&Tool, &str) -> String) -> String {
        self.tools
            .iter()
            .map(|(tool, rule)| each(tool, rule))
            .collect::<Vec<_>>()
            .join("\n    | ")
    }

    /// `first (separator first)*` when parallel calls are allowed.
    fn repeated(&self, one: &str, separator: &str) -> String {
        if self.options.parallel_calls {
            format!("{one} ({separator}{one})*")
        } else {
            one.to_string()
        }
    }

    /// The root of a format whose calls follow a trigger string in free
    /// text: with no tools, free text without the trigger; with a call
    /// required, `one` (a whole call, trigger included); else free text
    /// until the trigger, then `after` (the rest of the call). `separator`
    /// joins further calls when parallel calls are allowed; `None` when
    /// `one` repeats calls itself.
    fn triggered(
        &self,
        trigger: &str,
        after: &str,
        one: &str,
        separator: Option<&str>,
    ) -> Vec<(&'static str, String)> {
        let think = self.think();
        if self.tools.is_empty() {
            let text = format!("{} {{}}", Self::dispatch(false, &[trigger]));
            return vec![("root", format!("{}text", self.block())), (TEXT, text)];
        }
        let more = match separator {
            Some(separator) if self.options.parallel_calls => format!(" ({separator}{one})*"),
            _ => String::new(),
        };
        if self.must_call {
            return vec![("root", format!("{think}{one}{more}"))];
        }
        // The answer's text is the dispatch's free text, up to the first call.
        let text = format!(
            "{} {{\n    {} => {after}{more},\n}}",
            Self::dispatch(true, &[]),
            literal(trigger)
        );
        vec![("root", format!("{}text", self.block())), (TEXT, text)]
    }

    /// The JSON `{"name": "NAME", "KEY": ` that opens a call, as `.xg` text.
    fn json_call(tool: &Tool, key: &str, arguments: &str, close: &str) -> String {
        let name = serde_json::to_string(&tool.name).expect("strings serialize");
        format!(
            "{} {arguments} {}",
            literal(&format!("{{\"name\": {name}, \"{key}\": ")),
            literal(close)
        )
    }

    /// The root of the Qwen family: calls between `<tool_call>` and
    /// `</tool_call>` on lines of their own after the text.
    fn tool_call_lines(&self) -> Vec<(&'static str, String)> {
        self.triggered(
            "<tool_call>",
            "\"\\n\" call \"\\n</tool_call>\"",
            "\"<tool_call>\\n\" call \"\\n</tool_call>\"",
            Some("\"\\n\" "),
        )
    }

    fn qwen(&self) -> Vec<(&'static str, String)> {
        self.with_calls(self.tool_call_lines(), |tool, args| {
            Self::json_call(tool, "arguments", args, "}")
        })
    }

    fn llama3(&self) -> Vec<(&'static str, String)> {
        let calls = self.repeated("call", "\"; \" ");
        // A call is never text: text does not contain a call's opening.
        // The white space after reasoning is the block's, not the root's: a
        // root that scans white space first is new in every request, and
        // its mask-cache entry walks every token that begins with it.
        let root = self.text_or_calls(&calls, false);
        let text = if self.tools.is_empty() {
            FREE_TEXT.to_owned()
        } else if self.must_call {
            String::new()
        } else {
            format!(
                "dispatch(exclude=({}, {})) {{}}",
                literal(THINK),
                literal("{\"name\": ")
            )
        };
        let mut rules = self.with_calls(vec![("root", root)], |tool, args| {
            Self::json_call(tool, "parameters", args, "}")
        });
        if !text.is_empty() {
            rules.push((TEXT, text));
        }
        rules
    }

    fn llama3_function(&self) -> Vec<(&'static str, String)> {
        let root = self.triggered(
            "<function=",
            "call \"</function>\"",
            "\"<function=\" call \"</function>\"",
            Some(""),
        );
        self.with_calls(root, |tool, args| {
            format!("{} {args}", literal(&format!("{}>", tool.name)))
        })
    }

    fn mistral(&self) -> Vec<(&'static str, String)> {
        let calls = format!(
            "Token(\"[TOOL_CALLS]\") \"[\" {} \"]\"",
            self.repeated("call", "\", \" ")
        );
        let root = self.text_or_calls(&calls, true);
        let mut rules = self.with_calls(vec![("root", root)], |tool, args| {
            let name = serde_json::to_string(&tool.name).expect("strings serialize");
            format!(
                "{} {args} mistral.id? \"}}\"",
                literal(&format!("{{\"name\": {name}, \"arguments\": "))
            )
        });
        if self.tools.is_empty() || !self.must_call {
            rules.push((TEXT, FREE_TEXT.to_string()));
        }
        rules
    }

    fn deepseek(&self) -> Vec<(&'static str, String)> {
        let begin = "<｜tool▁calls▁begin｜>";
        let calls = format!(
            "{} \"<｜tool▁calls▁end｜>\"",
            self.repeated("call", "\"\\n\" ")
        );
        let one = format!("{} {calls}", literal(begin));
        let root = self.triggered(begin, &calls, &one, None);
        self.with_calls(root, |tool, args| {
            format!(
                "{} {args} {}",
                literal(&format!(
                    "<｜tool▁call▁begin｜>function<｜tool▁sep｜>{}\n```json\n",
                    tool.name
                )),
                literal("\n```<｜tool▁call▁end｜>")
            )
        })
    }

    fn harmony(&self) -> Vec<(&'static str, String)> {
        let messages = match self.options.reasoning {
            Reasoning::Allowed => "(harmony.message harmony.next)* ",
            Reasoning::Forced => "harmony.analysis harmony.next (harmony.message harmony.next)* ",
            Reasoning::Forbidden => "(harmony.preamble harmony.next)* ",
        };
        // The recipient in the channel's header (as gpt-oss writes calls)
        // or in the message's (as its template writes them).
        let call = "(Token(\"<|channel|>\") \"commentary to=functions.\" call \
                    | \" to=functions.\" header_call)";
        let root = if self.tools.is_empty() {
            format!("{messages}harmony.final")
        } else if self.must_call {
            format!("{messages}{call}")
        } else {
            format!("{messages}(harmony.final | {call})")
        };
        let mut rules = self.with_calls(vec![("root", root)], |tool, args| {
            format!(
                "{} harmony.constrain? Token(\"<|message|>\") {args}",
                literal(&tool.name)
            )
        });
        if !self.tools.is_empty() {
            let header = self.calls(|tool, args| {
                format!(
                    "{} Token(\"<|channel|>\") \"commentary\" harmony.constrain? Token(\"<|message|>\") {args}",
                    literal(&tool.name)
                )
            });
            rules.push(("header_call", header));
        }
        rules
    }

    fn qwen3_coder(&self) -> Vec<(&'static str, String)> {
        self.with_calls(self.tool_call_lines(), |tool, args| {
            format!(
                "{} {args} \"</function>\"",
                literal(&format!("<function={}>\n", tool.name))
            )
        })
    }

    fn deepseek_v31(&self) -> Vec<(&'static str, String)> {
        let root = self.section("<｜tool▁calls▁begin｜>", "", "<｜tool▁calls▁end｜>");
        let (begin, sep, end) = (
            self.marker("<｜tool▁call▁begin｜>"),
            self.marker("<｜tool▁sep｜>"),
            self.marker("<｜tool▁call▁end｜>"),
        );
        self.with_calls(root, |tool, args| {
            format!("{begin} {} {sep} {args} {end}", literal(&tool.name))
        })
    }

    /// DeepSeek's DSML calls in the block `<｜DSML｜{block}>` (V3.2's
    /// `function_calls`, V4's `tool_calls`).
    fn dsml(&self, block: &str) -> Vec<(&'static str, String)> {
        let root = self.section(
            &format!("<｜DSML｜{block}>"),
            LINE_BREAK,
            &format!("</｜DSML｜{block}>"),
        );
        self.with_calls(root, |tool, args| {
            format!(
                "{} {args} {}",
                literal(&format!("<｜DSML｜invoke name=\"{}\">", tool.name)),
                self.marker("</｜DSML｜invoke>")
            )
        })
    }

    fn kimi(&self) -> Vec<(&'static str, String)> {
        let root = self.section(
            "<|tool_calls_section_begin|>",
            "",
            "<|tool_calls_section_end|>",
        );
        let (begin, arguments, end) = (
            self.marker("<|tool_call_begin|>"),
            self.marker("<|tool_call_argument_begin|>"),
            self.marker("<|tool_call_end|>"),
        );
        let mut rules = self.with_calls(root, |tool, args| {
            format!(
                "{begin} {} call_index {arguments} {args} {end}",
                literal(&format!("functions.{}:", tool.name))
            )
        });
        if !self.tools.is_empty() {
            // The template numbers calls across the conversation.
            rules.push(("call_index", "\"0\" | [1-9] [0-9]*".to_string()));
        }
        rules
    }

    fn glm(&self) -> Vec<(&'static str, String)> {
        let root = self.each_opened("<tool_call>", LINE_BREAK);
        let close = self.marker("</tool_call>");
        self.with_calls(root, |tool, args| {
            format!("{} {args} {close}", literal(&tool.name))
        })
    }

    fn minimax(&self) -> Vec<(&'static str, String)> {
        let root = self.section("<minimax:tool_call>", LINE_BREAK, "</minimax:tool_call>");
        self.with_calls(root, |tool, args| {
            format!(
                "{} {args} \"</invoke>\"",
                literal(&format!("<invoke name=\"{}\">", tool.name))
            )
        })
    }

    fn mistral_v11(&self) -> Vec<(&'static str, String)> {
        let root = self.each_opened("[TOOL_CALLS]", "");
        let (id, arguments) = (self.marker("[CALL_ID]"), self.marker("[ARGS]"));
        let mut rules = self.with_calls(root, |tool, args| {
            format!("{} call_id? {arguments} {args}", literal(&tool.name))
        });
        if !self.tools.is_empty() {
            rules.push(("call_id", format!("{id} [a-zA-Z0-9]{{9}}")));
        }
        rules
    }

    fn pythonic(&self) -> Vec<(&'static str, String)> {
        let list = format!("\"[\" {} \"]\"", self.repeated("call", "\",\" \" \"? "));
        // Llama 4 may wrap the calls in its python tokens; as text they
        // would be read as text too, so only as tokens.
        let calls = if self.is_special("<|python_start|>") && self.is_special("<|python_end|>") {
            format!(
                "({} {list} {} | {list})",
                self.marker("<|python_start|>"),
                self.marker("<|python_end|>")
            )
        } else {
            list
        };
        // A call list is never text: text does not begin with `[`. The list
        // is a rule of its own: a root that scans `[` itself would be new in
        // every request, its mask-cache entry with it.
        let root = self.text_or_calls("call_list", false);
        let mut rules = self.with_calls(vec![("root", root)], |tool, args| {
            format!("{} {args} \")\"", literal(&format!("{}(", tool.name)))
        });
        if !self.tools.is_empty() {
            rules.push(("call_list", calls));
        }
        if self.tools.is_empty() {
            rules.push((TEXT, FREE_TEXT.to_string()));
        } else if !self.must_call {
            rules.push((TEXT, format!("([^\\[] {FREE_TEXT})?")));
        }
        rules
    }

    fn tool_code(&self) -> Vec<(&'static str, String)> {
        let open = "```tool_code\n";
        let lines = format!(
            "{} \"\\n\"? \"```\"",
            self.repeated("code_line", "\"\\n\" ")
        );
        let one = format!("{} {lines}", literal(open));
        let root = self.triggered(open, &lines, &one, None);
        let mut rules = self.with_calls(root, |tool, args| {
            format!("{} {args} \")\"", literal(&format!("{}(", tool.name)))
        });
        if !self.tools.is_empty() {
            rules.push(("code_line", "call | \"print(\" call \")\"".to_string()));
        }
        rules
    }

    fn gemma4(&self) -> Vec<(&'static str, String)> {
        let think = match self.options.reasoning {
            Reasoning::Allowed => "thinking? ",
            Reasoning::Forced => "thinking ",
            Reasoning::Forbidden => "",
        };
        let calls = self.repeated("call", "");
        let root = if self.tools.is_empty() {
            format!("{think}text")
        } else if self.must_call {
            format!("{think}{calls}")
        } else {
            // The template writes the text after the calls; parsers also
            // take text before them.
            format!("{think}text ({calls} after_calls)?")
        };
        let (open, close) = (self.marker("<|tool_call>"), self.marker("<tool_call|>"));
        let mut rules = self.with_calls(vec![("root", root)], |tool, args| {
            format!(
                "{open} {} {args} {close}",
                literal(&format!("call:{}", tool.name))
            )
        });
        let text = text_until(self.vocabulary, "<|tool_call>");
        if !self.tools.is_empty() && !self.must_call {
            rules.push(("after_calls [capture=\"text\"]", text.clone()));
        }
        if !self.must_call {
            rules.push((TEXT, text));
        }
        if self.options.reasoning != Reasoning::Forbidden {
            rules.push((
                "thinking",
                format!(
                    "{} \"thought\" thought {}",
                    self.marker("<|channel>"),
                    self.marker("<channel|>")
                ),
            ));
            rules.push((
                "thought [capture=\"reasoning\"]",
                text_until(self.vocabulary, "<channel|>"),
            ));
        }
        rules
    }

    fn command(&self) -> Vec<(&'static str, String)> {
        let opened = self.options.format == Format::CommandReasoning;
        let think = match self.options.reasoning {
            // The prompt opened the reasoning: the rest of it.
            Reasoning::Allowed | Reasoning::Forced if opened => {
                format!("thought {} ", self.marker("<|END_THINKING|>"))
            }
            Reasoning::Allowed => "thinking? ".to_string(),
            Reasoning::Forced => "thinking ".to_string(),
            Reasoning::Forbidden => String::new(),
        };
        let (open, close) = if opened {
            ("<|START_TEXT|>", "<|END_TEXT|>")
        } else {
            ("<|START_RESPONSE|>", "<|END_RESPONSE|>")
        };
        let action = format!(
            "{} \"[\" list_ws {} list_ws \"]\" {}",
            self.marker("<|START_ACTION|>"),
            self.repeated("call", "\",\" list_ws "),
            self.marker("<|END_ACTION|>")
        );
        let response = format!("{} text {}", self.marker(open), self.marker(close));
        let root = if self.tools.is_empty() {
            format!("{think}{response}")
        } else if self.must_call {
            format!("{think}{action}")
        } else {
            format!("{think}({action} | {response})")
        };
        let mut rules = self.with_calls(vec![("root", root)], |tool, args| {
            format!(
                "\"{{\\\"tool_call_id\\\": \" call_id {} {args} \"}}\"",
                literal(&format!(
                    ", \"tool_name\": {}, \"parameters\": ",
                    serde_json::to_string(&tool.name).expect("strings serialize")
                ))
            )
        });
        if !self.tools.is_empty() {
            rules.push(("call_id", "\"\\\"\" [A-Za-z0-9_\\-]* \"\\\"\"".to_string()));
            rules.push(("list_ws", "[ \\t\\n\\r]{0,32}".to_string()));
        }
        if !self.must_call {
            rules.push((TEXT, self.until(close)));
        }
        if self.options.reasoning != Reasoning::Forbidden && !opened {
            rules.push((
                "thinking",
                format!(
                    "{} thought {}",
                    self.marker("<|START_THINKING|>"),
                    self.marker("<|END_THINKING|>")
                ),
            ));
        }
        if self.options.reasoning != Reasoning::Forbidden {
            rules.push((
                "thought [capture=\"reasoning\"]",
                self.until("<|END_THINKING|>"),
            ));
        }
        rules
    }

    fn kimi_k3(&self) -> Vec<(&'static str, String)> {
        let tag = |marker: &str, name: &str| {
            format!(
                "{} {} {}",
                self.marker(marker),
                literal(name),
                self.marker(XTML_SEP)
            )
        };
        let (open, close) = (|name| tag(XTML_OPEN, name), |name| tag(XTML_CLOSE, name));
        // The prompt opened `think` (thinking on) or `response`.
        let mut response = match self.options.reasoning {
            Reasoning::Forbidden => String::new(),
            Reasoning::Allowed | Reasoning::Forced => {
                format!("thought {} {} ", close("think"), open("response"))
            }
        };
        if !self.must_call {
            response.push_str("text ");
        }
        response.push_str(&close("response"));
        let tools = format!(
            "{} {} {}",
            open("tools"),
            self.repeated("call", ""),
            close("tools")
        );
        let end = close("message");
        let root = if self.tools.is_empty() {
            format!("{response} {end}")
        } else if self.must_call {
            format!("{response} {tools} {end}")
        } else {
            format!("{response} ({tools})? {end}")
        };
        let mut rules = self.with_calls(vec![("root", root)], |tool, args| {
            format!(
                "{} {} call_index \"\\\"\" {} {args} {}",
                self.marker(XTML_OPEN),
                literal(&format!(
                    "call tool=\"{}\" index=\"",
                    xtml_attribute(&tool.name)
                )),
                self.marker(XTML_SEP),
                close("call")
            )
        });
        let text = text_until(self.vocabulary, XTML_CLOSE);
        if !self.tools.is_empty() {
            // The encoder numbers the calls of a turn from 1.
            rules.push(("call_index", "[1-9] [0-9]*".to_string()));
        }
        if !self.must_call {
            rules.push((TEXT, text.clone()));
        }
        if self.options.reasoning != Reasoning::Forbidden {
            rules.push(("thought [capture=\"reasoning\"]", text));
        }
        rules
    }

    /// Free text up to the marker `close` (not included): any text where it
    /// is a special token, else a dispatch that excludes it.
    fn until(&self, close: &str) -> String {
        if self.is_special(close) {
            FREE_TEXT.to_string()
        } else {
            format!(
                "dispatch(exclude=({}, {})) {{}}",
                literal(close),
                literal(THINK)
            )
        }
    }

    /// The root of a format whose every call (the rule `call`) follows the
    /// marker `open`, calls apart by `separator`.
    fn each_opened(&self, open: &str, separator: &str) -> Vec<(&'static str, String)> {
        let one = format!("{} call", self.marker(open));
        if self.is_special(open) {
            self.special_calls(&self.repeated(&one, separator))
        } else {
            self.triggered(open, "call", &one, Some(separator))
        }
    }

    /// `rules` (the root first) and, when tools are callable, `call` with
    /// one alternative per tool.
    fn with_calls(
        &self,
        mut rules: Vec<(&'static str, String)>,
        each: impl Fn(&Tool, &str) -> String,
    ) -> Vec<(&'static str, String)> {
        if !self.tools.is_empty() {
            rules.push(("call", self.calls(each)));
        }
        rules
    }
}

/// A format's marker in `.xg`: the special token of that name where
/// `vocabulary` has one (`Token("…")`), else its text.
fn marker(vocabulary: Option<&Vocabulary>, text: &str) -> String {
    if vocabulary.is_some_and(|vocabulary| vocabulary.special_token(text).is_some()) {
        format!("Token({})", literal(text))
    } else {
        literal(text)
    }
}

/// Kimi K3's XTML markers: what opens a tag's head, what closes a tag, and
/// what ends a head (special tokens of its tokenizer).
const XTML_OPEN: &str = "<|open|>";
const XTML_CLOSE: &str = "<|close|>";
const XTML_SEP: &str = "<|sep|>";

/// An XTML attribute's value as Kimi K3's encoder writes it: `&` and `"`
/// escaped (`&amp;`, `&quot;`); `<` and `>` stay, the markup's brackets
/// being tokens.
fn xtml_attribute(value: &str) -> String {
    value.replace('&', "&amp;").replace('"', "&quot;")
}

/// Text up to the marker `close`: any text where `vocabulary` has it as a
/// special token (never text), else text without it.
fn text_until(vocabulary: Option<&Vocabulary>, close: &str) -> String {
    if vocabulary.is_some_and(|vocabulary| vocabulary.special_token(close).is_some()) {
        "dispatch {}".to_string()
    } else {
        format!("dispatch(exclude=({})) {{}}", literal(close))
    }
}

/// How a model family writes a call's arguments as XML: one element per
/// argument, its key in the opening tag, a string value as raw text and
/// any other value as JSON. The structural tag's `json_schema` `style`
/// names them (`qwen_xml`, `glm_xml`, `minimax_xml`, `deepseek_xml`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum XmlStyle {
    /// Qwen3-Coder, Qwen3.5: `<parameter=KEY>VALUE</parameter>`.
    Qwen,
    /// GLM-4.5 to 4.7: `<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>`.
    Glm,
    /// MiniMax M2: `<parameter name="KEY">VALUE</parameter>`.
    MiniMax,
    /// DeepSeek V3.2 (DSML): `<｜DSML｜parameter name="KEY" string="true">`
    /// (`"false"` for a JSON value) `VALUE</｜DSML｜parameter>`.
    DeepSeek,
    /// Kimi K3 (XTML): `<|open|>argument key="KEY" type="TYPE"<|sep|>VALUE<|close|>argument<|sep|>`,
    /// `TYPE` the value's JSON type (`number` for an integer), a string
    /// raw text and any other value JSON; no line breaks around.
    KimiK3,
}

impl XmlStyle {
    /// The style a structural tag's `style` names.
    pub fn from_name(name: &str) -> Option<XmlStyle> {
        match name {
            "qwen_xml" => Some(XmlStyle::Qwen),
            "glm_xml" => Some(XmlStyle::Glm),
            "minimax_xml" => Some(XmlStyle::MiniMax),
            "deepseek_xml" => Some(XmlStyle::DeepSeek),
            "kimi_k3_xml" => Some(XmlStyle::KimiK3),
            _ => None,
        }
    }

    /// The opening of an argument: its key, and for DeepSeek whether the
    /// value is raw text.
    fn open(self, key: &str, text: bool) -> String {
        match self {
            XmlStyle::Qwen => format!("<parameter={key}>"),
            XmlStyle::Glm => format!("<arg_key>{key}</arg_key>"),
            XmlStyle::MiniMax => format!("<parameter name=\"{key}\">"),
            XmlStyle::DeepSeek => {
                format!("<｜DSML｜parameter name=\"{key}\" string=\"{text}\">")
            }
            XmlStyle::KimiK3 => format!("argument key=\"{}\"", xtml_attribute(key)),
        }
    }

    /// Between the opening and the value (after an optional line break).
    fn value_open(self) -> &'static str {
        match self {
            XmlStyle::Glm => "<arg_value>",
            _ => "",
        }
    }

    /// What closes a value: a raw text value runs up to it.
    fn close(self) -> &'static str {
        match self {
            XmlStyle::Qwen | XmlStyle::MiniMax => "</parameter>",
            XmlStyle::Glm => "</arg_value>",
            XmlStyle::DeepSeek => "</｜DSML｜parameter>",
            XmlStyle::KimiK3 => XTML_CLOSE,
        }
    }

    /// The `.xg` rules of `parameters` (a tool's JSON Schema) as XML
    /// arguments: `rule` is the sequence of the schema's properties in its
    /// order, each optional unless required. A value the schema lets be a
    /// string is raw text up to the closing tag (a value of any other type
    /// is text too); a value that cannot be a string is JSON by its schema,
    /// and booleans and null may also be Python's `True`, `False`, `None`
    /// (what templates' `| string` writes); an enum lists its values as
    /// written. A line break may follow an opening tag and each element, and
    /// come before a closing tag (parsers strip them; templates write them).
    /// Without `properties`, any keys with raw text values. Kimi K3's
    /// markers are special tokens where `vocabulary` has them, its values
    /// typed (see [`XmlStyle::KimiK3`]). The rules use [`XmlStyle::text_rule`],
    /// which the grammar must define once.
    pub fn arguments(
        self,
        rule: &str,
        parameters: &Value,
        vocabulary: Option<&Vocabulary>,
    ) -> Vec<(String, String)> {
        if self == XmlStyle::KimiK3 {
            return xtml_arguments(rule, parameters, vocabulary);
        }
        // Raw text begins with whatever line break it has; GLM's opens first.
        let text = match self.value_open() {
            "" => format!("{XML_TEXT} \"\\n\"?"),
            open => format!("\"\\n\"? {} {XML_TEXT} \"\\n\"?", literal(open)),
        };
        let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
            let key = "[A-Za-z0-9_.\\-]+";
            let element = match self {
                XmlStyle::Qwen => format!("\"<parameter=\" {key} \">\""),
                XmlStyle::Glm => format!("\"<arg_key>\" {key} \"</arg_key>\""),
                XmlStyle::MiniMax => format!("\"<parameter name=\\\"\" {key} \"\\\">\""),
                XmlStyle::DeepSeek => {
                    format!("\"<｜DSML｜parameter name=\\\"\" {key} \"\\\" string=\\\"true\\\">\"")
                }
                XmlStyle::KimiK3 => format!("\"argument key=\\\"\" {key} \"\\\"\""),
            };
            return vec![(rule.to_string(), format!("({element} {text})*"))];
        };
        let required = required(parameters);
        let mut rules = Vec::new();
        let mut sequence = Vec::new();
        for (i, (key, schema)) in properties.iter().enumerate() {
            // `args_…` names the tools' rules: `argN_…` never collides with one.
            let name = format!("arg{i}_{rule}");
            let value = xml_value(schema, parameters);
            let body = match value {
                XmlValue::Text => format!("{} {text}", literal(&self.open(key, true))),
                XmlValue::Values { strings, others } => {
                    // DeepSeek's opening says whether the value is a string;
                    // the others' is the same for both.
                    let close = format!("\"\\n\"? {} \"\\n\"?", literal(self.close()));
                    let element = |text: bool, values: &[String]| {
                        format!(
                            "{} {} ({}) {close}",
                            literal(&self.open(key, text)),
                            self.head(),
                            values.join(" | ")
                        )
                    };
                    match (strings.is_empty(), others.is_empty()) {
                        (true, true) => element(false, &[String::from("\"\"")]),
                        (false, true) => element(true, &strings),
                        (true, false) => element(false, &others),
                        (false, false) if self == XmlStyle::DeepSeek => format!(
                            "({} | {})",
                            element(true, &strings),
                            element(false, &others)
                        ),
                        (false, false) => element(false, &[strings, others].concat()),
                    }
                }
            };
            let optional = if required.contains(&key.as_str()) {
                ""
            } else {
                "?"
            };
            sequence.push(format!("{name}{optional}"));
            rules.push((name, body));
        }
        let sequence = if sequence.is_empty() {
            "\"\"".to_string()
        } else {
            sequence.join(" ")
        };
        rules.insert(0, (rule.to_string(), sequence));
        rules
    }

    /// What comes between an opening tag and its value: an optional line
    /// break (and GLM's `<arg_value>`).
    fn head(self) -> String {
        match self.value_open() {
            "" => "\"\\n\"?".to_string(),
            open => format!("\"\\n\"? {}", literal(open)),
        }
    }

    /// The rule of raw text values, as `.xg` text: anything up to and
    /// including the closing tag (Kimi K3: up to it, which may be a special
    /// token of `vocabulary`).
    pub fn text_rule(self, vocabulary: Option<&Vocabulary>) -> String {
        let body = if self == XmlStyle::KimiK3 {
            text_until(vocabulary, XTML_CLOSE)
        } else {
            format!("dispatch(stop={}) {{}}", literal(self.close()))
        };
        format!("# A raw text value: anything up to its closing tag.\n{XML_TEXT} ::= {body}\n")
    }
}

/// The `.xg` rules of `parameters` (a tool's JSON Schema) as a Python
/// call's keyword arguments: `rule` is `KEY=VALUE` for each of the
/// schema's properties in its order, each optional unless required, apart
/// by `, `; a value is the Python literal of a value its schema allows
/// (`%python`). Without `properties`, any keys with any values.
fn keyword_arguments(rule: &str, parameters: &Value) -> Vec<(String, String)> {
    const SEPARATOR: &str = "\",\" \" \"?";
    let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
        let one = "[A-Za-z_] [A-Za-z0-9_]* \"=\" %python {}";
        return vec![(rule.to_string(), format!("({one} ({SEPARATOR} {one})*)?"))];
    };
    let required = required(parameters);
    let members: Vec<(String, bool)> = properties
        .iter()
        .map(|(key, schema)| {
            let argument = format!(
                "{} %python {}",
                literal(&format!("{key}=")),
                with_definitions(schema, parameters)
            );
            (argument, required.contains(&key.as_str()))
        })
        .collect();
    members_in_order(rule, "kw", &members, SEPARATOR)
}

/// The names `parameters` (a JSON Schema of an object) requires.
fn required(parameters: &Value) -> Vec<&str> {
    (parameters.get("required").and_then(Value::as_array))
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The `.xg` rules of `members` in their order, each `(text, required)`,
/// an optional one present or not, those present apart by `separator`:
/// `rule` is the sequence. `kind` names the helper rules: `{kind}{i}_first_`
/// (the members from the i-th on, none written before) and `{kind}{i}_rest_`
/// (the same after one), then `rule`; only those the sequence reaches are
/// written.
fn members_in_order(
    rule: &str,
    kind: &str,
    members: &[(String, bool)],
    separator: &str,
) -> Vec<(String, String)> {
    let n = members.len();
    let name = |i: usize, after_one: bool| {
        let state = if after_one { "rest" } else { "first" };
        format!("{kind}{i}_{state}_{rule}")
    };
    let then = |i: usize, after_one: bool| (i < n).then(|| name(i, after_one));
    let mut rules = vec![(
        rule.to_string(),
        then(0, false).unwrap_or_else(|| "\"\"".into()),
    )];
    let mut pending = vec![(0, false)];
    let mut written = Vec::new();
    while let Some((i, after_one)) = pending.pop() {
        if i == n || written.contains(&(i, after_one)) {
            continue;
        }
        written.push((i, after_one));
        let (member, required) = &members[i];
        let head = if after_one {
            format!("{separator} {member}")
        } else {
            member.clone()
        };
        let sequence = |parts: &[Option<String>]| -> String {
            let parts: Vec<&str> = parts.iter().flatten().map(String::as_str).collect();
            if parts.is_empty() {
                "\"\"".to_string()
            } else {
                parts.join(" ")
            }
        };
        let body = if *required {
            sequence(&[Some(head), then(i + 1, true)])
        } else if after_one {
            sequence(&[Some(format!("({head})?")), then(i + 1, true)])
        } else {
            pending.push((i + 1, false));
            format!(
                "{} | {}",
                sequence(&[Some(head), then(i + 1, true)]),
                sequence(&[then(i + 1, false)])
            )
        };
        pending.push((i + 1, true));
        rules.push((name(i, after_one), body));
    }
    rules
}

/// The `.xg` rules of `parameters` (a tool's JSON Schema) as Kimi K3's
/// XTML arguments: `rule` is the sequence of the schema's properties in
/// its order, each optional unless required, each
/// `<|open|>argument key="KEY" type="TYPE"<|sep|>VALUE<|close|>argument<|sep|>`
/// with one alternative per type its schema allows ([`xtml_values`]); the
/// markers are special tokens where `vocabulary` has them. Without
/// `properties`, any keys with any values.
fn xtml_arguments(
    rule: &str,
    parameters: &Value,
    vocabulary: Option<&Vocabulary>,
) -> Vec<(String, String)> {
    let (open, sep) = (marker(vocabulary, XTML_OPEN), marker(vocabulary, XTML_SEP));
    let close = format!("{} \"argument\" {sep}", marker(vocabulary, XTML_CLOSE));
    // The head up to the type's opening quote, then one alternative per type.
    let element = |head: &str, values: &[(String, String)]| {
        let typed: Vec<String> = values
            .iter()
            .map(|(kind, value)| format!("{kind} \"\\\"\" {sep} {value}"))
            .collect();
        format!("{open} {head} ({}) {close}", typed.join(" | "))
    };
    let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
        let head = "\"argument key=\\\"\" [^\"]+ \"\\\" type=\\\"\"";
        let any = element(head, &xtml_values(&Value::Bool(true), parameters));
        return vec![(rule.to_string(), format!("({any})*"))];
    };
    let required = required(parameters);
    let mut rules = vec![(rule.to_string(), String::new())];
    let mut sequence = Vec::new();
    for (i, (key, schema)) in properties.iter().enumerate() {
        let name = format!("arg{i}_{rule}");
        let head = literal(&format!("argument key=\"{}\" type=\"", xtml_attribute(key)));
        rules.push((
            name.clone(),
            element(&head, &xtml_values(schema, parameters)),
        ));
        let optional = if required.contains(&key.as_str()) {
            ""
        } else {
            "?"
        };
        sequence.push(format!("{name}{optional}"));
    }
    rules[0].1 = if sequence.is_empty() {
        "\"\"".to_string()
    } else {
        sequence.join(" ")
    };
    rules
}

/// Kimi K3's value types (its `type` attribute), each with the JSON Schema
/// types it holds.
const XTML_TYPES: [(&str, &[&str]); 6] = [
    ("string", &["string"]),
    ("number", &["integer", "number"]),
    ("boolean", &["boolean"]),
    ("null", &["null"]),
    ("object", &["object"]),
    ("array", &["array"]),
];

/// The values of a property with `schema` (of the tool's `parameters`) in
/// Kimi K3's XTML, as `.xg` alternatives `(type, value)`: a listed value
/// (`enum`, `const`) under its own type, a string written raw; a string
/// as raw text; a value of another type as JSON by the schema narrowed to
/// that type. A schema that names no type (`anyOf`, `$ref`, none at all)
/// may be raw text under `string`, or JSON by the schema under any other
/// type (which the value's type is not checked against).
fn xtml_values(schema: &Value, parameters: &Value) -> Vec<(String, String)> {
    let listed = (schema.get("enum").and_then(Value::as_array).cloned())
        .or_else(|| schema.get("const").map(|value| vec![value.clone()]));
    if let Some(values) = listed {
        let mut by_type: Vec<(&str, Vec<String>)> = Vec::new();
        for value in &values {
            let (kind, written) = match value {
                Value::String(text) => ("string", literal(text)),
                Value::Bool(yes) => ("boolean", literal(&yes.to_string())),
                Value::Null => ("null", literal("null")),
                Value::Number(_) => (
                    "number",
                    format!("%json {}", serde_json::json!({"const": value})),
                ),
                Value::Object(_) => (
                    "object",
                    format!("%json {}", serde_json::json!({"const": value})),
                ),
                Value::Array(_) => (
                    "array",
                    format!("%json {}", serde_json::json!({"const": value})),
                ),
            };
            match by_type.iter_mut().find(|(seen, _)| *seen == kind) {
                Some((_, alternatives)) => alternatives.push(written),
                None => by_type.push((kind, vec![written])),
            }
        }
        return by_type
            .into_iter()
            .map(|(kind, alternatives)| (literal(kind), format!("({})", alternatives.join(" | "))))
            .collect();
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.is_empty() {
        let others: Vec<String> = XTML_TYPES[1..]
            .iter()
            .map(|(kind, _)| literal(kind))
            .collect();
        return vec![
            (literal("string"), XML_TEXT.to_string()),
            (
                format!("({})", others.join(" | ")),
                format!("%json {}", with_definitions(schema, parameters)),
            ),
        ];
    }
    XTML_TYPES
        .iter()
        .filter_map(|(kind, holds)| {
            let narrowed: Vec<&str> = types
                .iter()
                .copied()
                .filter(|t| holds.contains(t))
                .collect();
            let value = match narrowed.as_slice() {
                [] => return None,
                _ if *kind == "string" => XML_TEXT.to_string(),
                [one] => format!(
                    "%json {}",
                    narrowed_schema(schema, parameters, serde_json::json!(one))
                ),
                many => format!(
                    "%json {}",
                    narrowed_schema(schema, parameters, serde_json::json!(many))
                ),
            };
            Some((literal(kind), value))
        })
        .collect()
}

/// `schema` with its definitions ([`with_definitions`]) and `type` set to
/// `types` (a part of the types it allows).
fn narrowed_schema(schema: &Value, parameters: &Value, types: Value) -> Value {
    let mut narrowed = with_definitions(schema, parameters);
    if let Some(object) = narrowed.as_object_mut() {
        object.insert("type".to_string(), types);
    }
    narrowed
}

/// Gemma 4's string delimiter (a special token of its tokenizer).
const GEMMA_QUOTE: &str = "<|\"|>";

/// The `.xg` rules of `parameters` (a tool's JSON Schema) as Gemma 4's
/// template writes arguments: `{KEY:VALUE,…}`, keys bare and in sorted
/// order (its `dictsort`), each optional unless required, no others; a
/// string between `<|"|>` tokens, raw; a number as JSON; `true`, `false`;
/// null as `None` (Python's Jinja) or `null`; objects and arrays alike,
/// nested. Listed values (`enum`, `const`) as written; `$ref`s into the
/// schema's definitions, `anyOf`, `oneOf` and lists of types as choices.
/// A schema without a type, and what the notation cannot narrow (string
/// and array constraints, `allOf`), takes any value of its kind. The rules
/// use [`gemma_values`]' rules, which the grammar must define.
fn gemma_arguments(
    rule: &str,
    parameters: &Value,
    vocabulary: Option<&Vocabulary>,
) -> Vec<(String, String)> {
    let mut writer = GemmaArguments {
        rule,
        parameters,
        quote: marker(vocabulary, GEMMA_QUOTE),
        rules: Vec::new(),
        definitions: Vec::new(),
    };
    let body = writer.object(rule, parameters);
    let mut rules = vec![(rule.to_string(), body)];
    rules.append(&mut writer.rules);
    rules
}

/// The rules of any Gemma value (`gemma_any`), a string's text
/// (`gemma_text`), a bare key (`gemma_key`) and a number (`gemma_number`).
fn gemma_values(vocabulary: Option<&Vocabulary>) -> [(&'static str, String); 4] {
    let quote = marker(vocabulary, GEMMA_QUOTE);
    let text = text_until(vocabulary, GEMMA_QUOTE);
    [
        (
            "gemma_any",
            format!(
                "{quote} gemma_text {quote} | gemma_number | \"true\" | \"false\" | \"None\" | \"null\" \
                 | \"{{\" (gemma_key \":\" gemma_any (\",\" gemma_key \":\" gemma_any)*)? \"}}\" \
                 | \"[\" (gemma_any (\",\" gemma_any)*)? \"]\""
            ),
        ),
        ("gemma_text", text),
        ("gemma_key", "[^:,{}\\[\\]<\"]+".to_string()),
        ("gemma_number", "%json {\"type\": \"number\"}".to_string()),
    ]
}

/// Writes one tool's arguments in Gemma 4's notation ([`gemma_arguments`]).
struct GemmaArguments<'a> {
    /// The arguments' rule: the helper rules' names end with it.
    rule: &'a str,
    /// The tool's schema, whose definitions `$ref`s name.
    parameters: &'a Value,
    /// `<|"|>` as `.xg`.
    quote: String,
    rules: Vec<(String, String)>,
    /// The definitions with a rule, in order (`gdef{i}_…`).
    definitions: Vec<String>,
}

impl GemmaArguments<'_> {
    /// A new helper rule's name.
    fn name(&self, kind: &str) -> String {
        format!("g{kind}{}_{}", self.rules.len(), self.rule)
    }

    /// The `.xg` of a value of `schema`.
    fn value(&mut self, schema: &Value) -> String {
        let Some(object) = schema.as_object() else {
            return "gemma_any".to_string();
        };
        if let Some(values) = object.get("enum").and_then(Value::as_array) {
            let written: Vec<String> = values.iter().map(|v| self.literal(v)).collect();
            return format!("({})", written.join(" | "));
        }
        if let Some(value) = object.get("const") {
            return self.literal(value);
        }
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            return self.reference(reference);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = object.get(key).and_then(Value::as_array) {
                let written: Vec<String> = branches.iter().map(|b| self.value(b)).collect();
                return format!("({})", written.join(" | "));
            }
        }
        let types: Vec<&str> = match object.get("type") {
            Some(Value::String(kind)) => vec![kind.as_str()],
            Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
            _ if object.contains_key("properties") => vec!["object"],
            _ if object.contains_key("items") => vec!["array"],
            _ => return "gemma_any".to_string(),
        };
        let written: Vec<String> = types.iter().map(|kind| self.typed(kind, schema)).collect();
        format!("({})", written.join(" | "))
    }

    /// A value of `schema` of JSON type `kind`.
    fn typed(&mut self, kind: &str, schema: &Value) -> String {
        match kind {
            "string" => format!("{} gemma_text {}", self.quote, self.quote),
            "integer" | "number" => {
                format!(
                    "%json {}",
                    narrowed_schema(schema, self.parameters, serde_json::json!(kind))
                )
            }
            "boolean" => "(\"true\" | \"false\")".to_string(),
            "null" => "(\"None\" | \"null\")".to_string(),
            "object" => {
                let name = self.name("o");
                self.rules.push((name.clone(), String::new()));
                let at = self.rules.len() - 1;
                let body = self.object(&name, schema);
                self.rules[at].1 = body;
                name
            }
            "array" => {
                let item = match schema.get("items") {
                    Some(items) => self.value(items),
                    None => "gemma_any".to_string(),
                };
                format!("\"[\" ({item} (\",\" {item})*)? \"]\"")
            }
            _ => "gemma_any".to_string(),
        }
    }

    /// The body of an object of `schema`: its properties sorted by key
    /// (the sequence's helper rules named after `rule`), or any members.
    fn object(&mut self, rule: &str, schema: &Value) -> String {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return "\"{\" (gemma_key \":\" gemma_any (\",\" gemma_key \":\" gemma_any)*)? \"}\""
                .to_string();
        };
        let required = required(schema);
        let mut sorted: Vec<(&String, &Value)> = properties.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        let members: Vec<(String, bool)> = sorted
            .into_iter()
            .map(|(key, property)| {
                let value = self.value(property);
                (
                    format!("{} {value}", literal(&format!("{key}:"))),
                    required.contains(&key.as_str()),
                )
            })
            .collect();
        let sequence = format!("gm_{rule}");
        let mut rules = members_in_order(&sequence, "gm", &members, "\",\"");
        let body = std::mem::take(&mut rules[0].1);
        self.rules.extend(rules.into_iter().skip(1));
        format!("\"{{\" {body} \"}}\"")
    }

    /// The rule of the definition `reference` names (`#/$defs/NAME`,
    /// `#/definitions/NAME`), written once; any value for another.
    fn reference(&mut self, reference: &str) -> String {
        let target = ["#/$defs/", "#/definitions/"].iter().find_map(|prefix| {
            let name = reference.strip_prefix(prefix)?;
            let key = &prefix[2..prefix.len() - 1];
            self.parameters.get(key)?.get(name)
        });
        let Some(schema) = target else {
            return "gemma_any".to_string();
        };
        let rule = |i: usize| format!("gdef{i}_{}", self.rule);
        if let Some(i) = self.definitions.iter().position(|known| known == reference) {
            return rule(i);
        }
        self.definitions.push(reference.to_string());
        let own = rule(self.definitions.len() - 1);
        self.rules.push((own.clone(), String::new()));
        let at = self.rules.len() - 1;
        let body = self.value(&schema.clone());
        self.rules[at].1 = body;
        own
    }

    /// `value` as the template writes it.
    fn literal(&self, value: &Value) -> String {
        match value {
            Value::String(text) => format!("{} {} {}", self.quote, literal(text), self.quote),
            Value::Bool(yes) => literal(&yes.to_string()),
            Value::Null => "(\"None\" | \"null\")".to_string(),
            Value::Number(number) => literal(&number.to_string()),
            Value::Array(items) => {
                let items: Vec<String> = items.iter().map(|item| self.literal(item)).collect();
                format!("\"[\" {} \"]\"", items.join(" \",\" "))
            }
            Value::Object(members) => {
                let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(b.0));
                let members: Vec<String> = sorted
                    .into_iter()
                    .map(|(key, value)| {
                        format!("{} {}", literal(&format!("{key}:")), self.literal(value))
                    })
                    .collect();
                format!("\"{{\" {} \"}}\"", members.join(" \",\" "))
            }
        }
    }
}

/// `schema` (a property's, of the tool's `parameters`) with the
/// definitions its references may name.
fn with_definitions(schema: &Value, parameters: &Value) -> Value {
    let mut own = schema.clone();
    if let Some(object) = own.as_object_mut() {
        for key in ["$defs", "definitions"] {
            if let Some(definitions) = parameters.get(key) {
                object.entry(key).or_insert_with(|| definitions.clone());
            }
        }
    }
    own
}

/// The rule of raw text values in XML arguments.
const XML_TEXT: &str = "xml_text";

/// How one XML argument's value is written.
enum XmlValue {
    /// Raw text up to the closing tag.
    Text,
    /// One of these `.xg` alternatives: string values written raw (an
    /// enum's strings), and values of other types.
    Values {
        strings: Vec<String>,
        others: Vec<String>,
    },
}

/// The value of a property with `schema` (of the tool's `parameters`,
/// whose definitions its references name).
fn xml_value(schema: &Value, parameters: &Value) -> XmlValue {
    let values = schema
        .get("enum")
        .and_then(Value::as_array)
        .cloned()
        .or_else(|| schema.get("const").map(|value| vec![value.clone()]));
    if let Some(values) = values {
        let mut strings = Vec::new();
        let mut others = Vec::new();
        for value in &values {
            match value {
                Value::String(text) => strings.push(literal(text)),
                Value::Bool(true) => others.extend([literal("true"), literal("True")]),
                Value::Bool(false) => others.extend([literal("false"), literal("False")]),
                Value::Null => others.extend([literal("null"), literal("None")]),
                other => others.push(format!("%json {}", serde_json::json!({"const": other}))),
            }
        }
        return XmlValue::Values { strings, others };
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.is_empty() || types.contains(&"string") {
        return XmlValue::Text;
    }
    let mut others = vec![format!("%json {}", with_definitions(schema, parameters))];
    if types.contains(&"boolean") {
        others.extend([literal("True"), literal("False")]);
    }
    if types.contains(&"null") {
        others.push(literal("None"));
    }
    XmlValue::Values {
        strings: Vec::new(),
        others,
    }
}
