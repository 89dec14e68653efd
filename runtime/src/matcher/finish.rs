//! The end of the output: how far it is, and token budgets that keep it in
//! reach.
//!
//! The fewest symbols (bytes, and tokens matched by id) that complete the
//! output is a shortest path up the Earley chart: each item of the last row
//! needs the rest of its rule's match ([`Distances`]), then the rest of
//! every match that waits for it, up to the entry. Matches in progress —
//! a rule, where it began and the context that called it — are the nodes
//! of the path, found by Dijkstra's algorithm from the last row; no
//! recursion, so a deeply nested output costs no stack.
//!
//! A token budget needs a plan the model can follow: when every byte is a
//! token of the vocabulary (true of byte-level BPE vocabularies and of
//! those with byte fallback), the fewest symbols to the end is a number of
//! tokens that suffices. A token is allowed only if the output can still
//! end in the tokens left after it. Checking that token by token would
//! cost a trie walk each step; instead the check is bounded from above:
//! for the whole row (every token leaves the parse inside a match open
//! now, which needs at most [`Distances::most_from`] more symbols, plus
//! what the matches above it need), then for each mask-cache entry of the
//! row (its accepted tokens stay inside its topmost match) and, near the
//! end, for each token an entry accepts ([`EndCosts`], kept by the mask
//! cache). Only the tokens no bound decides are walked.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use super::earley::{Start, Symbol};
use super::item::{Item, Kind};
use super::mask::is_set;
use super::parse::Parse;
use super::seed::Seed;
use super::walk::PrefixWalk;
use super::{MaskError, Matcher};
use crate::TokenId;
use crate::cache::{Classified, EndCosts, TokenSet};
use crate::grammar::distances::{ANY_LENGTH, Distances, TOKEN_LENGTHS, UNREACHABLE};
use crate::grammar::{Grammar, Repeat};
use crate::scanner;
use crate::trie::TokenTrie;
use crate::vocab::{TokenKind, Vocabulary};
use crate::zeros::written_zeros;

/// The most tokens of one mask-cache entry left to walk one by one; past
/// it, the entry's [`EndCosts`] are looked up (made once, by a walk of all
/// its tokens).
const WALK_AT_MOST: usize = 2048;

/// The most tokens a budgeted mask sorts by their bytes to walk them;
/// more are read off the trie's order instead.
const SORT_AT_MOST: usize = 4096;

/// A match in progress: the rule, the row it began at, and the context of
/// the item that called it (what completion goes by).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Open {
    pub(super) rule: u32,
    pub(super) origin: u32,
    pub(super) pred: u32,
}

/// What an item needs to end: symbols, then either the end of the output
/// or the rest of an enclosing match.
#[derive(Clone, Copy, Debug)]
enum Rest {
    End(u64),
    Then(u64, Open),
}

impl Rest {
    fn add(self, more: u64) -> Self {
        match self {
            Rest::End(cost) => Rest::End(cost.saturating_add(more)),
            Rest::Then(cost, open) => Rest::Then(cost.saturating_add(more), open),
        }
    }
}

/// What the row's mask-cache entries decide of a budget (see
/// [`Matcher::tokens_by_entries`]): two masks.
struct ByEntries {
    within: Vec<u32>,
    beyond: Vec<u32>,
}

/// The tokens surely beyond the room: `over` it by the costs of an entry
/// that accepts them, but not `within` it by another, not accepted by an
/// entry whose costs are `unknown`, and not left uncertain by any of the
/// row's `entries` (their bytes may run past its match, where the full
/// state decides).
pub(super) fn beyond(
    trie: &TokenTrie,
    entries: &[Arc<Classified>],
    mut over: Vec<u32>,
    within: &[u32],
    unknown: &[u32],
) -> Vec<u32> {
    let ranked = trie.ranked();
    for entry in entries {
        for group in &entry.groups {
            for &id in &ranked[group.start as usize..group.end as usize] {
                over[id.as_usize() / 32] &= !(1 << (id.as_usize() % 32));
            }
        }
    }
    for ((over, &within), &unknown) in over.iter_mut().zip(within).zip(unknown) {
        *over &= !within & !unknown;
    }
    over
}

/// The most symbols to an end a step of `symbols` symbols may leave, with
/// `room` tokens left after it and `before` symbols to an end before it.
/// Normally `room`: the rest can be spelled byte by byte. A budget shorter
/// than that plan (set late, or below the shortest ending in bytes) is
/// still met where the model's tokens are longer than a byte: then a step
/// must follow a shortest ending all the way (the least any step can
/// leave), so the output ends as soon as tokens allow.
fn threshold(room: u64, before: u64, symbols: u64) -> u64 {
    if before > room + 1 {
        room.max(before.saturating_sub(symbols))
    } else {
        room
    }
}

