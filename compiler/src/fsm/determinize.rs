//! Subset construction over byte ranges and the other labels.

use super::interned::Interned;
use super::{Edge, Fsm, Label, Node};
use crate::budget::{Budget, Exceeded, FREE_ASIDE_AT};
use xg_runtime::lru::free_aside;

/// Determinization gives up past this many states, or [`GROWTH`] times the
/// input's, whichever is more (it can blow up exponentially; grammar rules
/// almost never do, and large alternations of literals — JSON Schema enums —
/// shrink into a trie).
pub const MAX_STATES: usize = 4096;

/// See [`MAX_STATES`].
pub const GROWTH: usize = 4;

/// Determinization also gives up when the subsets it keeps hold more than
/// this many nodes in all: a chain of `n` nodes behind a loop (the
/// automaton of a long literal searched for anywhere, as JSON Schema's
/// unanchored `pattern` is) has `n` subsets of up to `n` nodes each, so
/// the states stay within [`MAX_STATES`]' budget while memory grows as
/// `n²` (a 20,000-character pattern took 1.8 GB).
pub const MAX_SUBSET_NODES: usize = 1 << 22;

/// The deterministic automaton of the epsilon-free `nfa`, or `None` if it
/// would grow past the budget of [`MAX_STATES`] states or
/// [`MAX_SUBSET_NODES`] subset nodes; checks `budget` as states are made.
pub(super) fn determinize(nfa: &Fsm, budget: &Budget) -> Result<Option<Fsm>, Exceeded> {
    let max_states = MAX_STATES.max(GROWTH * nfa.nodes.len());
    // Most automata keep about their node count once determinized: sized
    // for it up front, nothing is rehashed or copied as it grows.
    let expected = nfa.nodes.len().min(max_states);
    let mut subsets = Interned::with_capacity(expected);
    subsets.insert(&[0], Interned::hash(&[0]));
    let mut scratch = Scratch::default();
    let mut set = Vec::new();
    let mut nodes = Vec::with_capacity(expected);
    while nodes.len() < subsets.len() {
        set.clear();
        set.extend_from_slice(subsets.get(nodes.len()));
        let spent = budget.spend(set.len()).and_then(|()| {
            scratch.transitions(nfa, &set);
            budget.spend(scratch.out.len())
        });
        if let Err(exceeded) = spent {
            // Stopped: what was made is freed aside if large.
            if nodes.len() >= FREE_ASIDE_AT {
                free_aside(nodes);
            }
            return Err(exceeded);
        }
        let mut edges = Vec::with_capacity(scratch.out.len());
        for &(label, start, end) in &scratch.out {
            let targets = &scratch.targets[start..end];
            let hash = Interned::hash(targets);
            let target = match subsets.find(targets, hash) {
                Some(id) => id,
                None => {
                    if subsets.len() >= max_states
                        || subsets.total() + targets.len() > MAX_SUBSET_NODES
                    {
                        return Ok(None);
                    }
                    subsets.insert(targets, hash)
                }
            };
            edges.push(Edge { label, target });
        }
        edges.sort_unstable();
        nodes.push(Node {
            is_final: set.iter().any(|&n| nfa.nodes[n as usize].is_final),
            edges,
        });
    }
    Ok(Some(Fsm { nodes }))
}

/// Buffers reused from one subset to the next.
#[derive(Default)]
struct Scratch {
    /// Byte edges of the subset: `(lo, hi, target)`.
    ranges: Vec<(u8, u8, u32)>,
    /// Other edges of the subset: `(label, target)`.
    others: Vec<(Label, u32)>,
    cuts: Vec<u16>,
    /// The transitions: a label and its targets, `targets[start..end]`.
    out: Vec<(Label, usize, usize)>,
    targets: Vec<u32>,
}

impl Scratch {
    /// The outgoing transitions of a set of nodes: one per non-byte label
    /// and one per maximal byte range with the same set of targets (sorted,
    /// without duplicates).
    fn transitions(&mut self, nfa: &Fsm, set: &[u32]) {
        self.ranges.clear();
        self.others.clear();
        self.out.clear();
        self.targets.clear();
        for &node in set {
            for edge in &nfa.nodes[node as usize].edges {
                match edge.label {
                    Label::Bytes { lo, hi } => self.ranges.push((lo, hi, edge.target)),
                    label => self.others.push((label, edge.target)),
                }
            }
        }
        // Split 0..=255 at every range boundary; each piece has one target set.
        self.cuts.clear();
        self.cuts.extend(
            self.ranges
                .iter()
                .flat_map(|&(lo, hi, _)| [u16::from(lo), u16::from(hi) + 1]),
        );
        self.cuts.sort_unstable();
        self.cuts.dedup();
        for i in 1..self.cuts.len() {
            let (start, end) = (self.cuts[i - 1], self.cuts[i] - 1);
            let first = self.targets.len();
            self.targets.extend(
                self.ranges
                    .iter()
                    .filter(|&&(lo, hi, _)| u16::from(lo) <= start && end <= u16::from(hi))
                    .map(|&(_, _, target)| target),
            );
            if self.targets.len() == first {
                continue;
            }
            self.targets[first..].sort_unstable();
            let len = dedup_sorted(&mut self.targets[first..]);
            self.targets.truncate(first + len);
            let (lo, hi) = (byte(start), byte(end));
            // Extend the previous range if it is adjacent and goes to the
            // same set.
            if let Some((Label::Bytes { hi: last_hi, .. }, last_start, last_end)) =
                self.out.last_mut()
                && u16::from(*last_hi) + 1 == start
                && self.targets[*last_start..*last_end] == self.targets[first..]
            {
                *last_hi = hi;
                self.targets.truncate(first);
                continue;
            }
            self.out
                .push((Label::Bytes { lo, hi }, first, self.targets.len()));
        }
        self.others.sort_unstable();
        self.others.dedup();
        let mut i = 0;
        while i < self.others.len() {
            let label = self.others[i].0;
            let first = self.targets.len();
            while i < self.others.len() && self.others[i].0 == label {
                self.targets.push(self.others[i].1);
                i += 1;
            }
            self.out.push((label, first, self.targets.len()));
        }
    }
}

/// Moves the distinct values of the sorted `values` to its front; their
/// count.
fn dedup_sorted(values: &mut [u32]) -> usize {
    let mut len = 0;
    for i in 0..values.len() {
        if len == 0 || values[len - 1] != values[i] {
            values[len] = values[i];
            len += 1;
        }
    }
    len
}

fn byte(value: u16) -> u8 {
    u8::try_from(value).expect("cut points inside a range are bytes")
}
