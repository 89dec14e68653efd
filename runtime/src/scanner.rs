//! Free-text scanning for tag dispatch: a dense byte-transition table over
//! the dispatch's patterns (triggers, stop strings, excluded strings).
//!
//! The table is derived from an Aho–Corasick DFA (the `aho-corasick` crate,
//! standard match semantics, so every pattern ending at a position is seen)
//! by renumbering its reachable states densely. A scanner state is then a
//! plain `u32` that an Earley item can carry, and a step is one table load.

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::dfa::DFA;
use aho_corasick::{Anchored, MatchKind};
use rustc_hash::FxHashMap;

/// The scanner of one tag dispatch.
#[derive(Clone, Debug)]
pub(crate) struct Scanner {
    /// `next[state * 256 + byte]`: the state after `byte`.
    next: Vec<u32>,
    /// Per state: the pattern (index among the dispatch's patterns) that
    /// ends on entering the state, the longest if several do; `NONE` if none.
    found: Vec<u32>,
    /// Per state: how many of the last bytes may begin a pattern (the
    /// state's depth in the patterns' trie).
    depth: Vec<u32>,
}

/// "No pattern ends here".
pub(crate) const NONE: u32 = u32::MAX;

/// The longest trigger, stop or excluded string a tag dispatch takes, in
/// bytes. Building the scanner follows failure links as deep as a pattern
/// is long from each of its states: a 50 KB excluded string took 4 s, a
/// 1 MB one over ten minutes and a gigabyte of table.
pub const MAX_DISPATCH_PATTERN: usize = 1024;

/// The most bytes a tag dispatch's patterns take together (each a state
/// of the scanner, a kilobyte of table each: 64 MiB at most).
pub const MAX_DISPATCH_PATTERNS: usize = 1 << 16;

/// Why `patterns` are too long for one dispatch, if they are.
pub fn dispatch_patterns_error<'p>(patterns: impl IntoIterator<Item = &'p [u8]>) -> Option<String> {
    let mut total = 0;
    for pattern in patterns {
        if pattern.len() > MAX_DISPATCH_PATTERN {
            let shown = String::from_utf8_lossy(&pattern[..24]);
            return Some(format!(
                "a trigger, stop or excluded string of {} bytes (`{shown}…`) is longer than {MAX_DISPATCH_PATTERN} (the limit)",
                pattern.len()
            ));
        }
        total += pattern.len();
    }
    (total > MAX_DISPATCH_PATTERNS).then(|| {
        format!(
            "the triggers, stop and excluded strings of one free text take {total} bytes, more than {MAX_DISPATCH_PATTERNS} (the limit)"
        )
    })
}

/// The state free text starts in.
pub(crate) const START: u32 = 0;

impl Scanner {
    /// A scanner for `patterns`, in the dispatch's order (ties between
    /// equally long patterns go to the earlier one).
    pub(crate) fn new(patterns: &[&[u8]]) -> Result<Self, String> {
        if let Some(error) = dispatch_patterns_error(patterns.iter().copied()) {
            return Err(error);
        }
        let dfa = DFA::builder()
            .match_kind(MatchKind::Standard)
            .build(patterns)
            .map_err(|e| format!("dispatch patterns: {e}"))?;
        let start = dfa
            .start_state(Anchored::No)
            .map_err(|e| format!("dispatch patterns: {e}"))?;
        let mut ids: FxHashMap<StateID, u32> = FxHashMap::default();
        let mut order = vec![start];
        ids.insert(start, 0);
        let mut scanner = Scanner {
            next: Vec::new(),
            found: Vec::new(),
            depth: vec![0],
        };
        let mut at = 0;
        while at < order.len() {
            let state = order[at];
            at += 1;
            scanner.found.push(longest_match(&dfa, state, patterns));
            // States are found breadth first, and a byte deepens a state
            // by one at most: a state's distance from the start is its depth.
            let depth = scanner.depth[at - 1] + 1;
            for byte in 0..=255u8 {
                let next = dfa.next_state(Anchored::No, state, byte);
                let id = *ids.entry(next).or_insert_with(|| {
                    order.push(next);
                    scanner.depth.push(depth);
                    u32::try_from(order.len() - 1).expect("scanner states fit in u32")
                });
                scanner.next.push(id);
            }
        }
        Ok(scanner)
    }

    /// The number of states.
    pub(crate) fn states(&self) -> u32 {
        u32::try_from(self.found.len()).expect("scanner states fit in u32")
    }

    /// How many of the last bytes scanned into `state` may be the start of
    /// a pattern: free text only once they are followed by what ends none.
    pub(crate) fn depth(&self, state: u32) -> usize {
        self.depth[state as usize] as usize
    }

    /// The state after `byte` in `state`, and the pattern that ends there.
    pub(crate) fn step(&self, state: u32, byte: u8) -> (u32, u32) {
        let next = self.next[state as usize * 256 + usize::from(byte)];
        (next, self.found[next as usize])
    }
}

fn longest_match(dfa: &DFA, state: StateID, patterns: &[&[u8]]) -> u32 {
    if !dfa.is_match(state) {
        return NONE;
    }
    (0..dfa.match_len(state))
        .map(|i| dfa.match_pattern(state, i).as_usize())
        .min_by_key(|&p| (std::cmp::Reverse(patterns[p].len()), p))
        .map_or(NONE, |p| {
            u32::try_from(p).expect("pattern index fits in u32")
        })
}
