//! `GrammarCompiler`, `CompiledGrammar` and `Grammar`: every grammar form
//! a request can carry, compiled for one tokenizer within limits, with
//! the compiler's diagnostics as the exception's message.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use serde_json::Value;
use xg_compiler::{
    CompileCache, Limits, Request as Compilation, json_schema, pipeline, regex, tools,
};
use xg_runtime::Grammar as RuntimeGrammar;

use crate::CompileError;
use crate::tokenizer::TokenizerInfo;

/// What a compile call asks for, taken out of Python objects (with the
/// GIL) so that the compilation itself runs without it.
#[derive(Clone, Debug)]
enum Request {
    /// JSON Schema text.
    JsonSchema(String, json_schema::Options),
    /// The standard library's JSON grammar: any JSON value.
    BuiltinJson,
    /// A regular expression matched in full.
    Regex(String),
    /// `.xg` text (XGrammar's EBNF included) and its entry rule.
    Grammar(String, String),
    /// A structural tag as JSON text.
    StructuralTag(String),
    /// An OpenAI-style tool list as JSON text, and the turn's format.
    Tools(String, tools::Options),
}

impl Request {
    /// The key of the compiled-grammar cache.
    fn key(&self) -> String {
        format!("{self:?}")
    }

    /// Compiles the request; the error is the rendered diagnostics.
    fn compile(
        &self,
        info: &TokenizerInfo,
        limits: &Limits,
        cache: &CompileCache,
    ) -> Result<(RuntimeGrammar, String), String> {
        let mut compilation =
            Compilation::new(limits, cache).with_vocabulary(Arc::clone(info.vocabulary()));
        let grammar = match self {
            Request::JsonSchema(text, options) => {
                let file = compilation.add("schema.json", text.as_str());
                compilation
                    .parse_json(file, "the JSON Schema")
                    .and_then(|schema| {
                        pipeline::json_schema(&mut compilation, &schema, file, options)
                    })
            }
            Request::BuiltinJson => {
                let file = compilation.sources.load_std("std/json.xg");
                pipeline::grammar_within(&mut compilation, file, "root")
            }
            Request::Regex(pattern) => {
                let file = compilation.add("regex", pattern.as_str());
                pipeline::regex(&mut compilation, file, regex::Options::default())
            }
            Request::Grammar(text, root) => {
                let file = compilation.add("grammar.xg", text.as_str());
                pipeline::grammar_within(&mut compilation, file, root)
            }
            Request::StructuralTag(text) => {
                let file = compilation.add("structural_tag.json", text.as_str());
                compilation
                    .parse_json(file, "the structural tag")
                    .and_then(|tag| pipeline::structural_tag(&mut compilation, &tag, file))
            }
            Request::Tools(text, options) => {
                let file = compilation.add("tools.json", text.as_str());
                compilation
                    .parse_json(file, "the tool list")
                    .and_then(|listed| pipeline::tools(&mut compilation, &listed, file, options))
            }
        };
        match compilation.finish(grammar) {
            Ok((grammar, report)) => Ok((grammar, report.render(false))),
            Err(report) => Err(report.render(false)),
        }
    }
}

/// A schema's errors, each with its JSON pointer, as one exception.
fn schema_errors(errors: &[json_schema::SchemaError]) -> PyErr {
    let lines: Vec<String> = errors.iter().map(|e| format!("error: {e}")).collect();
    CompileError::new_err(lines.join("\n"))
}

fn parse_json(text: &str, what: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("error: {what} is not valid JSON: {e}"))
}

/// Grammars compiled before, by request, up to a size bound: a server
/// sends the same schema or tool list over and over.
#[derive(Default)]
struct Compiled {
    grammars: HashMap<String, (Arc<RuntimeGrammar>, String)>,
    bytes: usize,
}

/// A flag that stops a compilation running in another thread: pass it as
/// `cancel=` to a `compile_*` call and `set()` it.
#[pyclass(module = "xg", frozen)]
#[derive(Default)]
pub struct CancelFlag {
    flag: Arc<AtomicBool>,
}

