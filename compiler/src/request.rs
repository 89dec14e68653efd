//! One compilation's context, and the text-in, grammar-out entry.
//!
//! A [`Request`] is everything a compilation reads and writes besides the
//! grammar itself: the texts ([`Sources`], with the model's vocabulary),
//! the [`Diagnostics`] it reports, the [`CompileCache`] it shares with
//! other compilations, and the [`Budget`] it runs within (its clock starts
//! when the request is made). Every front end and every [`crate::pipeline`]
//! stage takes one, so a limit set once holds for the whole compilation,
//! embedded schemas and grammars included. [`Request::finish`] turns it
//! into the grammar and its [`Report`].
//!
//! [`Compiler`] is the common case in one call: the limits, the cache and
//! the vocabulary of a server, and a method per grammar form that takes
//! text and returns a grammar or the report of why not.
//!
//! ```
//! use xg_compiler::{Compiler, Limits, json_schema};
//!
//! let compiler = Compiler::new(Limits::default());
//! let schema = r#"{"type": "object", "properties": {"ok": {"type": "boolean"}}}"#;
//! let grammar = compiler.json_schema(schema, &json_schema::Options::default()).unwrap();
//! assert!(!grammar.tables().rules.is_empty());
//!
//! let report = compiler.regex("[a-z").unwrap_err();
//! assert!(report.to_string().contains("regex"), "{report}");
//! ```

use std::fmt;
use std::sync::Arc;

use serde_json::Value;
use xg_runtime::{Grammar, Vocabulary};

use crate::budget::{Budget, Limits};
use crate::cache::CompileCache;
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::source::{FileId, Sources, Span};
use crate::{json_schema, pipeline, regex, tools};

/// The context of one compilation: its texts, its diagnostics, the cache
/// it shares and its budget (see the [module docs](self)). The fields are
/// public so that a stage can lend out several at once.
pub struct Request {
    /// The texts the compilation reads. Text added with [`Sources::add`]
    /// reads no files besides the standard library's.
    pub sources: Sources,
    /// What the compilation reported, in the order it was found.
    pub diagnostics: Diagnostics,
    /// Rules of schemas and automata shared with other compilations.
    pub cache: CompileCache,
    /// The compilation's running account against its limits.
    pub budget: Budget,
}

impl Request {
    /// A compilation for a request that arrived now: within `limits` (the
    /// clock starts now), sharing `cache` with the server's other
    /// compilations.
    pub fn new(limits: &Limits, cache: &CompileCache) -> Self {
        Self {
            sources: Sources::new(),
            diagnostics: Diagnostics::new(),
            cache: cache.clone(),
            budget: Budget::new(limits.clone()),
        }
    }

    /// A compilation of a grammar written ahead of time: no limits, a cache
    /// of its own.
    pub fn ahead_of_time() -> Self {
        Self {
            sources: Sources::new(),
            diagnostics: Diagnostics::new(),
            cache: CompileCache::default(),
            budget: Budget::unlimited(),
        }
    }

    /// Resolves tokens written by their text (`Token("<|call|>")`, a
    /// structural tag's token triggers, a tool format's special tokens) in
    /// `vocabulary`.
    #[must_use]
    pub fn with_vocabulary(mut self, vocabulary: Arc<Vocabulary>) -> Self {
        self.sources.set_vocabulary(vocabulary);
        self
    }

    /// Adds `text`, which came with the request, as the file `name` (it
    /// reads no files: see [`Sources::add`]).
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        self.sources.add(name, text, None)
    }

    /// The JSON value of `file` (`what` it should hold names it in the
    /// error); a syntax error is a diagnostic at its place.
    pub fn parse_json(&mut self, file: FileId, what: &str) -> Option<Value> {
        let text = self.sources.text(file);
        match serde_json::from_str(text) {
            Ok(value) => Some(value),
            Err(error) => {
                let at = json_error_offset(text, &error);
                self.diagnostics.push(Diagnostic::error(
                    "json",
                    format!("{what} is not valid JSON: {}", json_error_message(&error)),
                    Span::new(file, at, at),
                    "here",
                ));
                None
            }
        }
    }

    /// Ends the compilation: `output` with the report of its warnings, or
    /// the report of why there is none. An output with errors reported is
    /// no output.
    pub fn finish<T>(mut self, output: Option<T>) -> Result<(T, Report), Report> {
        self.diagnostics.sort();
        let report = Report(Box::new((self.sources, self.diagnostics)));
        match output {
            Some(output) if !report.diagnostics().has_errors() => Ok((output, report)),
            _ => Err(report),
        }
    }
}

/// What a compilation reported, with the texts it points into: rendered
/// by `Display` (without colour) or [`Report::render`].
pub struct Report(Box<(Sources, Diagnostics)>);

