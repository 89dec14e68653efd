//! The grammar IR: rules as expressions over bytes.
//!
//! This is where the language stops being text: every terminal is bytes.
//! String literals are their UTF-8 bytes, a character class is a choice of
//! UTF-8 byte-range sequences that matches exactly its characters' encodings
//! (`utf8.rs`), and regex terminals are expanded into the same expressions
//! (`regex.rs`). Rules keep the ids they had in the resolved tree.
//!
//! # Overview
//!
//! - [`lower`] turns a [`tree::Grammar`](crate::tree::Grammar) into a [`Grammar`].
//! - [`Expr`] is the expression language: bytes, byte classes, sequences,
//!   choices, counted repetition, rule references, and the builtins that are
//!   not text (tag dispatch, token-id sets).
//! - [`ByteSet`] is a set of byte values.
//! - [`reference`](mod@reference) is a slow, obviously correct recognizer for the IR: the
//!   oracle faster matchers are tested against.
//!
//! ```
//! use xg_compiler::{Request, ir, pipeline};
//!
//! let mut request = Request::ahead_of_time();
//! let file = request.add("g.xg", "root ::= [é-ê]");
//! let tree = pipeline::check(&mut request, file, "root").unwrap();
//! let grammar = ir::lower(&tree);
//! // é and ê are C3 A9 and C3 AA in UTF-8: one byte sequence.
//! assert_eq!(grammar.rule(grammar.root).body.to_string(), "[\\xC3] [\\xA9-\\xAA]");
//! ```

mod follow;
mod lower;
pub mod reference;
mod regex;
mod utf8;

use std::fmt;

use xg_runtime::{RuleId, TokenId};

pub(crate) use self::follow::Starts;
pub use self::lower::lower;
pub(crate) use self::utf8::char_set;

/// A grammar over bytes: rules indexed by [`RuleId`] and the entry rule.
#[derive(Clone, Debug, PartialEq, Eq)]
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The rule's qualified name (for people: inspection and messages).
    pub name: String,
    /// What the rule matches.
    pub body: Expr,
    /// Text that must follow every match of the rule, if asserted.
    pub lookahead: Option<Expr>,
    /// Never inlined (see [`crate::tree::Rule::keep`]).
    pub keep: bool,
    /// Its matches are reported (see [`crate::tree::Rule::capture`]).
    pub capture: Option<String>,
    /// How long one match may be (see [`crate::tree::Limit`]).
    pub limit: crate::tree::Limit,
}

/// An expression over bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    /// The empty string.
    Empty,
    /// These bytes, in order (never empty).
    Bytes(Vec<u8>),
    /// One byte from the set (an empty set matches nothing).
    Class(ByteSet),
    /// Each item in turn.
    Sequence(Vec<Expr>),
    /// Any one item; no items matches nothing.
    Choice(Vec<Expr>),
    /// `expr` between `min` and `max` times (`None`: no upper bound).
    Repeat {
        /// The repeated expression.
        expr: Box<Expr>,
        /// Least number of repetitions.
        min: u32,
        /// Most repetitions, if bounded.
        max: Option<u32>,
    },
    /// Another rule.
    Ref(RuleId),
    /// `min` to `max` consecutive matches of a rule, counted by the matcher
    /// rather than expanded into copies (made by repetition compression).
    RepeatRule {
        /// The repeated rule.
        rule: RuleId,
        /// Least number of repetitions.
        min: u32,
        /// Most repetitions, if bounded.
        max: Option<u32>,
    },
    /// Free text with tag dispatch.
    Dispatch(Dispatch),
    /// One token from a set of token ids, or from its complement.
    Tokens(TokenSet),
    /// Free tokens with dispatch on trigger tokens.
    TokenDispatch(TokenDispatch),
    /// Text that is none of some strings (a JSON object's other property
    /// names).
    Except(Except),
}

impl Expr {
    /// The expression that matches nothing at all.
    pub fn nothing() -> Expr {
        Expr::Choice(Vec::new())
    }
}

/// Free text in which trigger strings hand over to other expressions.
///
/// Free text is scanned for the patterns (triggers, stop strings, excluded
/// strings); at the first position where one ends (the longest, if several
/// end there), a trigger hands over to its arm, a stop string ends the
/// dispatch, and an excluded string is an error.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Dispatch {
    /// Trigger bytes → what follows the trigger.
    pub arms: Vec<(Vec<u8>, Expr)>,
    /// After an arm: back to free text (`true`) or end (`false`).
    pub repeat: bool,
    /// Strings that end the dispatch (included in its text).
    pub stop: Vec<Vec<u8>>,
    /// Whether the dispatch may also end anywhere in free text.
    pub stop_at_end: bool,
    /// Strings free text must not contain.
    pub exclude: Vec<Vec<u8>>,
}

