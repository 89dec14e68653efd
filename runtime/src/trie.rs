//! The token trie: the bytes of every token that can match text (text
//! tokens that are not stop tokens) in one prefix tree, laid out in
//! depth-first order so a walk is a loop over an array.
//!
//! A walk pushes a node's byte into the matcher and goes on to the next node
//! (its first child); when the matcher refuses the byte it jumps to the
//! node's `end`, skipping the whole subtree — every token with that prefix —
//! at once. Shared prefixes are matched once.
//!
//! Tokens are numbered by *rank*, their place in depth-first order (which
//! is the order of their bytes): a subtree's tokens are one range of ranks,
//! and the mask cache stores uncertain tokens as such ranges.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rustc_hash::FxHashMap;

use crate::TokenId;
use crate::tails::{RunTails, Tails};

/// A vocabulary's text tokens as a prefix tree in depth-first order.
#[derive(Clone, Debug)]
pub(crate) struct TokenTrie {
    /// Per node: the byte on the edge into it.
    bytes: Vec<u8>,
    /// Per node: its depth (1 for children of the root).
    depths: Vec<u32>,
    /// Per node: one past the last node of its subtree.
    ends: Vec<u32>,
    /// Per node: where its tokens start in `tokens` (`tokens_start[n + 1]`
    /// ends them).
    tokens_start: Vec<u32>,
    /// The tokens whose bytes end at each node, node after node.
    tokens: Vec<TokenId>,
    /// Text tokens with no bytes at all.
    empty: Vec<TokenId>,
    /// Every token in the trie, as a bitset in mask layout.
    universe: Vec<u32>,
    /// The length of the longest token, in bytes.
    max_depth: usize,
    /// Per node: what the bytes below it are, in its subtree (see
    /// [`TokenTrie::classes_below`]).
    classes_below: Vec<u64>,
    /// Per node: the most bytes a token goes on below it.
    heights: Vec<u32>,
    /// Per number of bytes `n` up to the longest token: how many nodes
    /// lie on the path of a token of `n` bytes or more.
    nodes_reaching: Vec<u32>,
    /// Per node: where its bytes stand in UTF-8 ([`Utf8::Boundary`] too
    /// where they break it: such a node's subtree is never taken at once,
    /// see [`MALFORMED`]).
    utf8: Vec<Utf8>,
    /// Per node: whether every token of its subtree is plain text (see
    /// [`TokenTrie::plain_within`]).
    pure: Vec<bool>,
    /// Per node: whether its path is whole UTF-8 characters (see
    /// [`TokenTrie::whole`]).
    whole: Vec<bool>,
    /// Where plain text stops in each token, made on first use.
    tails: OnceLock<Box<Tails>>,
    /// Per rank: the characters of the token if it is plain text, else 0.
    plain_chars: Vec<u8>,
    /// The ranks of the tokens `plain_chars` counts 0, ascending.
    not_plain: Vec<u32>,
    /// Per number of characters `n` up to the longest plain token: the
    /// plain tokens of at most `n` characters, made on first use.
    plain_within: Vec<OnceLock<Box<[u32]>>>,
    /// The plain tokens, fewest characters first, and per number of
    /// characters `n` how many have at most `n`: what the bitsets of
    /// `plain_within` are made from.
    plain_by_chars: (Vec<TokenId>, Vec<usize>),
    /// Per power of two `2^i` up to 1024: the tokens of at most that many
    /// bytes, as a bitset in mask layout, made on first use.
    up_to_length: [OnceLock<Box<[u32]>>; 11],
    /// Per node: the byte classes of its path, [`MALFORMED`] for a byte
    /// that is not ASCII (see [`TokenTrie::of_classes`]).
    path_classes: Vec<u64>,
    /// Per set of ASCII byte classes and number of bytes `n`: its tokens
    /// of at most `n` bytes (see [`TokenTrie::class_within`]).
    class_within: ClassWithin,
}

/// What [`TokenTrie::class_within`] made so far: per set of classes, its
/// tokens by length (ids, shortest first, and where each length ends);
/// per set and length, the bitset. A clone of the trie starts without
/// them.
#[derive(Debug, Default)]
struct ClassWithin(Mutex<ClassTokens>);

#[derive(Debug, Default)]
struct ClassTokens {
    /// Per set of classes: its tokens, shortest first, and where those
    /// longer than each length begin.
    by_length: FxHashMap<u64, (Vec<TokenId>, Vec<usize>)>,
    /// Per set of classes and number of bytes: the bitset.
    within: FxHashMap<(u64, usize), Arc<[u32]>>,
    /// Per set of classes: where its runs stop in tokens (see
    /// [`TokenTrie::run_tails`]).
    runs: FxHashMap<u64, Arc<RunTails>>,
}