impl Report {
    /// The texts the diagnostics point into.
    pub fn sources(&self) -> &Sources {
        &self.0.0
    }

    /// The diagnostics, sorted by place.
    pub fn diagnostics(&self) -> &Diagnostics {
        &self.0.1
    }

    /// Every diagnostic in the rustc-like style, with colour if `color`.
    pub fn render(&self, color: bool) -> String {
        self.diagnostics().render(self.sources(), color)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.render(false).trim_end())
    }
}

impl fmt::Debug for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Report").field(self.diagnostics()).finish()
    }
}

impl std::error::Error for Report {}

/// A server's compiler: the limits of every compilation, the cache they
/// share and the model's vocabulary; a method per grammar form, text in,
/// grammar out. Warnings are dropped: compile through a [`Request`] and
/// [`Request::finish`] to keep them.
#[derive(Clone, Debug)]
pub struct Compiler {
    limits: Limits,
    cache: CompileCache,
    vocabulary: Option<Arc<Vocabulary>>,
}

impl Compiler {
    /// Compilations within `limits` (each its own clock), sharing a cache
    /// of the default size, with no vocabulary.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            cache: CompileCache::default(),
            vocabulary: None,
        }
    }

    /// Shares `cache` (with other compilers, say) instead of its own.
    #[must_use]
    pub fn with_cache(mut self, cache: CompileCache) -> Self {
        self.cache = cache;
        self
    }

    /// Resolves tokens given by their text in `vocabulary` (see
    /// [`Request::with_vocabulary`]).
    #[must_use]
    pub fn with_vocabulary(mut self, vocabulary: Arc<Vocabulary>) -> Self {
        self.vocabulary = Some(vocabulary);
        self
    }

    /// The cache the compilations share.
    pub fn cache(&self) -> &CompileCache {
        &self.cache
    }

    /// A new compilation with this compiler's limits, cache and vocabulary.
    pub fn request(&self) -> Request {
        let request = Request::new(&self.limits, &self.cache);
        match &self.vocabulary {
            Some(vocabulary) => request.with_vocabulary(Arc::clone(vocabulary)),
            None => request,
        }
    }

    /// A JSON Schema's text → its grammar ([`pipeline::json_schema`]).
    pub fn json_schema(
        &self,
        text: &str,
        options: &json_schema::Options,
    ) -> Result<Grammar, Report> {
        self.run("schema.json", text, |request, file| {
            let schema = request.parse_json(file, "the JSON Schema")?;
            pipeline::json_schema(request, &schema, file, options)
        })
    }

    /// `.xg` text (XGrammar's EBNF included) entered at `root` → its
    /// grammar ([`pipeline::grammar_within`]).
    pub fn grammar(&self, text: &str, root: &str) -> Result<Grammar, Report> {
        self.run("grammar.xg", text, |request, file| {
            pipeline::grammar_within(request, file, root)
        })
    }

    /// A regular expression, matched in full → its grammar
    /// ([`pipeline::regex`]).
    pub fn regex(&self, pattern: &str) -> Result<Grammar, Report> {
        self.run("regex", pattern, |request, file| {
            pipeline::regex(request, file, regex::Options::default())
        })
    }

    /// A structural tag's JSON text → its grammar
    /// ([`pipeline::structural_tag`]).
    pub fn structural_tag(&self, text: &str) -> Result<Grammar, Report> {
        self.run("structural_tag.json", text, |request, file| {
            let tag = request.parse_json(file, "the structural tag")?;
            pipeline::structural_tag(request, &tag, file)
        })
    }

    /// A tool list's JSON text → the grammar of a turn in `options.format`
    /// ([`pipeline::tools`]).
    pub fn tools(&self, text: &str, options: &tools::Options) -> Result<Grammar, Report> {
        self.run("tools.json", text, |request, file| {
            let listed = request.parse_json(file, "the tool list")?;
            pipeline::tools(request, &listed, file, options)
        })
    }

    /// Compiles `text`, added as the file `name`, with `compile`.
    fn run(
        &self,
        name: &str,
        text: &str,
        compile: impl FnOnce(&mut Request, FileId) -> Option<Grammar>,
    ) -> Result<Grammar, Report> {
        let mut request = self.request();
        let file = request.add(name, text);
        let grammar = compile(&mut request, file);
        request.finish(grammar).map(|(grammar, _)| grammar)
    }
}

/// serde_json's message without its " at line L column C" suffix.
pub(crate) fn json_error_message(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// The byte offset in `text` that serde_json's line and column point at
/// (on a character boundary).
pub(crate) fn json_error_offset(text: &str, error: &serde_json::Error) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(error.line().saturating_sub(1))
        .map(str::len)
        .sum();
    let offset = line_start + error.column().saturating_sub(1);
    let mut offset = offset.min(text.len().saturating_sub(1));
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}
