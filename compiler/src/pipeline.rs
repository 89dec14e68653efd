//! The compiler's stages, in the order they run.
//!
//! ```text
//! .xg text ──syntax::parse──▶ ast::File ──resolve──▶ tree::Grammar     (check)
//!          ──ir::lower──▶ ir::Grammar ──normalize──▶ ir::Grammar
//!          ──fsm::build──▶ fsm::Grammar ──hash──▶ structural hashes
//!          ──tables::build──▶ runtime tables                            (compile)
//!          ──xg_runtime::Grammar::new──▶ runtime grammar                 (grammar)
//! ```

use xg_runtime::Grammar;
use xg_runtime::lru::free_aside;
use xg_runtime::tables::Tables;

use crate::budget::Exceeded;
use crate::diagnostic::Diagnostic;
use crate::hash::RuleHash;
use crate::request::Request;
use crate::source::{FileId, Span};
use crate::{
    fsm, hash, ir, json_schema, lazy, normalize, regex, resolve, structural_tag, tables, tools,
    tree,
};

/// Runs the front end on `entry` with entry rule `root`: parse the file and
/// its imports, resolve names, check everything (embedded schemas within
/// the request's budget, taken from its cache if an earlier compilation
/// generated them). Diagnostics come back sorted by position; the tree is
/// `None` if there were errors.
pub fn check(request: &mut Request, entry: FileId, root: &str) -> Option<tree::Grammar> {
    let grammar = resolve::resolve(request, entry, root);
    request.diagnostics.sort();
    grammar
}

/// A grammar compiled through the middle end: automata, hashes and tables.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The automata, as built (equal structures are numbered alike).
    pub automata: fsm::Grammar,
    /// Structural hashes, indexed by rule.
    pub hashes: Vec<RuleHash>,
    /// The flat tables the runtime executes.
    pub tables: Tables,
}

/// Runs every stage on `entry`: the front end, then lowering to bytes,
/// normalization, automata, hashing and tables, all of them now.
/// `None` if there were errors.
pub fn compile(request: &mut Request, entry: FileId, root: &str) -> Option<Compiled> {
    let tree = check(request, entry, root)?;
    compile_tree(request, &tree)
}

/// Runs the stages after the front end on a checked tree (from `.xg` text
/// or from another front end such as [`crate::json_schema`]) within the
/// request's budget, reusing and adding to the automata in its cache;
/// running out of the budget is an error at the root rule.
pub fn compile_tree(request: &mut Request, tree: &tree::Grammar) -> Option<Compiled> {
    let root = tree.rule(tree.root).span;
    let stages = || -> Result<Compiled, Exceeded> {
        let grammar = normalize::normalize_within(ir::lower(tree), &request.budget)?;
        let mut automata = fsm::build(&grammar, &request.budget, &request.cache)?;
        let hashes = hash::hash(&grammar, &mut automata, &request.budget)?;
        let tables = tables::build(&automata, &hashes);
        Ok(Compiled {
            automata,
            hashes,
            tables,
        })
    };
    match stages() {
        Ok(compiled) => Some(compiled),
        Err(exceeded) => {
            request.diagnostics.push(budget_error(&exceeded, root));
            None
        }
    }
}

/// The error for a compilation of the grammar at `root` that ran out of
/// its budget.
fn budget_error(exceeded: &Exceeded, root: Span) -> Diagnostic {
    Diagnostic::error(
        "budget",
        exceeded.to_string(),
        root,
        "while compiling this grammar",
    )
}

/// Compiles `entry` with entry rule `root` into a runtime [`Grammar`], ready
/// for [`xg_runtime::Matcher`]s, every automaton built now: for grammars
/// written ahead of time ([`Request::ahead_of_time`]) and bundles. `None` if
/// there were errors.
pub fn grammar(request: &mut Request, entry: FileId, root: &str) -> Option<Grammar> {
    let compiled = compile(request, entry, root)?;
    match Grammar::new(compiled.tables) {
        Ok(grammar) => Some(grammar),
        Err(error) => {
            // The compiler's own tables always validate; say so if not.
            let span = Span::new(entry, 0, 0);
            request.diagnostics.push(internal_error(&error, span));
            None
        }
    }
}

/// [`grammar`] for `.xg` text that arrives with a request: the whole
/// compilation — resolving, the schemas it embeds (`%json`), automata,
/// hashing — within the request's budget, reusing what earlier
/// compilations with its cache built, small automata built on first use.
/// (Add the text with [`Request::add`], which keeps it from
/// reading files.)
pub fn grammar_within(request: &mut Request, entry: FileId, root: &str) -> Option<Grammar> {
    let tree = check(request, entry, root)?;
    let span = tree.rule(tree.root).span;
    lazy_grammar(request, ir::lower(&tree), span)
}

