//! Building one item's mask-cache entry: a walk of the token trie with a
//! parse seeded with the item alone, which sorts every token into
//! accepted, rejected and uncertain.
//!
//! Tokens are kept as ranges of trie ranks while walking (a subtree is one
//! range), so a walk costs the trie nodes it visits, not the tokens it
//! accepts; the entry is made from the smaller of the accepted tokens and
//! the rest.
//!
//! What a walk finds below a trie node depends only on the configuration
//! there ([`StepMemo`]). Walks from seeds of one rule often reach the same
//! configurations — a property name's next character leads, whatever the
//! name so far, into the same "any other name" state — so the outcome
//! below a node reached in a configuration that recurs (an earlier walk
//! met it, or this one reached it at another subtree) is recorded once and
//! replayed by later walks: the node's subtree then costs its ranges
//! instead of its nodes. Most nodes a walk visits need no Earley step at
//! all: a memoized step settles them (dead, or into a configuration that
//! loops over everything below), and the walk moves on to the next
//! sibling.

use std::sync::Arc;

use super::item::Item;
use super::memo::{Settled, StepMemo, Subtree, TailVerdicts, WalkKind};
use super::memos::Masking;
use super::parse::Parse;
use super::seed::Seed;
use super::walk::{Cost, MaskError};
use crate::cache::{Classified, Group, KeyKind, TokenSet};
use crate::tails::{RunTails, Tails};
use crate::trie::{PLAIN_CLASSES, TokenTrie, byte_class};
use crate::zeros::written_zeros;

/// Bit 63 of a group's ends: the full state decides (the token runs 63
/// bytes or more past the place, or completes a dispatch's trigger).
const FULL_CHECK: u64 = 1 << 63;

/// The fewest trie nodes a subtree must have for its outcome to be
/// recorded: replaying a smaller one saves less than recording costs.
const MIN_RECORDED_NODES: usize = 32;

/// The fewest tokens with tails below a node for a walk to sort the tails
/// from the node's configuration (a walk of their trie, some thousand
/// nodes for Llama 3.1) rather than walk the node's subtree.
const MIN_TAIL_TOKENS: usize = 256;

/// The fewest distinct configurations along a chain of plain characters
/// that comes back into itself for the tokens that are not plain to be
/// sorted by where their plain text stops ([`sorts_by_chain`]): that goes
/// over every such token (5,000 for Llama 3.1), where a walk of a short
/// chain into a loop (a string's first character, then its inside) visits
/// a few hundred nodes, sorting tails where the loop begins. A chain the
/// count ends is sorted from two configurations on: the walk of its last
/// characters goes on past the string's close (6,900 nodes one character
/// before `maxLength`).
const MIN_CHAIN: usize = 4;

/// The most distinct configurations along the chain for [`sorts_by_chain`]:
/// it sorts the tails from each that some token's plain text stops at
/// (about 300 nodes each where the string may close), where a walk of a
/// long count's tokens visits about as many nodes as of a short one's and
/// reuses entries near the bounds (`maxLength` 100: 48 sortings, 13,600
/// nodes, against 7,800 for the walk).
const MAX_CHAIN: usize = 24;

/// The most configurations of a chain whose tails [`sorts_by_chain`] sorts
/// for a walk where another count's entry serves the short tokens
/// ([`Over::shortest`]): each sorting is about 300 nodes, where that walk
/// visits only the tokens long enough to reach the bound (22 characters
/// before `maxLength` 100, its first sorting of every configuration left
/// walked 6,400 nodes, the walk of the long tokens 2,600).
const MAX_NEW_SORTINGS: usize = 4;

/// A walk near a bound of a count takes another count's entry for the
/// tokens too short to tell them apart where the longer ones lie on at
/// most this share of the trie's nodes (one in `OTHER_SHARE`): past it,
/// the walk of every token costs about as much.
const OTHER_SHARE: usize = 4;