/// The most bitsets [`TokenTrie::class_within`] keeps (16 KiB each for
/// Llama 3.1) before it starts over.
const MAX_CLASS_BITSETS: usize = 256;

/// The most sets of classes whose tokens [`TokenTrie::class_within`] keeps
/// sorted by length before it starts over.
const MAX_CLASS_SETS: usize = 32;

impl Clone for ClassWithin {
    fn clone(&self) -> Self {
        Self::default()
    }
}

/// The number of byte classes.
const CLASSES: u8 = 46;

/// A coarse partition of the bytes, for telling at once that every byte
/// below a trie node keeps a matcher where it is (see
/// [`TokenTrie::classes_below`]): the bytes grammars single out — JSON's
/// quote, backslash and control characters, each ASCII punctuation mark,
/// white space, the kinds of UTF-8 byte — have classes of their own;
/// digits, lower-case and upper-case letters one each.
pub(crate) const fn byte_class(byte: u8) -> u8 {
    match byte {
        b'\t' => 1,
        b'\n' => 2,
        b'\r' => 3,
        0x00..=0x1F => 0,
        b' ' => 4,
        b'0'..=b'9' => 5,
        b'a'..=b'z' => 6,
        b'A'..=b'Z' => 7,
        // The 32 punctuation marks, in order from `!` (8) to `~` (39).
        0x21..=0x2F => byte - 0x21 + 8,
        0x3A..=0x40 => byte - 0x3A + 23,
        0x5B..=0x60 => byte - 0x5B + 30,
        0x7B..=0x7E => byte - 0x7B + 36,
        0x7F => 40,
        0x80..=0xBF => 41,
        0xC2..=0xDF => 42,
        0xE0..=0xEF => 43,
        0xF0..=0xF4 => 44,
        // 0xC0, 0xC1 and 0xF5..=0xFF never occur in UTF-8.
        _ => 45,
    }
}

/// The bit of [`TokenTrie::classes_below`] for non-ASCII characters:
/// whole UTF-8 sequences, or one cut short by the end of a token, starting
/// where a character may start. Which bytes they are depends on the bytes
/// before them, so no byte class can stand for them.
pub(crate) const TEXT_CHARS: u8 = CLASSES;

/// The bit of [`TokenTrie::classes_below`] for bytes that break UTF-8 (or
/// follow a break); never taken at once.
pub(crate) const MALFORMED: u8 = CLASSES + 1;

/// Whether `byte` is plain text: printable ASCII but JSON's quote and
/// backslash (what a JSON string takes as it is).
pub(crate) const fn is_plain(byte: u8) -> bool {
    matches!(byte, 0x20..=0x7E) && byte != b'"' && byte != b'\\'
}

/// The byte classes of plain text (see [`is_plain`]; each class holds
/// only plain bytes or none) and [`TEXT_CHARS`]: a token is *plain* if its
/// bytes are whole characters of these. The inside of a JSON string of
/// bounded length counts them down, whatever they are, which
/// [`TokenTrie::plain_within`] serves at once.
pub(crate) const PLAIN_CLASSES: u64 = {
    let mut classes = 1 << TEXT_CHARS;
    let mut byte = 0u8;
    while byte < 0x80 {
        if is_plain(byte) {
            classes |= 1 << byte_class(byte);
        }
        byte += 1;
    }
    classes
};

/// The most characters a plain token has: longer ones are rare (a few
/// hundred of Llama 3.1's, runs of one punctuation mark) and walked like
/// other tokens, so that no chain of counts a walk follows to sort plain
/// tokens (see [`PLAIN_CLASSES`]) is longer.
const PLAIN_LONGEST: u32 = 32;

/// Where a byte string stands in UTF-8 (RFC 3629: no overlong forms, no
/// surrogates, nothing past U+10FFFF).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Utf8 {
    /// Between characters.
    Boundary,
    /// Inside a character: `remaining` continuation bytes to go, the next
    /// one in `lo..=hi`.
    Inside { remaining: u8, lo: u8, hi: u8 },
}

impl Utf8 {
    /// The state after `byte`; `None` if it breaks UTF-8.
    pub(crate) fn advance(self, byte: u8) -> Option<Utf8> {
        let inside = |remaining, lo, hi| Some(Utf8::Inside { remaining, lo, hi });
        match self {
            Utf8::Boundary => match byte {
                0x00..=0x7F => Some(Utf8::Boundary),
                0xC2..=0xDF => inside(1, 0x80, 0xBF),
                0xE0 => inside(2, 0xA0, 0xBF),
                0xED => inside(2, 0x80, 0x9F),
                0xE1..=0xEF => inside(2, 0x80, 0xBF),
                0xF0 => inside(3, 0x90, 0xBF),
                0xF4 => inside(3, 0x80, 0x8F),
                0xF1..=0xF3 => inside(3, 0x80, 0xBF),
                _ => None,
            },
            Utf8::Inside { remaining, lo, hi } if (lo..=hi).contains(&byte) => {
                if remaining == 1 {
                    Some(Utf8::Boundary)
                } else {
                    inside(remaining - 1, 0x80, 0xBF)
                }
            }
            Utf8::Inside { .. } => None,
        }
    }

