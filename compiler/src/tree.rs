//! The resolved tree: a checked grammar, ready to be lowered to the grammar IR.
//!
//! Produced by [`crate::resolve`]. Everything here is known to be valid: names
//! are [`RuleId`]s into one rule table spanning all imported files, string
//! escapes are decoded, character classes are sets of Unicode scalar ranges,
//! regexes parse, macro arguments are checked, and embedded JSON Schemas
//! have become rules of their own.
//! Spans are kept so later stages can still point at the source.
//!
//! # Overview
//!
//! - [`Grammar`]: the rule table and the entry rule.
//! - [`Rule`], [`Expr`], [`ExprKind`]: rule bodies.
//! - [`CharSet`], [`Regex`], [`Dispatch`], [`TokenSet`], [`TokenDispatch`]:
//!   the payloads of the terminal and builtin forms.

use xg_runtime::{RuleId, TokenId};

use crate::source::Span;

/// A resolved grammar: every rule reachable through imports, and the entry rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Grammar {
    /// All rules, indexed by [`RuleId`].
    pub rules: Vec<Rule>,
    /// The entry rule.
    pub root: RuleId,
}

impl Grammar {
    /// The rule with id `id`.
    pub fn rule(&self, id: RuleId) -> &Rule {
        &self.rules[id.as_usize()]
    }
}

/// One rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// The qualified name: `name` in the entry file, `alias.name` in an import.
    pub name: String,
    /// Where the rule's name is defined.
    pub span: Span,
    /// What the rule matches.
    pub body: Expr,
    /// Text that must follow every match of the rule, if asserted.
    pub lookahead: Option<Expr>,
    /// Whether the rule stays a rule of its own, however small: a
    /// building block many grammars have (JSON Schema's numbers), whose
    /// mask-cache entries then serve all of them instead of each grammar
    /// building its own for every place the block was copied into.
    pub keep: bool,
    /// The name the matcher reports the rule's matches under, if it does
    /// (`[capture]`: the rule's name; `[capture="label"]`: the label). A
    /// captured rule is never inlined, and the tables name it by its
    /// capture.
    pub capture: Option<String>,
    /// How long one match may be (`[max_tokens=N]`, `[max_bytes=N]`). A
    /// limited rule is never inlined.
    pub limit: Limit,
}

/// How long one match of a rule may be: the matcher counts, and where a
/// match reaches its limit allows only the ways out of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Limit {
    /// The most tokens a match may span (`[max_tokens=N]`), if limited.
    pub tokens: Option<u32>,
    /// The most bytes a match may hold (`[max_bytes=N]`), if limited.
    pub bytes: Option<u32>,
}

impl Limit {
    /// Whether either count is limited.
    pub fn is_some(&self) -> bool {
        self.tokens.is_some() || self.bytes.is_some()
    }
}

/// An expression with the span it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What kind of expression.
    pub kind: ExprKind,
    /// Where it was written.
    pub span: Span,
}

/// The forms of a resolved expression.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// The empty string (`""` or `()`).
    Empty,
    /// A non-empty string.
    Literal(String),
    /// One character from a set (`[…]`, `.`).
    Class(CharSet),
    /// A regular expression terminal.
    Regex(Regex),
    /// Another rule.
    Ref(RuleId),
    /// Each item in turn (at least two).
    Sequence(Vec<Expr>),
    /// Any one item (at least two).
    Choice(Vec<Expr>),
    /// `expr` repeated `min` to `max` times (`None`: no upper bound).
    Repeat {
        /// The repeated expression.
        expr: Box<Expr>,
        /// Least number of repetitions.
        min: u32,
        /// Most repetitions, if bounded.
        max: Option<u32>,
    },
    /// Free text with tag dispatch.
    Dispatch(Dispatch),
    /// Exactly one token from a set of token ids (`Token`, `ExcludeToken`).
    Tokens(TokenSet),
    /// Free tokens with dispatch on single trigger tokens (`TokenTagDispatch`).
    TokenDispatch(TokenDispatch),
}

/// A set of Unicode scalar values as sorted, disjoint, non-adjacent ranges.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CharSet {
    ranges: Vec<(char, char)>,
}

impl CharSet {
    /// The set of the given inclusive ranges (in any order, overlapping or not).
    pub fn from_ranges(ranges: impl IntoIterator<Item = (char, char)>) -> Self {
        let mut ranges: Vec<(char, char)> =
            ranges.into_iter().filter(|(lo, hi)| lo <= hi).collect();
        ranges.sort_unstable();
        let mut merged: Vec<(char, char)> = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            match merged.last_mut() {
                Some(last) if u32::from(lo) <= u32::from(last.1) + 1 => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        Self { ranges: merged }
    }

    /// Every character not in `self`.
    #[must_use]
    pub fn complement(&self) -> Self {
        let mut ranges = Vec::with_capacity(self.ranges.len() + 1);
        let mut next = Some('\0');
        for &(lo, hi) in &self.ranges {
            if let Some(start) = next
                && start < lo
            {
                ranges.push((start, before(lo)));
            }
            next = after(hi);
        }
        if let Some(start) = next {
            ranges.push((start, char::MAX));
        }
        Self { ranges }
    }

    /// The ranges, sorted and disjoint.
    pub fn ranges(&self) -> &[(char, char)] {
        &self.ranges
    }

    /// Whether the set has no characters (such a class matches nothing).
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether `c` is in the set.
    pub fn contains(&self, c: char) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi)
    }
}

