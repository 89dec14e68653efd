//! Limits on the matches of a rule (`name [max_tokens=N] ::= …`,
//! `[max_bytes=N]`): each match spans at most `N` tokens, or holds at most
//! `N` bytes, and once it nears its limit only the ways out of it are
//! allowed.
//!
//! A match that would end past its limit does not end (the rows of the
//! matcher's own steps check it, see [`Limits`]); a match still open must
//! keep a way to end in what its limit leaves: the fewest symbols that
//! end it — a shortest path up the chart, as for a token budget
//! ([`Ends`]) — spelled a token each. A step that leaves some open limited
//! match on every derivation without one is refused.
//!
//! Masks are made for the grammar without limits (so the mask cache and
//! its memos serve every count alike), then the tokens a limit may refuse
//! are taken out: for each token length, a bound says whether any token of
//! up to that many bytes can take a match past its limit here — a match
//! the token opens needs at most [`Distances::most_within`] to end, one
//! open now at most what the places a token reaches there need, plus the
//! fewest that end the matches above ([`Matcher::places`]). Of the tokens
//! longer than every length the bound clears, those a mask-cache entry
//! accepts are decided by what they leave to end the entry's match (kept
//! by the mask cache, as for budgets); the rest are walked over the trie
//! with the limits checked.
//!
//! [`Limits`]: super::earley::Limits
//! [`Distances::most_within`]: crate::grammar::distances::Distances::most_within

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::earley::{Start, Symbol};
use super::finish::{Ends, Open, beyond, fits};
use super::mask::is_set;
use super::seed::Seed;
use super::{MaskError, Matcher};
use crate::TokenId;
use crate::cache::EndCosts;
use crate::grammar::distances::{ANY_LENGTH, Distances, TOKEN_LENGTHS, UNREACHABLE};
use crate::vocab::{TokenKind, Vocabulary};
use crate::zeros::written_zeros;

/// The costs whose verdicts [`Matcher::keeps_by_costs`] keeps in a table.
const SMALL_COSTS: usize = 64;

/// A verdict on the tokens of one cost and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Unknown,
    Fits,
    Over,
}

/// What a row's mask-cache entries decide of the limits, as masks.
struct Decided {
    /// Tokens an entry accepts that keep every limit.
    kept: Vec<u32>,
    /// Tokens every entry that accepts them refuses, and that no entry
    /// leaves to the full state.
    refused: Vec<u32>,
}

impl Matcher {
    /// Whether, at the last row, the output can still end with every
    /// limited match open now ending within its limit (true for grammars
    /// without limits).
    pub(super) fn within_limits(&self) -> bool {
        if !self.parse.check_limits {
            return true;
        }
        match self.parse.grammar.distances() {
            Ok(distances) => Ends::new(&distances, 0).left(&self.parse) != UNREACHABLE,
            Err(_) => false,
        }
    }

    /// Runs `fill` (which makes the mask of the grammar without limits),
    /// then clears from `mask` the tokens after which some limited match
    /// could not end within its limit.
    pub(super) fn with_limits_kept(
        &mut self,
        mask: &mut [u32],
        vocabulary: &Arc<Vocabulary>,
        fill: impl FnOnce(&mut Self, &mut [u32]) -> Result<(), MaskError>,
    ) -> Result<(), MaskError> {
        let check = std::mem::replace(&mut self.parse.check_limits, false);
        let filled = fill(self, mask);
        self.parse.check_limits = check;
        filled?;
        if check {
            self.keep_within_limits(mask, vocabulary)?;
        }
        Ok(())
    }