    /// Inside a character, which of the [`Utf8::INSIDE`] states this is:
    /// how many bytes remain and which may come next.
    pub(crate) fn inside_index(self) -> Option<usize> {
        match self {
            Utf8::Boundary => None,
            inside @ Utf8::Inside { .. } => Self::INSIDE.iter().position(|&state| state == inside),
        }
    }

    /// Every state inside a character that [`Utf8::advance`] leads to.
    pub(crate) const INSIDE: [Utf8; 7] = [
        Utf8::Inside {
            remaining: 1,
            lo: 0x80,
            hi: 0xBF,
        },
        Utf8::Inside {
            remaining: 2,
            lo: 0x80,
            hi: 0xBF,
        },
        Utf8::Inside {
            remaining: 2,
            lo: 0xA0,
            hi: 0xBF,
        },
        Utf8::Inside {
            remaining: 2,
            lo: 0x80,
            hi: 0x9F,
        },
        Utf8::Inside {
            remaining: 3,
            lo: 0x80,
            hi: 0xBF,
        },
        Utf8::Inside {
            remaining: 3,
            lo: 0x90,
            hi: 0xBF,
        },
        Utf8::Inside {
            remaining: 3,
            lo: 0x80,
            hi: 0x8F,
        },
    ];

    /// The bytes that go on a non-ASCII character from here: lead bytes
    /// between characters, else the continuation bytes allowed next.
    pub(crate) fn next_bytes(self) -> std::ops::RangeInclusive<u8> {
        match self {
            Utf8::Boundary => 0xC2..=0xF4,
            Utf8::Inside { lo, hi, .. } => lo..=hi,
        }
    }
}

/// The bytes of class `class`.
pub(crate) fn class_bytes(class: u8) -> impl Iterator<Item = u8> {
    let (bytes, starts) = &BY_CLASS;
    let class = usize::from(class);
    bytes[usize::from(starts[class])..usize::from(starts[class + 1])]
        .iter()
        .copied()
}

/// The bytes sorted by class, and where each class starts among them
/// (computed once, at compile time: a walk asks for a class's bytes for
/// each configuration it checks a subtree in).
const BY_CLASS: ([u8; 256], [u16; CLASSES as usize + 1]) = {
    let mut starts = [0u16; CLASSES as usize + 1];
    let mut byte = 0u8;
    loop {
        starts[byte_class(byte) as usize + 1] += 1;
        if byte == u8::MAX {
            break;
        }
        byte += 1;
    }
    let mut class = 0;
    while class < CLASSES as usize {
        starts[class + 1] += starts[class];
        class += 1;
    }
    let mut bytes = [0u8; 256];
    let mut next = starts;
    byte = 0;
    loop {
        let class = byte_class(byte) as usize;
        bytes[next[class] as usize] = byte;
        next[class] += 1;
        if byte == u8::MAX {
            break;
        }
        byte += 1;
    }
    (bytes, starts)
};