/// What `seed` alone does with every token: walks the token trie with a
/// parse seeded with it (and the items above it that it covers). A token
/// whose bytes stay viable is accepted; one that dies after the seed's rule
/// could have ended is uncertain, grouped with the places it could end; the
/// rest are rejected. Adds what it did to `cost`, and stops past `budget`
/// Earley items.
pub(super) fn classify(
    masking: Masking<'_>,
    seed: &Seed,
    budget: u64,
    cost: &mut Cost,
) -> Result<Classified, MaskError> {
    let (grammar, memos) = (masking.grammar, masking.memos);
    let trie = masking.vocabulary.trie();
    let parents: Vec<Item> = seed.parents.iter().rev().flatten().copied().collect();
    let mut matcher = Parse::seeded(grammar, seed.item, &parents, seed.rule);
    // The parse is in the newest snapshot of a lazy grammar, which has
    // every rule an earlier walk built (the user's snapshot may not yet).
    let built = matcher.grammar.built_rules();
    let kept = (memos.step_store()).take(seed.rule, parents.len(), built);
    let mut steps = StepMemo::new(&matcher, trie.max_depth(), kept);
    let mut found = Found::default();
    found.kind.stop_at_arms = seed.key.kind == KeyKind::Free;
    // Near a bound of a count, the cached entry of another count holds for
    // the tokens too short to tell the two apart: only the long ones are
    // walked.
    let skip = skip_at_once(&mut steps, &mut matcher, trie);
    let cache = masking.vocabulary.mask_cache();
    let other = (seed.neighbours(grammar, trie.max_depth()).into_iter())
        .filter(|&(_, bytes)| {
            skip.is_some() || trie.nodes_reaching(bytes) <= trie.len() / OTHER_SHARE
        })
        .find_map(|(key, bytes)| Some((cache.cached_entry(&key)?, bytes)));
    found.kind.skips = skip.as_ref().map_or(0, |(_, skip)| skip.classes());
    let taken =
        skip.as_ref()
            .filter(|&&(chars, _)| chars > 0)
            .map(|&(chars, ref skip)| match *skip {
                Skip::Plain => Taken::Plain(trie.plain_within(chars)),
                Skip::Classes(classes) | Skip::Runs(classes) => {
                    Taken::Classes(trie.class_within(classes, chars))
                }
            });
    // Inside a bounded string no configuration loops: a count goes down.
    let tails = match &skip {
        None => Some(trie.tails()),
        Some((chars, Skip::Plain)) => (*chars >= trie.longest_plain()).then(|| trie.tails()),
        Some((_, Skip::Classes(..) | Skip::Runs(..))) => None,
    };
    let over = Over {
        trie,
        offset: 0,
        tails,
        skip: skip.as_ref().map(|(_, skip)| skip),
        shortest: other.as_ref().map_or(0, |&(_, bytes)| bytes),
        budget,
    };
    // Where plain characters lead through one chain of configurations
    // (a string, bounded or not), the tokens that are not plain are sorted
    // by where their plain text stops and their tails; where the bytes of
    // a counted class do, those that begin with one by where their run of
    // them stops; else walked.
    let chained = matches!(skip, Some((_, Skip::Plain)))
        && sorts_by_chain(over, &mut steps, &mut matcher, &mut found, cost)?;
    let runs = match skip {
        Some((bytes, Skip::Classes(classes))) => {
            // The tails' tries are walked whole.
            let kind = WalkKind {
                skips: 0,
                ..found.kind
            };
            sort_runs(over, (bytes, classes), kind, &mut steps, &mut matcher, cost)?
        }
        _ => None,
    };
    if !chained {
        // The tokens that begin with a class byte are sorted by their runs
        // after the walk of the rest, which passes none to another entry.
        let skip_runs;
        let over = match &runs {
            Some(runs) => {
                skip_runs = Skip::Runs(runs.classes);
                Over {
                    skip: Some(&skip_runs),
                    shortest: 0,
                    ..over
                }
            }
            None => over,
        };
        walk::<true>(over, &mut steps, &mut matcher, &mut found, cost)?;
    }
    if let Some(runs) = &runs {
        runs.sort(&steps, &mut found);
    }
    cost.items += matcher.work;
    matcher.built()?;
    // Tagged with the snapshot the walk ended in: one that has every node
    // the memo names.
    let built = matcher.grammar.built_rules();
    (memos.step_store()).keep(seed.rule, parents.len(), built, steps);
    Ok(match other {
        Some((other, _)) if !chained && runs.is_none() => {
            found.over_other(&other, taken.as_ref(), trie)
        }
        _ => found.into_classified(taken, trie),
    })
}

