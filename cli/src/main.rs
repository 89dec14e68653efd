//! `xg`: the xg command-line tool.
//!
//! - `xg [--grammar FILE] [--tokenizer TOKENIZER.json] [--seed N]`: the main
//!   job, constrained generation on an embedded default (a tool-calling
//!   turn and the Qwen3 vocabulary).
//! - `xg check FILE…`: check grammars and print diagnostics.
//! - `xg fmt FILE…`: print grammars in canonical form.
//! - `xg inspect FILE`: show a grammar's automata, or a bundle's sections.
//! - `xg compile GRAMMAR -o OUT.xgb [--tokenizer TOKENIZER.json]
//!   [--precompute K|auto|all|none]`: write a bundle.
//! - `xg match GRAMMAR (--text TEXT | --file FILE)`: validate an output.
//! - `xg trace GRAMMAR --tokenizer TOKENIZER.json (--text TEXT | --file FILE)`:
//!   the output token by token, with each step's mask.
//! - `xg json-schema SCHEMA.json [--report]`: a schema as `.xg` text, or
//!   what was enforced, approximated and ignored.
//!
//! - `xg tools --format FORMAT TOOLS.json`: the grammar of a turn that
//!   may call the given tools, in a model family's format.
//!
//! - `xg bench maskbench --tokenizer TOKENIZER.json --out RESULTS.jsonl
//!   FILE…`: xg side by side with LLGuidance on MaskBench files.
//!
//! `match`, `trace` and `compile` take `.xg` grammars, JSON Schemas
//! (`.json`), structural tags (`.json`), bundles (`.xgb`) or a regular
//! expression (`--regex PATTERN`).

