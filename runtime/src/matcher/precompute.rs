//! Mask-cache entries built ahead of time, for bundles: which entries a
//! grammar's items can ask for, what each is likely to cost, and building
//! the costliest.
//!
//! The candidates are what [`Seed::add`](super::mask) can produce for the
//! grammar, found from the tables instead of from a row: every scanning
//! node (and, in short rules, every chain of static waiters above it, with
//! one representative count per distinguishable repetition count), every
//! scanner state of a tag dispatch's free text, every token dispatch's free
//! region. An entry depends only on its key, so an entry built here is the
//! one a matcher would build on first use.

use std::sync::Arc;

use rayon::prelude::*;

use super::classify::classify;
use super::item::{Item, Kind};
use super::memos::{MaskMemos, Masking};
use super::seed::{MAX_WAITING, Seed, link};
use super::walk::Cost;
use crate::cache::{Classified, Key, KeyKind, MAX_PARENTS};
use crate::grammar::{Caller, Grammar, Repeat};
use crate::tables::{Edge, RuleRecord};
use crate::vocab::Vocabulary;

/// Which mask-cache entries a bundle carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precompute {
    /// None: every entry is built on first use.
    None,
    /// The costliest entries, within a budget that keeps compiling to
    /// seconds; cheap ones are left to first use.
    Auto,
    /// The `K` costliest entries.
    Costliest(usize),
    /// Every entry the grammar's items can ask for.
    All,
}

/// Under [`Precompute::Auto`], entries estimated cheaper than this share
/// of the token trie are left to be built on first use.
const AUTO_MIN_SHARE: usize = 32;

/// Under [`Precompute::Auto`], the estimated cost of all entries together,
/// in walks of the whole token trie.
const AUTO_BUDGET_WALKS: usize = 512;

/// Entries precomputed for one grammar and vocabulary.
pub(crate) struct Built {
    /// The entries, sorted by key.
    pub entries: Vec<(Key, Classified)>,
    /// How many entries the grammar's items can ask for.
    pub candidates: usize,
}

/// Builds the entries `how` picks among those `grammar`'s items can ask
/// for with `vocabulary`. Entries over the mask budget are left out (they
/// are over it at run time too, where the error is reported).
pub(crate) fn precompute(
    grammar: &Arc<Grammar>,
    vocabulary: &Vocabulary,
    how: Precompute,
) -> Built {
    if !grammar.is_cacheable() || matches!(how, Precompute::None) {
        return Built {
            entries: Vec::new(),
            candidates: 0,
        };
    }
    let trie = vocabulary.trie();
    let mut candidates = candidates(grammar, trie.max_depth());
    let count = candidates.len();
    let sizes = first_byte_sizes(vocabulary);
    let mut costed: Vec<(usize, Seed)> = candidates
        .drain(..)
        .map(|seed| (estimate(grammar, &seed, &sizes, trie.len()), seed))
        .collect();
    // Costliest first; equal costs in key order, so the choice is stable.
    costed.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.key.cmp(&b.1.key)));
    let chosen: Vec<Seed> = match how {
        Precompute::None => Vec::new(),
        Precompute::All => costed.into_iter().map(|(_, seed)| seed).collect(),
        Precompute::Costliest(k) => costed.into_iter().take(k).map(|(_, seed)| seed).collect(),
        Precompute::Auto => {
            let mut total = 0;
            costed
                .into_iter()
                .take_while(|&(cost, _)| {
                    total += cost;
                    cost * AUTO_MIN_SHARE >= trie.len() && total <= AUTO_BUDGET_WALKS * trie.len()
                })
                .map(|(_, seed)| seed)
                .collect()
        }
    };
    let memos: Arc<MaskMemos> = vocabulary.mask_cache().memos(grammar.id());
    let masking = Masking {
        grammar,
        vocabulary,
        memos: &memos,
    };
    let mut entries: Vec<(Key, Classified)> = chosen
        .par_iter()
        .filter_map(|seed| {
            classify(
                masking,
                seed,
                super::DEFAULT_MASK_BUDGET,
                &mut Cost::default(),
            )
            .ok()
            .map(|entry| (seed.key, entry))
        })
        .collect();
    if let Some(bytes) = memos.size_to_report() {
        (vocabulary.mask_cache()).memos_resized(grammar.id(), bytes);
    }
    entries.sort_by_key(|entry| entry.0);
    Built {
        entries,
        candidates: count,
    }
}

/// Every seed the grammar's items can produce (a superset), each key once.
fn candidates(grammar: &Grammar, longest_token: usize) -> Vec<Seed> {
    let tables = grammar.tables();
    let waiters = Waiters::new(grammar, longest_token);
    let mut seeds = Vec::new();
    for (r, record) in tables.rules.iter().enumerate() {
        let rule = u32::try_from(r).expect("rule ids fit in u32");
        match record.kind {
            RuleRecord::AUTOMATON => {
                for node in record.body..record.body + record.node_count {
                    if !grammar.scans(node) {
                        continue;
                    }
                    let item = item(Kind::Node, node, 0);
                    let key = Key {
                        rule_hash: record.hash,
                        kind: KeyKind::Node,
                        state: node - record.body,
                        parents: [None; MAX_PARENTS],
                    };
                    let seed = Seed {
                        key,
                        rule,
                        item,
                        parents: [None; MAX_PARENTS],
                    };
                    waiters.climb(grammar, seed, 0, &mut seeds);
                }
            }
            RuleRecord::DISPATCH => {
                let states = grammar
                    .scanner(record.body)
                    .map_or(0, crate::scanner::Scanner::states);
                for state in 0..states {
                    seeds.push(free_seed(grammar, rule, Kind::Free, KeyKind::Free, state));
                }
            }
            _ => seeds.push(free_seed(
                grammar,
                rule,
                Kind::TokenFree,
                KeyKind::TokenFree,
                0,
            )),
        }
    }
    seeds.sort_by_key(|seed| seed.key);
    seeds.dedup_by(|a, b| a.key == b.key);
    seeds
}