#[pymethods]
impl CancelFlag {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Stops the compilations watching this flag (they raise
    /// `CompileError`).
    fn set(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Whether `set()` was called.
    fn is_set(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

/// Compiles grammars of every form for one tokenizer (XGrammar's class of
/// the same name). Thread-safe: compilations run with the GIL released,
/// several at once, sharing the cache of generated rules and automata
/// and the cache of compiled grammars.
#[pyclass(module = "xg", frozen)]
pub struct GrammarCompiler {
    tokenizer_info: Py<TokenizerInfo>,
    cache: CompileCache,
    compiled: Mutex<Compiled>,
    cache_enabled: bool,
    cache_limit: usize,
    max_rules: usize,
    time_limit: Option<Duration>,
    memory_limit: Option<usize>,
}

#[pymethods]
impl GrammarCompiler {
    /// `cache_limit_bytes` bounds each cache (-1: xg's default, 256 MiB
    /// of generated rules and automata, and as much of compiled
    /// grammars). Every compilation stops, with a `CompileError`, past
    /// `time_limit` seconds (`None`: no limit), `max_rules` generated
    /// rules or `memory_limit_bytes` of rules and automata (-1: xg's
    /// default, 256 MiB; `None`: no limit). `max_threads` is accepted for
    /// XGrammar's signature: one compilation runs on one thread; run
    /// several at once instead.
    #[new]
    #[pyo3(signature = (tokenizer_info, *, max_threads = 8, cache_enabled = true, cache_limit_bytes = -1, time_limit = Some(2.0), max_rules = 100_000, memory_limit_bytes = Some(-1)))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        tokenizer_info: Py<TokenizerInfo>,
        max_threads: i64,
        cache_enabled: bool,
        cache_limit_bytes: i64,
        time_limit: Option<f64>,
        max_rules: usize,
        memory_limit_bytes: Option<i64>,
    ) -> PyResult<Self> {
        let memory_limit = memory_limit_bytes.map(|bytes| {
            usize::try_from(bytes).unwrap_or(xg_compiler::budget::DEFAULT_MEMORY_LIMIT)
        });
        let _ = max_threads;
        let cache_limit =
            usize::try_from(cache_limit_bytes).unwrap_or(xg_compiler::DEFAULT_COMPILE_CACHE_BYTES);
        let time_limit = time_limit
            .map(|seconds| {
                Duration::try_from_secs_f64(seconds).map_err(|_| {
                    PyValueError::new_err(format!("time_limit {seconds}: expected seconds ≥ 0"))
                })
            })
            .transpose()?;
        Ok(Self {
            tokenizer_info,
            cache: CompileCache::new(if cache_enabled { cache_limit } else { 0 }),
            compiled: Mutex::default(),
            cache_enabled,
            cache_limit,
            max_rules,
            time_limit,
            memory_limit,
        })
    }

    /// A JSON Schema (text, a dict, or a pydantic model class), with
    /// XGrammar's options: `any_whitespace` (else compact, with
    /// `separators`, by default `(", ", ": ")`), `indent` (pretty-printed
    /// as `json.dumps(indent=…)` writes it), `strict_mode` (objects
    /// allow no properties beyond those listed unless the schema says
    /// so), `max_whitespace_cnt` (the longest whitespace run with
    /// `any_whitespace`: 32 by default, where XGrammar has no bound; `None`
    /// for none); and xg's `any_order` (properties in any order).
    #[pyo3(signature = (schema, *, any_whitespace = true, indent = None, separators = None, strict_mode = true, max_whitespace_cnt = Some(json_schema::DEFAULT_MAX_WHITESPACE), any_order = false, cancel = None))]
    #[allow(clippy::too_many_arguments)]
    fn compile_json_schema(
        &self,
        py: Python<'_>,
        schema: &Bound<'_, PyAny>,
        any_whitespace: bool,
        indent: Option<u32>,
        separators: Option<(String, String)>,
        strict_mode: bool,
        max_whitespace_cnt: Option<u32>,
        any_order: bool,
        cancel: Option<&CancelFlag>,
    ) -> PyResult<CompiledGrammar> {
        let text = schema_text(schema)?;
        let options = schema_options(
            any_whitespace,
            indent,
            separators,
            strict_mode,
            max_whitespace_cnt,
            any_order,
        );
        self.compile(py, Request::JsonSchema(text, options), cancel)
    }

    /// What became of each keyword of a JSON Schema (with
    /// `compile_json_schema`'s options): one dict per keyword and place,
    /// `{"pointer", "keyword", "treatment", "detail"}`, treatment
    /// `enforced`, `approximated` (the grammar may accept values the
    /// keyword forbids) or `ignored`. Raises `CompileError` if the schema
    /// does not compile.
    #[pyo3(signature = (schema, *, any_whitespace = true, indent = None, separators = None, strict_mode = true, max_whitespace_cnt = Some(json_schema::DEFAULT_MAX_WHITESPACE), any_order = false))]
    #[allow(clippy::too_many_arguments)]
    fn json_schema_report<'py>(
        &self,
        py: Python<'py>,
        schema: &Bound<'py, PyAny>,
        any_whitespace: bool,
        indent: Option<u32>,
        separators: Option<(String, String)>,
        strict_mode: bool,
        max_whitespace_cnt: Option<u32>,
        any_order: bool,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let text = schema_text(schema)?;
        let options = schema_options(
            any_whitespace,
            indent,
            separators,
            strict_mode,
            max_whitespace_cnt,
            any_order,
        );
        let limits = Limits {
            max_rules: self.max_rules,
            time: self.time_limit,
            cancel: None,
            memory: self.memory_limit,
        };
        let value = parse_json(&text, "the JSON Schema").map_err(CompileError::new_err)?;
        let generated = py.detach(|| {
            json_schema::generate_from_text(
                &value,
                &text,
                &options,
                &xg_compiler::Budget::new(limits),
            )
        });
        let generated = generated.map_err(|errors| schema_errors(&errors))?;
        generated
            .report
            .notes
            .iter()
            .map(|note| {
                let entry = PyDict::new(py);
                entry.set_item("pointer", &note.pointer)?;
                entry.set_item("keyword", &note.keyword)?;
                entry.set_item("treatment", note.treatment.to_string())?;
                entry.set_item("detail", &note.detail)?;
                Ok(entry)
            })
            .collect()
    }

    /// Any JSON value (the standard library's `std/json.xg`).
    #[pyo3(signature = (*, cancel = None))]
    fn compile_builtin_json_grammar(
        &self,
        py: Python<'_>,
        cancel: Option<&CancelFlag>,
    ) -> PyResult<CompiledGrammar> {
        self.compile(py, Request::BuiltinJson, cancel)
    }

    /// A regular expression, matched in full.
    #[pyo3(signature = (regex, *, cancel = None))]
    fn compile_regex(
        &self,
        py: Python<'_>,
        regex: String,
        cancel: Option<&CancelFlag>,
    ) -> PyResult<CompiledGrammar> {
        self.compile(py, Request::Regex(regex), cancel)
    }

    /// A grammar: `.xg` text (XGrammar's EBNF is `.xg`) or a `Grammar`,
    /// entered at `root_rule_name`. Imports reach the standard library
    /// only.
    #[pyo3(signature = (grammar, root_rule_name = "root".to_owned(), *, cancel = None))]
    fn compile_grammar(
        &self,
        py: Python<'_>,
        grammar: &Bound<'_, PyAny>,
        root_rule_name: String,
        cancel: Option<&CancelFlag>,
    ) -> PyResult<CompiledGrammar> {
        let (text, root) = match grammar.cast::<Grammar>() {
            Ok(grammar) => {
                let grammar = grammar.get();
                (grammar.text.clone(), grammar.root.clone())
            }
            Err(_) => (grammar.extract::<String>()?, root_rule_name),
        };
        self.compile(py, Request::Grammar(text, root), cancel)
    }

    /// A structural tag: XGrammar's JSON (text or dict), or in the legacy
    /// form a list of tags (objects or dicts with `begin`, `schema`,
    /// `end`) and the `triggers` that start them.
    #[pyo3(signature = (tag, triggers = None, *, cancel = None))]
    fn compile_structural_tag(
        &self,
        py: Python<'_>,
        tag: &Bound<'_, PyAny>,
        triggers: Option<Vec<String>>,
        cancel: Option<&CancelFlag>,
    ) -> PyResult<CompiledGrammar> {
        let text = match triggers {
            Some(triggers) => legacy_tag(tag, triggers)?,
            None => json_text(tag)?,
        };
        self.compile(py, Request::StructuralTag(text), cancel)
    }

    /// A tool-calling turn: an OpenAI-style tool list (JSON text or a
    /// list) in a model family's `format` (`qwen`, `qwen3-coder`, `qwen3.5`, `llama3`,
    /// `llama3-function`, `pythonic`, `tool-code`, `gemma-4`, `mistral`, `mistral-v11`, `deepseek`,
    /// `deepseek-v3.1`, `deepseek-v3.2`, `deepseek-v4`, `kimi-k2`, `kimi-k3`, `glm-4.5`,
    /// `glm-4.7`, `minimax-m2`, `command-a`, `command-a-reasoning`, `harmony`); `reasoning` `allowed`, `forced` or `forbidden` (default:
    /// what the family's template does); `tool_choice` `auto`,
    /// `required`, `none`, a function name, or OpenAI's
    /// `{"type": "function", "function": {"name": …}}`.
    #[pyo3(signature = (tools, *, format = "qwen".to_owned(), reasoning = None, tool_choice = None, parallel_tool_calls = true, cancel = None))]
    #[allow(clippy::too_many_arguments)]
    fn compile_tools(
        &self,
        py: Python<'_>,
        tools: &Bound<'_, PyAny>,
        format: String,
        reasoning: Option<String>,
        tool_choice: Option<&Bound<'_, PyAny>>,
        parallel_tool_calls: bool,
        cancel: Option<&CancelFlag>,
    ) -> PyResult<CompiledGrammar> {
        let text = json_text(tools)?;
        let format = tools::Format::from_name(&format).ok_or_else(|| {
            let names: Vec<&str> = tools::Format::ALL.iter().map(|f| f.name()).collect();
            PyValueError::new_err(format!(
                "format `{format}`: expected one of {}",
                names.join(", ")
            ))
        })?;
        let mut options = tools::Options::new(format);
        options.reasoning = match reasoning.as_deref() {
            None => format.default_reasoning(),
            Some("allowed") => tools::Reasoning::Allowed,
            Some("forced") => tools::Reasoning::Forced,
            Some("forbidden") => tools::Reasoning::Forbidden,
            Some(other) => {
                return Err(PyValueError::new_err(format!(
                    "reasoning `{other}`: expected allowed, forced or forbidden"
                )));
            }
        };
        options.tool_choice = tool_choice
            .map(parse_tool_choice)
            .transpose()?
            .unwrap_or_default();
        options.parallel_calls = parallel_tool_calls;
        self.compile(py, Request::Tools(text, options), cancel)
    }

    /// Empties the caches of compiled grammars, generated rules and
    /// automata, and the tokenizer's token-mask cache.
    fn clear_cache(&self, py: Python<'_>) {
        *self.lock() = Compiled::default();
        self.cache.clear();
        self.tokenizer_info.get().vocabulary().mask_cache().clear();
        let _ = py;
    }

    /// The bytes the caches hold: compiled grammars, generated rules and
    /// automata, and token-mask entries.
    fn get_cache_size_bytes(&self) -> usize {
        self.lock().bytes
            + self.cache.stats().bytes
            + self
                .tokenizer_info
                .get()
                .vocabulary()
                .mask_cache()
                .stats()
                .bytes
    }

    /// The tokenizer the grammars are compiled for.
    #[getter]
    fn tokenizer_info(&self, py: Python<'_>) -> Py<TokenizerInfo> {
        self.tokenizer_info.clone_ref(py)
    }
}

impl GrammarCompiler {
    fn lock(&self) -> std::sync::MutexGuard<'_, Compiled> {
        self.compiled.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn compile(
        &self,
        py: Python<'_>,
        request: Request,
        cancel: Option<&CancelFlag>,
    ) -> PyResult<CompiledGrammar> {
        let key = request.key();
        if let Some((grammar, warnings)) = self.lock().grammars.get(&key) {
            return Ok(self.wrap(py, Arc::clone(grammar), warnings.clone()));
        }
        let limits = Limits {
            max_rules: self.max_rules,
            time: self.time_limit,
            cancel: cancel.map(|c| Arc::clone(&c.flag)),
            memory: self.memory_limit,
        };
        let info = self.tokenizer_info.get();
        let fresh;
        let cache = if self.cache_enabled {
            &self.cache
        } else {
            fresh = CompileCache::new(0);
            &fresh
        };
        let (grammar, warnings) = py
            .detach(|| request.compile(info, &limits, cache))
            .map_err(CompileError::new_err)?;
        let grammar = Arc::new(grammar);
        if self.cache_enabled {
            let bytes = grammar_bytes(&grammar) + key.len();
            let mut compiled = self.lock();
            if compiled.bytes + bytes > self.cache_limit {
                *compiled = Compiled::default();
            }
            if bytes <= self.cache_limit {
                compiled.bytes += bytes;
                compiled
                    .grammars
                    .insert(key, (Arc::clone(&grammar), warnings.clone()));
            }
        }
        Ok(self.wrap(py, grammar, warnings))
    }

    fn wrap(
        &self,
        py: Python<'_>,
        grammar: Arc<RuntimeGrammar>,
        warnings: String,
    ) -> CompiledGrammar {
        CompiledGrammar {
            grammar,
            tokenizer_info: self.tokenizer_info.clone_ref(py),
            warnings,
        }
    }
}

/// The size of a grammar's tables: what its bundle holds.
fn grammar_bytes(grammar: &RuntimeGrammar) -> usize {
    grammar.tables().byte_size()
}

fn schema_options(
    any_whitespace: bool,
    indent: Option<u32>,
    separators: Option<(String, String)>,
    strict_mode: bool,
    max_whitespace_cnt: Option<u32>,
    any_order: bool,
) -> json_schema::Options {
    let whitespace = match indent {
        Some(indent) => json_schema::Whitespace::Pretty { indent },
        None if any_whitespace => json_schema::Whitespace::Flexible {
            max: max_whitespace_cnt,
        },
        None => json_schema::Whitespace::Compact,
    };
    // json.dumps's defaults, as XGrammar takes them.
    let (item, key) = separators.unwrap_or_else(|| {
        if indent.is_some() {
            (",".to_owned(), ": ".to_owned())
        } else {
            (", ".to_owned(), ": ".to_owned())
        }
    });
    json_schema::Options {
        whitespace,
        item_separator: item,
        key_separator: key,
        strict: false,
        property_order: if any_order {
            json_schema::PropertyOrder::Any
        } else {
            json_schema::PropertyOrder::Given
        },
        additional_properties: !strict_mode,
        ..json_schema::Options::default()
    }
}

/// JSON text of a schema given as text, a pydantic model class, or a
/// JSON-serializable value.
fn schema_text(schema: &Bound<'_, PyAny>) -> PyResult<String> {
    if schema.hasattr("model_json_schema")? {
        return json_text(&schema.call_method0("model_json_schema")?);
    }
    json_text(schema)
}

/// JSON text of a value given as text or as a JSON-serializable value.
fn json_text(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(text.to_cow()?.into_owned());
    }
    let json = value.py().import("json")?;
    json.call_method1("dumps", (value,))?.extract()
}

/// The legacy structural tag (`compile_structural_tag(tags, triggers)`)
/// as the JSON the front end reads.
fn legacy_tag(tags: &Bound<'_, PyAny>, triggers: Vec<String>) -> PyResult<String> {
    let mut structures = Vec::new();
    for tag in tags.try_iter()? {
        let tag = tag?;
        let field = |name: &str| -> PyResult<Bound<'_, PyAny>> {
            match tag.cast::<PyDict>() {
                Ok(dict) => dict.get_item(name)?.ok_or_else(|| {
                    PyValueError::new_err(format!("a structural tag item has no `{name}`"))
                }),
                Err(_) => tag.getattr(name),
            }
        };
        let begin: String = field("begin")?.extract()?;
        let end: String = field("end")?.extract()?;
        let schema = parse_json(&schema_text(&field("schema")?)?, "a tag's schema")
            .map_err(CompileError::new_err)?;
        structures.push(serde_json::json!({"begin": begin, "schema": schema, "end": end}));
    }
    Ok(serde_json::json!({
        "type": "structural_tag",
        "structures": structures,
        "triggers": triggers,
    })
    .to_string())
}