/// The most a place may need inside the counted repetition `repeat` after
/// `count` matches of its rule: in a further match (with the matches still
/// needed after it), or past the repetition.
/// For tokens of up to `TOKEN_LENGTHS[length]` bytes.
fn repeat_most(
    grammar: &Grammar,
    distances: &Distances,
    repeat: Repeat,
    count: u32,
    length: usize,
) -> u64 {
    let left = u64::from(repeat.min.saturating_sub(count + 1));
    let again = distances
        .most_within(length, repeat.rule)
        .saturating_add(left.saturating_mul(distances.shortest(repeat.rule)))
        .saturating_add(distances.to_end(repeat.target));
    again.max(distances.most_from_within(grammar, length, repeat.target))
}

/// What `item` (of the last row) needs to end its own match, and the match
/// it belongs to; `None` for items outside any match's text (lookahead).
fn own_rest(grammar: &Grammar, distances: &Distances, item: &Item) -> Option<Rest> {
    let open = |rule| Open {
        rule,
        origin: item.origin,
        pred: item.pred,
    };
    let again = |rule: u32| {
        let dispatch = grammar.dispatch(grammar.rule(rule));
        if dispatch.repeat == 1 {
            distances.free(grammar, rule, scanner::START)
        } else {
            0
        }
    };
    Some(match item.kind {
        Kind::Node if grammar.in_lookahead(item.a) => return None,
        Kind::Node => Rest::Then(distances.to_end(item.a), open(grammar.node_rule(item.a))),
        Kind::Repeat => {
            let repeat = grammar.repeat(item.a);
            let left = u64::from(repeat.min.saturating_sub(item.aux));
            let repeats = if left == 0 {
                0
            } else {
                left.saturating_mul(distances.shortest(repeat.rule))
            };
            Rest::Then(
                repeats.saturating_add(distances.to_end(repeat.target)),
                open(grammar.node_rule(repeat.target)),
            )
        }
        Kind::Free => Rest::Then(distances.free(grammar, item.a, item.aux), open(item.a)),
        Kind::Arm => {
            let arm = grammar.pattern(item.aux).arm;
            Rest::Then(
                distances.shortest(arm).saturating_add(again(item.a)),
                open(item.a),
            )
        }
        Kind::TokenArm => Rest::Then(
            distances.shortest(grammar.pattern(item.aux).arm),
            open(item.a),
        ),
        Kind::TokenFree | Kind::Ended => Rest::Then(0, open(item.a)),
        Kind::Root => Rest::End(distances.shortest(item.a)),
        Kind::SeedEnd | Kind::Wild | Kind::Done | Kind::Any => Rest::End(0),
    })
}

/// What `parent` needs after a match of `rule` that it waits for ends;
/// `None` if it does not wait for `rule`.
fn rest_after(grammar: &Grammar, distances: &Distances, parent: &Item, rule: u32) -> Option<Rest> {
    let open = |rule| Open {
        rule,
        origin: parent.origin,
        pred: parent.pred,
    };
    match parent.kind {
        Kind::Node if grammar.waits(parent.a) => {
            let cost = grammar
                .edges(parent.a)
                .iter()
                .filter(|edge| edge.calls(rule))
                .map(|edge| distances.to_end(edge.target))
                .min()?;
            Some(Rest::Then(cost, open(grammar.node_rule(parent.a))))
        }
        Kind::Repeat => {
            let repeat = grammar.repeat(parent.a);
            if repeat.rule != rule || !repeat.below_max(parent.aux) {
                return None;
            }
            let left = u64::from(repeat.min.saturating_sub(parent.aux + 1));
            let repeats = if left == 0 {
                0
            } else {
                left.saturating_mul(distances.shortest(rule))
            };
            Some(Rest::Then(
                repeats.saturating_add(distances.to_end(repeat.target)),
                open(grammar.node_rule(repeat.target)),
            ))
        }
        Kind::Arm | Kind::TokenArm if grammar.pattern(parent.aux).arm == rule => {
            let dispatch = grammar.dispatch(grammar.rule(parent.a));
            let again = if parent.kind == Kind::Arm && dispatch.repeat == 1 {
                distances.free(grammar, parent.a, scanner::START)
            } else {
                0
            };
            Some(Rest::Then(again, open(parent.a)))
        }
        Kind::Root | Kind::SeedEnd | Kind::Wild if parent.a == rule => Some(Rest::End(0)),
        _ => None,
    }
}

/// Whether `open`, a match in progress at `matcher`'s last row, can still
/// end within its rule's limits after a token of `token` bytes (0: none)
/// and then `cost` more symbols, of which `spare` may go in the token the
/// last row is in the middle of. The plan spells the rest a token each, so
/// a limit in tokens allows as many symbols as it has tokens left; a
/// match spans a token if it holds a byte of it.
pub(super) fn fits(matcher: &Parse, open: Open, cost: u64, token: u64, spare: u64) -> bool {
    let record = matcher.grammar.rule(open.rule);
    let last = matcher.history.rows() - 1;
    let held = (last - open.origin as usize) as u64;
    if record.max_bytes != 0 && held + token + cost > u64::from(record.max_bytes) {
        return false;
    }
    if record.max_tokens != 0 {
        let spanned = if held == 0 {
            0
        } else {
            let first = matcher.history.step(open.origin as usize + 1);
            u64::from(matcher.history.step(last) - first) + 1
        };
        let token = u64::from(token > 0);
        return spanned + token + cost.saturating_sub(spare) <= u64::from(record.max_tokens);
    }
    true
}