impl TokenTrie {
    /// The trie of `tokens` (the text tokens of a vocabulary, each with
    /// its bytes) for masks of `mask_words` 32-bit words.
    pub(crate) fn new<'a>(
        tokens: impl Iterator<Item = (TokenId, &'a [u8])>,
        mask_words: usize,
    ) -> Self {
        let mut tokens: Vec<(TokenId, &[u8])> = tokens.collect();
        tokens.sort_by(|a, b| a.1.cmp(b.1));
        let mut trie = Self {
            bytes: Vec::new(),
            depths: Vec::new(),
            ends: Vec::new(),
            tokens_start: vec![0],
            tokens: Vec::new(),
            empty: Vec::new(),
            universe: vec![0; mask_words],
            max_depth: 0,
            classes_below: Vec::new(),
            heights: Vec::new(),
            nodes_reaching: Vec::new(),
            utf8: Vec::new(),
            pure: Vec::new(),
            whole: Vec::new(),
            tails: OnceLock::new(),
            plain_chars: Vec::new(),
            not_plain: Vec::new(),
            plain_within: Vec::new(),
            plain_by_chars: (Vec::new(), Vec::new()),
            up_to_length: Default::default(),
            path_classes: Vec::new(),
            class_within: ClassWithin::default(),
        };
        // The path from the root to the last node added.
        let mut path: Vec<u8> = Vec::new();
        for (id, bytes) in tokens {
            if bytes.is_empty() {
                trie.empty.push(id);
                continue;
            }
            let shared = path.iter().zip(bytes).take_while(|(a, b)| a == b).count();
            if shared == bytes.len() && shared == path.len() {
                // Same bytes as the previous token: same node.
                trie.tokens.push(id);
                *trie.tokens_start.last_mut().expect("starts with 0") += 1;
                continue;
            }
            path.truncate(shared);
            for &byte in &bytes[shared..] {
                path.push(byte);
                trie.bytes.push(byte);
                trie.depths
                    .push(u32::try_from(path.len()).expect("token length fits in u32"));
                let start = *trie.tokens_start.last().expect("starts with 0");
                trie.tokens_start.push(start);
            }
            trie.tokens.push(id);
            *trie.tokens_start.last_mut().expect("starts with 0") += 1;
        }
        trie.max_depth = trie.depths.iter().max().map_or(0, |&d| d as usize);
        for id in &trie.tokens {
            trie.universe[id.as_usize() / 32] |= 1 << (id.as_usize() % 32);
        }
        // A node's subtree ends at the next node no deeper than it.
        let count = trie.bytes.len();
        trie.ends = vec![u32::try_from(count).expect("trie fits in u32"); count];
        let mut open: Vec<usize> = Vec::new();
        for node in 0..count {
            while let Some(&top) = open.last() {
                if trie.depths[top] < trie.depths[node] {
                    break;
                }
                trie.ends[top] = u32::try_from(node).expect("trie fits in u32");
                open.pop();
            }
            open.push(node);
        }
        let utf8 = trie.utf8_states();
        trie.classes_below = trie.classes(&utf8);
        trie.find_plain(&utf8);
        trie.whole = utf8
            .iter()
            .map(|&state| state == Some(Utf8::Boundary))
            .collect();
        trie.utf8 = utf8
            .into_iter()
            .map(|state| state.unwrap_or(Utf8::Boundary))
            .collect();
        // In reverse depth-first order a node's children come before it.
        trie.heights = vec![0; count];
        for node in (0..count).rev() {
            let end = trie.ends[node] as usize;
            let mut child = node + 1;
            while child < end {
                trie.heights[node] = trie.heights[node].max(trie.heights[child] + 1);
                child = trie.ends[child] as usize;
            }
        }
        trie.nodes_reaching = vec![0; trie.max_depth + 1];
        for (&depth, &height) in trie.depths.iter().zip(&trie.heights) {
            trie.nodes_reaching[(depth + height) as usize] += 1;
        }
        for bytes in (0..trie.max_depth).rev() {
            trie.nodes_reaching[bytes] += trie.nodes_reaching[bytes + 1];
        }
        trie
    }

    /// Per node: where its path stands in UTF-8 (`None`: broken).
    fn utf8_states(&self) -> Vec<Option<Utf8>> {
        let count = self.bytes.len();
        let mut utf8: Vec<Option<Utf8>> = Vec::with_capacity(count);
        let mut open: Vec<usize> = Vec::new();
        for node in 0..count {
            open.truncate(self.depths[node] as usize - 1);
            let above = open
                .last()
                .map_or(Some(Utf8::Boundary), |&parent| utf8[parent]);
            utf8.push(above.and_then(|state| state.advance(self.bytes[node])));
            open.push(node);
        }
        utf8
    }

    /// [`TokenTrie::classes_below`] of every node, given where each stands
    /// in UTF-8.
    fn classes(&self, utf8: &[Option<Utf8>]) -> Vec<u64> {
        let count = self.bytes.len();
        // In reverse depth-first order a node's children come before it.
        let mut classes = vec![0u64; count];
        for node in (0..count).rev() {
            let end = self.ends[node] as usize;
            let mut child = node + 1;
            while child < end {
                let byte = self.bytes[child];
                let kind = match (utf8[node], utf8[child]) {
                    (Some(Utf8::Boundary), Some(_)) if byte.is_ascii() => byte_class(byte),
                    (Some(_), Some(_)) => TEXT_CHARS,
                    _ => MALFORMED,
                };
                classes[node] |= classes[child] | 1 << kind;
                child = self.ends[child] as usize;
            }
        }
        classes
    }