/// `println!` for the tool's output (see [`write_out`]).
macro_rules! outln {
    () => {
        $crate::write_out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::write_out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` for the tool's output (see [`write_out`]).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::write_out(format_args!($($arg)*))
    };
}

mod bench;
mod compile;
mod demo;
mod inspect;
mod load;
mod schema;
mod tools;
mod trace;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use xg_compiler::{
    Budget, Diagnostic, Diagnostics, FileId, Request, Sources, Span, pipeline, syntax,
};
use xg_runtime::Matcher;

/// jemalloc rather than glibc's allocator: a long run (a server, `xg
/// bench`) frees and allocates mask-cache entries all the time, and glibc's
/// heap slows as it fragments (book: performance).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// xg: a structured-generation engine for LLM inference.
#[derive(Parser)]
#[command(name = "xg", version, about, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Without a subcommand, xg runs its main job: constrained generation
    /// on an embedded default, with these options.
    #[command(flatten)]
    demo: demo::DemoArgs,
    /// When to colour diagnostics.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    color: Color,
}

#[derive(Subcommand)]
enum Command {
    /// Check grammars: parse, resolve names and imports, report every problem.
    Check {
        /// The grammar files to check: `.xg`, JSON Schemas, structural tags
        /// (decided by the content).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The entry rule.
        #[arg(long, visible_alias = "rule", default_value = "root")]
        root: String,
        /// Output style of the diagnostics.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
        /// The model's `tokenizer.json`, to resolve tokens named by their
        /// text (`Token("<|channel|>")`).
        #[arg(long)]
        tokenizer: Option<PathBuf>,
        #[command(flatten)]
        schema: schema::SchemaFlags,
    },
    /// Compile a grammar and show its automata: per-rule node and edge
    /// counts and structural hashes, or one rule's automaton as Graphviz.
    /// Given a bundle (`.xgb`): its version, sections, sizes, checksums,
    /// precomputed mask entries and vocabulary.
    Inspect {
        /// The grammar: `.xg`, a JSON Schema, a structural tag or a bundle
        /// (decided by the content).
        file: PathBuf,
        /// The entry rule.
        #[arg(long, visible_alias = "rule", default_value = "root")]
        root: String,
        /// Print this rule's automaton in Graphviz dot format instead.
        #[arg(long, value_name = "RULE")]
        dot: Option<String>,
        #[command(flatten)]
        schema: schema::SchemaFlags,
    },
    /// Compile a grammar into a bundle (`.xgb`) that an inference server
    /// maps and serves at once: its tables and, with `--tokenizer`, token
    /// masks precomputed for that model's vocabulary.
    Compile(compile::CompileArgs),
    /// Match a text (a model's output) against a grammar: exit 0 if the
    /// whole text is accepted and the grammar can end there, 1 with the place
    /// and what was expected if not.
    Match {
        #[command(flatten)]
        grammar: load::GrammarArgs,
        /// The text to match.
        #[arg(long, required_unless_present = "file", conflicts_with = "file")]
        text: Option<String>,
        /// A file whose bytes to match.
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Trace a text through a grammar token by token: tokenize it with
    /// the model's tokenizer and print, per step, the token, how many tokens
    /// the mask allowed, whether the token was among them, the time and the
    /// mask cache's work. Exit 0 if every token was allowed and the output
    /// can end there, 1 if not.
    Trace {
        #[command(flatten)]
        grammar: load::GrammarArgs,
        /// The model's Hugging Face `tokenizer.json`.
        #[arg(long)]
        tokenizer: PathBuf,
        /// The model's `tokenizer_config.json`, for its end-of-sequence
        /// token (default: the one next to the tokenizer, if any).
        #[arg(long, value_name = "FILE")]
        tokenizer_config: Option<PathBuf>,
        /// More stop token ids (a generation config's end-of-sequence list).
        #[arg(long, value_name = "ID", value_delimiter = ',')]
        stop: Vec<u32>,
        /// The text to trace.
        #[arg(long, required_unless_present = "file", conflicts_with = "file")]
        text: Option<String>,
        /// A file whose text to trace.
        #[arg(long)]
        file: Option<PathBuf>,
        /// Trace under a token budget: masks keep the output able to end
        /// in the tokens left; each step shows the tokens left and the
        /// fewest bytes to an end.
        #[arg(long, value_name = "N")]
        token_budget: Option<usize>,
    },
    /// Compile a JSON Schema and print the grammar as `.xg` text (warnings
    /// for what is approximated or ignored on stderr), or with `--report`
    /// every keyword and what became of it. Exit 0 if the schema compiles.
    JsonSchema {
        /// The schema (JSON).
        schema: PathBuf,
        /// Print the report (enforced / approximated / ignored per keyword
        /// and JSON pointer) instead of the grammar.
        #[arg(long)]
        report: bool,
        #[command(flatten)]
        flags: schema::SchemaFlags,
    },
    /// Write the grammar of a model's turn that may call the given tools, in
    /// the model family's format: reasoning, text, then calls, each
    /// dispatched to its tool's argument schema. Prints the `.xg` text;
    /// with `--tokenizer`, also compiles it and reports the time.
    Tools(tools::ToolsArgs),
    /// Benchmarks, side by side with peer engines (LLGuidance when built
    /// with `--features llguidance`).
    #[command(subcommand)]
    Bench(bench::Bench),
    /// Print grammars in canonical form.
    Fmt {
        /// The `.xg` files to format; a JSON Schema (decided by the content)
        /// prints as its `.xg` grammar.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Rewrite the files in place instead of printing them.
        #[arg(long, conflicts_with = "check")]
        write: bool,
        /// Print nothing; fail if a file is not in canonical form.
        #[arg(long)]
        check: bool,
        #[command(flatten)]
        schema: schema::SchemaFlags,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// rustc-style text with source excerpts.
    Human,
    /// One JSON object with every diagnostic (file, line, column, byte offsets).
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

/// Writes to standard output. A reader that stops reading (`xg trace … |
/// head`) ends the program quietly, as a closed pipe ends other
/// command-line tools; any other failure to write is an error message and
/// exit code 1, never a panic.
fn write_out(text: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if let Err(error) = std::io::stdout().lock().write_fmt(text) {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write the output: {error}");
        std::process::exit(1);
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let color = match cli.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stderr().is_terminal(),
    };
    let result = match cli.command {
        None => demo::run(&cli.demo, color),
        Some(Command::Inspect {
            file, dot: None, ..
        }) if load::is_bundle(&file) => inspect::bundle(&file),
        Some(Command::Inspect {
            file,
            root,
            dot,
            schema,
        }) => inspect(&file, &root, dot.as_deref(), &schema, color),
        Some(Command::Compile(args)) => compile::run(&args, color),
        Some(Command::Check {
            files,
            root,
            format,
            tokenizer,
            schema,
        }) => check(&files, &root, format, tokenizer.as_deref(), &schema, color),
        Some(Command::Match {
            grammar,
            text,
            file,
        }) => run_match(&grammar, text, file.as_deref(), color),
        Some(Command::Trace {
            grammar,
            tokenizer,
            tokenizer_config,
            stop,
            text,
            file,
            token_budget,
        }) => (|| {
            let input = match (text, file.as_deref()) {
                (Some(text), _) => trace::Input::Text(text),
                (None, Some(file)) => trace::Input::File(file),
                (None, None) => anyhow::bail!("give the input with --text or --file"),
            };
            let model = trace::Model {
                tokenizer: &tokenizer,
                config: tokenizer_config.as_deref(),
                stop: &stop,
            };
            let (vocabulary, json) = model.load()?;
            let vocabulary = Arc::new(vocabulary);
            let compiled = load::load_grammar(&grammar, Some(&vocabulary), color)?;
            trace::trace(
                compiled,
                &vocabulary,
                &json,
                &tokenizer,
                input,
                token_budget,
            )
        })(),
        Some(Command::JsonSchema {
            schema,
            report,
            flags,
        }) => schema::json_schema(&schema, &flags, report, color),
        Some(Command::Tools(args)) => tools::run(&args, color),
        Some(Command::Bench(bench)) => bench::run(&bench),
        Some(Command::Fmt {
            files,
            write,
            check,
            schema,
        }) => fmt(&files, write, check, &schema, color),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// `xg check`: true if no file has errors.
fn check(
    files: &[PathBuf],
    root: &str,
    format: Format,
    tokenizer: Option<&Path>,
    schema: &schema::SchemaFlags,
    color: bool,
) -> Result<bool> {
    // One request for all the files, so that they are numbered apart;
    // each file's diagnostics (sorted among themselves) and budget.
    let mut request = Request::ahead_of_time();
    if let Some(tokenizer) = tokenizer {
        let model = trace::Model {
            tokenizer,
            config: None,
            stop: &[],
        };
        request.sources.set_vocabulary(Arc::new(model.load()?.0));
    }
    let mut diagnostics = Diagnostics::new();
    let mut summaries = Vec::new();
    for path in files {
        request.budget = Budget::unlimited();
        let grammar = front_end(path, root, schema, &mut request)?;
        summaries.push((path.display().to_string(), grammar.map(|g| g.rules.len())));
        diagnostics.append(std::mem::take(&mut request.diagnostics));
    }
    let sources = request.sources;
    match format {
        Format::Human => {
            eprint!("{}", diagnostics.render(&sources, color));
            for (name, rules) in &summaries {
                match rules {
                    Some(rules) => eprintln!("{name}: ok ({rules} rules)"),
                    None => eprintln!("{name}: failed"),
                }
            }
            let (errors, warnings) = (diagnostics.error_count(), diagnostics.warning_count());
            if errors + warnings > 0 {
                eprintln!("{errors} error(s), {warnings} warning(s)");
            }
        }
        Format::Json => {
            let report = serde_json::json!({
                "errors": diagnostics.error_count(),
                "warnings": diagnostics.warning_count(),
                "diagnostics": diagnostics.to_json(&sources),
            });
            outln!("{report:#}");
        }
    }
    Ok(!diagnostics.has_errors())
}

/// The front end on the grammar file `path`, whatever it holds
/// ([`load::kind_of`]), added to `sources`: its checked tree, or `None`
/// with its errors in the request's diagnostics (a JSON file within the
/// limits `schema` sets).
fn front_end(
    path: &Path,
    root: &str,
    schema: &schema::SchemaFlags,
    request: &mut Request,
) -> Result<Option<xg_compiler::tree::Grammar>> {
    match load::kind_of(path) {
        load::FileKind::Bundle => anyhow::bail!(
            "`{}` is a bundle, compiled already: `xg inspect` shows it",
            path.display()
        ),
        load::FileKind::Json => schema::check_json(path, schema, request),
        load::FileKind::Xg => {
            let file = request
                .sources
                .load(path, &mut request.diagnostics)
                .with_context(|| format!("cannot read `{}`", path.display()))?;
            Ok(pipeline::check(request, file, root))
        }
    }
}

/// `xg inspect`: true if the grammar compiled (and the rule exists, with `--dot`).
fn inspect(
    path: &Path,
    root: &str,
    dot: Option<&str>,
    schema: &schema::SchemaFlags,
    color: bool,
) -> Result<bool> {
    let mut request = Request::ahead_of_time();
    let tree = front_end(path, root, schema, &mut request)?;
    // The middle end as for a grammar written ahead of time.
    request.budget = Budget::unlimited();
    let compiled = tree.and_then(|tree| pipeline::compile_tree(&mut request, &tree));
    eprint!("{}", request.diagnostics.render(&request.sources, color));
    let Some(compiled) = compiled else {
        return Ok(false);
    };
    let grammar = &compiled.automata;
    if let Some(name) = dot {
        let Some(rule) = grammar.rules.iter().find(|r| r.name == name) else {
            let names: Vec<&str> = grammar.rules.iter().map(|r| r.name.as_str()).collect();
            eprintln!("error: no rule `{name}`; rules: {}", names.join(", "));
            return Ok(false);
        };
        out!("{}", inspect::dot(grammar, rule));
        return Ok(true);
    }
    out!(
        "{}",
        inspect::summary(&path.display().to_string(), &compiled)
    );
    Ok(true)
}

/// `xg match`: compiles the grammar and matches the input.
fn run_match(
    grammar: &load::GrammarArgs,
    text: Option<String>,
    file: Option<&Path>,
    color: bool,
) -> Result<bool> {
    let g = load::load_grammar(grammar, None, color)?;
    let schema_file = grammar
        .grammar
        .as_deref()
        .filter(|path| grammar.regex.is_none() && load::kind_of(path) == load::FileKind::Json);
    // For a schema: whether the properties' order is what refused
    // the input (the same schema in any order takes it), else where
    // in the schema the refusal comes from.
    let explain = |input: &[u8], offset: usize, rules: &[String]| {
        let path = schema_file?;
        let any_order = schema::any_order_variant(path, &grammar.schema);
        if any_order.is_some_and(|grammar| {
            let mut matcher = Matcher::new(Arc::new(grammar));
            matcher.accept_bytes(input).is_ok() && matcher.terminate().is_ok()
        }) {
            return Some(
                "the properties are not in the order the schema lists them, which is \
                 the order this grammar follows; `--any-order` accepts them in any order"
                    .to_owned(),
            );
        }
        schema::refusal_place(path, &grammar.schema, rules, &input[..offset])
    };
    // A schema's or a structural tag's rule names are made up: the help
    // says where in the schema instead.
    let generated_rules = schema_file.is_some();
    match_input(
        g,
        grammar.rule_name(),
        text,
        file,
        &explain,
        generated_rules,
        color,
    )
}

/// Given a refused input, the offset of the refused byte and the rules the
/// refusal was in (innermost first), a help that explains it in the user's
/// terms, if there is one.
type Explain<'a> = dyn Fn(&[u8], usize, &[String]) -> Option<String> + 'a;

/// `xg match`: true if the input matches. A grammar that does not compile
/// is an error (exit 2), not a mismatch. With `generated_rules`, the rules
/// a refusal was in are not named (they are not the user's).
fn match_input(
    grammar: xg_runtime::Grammar,
    rule: &str,
    text: Option<String>,
    file: Option<&Path>,
    explain: &Explain<'_>,
    generated_rules: bool,
    color: bool,
) -> Result<bool> {
    let mut sources = Sources::new();
    let (name, input) = match (text, file) {
        (Some(text), _) => ("<text>".to_owned(), text.into_bytes()),
        (None, Some(file)) => (
            file.display().to_string(),
            std::fs::read(file).with_context(|| format!("cannot read `{}`", file.display()))?,
        ),
        (None, None) => anyhow::bail!("give the input with --text or --file"),
    };
    let mut matcher = Matcher::new(Arc::new(grammar));
    let shown = |rejection: &xg_runtime::Rejection| {
        if generated_rules {
            rejection.without_rules()
        } else {
            rejection.clone()
        }
    };
    let failure = match matcher.accept_bytes(&input) {
        Err(rejection) => Some((
            rejection.position(),
            format!("{:#}", shown(&rejection)),
            rejection.expected().rules().to_vec(),
        )),
        Ok(()) => matcher.terminate().err().map(|rejection| {
            let message = format!(
                "the input ends too early; expected {}",
                shown(&rejection).expected()
            );
            (input.len(), message, rejection.expected().rules().to_vec())
        }),
    };
    let Some((offset, message, rules)) = failure else {
        eprintln!("ok: {} bytes match `{rule}`", input.len());
        return Ok(true);
    };
    // Offsets are in bytes of the input; the excerpt shows it as UTF-8.
    let shown = String::from_utf8_lossy(&input[..offset]).len();
    let input_file = sources.add(name, String::from_utf8_lossy(&input), None);
    let (line, column) = sources.line_column(input_file, shown);
    // Underline the refused character, unless it is a line break or the end.
    let rest = &sources.text(input_file)[shown..];
    let end = match rest.chars().next() {
        Some(c) if c != '\n' && c != '\r' => shown + c.len_utf8(),
        _ => shown,
    };
    let mut report = Diagnostics::new();
    let mut diagnostic = Diagnostic::error(
        "no-match",
        format!("the input does not match `{rule}` at {line}:{column} (byte {offset})"),
        Span::new(input_file, shown, end),
        message,
    );
    if let Some(help) = explain(&input, offset, &rules) {
        diagnostic = diagnostic.with_help(help);
    }
    report.push(diagnostic);
    eprint!("{}", report.render(&sources, color));
    Ok(false)
}

/// `xg fmt`: true if every file parsed (and, with `--check`, was canonical).
/// A JSON Schema prints as its `.xg` grammar.
fn fmt(
    files: &[PathBuf],
    write: bool,
    check: bool,
    schema: &schema::SchemaFlags,
    color: bool,
) -> Result<bool> {
    let mut all_ok = true;
    for path in files {
        let mut request = Request::ahead_of_time();
        if load::kind_of(path) == load::FileKind::Json {
            if write || check {
                anyhow::bail!(
                    "`{}` is JSON: `--write` and `--check` apply to `.xg` files (`xg fmt FILE` prints a schema's `.xg`)",
                    path.display()
                );
            }
            let text = schema::xg_text(path, schema, &mut request)?;
            eprint!("{}", request.diagnostics.render(&request.sources, color));
            match text {
                Some(text) => out!("{text}"),
                None => all_ok = false,
            }
            continue;
        }
        let Request {
            mut sources,
            mut diagnostics,
            ..
        } = request;
        let file = sources
            .load(path, &mut diagnostics)
            .with_context(|| format!("cannot read `{}`", path.display()))?;
        let Some(formatted) = format_file(&sources, file, &mut diagnostics) else {
            eprint!("{}", diagnostics.render(&sources, color));
            eprintln!("{}: not formatted (syntax errors)", path.display());
            all_ok = false;
            continue;
        };
        if check {
            if formatted != sources.text(file) {
                eprintln!("{}: not in canonical form", path.display());
                all_ok = false;
            }
        } else if write {
            if formatted != sources.text(file) {
                std::fs::write(path, &formatted)
                    .with_context(|| format!("cannot write `{}`", path.display()))?;
            }
        } else {
            out!("{formatted}");
        }
    }
    Ok(all_ok)
}

/// The canonical text of `file`, or `None` if it has syntax errors.
fn format_file(sources: &Sources, file: FileId, diagnostics: &mut Diagnostics) -> Option<String> {
    let ast = syntax::parse(file, sources.text(file), diagnostics);
    (!diagnostics.has_errors()).then(|| syntax::print(&ast))
}