fn parse_tool_choice(choice: &Bound<'_, PyAny>) -> PyResult<tools::ToolChoice> {
    if let Ok(name) = choice.extract::<String>() {
        return Ok(match name.as_str() {
            "auto" => tools::ToolChoice::Auto,
            "required" => tools::ToolChoice::Required,
            "none" => tools::ToolChoice::None,
            _ => tools::ToolChoice::Function(name),
        });
    }
    let invalid = || {
        PyValueError::new_err(
            "tool_choice: expected auto, required, none, a function name, \
             {\"type\": \"function\", \"function\": {\"name\": …}} or \
             {\"type\": \"allowed_tools\", …}",
        )
    };
    let kind = choice
        .get_item("type")
        .ok()
        .and_then(|kind| kind.extract::<String>().ok());
    if kind.as_deref() == Some("allowed_tools") {
        // Chat Completions nests the choice in `allowed_tools`; the
        // Responses API puts `mode` and `tools` beside `type`.
        let inner = choice
            .get_item("allowed_tools")
            .unwrap_or_else(|_| choice.clone());
        let mode: String = inner
            .get_item("mode")
            .and_then(|mode| mode.extract())
            .map_err(|_| invalid())?;
        let required = match mode.as_str() {
            "auto" => false,
            "required" => true,
            _ => return Err(invalid()),
        };
        let names = inner
            .get_item("tools")
            .map_err(|_| invalid())?
            .try_iter()
            .map_err(|_| invalid())?
            .map(|tool| {
                let tool = tool?;
                let named = tool.get_item("function").unwrap_or_else(|_| tool.clone());
                named.get_item("name")?.extract::<String>()
            })
            .collect::<PyResult<Vec<String>>>()
            .map_err(|_| invalid())?;
        return Ok(tools::ToolChoice::Allowed { names, required });
    }
    let name = choice
        .get_item("function")
        .and_then(|function| function.get_item("name"))
        .and_then(|name| name.extract::<String>())
        .map_err(|_| invalid())?;
    Ok(tools::ToolChoice::Function(name))
}