    /// Finds the plain tokens ([`PLAIN_CLASSES`]) and the subtrees that
    /// hold nothing else, given where each node stands in UTF-8.
    fn find_plain(&mut self, utf8: &[Option<Utf8>]) {
        let count = self.bytes.len();
        // Per node: the characters of its path if they are all plain
        // (the last one may be unfinished).
        let mut chars: Vec<Option<u32>> = Vec::with_capacity(count);
        self.path_classes = Vec::with_capacity(count);
        let mut open: Vec<usize> = Vec::new();
        for node in 0..count {
            open.truncate(self.depths[node] as usize - 1);
            let byte = self.bytes[node];
            let class = if byte.is_ascii() {
                byte_class(byte)
            } else {
                MALFORMED
            };
            let above = open.last().map_or(0, |&parent| self.path_classes[parent]);
            self.path_classes.push(above | 1 << class);
            let (above, state) = open.last().map_or((Some(0), Utf8::Boundary), |&parent| {
                (chars[parent], utf8[parent].unwrap_or(Utf8::Boundary))
            });
            let byte = self.bytes[node];
            let plain_byte = !byte.is_ascii() || (state == Utf8::Boundary && is_plain(byte));
            chars.push(match utf8[node] {
                Some(Utf8::Boundary) if plain_byte => above.map(|n| n + 1),
                Some(Utf8::Inside { .. }) if plain_byte => above,
                _ => None,
            });
            open.push(node);
        }
        self.plain_chars = vec![0; self.tokens.len()];
        self.pure = vec![true; count];
        let mut longest = 0;
        // In reverse depth-first order a node's children come before it.
        for node in (0..count).rev() {
            let own = match chars[node].filter(|_| utf8[node] == Some(Utf8::Boundary)) {
                Some(n) if n <= PLAIN_LONGEST => u8::try_from(n).expect("at most 32"),
                _ => 0,
            };
            let (first, past) = self.own_ranks(node);
            self.plain_chars[first as usize..past as usize].fill(own);
            let has_own = first < past;
            if has_own {
                longest = longest.max(own);
            }
            let end = self.ends[node] as usize;
            let mut child = node + 1;
            let mut pure = !has_own || own > 0;
            while pure && child < end {
                pure = self.pure[child];
                child = self.ends[child] as usize;
            }
            self.pure[node] = pure;
        }
        self.plain_within = (0..=usize::from(longest))
            .map(|_| OnceLock::new())
            .collect();
        let plain = (self.tokens.iter().zip(&self.plain_chars))
            .filter(|&(_, &chars)| chars > 0)
            .map(|(&id, &chars)| (usize::from(chars), id));
        self.plain_by_chars = by_length(plain, usize::from(longest));
        self.not_plain = (0..self.tokens.len())
            .filter(|&rank| self.plain_chars[rank] == 0)
            .map(|rank| u32::try_from(rank).expect("ranks fit in u32"))
            .collect();
    }

    /// The ranks of the tokens that are not plain (see
    /// [`TokenTrie::plain_within`]), ascending.
    pub(crate) fn not_plain(&self) -> &[u32] {
        &self.not_plain
    }

    /// The plain tokens — whole characters of [`PLAIN_CLASSES`], at most
    /// [`PLAIN_LONGEST`] — of at most `chars` characters (any number past
    /// the longest), as a bitset in mask layout.
    pub(crate) fn plain_within(&self, chars: usize) -> &[u32] {
        let chars = chars.min(self.longest_plain());
        self.plain_within[chars].get_or_init(|| {
            let made = |n: usize| Some((n, &**self.plain_within.get(n)?.get()?));
            let (ids, ends) = &self.plain_by_chars;
            prefix_bits(ids, ends, chars, nearest(chars, made), self.universe.len())
        })
    }

    /// The text tokens of at most `length` bytes (a power of two up to
    /// 1024), as a bitset in mask layout.
    pub(crate) fn up_to_length(&self, length: usize) -> &[u32] {
        debug_assert!(length.is_power_of_two() && length <= 1024);
        let index = (length.trailing_zeros() as usize).min(self.up_to_length.len() - 1);
        self.up_to_length[index].get_or_init(|| {
            let mut bits = vec![0u32; self.universe.len()];
            let mut set = |id: TokenId| bits[id.as_usize() / 32] |= 1 << (id.as_usize() % 32);
            self.empty.iter().copied().for_each(&mut set);
            for node in 0..self.len() {
                if self.depth(node) <= length {
                    self.tokens(node).iter().copied().for_each(&mut set);
                }
            }
            bits.into()
        })
    }

    /// Whether `node`'s path and every token below it are made only of
    /// bytes of the ASCII byte classes `classes` (bits of [`byte_class`]).
    pub(crate) fn of_classes(&self, node: usize, classes: u64) -> bool {
        (self.path_classes[node] | self.classes_below[node]) & !classes == 0
    }

    /// The tokens made only of bytes of the ASCII byte classes `classes`,
    /// of at most `bytes` bytes, as a bitset in mask layout: what a
    /// counted repetition of a character class (`[A-Za-z0-9 .-]{1,32}`)
    /// sorts by length alone, as [`TokenTrie::plain_within`] does for the
    /// characters of a JSON string. Made on first use per set and length.
    pub(crate) fn class_within(&self, classes: u64, bytes: usize) -> Arc<[u32]> {
        let bytes = bytes.min(self.max_depth);
        let mut made = (self.class_within.0.lock()).unwrap_or_else(PoisonError::into_inner);
        let ClassTokens {
            by_length, within, ..
        } = &mut *made;
        // Bounded: a server meets class after class (a few MiB at most).
        if within.len() >= MAX_CLASS_BITSETS {
            within.clear();
        }
        if by_length.len() >= MAX_CLASS_SETS {
            by_length.clear();
        }
        if let Some(bits) = within.get(&(classes, bytes)) {
            return Arc::clone(bits);
        }
        let (ids, ends) = by_length
            .entry(classes)
            .or_insert_with(|| self.tokens_by_length(classes));
        let made = |n: usize| Some((n, &**within.get(&(classes, n))?));
        let bits: Arc<[u32]> =
            prefix_bits(ids, ends, bytes, nearest(bytes, made), self.universe.len()).into();
        within.insert((classes, bytes), Arc::clone(&bits));
        bits
    }

