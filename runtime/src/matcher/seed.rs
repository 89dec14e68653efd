//! The items a mask asks the cache about: each scanning item of the row
//! as a [`Seed`], with the items above it its entry covers, and the
//! [`Key`] it is cached under.

use rustc_hash::{FxHashMap, FxHashSet};

use super::history::{History, awaited_rules};
use super::item::{Item, Kind};
use crate::cache::{Key, KeyKind, MAX_PARENTS, Parent, Place};
use crate::grammar::{Grammar, Repeat, count_cap};

/// The bits of [`Parent::count`] that hold the room a counted repetition
/// has left (the matches it still needs are above them).
const ROOM: u32 = 0xFFFF;

/// How many counts before a seed's [`Seed::neighbours`] names: as many as
/// the characters of the longest plain token, so that the entry of the
/// step before is among them whatever token that step took (a word of
/// eight characters inside a `maxLength` of 100 moved the count past the
/// three named before, and the next entry walked 7,800 trie nodes instead
/// of 1,300). Each is one cache lookup, and a count further back shares
/// as many tokens as the one just before.
const COUNTS_BEFORE: u32 = 32;

/// The most items that may wait for one short rule for a [`Seed`] to
/// cover them (one seed each).
pub(super) const MAX_WAITING: usize = 4;

/// A scanning item of a row and what its mask-cache entry covers: the
/// item, and — while the rule it is in is short (a character, a digit, an
/// escape: it usually ends inside a token), or only counted repetitions
/// wait for it (a word of a pattern that counts words) — an item that
/// waits for that rule, and so on up. Covering them makes the entry decide
/// tokens that run past the end of the rule, which would otherwise all be
/// left uncertain (think of the characters of a string of bounded length).
/// Where several items wait, the item has one seed per waiting item.
#[derive(Clone, Copy)]
pub(super) struct Seed {
    pub key: Key,
    /// The rule of the topmost item covered: where it ends, the entry ends.
    pub rule: u32,
    pub item: Item,
    /// The items that wait, lowest first.
    pub parents: [Option<Item>; MAX_PARENTS],
}

impl Seed {
    /// The topmost item the seed covers (the item itself without parents).
    pub(super) fn top(&self) -> &Item {
        self.parents
            .iter()
            .rev()
            .flatten()
            .next()
            .unwrap_or(&self.item)
    }

    /// Where a counted repetition the seed covers is near a bound (it needs
    /// fewer matches, or has room for fewer, than a token can end): the keys
    /// of entries for other counts of it that may be cached — far from the
    /// bound, then the counts before — each with the fewest bytes of a
    /// token the two entries may sort apart. Counts that need `n` and `n'`
    /// more matches tell apart only tokens that can end `min(n, n')` of
    /// them, and so with room: a token shorter than `min - 1` matches of
    /// the fewest bytes ends too few ([`count_cap`] for its length is at
    /// most `min`), and the other entry's verdict on it holds here too.
    /// The first repetition near a bound is the one looked at.
    pub(super) fn neighbours(&self, grammar: &Grammar, longest_token: usize) -> Vec<(Key, usize)> {
        let links = self.key.parents.iter().zip(&self.parents).enumerate();
        for (level, (link, parent)) in links {
            let (Some(link), Some(parent)) = (link, parent) else {
                break;
            };
            if parent.kind != Kind::Repeat {
                continue;
            }
            let repeat = grammar.repeat(parent.a);
            let unit = grammar.match_bytes(repeat.rule);
            let cap = count_cap(longest_token, unit);
            let (needed, room) = (link.count >> 16, link.count & ROOM);
            if !(needed > 0 && needed < cap || room < cap) {
                continue;
            }
            let far = (needed, cap);
            let before = (1..=COUNTS_BEFORE).map(|back| {
                (
                    if needed > 0 {
                        (needed + back).min(cap)
                    } else {
                        0
                    },
                    (room + back).min(cap),
                )
            });
            let mut found: Vec<(Key, usize)> = Vec::new();
            for (other_needed, other_room) in std::iter::once(far).chain(before) {
                let apart = [(needed, other_needed), (room, other_room)]
                    .into_iter()
                    .filter(|(ours, theirs)| ours != theirs)
                    .map(|(ours, theirs)| ours.min(theirs))
                    .min();
                let Some(apart) = apart else {
                    continue;
                };
                let fewest_bytes = (apart as usize).saturating_sub(1) * unit;
                let mut other = self.key;
                let other_link = other.parents[level].as_mut().expect("a link at this level");
                other_link.count = other_needed << 16 | other_room;
                if fewest_bytes > 0 && found.iter().all(|&(key, _)| key != other) {
                    found.push((other, fewest_bytes));
                }
            }
            return found;
        }
        Vec::new()
    }

