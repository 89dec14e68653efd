//! Subset construction over byte ranges and the other labels.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap;

use super::{Edge, Fsm, Label, Node};

/// Determinization gives up past this many states, or [`GROWTH`] times the
/// input's, whichever is more (it can blow up exponentially; grammar rules
/// almost never do, and large alternations of literals — JSON Schema enums —
/// shrink into a trie).
pub const MAX_STATES: usize = 4096;

/// See [`MAX_STATES`].
pub const GROWTH: usize = 4;

/// The deterministic automaton of the epsilon-free `nfa`, or `None` if it
/// would grow past the budget of [`MAX_STATES`].
pub(super) fn determinize(nfa: &Fsm) -> Option<Fsm> {
    let budget = MAX_STATES.max(GROWTH * nfa.nodes.len());
    let mut ids: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
    let mut sets: Vec<Vec<u32>> = vec![vec![0]];
    ids.insert(vec![0], 0);
    let mut nodes = Vec::new();
    let mut next = 0;
    while next < sets.len() {
        let set = sets[next].clone();
        next += 1;
        let mut edges = Vec::new();
        for (label, targets) in transitions(nfa, &set) {
            let target = match ids.get(&targets) {
                Some(&id) => id,
                None => {
                    if sets.len() >= budget {
                        return None;
                    }
                    let id = u32::try_from(sets.len()).expect("below the budget");
                    ids.insert(targets.clone(), id);
                    sets.push(targets);
                    id
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
    Some(Fsm { nodes })
}

/// The outgoing transitions of a set of nodes: one per non-byte label and
/// one per maximal byte range with the same set of targets.
fn transitions(nfa: &Fsm, set: &[u32]) -> Vec<(Label, Vec<u32>)> {
    let mut others: BTreeMap<Label, BTreeSet<u32>> = BTreeMap::new();
    let mut ranges: Vec<(u8, u8, u32)> = Vec::new();
    for &node in set {
        for edge in &nfa.nodes[node as usize].edges {
            match edge.label {
                Label::Bytes { lo, hi } => ranges.push((lo, hi, edge.target)),
                label => {
                    others.entry(label).or_default().insert(edge.target);
                }
            }
        }
    }
    let mut out: Vec<(Label, Vec<u32>)> = Vec::new();
    // Split 0..=255 at every range boundary; each piece has one target set.
    let mut cuts: Vec<u16> = ranges
        .iter()
        .flat_map(|&(lo, hi, _)| [u16::from(lo), u16::from(hi) + 1])
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut targets: Vec<u32> = Vec::new();
    for pair in cuts.windows(2) {
        let (start, end) = (pair[0], pair[1] - 1);
        targets.clear();
        targets.extend(
            ranges
                .iter()
                .filter(|&&(lo, hi, _)| u16::from(lo) <= start && end <= u16::from(hi))
                .map(|&(_, _, target)| target),
        );
        if targets.is_empty() {
            continue;
        }
        targets.sort_unstable();
        targets.dedup();
        let (lo, hi) = (byte(start), byte(end));
        match out.last_mut() {
            // Extend the previous range if it is adjacent and goes to the same set.
            Some((Label::Bytes { hi: last_hi, .. }, last))
                if u16::from(*last_hi) + 1 == start && *last == targets =>
            {
                *last_hi = hi;
            }
            _ => out.push((Label::Bytes { lo, hi }, targets.clone())),
        }
    }
    out.extend(
        others
            .into_iter()
            .map(|(label, targets)| (label, targets.into_iter().collect())),
    );
    out
}

fn byte(value: u16) -> u8 {
    u8::try_from(value).expect("cut points inside a range are bytes")
}
