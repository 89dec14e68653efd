//! Building one Earley row: scan the previous row with a symbol, then close
//! the new row under prediction and completion.
//!
//! The row under construction is its own work list: items are appended once
//! (a hash set removes duplicates) and processed in order. Completions of
//! matches that began in the same row (empty matches) are remembered, so an
//! item that arrives later still sees them — nullable rules need no special
//! grammar transformation.

use rustc_hash::FxHashSet;

use super::history::{History, INDEX_ABOVE, Waiting};
use super::item::{Item, Kind};
use super::lookahead::{Lookahead, Settled};
use crate::TokenId;
use crate::grammar::Grammar;
use crate::scanner;
use crate::tables::{Edge, PatternRecord, RuleRecord};

/// One input symbol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Symbol {
    /// A byte of text.
    Byte(u8),
    /// A token matched by id.
    Token(TokenId),
}

/// What a row starts from.
#[derive(Clone, Copy, Debug)]
pub(super) enum Start {
    /// Row 0 of a matcher: the grammar's entry.
    Entry,
    /// Row 1 of a seeded parse: one item, on its own.
    Seed(Item),
    /// Row 1 of a context parse: the rule has matched from row 0.
    Complete(u32),
    /// The row after the last one, where `rule`, begun at row `origin`
    /// by an item of context `pred`, has matched: what follows the rule
    /// there, without the text it matched.
    CompleteAt { rule: u32, origin: u32, pred: u32 },
    /// The row after the last one and a symbol.
    Scan(Symbol),
}

/// Rows up to this many items find duplicates by scanning; larger ones use a
/// hash set (most rows are small, and scanning a few items beats hashing).
const SCAN_LIMIT: usize = 24;

/// Buffers reused from row to row.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    items: Vec<Item>,
    /// The items, once there are more than [`SCAN_LIMIT`].
    seen: FxHashSet<Item>,
    /// Completions made in this row: (rule, origin, pred, ctx).
    completed: Vec<(u32, u32, u32, u32)>,
    /// The completions, once there are more than [`SCAN_LIMIT`].
    completed_set: FxHashSet<(u32, u32, u32, u32)>,
    /// Completions of empty matches in this row: (rule, pred, ctx).
    empty: Vec<(u32, u32, u32)>,
    /// The row's items by awaited rule, once it has more than
    /// [`INDEX_ABOVE`]: the first `indexed` of them.
    waiting: Waiting,
    indexed: usize,
    /// Places of items that wait for a rule just completed.
    parents: Vec<u32>,
    /// Pending rules the row predicted (see [`RuleRecord::PENDING`]): the
    /// row is incomplete until they are built.
    missing: Vec<u32>,
    /// Items tried in this row, new or not: the row's work, which grows
    /// with the ways to derive it (an ambiguous grammar tries each item
    /// many times), where the count of items does not.
    tried: u64,
}

/// The row being built and everything it needs.
struct Builder<'a> {
    grammar: &'a Grammar,
    history: &'a History,
    lookahead: &'a mut Lookahead,
    scratch: &'a mut Scratch,
    /// The index of the row being built.
    row: u32,
    /// With limits enforced (see [`Limits`]), the step building the row.
    limits: Option<u32>,
}

/// Whether a row checks the limits of limited rules
/// ([`RuleRecord::is_limited`]): a match that would end past its limit
/// does not end. The rows of a matcher's own steps check them; the walks
/// that build masks do not (their rows are what the grammar without limits
/// allows, the same for every count, so their caches hold), and the
/// matcher checks the tokens a limit may refuse afterwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Limits {
    /// Checked: the row is built by step `step`.
    Checked { step: u32 },
    /// Not checked.
    Ignored,
}

/// Builds the row after `history`'s last row from `start` into `scratch`,
/// and settles its lookahead threads.
pub(super) fn build(
    grammar: &Grammar,
    history: &History,
    (lookahead, scratch): (&mut Lookahead, &mut Scratch),
    start: Start,
    limits: Limits,
) -> Settled {
    scratch.items.clear();
    scratch.seen.clear();
    scratch.completed.clear();
    scratch.completed_set.clear();
    scratch.empty.clear();
    scratch.waiting.clear();
    scratch.indexed = 0;
    scratch.tried = 0;
    scratch.missing.clear();
    let row = u32::try_from(history.rows()).expect("rows fit in u32");
    let mut builder = Builder {
        grammar,
        history,
        lookahead,
        scratch,
        row,
        limits: match limits {
            Limits::Checked { step } if grammar.has_limits() => Some(step),
            _ => None,
        },
    };
    match start {
        Start::Entry => builder.add(Item {
            kind: Kind::Root,
            a: grammar.root().as_u32(),
            aux: 0,
            origin: 0,
            pred: 0,
            ctx: 0,
        }),
        Start::Seed(item) => builder.add(item),
        Start::CompleteAt { rule, origin, pred } => builder.complete(
            rule,
            Item {
                kind: Kind::Ended,
                a: rule,
                aux: 0,
                origin,
                pred,
                ctx: 0,
            },
        ),
        Start::Complete(rule) => builder.complete(
            rule,
            Item {
                kind: Kind::Ended,
                a: rule,
                aux: 0,
                origin: 0,
                pred: 0,
                ctx: 0,
            },
        ),
        Start::Scan(symbol) => {
            for &item in history.last() {
                builder.scan(item, symbol);
            }
        }
    }
    builder.close();
    builder.lookahead.settle(&mut builder.scratch.items, row)
}

