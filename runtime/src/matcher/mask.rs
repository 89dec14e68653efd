//! Token masks: the set of tokens the grammar allows next, exactly.
//!
//! The rule for each token is the one [`Matcher::accept_token`] follows
//! (stop tokens where the output can end, special tokens by id, text tokens
//! by id or by bytes, padding never), so a token is in the mask exactly
//! when accepting it succeeds.
//!
//! Text tokens are decided through the vocabulary's [mask
//! cache](crate::MaskCache), in three steps:
//!
//! 1. Each item of the current row that scans bytes has an entry: the
//!    tokens it accepts on its own, and the few it leaves uncertain. An
//!    entry is built the first time such an item is seen — in any grammar
//!    with a rule of the same structure — by walking the token trie with a
//!    matcher *seeded* with that item alone.
//! 2. The mask is the union of the entries' accepted tokens.
//! 3. The uncertain tokens that are not in it yet are checked against the
//!    full state: past each place an item's rule can end in a token, its
//!    rest is checked from the row where the rule has matched (verdicts
//!    kept per parse state there); the few tokens that cannot be taken
//!    apart so are pushed whole in trie order, sharing prefixes, and
//!    popped again.
//!
//! A token rejected by every item is never looked at. Grammars with
//! lookahead assertions skip the cache and walk the whole trie with the
//! full state (a lookahead makes an item's fate depend on text beyond its
//! rule).

use std::sync::Arc;

use super::Matcher;
use super::classify::classify;
use super::context::{ContextLimits, FIRST_BYTES_AT, Rest, expand};
use super::earley::{Start, Symbol};
use super::item::Kind;
use super::memos::{MaskMemos, Masking};
use super::seed::{Seed, entered_at_start, entered_by_seeds};
use super::verdicts::FirstBytes;
use super::walk::{Cost, MaskError, PrefixWalk, RankSet};
use crate::TokenId;
use crate::cache::{Combined, Key, Lookup, TokenSet};
use crate::vocab::{TokenKind, Vocabulary};
use crate::zeros::written_zeros;

/// The default bound on the work of one mask, in Earley items tried (see
/// [`Matcher::set_mask_budget`]): about a second of work (some 20 ns a
/// unit).
pub const DEFAULT_MASK_BUDGET: u64 = 50_000_000;

/// What computing one token mask cost, for tracing and tuning.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaskStats {
    /// Whether the mask cache was used (grammars with lookahead walk the
    /// whole trie instead).
    pub cached: bool,
    /// Distinct items of the row that scan text: one cache entry each.
    pub entries: u32,
    /// 1 if the row's combination of entries was cached.
    pub hits: u32,
    /// 1 if the combination was built now from entries that were all
    /// cached (reused from other rows or other grammars).
    pub partial_hits: u32,
    /// Entries built now by walking the token trie.
    pub built: u32,
    /// Uncertain tokens checked against the full state.
    pub uncertain: u32,
    /// 1 if the uncertain tokens had been checked at this very parse state
    /// before (at another step or by another matcher of the grammar) and
    /// their verdicts were reused.
    pub state_hits: u32,
    /// Bytes pushed into the full state (trie nodes visited).
    pub bytes_pushed: u64,
    /// Trie nodes visited building entries (a subtree whose outcome an
    /// earlier walk recorded counts as one).
    pub nodes_walked: u64,
    /// Earley items tried, entries included: what the budget bounds.
    pub items: u64,
    /// Rests of uncertain tokens (what follows the place where an entry's
    /// rule can end in them) walked through what can follow the rule; not
    /// those refused by their first byte alone, nor those whose verdict an
    /// earlier mask of the grammar kept.
    pub context_rests: u64,
    /// Rests of uncertain tokens walked from the parse state where an
    /// entry's rule has just matched; not those refused by their first
    /// byte alone, nor those whose verdict an earlier mask at that state
    /// kept.
    pub state_rests: u64,
}