/// Shortest paths to the end of the output over one matcher's chart, with
/// buffers kept between queries, and the rests of the matches that began in
/// the rows below `stable` remembered (a walk of tokens pushes and pops
/// rows above them only).
pub(super) struct Ends<'d> {
    distances: &'d Distances,
    /// Symbols the token the last row is in the middle of may still
    /// carry, for the limits in tokens (see [`fits`]): 0 at a token's end.
    pub(super) spare: u64,
    /// The bytes of a token taken after the last row, for the limits (see
    /// [`fits`]): 0 but in [`Ends::ends_after_token`].
    token: u64,
    /// Whether limited matches must end within their limits (the
    /// grammar's limits apply; a seeded parse's rows do not know how far
    /// its matches really are).
    pub(super) limits: bool,
    stable: usize,
    rests: FxHashMap<Open, u64>,
    best: FxHashMap<Open, u64>,
    queue: BinaryHeap<Reverse<(u64, Open)>>,
    found: Vec<Rest>,
}

impl<'d> Ends<'d> {
    /// A planner for a matcher whose first `stable` rows stay as they are
    /// while it is used.
    pub(super) fn new(distances: &'d Distances, stable: usize) -> Self {
        Self {
            distances,
            spare: 0,
            token: 0,
            limits: true,
            stable,
            rests: FxHashMap::default(),
            best: FxHashMap::default(),
            queue: BinaryHeap::new(),
            found: Vec::new(),
        }
    }

    /// The fewest symbols to an end from `matcher`'s last row
    /// ([`UNREACHABLE`] if none).
    pub(super) fn left(&mut self, matcher: &Parse) -> u64 {
        let grammar = &*matcher.grammar;
        let distances = self.distances;
        let sources =
            (matcher.history.last().iter()).filter_map(|item| own_rest(grammar, distances, item));
        self.shortest(matcher, sources)
    }

    /// The fewest symbols that end `open` and then the output.
    fn after(&mut self, matcher: &Parse, open: Open) -> u64 {
        if let Some(&rest) = self.rests.get(&open) {
            return rest;
        }
        let rest = self.shortest(matcher, std::iter::once(Rest::Then(0, open)));
        // Under limits, what a match above may still take changes with
        // every row.
        if (open.origin as usize) < self.stable && !matcher.grammar.has_limits() {
            self.rests.insert(open, rest);
        }
        rest
    }

    /// Dijkstra's algorithm from `sources` up the chart to the end of the
    /// output.
    fn shortest(&mut self, matcher: &Parse, sources: impl Iterator<Item = Rest>) -> u64 {
        let mut best_end = UNREACHABLE;
        self.best.clear();
        self.queue.clear();
        for rest in sources {
            self.reach(rest, &mut best_end);
        }
        while let Some(Reverse((cost, open))) = self.queue.pop() {
            if cost >= best_end {
                break;
            }
            if self.best.get(&open).is_some_and(|&known| known < cost) {
                continue;
            }
            // A limited match that cannot end within its limit ends no
            // derivation (the least cost to end it is this one).
            if self.limits
                && matcher.grammar.has_limits()
                && !fits(matcher, open, cost, self.token, self.spare)
            {
                continue;
            }
            self.climb(matcher, open, cost, &mut best_end);
        }
        best_end
    }

    /// Whether, after a token of `token` bytes that stays inside `open`
    /// and leaves `cost` symbols to end it, the output can still end with
    /// every limited match within its limit.
    pub(super) fn ends_after_token(
        &mut self,
        matcher: &Parse,
        open: Open,
        cost: u64,
        token: u64,
    ) -> bool {
        self.token = token;
        let end = self.shortest(matcher, std::iter::once(Rest::Then(cost, open)));
        self.token = 0;
        end != UNREACHABLE
    }

    /// The fewest symbols that end each match above `open` (and `open`
    /// itself) once `cost` more symbols end `open`: every match a
    /// derivation through `open` completes on its way to the end of the
    /// output, limits left out. Calls `found` with each.
    pub(super) fn above(
        &mut self,
        matcher: &Parse,
        open: Open,
        cost: u64,
        mut found: impl FnMut(Open, u64),
    ) {
        let mut best_end = UNREACHABLE;
        self.best.clear();
        self.queue.clear();
        self.reach(Rest::Then(cost, open), &mut best_end);
        while let Some(Reverse((cost, open))) = self.queue.pop() {
            if self.best.get(&open).is_some_and(|&known| known < cost) {
                continue;
            }
            found(open, cost);
            // Past every end: no cut-off.
            best_end = UNREACHABLE;
            self.climb(matcher, open, cost, &mut best_end);
        }
    }