/// Sorts the tokens that are not plain text ([`Tails`]' listed ones) where
/// every plain character leads the walk's root along one chain of
/// configurations ([`StepMemo::chain`]): a token whose plain text
/// stops after `p` characters goes where its tail goes from the chain's
/// `p`th configuration, and one that is plain text all through is viable
/// if the chain is that long. The tails are sorted once per configuration
/// of the chain that some token's plain text stops at (a walk of their
/// trie, kept with the memo: the next step of a bounded string meets the
/// same configurations), instead of a walk of the trie above the tokens
/// that is as deep as the count allows (8,000 nodes and more for
/// `maxLength` 10). Whether it sorted them: not where plain characters
/// lead apart, where the chain is too short or too long for sorting to pay
/// ([`MIN_CHAIN`], [`MAX_CHAIN`]), nor where another entry serves the short
/// tokens and more than [`MAX_NEW_SORTINGS`] of its configurations are new;
/// an error past the budget.
fn sorts_by_chain(
    over: Over<'_>,
    steps: &mut StepMemo,
    matcher: &mut Parse,
    found: &mut Found,
    cost: &mut Cost,
) -> Result<bool, MaskError> {
    let tails = over.trie.tails();
    let Some((chain, distinct)) = steps.chain(matcher, PLAIN_CLASSES, tails.longest_lead()) else {
        return Ok(false);
    };
    let cycles = chain.len() > distinct;
    if distinct > MAX_CHAIN || distinct < if cycles { MIN_CHAIN } else { 2 } {
        return Ok(false);
    }
    // The tails' trie is walked whole.
    let kind = WalkKind {
        skips: 0,
        ..found.kind
    };
    let unsorted: Vec<usize> = (0..chain.len())
        .filter(|&lead| {
            tails.place_after(lead) && steps.tail_verdicts_of(chain[lead], kind).is_none()
        })
        .collect();
    // Where another entry serves the short tokens, the walk of the long
    // ones costs less than many sortings.
    if over.shortest > 0 && unsorted.len() > MAX_NEW_SORTINGS {
        return Ok(false);
    }
    for lead in unsorted {
        steps.stand_on(&chain[1..=lead]);
        let verdicts = tail_verdicts(tails.trie(), lead, kind, over.budget, steps, matcher, cost)?;
        steps.keep_tail_verdicts(lead, kind, verdicts);
    }
    for (rank, lead, place) in tails.leads() {
        if lead >= chain.len() {
            continue;
        }
        match place {
            None => found.accept((rank, rank + 1)),
            Some((at, tail)) => {
                let verdicts = (steps.tail_verdicts_of(chain[lead], kind))
                    .expect("sorted above for every place within the chain");
                match verdicts.of(tail) {
                    None => found.accept((rank, rank + 1)),
                    Some(ends) => found.group(rank, rank + 1, shifted(ends, at)),
                }
            }
        }
    }
    Ok(true)
}

/// Prepares the tokens that begin with a byte of the counted classes
/// `classes` — the count runs out after `bytes` of them — to be sorted,
/// for walks of `kind`, by where their run of class bytes stops
/// ([`RunTails`]): a token whose run has `p` bytes goes where its tail
/// goes from the `p`th configuration of the count. From each configuration the stops are stepped once and the
/// tails after those it takes sorted (a walk of their trie); both are
/// kept with the memo, so that every step along the count meets them
/// again, where a walk of the trie above the tokens (10,000 nodes and
/// more for `[A-Za-z0-9 .]{1,32}`) meets the configurations at other
/// nodes each step. `None` where another entry serves the short tokens and
/// more than [`MAX_NEW_SORTINGS`] configurations are new (the walk of the
/// long ones costs less); an error past the budget.
fn sort_runs(
    over: Over<'_>,
    (bytes, classes): (usize, u64),
    kind: WalkKind,
    steps: &mut StepMemo,
    matcher: &mut Parse,
    cost: &mut Cost,
) -> Result<Option<SortedRuns>, MaskError> {
    let Some((chain, _)) = steps.chain(matcher, classes, bytes) else {
        return Ok(None);
    };
    let tails = over.trie.run_tails(classes);
    let unsorted: Vec<usize> = (1..chain.len())
        .filter(|&lead| {
            tails.has_lead(lead) && steps.run_verdicts(chain[lead], kind, classes).is_none()
        })
        .collect();
    if over.shortest > 0 && unsorted.len() > MAX_NEW_SORTINGS {
        return Ok(None);
    }
    for lead in unsorted {
        steps.stand_on(&chain[1..=lead]);
        let mut by_stop = Vec::with_capacity(tails.stops().len());
        for (stop, byte) in tails.stops().enumerate() {
            let taken = steps.step(matcher, lead + 1, byte);
            by_stop.push(if taken {
                let trie = tails.stop_tails(stop).trie();
                Some(tail_verdicts(
                    trie,
                    lead,
                    kind,
                    over.budget,
                    steps,
                    matcher,
                    cost,
                )?)
            } else {
                None
            });
        }
        steps.keep_run_verdicts(chain[lead], kind, classes, by_stop.into());
    }
    Ok(Some(SortedRuns {
        tails,
        chain,
        classes,
        kind,
    }))
}

/// The runs of a counted class, their tails sorted from every
/// configuration along the count ([`sort_runs`]).
struct SortedRuns {
    tails: Arc<RunTails>,
    /// Where any `p` class bytes lead the walk's root, the root first.
    chain: Vec<u32>,
    classes: u64,
    /// The kind of walk that sorted the tails.
    kind: WalkKind,
}