/// A grammar compiled for a tokenizer, ready for `GrammarMatcher`s; share
/// it between requests and threads. Its token masks are built on first
/// use and kept in the tokenizer's cache.
#[pyclass(module = "xg", frozen)]
pub struct CompiledGrammar {
    pub(crate) grammar: Arc<RuntimeGrammar>,
    pub(crate) tokenizer_info: Py<TokenizerInfo>,
    warnings: String,
}

#[pymethods]
impl CompiledGrammar {
    /// The grammar as an `.xgb` bundle (its tables; masks are built again
    /// on first use). Rules not built yet are built first (`ValueError`
    /// if one cannot be).
    fn serialize<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bundle =
            (self.grammar.to_bundle()).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyBytes::new(py, &bundle))
    }

    /// A grammar from `serialize()`'s bytes, checked (a damaged or foreign
    /// bundle raises `ValueError`).
    #[staticmethod]
    fn deserialize(data: &[u8], tokenizer_info: Py<TokenizerInfo>) -> PyResult<Self> {
        let grammar =
            RuntimeGrammar::from_bundle(data.to_vec(), Some(tokenizer_info.get().vocabulary()))
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(Self {
            grammar: Arc::new(grammar),
            tokenizer_info,
            warnings: String::new(),
        })
    }

    /// A bundle file (`xg compile … -o FILE.xgb`), memory-mapped: opening
    /// costs tens of microseconds whatever its size, and its precomputed
    /// masks serve this tokenizer if it was compiled for it.
    #[staticmethod]
    fn open(path: PathBuf, tokenizer_info: Py<TokenizerInfo>) -> PyResult<Self> {
        let grammar = RuntimeGrammar::open(&path, Some(tokenizer_info.get().vocabulary()))
            .map_err(|e| PyValueError::new_err(format!("`{}`: {e}", path.display())))?;
        Ok(Self {
            grammar: Arc::new(grammar),
            tokenizer_info,
            warnings: String::new(),
        })
    }

    /// The bytes of the grammar's tables.
    #[getter]
    fn memory_size_bytes(&self) -> usize {
        grammar_bytes(&self.grammar)
    }

    /// The tokenizer it was compiled for.
    #[getter]
    fn tokenizer_info(&self, py: Python<'_>) -> Py<TokenizerInfo> {
        self.tokenizer_info.clone_ref(py)
    }

    /// The compiler's warnings, rendered (a JSON Schema keyword enforced
    /// only approximately, an unused rule); empty if none.
    #[getter]
    fn warnings(&self) -> &str {
        &self.warnings
    }

    /// Whether token masks come from the mask cache (every grammar the
    /// compiler emits), or, for a grammar that falls back, why not.
    #[getter]
    fn cache_fallback(&self) -> Option<String> {
        self.grammar.cache_fallback().map(|f| format!("{f:?}"))
    }
}

