//! Unicode character sets → exact UTF-8 byte automata (as IR expressions).
//!
//! regex-syntax's `Utf8Sequences` splits a range of scalar values into
//! sequences of byte ranges, each matching exactly the encodings of a
//! sub-range; their union is exactly the encodings of the set. Single-byte
//! sequences (ASCII) are merged into one class.

use regex_syntax::utf8::Utf8Sequences;

use super::{ByteSet, Expr};
use crate::tree::CharSet;

/// The expression matching exactly the UTF-8 encodings of the characters in `set`.
pub(crate) fn char_set(set: &CharSet) -> Expr {
    let mut ascii = ByteSet::empty();
    let mut longer = Vec::new();
    for &(lo, hi) in set.ranges() {
        for sequence in Utf8Sequences::new(lo, hi) {
            match sequence.as_slice() {
                [single] => ascii.insert_range(single.start, single.end),
                ranges => longer.push(Expr::Sequence(
                    ranges
                        .iter()
                        .map(|range| Expr::Class(ByteSet::range(range.start, range.end)))
                        .collect(),
                )),
            }
        }
    }
    let mut alternatives = Vec::with_capacity(longer.len() + 1);
    if !ascii.is_empty() {
        alternatives.push(Expr::Class(ascii));
    }
    alternatives.extend(longer);
    match alternatives.len() {
        1 => alternatives.pop().expect("one alternative"),
        _ => Expr::Choice(alternatives),
    }
}