/// Text made of units — one byte of `plain`, or one match of `other` —
/// that is none of the `excluded` strings (made of `plain` bytes
/// only). A JSON object that allows properties besides its declared ones
/// takes any other name: a string body that is none of the declared names.
///
/// Kept whole to the automaton stage, which builds it as the trie of the
/// excluded strings — each node left by every plain byte that no excluded
/// string goes on with, and by `other`, into a loop over units — without
/// the choices that spell out the trie. `other` (usually a reference) is
/// not inlined into; when it cannot begin with a plain byte, the trie is
/// deterministic as built.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Except {
    /// The excluded strings, sorted and distinct.
    pub excluded: Vec<Vec<u8>>,
    /// The bytes that are units on their own.
    pub plain: ByteSet,
    /// The other units.
    pub other: Box<Expr>,
}

impl Except {
    /// The same language as plain expressions: the trie of the excluded
    /// strings as nested choices, as deep as the longest string (built
    /// without recursion). For oracles and inspection.
    pub fn spelled_out(&self) -> Expr {
        let unit = Expr::Choice(vec![Expr::Class(self.plain), (*self.other).clone()]);
        let rest = Expr::Repeat {
            expr: Box::new(unit),
            min: 0,
            max: None,
        };
        let mut open = vec![TrieNode::new(&self.excluded, 0, self.plain)];
        loop {
            let top = open.last_mut().expect("the root is open until the end");
            if let Some(first) = top.below.first() {
                let byte = first[top.depth];
                let run = top
                    .below
                    .iter()
                    .take_while(|s| s[top.depth] == byte)
                    .count();
                let (strings, others) = top.below.split_at(run);
                top.below = others;
                top.leave = top.leave.without(byte);
                top.byte = byte;
                let depth = top.depth + 1;
                open.push(TrieNode::new(strings, depth, self.plain));
                continue;
            }
            let mut node = open.pop().expect("the top node");
            node.ways
                .push(Expr::Sequence(vec![Expr::Class(node.leave), rest.clone()]));
            node.ways
                .push(Expr::Sequence(vec![(*self.other).clone(), rest.clone()]));
            let choice = Expr::Choice(node.ways);
            match open.last_mut() {
                Some(parent) => parent
                    .ways
                    .push(Expr::Sequence(vec![Expr::Bytes(vec![parent.byte]), choice])),
                None => return choice,
            }
        }
    }
}

/// A node of [`Except::spelled_out`]'s trie while its choice is built.
struct TrieNode<'s> {
    depth: usize,
    /// The strings below it not yet turned into ways.
    below: &'s [Vec<u8>],
    /// Ending here (if no string does), then one way per next byte done.
    ways: Vec<Expr>,
    /// The plain bytes no string goes on with here.
    leave: ByteSet,
    /// The next byte of the child being built.
    byte: u8,
}

impl<'s> TrieNode<'s> {
    fn new(strings: &'s [Vec<u8>], depth: usize, plain: ByteSet) -> Self {
        let ends_here = strings.iter().take_while(|s| s.len() == depth).count();
        Self {
            depth,
            below: &strings[ends_here..],
            ways: if ends_here == 0 {
                vec![Expr::Empty]
            } else {
                Vec::new()
            },
            leave: plain,
            byte: 0,
        }
    }
}

/// One token whose id is in `ids` (or, if `negated`, is not).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TokenSet {
    /// Sorted, distinct token ids.
    pub ids: Vec<TokenId>,
    /// Whether the set is the complement of `ids`.
    pub negated: bool,
}

/// Free tokens in which trigger tokens hand over to other expressions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TokenDispatch {
    /// Trigger token → what follows it.
    pub arms: Vec<(TokenId, Expr)>,
    /// After an arm: back to free tokens (`true`) or end (`false`).
    pub repeat: bool,
    /// Tokens that may not appear as free tokens.
    pub exclude: Vec<TokenId>,
}

/// A set of bytes, as a 256-bit bitmap.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ByteSet([u64; 4]);

impl ByteSet {
    /// The empty set.
    pub const fn empty() -> Self {
        Self([0; 4])
    }

    /// Every byte.
    pub const fn full() -> Self {
        Self([u64::MAX; 4])
    }

    /// The set of bytes `lo..=hi`.
    pub fn range(lo: u8, hi: u8) -> Self {
        let mut set = Self::empty();
        set.insert_range(lo, hi);
        set
    }

    /// Adds the bytes `lo..=hi`.
    pub fn insert_range(&mut self, lo: u8, hi: u8) {
        for byte in lo..=hi {
            self.insert(byte);
        }
    }

    /// The set as four words of 64 bits, lowest bytes first.
    pub(crate) const fn words(&self) -> [u64; 4] {
        self.0
    }

    /// Adds one byte.
    pub fn insert(&mut self, byte: u8) {
        self.0[usize::from(byte >> 6)] |= 1 << (byte & 63);
    }