impl SortedRuns {
    /// Sorts the tokens that begin with a class byte into `found`, which
    /// is put in order of rank after.
    fn sort(&self, steps: &StepMemo, found: &mut Found) {
        let tails = &self.tails;
        // Per lead: the verdicts from there, once looked up (runs of one
        // stop go through every lead).
        let mut by_lead: Vec<Option<&[Option<TailVerdicts>]>> = vec![None; self.chain.len()];
        for run in tails.runs() {
            // A longer run is refused: the count ran out.
            if run.lead >= self.chain.len() {
                continue;
            }
            let by_stop = *by_lead[run.lead].get_or_insert_with(|| {
                (steps.run_verdicts(self.chain[run.lead], self.kind, self.classes))
                    .expect("sorted for every lead within the chain")
            });
            // A stop refused there: every token of the run is.
            let Some(verdicts) = &by_stop[run.stop] else {
                continue;
            };
            for (rank, tail) in tails.tokens(run, tails.stop_tails(run.stop)) {
                match verdicts.of(tail) {
                    None => found.accept((rank, rank + 1)),
                    Some(ends) => found.group(rank, rank + 1, shifted(ends, run.lead)),
                }
            }
        }
        found.sort_ranks();
    }
}

/// What a walk from the seed's configuration takes at once and skips, and
/// up to how many characters or bytes: plain tokens sorted by their number
/// of characters (the inside of a bounded string), or else the tokens of a
/// counted character class.
fn skip_at_once(
    steps: &mut StepMemo,
    matcher: &mut Parse,
    trie: &TokenTrie,
) -> Option<(usize, Skip)> {
    if let Some(chars) = steps.plain_run(matcher, trie.longest_plain()) {
        return Some((chars, Skip::Plain));
    }
    // Only where the count runs out within a token but not at once:
    // unbounded classes loop, and the walk takes their subtrees at once; a
    // literal's byte is one token's first.
    let classes = steps.counted_classes(matcher);
    (classes != 0)
        .then(|| steps.class_run(matcher, classes, trie.max_depth()))
        .flatten()
        .filter(|bytes| (2..trie.max_depth()).contains(bytes))
        .map(|bytes| (bytes, Skip::Classes(classes)))
}

/// The tokens a walk takes at once by their length and skips.
enum Skip {
    /// Plain tokens ([`TokenTrie::plain_within`]).
    Plain,
    /// The tokens of these ASCII byte classes ([`TokenTrie::class_within`]).
    Classes(u64),
    /// Those, and the rest of the tokens that begin with one of their bytes:
    /// the subtrees of the root's children of these classes, whose tokens
    /// [`SortedRuns`] sorts.
    Runs(u64),
}

impl Skip {
    /// The classes skipped, as [`WalkKind::skips`] holds them.
    fn classes(&self) -> u64 {
        match *self {
            Self::Plain => PLAIN_CLASSES,
            Self::Classes(classes) | Self::Runs(classes) => classes,
        }
    }

    /// Whether every token of `node`'s subtree is skipped.
    fn pure(&self, trie: &TokenTrie, node: usize) -> bool {
        match *self {
            Self::Plain => trie.pure(node),
            Self::Classes(classes) => trie.of_classes(node, classes),
            // Below another first byte, no path is of the classes.
            Self::Runs(classes) => {
                let byte = trie.byte(node);
                trie.depth(node) == 1 && byte.is_ascii() && classes & 1 << byte_class(byte) != 0
            }
        }
    }
}

/// The tokens a walk took at once, in mask layout.
enum Taken<'t> {
    Plain(&'t [u32]),
    Classes(Arc<[u32]>),
}

/// The trie a walk goes over, from where, and what it may spend.
#[derive(Clone, Copy)]
struct Over<'t> {
    trie: &'t TokenTrie,
    /// The depth of the current path the walk starts below.
    offset: usize,
    /// The vocabulary's tails, for a walk of its trie that sorts tokens by
    /// them.
    tails: Option<&'t Tails>,
    /// The tokens the walk takes at once and skips, over the vocabulary's
    /// trie.
    skip: Option<&'t Skip>,
    /// The fewest bytes of the tokens the walk sorts, over the
    /// vocabulary's trie: the subtrees of shorter tokens are passed to
    /// another entry's verdicts ([`Found::over_other`]).
    shortest: usize,
    /// The most Earley items the parse may build.
    budget: u64,
}

