//! The compiler's stages, in the order they run.
//!
//! ```text
//! .xg text ──syntax::parse──▶ ast::File ──resolve──▶ tree::Grammar     (check)
//!          ──ir::lower──▶ ir::Grammar ──normalize──▶ ir::Grammar
//!          ──fsm::build──▶ fsm::Grammar ──hash──▶ hashes, canonical nodes
//!          ──tables::build──▶ runtime tables                            (compile)
//!          ──xg_runtime::Grammar::new──▶ runtime grammar                 (grammar)
//! ```

use xg_runtime::Grammar;
use xg_runtime::tables::Tables;

use crate::budget::{Budget, Exceeded, Limits};
use crate::cache::CompileCache;
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::hash::RuleHash;
use crate::source::{FileId, Sources, Span};
use crate::{
    fsm, hash, ir, json_schema, normalize, regex, resolve, structural_tag, tables, tools, tree,
};

/// Runs the front end on `entry` with entry rule `root`: parse the file and
/// its imports, resolve names, check everything. Diagnostics come back sorted
/// by position; the tree is `None` if there were errors.
pub fn check(
    sources: &mut Sources,
    entry: FileId,
    root: &str,
    diagnostics: &mut Diagnostics,
) -> Option<tree::Grammar> {
    let grammar = resolve::resolve(sources, entry, root, diagnostics);
    diagnostics.sort();
    grammar
}

/// A grammar compiled through the middle end: automata, hashes and tables.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The automata, nodes numbered canonically.
    pub automata: fsm::Grammar,
    /// Structural hashes, indexed by rule.
    pub hashes: Vec<RuleHash>,
    /// The flat tables the runtime executes.
    pub tables: Tables,
}

/// Runs every stage on `entry`: the front end, then lowering to bytes,
/// normalization, automata, hashing and tables. `None` if there were errors.
pub fn compile(
    sources: &mut Sources,
    entry: FileId,
    root: &str,
    diagnostics: &mut Diagnostics,
) -> Option<Compiled> {
    let tree = check(sources, entry, root, diagnostics)?;
    compile_tree(
        &tree,
        &Budget::unlimited(),
        &CompileCache::default(),
        diagnostics,
    )
}

/// Runs the stages after the front end on a checked tree (from `.xg` text
/// or from another front end such as [`crate::json_schema`]) within
/// `budget`, reusing and adding to the automata in `cache`; running out of
/// the budget is an error at the root rule.
pub fn compile_tree(
    tree: &tree::Grammar,
    budget: &Budget,
    cache: &CompileCache,
    diagnostics: &mut Diagnostics,
) -> Option<Compiled> {
    let grammar = ir::lower(tree);
    let grammar = normalize::normalize(grammar);
    let stages = || -> Result<Compiled, Exceeded> {
        let mut automata = fsm::build(&grammar, budget, cache)?;
        let hashes = hash::hash(&mut automata, budget)?;
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
            let span = tree.rule(tree.root).span;
            diagnostics.push(Diagnostic::error(
                "budget",
                exceeded.to_string(),
                span,
                "while compiling this grammar",
            ));
            None
        }
    }
}

/// Compiles `entry` with entry rule `root` into a runtime [`Grammar`], ready
/// for [`xg_runtime::Matcher`]s. `None` if there were errors.
pub fn grammar(
    sources: &mut Sources,
    entry: FileId,
    root: &str,
    diagnostics: &mut Diagnostics,
) -> Option<Grammar> {
    let compiled = compile(sources, entry, root, diagnostics)?;
    runtime_grammar(compiled, crate::Span::new(entry, 0, 0), diagnostics)
}

/// Compiles a JSON Schema into a runtime [`Grammar`] within `limits` (the
/// whole compilation: generating rules, automata, hashing). Errors (with the JSON
/// pointer of each offending part) and the report's warnings are
/// diagnostics on `file`, the schema's text in `sources`, each at the part
/// of the text its pointer names. `None` if there were errors.
pub fn json_schema(
    schema: &serde_json::Value,
    options: &json_schema::Options,
    limits: &Limits,
    sources: &Sources,
    file: crate::FileId,
    diagnostics: &mut Diagnostics,
) -> Option<Grammar> {
    let budget = Budget::new(limits.clone());
    let tree = json_schema::check(schema, options, &budget, sources, file, diagnostics)?;
    let compiled = compile_tree(&tree, &budget, &CompileCache::default(), diagnostics)?;
    runtime_grammar(compiled, crate::Span::new(file, 0, 0), diagnostics)
}