    /// Clears from `mask` the tokens after which some limited match could
    /// not end within its limit: none if no token can take one past it
    /// here; else of the tokens too long for the bounds to clear, what the
    /// mask-cache entries decide, and the others walked.
    fn keep_within_limits(
        &mut self,
        mask: &mut [u32],
        vocabulary: &Vocabulary,
    ) -> Result<(), MaskError> {
        let distances = self
            .parse
            .grammar
            .distances()
            .map_err(|failure| MaskError::Build(failure.to_string()))?;
        let trie = vocabulary.trie();
        let longest = trie.max_depth();
        let mut ends = Ends::new(&distances, 0);
        if self.limits_hold(&distances, &mut ends, ANY_LENGTH, longest) {
            return Ok(());
        }
        // The bounds grow with the length: tokens up to the longest length
        // they clear are sure to keep the limits.
        // (By bisection over the lengths shorter than the longest token.)
        let classes = TOKEN_LENGTHS
            .iter()
            .take_while(|&&bytes| bytes < longest)
            .count();
        let (mut low, mut high) = (0, classes);
        while low < high {
            let middle = usize::midpoint(low, high);
            if self.limits_hold(&distances, &mut ends, middle, TOKEN_LENGTHS[middle]) {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        let safe = low.checked_sub(1);
        let mut open = mask.to_vec();
        if let Some(length) = safe {
            for (open, &short) in open
                .iter_mut()
                .zip(trie.up_to_length(TOKEN_LENGTHS[length]))
            {
                *open &= !short;
            }
        }
        for &id in vocabulary.stop_tokens() {
            open[id.as_usize() / 32] &= !(1 << (id.as_usize() % 32));
        }
        if open.iter().all(|&word| word == 0) {
            return Ok(());
        }
        if let Some(decided) = self.limits_by_entries(&open, vocabulary, &mut ends, &distances)? {
            for ((word, open), (&kept, &refused)) in
                (mask.iter_mut().zip(&mut open)).zip(decided.kept.iter().zip(&decided.refused))
            {
                *word &= !refused;
                *open &= !kept & !refused;
            }
        }
        let by_text = self.keep_by_id(mask, &open, vocabulary, &mut ends);
        self.walk_within_limits(mask, vocabulary, &by_text, &mut ends)
    }

    /// Checks the tokens of `open` the grammar may take by id (clearing
    /// from `mask` those the limits refuse), and returns the text tokens
    /// left to walk.
    fn keep_by_id(
        &mut self,
        mask: &mut [u32],
        open: &[u32],
        vocabulary: &Vocabulary,
        ends: &mut Ends<'_>,
    ) -> Vec<TokenId> {
        let uses_tokens = self.parse.grammar.uses_tokens();
        let takes_any_by_id = uses_tokens
            && TokenId::new(self.parse.grammar.unnamed_token() as usize)
                .is_ok_and(|id| self.viable(Symbol::Token(id)));
        let mut by_text = Vec::new();
        for (index, &word) in open.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let bit = bits.trailing_zeros();
                bits &= bits - 1;
                let id = TokenId::new(index * 32 + bit as usize).expect("mask ids fit");
                let by_id = vocabulary.kind_of(id) == TokenKind::Special
                    || (uses_tokens
                        && (takes_any_by_id || self.parse.grammar.names_token(id.as_u32())));
                if by_id {
                    if self.keeps_limits_after(Symbol::Token(id), ends) {
                        continue;
                    }
                    // Refused by id; its text may still be taken.
                    mask[index] &= !(1 << bit);
                }
                if !vocabulary.bytes(id).is_empty() {
                    by_text.push(id);
                }
            }
        }
        by_text
    }

