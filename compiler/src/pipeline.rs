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

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::hash::RuleHash;
use crate::source::{FileId, Sources};
use crate::{fsm, hash, ir, normalize, resolve, tables, tree};

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
    let grammar = ir::lower(&tree, diagnostics)?;
    let grammar = normalize::normalize(grammar);
    let mut automata = fsm::build(&grammar);
    let hashes = hash::hash(&mut automata);
    let tables = tables::build(&automata, &hashes);
    Some(Compiled {
        automata,
        hashes,
        tables,
    })
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
    match Grammar::new(compiled.tables) {
        Ok(grammar) => Some(grammar),
        Err(error) => {
            // The compiler's own tables always validate; say so if not.
            let span = crate::Span::new(entry, 0, 0);
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