/// Compiles a regular expression, the whole text of `file`, into a runtime
/// [`Grammar`] that matches what the pattern matches in full, within
/// `limits`. Errors point into the pattern. `None` if there were errors.
pub fn regex(
    pattern: &str,
    options: regex::Options,
    limits: &Limits,
    file: crate::FileId,
    diagnostics: &mut Diagnostics,
) -> Option<Grammar> {
    let tree = regex::check(pattern, options, file, diagnostics)?;
    let compiled = compile_tree(
        &tree,
        &Budget::new(limits.clone()),
        &CompileCache::default(),
        diagnostics,
    )?;
    runtime_grammar(compiled, crate::Span::new(file, 0, 0), diagnostics)
}

/// Compiles a structural tag (XGrammar's JSON, the whole text of `file`
/// in `sources`) into a runtime [`Grammar`] within `limits`. `vocabulary`
/// resolves tokens given by text. Errors name the JSON pointer of the
/// offending part, or point into an embedded grammar or regex. `None` if
/// there were errors.
pub fn structural_tag(
    tag: &serde_json::Value,
    vocabulary: Option<&xg_runtime::Vocabulary>,
    limits: &Limits,
    sources: &mut Sources,
    file: crate::FileId,
    diagnostics: &mut Diagnostics,
) -> Option<Grammar> {
    let budget = Budget::new(limits.clone());
    let tree = structural_tag::check(tag, vocabulary, &budget, sources, file, diagnostics)?;
    let compiled = compile_tree(&tree, &budget, &CompileCache::default(), diagnostics)?;
    runtime_grammar(compiled, crate::Span::new(file, 0, 0), diagnostics)
}

fn runtime_grammar(
    compiled: Compiled,
    span: crate::Span,
    diagnostics: &mut Diagnostics,
) -> Option<Grammar> {
    match Grammar::new(compiled.tables) {
        Ok(grammar) => Some(grammar),
        Err(error) => {
            // The compiler's own tables always validate; say so if not.
            diagnostics.push(Diagnostic::error(
                "internal-error",
                format!("the compiler produced {error}"),
                span,
                "while compiling this grammar",
            ));
            None
        }
    }
}

/// Compiles a request's tool list (JSON, the whole text of `file` in
/// `sources`) into the grammar of a turn in `options.format`, within
/// `limits`. The grammar is `.xg` text on the standard library's format
/// files ([`tools::to_xg`]), added to `sources` as a file of its own;
/// formats that name special tokens (Mistral, Harmony) need the
/// vocabulary set on `sources`. Automata of argument rules compiled by
/// earlier requests with the same `cache` are reused, so a request costs
/// little more than its new tools. Errors in the tool list name its JSON
/// pointer and point at it; errors in a schema point into the generated
/// text. `None` if there were errors.
pub fn tools(
    tools_json: &serde_json::Value,
    options: &tools::Options,
    limits: &Limits,
    cache: &CompileCache,
    sources: &mut Sources,
    file: FileId,
    diagnostics: &mut Diagnostics,
) -> Option<Grammar> {
    let listed = match tools::parse(tools_json) {
        Ok(listed) => listed,
        Err(errors) => {
            for error in &errors {
                tools::diagnose(error, sources, file, diagnostics);
            }
            return None;
        }
    };
    let text = match tools::to_xg(&listed, options) {
        Ok(text) => text,
        Err(error) => {
            tools::diagnose(&error, sources, file, diagnostics);
            return None;
        }
    };
    let name = format!("{} (as {} grammar)", sources.name(file), options.format);
    let generated = sources.add(name, text, None);
    let budget = Budget::new(limits.clone());
    let tree = check(sources, generated, "root", diagnostics)?;
    let compiled = compile_tree(&tree, &budget, cache, diagnostics)?;
    runtime_grammar(compiled, Span::new(generated, 0, 0), diagnostics)
}