fn set(mask: &mut [u32], id: TokenId) {
    mask[id.as_usize() / 32] |= 1 << (id.as_usize() % 32);
}

pub(super) fn is_set(mask: &[u32], id: TokenId) -> bool {
    mask[id.as_usize() / 32] & (1 << (id.as_usize() % 32)) != 0
}

impl Matcher {
    /// Bounds the work of one token mask to `items` Earley items tried
    /// (entries built for the cache included; the unit of
    /// [`Matcher::set_step_budget`]). Past it,
    /// [`Matcher::fill_next_token_bitmask`] fails with
    /// [`MaskError::BudgetExceeded`] instead of stalling.
    pub fn set_mask_budget(&mut self, items: u64) {
        self.mask_budget = items;
    }

    /// The bound on the Earley items one token mask may build.
    pub fn mask_budget(&self) -> u64 {
        self.mask_budget
    }

    /// What the last token mask cost.
    pub fn last_mask_stats(&self) -> MaskStats {
        self.mask_stats
    }

    /// Fills `mask` with the tokens allowed next: bit `i % 32` of word
    /// `i / 32` is set exactly when [`Matcher::accept_token`] would accept
    /// token `i`. The matcher is unchanged. On error the mask is all zero.
    pub fn fill_next_token_bitmask(&mut self, mask: &mut [u32]) -> Result<(), MaskError> {
        let start = self.parse.work;
        self.mask_stats = MaskStats::default();
        // What other matchers built since serves this one too.
        self.parse.grammar = self.parse.grammar.latest();
        let filled = self.fill(mask, start).and_then(|()| self.parse.built());
        self.mask_stats.items = self.parse.work - start;
        if filled.is_err() {
            mask.fill(0);
        }
        filled
    }

    /// Fills one mask row per matcher, in parallel across cores: `masks`
    /// holds the rows one after another, each `masks.len() /
    /// matchers.len()` words wide. Returns each matcher's result, in order.
    pub fn fill_next_token_bitmasks(
        matchers: &mut [&mut Matcher],
        masks: &mut [u32],
    ) -> Vec<Result<(), MaskError>> {
        use rayon::prelude::*;
        let width = masks.len().checked_div(matchers.len()).unwrap_or(0);
        if width == 0 {
            return matchers
                .par_iter_mut()
                .map(|matcher| matcher.fill_next_token_bitmask(&mut []))
                .collect();
        }
        matchers
            .par_iter_mut()
            .zip(masks.par_chunks_mut(width))
            .map(|(matcher, row)| matcher.fill_next_token_bitmask(row))
            .collect()
    }

    fn fill(&mut self, mask: &mut [u32], start: u64) -> Result<(), MaskError> {
        let (Some(vocabulary), Some(memos)) = (self.vocabulary.clone(), self.memos.clone()) else {
            mask.fill(0);
            return Ok(());
        };
        let needed = vocabulary.mask_words();
        if mask.len() < needed {
            return Err(MaskError::BufferTooSmall {
                needed,
                given: mask.len(),
            });
        }
        mask.fill(0);
        if self.terminated {
            return Ok(());
        }
        if self.can_terminate() {
            for &id in vocabulary.stop_tokens() {
                set(mask, id);
            }
        }
        let trie = vocabulary.trie();
        for &id in trie.empty() {
            set(mask, id);
        }
        self.with_limits_kept(mask, &vocabulary, |matcher, mask| {
            matcher.fill_by_id(mask, &vocabulary);
            if matcher.parse.grammar.is_cacheable() {
                matcher.mask_stats.cached = true;
                matcher.fill_cached(mask, &vocabulary, &memos, start)
            } else {
                matcher.walk_trie(mask, &vocabulary, start)
            }
        })?;
        if let Some(bytes) = memos.size_to_report() {
            (vocabulary.mask_cache()).memos_resized(self.parse.grammar.id(), bytes);
        }
        match self.token_budget {
            Some(budget) => self.keep_within_budget(mask, &vocabulary, budget),
            None => Ok(()),
        }
    }