    /// The set without `byte`.
    #[must_use]
    pub fn without(mut self, byte: u8) -> Self {
        self.0[usize::from(byte >> 6)] &= !(1 << (byte & 63));
        self
    }

    /// Whether `byte` is in the set.
    pub const fn contains(&self, byte: u8) -> bool {
        self.0[(byte >> 6) as usize] & (1 << (byte & 63)) != 0
    }

    /// Whether the set has no bytes.
    pub fn is_empty(&self) -> bool {
        self.0 == [0; 4]
    }

    /// The bytes of both sets.
    #[must_use]
    pub fn union(&self, other: &ByteSet) -> ByteSet {
        let mut out = *self;
        for (word, other) in out.0.iter_mut().zip(other.0) {
            *word |= other;
        }
        out
    }

    /// The set as maximal inclusive ranges, in order.
    pub fn ranges(&self) -> Vec<(u8, u8)> {
        let mut ranges = Vec::new();
        let mut at = 0;
        while let Some(lo) = self.next_from(at, true) {
            let end = self.next_from(lo, false).unwrap_or(256);
            ranges.push((byte(lo), byte(end - 1)));
            at = end;
        }
        ranges
    }

    /// The first byte at or after `at` that is in the set (`member`) or
    /// not in it (`!member`), a word at a time.
    fn next_from(&self, at: u32, member: bool) -> Option<u32> {
        if at >= 256 {
            return None;
        }
        let word_of = |index: usize| {
            if member {
                self.0[index]
            } else {
                !self.0[index]
            }
        };
        let mut index = usize::try_from(at / 64).ok()?;
        let mut bits = word_of(index) & (!0u64 << (at % 64));
        loop {
            if bits != 0 {
                return Some(u32::try_from(index).ok()? * 64 + bits.trailing_zeros());
            }
            index += 1;
            if index == 4 {
                return None;
            }
            bits = word_of(index);
        }
    }
}

/// A byte from a position below 256.
fn byte(position: u32) -> u8 {
    u8::try_from(position).expect("a byte position")
}

impl fmt::Debug for ByteSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Display for ByteSet {
    /// `[a-z\xC3]`, bytes outside printable ASCII as `\xHH`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (lo, hi) in self.ranges() {
            write_byte(f, lo)?;
            if hi != lo {
                f.write_str("-")?;
                write_byte(f, hi)?;
            }
        }
        f.write_str("]")
    }
}

fn write_byte(f: &mut fmt::Formatter<'_>, byte: u8) -> fmt::Result {
    if byte.is_ascii_alphanumeric() {
        write!(f, "{}", char::from(byte))
    } else {
        write!(f, "\\x{byte:02X}")
    }
}

impl fmt::Display for Expr {
    /// A compact `.xg`-like rendering, for inspection and tests.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, items: &[Expr], separator: &str| {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(separator)?;
                }
                match item {
                    Expr::Sequence(_) | Expr::Choice(_) => write!(f, "({item})")?,
                    _ => write!(f, "{item}")?,
                }
            }
            Ok(())
        };
        match self {
            Expr::Empty => f.write_str("\"\""),
            Expr::Bytes(bytes) => write!(f, "\"{}\"", bytes.escape_ascii()),
            Expr::Class(set) => write!(f, "{set}"),
            Expr::Sequence(items) => list(f, items, " "),
            Expr::Choice(items) if items.is_empty() => f.write_str("[]"),
            Expr::Choice(items) => list(f, items, " | "),
            Expr::Repeat { expr, min, max } => {
                match expr.as_ref() {
                    Expr::Sequence(_) | Expr::Choice(_) | Expr::Repeat { .. } => {
                        write!(f, "({expr})")?;
                    }
                    _ => write!(f, "{expr}")?,
                }
                match max {
                    Some(max) => write!(f, "{{{min},{max}}}"),
                    None => write!(f, "{{{min},}}"),
                }
            }
            Expr::Ref(id) => write!(f, "<{id}>"),
            Expr::RepeatRule { rule, min, max } => match max {
                Some(max) => write!(f, "<{rule}>#{{{min},{max}}}"),
                None => write!(f, "<{rule}>#{{{min},}}"),
            },
            Expr::Dispatch(dispatch) => write!(f, "dispatch({} arms)", dispatch.arms.len()),
            Expr::Tokens(set) => {
                let ids: Vec<String> = set.ids.iter().map(ToString::to_string).collect();
                let name = if set.negated { "ExcludeToken" } else { "Token" };
                write!(f, "{name}({})", ids.join(", "))
            }
            Expr::TokenDispatch(dispatch) => {
                write!(f, "TokenTagDispatch({} arms)", dispatch.arms.len())
            }
            Expr::Except(except) => write!(
                f,
                "except({} strings, {} | {})",
                except.excluded.len(),
                except.plain,
                except.other
            ),
        }
    }
}