/// Walks the trie of `over` from the configuration at its offset on
/// the current path, sorting its tokens into `found`. Over the
/// vocabulary's trie (`VOCABULARY`, from the seed) what is found below
/// nodes is recorded for later walks, and, given its tails, the tokens
/// below a node whose
/// configuration every plain character leads back to are sorted by
/// their tails; else `trie` is the trie of the tails
/// ([`crate::tails::Tails`]). Two copies of the loop, so that neither
/// calls itself.
fn walk<const VOCABULARY: bool>(
    over: Over<'_>,
    steps: &mut StepMemo,
    matcher: &mut Parse,
    found: &mut Found,
    cost: &mut Cost,
) -> Result<(), MaskError> {
    let Over { trie, offset, .. } = over;
    // Per depth below the walk's root: the places (bit j: after j
    // bytes) the rule can end up to there.
    let mut ends = vec![0u64];
    let mut node = 0;
    while node < trie.len() {
        cost.nodes += 1;
        found.end_recording(node, steps);
        if over.shortest > 0 && trie.depth(node) + trie.height(node) < over.shortest {
            found.pass(trie.subtree_ranks(node));
            node = trie.end(node);
            continue;
        }
        if let Some(skip) = over.skip
            && skip.pure(trie, node)
        {
            node = trie.end(node);
            continue;
        }
        let local = trie.depth(node);
        let depth = offset + local;
        ends.truncate(local);
        let above = ends[local - 1];
        let settled = steps.settled(
            depth,
            trie.byte(node),
            trie.classes_below(node),
            trie.utf8(node),
            found.kind.stop_at_arms,
        );
        let viable = match settled {
            Some(Settled::Whole) => {
                found.accept(trie.subtree_ranks(node));
                node = trie.end(node);
                continue;
            }
            Some(Settled::Dead) => false,
            None => steps.step(matcher, depth, trie.byte(node)),
        };
        let (met_before, recurring) =
            if VOCABULARY && viable && depth < 63 && trie.end(node) - node >= MIN_RECORDED_NODES {
                steps.recurring(depth)
            } else {
                (None, None)
            };
        if !viable {
            let (start, end) = trie.subtree_ranks(node);
            found.group(start, end, above);
            node = trie.end(node);
        } else if let Some(subtree) = met_before.and_then(|at| steps.subtree(at, node, found.kind))
        {
            found.replay(subtree, above);
            node = trie.end(node);
        } else {
            // What a walk that passes short tokens finds below a node is
            // not all there is to it.
            if let Some(config) = recurring.filter(|_| over.shortest == 0) {
                found.record(config, node, trie.end(node), above);
            }
            if found.kind.stop_at_arms && steps.at_arm(depth, matcher) {
                let (start, end) = trie.subtree_ranks(node);
                found.group(start, end, above | FULL_CHECK);
                node = trie.end(node);
            } else {
                found.accept(trie.own_ranks(node));
                let here = if steps.can_terminate(depth, matcher) {
                    1 << local.min(63)
                } else {
                    0
                };
                ends.push(above | here);
                let below = trie.classes_below(node);
                if below != 0
                    && steps.all_viable_below(
                        matcher,
                        depth,
                        below,
                        trie.height(node),
                        trie.utf8(node),
                    )
                {
                    // Every token below is viable: the whole subtree is
                    // accepted (the inside of a string, free text).
                    found.accept(trie.ranks_below(node));
                    node = trie.end(node);
                } else if VOCABULARY
                    && over.tails.is_some()
                    && !steps.plain_never_loops(depth)
                    && sorts_by_tails(over, node, above | here, steps, matcher, found, cost)?
                {
                    node = trie.end(node);
                } else {
                    node += 1;
                }
            }
        }
        if matcher.work > over.budget {
            cost.items += matcher.work;
            return Err(MaskError::BudgetExceeded {
                budget: over.budget,
            });
        }
    }
    found.end_recording(node, steps);
    Ok(())
}