    /// Tokens the grammar takes by id here. Ids it never names are all
    /// alike, so one stands for them all; named ones are tried one by one.
    fn fill_by_id(&mut self, mask: &mut [u32], vocabulary: &Vocabulary) {
        if !self.parse.grammar.uses_tokens() || !self.expected().allows_tokens() {
            return;
        }
        let by_id =
            |id: TokenId| vocabulary.kind_of(id) != TokenKind::Absent && !vocabulary.is_stop(id);
        let unnamed = TokenId::new(self.parse.grammar.unnamed_token() as usize)
            .is_ok_and(|id| self.viable(Symbol::Token(id)));
        if unnamed {
            for index in 0..vocabulary.len() {
                let id = TokenId::new(index).expect("vocabulary ids fit");
                if by_id(id) && !self.parse.grammar.names_token(id.as_u32()) {
                    set(mask, id);
                }
            }
        }
        let grammar = Arc::clone(&self.parse.grammar);
        for &named in grammar.named_tokens() {
            let Ok(id) = TokenId::new(named as usize) else {
                continue;
            };
            if id.as_usize() < vocabulary.len() && by_id(id) && self.viable(Symbol::Token(id)) {
                set(mask, id);
            }
        }
    }

    fn over_budget(&self, start: u64) -> Result<(), MaskError> {
        if self.parse.work - start > self.mask_budget {
            return Err(MaskError::BudgetExceeded {
                budget: self.mask_budget,
            });
        }
        Ok(())
    }

    /// Text tokens through the mask cache.
    fn fill_cached(
        &mut self,
        mask: &mut [u32],
        vocabulary: &Arc<Vocabulary>,
        memos: &MaskMemos,
        start: u64,
    ) -> Result<(), MaskError> {
        let grammar = Arc::clone(&self.parse.grammar);
        let longest_token = vocabulary.trie().max_depth();
        // Equal rules share entries, but not contexts: a combination is
        // keyed by entry and rule.
        let mut seeds: Vec<Seed> = Vec::new();
        let entered = entered_by_seeds(&grammar, &self.parse.history);
        for &item in self.parse.history.last() {
            if !entered.is_empty()
                && entered_at_start(&grammar, &self.parse.history, item, &entered)
            {
                continue;
            }
            Seed::add(
                &grammar,
                &self.parse.history,
                item,
                longest_token,
                &mut seeds,
            );
        }
        seeds.sort_unstable_by_key(|seed| (seed.key, seed.rule));
        // Every seed's place in the parse, for the uncertain tokens; one
        // per entry and rule for the combination.
        let all_seeds = seeds.clone();
        seeds.dedup_by_key(|seed| (seed.key, seed.rule));
        self.mask_stats.entries = u32::try_from(seeds.len()).expect("row items fit in u32");
        let keys: Vec<(Key, u32)> = seeds.iter().map(|seed| (seed.key, seed.rule)).collect();
        let budget = self.mask_budget;
        let mut cost = Cost::default();
        let mut built = 0;
        let found = vocabulary
            .mask_cache()
            .combination(grammar.id(), &keys, || {
                let masking = Masking {
                    grammar: &grammar,
                    vocabulary,
                    memos,
                };
                combine(masking, &seeds, budget, &mut cost, &mut built)
            });
        self.parse.work += cost.items;
        self.mask_stats.built = built;
        self.mask_stats.nodes_walked = cost.nodes;
        self.mask_stats.context_rests = cost.rests;
        let (combined, lookup) = found?;
        match lookup {
            Lookup::Hit => self.mask_stats.hits = 1,
            Lookup::Built if built == 0 => self.mask_stats.partial_hits = 1,
            Lookup::Built | Lookup::Loaded => {}
        }
        let trie = vocabulary.trie();
        let mut scratch = Vec::new();
        combined
            .accepted
            .add_to(mask, trie.universe(), &mut scratch);
        let ranked = trie.ranked();
        let pending = (combined.uncertain.iter()).any(|&rank| !is_set(mask, ranked[rank as usize]));
        if !pending {
            return Ok(());
        }
        // What is left depends only on the parse state: checked once per
        // state.
        let uncertain = &combined.uncertain;
        let Some(state) = self.state(&mut memos.state_names()) else {
            return self
                .check_uncertain(mask, vocabulary, memos, &all_seeds, uncertain, start)
                .map(drop);
        };
        let (accepted, lookup) = vocabulary.mask_cache().checked(state, || {
            self.check_uncertain(mask, vocabulary, memos, &all_seeds, uncertain, start)
        })?;
        if lookup == Lookup::Hit {
            self.mask_stats.state_hits = 1;
            for &id in accepted.iter() {
                set(mask, id);
            }
        }
        Ok(())
    }