    /// Adds the seeds of `item` of the last row of `history` to `seeds`
    /// (none for items that scan no text). Counts of repetitions are keyed
    /// up to what a token of `longest_token` bytes can tell apart.
    pub(super) fn add(
        grammar: &Grammar,
        history: &History,
        item: Item,
        longest_token: usize,
        seeds: &mut Vec<Seed>,
    ) {
        let (rule, kind, state) = match item.kind {
            Kind::Node if grammar.scans(item.a) => {
                let rule = grammar.node_rule(item.a);
                (rule, KeyKind::Node, item.a - grammar.rule(rule).body)
            }
            Kind::Free => (item.a, KeyKind::Free, item.aux),
            Kind::TokenFree => (item.a, KeyKind::TokenFree, 0),
            _ => return,
        };
        let rule_hash = if kind == KeyKind::Node {
            grammar.rule(rule).hash
        } else {
            grammar.free_hash(rule)
        };
        let seed = Self {
            key: Key {
                rule_hash,
                kind,
                state,
                parents: [None; MAX_PARENTS],
            },
            rule,
            item,
            parents: [None; MAX_PARENTS],
        };
        // (seed, its topmost item, how many parents it has)
        let mut open = vec![(seed, item, 0)];
        while let Some((seed, top, level)) = open.pop() {
            // A short rule is covered with what waits for it; any rule is
            // where only counted repetitions wait for it (`(\S+\s+){0,99}`:
            // a token running past a word goes on in the next match, not
            // to the full-state check at every step). A match with a limit
            // is never covered: its entries end with it, so that what a
            // token leaves of it is known (see `limits.rs`).
            let limited = grammar.rule(seed.rule).is_limited();
            let waiting = if item.kind == Kind::Node && level < MAX_PARENTS && !limited {
                waiting_parents(grammar, history, top, seed.rule, longest_token).filter(|found| {
                    grammar.is_short(seed.rule)
                        || found
                            .iter()
                            .all(|(parent, _, _)| parent.kind == Kind::Repeat)
                })
            } else {
                None
            };
            let Some(waiting) = waiting else {
                seeds.push(seed);
                continue;
            };
            for (parent, owner, link) in waiting {
                let mut above = seed;
                above.key.parents[level] = Some(link);
                above.parents[level] = Some(parent);
                above.rule = owner;
                open.push((above, parent, level + 1));
            }
        }
    }
}

/// The rules every item of the last row that waits for them is a seed of
/// the mask at (a node that scans, in a rule without limits), where the
/// grammar has no lookahead: such a seed's walk enters the rule itself, so
/// the items at the rule's start that this row predicted need no entry of
/// their own (see [`entered_at_start`]).
pub(super) fn entered_by_seeds(grammar: &Grammar, history: &History) -> FxHashSet<u32> {
    if grammar.has_lookahead() {
        return FxHashSet::default();
    }
    let mut by_seeds: FxHashMap<u32, bool> = FxHashMap::default();
    for item in history.last() {
        let seed = item.kind == Kind::Node
            && grammar.scans(item.a)
            && !grammar.rule(grammar.node_rule(item.a)).is_limited();
        awaited_rules(grammar, item, |rule| {
            *by_seeds.entry(rule).or_insert(true) &= seed;
        });
    }
    by_seeds
        .into_iter()
        .filter(|&(rule, by_seeds)| by_seeds && !grammar.rule(rule).is_limited())
        .map(|(rule, _)| rule)
        .collect()
}