    /// Where the run of bytes of the ASCII byte classes `classes` stops in
    /// each token that begins with one ([`RunTails`]), made on first use
    /// per set.
    pub(crate) fn run_tails(&self, classes: u64) -> Arc<RunTails> {
        let mut made = (self.class_within.0.lock()).unwrap_or_else(PoisonError::into_inner);
        if made.runs.len() >= MAX_CLASS_SETS {
            made.runs.clear();
        }
        let runs = made
            .runs
            .entry(classes)
            .or_insert_with(|| Arc::new(RunTails::new(self, classes)));
        Arc::clone(runs)
    }

    /// The tokens made only of bytes of the ASCII byte classes `classes`,
    /// shortest first, and per number of bytes `n` (up to the longest
    /// token) where those of more than `n` begin: one pass over the
    /// subtrees of such paths.
    fn tokens_by_length(&self, classes: u64) -> (Vec<TokenId>, Vec<usize>) {
        let mut found: Vec<(usize, TokenId)> = Vec::new();
        let mut node = 0;
        while node < self.len() {
            if self.path_classes[node] & !classes != 0 {
                node = self.end(node);
                continue;
            }
            let depth = self.depth(node);
            found.extend(self.tokens(node).iter().map(|&id| (depth, id)));
            node += 1;
        }
        by_length(found.into_iter(), self.max_depth)
    }

    /// The characters of the token of rank `rank` if
    /// [`TokenTrie::plain_within`] counts it as plain text, else 0.
    pub(crate) fn plain_chars(&self, rank: u32) -> u8 {
        self.plain_chars[rank as usize]
    }

    /// The characters of the longest plain token.
    pub(crate) fn longest_plain(&self) -> usize {
        self.plain_within.len().saturating_sub(1)
    }

    /// Whether every token of `node`'s subtree is plain (see
    /// [`TokenTrie::plain_within`]).
    pub(crate) fn pure(&self, node: usize) -> bool {
        self.pure[node]
    }