/// Sorts the tokens below `node` of the vocabulary's trie (reached
/// with `above`, the places the rule can end up to it) by their tails,
/// if the configuration there is one that every plain character leads
/// back to ([`StepMemo::plain_loops`]): the plain text of a token
/// keeps it there, so its tail decides. The tails are sorted once per
/// configuration, by a walk of their trie from it. Whether it sorted
/// them: not where the path is not whole characters, nor where only
/// plain tokens are below (taken whole, if at all), nor, the first
/// time, for fewer than [`MIN_TAIL_TOKENS`] tokens (walking them costs
/// less). Out of line: the walk's loop is hot, and this is asked at few
/// of its nodes.
#[inline(never)]
fn sorts_by_tails(
    over: Over<'_>,
    node: usize,
    above: u64,
    steps: &mut StepMemo,
    matcher: &mut Parse,
    found: &mut Found,
    cost: &mut Cost,
) -> Result<bool, MaskError> {
    let (vocabulary, Some(tails)) = (over.trie, over.tails) else {
        return Ok(false);
    };
    if !vocabulary.whole(node) || vocabulary.classes_below(node) & !PLAIN_CLASSES == 0 {
        return Ok(false);
    }
    let depth = vocabulary.depth(node);
    // Not asked below a small subtree (it may take steps the walk would
    // not): it could not hold enough tokens to sort their tails.
    let small = vocabulary.end(node) - node < MIN_TAIL_TOKENS;
    if (small && !steps.plain_loop_known(depth)) || !steps.plain_loops(matcher, depth) {
        return Ok(false);
    }
    let below = vocabulary.ranks_below(node);
    // The tails' trie is walked whole, whatever the walk skips.
    let kind = WalkKind {
        skips: 0,
        ..found.kind
    };
    if steps.tail_verdicts(depth, kind).is_none() {
        if tails.count(below) < MIN_TAIL_TOKENS {
            return Ok(false);
        }
        let verdicts = tail_verdicts(tails.trie(), depth, kind, over.budget, steps, matcher, cost)?;
        steps.keep_tail_verdicts(depth, kind, verdicts);
    }
    let verdicts = steps.tail_verdicts(depth, kind).expect("kept above");
    // The tokens not listed are plain text; a walk that skips plain
    // tokens has them already (the node's configuration loops, so the
    // walk's first one does: every plain token is taken).
    let skips_plain = found.kind.skips != 0;
    let (start, end) = below;
    let mut plain_from = start;
    for (rank, place) in tails.from(below, depth) {
        if !skips_plain {
            found.accept((plain_from, rank));
        }
        plain_from = rank + 1;
        match place.map(|(at, tail)| (at, verdicts.of(tail))) {
            // Plain text from the node on, or a tail accepted.
            None | Some((_, None)) => found.accept((rank, rank + 1)),
            Some((at, Some(ends))) => found.group(rank, rank + 1, above | shifted(ends, at)),
        }
    }
    if !skips_plain {
        found.accept((plain_from, end));
    }
    Ok(true)
}

/// What the tails of `trie` (a trie of tails) do from the configuration
/// at `depth` of the current path, for walks of `kind`: a walk of their
/// trie.
fn tail_verdicts(
    trie: &TokenTrie,
    depth: usize,
    kind: WalkKind,
    budget: u64,
    steps: &mut StepMemo,
    matcher: &mut Parse,
    cost: &mut Cost,
) -> Result<TailVerdicts, MaskError> {
    let mut sorted = Found {
        kind,
        ..Found::default()
    };
    let over = Over {
        trie,
        offset: depth,
        tails: None,
        skip: None,
        shortest: 0,
        budget,
    };
    walk::<false>(over, steps, matcher, &mut sorted, cost)?;
    Ok(TailVerdicts::new(
        trie.universe_len(),
        &sorted.accepted,
        &sorted.groups,
    ))
}

/// The places `ends` (bit j: after j bytes) `by` bytes further on; places
/// 63 bytes or more on are [`FULL_CHECK`], which stays as it is.
fn shifted(ends: u64, by: usize) -> u64 {
    let places = ends & !FULL_CHECK;
    let far = places != 0 && (by >= 63 || places >> (63 - by) != 0);
    let near = if by >= 63 { 0 } else { places << by };
    (ends & FULL_CHECK) | (near & !FULL_CHECK) | if far { FULL_CHECK } else { 0 }
}

/// The tokens a walk has sorted so far.
#[derive(Default)]
struct Found {
    /// How the walk sorts tokens: whether tokens that complete a
    /// dispatch's trigger are left to the full state (free-text entries
    /// are keyed without the dispatch's arms), whether plain tokens are
    /// skipped.
    kind: WalkKind,
    /// Accepted trie ranks, as sorted disjoint ranges.
    accepted: Vec<(u32, u32)>,
    /// How many ranks `accepted` holds.
    count: usize,
    /// Uncertain tokens (rejected ones are left out).
    groups: Vec<Group>,
    /// Ranks passed to another entry's verdicts, as sorted disjoint
    /// ranges ([`Over::shortest`]).
    passed: Vec<(u32, u32)>,
    recording: Option<Recording>,
}

/// The outcome below one trie node being recorded for later walks.
struct Recording {
    config: u32,
    node: usize,
    /// Where the node's subtree ends in the trie.
    end: usize,
    /// The places the rule could end above the node, left out of the
    /// recorded groups (another walk may arrive with others).
    above: u64,
    /// Where the node's accepted ranges start in [`Found::accepted`].
    first: usize,
    /// The node's groups, rejected tokens included (ends 0 here may not be
    /// 0 under another walk's `above`).
    groups: Vec<Group>,
}