    /// What the row's mask-cache entries decide of the limits, for the
    /// tokens of `open`. A token an
    /// entry accepts stays inside the topmost match the entry covers; where
    /// no limited rule can match inside that match, the token keeps every
    /// limit exactly when the output can still end from there, after the
    /// symbols the token leaves to end that match ([`EndCosts`], kept by the
    /// mask cache) and with its bytes counted in every match above. `None`
    /// where the entries say nothing (no cache, or an entry dropped).
    ///
    /// [`EndCosts`]: crate::cache::EndCosts
    fn limits_by_entries(
        &self,
        open: &[u32],
        vocabulary: &Vocabulary,
        ends: &mut Ends<'_>,
        distances: &Distances,
    ) -> Result<Option<Decided>, MaskError> {
        if !self.parse.grammar.is_cacheable() {
            return Ok(None);
        }
        let grammar = &*self.parse.grammar;
        let trie = vocabulary.trie();
        let words = vocabulary.mask_words();
        let mut seeds = Vec::new();
        for &item in self.parse.history.last() {
            Seed::add(
                grammar,
                &self.parse.history,
                item,
                trie.max_depth(),
                &mut seeds,
            );
        }
        let mut kept: Vec<u32> = written_zeros(words);
        let mut over: Vec<u32> = written_zeros(words);
        let mut unknown: Vec<u32> = written_zeros(words);
        let mut here: Vec<u32> = written_zeros(words);
        let mut mine: Vec<u32> = written_zeros(words);
        let mut scratch = Vec::new();
        let mut entries = Vec::with_capacity(seeds.len());
        for seed in &seeds {
            let Some(entry) = vocabulary.mask_cache().cached_entry(&seed.key) else {
                return Ok(None);
            };
            entries.push(Arc::clone(&entry));
            here.fill(0);
            entry
                .accepted
                .add_to(&mut here, trie.universe(), &mut scratch);
            let mut any = 0;
            for (here, &open) in here.iter_mut().zip(open) {
                *here &= open;
                any |= *here;
            }
            if any == 0 {
                continue;
            }
            // The matches a token opens inside the entry's topmost match
            // must keep their limits on their own (longer tokens are left
            // to the walk). The matches it covers below its topmost one
            // are never limited (`Seed::add` stops at a limited match).
            let fit = (0..TOKEN_LENGTHS.len())
                .rev()
                .find(|&length| distances.limits_fit(length, seed.rule));
            let Some(fit) = fit else {
                for (unknown, &here) in unknown.iter_mut().zip(&here) {
                    *unknown |= here;
                }
                continue;
            };
            if fit < ANY_LENGTH {
                let short = trie.up_to_length(TOKEN_LENGTHS[fit]);
                for ((unknown, here), &short) in unknown.iter_mut().zip(&mut here).zip(short) {
                    *unknown |= *here & !short;
                    *here &= short;
                }
            }
            let top = seed.top();
            let open = Open {
                rule: seed.rule,
                origin: top.origin,
                pred: top.pred,
            };
            let costs = vocabulary.mask_cache().end_costs(seed.key, || {
                self.end_costs(seed, &entry.accepted, vocabulary, distances)
            })?;
            self.keeps_by_costs(open, &costs, (&here, &mut mine), vocabulary, ends);
            for ((kept, over), (&mine, &here)) in
                (kept.iter_mut().zip(over.iter_mut())).zip(mine.iter().zip(&here))
            {
                *kept |= mine;
                *over |= here & !mine;
            }
        }
        let refused = if over.iter().any(|&word| word != 0) {
            beyond(trie, &entries, over, &kept, &unknown)
        } else {
            over
        };
        Ok(Some(Decided { kept, refused }))
    }

