//! The compiler's stages, in the order they run.
//!
//! ```text
//! .xg text ──syntax::parse──▶ ast::File ──resolve──▶ tree::Grammar
//! ```
//!
//! Later stages (grammar IR, normalization, automata, hashing, tables) are
//! appended here, each a function from the previous stage's output.

use crate::diagnostic::Diagnostics;
use crate::resolve;
use crate::source::{FileId, Sources};
use crate::tree;

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
