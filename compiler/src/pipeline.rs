//! The compiler's stages, in the order they run.
//!
//! ```text
//! .xg text ──syntax::parse──▶ ast::File ──resolve──▶ tree::Grammar     (check)
//!          ──ir::lower──▶ ir::Grammar ──normalize──▶ ir::Grammar
//!          ──fsm::build──▶ fsm::Grammar ──hash──▶ hashes, canonical nodes
//!          ──tables::build──▶ runtime tables                            (compile)
//! ```

use xg_runtime::tables::Tables;

use crate::diagnostic::Diagnostics;
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