    /// Reaches what waits for `open`, which `cost` symbols end.
    fn climb(&mut self, matcher: &Parse, open: Open, cost: u64, best_end: &mut u64) {
        let grammar = &*matcher.grammar;
        let distances = self.distances;
        let row = open.origin as usize;
        let parents = matcher.history.row(row);
        let mut found = std::mem::take(&mut self.found);
        let mut visit = |parent: &Item| {
            if parent.ctx != open.pred {
                return;
            }
            if let Some(rest) = rest_after(grammar, distances, parent, open.rule) {
                found.push(rest.add(cost));
            }
        };
        match matcher.history.waiting(row) {
            Some(waiting) => {
                for &place in waiting.get(open.rule) {
                    visit(&parents[place as usize]);
                }
            }
            None => parents.iter().for_each(&mut visit),
        }
        for rest in found.drain(..) {
            self.reach(rest, best_end);
        }
        self.found = found;
    }

    /// Records that `rest` is reachable.
    fn reach(&mut self, rest: Rest, best_end: &mut u64) {
        match rest {
            Rest::End(cost) => *best_end = (*best_end).min(cost),
            Rest::Then(cost, open) if cost < UNREACHABLE => {
                let known = self.best.entry(open).or_insert(UNREACHABLE);
                if cost < *known {
                    *known = cost;
                    self.queue.push(Reverse((cost, open)));
                }
            }
            Rest::Then(..) => {}
        }
    }
}

impl Matcher {
    /// The fewest symbols — bytes of text, and tokens matched by id — after
    /// which the output can end; `Some(0)` where it can end now, `None`
    /// where no continuation ends it (a matcher whose grammar could not be
    /// built). Exact, but for grammars with lookahead, whose assertions it
    /// leaves out (a lower bound there).
    ///
    /// A grammar whose rules are built on first use builds them all on the
    /// first call.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use xg_runtime::{Grammar, Matcher};
    /// # fn demo(grammar: Arc<Grammar>) {
    /// // root ::= "{\"a\": " [0-9]+ "}"
    /// let mut matcher = Matcher::new(grammar);
    /// assert_eq!(matcher.min_bytes_to_finish(), Some(8));
    /// matcher.accept_str("{\"a\": 12").unwrap();
    /// assert_eq!(matcher.min_bytes_to_finish(), Some(1));
    /// # }
    /// ```
    pub fn min_bytes_to_finish(&self) -> Option<usize> {
        if self.terminated {
            return Some(0);
        }
        let distances = self.parse.grammar.distances().ok()?;
        let symbols = Ends::new(&distances, 0).left(&self.parse);
        (symbols != UNREACHABLE).then(|| usize::try_from(symbols).unwrap_or(usize::MAX))
    }

    /// The fewest tokens after which the output can end: a lower bound,
    /// exact where the rest of the output is forced ([`Matcher::forced_bytes`]
    /// up to an end that nothing can follow) — then the fewest tokens that
    /// spell it. Elsewhere it is the larger of the fewest symbols to the
    /// end over the longest token, and the fewest tokens that cover the
    /// forced text. `Some(0)` where the output can end now; `None` where
    /// nothing ends it. Without a vocabulary, a symbol is a token.
    pub fn min_tokens_to_finish(&self) -> Option<usize> {
        if self.terminated || self.can_terminate() {
            return Some(0);
        }
        let symbols = self.min_bytes_to_finish()?;
        let Some(vocabulary) = &self.vocabulary else {
            return Some(symbols);
        };
        let trie = vocabulary.trie();
        let mut bound = symbols.div_ceil(trie.max_depth().max(1));
        let (forced, complete) = self.forced();
        if !forced.is_empty() {
            let (spelled, covered) = trie.fewest_tokens(&forced);
            if complete && forced.len() == symbols {
                return spelled;
            }
            bound = bound.max(covered);
        }
        Some(bound)
    }

    /// Bounds the output to `tokens` steps (tokens, for a server: one
    /// step per token), counted from the start; `None` lifts the bound.
    ///
    /// Token masks then allow only tokens after which the output can
    /// still end within the steps left, and a step that leaves no way to
    /// end in time is refused ([`Rejection::is_over_token_budget`]). A
    /// stop token is allowed wherever the output can end, also past the
    /// budget. The plan behind the bound spells the shortest ending byte
    /// by byte, so the guarantee needs a vocabulary with a token for each
    /// byte (byte-level BPE and byte-fallback vocabularies have them), and
    /// a grammar without lookahead (the plan leaves assertions out).
    /// Where the budget is shorter than that plan (set late, or below the
    /// shortest ending in bytes), only tokens that follow a shortest
    /// ending all the way are allowed: the output then ends as soon as the
    /// model's tokens allow. [`Matcher::stop_reason`] says
    /// [`StopReason::Budget`] once the budget is spent.
    ///
    /// The first masks near the end of a budget walk each mask-cache entry
    /// they meet once more (tens of milliseconds for the inside of a
    /// string on a 128k vocabulary), and keep what they found for every
    /// later mask of the vocabulary.
    ///
    /// [`Rejection::is_over_token_budget`]: super::Rejection::is_over_token_budget
    /// [`StopReason::Budget`]: super::StopReason::Budget
    pub fn set_token_budget(&mut self, tokens: Option<usize>) {
        self.token_budget = tokens;
    }

