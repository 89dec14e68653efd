//! Which grammar a command runs, and compiling it: a `.xg` file, a JSON
//! file (a JSON Schema, or a structural tag when its `type` is
//! `structural_tag`), a bundle, or a regular expression on the command
//! line. What a file holds is decided by its content ([`kind_of`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use xg_compiler::{CompileCache, Limits, Request, pipeline, regex};
use xg_runtime::Vocabulary;

use crate::schema::{self, SchemaFlags};

/// The grammar of a command, as arguments.
#[derive(Args)]
pub struct GrammarArgs {
    /// The `.xg` grammar, JSON Schema (`.json`), structural tag (`.json`
    /// with `"type": "structural_tag"`) or bundle (`.xgb`).
    #[arg(required_unless_present = "regex")]
    pub grammar: Option<PathBuf>,
    /// The entry rule of a `.xg` grammar.
    #[arg(
        long = "root",
        visible_alias = "rule",
        value_name = "ROOT",
        default_value = "root"
    )]
    pub rule: String,
    /// A regular expression instead of a grammar file; the whole output
    /// must match it (inline flags such as `(?i)` and `(?s)` apply).
    #[arg(long, value_name = "PATTERN", conflicts_with = "grammar")]
    pub regex: Option<String>,
    /// With `--regex`: the match must also be a JSON string body (no `"`,
    /// `\` or control character).
    #[arg(long, requires = "regex")]
    pub json_string: bool,
    #[command(flatten)]
    pub schema: SchemaFlags,
}

impl GrammarArgs {
    /// The name of the entry rule, for messages.
    pub fn rule_name(&self) -> &str {
        if self.regex.is_some() {
            "root"
        } else {
            &self.rule
        }
    }
}

/// Compiles the grammar `args` name, printing its diagnostics;
/// `vocabulary` resolves tokens given by text.
pub fn load_grammar(
    args: &GrammarArgs,
    vocabulary: Option<&Arc<Vocabulary>>,
    color: bool,
) -> Result<xg_runtime::Grammar> {
    match (&args.regex, &args.grammar) {
        (Some(pattern), _) => compile_regex(pattern, args.json_string, color),
        (None, Some(path)) => load_file(path, &args.rule, &args.schema, vocabulary, color),
        (None, None) => anyhow::bail!("give a grammar file or --regex"),
    }
}

/// Compiles the grammar file `path` whatever it holds ([`kind_of`]): a
/// bundle, a JSON Schema or structural tag (with `schema`'s options), or
/// `.xg` entered at `rule`; printing its diagnostics.
pub fn load_file(
    path: &Path,
    rule: &str,
    schema: &SchemaFlags,
    vocabulary: Option<&Arc<Vocabulary>>,
    color: bool,
) -> Result<xg_runtime::Grammar> {
    if path.is_dir() {
        anyhow::bail!("`{}` is a folder, not a grammar file", path.display());
    }
    match kind_of(path) {
        FileKind::Bundle => {
            xg_runtime::Grammar::open(path, vocabulary.map(|v| &**v)).map_err(|error| match error {
                // It names the file already.
                xg_runtime::BundleError::Io { .. } => anyhow::Error::new(error),
                other => anyhow::Error::new(other).context(format!("`{}`", path.display())),
            })
        }
        FileKind::Json => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read `{}`", path.display()))?;
            match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(value) if is_structural_tag(&value) => {
                    compile_structural_tag(path, &value, text, vocabulary, color)
                }
                _ => schema::compile(path, schema, color),
            }
        }
        FileKind::Xg => compile(path, rule, vocabulary, color),
    }
}

/// What a grammar file holds, decided by its content (a schema saved as
/// `.txt` is still a schema).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A bundle (`.xgb`): the extension, or the format's first bytes.
    Bundle,
    /// JSON: a JSON Schema or a structural tag (the text starts with `{`,
    /// which no `.xg` grammar does).
    Json,
    /// `.xg` text.
    Xg,
}

/// The kind of the grammar file `path` (`.xg` if it cannot be read: the
/// error comes when it is loaded).
pub fn kind_of(path: &Path) -> FileKind {
    if is_bundle(path) {
        return FileKind::Bundle;
    }
    let mut head = [0u8; 512];
    let read = std::fs::File::open(path)
        .and_then(|mut file| std::io::Read::read(&mut file, &mut head))
        .unwrap_or(0);
    let text = head[..read]
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(&head[..read]);
    match text.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => FileKind::Json,
        _ => FileKind::Xg,
    }
}

/// Whether `path` names a bundle: by its extension, or by its first bytes.
pub fn is_bundle(path: &Path) -> bool {
    if path.extension().is_some_and(|e| e == "xgb") {
        return true;
    }
    let mut magic = [0; 8];
    std::fs::File::open(path)
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut magic))
        .is_ok_and(|()| magic == xg_runtime::bundle::format::MAGIC)
}

/// Whether a JSON file holds a structural tag rather than a schema.
pub fn is_structural_tag(value: &serde_json::Value) -> bool {
    value.get("type").and_then(serde_json::Value::as_str) == Some("structural_tag")
}

/// Compiles the grammar in `path` from `rule` (for `vocabulary`, if
/// given), printing its diagnostics if it has errors.
pub fn compile(
    path: &Path,
    rule: &str,
    vocabulary: Option<&Arc<Vocabulary>>,
    color: bool,
) -> Result<xg_runtime::Grammar> {
    let mut request = Request::ahead_of_time();
    if let Some(vocabulary) = vocabulary {
        request.sources.set_vocabulary(Arc::clone(vocabulary));
    }
    let file = request
        .sources
        .load(path, &mut request.diagnostics)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    let grammar = pipeline::grammar(&mut request, file, rule);
    if request.diagnostics.has_errors() {
        eprint!("{}", request.diagnostics.render(&request.sources, color));
    }
    grammar.with_context(|| format!("`{}` does not compile", path.display()))
}

/// Compiles a structural tag read from `path`, printing its diagnostics.
fn compile_structural_tag(
    path: &Path,
    tag: &serde_json::Value,
    text: String,
    vocabulary: Option<&Arc<Vocabulary>>,
    color: bool,
) -> Result<xg_runtime::Grammar> {
    let mut request = Request::new(&Limits::default(), &CompileCache::default());
    if let Some(vocabulary) = vocabulary {
        request.sources.set_vocabulary(Arc::clone(vocabulary));
    }
    let file = request.add(path.display().to_string(), text);
    let grammar = pipeline::structural_tag(&mut request, tag, file);
    eprint!("{}", request.diagnostics.render(&request.sources, color));
    grammar.with_context(|| format!("`{}` does not compile", path.display()))
}

/// Compiles a regex given on the command line, printing its diagnostics.
fn compile_regex(pattern: &str, json_string: bool, color: bool) -> Result<xg_runtime::Grammar> {
    let mut request = Request::new(&Limits::default(), &CompileCache::default());
    let file = request.add("<regex>", pattern);
    let options = regex::Options {
        json_string,
        ..regex::Options::default()
    };
    let grammar = pipeline::regex(&mut request, file, options);
    eprint!("{}", request.diagnostics.render(&request.sources, color));
    grammar.context("the regex does not compile")
}