    /// Checks the tokens of `ranks` (sorted) that are not in `mask` yet
    /// against the full state; adds those accepted to `mask` and returns
    /// them.
    ///
    /// An uncertain token is uncertain for an item of the row (a seed)
    /// because the seed's rule can end inside it; past that place, what
    /// the parse takes depends only on where the rule began, not on the
    /// bytes inside it. So each rest is checked from the state where the
    /// rule has just matched ([`Matcher::rests_after`]), whose verdicts
    /// are kept: every count of a bounded string, every character of a
    /// property value, reaches one such state, and checks its rests once.
    /// Tokens no seed explains that way (a rest past 62 bytes, a trigger
    /// in free text) are pushed whole into the full state, in trie order so
    /// that shared prefixes are pushed once.
    fn check_uncertain(
        &mut self,
        mask: &mut [u32],
        vocabulary: &Vocabulary,
        memos: &MaskMemos,
        seeds: &[Seed],
        ranks: &[u32],
        start: u64,
    ) -> Result<Vec<TokenId>, MaskError> {
        let ranked = vocabulary.trie().ranked();
        let pending: Vec<u32> = ranks
            .iter()
            .copied()
            .filter(|&rank| !is_set(mask, ranked[rank as usize]))
            .collect();
        self.mask_stats.uncertain += u32::try_from(pending.len()).expect("tokens fit in u32");
        let mut accepted = Vec::new();
        let whole = match Self::rests_by_route(vocabulary, seeds, &pending) {
            Some((routes, whole)) => {
                // A seed whose entry leaves none of the pending tokens
                // uncertain has no rests: no row to build for it.
                for (route, rests) in routes.into_iter().filter(|(_, rests)| !rests.is_empty()) {
                    for rank in self.rests_after(vocabulary, memos, route, rests, start)? {
                        let id = ranked[rank as usize];
                        if !is_set(mask, id) {
                            set(mask, id);
                            accepted.push(id);
                        }
                    }
                }
                whole
            }
            None => pending,
        };
        let base = self.parse.history.rows();
        let mut walk = PrefixWalk::default();
        for rank in whole {
            let id = ranked[rank as usize];
            if is_set(mask, id) {
                continue;
            }
            let step = self.steps.len();
            let (viable, pushed) = walk.accepts(&mut self.parse, step, base, vocabulary.bytes(id));
            self.mask_stats.bytes_pushed += pushed;
            if viable {
                set(mask, id);
                accepted.push(id);
            }
            if let Err(error) = self.over_budget(start) {
                self.truncate(base);
                return Err(error);
            }
        }
        self.truncate(base);
        Ok(accepted)
    }