    /// This matcher with a token budget ([`Matcher::set_token_budget`]).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use xg_runtime::{Grammar, Matcher, Vocabulary};
    /// # fn demo(grammar: Arc<Grammar>, vocabulary: Arc<Vocabulary>) {
    /// let mut matcher = Matcher::with_vocabulary(grammar, vocabulary.clone())
    ///     .with_token_budget(64);
    /// let mut mask = vec![0u32; vocabulary.mask_words()];
    /// matcher.fill_next_token_bitmask(&mut mask).unwrap();
    /// // every token in `mask` leaves a way to end within 63 more tokens
    /// # }
    /// ```
    #[must_use]
    pub fn with_token_budget(mut self, tokens: usize) -> Self {
        self.token_budget = Some(tokens);
        self
    }

    /// The token budget, if one is set.
    pub fn token_budget(&self) -> Option<usize> {
        self.token_budget
    }

    /// The steps left in the token budget, if one is set.
    pub fn tokens_left(&self) -> Option<usize> {
        self.token_budget
            .map(|budget| budget.saturating_sub(self.steps.len()))
    }

    /// The fewest symbols to an end, for a step about to be taken under
    /// a token budget (`None` without one).
    pub(super) fn before_budgeted_step(&self) -> Option<u64> {
        self.token_budget?;
        let distances = self.parse.grammar.distances().ok()?;
        Some(Ends::new(&distances, 0).left(&self.parse))
    }

    /// Whether the step just taken, of `symbols` symbols, keeps to the
    /// token budget (see [`threshold`]), `before` being
    /// [`Matcher::before_budgeted_step`]'s answer (true without a budget).
    pub(super) fn within_token_budget(&self, before: Option<u64>, symbols: u64) -> bool {
        let Some(budget) = self.token_budget else {
            return true;
        };
        let Some(room) = budget.checked_sub(self.steps.len() + 1) else {
            return false;
        };
        let (Some(before), Ok(distances)) = (before, self.parse.grammar.distances()) else {
            return false;
        };
        let after = Ends::new(&distances, 0).left(&self.parse);
        after <= threshold(room as u64, before, symbols)
    }

    /// Clears from `mask` the tokens after which the output could not end
    /// within the token budget (see [`Matcher::set_token_budget`]).
    pub(super) fn keep_within_budget(
        &mut self,
        mask: &mut [u32],
        vocabulary: &Arc<Vocabulary>,
        budget: usize,
    ) -> Result<(), MaskError> {
        let Some(room) = budget.checked_sub(self.steps.len() + 1) else {
            // Spent: only an end.
            for (index, word) in mask.iter_mut().enumerate() {
                let mut bits = *word;
                while bits != 0 {
                    let bit = bits.trailing_zeros();
                    bits &= bits - 1;
                    let id = TokenId::new(index * 32 + bit as usize).expect("mask ids fit");
                    if !vocabulary.is_stop(id) {
                        *word &= !(1 << bit);
                    }
                }
            }
            return Ok(());
        };
        let room = room as u64;
        let distances = self
            .parse
            .grammar
            .distances()
            .map_err(|failure| MaskError::Build(failure.to_string()))?;
        let mut ends = Ends::new(&distances, self.parse.history.rows());
        let trie = vocabulary.trie();
        // Under limits the bounds, made at this row, say nothing of the
        // rows after a token: every token is walked.
        let limited = self.parse.grammar.has_limits();
        let bounded = !limited && trie.max_depth() <= TOKEN_LENGTHS[ANY_LENGTH];
        let short = if bounded {
            match self.longest_within(&mut ends, trie.max_depth(), room) {
                // No token can go past the budget here: nothing to check.
                Some(ANY_LENGTH) => return Ok(()),
                Some(length) => Some(trie.up_to_length(TOKEN_LENGTHS[length])),
                None => None,
            }
        } else {
            None
        };
        let takes_any_by_id = self.parse.grammar.uses_tokens()
            && TokenId::new(self.parse.grammar.unnamed_token() as usize)
                .is_ok_and(|id| self.viable(Symbol::Token(id)));
        // Where any token may be taken by id, the entries (of text) say
        // nothing.
        let by_entries = if takes_any_by_id || limited {
            ByEntries {
                within: short.map_or_else(|| written_zeros(mask.len()), <[u32]>::to_vec),
                beyond: written_zeros(mask.len()),
            }
        } else {
            self.tokens_by_entries(vocabulary, &mut ends, room, bounded, short)?
        };
        let now = ends.left(&self.parse);
        let behind = now > room + 1;
        let mut by_text = Vec::new();
        for (index, word) in mask.iter_mut().enumerate() {
            if !behind {
                *word &= !by_entries.beyond[index];
            }
            let mut bits = *word & !by_entries.within[index];
            while bits != 0 {
                let bit = bits.trailing_zeros();
                bits &= bits - 1;
                let id = TokenId::new(index * 32 + bit as usize).expect("mask ids fit");
                if vocabulary.is_stop(id) {
                    continue;
                }
                let by_id = vocabulary.kind_of(id) == TokenKind::Special
                    || (self.parse.grammar.uses_tokens()
                        && (takes_any_by_id || self.parse.grammar.names_token(id.as_u32()))
                        && self.viable(Symbol::Token(id)));
                if by_id {
                    let most = threshold(room, now, 1);
                    if !self.ends_in_time_after(Symbol::Token(id), &mut ends, most) {
                        *word &= !(1 << bit);
                    }
                } else if vocabulary.bytes(id).is_empty() {
                    if now > threshold(room, now, 0) {
                        *word &= !(1 << bit);
                    }
                } else {
                    by_text.push(id);
                }
            }
        }
        self.walk_in_time(mask, vocabulary, by_text, &mut ends, (room, now))
    }