    /// The number of nodes.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    pub(crate) fn byte(&self, node: usize) -> u8 {
        self.bytes[node]
    }

    pub(crate) fn depth(&self, node: usize) -> usize {
        self.depths[node] as usize
    }

    pub(crate) fn end(&self, node: usize) -> usize {
        self.ends[node] as usize
    }

    /// The nodes along `bytes` from the root, one per byte, for as long as
    /// some token goes on with them.
    fn path(&self, bytes: &[u8]) -> Vec<usize> {
        // The children of a node are the nodes one deeper in its subtree,
        // each subtree skipped whole.
        let mut path = Vec::new();
        let (mut first, mut past) = (0, self.len());
        for &byte in bytes {
            let mut child = first;
            while child < past && self.bytes[child] != byte {
                child = self.end(child);
            }
            if child >= past {
                break;
            }
            path.push(child);
            (first, past) = (child + 1, self.end(child));
        }
        path
    }

    /// The fewest tokens that spell `bytes` exactly (`None` if none do), and
    /// the fewest whose text starts with `bytes` (the last token may run
    /// past them): a shortest path over the places in `bytes`.
    pub(crate) fn fewest_tokens(&self, bytes: &[u8]) -> (Option<usize>, usize) {
        let mut fewest = vec![usize::MAX; bytes.len() + 1];
        fewest[0] = 0;
        let mut covered = usize::MAX;
        for start in 0..bytes.len() {
            if fewest[start] == usize::MAX {
                continue;
            }
            let next = fewest[start] + 1;
            let path = self.path(&bytes[start..]);
            for (depth, &node) in path.iter().enumerate() {
                if !self.tokens(node).is_empty() {
                    let end = start + depth + 1;
                    fewest[end] = fewest[end].min(next);
                }
            }
            if let Some(&last) = path.last()
                && start + path.len() == bytes.len()
                && last + 1 < self.end(last)
            {
                covered = covered.min(next);
            }
        }
        let spelled = fewest[bytes.len()];
        covered = covered.min(spelled);
        ((spelled != usize::MAX).then_some(spelled), covered)
    }

    /// Whether some token is longer than `bytes` and starts with them: a
    /// token the text may still grow into.
    pub(crate) fn extends(&self, bytes: &[u8]) -> bool {
        let path = self.path(bytes);
        if path.len() < bytes.len() {
            return false;
        }
        // Below the root, or below the node the bytes end at.
        path.last()
            .map_or(self.len() > 0, |&node| node + 1 < self.end(node))
    }

    /// The tokens whose bytes end at `node`.
    pub(crate) fn tokens(&self, node: usize) -> &[TokenId] {
        &self.tokens[self.tokens_start[node] as usize..self.tokens_start[node + 1] as usize]
    }

    /// The length of the longest token, in bytes.
    pub(crate) fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// Text tokens with no bytes.
    pub(crate) fn empty(&self) -> &[TokenId] {
        &self.empty
    }

    /// What the bytes below `node` are, one bit each (0 for a leaf): the
    /// class ([`byte_class`]) of each ASCII byte, [`TEXT_CHARS`] for
    /// non-ASCII characters (and for the bytes that finish a character
    /// `node` is inside of, see [`TokenTrie::utf8`]), [`MALFORMED`] for
    /// bytes that break UTF-8. A matcher state between characters that
    /// every ASCII byte of those classes and every non-ASCII character
    /// leads back to accepts every token below.
    pub(crate) fn classes_below(&self, node: usize) -> u64 {
        self.classes_below[node]
    }

    /// The most bytes a token goes on below `node` (0 for a leaf).
    pub(crate) fn height(&self, node: usize) -> usize {
        self.heights[node] as usize
    }

    /// How many nodes lie on the path of a token of at least `bytes`
    /// bytes: what a walk costs that skips the subtrees of shorter tokens.
    pub(crate) fn nodes_reaching(&self, bytes: usize) -> usize {
        self.nodes_reaching
            .get(bytes)
            .map_or(0, |&nodes| nodes as usize)
    }

    /// Where the bytes up to `node` stand in UTF-8: inside a character
    /// (whose end is below it), or between characters.
    pub(crate) fn utf8(&self, node: usize) -> Utf8 {
        self.utf8[node]
    }

    /// Whether the path to `node` is whole UTF-8 characters: valid, and
    /// not inside a character.
    pub(crate) fn whole(&self, node: usize) -> bool {
        self.whole[node]
    }

    /// Where plain text stops in each token (see [`Tails`]), made on first
    /// use.
    pub(crate) fn tails(&self) -> &Tails {
        self.tails.get_or_init(|| Box::new(Tails::new(self)))
    }

    /// The ranks of the tokens whose bytes end at `node`.
    pub(crate) fn own_ranks(&self, node: usize) -> (u32, u32) {
        (self.tokens_start[node], self.tokens_start[node + 1])
    }

    /// The ranks of the tokens of `node`'s subtree below it (not its own).
    pub(crate) fn ranks_below(&self, node: usize) -> (u32, u32) {
        (
            self.tokens_start[node + 1],
            self.tokens_start[self.end(node)],
        )
    }

    /// The tokens of the trie by rank.
    pub(crate) fn ranked(&self) -> &[TokenId] {
        &self.tokens
    }

    /// The ranks of the tokens in `node`'s subtree.
    pub(crate) fn subtree_ranks(&self, node: usize) -> (u32, u32) {
        (self.tokens_start[node], self.tokens_start[self.end(node)])
    }

    /// Every token in the trie, as a bitset in mask layout.
    pub(crate) fn universe(&self) -> &[u32] {
        &self.universe
    }

    /// How many tokens the trie holds (the bits of [`Self::universe`]).
    pub(crate) fn universe_len(&self) -> usize {
        self.tokens.len()
    }
}

/// Tokens sorted by a length of at most `longest` (a counting sort of
/// `tokens`, pairs of length and id), and per length `n` how many are at
/// most `n` long.
fn by_length(
    tokens: impl Iterator<Item = (usize, TokenId)>,
    longest: usize,
) -> (Vec<TokenId>, Vec<usize>) {
    let tokens: Vec<(usize, TokenId)> = tokens.collect();
    let mut ends = vec![0usize; longest + 1];
    for &(length, _) in &tokens {
        ends[length] += 1;
    }
    for n in 1..ends.len() {
        ends[n] += ends[n - 1];
    }
    let mut next: Vec<usize> = std::iter::once(0).chain(ends.iter().copied()).collect();
    let mut ids = vec![TokenId::new(0).expect("id 0"); tokens.len()];
    for (length, id) in tokens {
        ids[next[length]] = id;
        next[length] += 1;
    }
    (ids, ends)
}

/// The length nearest `length` whose bitset `made` has, with it.
fn nearest<'b>(
    length: usize,
    made: impl Fn(usize) -> Option<(usize, &'b [u32])>,
) -> Option<(usize, &'b [u32])> {
    (1..=MAX_NEAREST)
        .find_map(|apart| made(length + apart).or_else(|| made(length.checked_sub(apart)?)))
}