    /// Sets in `mine` the tokens of `here` — tokens that stay inside `open`
    /// and leave it the `costs` to end — after which the output can still
    /// end with every limited match within its limit. One check per cost
    /// (the least, by far the most common, for every length at once: the
    /// longest that fits, found by bisection), then the tokens one by one.
    fn keeps_by_costs(
        &self,
        open: Open,
        costs: &EndCosts,
        (here, mine): (&[u32], &mut [u32]),
        vocabulary: &Vocabulary,
        ends: &mut Ends<'_>,
    ) {
        let grammar = &*self.parse.grammar;
        let trie = vocabulary.trie();
        // Limits in bytes count a token's length; limits in tokens only
        // that it has bytes.
        let by_length = (grammar.limited().iter()).any(|&rule| grammar.rule(rule).max_bytes != 0);
        let longest = if by_length { trie.max_depth() } else { 1 };
        // Verdicts by (cost, length): small costs in a table (most tokens
        // share a few), the others in a map.
        let mut table = vec![Verdict::Unknown; SMALL_COSTS * (longest + 1)];
        let mut verdicts: FxHashMap<(u64, u64), bool> = FxHashMap::default();
        let mut verdict = |cost: u64, length: u64| {
            let length = if by_length { length } else { 1 };
            if cost == UNREACHABLE {
                return false;
            }
            let mut decide = || ends.ends_after_token(&self.parse, open, cost, length);
            let small = (usize::try_from(cost).ok())
                .zip(usize::try_from(length).ok())
                .filter(|&(cost, length)| cost < SMALL_COSTS && length <= longest);
            let Some((cost, length)) = small else {
                return *verdicts.entry((cost, length)).or_insert_with(decide);
            };
            let at = cost * (longest + 1) + length;
            if table[at] == Verdict::Unknown {
                table[at] = if decide() {
                    Verdict::Fits
                } else {
                    Verdict::Over
                };
            }
            table[at] == Verdict::Fits
        };
        let (mut low, mut high) = (0, longest);
        while low < high {
            let middle = (low + high).div_ceil(2);
            if verdict(costs.least, middle as u64) {
                low = middle;
            } else {
                high = middle - 1;
            }
        }
        let up_to = if low >= longest { usize::MAX } else { low };
        // Sure below one length class, surely not above the next.
        let short = (TOKEN_LENGTHS.iter().rev())
            .find(|&&length| length <= up_to)
            .map(|&length| trie.up_to_length(length));
        let long = (TOKEN_LENGTHS.iter())
            .find(|&&length| length > up_to)
            .map(|&length| trie.up_to_length(length));
        mine.fill(0);
        for (index, &word) in here.iter().enumerate() {
            let short = short.map_or(0, |short| short[index]);
            mine[index] |= word & short;
            let mut bits = word & !short & long.map_or(u32::MAX, |long| long[index]);
            while bits != 0 {
                let bit = bits.trailing_zeros();
                bits &= bits - 1;
                let id = TokenId::new(index * 32 + bit as usize).expect("mask ids fit");
                if up_to == usize::MAX || vocabulary.bytes(id).len() <= up_to {
                    mine[index] |= 1 << bit;
                }
            }
        }
        let mut decide = |id: u32, cost: u64, mine: &mut [u32]| {
            let (index, bit) = (id as usize / 32, 1 << (id % 32));
            let token = TokenId::new(id as usize).expect("mask ids fit");
            if verdict(cost, vocabulary.bytes(token).len() as u64) {
                mine[index] |= bit;
            } else {
                mine[index] &= !bit;
            }
        };
        // The tokens of `here` among those that leave more to end the
        // match: looked up one by one where they are few, else read off
        // the list.
        let count: usize = here.iter().map(|word| word.count_ones() as usize).sum();
        if count.saturating_mul(16) < costs.above.len() {
            for (index, &word) in here.iter().enumerate() {
                let mut bits = word;
                while bits != 0 {
                    let bit = bits.trailing_zeros();
                    bits &= bits - 1;
                    let id = u32::try_from(index * 32).expect("ids fit in u32") + bit;
                    if let Ok(at) = costs.above.binary_search_by_key(&id, |&(id, _)| id) {
                        decide(id, costs.above[at].1, mine);
                    }
                }
            }
        } else {
            for &(id, cost) in &costs.above {
                if here[id as usize / 32] & (1 << (id % 32)) != 0 {
                    decide(id, cost, mine);
                }
            }
        }
    }