    /// Walks the text tokens `by_text` in byte order (shared prefixes
    /// pushed once) and clears from `mask` those after which the output
    /// cannot end in time (`room` tokens left, `now` symbols to an end
    /// before them; see [`threshold`]).
    fn walk_in_time(
        &mut self,
        mask: &mut [u32],
        vocabulary: &Vocabulary,
        mut by_text: Vec<TokenId>,
        ends: &mut Ends<'_>,
        (room, now): (u64, u64),
    ) -> Result<(), MaskError> {
        // Sorted, or for many, read off the trie's order.
        if by_text.len() > SORT_AT_MOST {
            let mut walked: Vec<u32> = written_zeros(mask.len());
            for id in &by_text {
                walked[id.as_usize() / 32] |= 1 << (id.as_usize() % 32);
            }
            let ranked = vocabulary.trie().ranked();
            by_text = ranked
                .iter()
                .copied()
                .filter(|&id| is_set(&walked, id))
                .collect();
        } else {
            by_text.sort_unstable_by(|a, b| vocabulary.bytes(*a).cmp(vocabulary.bytes(*b)));
        }
        let base = self.parse.history.rows();
        let mut walk = PrefixWalk::default();
        for id in by_text {
            let bytes = vocabulary.bytes(id);
            let (taken, _) = walk.accepts(&mut self.parse, self.steps.len(), base, bytes);
            if !taken || ends.left(&self.parse) > threshold(room, now, bytes.len() as u64) {
                mask[id.as_usize() / 32] &= !(1 << (id.as_usize() % 32));
            }
        }
        self.truncate(base);
        self.parse.built()
    }

    /// The longest of [`TOKEN_LENGTHS`] (by index, up to the first at
    /// least `longest` bytes, which stands for every token) for which no
    /// token of that length can go past `room` symbols to an end; `None`
    /// if not even one byte is sure to fit. The bounds grow with the
    /// length.
    fn longest_within(&self, ends: &mut Ends<'_>, longest: usize, room: u64) -> Option<usize> {
        if self.row_bound(ends, ANY_LENGTH) <= room {
            return Some(ANY_LENGTH);
        }
        let lengths = TOKEN_LENGTHS
            .iter()
            .take_while(|&&length| length < longest)
            .count();
        (0..lengths)
            .take_while(|&length| self.row_bound(ends, length) <= room)
            .last()
    }

    /// Whether the output can end within `room` symbols after `symbol`.
    fn ends_in_time_after(&mut self, symbol: Symbol, ends: &mut Ends<'_>, room: u64) -> bool {
        let rows = self.parse.history.rows();
        if !self.push(Start::Scan(symbol)) {
            return false;
        }
        let in_time = ends.left(&self.parse) <= room;
        self.truncate(rows);
        in_time
    }

    /// The most symbols to an end after any token of up to
    /// `TOKEN_LENGTHS[length]` bytes from here: over the [`Matcher::places`]
    /// a token may leave the parse in, the most there plus what ends the
    /// output once that match has ended.
    fn row_bound(&self, ends: &mut Ends<'_>, length: usize) -> u64 {
        let places = self.places(ends.distances, length);
        (places.into_iter())
            .map(|(inside, open)| inside.saturating_add(ends.after(&self.parse, open)))
            .max()
            .unwrap_or(0)
    }