impl Found {
    /// The entry: the accepted ranks (and `taken`, the tokens taken at
    /// once if the walk skipped them and accepts some, with the ranks of
    /// the others) and the uncertain groups.
    fn into_classified(self, taken: Option<Taken<'_>>, trie: &TokenTrie) -> Classified {
        let accepted = match taken {
            Some(Taken::Plain(plain)) => {
                TokenSet::from_ranks_and(&self.accepted, plain, trie.not_plain(), trie)
            }
            Some(Taken::Classes(taken)) => TokenSet::from_ranks_over(&self.accepted, &taken, trie),
            None => TokenSet::from_ranks(&self.accepted, self.count, trie),
        };
        Classified {
            accepted,
            groups: self.groups.into(),
        }
    }

    /// The entry of a walk that passed the ranks of short tokens: `other`'s
    /// verdicts on those, the walk's on the rest, of which it took `taken`
    /// at once (if it skipped them).
    fn over_other(
        self,
        other: &Classified,
        taken: Option<&Taken<'_>>,
        trie: &TokenTrie,
    ) -> Classified {
        let ranked = trie.ranked();
        let mut others = written_zeros(trie.universe().len());
        other
            .accepted
            .add_to(&mut others, trie.universe(), &mut Vec::new());
        // `other`'s verdicts copied on the ranks passed, or cleared from the
        // rest, whichever are fewer.
        let passed: usize = self
            .passed
            .iter()
            .map(|&(start, end)| (end - start) as usize)
            .sum();
        let mut bits = if 2 * passed < ranked.len() {
            let mut bits = written_zeros(others.len());
            for &(start, end) in &self.passed {
                for &id in &ranked[start as usize..end as usize] {
                    let (word, bit) = (id.as_usize() / 32, 1 << (id.as_usize() % 32));
                    bits[word] |= others[word] & bit;
                }
            }
            bits
        } else {
            let total = u32::try_from(ranked.len()).expect("ranks fit in u32");
            let mut walked_from = 0;
            for &(start, end) in self.passed.iter().chain([&(total, total)]) {
                for &id in &ranked[walked_from as usize..start as usize] {
                    others[id.as_usize() / 32] &= !(1 << (id.as_usize() % 32));
                }
                walked_from = end;
            }
            others
        };
        for &(start, end) in &self.accepted {
            for &id in &ranked[start as usize..end as usize] {
                bits[id.as_usize() / 32] |= 1 << (id.as_usize() % 32);
            }
        }
        // The tokens taken at once are sorted whole, passed or not.
        let taken: &[u32] = match taken {
            Some(Taken::Plain(bits)) => bits,
            Some(Taken::Classes(bits)) => bits,
            None => &[],
        };
        for (word, taken) in bits.iter_mut().zip(taken) {
            *word |= taken;
        }
        let mut groups = self.groups;
        let mut passed = self.passed.as_slice();
        for group in &other.groups {
            while passed.first().is_some_and(|&(_, end)| end <= group.start) {
                passed = &passed[1..];
            }
            for &(start, end) in passed.iter().take_while(|&&(start, _)| start < group.end) {
                groups.push(Group {
                    start: start.max(group.start),
                    end: end.min(group.end),
                    ends: group.ends,
                });
            }
        }
        groups.sort_unstable_by_key(|group| group.start);
        Classified {
            accepted: TokenSet::new(bits, None, trie.universe(), trie.universe_len()),
            groups: groups.into(),
        }
    }

    /// Puts the accepted ranges and the groups in order of rank, for a
    /// walk that sorted tokens out of it ([`SortedRuns`]).
    fn sort_ranks(&mut self) {
        self.accepted.sort_unstable();
        self.accepted.dedup_by(|next, last| {
            let joined = last.1 == next.0;
            if joined {
                last.1 = next.1;
            }
            joined
        });
        self.groups.sort_unstable_by_key(|group| group.start);
    }

    /// Passes ranks `start..end` to another entry's verdicts.
    fn pass(&mut self, (start, end): (u32, u32)) {
        match self.passed.last_mut() {
            Some(last) if last.1 == start => last.1 = end,
            _ if start == end => {}
            _ => self.passed.push((start, end)),
        }
    }

    fn accept(&mut self, (start, end): (u32, u32)) {
        if start == end {
            return;
        }
        self.count += (end - start) as usize;
        let first = self
            .recording
            .as_ref()
            .map_or(0, |recording| recording.first);
        let len = self.accepted.len();
        match self.accepted.last_mut() {
            Some(last) if last.1 == start && len > first => last.1 = end,
            _ => self.accepted.push((start, end)),
        }
    }