/// Compiles a JSON Schema, `schema`, parsed from the text of `file`, into a
/// runtime [`Grammar`] within the request's budget (the whole compilation:
/// generating rules, automata, hashing). Rules a schema generates and
/// automata built by earlier compilations with the same cache are reused:
/// a server that keeps one cache pays once for a schema its requests
/// repeat, and once for the rules schemas share (strings, numbers). Errors
/// (with the JSON pointer of each offending part) and the report's
/// warnings are diagnostics at the part of the text each pointer names.
/// `None` if there were errors.
pub fn json_schema(
    request: &mut Request,
    schema: &serde_json::Value,
    file: FileId,
    options: &json_schema::Options,
) -> Option<Grammar> {
    let budget = &request.budget;
    // Checked before any walk of the value that recurses on its depth.
    let generated = match json_schema::too_deep(schema) {
        Some(pointer) => Err(vec![json_schema::SchemaError {
            pointer,
            message: json_schema::too_deep_message(),
        }]),
        None => {
            // Each walk of a large schema (its depth, its numbers) takes
            // milliseconds: the budget is checked between them.
            let stopped = |exceeded: Exceeded| {
                vec![json_schema::SchemaError {
                    pointer: "#".into(),
                    message: exceeded.to_string(),
                }]
            };
            budget.check().map_err(stopped).and_then(|()| {
                // The key is the schema's text, which decides the schema
                // and keeps the numbers a double cannot hold (they decide
                // bounds): no printing of the value, which took 2 % of a
                // schema's time to first mask.
                let text = request.sources.text(file);
                request.cache.schema(text.to_owned(), options, || {
                    let inexact = json_schema::inexact_numbers(schema, text);
                    budget.check().map_err(stopped)?;
                    // A request shows warnings only: enforced keywords
                    // are not noted.
                    json_schema::generate_shallow(
                        schema,
                        inexact,
                        options,
                        budget,
                        json_schema::Kept::Warnings,
                    )
                })
            })
        }
    };
    let placement = json_schema::Placement {
        whole: Span::new(file, 0, 0),
        text: Some((request.sources.text(file), 0)),
    };
    let generated = match generated {
        Ok(generated) => {
            json_schema::push_warnings(&generated.report, &placement, &mut request.diagnostics);
            generated
        }
        Err(errors) => {
            json_schema::push_errors(&errors, &placement, &mut request.diagnostics);
            return None;
        }
    };
    let whole = Span::new(file, 0, 0);
    let grammar = match generated.to_ir_within(&request.budget) {
        Ok(lowered) => lazy_grammar(request, lowered, whole),
        Err(exceeded) => {
            request.diagnostics.push(budget_error(&exceeded, whole));
            None
        }
    };
    // A stopped compilation returns without freeing the schema's rules
    // here: they are the cache's if it kept them, else (past its size, as
    // an object of 80,000 properties is) 200 ms of freeing.
    if grammar.is_none() {
        free_aside(generated);
    }
    grammar
}

/// Compiles a regular expression, the whole text of `file`, into a runtime
/// [`Grammar`] that matches what the pattern matches in full, within the
/// request's budget, reusing automata built with its cache. Errors point
/// into the pattern. `None` if there were errors.
pub fn regex(request: &mut Request, file: FileId, options: regex::Options) -> Option<Grammar> {
    let pattern = request.sources.text(file);
    let tree = regex::check(pattern, options, file, &mut request.diagnostics)?;
    let span = tree.rule(tree.root).span;
    lazy_grammar(request, ir::lower(&tree), span)
}

/// Compiles a structural tag (XGrammar's JSON, `tag`, parsed from the text
/// of `file`) into a runtime [`Grammar`] within the request's budget,
/// reusing the schemas' rules and the automata built with its cache. The
/// request's vocabulary resolves tokens given by text. Errors name the JSON
/// pointer of the offending part, or point into an embedded grammar or
/// regex. `None` if there were errors.
pub fn structural_tag(
    request: &mut Request,
    tag: &serde_json::Value,
    file: FileId,
) -> Option<Grammar> {
    let tree = structural_tag::check(request, tag, file)?;
    let span = tree.rule(tree.root).span;
    lazy_grammar(request, ir::lower(&tree), span)
}

/// Compiles a request's tool list (JSON, `tools_json`, parsed from the text
/// of `file`) into the grammar of a turn in `options.format`, within the
/// request's budget. The grammar is `.xg` text on the standard library's
/// format files ([`tools::to_xg`]), added to the request's sources as a
/// file of its own; formats that name special tokens (Mistral, Harmony)
/// need the request's vocabulary. Automata of argument rules compiled by
/// earlier requests with the same cache are reused, so a request costs
/// little more than its new tools. Errors in the tool list name its JSON
/// pointer and point at it; errors in a schema point into the generated
/// text. `None` if there were errors.
pub fn tools(
    request: &mut Request,
    tools_json: &serde_json::Value,
    file: FileId,
    options: &tools::Options,
) -> Option<Grammar> {
    let sources = &mut request.sources;
    let diagnostics = &mut request.diagnostics;
    let listed = match tools::parse(tools_json) {
        Ok(listed) => listed,
        Err(errors) => {
            for error in &errors {
                tools::diagnose(error, sources, file, diagnostics);
            }
            return None;
        }
    };
    let text = match tools::to_xg(&listed, options, sources.vocabulary()) {
        Ok(text) => text,
        Err(error) => {
            tools::diagnose(&error, sources, file, diagnostics);
            return None;
        }
    };
    let name = format!("{} (as {} grammar)", sources.name(file), options.format);
    let generated = sources.add(name, text, None);
    grammar_within(request, generated, "root")
}

/// The runtime grammar of a request's byte-level grammar, within its
/// budget: normalized and hashed now, its automata built now or, where
/// small, on first use ([`lazy`]); running out of the budget is an error
/// at `root`.
fn lazy_grammar(request: &mut Request, grammar: ir::Grammar, root: Span) -> Option<Grammar> {
    let budget = &request.budget;
    let stages = || {
        let grammar = normalize::normalize_within(grammar, budget)?;
        lazy::grammar(grammar, budget, &request.cache)
    };
    match stages() {
        Ok(Ok(grammar)) => Some(grammar),
        Ok(Err(error)) => {
            request.diagnostics.push(internal_error(&error, root));
            None
        }
        Err(exceeded) => {
            request.diagnostics.push(budget_error(&exceeded, root));
            None
        }
    }
}

/// The error for tables the compiler made that do not validate (a bug).
fn internal_error(error: &xg_runtime::tables::TablesError, span: Span) -> Diagnostic {
    Diagnostic::error(
        "internal-error",
        format!("the compiler produced {error}"),
        span,
        "while compiling this grammar",
    )
}
