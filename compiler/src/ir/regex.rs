//! Regex terminals → IR expressions, through regex-syntax's HIR.
//!
//! The pattern was checked by `resolve`; here it is parsed to HIR with its
//! flags and translated node by node. Captures are transparent; the only
//! look-arounds left are a leading `^` and a trailing `$`, which match the
//! empty string at a terminal's edges. Greediness does not matter: a grammar
//! terminal matches a language, not a leftmost match.

use regex_syntax::ParserBuilder;
use regex_syntax::hir::{Class, Hir, HirKind};

use super::{ByteSet, Expr, utf8};
use crate::tree::{CharSet, Regex};

/// The expression for a checked regex terminal, or `None` if the pattern
/// does not parse (which resolve has already ruled out).
pub(super) fn lower(regex: &Regex) -> Option<Expr> {
    let hir = ParserBuilder::new()
        .case_insensitive(regex.case_insensitive)
        .dot_matches_new_line(regex.dot_matches_new_line)
        .build()
        .parse(&regex.pattern)
        .ok()?;
    Some(translate(&hir, regex.json_string))
}

/// Characters XGrammar's `json_string=true` keeps out of a match: `"`, `\`
/// and the control characters.
fn json_string_excluded(c: char) -> bool {
    c == '"' || c == '\\' || c < ' '
}

fn translate(hir: &Hir, json_string: bool) -> Expr {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => Expr::Empty,
        HirKind::Literal(literal) => {
            let bytes = &literal.0;
            let excluded = json_string
                && std::str::from_utf8(bytes)
                    .map_or(true, |text| text.chars().any(json_string_excluded));
            if excluded {
                Expr::nothing()
            } else {
                Expr::Bytes(bytes.to_vec())
            }
        }
        HirKind::Class(Class::Unicode(class)) => {
            let set = CharSet::from_ranges(class.ranges().iter().map(|r| (r.start(), r.end())));
            let set = if json_string {
                let excluded = CharSet::from_ranges([('\0', '\u{1F}'), ('"', '"'), ('\\', '\\')]);
                CharSet::from_ranges(
                    excluded
                        .complement()
                        .ranges()
                        .iter()
                        .flat_map(|&(lo, hi)| intersect(&set, lo, hi)),
                )
            } else {
                set
            };
            utf8::char_set(&set)
        }
        HirKind::Class(Class::Bytes(class)) => {
            let mut set = ByteSet::empty();
            for range in class.ranges() {
                set.insert_range(range.start(), range.end());
            }
            Expr::Class(set)
        }
        HirKind::Repetition(repetition) => Expr::Repeat {
            expr: Box::new(translate(&repetition.sub, json_string)),
            min: repetition.min,
            max: repetition.max,
        },
        HirKind::Capture(capture) => translate(&capture.sub, json_string),
        HirKind::Concat(items) => {
            Expr::Sequence(items.iter().map(|h| translate(h, json_string)).collect())
        }
        HirKind::Alternation(items) => {
            Expr::Choice(items.iter().map(|h| translate(h, json_string)).collect())
        }
    }
}

/// The ranges of `set` that lie within `lo..=hi`.
fn intersect(set: &CharSet, lo: char, hi: char) -> Vec<(char, char)> {
    set.ranges()
        .iter()
        .filter(|&&(a, b)| a <= hi && lo <= b)
        .map(|&(a, b)| (a.max(lo), b.min(hi)))
        .collect()
}