    /// Sorts ranks `start..end` as uncertain with `ends` (rejected if 0).
    fn group(&mut self, start: u32, end: u32, ends: u64) {
        if let Some(recording) = &mut self.recording {
            push_group(
                &mut recording.groups,
                start,
                end,
                ends & !recording.above,
                true,
            );
        }
        push_group(&mut self.groups, start, end, ends, false);
    }

    /// What an earlier walk found below a node, under `above` here.
    fn replay(&mut self, subtree: &Subtree, above: u64) {
        for &range in &subtree.accepted {
            self.accept(range);
        }
        for group in &subtree.groups {
            self.group(group.start, group.end, group.ends | above);
        }
    }

    /// Starts recording what is found below `node` (whose subtree ends at
    /// `end`), reached in `config` with `above`, unless a recording is on.
    fn record(&mut self, config: u32, node: usize, end: usize, above: u64) {
        if self.recording.is_none() {
            self.recording = Some(Recording {
                config,
                node,
                end,
                above,
                first: self.accepted.len(),
                groups: Vec::new(),
            });
        }
    }

    /// Hands the recording to `steps` once the walk is past its subtree
    /// (at `node`). Asked at every node, so inlined up to the test.
    #[inline(always)]
    #[allow(
        clippy::inline_always,
        reason = "per trie node of a walk; `#[inline]` left it a call (measured)"
    )]
    fn end_recording(&mut self, node: usize, steps: &mut StepMemo) {
        if self
            .recording
            .as_ref()
            .is_some_and(|recording| node >= recording.end)
        {
            self.keep_recording(steps);
        }
    }

    /// Hands the recording to `steps`.
    fn keep_recording(&mut self, steps: &mut StepMemo) {
        let recording = self.recording.take().expect("checked by the caller");
        let subtree = Subtree {
            accepted: self.accepted[recording.first..].into(),
            groups: recording.groups.into(),
        };
        steps.keep_subtree(recording.config, recording.node, self.kind, subtree);
    }
}

/// Adds the tokens of ranks `start..end`, uncertain with `ends`, to
/// `groups`; with `ends` 0 they are rejected, and left out unless
/// `keep_rejected`.
fn push_group(groups: &mut Vec<Group>, start: u32, end: u32, ends: u64, keep_rejected: bool) {
    if (ends == 0 && !keep_rejected) || start == end {
        return;
    }
    match groups.last_mut() {
        Some(last) if last.end == start && last.ends == ends => last.end = end,
        _ => groups.push(Group { start, end, ends }),
    }
}

#[cfg(test)]
mod tests {
    use super::{Found, Group};
    use crate::cache::{Classified, TokenSet};
    use crate::id::TokenId;
    use crate::trie::TokenTrie;

    /// The ids of a token set of a vocabulary of 32 tokens at most.
    fn ids(set: &TokenSet, trie: &TokenTrie) -> Vec<u32> {
        let mut mask = vec![0u32; 1];
        set.add_to(&mut mask, trie.universe(), &mut Vec::new());
        (0..32).filter(|id| mask[0] & 1 << id != 0).collect()
    }

    #[test]
    fn a_walk_over_another_entry_keeps_its_verdicts_on_the_ranks_passed_only() {
        // Ranks follow the bytes: "a" 0, "ab" 1, "abc" 2, "b" 3, "bc" 4.
        let tokens: [&[u8]; 5] = [b"a", b"ab", b"abc", b"b", b"bc"];
        let trie = TokenTrie::new(
            (tokens.iter().enumerate()).map(|(id, &bytes)| (TokenId::new(id).unwrap(), bytes)),
            1,
        );
        let other = Classified {
            accepted: TokenSet::Ids([0, 3].into()),
            groups: [
                Group {
                    start: 1,
                    end: 3,
                    ends: 0b100,
                },
                Group {
                    start: 3,
                    end: 5,
                    ends: 0b10,
                },
            ]
            .into(),
        };
        // The walk sorted ranks 2 and 3 (accepting "abc", rejecting "b")
        // and passed the others.
        let found = Found {
            accepted: vec![(2, 3)],
            count: 1,
            passed: vec![(0, 2), (4, 5)],
            ..Found::default()
        };
        let entry = found.over_other(&other, None, &trie);
        assert_eq!(ids(&entry.accepted, &trie), [0, 2]);
        assert_eq!(
            *entry.groups,
            [
                Group {
                    start: 1,
                    end: 2,
                    ends: 0b100
                },
                Group {
                    start: 4,
                    end: 5,
                    ends: 0b10
                },
            ]
        );
    }
}