/// Whether `item` is at the start of a rule of `entered` that the last row
/// predicted. Each item that waits for the rule is a seed whose walk
/// predicts the rule as the row did and follows its match on into the
/// waiting item, which is all the item's own entry would find, and more:
/// where the rule ends inside a token, the walk knows what comes after.
/// (Followed back through the items that predicted it, a dropped item
/// reaches a seed that is kept: the first item to predict a rule came
/// before it in the row.)
pub(super) fn entered_at_start(
    grammar: &Grammar,
    history: &History,
    item: Item,
    entered: &FxHashSet<u32>,
) -> bool {
    if item.kind != Kind::Node || item.origin as usize + 1 != history.rows() {
        return false;
    }
    let rule = grammar.node_rule(item.a);
    grammar.rule(rule).body == item.a && entered.contains(&rule)
}

/// The items that wait for `rule`, begun by `child`: each with its rule
/// and its place in a [`Key`]. `None` if none or more than [`MAX_WAITING`]
/// wait, or one is not at a node or in a counted repetition.
fn waiting_parents(
    grammar: &Grammar,
    history: &History,
    child: Item,
    rule: u32,
    longest_token: usize,
) -> Option<Vec<(Item, u32, Parent)>> {
    let mut found = Vec::new();
    for &parent in history.row(child.origin as usize) {
        if parent.ctx != child.pred {
            continue;
        }
        let (node, repeat) = match parent.kind {
            Kind::Node => {
                let waits = grammar.waits(parent.a)
                    && grammar.edges(parent.a).iter().any(|e| e.calls(rule));
                if !waits {
                    continue;
                }
                (parent.a, None)
            }
            Kind::Repeat => {
                let repeat = grammar.repeat(parent.a);
                if repeat.rule != rule || !repeat.below_max(parent.aux) {
                    continue;
                }
                (grammar.edge_node(parent.a), Some(repeat))
            }
            Kind::Arm | Kind::TokenArm if grammar.pattern(parent.aux).arm == rule => return None,
            Kind::Root | Kind::SeedEnd | Kind::Wild if parent.a == rule => return None,
            _ => continue,
        };
        if found.len() == MAX_WAITING {
            return None;
        }
        let owner = grammar.node_rule(node);
        found.push((
            parent,
            owner,
            link(grammar, parent, node, repeat, rule, longest_token),
        ));
    }
    (!found.is_empty()).then_some(found)
}

/// The place in a [`Key`] of `parent`, an item at `node` (in the counted
/// repetition `repeat` if any) that waits for the short rule `rule`. An item
/// at a node is known by where the match takes it: all a walk from the
/// seed sees of it, so the items of a property name's every prefix that
/// wait for one escaped character share the entry. Counts of repetitions
/// are kept up to what a token of `longest_token` bytes can tell apart.
pub(super) fn link(
    grammar: &Grammar,
    parent: Item,
    node: u32,
    repeat: Option<Repeat>,
    rule: u32,
    longest_token: usize,
) -> Parent {
    let record = grammar.rule(grammar.node_rule(node));
    let Some(repeat) = repeat else {
        let mut targets = (grammar.edges(node).iter())
            .filter(|edge| edge.calls(rule))
            .map(|edge| edge.target);
        let first = targets.next();
        let (at, place) = match first {
            Some(target) if targets.all(|other| other == target) => (target, Place::After),
            _ => (node, Place::AtNode),
        };
        return Parent {
            rule_hash: record.hash,
            node: at - record.body,
            place,
            count: 0,
        };
    };
    let cap = count_cap(longest_token, grammar.match_bytes(repeat.rule));
    let (needed, room) = repeat.class(parent.aux, cap);
    Parent {
        rule_hash: record.hash,
        node: node - record.body,
        place: Place::Repeat(parent.a - grammar.first_edge(node)),
        count: needed << 16 | room,
    }
}