/// The character before `c`, skipping the surrogate gap (`c` > `'\0'`).
fn before(c: char) -> char {
    match c {
        '\u{E000}' => '\u{D7FF}',
        c => char::from_u32(u32::from(c) - 1).unwrap_or('\0'),
    }
}

/// The character after `c`, skipping the surrogate gap; `None` after `char::MAX`.
fn after(c: char) -> Option<char> {
    match c {
        '\u{D7FF}' => Some('\u{E000}'),
        char::MAX => None,
        c => char::from_u32(u32::from(c) + 1),
    }
}

/// A checked regular-expression terminal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Regex {
    /// The pattern (regex-syntax dialect); it parses and has no look-around
    /// other than a leading `^` and trailing `$`.
    pub pattern: String,
    /// Flag `i`: match letters in any case.
    pub case_insensitive: bool,
    /// Flag `s`: `.` matches a line feed too.
    pub dot_matches_new_line: bool,
    /// XGrammar's `json_string=true`: the match must also be a valid JSON
    /// string body (no control characters, `"` or `\` except as JSON escapes).
    pub json_string: bool,
}

/// Free text in which trigger strings hand over to sub-grammars.
#[derive(Clone, Debug, PartialEq)]
pub struct Dispatch {
    /// Trigger → what follows it. Triggers are non-empty and distinct.
    pub arms: Vec<DispatchArm>,
    /// After an arm completes: back to free text (`true`) or out (`false`).
    pub repeat: bool,
    /// Strings that end the dispatch (they are part of its text).
    pub stop: Vec<String>,
    /// Whether the dispatch may also end in free text without a stop string.
    pub stop_at_end: bool,
    /// Strings free text must not contain.
    pub exclude: Vec<String>,
}

/// One arm of a [`Dispatch`].
#[derive(Clone, Debug, PartialEq)]
pub struct DispatchArm {
    /// The trigger string.
    pub trigger: String,
    /// Where the trigger was written.
    pub span: Span,
    /// What must follow the trigger.
    pub body: Expr,
}

/// One token out of a set (`Token(…)`), or out of its complement (`ExcludeToken(…)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenSet {
    /// Token ids, sorted and distinct.
    pub ids: Vec<TokenId>,
    /// Whether the set is every token except `ids`.
    pub negated: bool,
}

/// Free tokens in which single trigger tokens hand over to sub-grammars.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenDispatch {
    /// Trigger token → what follows it. Triggers are distinct.
    pub arms: Vec<TokenDispatchArm>,
    /// After an arm completes: back to free tokens (`true`) or out (`false`).
    pub repeat: bool,
    /// Tokens that may not appear as free tokens.
    pub exclude: Vec<TokenId>,
}

/// One arm of a [`TokenDispatch`].
#[derive(Clone, Debug, PartialEq)]
pub struct TokenDispatchArm {
    /// The trigger token.
    pub trigger: TokenId,
    /// What must follow it.
    pub body: Expr,
}

#[cfg(test)]
mod tests {
    use super::CharSet;

    #[test]
    fn ranges_are_sorted_and_merged() {
        let set =
            CharSet::from_ranges([('d', 'f'), ('a', 'b'), ('c', 'c'), ('x', 'z'), ('y', 'y')]);
        assert_eq!(set.ranges(), &[('a', 'f'), ('x', 'z')]);
        assert!(set.contains('e') && !set.contains('g'));
    }

    #[test]
    fn complement_skips_the_surrogate_gap() {
        let all = CharSet::from_ranges([]).complement();
        assert_eq!(all.ranges(), &[('\0', char::MAX)]);
        let not_a = CharSet::from_ranges([('a', 'a')]).complement();
        assert_eq!(not_a.ranges(), &[('\0', '`'), ('b', char::MAX)]);
        let around_gap = CharSet::from_ranges([('\u{D7FF}', '\u{E000}')]).complement();
        assert_eq!(
            around_gap.ranges(),
            &[('\0', '\u{D7FE}'), ('\u{E001}', char::MAX)]
        );
        assert!(
            CharSet::from_ranges([('\0', char::MAX)])
                .complement()
                .is_empty()
        );
        assert_eq!(not_a.complement(), CharSet::from_ranges([('a', 'a')]));
    }
}