    /// Where a token of up to `TOKEN_LENGTHS[length]` bytes may leave the
    /// parse: every derivation after a token goes on from a match open in
    /// the chart now — an item's of the last row, or one that waits above
    /// it — and leaves the parse inside one of them, at a place its
    /// automaton reaches from where it stands (with the matches the token
    /// opens below it). Each such match, with the most symbols a place
    /// there may need to end it ([`Distances::most_from`]).
    pub(super) fn places(&self, distances: &Distances, length: usize) -> Vec<(u64, Open)> {
        let grammar = &*self.parse.grammar;
        let open = |rule, item: &Item| Open {
            rule,
            origin: item.origin,
            pred: item.pred,
        };
        let mut places = Vec::new();
        let mut seen: FxHashSet<Open> = FxHashSet::default();
        let mut above = Vec::new();
        for item in self.parse.history.last() {
            let (inside, open) = match item.kind {
                Kind::Node if grammar.in_lookahead(item.a) => continue,
                Kind::Node => (
                    distances.most_from_within(grammar, length, item.a),
                    open(grammar.node_rule(item.a), item),
                ),
                Kind::Repeat => {
                    let repeat = grammar.repeat(item.a);
                    let inside = repeat_most(grammar, distances, repeat, item.aux, length);
                    (inside, open(grammar.node_rule(repeat.target), item))
                }
                Kind::Free | Kind::Arm | Kind::TokenFree | Kind::TokenArm => {
                    (distances.most_within(length, item.a), open(item.a, item))
                }
                Kind::Ended => (0, open(item.a, item)),
                Kind::Root | Kind::SeedEnd | Kind::Wild | Kind::Done | Kind::Any => continue,
            };
            places.push((inside, open));
            if seen.insert(open) {
                above.push(open);
            }
        }
        while let Some(child) = above.pop() {
            for parent in self.parse.history.row(child.origin as usize) {
                if parent.ctx != child.pred {
                    continue;
                }
                let (inside, open) = match parent.kind {
                    Kind::Node if grammar.waits(parent.a) => {
                        let Some(inside) = (grammar.edges(parent.a).iter())
                            .filter(|edge| edge.calls(child.rule))
                            .map(|edge| distances.most_from_within(grammar, length, edge.target))
                            .max()
                        else {
                            continue;
                        };
                        (inside, open(grammar.node_rule(parent.a), parent))
                    }
                    Kind::Repeat => {
                        let repeat = grammar.repeat(parent.a);
                        if repeat.rule != child.rule {
                            continue;
                        }
                        let inside =
                            repeat_most(grammar, distances, repeat, parent.aux + 1, length);
                        (inside, open(grammar.node_rule(repeat.target), parent))
                    }
                    Kind::Arm | Kind::TokenArm if grammar.pattern(parent.aux).arm == child.rule => {
                        (
                            distances.most_within(length, parent.a),
                            open(parent.a, parent),
                        )
                    }
                    _ => continue,
                };
                places.push((inside, open));
                if seen.insert(open) {
                    above.push(open);
                }
            }
        }
        places
    }

    /// The most symbols to an end after a token that `seed`'s entry
    /// accepts: the token leaves the parse inside the seed's match, or
    /// past it inside one of the matches the seed covers above it; at
    /// each level, the most a place reachable there needs, plus the
    /// fewest that end the output once that match has ended.
    fn seed_bound(&self, ends: &mut Ends<'_>, seed: &Seed) -> u64 {
        let grammar = &*self.parse.grammar;
        let distances = ends.distances;
        let item = seed.item;
        let open = |rule, item: &Item| Open {
            rule,
            origin: item.origin,
            pred: item.pred,
        };
        let (rule, inside) = match item.kind {
            Kind::Node => {
                let rule = grammar.node_rule(item.a);
                (rule, distances.most_from(item.a))
            }
            _ => (item.a, distances.most(item.a)),
        };
        let mut bound = inside.saturating_add(ends.after(&self.parse, open(rule, &item)));
        let mut below = rule;
        for parent in seed.parents.iter().flatten() {
            let (rule, inside) = match parent.kind {
                Kind::Node => {
                    let inside = (grammar.edges(parent.a).iter())
                        .filter(|edge| edge.calls(below))
                        .map(|edge| distances.most_from(edge.target))
                        .max()
                        .unwrap_or(0);
                    (grammar.node_rule(parent.a), inside)
                }
                Kind::Repeat => {
                    let repeat = grammar.repeat(parent.a);
                    let inside =
                        repeat_most(grammar, distances, repeat, parent.aux + 1, ANY_LENGTH);
                    (grammar.node_rule(repeat.target), inside)
                }
                _ => return UNREACHABLE,
            };
            bound = bound.max(inside.saturating_add(ends.after(&self.parse, open(rule, parent))));
            below = rule;
        }
        bound
    }