/// How far [`nearest`] looks on either side (the longest tokens of real
/// vocabularies have a few hundred bytes).
const MAX_NEAREST: usize = 256;

/// The bitset (mask layout, `words` wide) of the tokens of `ids` (sorted by
/// length, `ends[n]` of them at most `n` long) of at most `length`: from
/// the bitset of another length if one is `near`, with the tokens between
/// the two added or taken out — not from every token of the vocabulary
/// again (a bounded string asks for a new length at every step).
fn prefix_bits(
    ids: &[TokenId],
    ends: &[usize],
    length: usize,
    near: Option<(usize, &[u32])>,
    words: usize,
) -> Box<[u32]> {
    let (mut bits, from) = match near {
        Some((other, bits)) => (bits.to_vec(), ends[other]),
        None => (vec![0u32; words], 0),
    };
    let to = ends[length];
    for id in &ids[from.min(to)..from.max(to)] {
        bits[id.as_usize() / 32] ^= 1 << (id.as_usize() % 32);
    }
    bits.into()
}

#[cfg(test)]
mod tests {
    use super::{CLASSES, TokenTrie, Utf8, byte_class, class_bytes};
    use crate::id::TokenId;

    /// The ids whose bits `bits` sets.
    fn ids(bits: &[u32]) -> Vec<usize> {
        (0..bits.len() * 32)
            .filter(|id| bits[id / 32] & 1 << (id % 32) != 0)
            .collect()
    }

    /// Bitsets by length are made from the nearest length made before
    /// (longer or shorter, in any order asked): each holds exactly the
    /// tokens of at most that length, as counted from scratch.
    #[test]
    fn bitsets_by_length_hold_the_tokens_up_to_each_length() {
        let tokens: [&[u8]; 10] = [
            b"a",
            b"ab",
            b"abc",
            b"abcd",
            b"a-b",
            b"x\"y",
            b"caf\xc3\xa9",
            b" the",
            b"--",
            b"a b c d e",
        ];
        let trie = TokenTrie::new(
            (tokens.iter().enumerate()).map(|(id, &bytes)| (TokenId::new(id).unwrap(), bytes)),
            1,
        );
        let lengths = [3, 1, 9, 2, 0, 4, 5, 8, 6, 7];
        for chars in lengths {
            let ranks = 0..u32::try_from(trie.ranked().len()).unwrap();
            let expected: Vec<usize> = ranks
                .filter(|&rank| (1..=chars).contains(&usize::from(trie.plain_chars(rank))))
                .map(|rank| trie.ranked()[rank as usize].as_usize())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            assert_eq!(
                ids(trie.plain_within(chars)),
                expected,
                "{chars} characters"
            );
        }
        let classes = 1 << byte_class(b'a') | 1 << byte_class(b'-');
        for bytes in lengths {
            let expected: Vec<usize> = (tokens.iter().enumerate())
                .filter(|&(_, token)| {
                    token.len() <= bytes
                        && token
                            .iter()
                            .all(|&b| b.is_ascii() && classes & 1 << byte_class(b) != 0)
                })
                .map(|(id, _)| id)
                .collect();
            assert_eq!(
                ids(&trie.class_within(classes, bytes)),
                expected,
                "{bytes} bytes"
            );
        }
    }

    #[test]
    fn every_state_inside_a_character_has_an_index() {
        let mut states = vec![Utf8::Boundary];
        let mut seen = Vec::new();
        while let Some(state) = states.pop() {
            for byte in 0..=255u8 {
                if let Some(next @ Utf8::Inside { .. }) = state.advance(byte)
                    && !seen.contains(&next)
                {
                    seen.push(next);
                    states.push(next);
                }
            }
        }
        assert_eq!(seen.len(), Utf8::INSIDE.len());
        for state in seen {
            assert_eq!(Utf8::INSIDE[state.inside_index().unwrap()], state);
        }
        assert_eq!(Utf8::Boundary.inside_index(), None);
    }

    #[test]
    fn byte_classes_partition_the_bytes() {
        let mut seen = [false; CLASSES as usize];
        for byte in 0..=255u8 {
            let class = byte_class(byte);
            assert!(class < CLASSES, "{byte:#x}");
            seen[class as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
        for class in 0..CLASSES {
            let bytes: Vec<u8> = class_bytes(class).collect();
            let expected: Vec<u8> = (0..=255).filter(|&b| byte_class(b) == class).collect();
            assert_eq!(bytes, expected, "class {class}");
        }
        for (byte, alone) in [
            (b'"', true),
            (b'\\', true),
            (b'{', true),
            (b'~', true),
            (b'a', false),
        ] {
            assert_eq!(
                (0..=255u8)
                    .filter(|&b| byte_class(b) == byte_class(byte))
                    .count()
                    == 1,
                alone
            );
        }
    }
}