/// A grammar as `.xg` text and its entry rule, before compiling for a
/// tokenizer (XGrammar's `Grammar`): `str(grammar)` is the text.
#[pyclass(module = "xg", frozen)]
pub struct Grammar {
    text: String,
    root: String,
}

#[pymethods]
impl Grammar {
    /// `.xg` text (XGrammar's EBNF included), checked now: a mistake
    /// raises `CompileError` with the diagnostics.
    #[staticmethod]
    #[pyo3(signature = (ebnf_string, *, root_rule_name = "root".to_owned()))]
    fn from_ebnf(ebnf_string: String, root_rule_name: String) -> PyResult<Self> {
        // Checked as it will be compiled: within the default limits.
        let mut compilation = Compilation::new(&Limits::default(), &CompileCache::default());
        let file = compilation.add("grammar.xg", ebnf_string.as_str());
        let checked = pipeline::check(&mut compilation, file, &root_rule_name);
        if let Err(report) = compilation.finish(checked) {
            return Err(CompileError::new_err(report.render(false)));
        }
        Ok(Self {
            text: ebnf_string,
            root: root_rule_name,
        })
    }

    /// The grammar of a JSON Schema, with `compile_json_schema`'s options.
    #[staticmethod]
    #[pyo3(signature = (schema, *, any_whitespace = true, indent = None, separators = None, strict_mode = true, max_whitespace_cnt = Some(json_schema::DEFAULT_MAX_WHITESPACE), any_order = false))]
    fn from_json_schema(
        schema: &Bound<'_, PyAny>,
        any_whitespace: bool,
        indent: Option<u32>,
        separators: Option<(String, String)>,
        strict_mode: bool,
        max_whitespace_cnt: Option<u32>,
        any_order: bool,
    ) -> PyResult<Self> {
        let text = schema_text(schema)?;
        let options = schema_options(
            any_whitespace,
            indent,
            separators,
            strict_mode,
            max_whitespace_cnt,
            any_order,
        );
        let schema = parse_json(&text, "the JSON Schema").map_err(CompileError::new_err)?;
        let budget = xg_compiler::Budget::new(Limits::default());
        match json_schema::generate_from_text(&schema, &text, &options, &budget) {
            Ok(generated) => Ok(Self {
                text: generated.to_xg(),
                root: "root".to_owned(),
            }),
            Err(errors) => Err(schema_errors(&errors)),
        }
    }

    /// The grammar of a regular expression, matched in full.
    #[staticmethod]
    fn from_regex(regex: &str) -> PyResult<Self> {
        let mut escaped = String::with_capacity(regex.len() + 2);
        let mut chars = regex.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    escaped.push('\\');
                    if let Some(next) = chars.next() {
                        escaped.push(next);
                    }
                }
                '/' => escaped.push_str("\\/"),
                c => escaped.push(c),
            }
        }
        Self::from_ebnf(format!("root ::= /{escaped}/\n"), "root".to_owned())
    }

    /// Any JSON value.
    #[staticmethod]
    fn builtin_json_grammar() -> Self {
        Self {
            text: xg_compiler::std_text("std/json.xg")
                .unwrap_or_default()
                .to_owned(),
            root: "root".to_owned(),
        }
    }

    /// The entry rule.
    #[getter]
    fn root_rule_name(&self) -> &str {
        &self.root
    }

    fn __str__(&self) -> &str {
        &self.text
    }

    fn __repr__(&self) -> String {
        format!(
            "Grammar(root_rule_name={:?}, {} bytes of .xg)",
            self.root,
            self.text.len()
        )
    }
}