    /// The rests of the `pending` tokens (trie ranks, sorted) by the place
    /// their seed's rule began — `(rank, place)` per rest, the place being
    /// where in the token the rest starts — and the tokens that must be
    /// checked whole. `None` if an entry is no longer cached (everything is
    /// then checked whole).
    fn rests_by_route(
        vocabulary: &Vocabulary,
        seeds: &[Seed],
        pending: &[u32],
    ) -> Option<(Routes, Vec<u32>)> {
        let ranked = vocabulary.trie().ranked();
        let mut routes: Routes = Vec::new();
        let mut whole = Vec::new();
        for seed in seeds {
            let entry = vocabulary.mask_cache().cached_entry(&seed.key)?;
            let top = *seed.top();
            let route = (seed.item.kind == Kind::Node
                && matches!(top.kind, Kind::Node | Kind::Repeat))
            .then_some(Route {
                rule: seed.rule,
                origin: top.origin,
                pred: top.pred,
            });
            let at = route.map(|route| match routes.iter().position(|(r, _)| *r == route) {
                Some(at) => at,
                None => {
                    routes.push((route, Vec::new()));
                    routes.len() - 1
                }
            });
            for group in &entry.groups {
                let first = pending.partition_point(|&rank| rank < group.start);
                for &rank in pending[first..]
                    .iter()
                    .take_while(|&&rank| rank < group.end)
                {
                    let Some(at) = at else {
                        whole.push(rank);
                        continue;
                    };
                    let len = vocabulary.bytes(ranked[rank as usize]).len();
                    let mut ends = group.ends;
                    while ends != 0 {
                        let end = ends.trailing_zeros() as usize;
                        ends &= ends - 1;
                        if end == 63 || end >= len {
                            whole.push(rank);
                        } else {
                            let end = u8::try_from(end).expect("ends are below 63");
                            routes[at].1.push((rank, end));
                        }
                    }
                }
            }
        }
        whole.sort_unstable();
        whole.dedup();
        Some((routes, whole))
    }

    /// The tokens (trie ranks) among `rests` — `(rank, place)` — whose rest
    /// from the place on the parse takes once `route`'s rule has matched:
    /// the row where it has is built once, in a copy of the matcher cut
    /// back to where the rule began, and named; verdicts on rests at that
    /// state are looked up, and the others pushed in byte order (shared
    /// prefixes once) and kept.
    fn rests_after(
        &mut self,
        vocabulary: &Vocabulary,
        memos: &MaskMemos,
        route: Route,
        mut rests: Rests,
        start: u64,
    ) -> Result<Vec<u32>, MaskError> {
        let mut after = self.cut_back(route.origin as usize + 1);
        let completed = after.push(Start::CompleteAt {
            rule: route.rule,
            origin: route.origin,
            pred: route.pred,
        });
        self.parse.work += after.parse.work;
        self.mask_stats.bytes_pushed += 1;
        after.parse.built()?;
        if !completed {
            return Ok(Vec::new());
        }
        let named = after.state(&mut memos.state_names());
        // The copy named the rows the new one's items began at: they are
        // this matcher's rows too, and keep their names.
        self.states.adopt(&after.states, route.origin as usize + 1);
        let Some(state) = named else {
            // No name to keep verdicts under: check them all here.
            let found = self.walk_rests(&mut after, vocabulary, &rests, start)?;
            after.parse.built()?;
            return Ok(found
                .into_iter()
                .filter_map(|(rank, _, taken)| taken.then_some(rank))
                .collect());
        };
        let mut taken = Vec::new();
        {
            let known = memos.context_verdicts();
            if let Some(verdicts) = known.after(state) {
                rests.retain(|&(rank, end)| match verdicts.get(&(rank, end)) {
                    Some(true) => {
                        taken.push(rank);
                        false
                    }
                    Some(false) => false,
                    None => true,
                });
            }
        }
        if rests.is_empty() {
            return Ok(taken);
        }
        let found = self.walk_rests(&mut after, vocabulary, &rests, start)?;
        after.parse.built()?;
        taken.extend(
            found
                .iter()
                .filter(|&&(_, _, t)| t)
                .map(|&(rank, _, _)| rank),
        );
        (memos.context_verdicts()).keep_after(state, found.into_iter());
        Ok(taken)
    }