    /// Whether no token of up to `bytes` bytes (the length class
    /// `length`) can take a limited match past its limit here: neither
    /// one it opens nor one open now.
    fn limits_hold(
        &self,
        distances: &Distances,
        ends: &mut Ends<'_>,
        length: usize,
        bytes: usize,
    ) -> bool {
        let bytes = bytes as u64;
        let grammar = &*self.parse.grammar;
        let opened_fit = grammar.limited().iter().all(|&rule| {
            let record = grammar.rule(rule);
            let most = distances.most_within(length, rule);
            (record.max_tokens == 0 || most.saturating_add(1) <= u64::from(record.max_tokens))
                && (record.max_bytes == 0
                    || most.saturating_add(bytes) <= u64::from(record.max_bytes))
        });
        if !opened_fit {
            return false;
        }
        let mut hold = true;
        for (inside, open) in self.places(distances, length) {
            ends.above(&self.parse, open, inside, |above, cost| {
                if grammar.rule(above.rule).is_limited()
                    && !fits(&self.parse, above, cost, bytes, 0)
                {
                    hold = false;
                }
            });
            if !hold {
                return false;
            }
        }
        true
    }

    /// Whether `symbol` is taken and leaves every limited match a way to
    /// end within its limit; the matcher is unchanged.
    fn keeps_limits_after(&mut self, symbol: Symbol, ends: &mut Ends<'_>) -> bool {
        let rows = self.parse.history.rows();
        if !self.push(Start::Scan(symbol)) {
            return false;
        }
        let kept = ends.left(&self.parse) != UNREACHABLE;
        self.truncate(rows);
        kept
    }

    /// Walks the trie over the text tokens `by_text` (limits checked): in
    /// `mask`, those the limits keep are set, the others cleared. A node
    /// after which some limited match cannot end, even with the most bytes
    /// a token goes on below it, is not walked below.
    fn walk_within_limits(
        &mut self,
        mask: &mut [u32],
        vocabulary: &Vocabulary,
        by_text: &[TokenId],
        ends: &mut Ends<'_>,
    ) -> Result<(), MaskError> {
        if by_text.is_empty() {
            return Ok(());
        }
        let trie = vocabulary.trie();
        let ranked = trie.ranked();
        let mut walked: Vec<u32> = written_zeros(mask.len());
        for id in by_text {
            walked[id.as_usize() / 32] |= 1 << (id.as_usize() % 32);
        }
        // Per rank: how many tokens to walk come before it.
        let mut before = Vec::with_capacity(ranked.len() + 1);
        before.push(0u32);
        for &id in ranked {
            before.push(before[before.len() - 1] + u32::from(is_set(&walked, id)));
        }
        let count = |(start, end): (u32, u32)| before[end as usize] - before[start as usize];
        let clear = |mask: &mut [u32], (start, end): (u32, u32)| {
            for &id in &ranked[start as usize..end as usize] {
                if is_set(&walked, id) {
                    mask[id.as_usize() / 32] &= !(1 << (id.as_usize() % 32));
                }
            }
        };
        let base = self.parse.history.rows();
        let mut node = 0;
        while node < trie.len() {
            let subtree = trie.subtree_ranks(node);
            if count(subtree) == 0 {
                node = trie.end(node);
                continue;
            }
            self.truncate(base + trie.depth(node) - 1);
            let mut alive = self.push(Start::Scan(Symbol::Byte(trie.byte(node))));
            if alive && trie.height(node) > 0 {
                // Whether any token below may still fit.
                ends.spare = trie.height(node) as u64;
                alive = ends.left(&self.parse) != UNREACHABLE;
                ends.spare = 0;
            }
            if !alive {
                clear(mask, subtree);
                node = trie.end(node);
                continue;
            }
            let own = trie.own_ranks(node);
            if count(own) > 0 {
                let kept = ends.left(&self.parse) != UNREACHABLE;
                for &id in &ranked[own.0 as usize..own.1 as usize] {
                    if is_set(&walked, id) {
                        let bit = 1 << (id.as_usize() % 32);
                        if kept {
                            mask[id.as_usize() / 32] |= bit;
                        } else {
                            mask[id.as_usize() / 32] &= !bit;
                        }
                    }
                }
            }
            node += 1;
        }
        self.truncate(base);
        self.parse.built()
    }
}