    /// What the row's mask-cache entries tell of the text tokens: those
    /// that surely leave the output able to end within `room` symbols
    /// (an entry accepts them and, wherever they leave its match, it needs
    /// at most that with what waits above it), and those that surely do
    /// not (every entry that accepts them needs more, and none leaves them
    /// uncertain). As masks; the rest must be walked.
    fn tokens_by_entries(
        &self,
        vocabulary: &Vocabulary,
        ends: &mut Ends<'_>,
        room: u64,
        bounded: bool,
        short: Option<&[u32]>,
    ) -> Result<ByEntries, MaskError> {
        let distances = ends.distances;
        let words = vocabulary.mask_words();
        let mut by_entries = ByEntries {
            within: short.map_or_else(|| written_zeros(words), <[u32]>::to_vec),
            beyond: written_zeros(words),
        };
        if !self.parse.grammar.is_cacheable() {
            return Ok(by_entries);
        }
        let trie = vocabulary.trie();
        let mut seeds = Vec::new();
        for &item in self.parse.history.last() {
            Seed::add(
                &self.parse.grammar,
                &self.parse.history,
                item,
                trie.max_depth(),
                &mut seeds,
            );
        }
        let mut scratch = Vec::new();
        let mut here = written_zeros(words);
        // Over the room by the costs of an entry that accepts them, and
        // accepted by an entry whose costs were not looked at.
        let mut over = written_zeros(words);
        let mut unknown = written_zeros(words);
        let mut entries = Vec::with_capacity(seeds.len());
        for seed in &seeds {
            let Some(entry) = vocabulary.mask_cache().cached_entry(&seed.key) else {
                // An entry no longer cached: nothing can be ruled out.
                over.fill(0);
                entries.clear();
                break;
            };
            entries.push(Arc::clone(&entry));
            let universe = trie.universe();
            if bounded && self.seed_bound(ends, seed) <= room {
                entry
                    .accepted
                    .add_to(&mut by_entries.within, universe, &mut scratch);
                continue;
            }
            here.fill(0);
            entry.accepted.add_to(&mut here, universe, &mut scratch);
            let left: usize = (here.iter().zip(&by_entries.within))
                .map(|(&here, &within)| (here & !within).count_ones() as usize)
                .sum();
            if left <= WALK_AT_MOST {
                // Fewer to walk than to cost.
                for (unknown, &here) in unknown.iter_mut().zip(&here) {
                    *unknown |= here;
                }
                continue;
            }
            // Near the end of the budget: the tokens' own costs decide.
            let top = seed.top();
            let open = Open {
                rule: seed.rule,
                origin: top.origin,
                pred: top.pred,
            };
            let rest = ends.after(&self.parse, open);
            let costs = vocabulary.mask_cache().end_costs(seed.key, || {
                self.end_costs(seed, &entry.accepted, vocabulary, distances)
            })?;
            if costs.least.saturating_add(rest) > room {
                for (over, &here) in over.iter_mut().zip(&here) {
                    *over |= here;
                }
                continue;
            }
            for &(id, cost) in &costs.above {
                if cost.saturating_add(rest) > room {
                    let (index, bit) = (id as usize / 32, 1 << (id % 32));
                    here[index] &= !bit;
                    over[index] |= bit;
                }
            }
            for (word, &bits) in by_entries.within.iter_mut().zip(&here) {
                *word |= bits;
            }
        }
        if over.iter().any(|&word| word != 0) {
            by_entries.beyond = beyond(trie, &entries, over, &by_entries.within, &unknown);
        }
        // Tokens the grammar may take by id are checked one by one (the
        // short ones stay: a bound on bytes holds for one symbol).
        for &named in self.parse.grammar.named_tokens() {
            let index = named as usize / 32;
            if index < words {
                if short.is_none_or(|short| short[index] & (1 << (named % 32)) == 0) {
                    by_entries.within[index] &= !(1 << (named % 32));
                }
                by_entries.beyond[index] &= !(1 << (named % 32));
            }
        }
        Ok(by_entries)
    }

    /// The [`EndCosts`] of `seed`'s entry, whose accepted tokens are
    /// `accepted`: each token walked (in byte order, shared prefixes once)
    /// from a parse seeded like the entry's, where the end of the
    /// topmost match it covers is the end.
    pub(super) fn end_costs(
        &self,
        seed: &Seed,
        accepted: &TokenSet,
        vocabulary: &Vocabulary,
        distances: &Distances,
    ) -> Result<EndCosts, MaskError> {
        let parents: Vec<Item> = seed.parents.iter().rev().flatten().copied().collect();
        let mut seeded = Parse::seeded(&self.parse.grammar, seed.item, &parents, seed.rule);
        let trie = vocabulary.trie();
        let mut bits = written_zeros(vocabulary.mask_words());
        accepted.add_to(&mut bits, trie.universe(), &mut Vec::new());
        let base = seeded.history.rows();
        let mut ends = Ends::new(distances, base);
        ends.limits = false;
        let mut walk = PrefixWalk::default();
        let mut costs = Vec::new();
        for &id in trie.ranked() {
            if !is_set(&bits, id) {
                continue;
            }
            let (taken, _) = walk.accepts(&mut seeded, 0, base, vocabulary.bytes(id));
            let cost = if taken {
                ends.left(&seeded)
            } else {
                UNREACHABLE
            };
            costs.push((id.as_u32(), cost));
        }
        seeded.built()?;
        let least = costs.iter().map(|&(_, cost)| cost).min().unwrap_or(0);
        costs.retain(|&(_, cost)| cost > least);
        costs.sort_unstable();
        Ok(EndCosts {
            least,
            above: costs.into(),
        })
    }
}