    /// Pushes each rest of `rests` into `after` (its last row the state
    /// they follow), sorted so that shared prefixes are pushed once:
    /// `(rank, place, taken)` per rest walked. Each distinct first byte is
    /// checked first, one step: the rests it refuses are not taken and go
    /// without sorting, a walk or a verdict (after a value with white
    /// space allowed, the rests of the 58,000 Llama 3 tokens that begin
    /// with white space, where only `,` or `}` may come).
    fn walk_rests(
        &mut self,
        after: &mut Matcher,
        vocabulary: &Vocabulary,
        rests: &[(u32, u8)],
        start: u64,
    ) -> Result<Vec<(u32, u8, bool)>, MaskError> {
        let ranked = vocabulary.trie().ranked();
        let rest =
            |&(rank, end): &(u32, u8)| &vocabulary.bytes(ranked[rank as usize])[end as usize..];
        let base = after.parse.history.rows();
        let before = after.parse.work;
        let mut first = FirstBytes::default();
        let mut rests: Vec<(u32, u8)> = rests
            .iter()
            .copied()
            .filter(|item| match rest(item).first() {
                Some(&byte) => {
                    first.check(&mut after.parse, base, byte);
                    !first.refuses(byte)
                }
                None => true,
            })
            .collect();
        rests.sort_unstable_by(|a, b| rest(a).cmp(rest(b)));
        self.mask_stats.state_rests += rests.len() as u64;
        let mut walk = PrefixWalk::default();
        let mut found = Vec::with_capacity(rests.len());
        for item in &rests {
            let (taken, pushed) = walk.accepts(&mut after.parse, 0, base, rest(item));
            self.mask_stats.bytes_pushed += pushed;
            found.push((item.0, item.1, taken));
            if self.parse.work + (after.parse.work - before) - start > self.mask_budget {
                self.parse.work += after.parse.work - before;
                return Err(MaskError::BudgetExceeded {
                    budget: self.mask_budget,
                });
            }
        }
        self.parse.work += after.parse.work - before;
        Ok(found)
    }

    /// Text tokens by walking the whole trie with the full state.
    fn walk_trie(
        &mut self,
        mask: &mut [u32],
        vocabulary: &Vocabulary,
        start: u64,
    ) -> Result<(), MaskError> {
        let trie = vocabulary.trie();
        let base = self.parse.history.rows();
        let mut node = 0;
        while node < trie.len() {
            // Back up to this node's parent.
            self.truncate(base + trie.depth(node) - 1);
            self.mask_stats.bytes_pushed += 1;
            if self.push(Start::Scan(Symbol::Byte(trie.byte(node)))) {
                for &id in trie.tokens(node) {
                    set(mask, id);
                }
                node += 1;
            } else {
                node = trie.end(node);
            }
            if let Err(error) = self.over_budget(start) {
                self.truncate(base);
                return Err(error);
            }
        }
        self.truncate(base);
        Ok(())
    }
}

/// Where an item's rule began, for the rests of its uncertain tokens (see
/// [`Matcher::rests_after`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Route {
    /// The rule (the topmost covered by the item's entry).
    rule: u32,
    /// The row where its match began.
    origin: u32,
    /// The context of the item that predicted it.
    pred: u32,
}

/// Rests of uncertain tokens: `(trie rank, place in the token)`.
type Rests = Vec<(u32, u8)>;

/// Rests by the place their seed's rule began.
type Routes = Vec<(Route, Rests)>;