fn free_seed(grammar: &Grammar, rule: u32, kind: Kind, key_kind: KeyKind, state: u32) -> Seed {
    Seed {
        key: Key {
            rule_hash: grammar.free_hash(rule),
            kind: key_kind,
            state,
            parents: [None; MAX_PARENTS],
        },
        rule,
        item: item(kind, rule, state),
        parents: [None; MAX_PARENTS],
    }
}

fn item(kind: Kind, a: u32, aux: u32) -> Item {
    Item {
        kind,
        a,
        aux,
        origin: 0,
        pred: 0,
        ctx: 0,
    }
}

/// Per rule, the items of the tables that can wait for it.
struct Waiters {
    /// Per rule: waiting items (repetitions once per distinguishable
    /// count), each with its node and its place in a key.
    items: Vec<Vec<(Item, u32, crate::cache::Parent)>>,
    /// Per rule: how many places wait for it.
    places: Vec<usize>,
    /// Per rule: whether something other than a node or a repetition waits
    /// for it (the entry rule, a dispatch arm): its items may have no parents.
    other: Vec<bool>,
}

impl Waiters {
    fn new(grammar: &Grammar, longest_token: usize) -> Self {
        let rules = grammar.tables().rules.len();
        let mut waiters = Self {
            items: vec![Vec::new(); rules],
            places: vec![0; rules],
            other: vec![false; rules],
        };
        waiters.other[grammar.root().as_usize()] = true;
        for r in 0..rules {
            let rule = u32::try_from(r).expect("rule ids fit in u32");
            waiters.places[r] = grammar.callers(rule).len();
            for &caller in grammar.callers(rule) {
                match caller {
                    Caller::Node(node) => {
                        let parent = item(Kind::Node, node, 0);
                        let place = link(grammar, parent, node, None, rule, longest_token);
                        waiters.items[r].push((parent, node, place));
                    }
                    Caller::Repeat { node, edge } => {
                        let repeat = grammar.repeat(edge);
                        let mut seen = Vec::new();
                        for aux in repeat_counts(repeat, longest_token) {
                            let parent = item(Kind::Repeat, edge, aux);
                            let place =
                                link(grammar, parent, node, Some(repeat), rule, longest_token);
                            if !seen.contains(&place.count) {
                                seen.push(place.count);
                                waiters.items[r].push((parent, node, place));
                            }
                        }
                    }
                    Caller::Arm { .. } => waiters.other[r] = true,
                }
            }
        }
        waiters
    }

    /// Adds `seed` (with `level` parents) and, while its top rule is short,
    /// the seeds with one more waiting item above it.
    fn climb(&self, grammar: &Grammar, seed: Seed, level: usize, seeds: &mut Vec<Seed>) {
        let rule = seed.rule as usize;
        if level == MAX_PARENTS || !grammar.is_short(seed.rule) || self.items[rule].is_empty() {
            seeds.push(seed);
            return;
        }
        // Without parents when the rule may be called from elsewhere, or by
        // more items than a seed follows.
        if self.other[rule] || self.places[rule] > MAX_WAITING {
            seeds.push(seed);
        }
        for &(parent, node, place) in &self.items[rule] {
            let mut above = seed;
            above.key.parents[level] = Some(place);
            above.parents[level] = Some(parent);
            above.rule = grammar.node_rule(node);
            self.climb(grammar, above, level + 1, seeds);
        }
    }
}

/// Counts of matches done in the repetition `repeat` that cover every key
/// a waiting item in it can have: near zero, near the least count and near
/// the most (counts further from them than a token's length behave alike).
fn repeat_counts(repeat: Repeat, longest_token: usize) -> Vec<u32> {
    let reach = u32::try_from(longest_token + 3).unwrap_or(u32::MAX);
    // A waiting item has done fewer matches than the most (validated
    // tables have no repetition of at most 0).
    let last = repeat.max.map_or(u32::MAX, |max| max - 1);
    let mut counts: Vec<u32> = (0..=last.min(reach)).collect();
    counts.extend(repeat.min.saturating_sub(reach)..=repeat.min.min(last));
    if let Some(max) = repeat.max {
        counts.extend(max.saturating_sub(reach)..=last);
    }
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// Per first byte: how many trie nodes lie under it.
fn first_byte_sizes(vocabulary: &Vocabulary) -> [usize; 256] {
    let trie = vocabulary.trie();
    let mut sizes = [0; 256];
    let mut node = 0;
    while node < trie.len() {
        let end = trie.end(node);
        sizes[usize::from(trie.byte(node))] += end - node;
        node = end;
    }
    sizes
}

/// How many trie nodes building `seed`'s entry may visit: those under the
/// first bytes its item scans (every node for free text).
fn estimate(grammar: &Grammar, seed: &Seed, sizes: &[usize; 256], trie_len: usize) -> usize {
    if seed.item.kind != Kind::Node {
        return trie_len;
    }
    grammar
        .edges(seed.item.a)
        .iter()
        .filter_map(|edge| match edge.label() {
            Edge::Bytes { lo, hi } => Some(
                sizes[usize::from(lo)..=usize::from(hi)]
                    .iter()
                    .sum::<usize>(),
            ),
            _ => None,
        })
        .sum::<usize>()
        .min(trie_len)
}
