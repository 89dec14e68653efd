//! Counted repetitions: the edge, what a count tells a walk over one token,
//! and how few bytes a match of a repeated rule takes — what bounds the
//! matches one token can end.

use crate::tables::{Edge, RuleRecord, Tables};

/// A counted repetition edge: `min` to `max` consecutive matches of
/// `rule`, then on to `target`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Repeat {
    pub rule: u32,
    pub min: u32,
    /// `None`: no bound.
    pub max: Option<u32>,
    pub target: u32,
}

impl Repeat {
    /// Whether `count` matches done leave room for one more.
    pub(crate) fn below_max(&self, count: u32) -> bool {
        self.max.is_none_or(|max| count < max)
    }

    /// What `count` matches done tell a walk of fewer than `cap` more
    /// matches: how many it still needs and how many it has room for,
    /// each capped at `cap`. Counts of one class behave alike over such a
    /// walk (see [`count_cap`]).
    pub(crate) fn class(&self, count: u32, cap: u32) -> (u32, u32) {
        let needed = self.min.saturating_sub(count).min(cap);
        let room = self
            .max
            .map_or(cap, |max| max.saturating_sub(count).min(cap));
        (needed, room)
    }

    /// The count that stands for every count of `count`'s [`Repeat::class`]:
    /// the smallest count that needs none more, or the count `cap` below
    /// the least one, when `count` is that far from both bounds.
    pub(crate) fn representative(&self, count: u32, cap: u32) -> u32 {
        match self.class(count, cap) {
            (0, room) if room == cap => self.min,
            (needed, _) if needed == cap => self.min - cap,
            _ => count,
        }
    }
}

/// The cap of [`Repeat::class`] for tokens of at most `longest_token`
/// bytes and a repeated rule whose non-empty matches take at least `unit`
/// bytes ([`crate::grammar::Grammar::match_bytes`]): a token ends fewer
/// matches than that.
pub(crate) fn count_cap(longest_token: usize, unit: usize) -> u32 {
    u32::try_from(longest_token / unit.max(1) + 2).map_or(0xFFFF, |cap| cap.min(0xFFFF))
}

/// How deep rule calls are followed when sizing a repeated rule; deeper
/// callees count as matching no bytes.
const SIZING_DEPTH: usize = 32;

/// What is known of the fewest bytes of a rule's match.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fewest {
    Unknown,
    /// Being sized: a call back to it counts as no bytes.
    Sizing,
    Known(u32),
}

/// Per rule: at least how many bytes a non-empty match takes (1 to 255),
/// for the rules a counted repetition of `tables` repeats, 0 for the
/// others. A lower bound: callees not built yet, dispatches and recursion
/// count as no bytes, so a grammar whose rules are built on first use
/// sizes its repeated rules again as rules are built: `previous` holds the
/// values before, and only the repetitions of the rules `newly_built`
/// names are looked for.
pub(super) fn match_bytes(
    tables: &Tables,
    previous: Option<&[u8]>,
    newly_built: impl Fn(usize) -> bool,
) -> Vec<u8> {
    let mut found = previous.map_or_else(|| vec![0; tables.rules.len()], <[u8]>::to_vec);
    for (owner, record) in tables.rules.iter().enumerate() {
        if record.kind != RuleRecord::AUTOMATON || !newly_built(owner) {
            continue;
        }
        let nodes = record.body as usize..(record.body + record.node_count) as usize;
        for node in &tables.nodes[nodes] {
            let first = node.first_edge as usize;
            for edge in &tables.edges[first..first + node.edge_count as usize] {
                if let Edge::Repeat { rule, .. } = edge.label() {
                    found[rule as usize] = 1;
                }
            }
        }
    }
    let mut memo = vec![Fewest::Unknown; tables.rules.len()];
    for (rule, bytes) in found.iter_mut().enumerate() {
        if *bytes != 0 {
            let fewest = fewest_bytes(tables, rule, &mut memo, 0);
            *bytes = u8::try_from(fewest.clamp(1, 255)).expect("clamped");
        }
    }
    found
}

/// The fewest bytes of a match of `rule` (a lower bound, see
/// [`match_bytes`]): the shortest path through its automaton, a byte
/// costing 1, a call its callee's fewest, a repetition its least count of
/// them, a token 0.
fn fewest_bytes(tables: &Tables, rule: usize, memo: &mut [Fewest], depth: usize) -> u32 {
    match memo[rule] {
        Fewest::Known(bytes) => return bytes,
        Fewest::Sizing => return 0,
        Fewest::Unknown if depth > SIZING_DEPTH => return 0,
        Fewest::Unknown => {}
    }
    let record = tables.rules[rule];
    if record.kind != RuleRecord::AUTOMATON {
        memo[rule] = Fewest::Known(0);
        return 0;
    }
    memo[rule] = Fewest::Sizing;
    let start = record.body as usize;
    let mut distance = vec![u32::MAX; record.node_count as usize];
    distance[0] = 0;
    let mut work = vec![start];
    while let Some(node) = work.pop() {
        let here = distance[node - start];
        let record = tables.nodes[node];
        let first = record.first_edge as usize;
        for edge in &tables.edges[first..first + record.edge_count as usize] {
            let bytes = match edge.label() {
                Edge::Bytes { .. } => 1,
                Edge::Rule { rule } => fewest_bytes(tables, rule as usize, memo, depth + 1),
                Edge::Repeat { rule, min, .. } => {
                    min.saturating_mul(fewest_bytes(tables, rule as usize, memo, depth + 1))
                }
                Edge::Tokens { .. } => 0,
            };
            let there = here.saturating_add(bytes);
            let target = edge.target as usize - start;
            if there < distance[target] {
                distance[target] = there;
                work.push(edge.target as usize);
            }
        }
    }
    let nodes = start..start + record.node_count as usize;
    let fewest = (nodes.zip(&distance))
        .filter(|&(node, _)| tables.nodes[node].is_final == 1)
        .map(|(_, &bytes)| bytes)
        .min()
        .filter(|&bytes| bytes != u32::MAX)
        .unwrap_or(0);
    memo[rule] = Fewest::Known(fewest);
    fewest
}

#[cfg(test)]
mod tests {
    use super::Repeat;

    /// Whether `count` and `other` agree, over every number of further
    /// matches below `cap`, on whether the repetition may stop there and
    /// may take one more.
    fn alike(repeat: Repeat, count: u32, other: u32, cap: u32) -> bool {
        (0..cap).all(|more| {
            (count + more >= repeat.min) == (other + more >= repeat.min)
                && repeat.below_max(count + more) == repeat.below_max(other + more)
        })
    }

    /// Every count's representative is of its class, and counts of one
    /// class behave alike over fewer than `cap` more matches, for every
    /// bound up to 12 (and none) and caps 2 to 5.
    #[test]
    fn counts_of_one_class_behave_alike() {
        for min in 0..12 {
            let maxes = (min.max(1)..12).map(Some).chain([None]);
            for max in maxes {
                let repeat = Repeat {
                    rule: 0,
                    min,
                    max,
                    target: 0,
                };
                let last = max.map_or(min + 8, |max| max - 1);
                for cap in 2..6 {
                    for count in 0..=last {
                        let representative = repeat.representative(count, cap);
                        assert_eq!(repeat.class(representative, cap), repeat.class(count, cap));
                        for other in 0..=last {
                            if repeat.class(other, cap) == repeat.class(count, cap) {
                                assert!(
                                    alike(repeat, count, other, cap),
                                    "{repeat:?} {count} {other} {cap}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