/// The combination of a row's items (`seeds`, one per key and rule): their entries,
/// built where missing (counted in `built`), the union of their accepted
/// tokens, and the uncertain tokens that survive context expansion. Also
/// says whether every entry was cached. Adds what it did to `cost`, and
/// stops past `budget` Earley items.
fn combine(
    masking: Masking<'_>,
    seeds: &[Seed],
    budget: u64,
    cost: &mut Cost,
    built: &mut u32,
) -> Result<(Combined, bool), MaskError> {
    let vocabulary = masking.vocabulary;
    let trie = vocabulary.trie();
    let mut entries = Vec::with_capacity(seeds.len());
    let mut accepted = written_zeros(vocabulary.mask_words());
    // The tokens in `accepted`, while every entry is a list of ids.
    let mut count = Some(0);
    let mut scratch = Vec::new();
    for seed in seeds {
        let remaining = budget.saturating_sub(cost.items);
        let (entry, lookup) = vocabulary
            .mask_cache()
            .entry(seed.key, vocabulary.trie(), || {
                classify(masking, seed, remaining, cost)
            })?;
        if lookup == Lookup::Built {
            *built += 1;
        }
        match (&entry.accepted, &mut count) {
            (TokenSet::Ids(ids), Some(count)) => {
                for &id in ids {
                    let (index, bit) = (id as usize / 32, 1 << (id % 32));
                    *count += usize::from(accepted[index] & bit == 0);
                    accepted[index] |= bit;
                }
            }
            (set, _) => {
                set.add_to(&mut accepted, trie.universe(), &mut scratch);
                count = None;
            }
        }
        entries.push((seed.rule, entry));
    }
    // Per item: the rest of each uncertain token after each place the
    // item's rule can end in it, checked against what can follow the rule.
    let ranked = trie.ranked();
    // A bitset of ranks: cleared and read back in words, not per token.
    let mut uncertain = RankSet::new(ranked.len());
    for &(rule, ref entry) in &entries {
        let mut rests: Vec<Rest<'_>> = Vec::new();
        let listed: u32 = entry.groups.iter().map(|g| g.end - g.start).sum();
        let first = if listed >= FIRST_BYTES_AT {
            FirstBytes::complete(masking, rule, cost)?
        } else {
            masking.memos.context_verdicts().first_bytes(rule)
        };
        for group in &entry.groups {
            // With one place to end, the rests of a run of tokens that
            // agree up to it start alike: a run refused at that byte (the
            // words after a space where a key must follow) is skipped at
            // once, ranks being in byte order.
            let single = group
                .ends
                .is_power_of_two()
                .then(|| group.ends.trailing_zeros() as usize);
            let mut rank = group.start;
            while rank < group.end {
                let id = ranked[rank as usize];
                let bytes = vocabulary.bytes(id);
                if let Some(end) = single.filter(|&end| end < 63 && end < bytes.len())
                    && first.refuses(bytes[end])
                {
                    let prefix = &bytes[..=end];
                    let run = ranked[rank as usize..group.end as usize]
                        .partition_point(|&other| vocabulary.bytes(other).starts_with(prefix));
                    rank += u32::try_from(run).expect("ranks fit in u32");
                    continue;
                }
                if !is_set(&accepted, id) && !uncertain.contains(rank) {
                    let mut ends = group.ends;
                    while ends != 0 {
                        let end = ends.trailing_zeros() as usize;
                        ends &= ends - 1;
                        if end == 63 || end >= bytes.len() {
                            // Too far in to follow, or past a trigger: left
                            // to the full check.
                            uncertain.insert(rank);
                        } else if !first.refuses(bytes[end]) {
                            rests.push(Rest {
                                bytes: &bytes[end..],
                                rank,
                                end: u8::try_from(end).expect("ends are below 63"),
                            });
                        }
                    }
                }
                rank += 1;
            }
        }
        if !rests.is_empty() {
            let limits = ContextLimits::for_listed(listed);
            expand(masking, (rule, limits), rests, &mut uncertain, budget, cost)?;
        }
    }
    let uncertain = uncertain.ranks();
    let reused = *built == 0;
    let combined = Combined {
        accepted: TokenSet::new(accepted, count, trie.universe(), trie.universe_len()),
        uncertain,
    };
    Ok((combined, reused))
}