impl Scratch {
    /// The pending rules the last row predicted.
    pub(super) fn missing(&self) -> &[u32] {
        &self.missing
    }

    /// The items of the row built last.
    pub(super) fn items(&self) -> &[Item] {
        &self.items
    }

    /// The work of the last row built: items tried, new or not.
    pub(super) fn work(&self) -> u64 {
        self.tried
    }
}

impl Builder<'_> {
    fn add(&mut self, item: Item) {
        self.scratch.tried += 1;
        if insert(&self.scratch.items, &mut self.scratch.seen, item) {
            self.scratch.items.push(item);
        }
    }

    /// Moves `item` of the previous row over `symbol`.
    fn scan(&mut self, item: Item, symbol: Symbol) {
        let grammar = self.grammar;
        match item.kind {
            Kind::Node => {
                for edge in grammar.edges(item.a) {
                    let moves = match (edge.label(), symbol) {
                        (Edge::Bytes { lo, hi }, Symbol::Byte(b)) => (lo..=hi).contains(&b),
                        (Edge::Tokens { set }, Symbol::Token(t)) => {
                            grammar.token_set_contains(set, t.as_u32())
                        }
                        _ => false,
                    };
                    if moves {
                        self.add(item.with(Kind::Node, edge.target, 0));
                    }
                }
            }
            Kind::Free => {
                let Symbol::Byte(byte) = symbol else {
                    return;
                };
                let rule = grammar.rule(item.a);
                let Some(scanner) = grammar.scanner(rule.body) else {
                    return;
                };
                let (state, found) = scanner.step(item.aux, byte);
                if found == scanner::NONE {
                    self.add(item.with(Kind::Free, item.a, state));
                    return;
                }
                let global = grammar.dispatch(rule).first_pattern + found;
                match grammar.pattern(global).kind {
                    PatternRecord::TRIGGER => self.add(item.with(Kind::Arm, item.a, global)),
                    PatternRecord::STOP => self.add(item.with(Kind::Ended, item.a, 0)),
                    _ => {}
                }
            }
            Kind::Any if matches!(symbol, Symbol::Byte(_)) => self.add(item),
            Kind::TokenFree => match symbol {
                Symbol::Byte(_) => self.add(item),
                Symbol::Token(token) => {
                    let dispatch = grammar.dispatch(grammar.rule(item.a));
                    let first = dispatch.first_pattern;
                    let patterns = first..first + dispatch.pattern_count;
                    let matching = |kind| {
                        patterns.clone().find(|&p| {
                            let pattern = grammar.pattern(p);
                            pattern.kind == kind && pattern.offset == token.as_u32()
                        })
                    };
                    if matching(PatternRecord::EXCLUDE).is_some() {
                        return;
                    }
                    match matching(PatternRecord::TRIGGER) {
                        Some(p) => self.add(item.with(Kind::TokenArm, item.a, p)),
                        None => self.add(item),
                    }
                }
            },
            Kind::Repeat
            | Kind::Arm
            | Kind::TokenArm
            | Kind::Ended
            | Kind::Root
            | Kind::SeedEnd
            | Kind::Wild
            | Kind::Done
            | Kind::Any => {}
        }
    }

    /// Processes the row's items until no new ones appear.
    fn close(&mut self) {
        let mut next = 0;
        while next < self.scratch.items.len() {
            let item = self.scratch.items[next];
            next += 1;
            self.process(item);
        }
    }

    fn process(&mut self, item: Item) {
        let grammar = self.grammar;
        match item.kind {
            Kind::Node => {
                let node = item.a;
                if grammar.is_final(node) {
                    if grammar.in_lookahead(node) {
                        self.lookahead.success(item.ctx, self.row);
                    } else {
                        self.complete(grammar.node_rule(node), item);
                    }
                }
                if !grammar.waits(node) {
                    return;
                }
                let first = grammar.first_edge(node);
                for (i, edge) in grammar.edges(node).iter().enumerate() {
                    match edge.label() {
                        Edge::Rule { rule } => {
                            let target = item.with(Kind::Node, edge.target, 0);
                            self.call(rule, item.ctx, |builder, ctx| {
                                builder.add(Item { ctx, ..target });
                            });
                        }
                        Edge::Repeat { .. } => {
                            let index = first + u32::try_from(i).expect("edge index fits");
                            self.add(item.with(Kind::Repeat, index, 0));
                        }
                        Edge::Bytes { .. } | Edge::Tokens { .. } => {}
                    }
                }
            }
            Kind::Repeat => {
                let repeat = grammar.repeat(item.a);
                let target = item.with(Kind::Node, repeat.target, 0);
                if item.aux >= repeat.min {
                    self.add(target);
                }
                if repeat.below_max(item.aux) {
                    // An empty iteration can be repeated up to the bound, so
                    // it satisfies the least count; the item itself stays
                    // for non-empty iterations.
                    self.call(repeat.rule, item.ctx, |builder, ctx| {
                        builder.add(Item { ctx, ..target });
                    });
                }
            }
            Kind::Free => {
                let rule = grammar.rule(item.a);
                if grammar.dispatch(rule).stop_at_end == 1 {
                    self.complete(item.a, item);
                }
            }
            Kind::TokenFree | Kind::Ended => self.complete(item.a, item),
            Kind::Arm | Kind::TokenArm => {
                let arm = grammar.pattern(item.aux).arm;
                self.call(arm, item.ctx, |builder, ctx| {
                    builder.after_arm(item, ctx);
                });
            }
            Kind::Root => {
                self.call(item.a, 0, |builder, ctx| {
                    builder.add(item.with(Kind::Done, item.a, 0).with_ctx(ctx));
                });
            }
            Kind::SeedEnd | Kind::Wild | Kind::Done | Kind::Any => {}
        }
    }

    /// Predicts `rule` in context `ctx`, and applies
    /// `advance` for each empty match of `rule` already completed in this row.
    fn call(&mut self, rule: u32, ctx: u32, advance: impl Fn(&mut Self, u32)) {
        self.predict(rule, ctx);
        let mut k = 0;
        while k < self.scratch.empty.len() {
            let (done, pred, done_ctx) = self.scratch.empty[k];
            k += 1;
            if done == rule && pred == ctx {
                advance(self, done_ctx);
            }
        }
    }

    fn predict(&mut self, rule: u32, ctx: u32) {
        let record = self.grammar.rule(rule);
        let (kind, a, aux) = match record.kind {
            RuleRecord::AUTOMATON => (Kind::Node, record.body, 0),
            RuleRecord::DISPATCH => (Kind::Free, rule, scanner::START),
            RuleRecord::PENDING => {
                // The row is made again once the rule is built.
                self.scratch.missing.push(rule);
                return;
            }
            _ => (Kind::TokenFree, rule, 0),
        };
        self.add(Item {
            kind,
            a,
            aux,
            origin: self.row,
            pred: ctx,
            ctx,
        });
    }

    /// After an arm of the dispatch of `item` matched, in context `ctx`.
    fn after_arm(&mut self, item: Item, ctx: u32) {
        let rule = self.grammar.rule(item.a);
        let item = item.with_ctx(ctx);
        if self.grammar.dispatch(rule).repeat == 1 {
            let free = if item.kind == Kind::Arm {
                item.with(Kind::Free, item.a, scanner::START)
            } else {
                item.with(Kind::TokenFree, item.a, 0)
            };
            self.add(free);
        } else {
            self.add(item.with(Kind::Ended, item.a, 0));
        }
    }

    /// Rule `rule`, begun at `child.origin` in context `child.pred`, has
    /// matched up to this row: advance every item that waits for it.
    fn complete(&mut self, rule: u32, child: Item) {
        if let Some(step) = self.limits
            && !self.within_limit(rule, child.origin, step)
        {
            return;
        }
        let mut ctx = child.ctx;
        let lookahead = self.grammar.rule(rule).lookahead;
        if lookahead != RuleRecord::NONE {
            let (thread, created) = self.lookahead.thread(rule, self.row);
            if let Some(thread_ctx) = created {
                self.add(Item {
                    kind: Kind::Node,
                    a: lookahead,
                    aux: 0,
                    origin: self.row,
                    pred: thread_ctx,
                    ctx: thread_ctx,
                });
            }
            ctx = self.lookahead.guarded(ctx, thread);
        }
        let completion = (rule, child.origin, child.pred, ctx);
        let scratch = &mut *self.scratch;
        if !insert(&scratch.completed, &mut scratch.completed_set, completion) {
            return;
        }
        scratch.completed.push(completion);
        if child.origin == self.row {
            self.scratch.empty.push((rule, child.pred, ctx));
            // Items that arrive later see the completion when they call
            // the rule; the ones here now are advanced now.
            let scratch = &mut *self.scratch;
            if scratch.items.len() > INDEX_ABOVE {
                let new = &scratch.items[scratch.indexed..];
                scratch.waiting.extend(self.grammar, new, scratch.indexed);
                scratch.indexed = scratch.items.len();
                scratch.parents.clear();
                scratch.parents.extend_from_slice(scratch.waiting.get(rule));
                for k in 0..self.scratch.parents.len() {
                    let parent = self.scratch.items[self.scratch.parents[k] as usize];
                    if parent.ctx == child.pred {
                        self.advance(parent, rule, ctx, true);
                    }
                }
            } else {
                let mut k = 0;
                while k < self.scratch.items.len() {
                    let parent = self.scratch.items[k];
                    k += 1;
                    if parent.ctx == child.pred {
                        self.advance(parent, rule, ctx, true);
                    }
                }
            }
        } else {
            let history = self.history;
            let parents = history.row(child.origin as usize);
            if let Some(waiting) = history.waiting(child.origin as usize) {
                for &place in waiting.get(rule) {
                    let parent = parents[place as usize];
                    if parent.ctx == child.pred {
                        self.advance(parent, rule, ctx, false);
                    }
                }
            } else {
                for &parent in parents {
                    if parent.ctx == child.pred {
                        self.advance(parent, rule, ctx, false);
                    }
                }
            }
        }
    }

    /// Whether a match of `rule` from row `origin` to this row, built by
    /// `step`, keeps to the rule's limits: at most `max_bytes` symbols,
    /// spread over at most `max_tokens` steps.
    fn within_limit(&self, rule: u32, origin: u32, step: u32) -> bool {
        let record = self.grammar.rule(rule);
        if !record.is_limited() {
            return true;
        }
        let symbols = self.row - origin;
        if record.max_bytes != 0 && symbols > record.max_bytes {
            return false;
        }
        if record.max_tokens != 0 && symbols > 0 {
            let first = if origin + 1 == self.row {
                step
            } else {
                self.history.step(origin as usize + 1)
            };
            return step - first < record.max_tokens;
        }
        true
    }

    /// Moves `parent` over a match of `rule` that ends here, in context `ctx`.
    fn advance(&mut self, parent: Item, rule: u32, ctx: u32, empty: bool) {
        let grammar = self.grammar;
        match parent.kind {
            Kind::Node if grammar.waits(parent.a) => {
                for edge in grammar.edges(parent.a) {
                    if edge.calls(rule) {
                        self.add(Item {
                            kind: Kind::Node,
                            a: edge.target,
                            aux: 0,
                            ctx,
                            ..parent
                        });
                    }
                }
            }
            Kind::Repeat => {
                let repeat = grammar.repeat(parent.a);
                if repeat.rule != rule || !repeat.below_max(parent.aux) {
                    return;
                }
                if empty {
                    self.add(parent.with(Kind::Node, repeat.target, 0).with_ctx(ctx));
                } else {
                    // Without an upper bound, counts past the least one are
                    // all alike.
                    let mut count = parent.aux + 1;
                    if repeat.max.is_none() {
                        count = count.min(repeat.min);
                    }
                    self.add(parent.with(Kind::Repeat, parent.a, count).with_ctx(ctx));
                }
            }
            Kind::Arm | Kind::TokenArm if grammar.pattern(parent.aux).arm == rule => {
                self.after_arm(parent, ctx);
            }
            Kind::Wild if rule == parent.a => {
                self.add(parent.with(Kind::Any, 0, 0).with_ctx(ctx));
            }
            Kind::Root | Kind::SeedEnd if rule == parent.a => {
                self.add(parent.with(Kind::Done, rule, 0).with_ctx(ctx));
            }
            _ => {}
        }
    }
}

/// Whether `value` is new to `list` (whose members `set` mirrors once the
/// list is past [`SCAN_LIMIT`]); the caller pushes it.
fn insert<T: Copy + Eq + std::hash::Hash>(list: &[T], set: &mut FxHashSet<T>, value: T) -> bool {
    if list.len() < SCAN_LIMIT {
        return !list.contains(&value);
    }
    if set.is_empty() {
        set.extend(list.iter().copied());
    }
    set.insert(value)
}

impl Item {
    fn with_ctx(self, ctx: u32) -> Self {
        Self { ctx, ..self }
    }
}
