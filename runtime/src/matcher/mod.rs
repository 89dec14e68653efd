//! The [`Matcher`]: one sequence's position in a grammar.
//!
//! It is an Earley parser over the grammar's rule automata, one row per
//! input symbol (a byte of text, or a token matched by id). Items are
//! (automaton node, origin row) pairs with a little extra state for counted
//! repetitions, tag dispatch and lookahead; see the book's chapter on the
//! runtime for the full picture.

mod captures;
mod classify;
mod context;
mod draft;
mod earley;
mod events;
mod expected;
mod finish;
mod forced;
mod history;
mod item;
mod limits;
mod lookahead;
mod mask;
mod memo;
mod memos;
mod parse;
mod precompute;
mod seed;
mod states;
mod tokens;
mod verdicts;
mod walk;

use std::fmt;
use std::sync::Arc;

use self::captures::CaptureLog;
use self::earley::{Start, Symbol};
use self::memos::MaskMemos;
use self::parse::Parse;
use crate::TokenId;
use crate::grammar::{Grammar, Snapshots};
use crate::vocab::Vocabulary;

pub use self::captures::Capture;
pub use self::draft::DraftTree;
pub use self::events::{
    REASONING_CAPTURE, TEXT_CAPTURE, TOOL_CAPTURE_PREFIX, ToolCallEvent, ToolCallStream,
};
pub use self::expected::Expected;
pub use self::forced::{CONTEXT_TOKENS, ForcedTokens};
pub use self::mask::{DEFAULT_MASK_BUDGET, MaskStats};
pub use self::precompute::Precompute;
pub(crate) use self::precompute::precompute;
use self::states::RowStates;
pub use self::walk::MaskError;

/// The default bound on the work of one step ([`Matcher::set_step_budget`]):
/// about a second of work.
pub const DEFAULT_STEP_BUDGET: u64 = 50_000_000;

/// The work each symbol of a step adds to its budget: a grammar written
/// for generation does some tens of units a byte, so a step of a whole
/// document is not refused for its length.
const STEP_BUDGET_PER_SYMBOL: u64 = 10_000;

/// Why an output stops ([`Matcher::stop_reason`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The model wrote this stop token where the output could end.
    StopToken(TokenId),
    /// [`Matcher::terminate`] ended the output.
    Terminated,
    /// The output is complete and nothing can follow it.
    Complete,
    /// The token budget is spent ([`Matcher::set_token_budget`]) and the
    /// output can end here.
    Budget,
}

/// One step of a matcher: where its rows begin, and the text token it
/// took, if it was one (what [`Matcher::forced_tokens`] may take back).
#[derive(Clone, Copy, Debug)]
struct Step {
    /// The number of rows before the step.
    rows: u32,
    /// The model's token, when the step took a token by its text.
    token: Option<TokenId>,
}

impl Step {
    fn at(rows: usize) -> Self {
        Self {
            rows: u32::try_from(rows).expect("rows fit in u32"),
            token: None,
        }
    }
}

/// Where a sequence is in a grammar: accepts input, says what may come next,
/// rolls back.
///
/// Every `accept_*` call is one *step*; [`Matcher::rollback`] undoes whole
/// steps (an inference server makes one step per token). A rejected step
/// leaves the matcher exactly as it was.
///
/// ```
/// # use std::sync::Arc;
/// # use xg_runtime::{Grammar, Matcher};
/// # fn demo(grammar: Arc<Grammar>) {
/// let mut matcher = Matcher::new(grammar);
/// matcher.accept_str("{\"a\": ").unwrap();
/// assert!(matcher.accept_str("]").is_err()); // state unchanged
/// matcher.rollback(1).unwrap();
/// # }
/// ```
pub struct Matcher {
    /// The Earley parse of the output so far.
    parse: Parse,
    vocabulary: Option<Arc<Vocabulary>>,
    /// What the grammar's masks keep between masks, from the vocabulary's
    /// cache (with a vocabulary only).
    memos: Option<Arc<MaskMemos>>,
    /// The steps taken, for rollback.
    steps: Vec<Step>,
    terminated: bool,
    /// The stop token that ended the output, if a token did.
    ended_by: Option<TokenId>,
    /// The most Earley items one token mask may build.
    mask_budget: u64,
    /// The most work one step may do (see [`Matcher::set_step_budget`]).
    step_budget: u64,
    /// What the last token mask cost.
    mask_stats: MaskStats,
    /// The states of the first rows (see [`states`]).
    states: RowStates,
    /// The input and the matches of captured rules, if the grammar has
    /// any (see [`Matcher::captures`]).
    captures: Option<CaptureLog>,
    /// The most steps the output may take (see
    /// [`Matcher::set_token_budget`]).
    token_budget: Option<usize>,
    /// For a grammar whose rules are built on first use: the record of its
    /// newest snapshot, kept while the matcher lives.
    snapshots: Option<Snapshots>,
}

impl Clone for Matcher {
    fn clone(&self) -> Self {
        Self {
            parse: self.parse.clone(),
            vocabulary: self.vocabulary.clone(),
            memos: self.memos.clone(),
            steps: self.steps.clone(),
            terminated: self.terminated,
            ended_by: self.ended_by,
            mask_budget: self.mask_budget,
            step_budget: self.step_budget,
            mask_stats: MaskStats::default(),
            states: self.states.clone(),
            captures: self.captures.clone(),
            token_budget: self.token_budget,
            snapshots: self.snapshots.clone(),
        }
    }
}

impl fmt::Debug for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Matcher")
            .field("position", &self.position())
            .field("steps", &self.steps.len())
            .field("terminated", &self.terminated)
            .finish_non_exhaustive()
    }
}

/// What was offered when a step was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// A byte of text.
    Byte(u8),
    /// A token matched by id.
    Token(TokenId),
    /// The end of the output.
    End,
}

/// A rejected step: where, what was offered, and what the grammar allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    position: usize,
    found: Found,
    expected: Expected,
    terminated: bool,
    /// The step budget, when it ran out before the step was decided.
    over_budget: Option<u64>,
    /// The token budget, when the step would leave no way to end within it.
    token_budget: Option<usize>,
    /// Whether the step would leave a limited match no way to end within
    /// its limit.
    over_limit: bool,
    /// Why a rule the grammar builds on first use could not be built, when
    /// that decided the step.
    failure: Option<Arc<str>>,
}

impl Rejection {
    /// The number of symbols (bytes, and tokens matched by id) accepted
    /// before the one that was refused: for text, the byte offset.
    pub fn position(&self) -> usize {
        self.position
    }

    /// What was refused.
    pub fn found(&self) -> Found {
        self.found
    }

    /// What the grammar allowed at that position.
    pub fn expected(&self) -> &Expected {
        &self.expected
    }

    /// The same rejection without the rule names in what was expected
    /// (see [`Expected::without_rules`]).
    #[must_use]
    pub fn without_rules(&self) -> Self {
        Self {
            expected: self.expected.without_rules(),
            ..self.clone()
        }
    }

    /// Whether the step was refused because it would cost more than the
    /// step budget ([`Matcher::set_step_budget`]), not because the
    /// grammar refuses it.
    pub fn is_over_budget(&self) -> bool {
        self.over_budget.is_some()
    }

    /// Whether the step was refused because the output could not end
    /// within the token budget after it ([`Matcher::set_token_budget`]),
    /// though the grammar allows it.
    pub fn is_over_token_budget(&self) -> bool {
        self.token_budget.is_some()
    }

    /// Whether the step was refused because a match of a rule limited in
    /// tokens or bytes (`[max_tokens=N]`, `[max_bytes=N]`) could not end
    /// within its limit after it, though the grammar allows it.
    pub fn is_over_limit(&self) -> bool {
        self.over_limit
    }

    /// Why a rule the grammar builds on first use could not be built, if
    /// that refused the step rather than the grammar (see
    /// [`RuleBuilder`](crate::RuleBuilder)).
    pub fn build_failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let found = match self.found {
            Found::Byte(byte) => expected::literal_byte(byte),
            Found::Token(token) => format!("token {token}"),
            Found::End => "the end of the output".to_owned(),
        };
        // `{:#}` leaves out the position, for callers that show it themselves.
        if !f.alternate() {
            write!(f, "at {}: ", self.position)?;
        }
        if self.terminated {
            return write!(f, "{found} after the output has ended");
        }
        if let Some(failure) = &self.failure {
            return write!(
                f,
                "{found} was not decided: the grammar could not be built: {failure}"
            );
        }
        if let Some(budget) = self.over_budget {
            return write!(
                f,
                "{found} would cost more than the step budget of {budget} units of work \
                 (an ambiguous grammar); the step is undone"
            );
        }
        if let Some(budget) = self.token_budget {
            return write!(
                f,
                "{found} would leave no way to end the output within its budget of {budget} tokens"
            );
        }
        if self.over_limit {
            return write!(
                f,
                "{found} would leave a match of a rule with `max_tokens` or `max_bytes` no way \
                 to end within its limit"
            );
        }
        write!(f, "unexpected {found}; expected {}", self.expected)
    }
}

impl std::error::Error for Rejection {}

/// A rollback asked for more steps than were taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RollbackError {
    requested: usize,
    available: usize,
}

impl fmt::Display for RollbackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot roll back {} steps: only {} were taken",
            self.requested, self.available
        )
    }
}

impl std::error::Error for RollbackError {}

/// Sizes of a matcher's state, for tests and tuning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Earley rows (one per accepted symbol, plus the first).
    pub rows: usize,
    /// Earley items over all rows.
    pub items: usize,
}

impl Matcher {
    /// A matcher at the start of `grammar`, for text and tokens matched by
    /// id.
    pub fn new(grammar: Arc<Grammar>) -> Self {
        Self::at_entry(grammar, None)
    }

    /// A matcher at the start of `grammar` that also takes a model's tokens
    /// ([`Matcher::accept_token`]) and computes token masks
    /// ([`Matcher::fill_next_token_bitmask`]) for `vocabulary`.
    pub fn with_vocabulary(grammar: Arc<Grammar>, vocabulary: Arc<Vocabulary>) -> Self {
        let cache = vocabulary.mask_cache();
        if let Some(section) = grammar.precomputed()
            && section.fingerprint() == vocabulary.fingerprint()
        {
            cache.attach(section);
        }
        let memos = cache.memos(grammar.id());
        Self {
            memos: Some(memos),
            ..Self::at_entry(grammar, Some(vocabulary))
        }
    }

    fn at_entry(grammar: Arc<Grammar>, vocabulary: Option<Arc<Vocabulary>>) -> Self {
        let mut matcher = Self::empty(grammar, vocabulary);
        matcher.parse.check_limits = matcher.parse.grammar.has_limits();
        // Row 0 holds the entry item, which no settling removes.
        let viable = matcher.push(Start::Entry);
        debug_assert!(viable);
        if matcher.parse.grammar.has_captures() {
            let mut captures = CaptureLog::default();
            captures.scan(&matcher.parse.grammar, &matcher.parse.history, 0);
            matcher.captures = Some(captures);
        }
        matcher
    }

    /// A matcher with no rows yet.
    fn empty(grammar: Arc<Grammar>, vocabulary: Option<Arc<Vocabulary>>) -> Self {
        Self {
            snapshots: grammar.snapshots(),
            parse: Parse::new(grammar),
            vocabulary,
            memos: None,
            steps: Vec::new(),
            terminated: false,
            ended_by: None,
            mask_budget: DEFAULT_MASK_BUDGET,
            step_budget: DEFAULT_STEP_BUDGET,
            mask_stats: MaskStats::default(),
            states: RowStates::new(),
            captures: None,
            token_budget: None,
        }
    }

    /// The vocabulary of the model this matcher takes tokens of, if any.
    pub fn vocabulary(&self) -> Option<&Arc<Vocabulary>> {
        self.vocabulary.as_ref()
    }

    /// The grammar this matcher follows.
    pub fn grammar(&self) -> &Arc<Grammar> {
        &self.parse.grammar
    }

    /// A matcher at this one's first `rows` rows, with no steps to roll
    /// back: what a look ahead from an earlier row needs, without copying
    /// the per-row state of the rows cut off.
    fn cut_back(&self, rows: usize) -> Self {
        Self {
            parse: self.parse.cut_back(rows),
            mask_budget: self.mask_budget,
            states: self.states.prefix(rows),
            memos: self.memos.clone(),
            ..Self::empty(Arc::clone(&self.parse.grammar), self.vocabulary.clone())
        }
    }

    /// Builds and appends the row from `start`, as part of the next step;
    /// false (and nothing changed) if no derivation survives it.
    fn push(&mut self, start: Start) -> bool {
        self.parse.push(start, self.steps.len())
    }

    /// Whether the row after `symbol` is viable; the matcher is unchanged.
    fn viable(&mut self, symbol: Symbol) -> bool {
        let rows = self.parse.history.rows();
        let viable = self.push(Start::Scan(symbol));
        if viable {
            self.truncate(rows);
        }
        viable
    }

    fn truncate(&mut self, rows: usize) {
        if let Some(captures) = &mut self.captures {
            captures.truncate(rows);
        }
        self.states.truncate(rows);
        self.parse.truncate(rows);
    }

    fn accept(&mut self, symbols: impl Iterator<Item = Symbol>) -> Result<(), Rejection> {
        let start = self.parse.history.rows();
        if self.terminated {
            let found = symbols.map(found).next().unwrap_or(Found::End);
            return Err(self.rejection(found));
        }
        let work = self.parse.work;
        let mut budget = self.step_budget;
        // What a refusal for the token budget names, and what it weighs.
        let mut first = Found::End;
        let before = self.before_budgeted_step();
        for symbol in symbols {
            if first == Found::End {
                first = found(symbol);
            }
            if let Some(captures) = &mut self.captures {
                captures.input(symbol);
            }
            if !self.push(Start::Scan(symbol)) {
                let rejection = self.rejection(found(symbol));
                self.truncate(start);
                return Err(rejection);
            }
            // A long step (a whole document) gets room for each symbol.
            budget = budget.saturating_add(STEP_BUDGET_PER_SYMBOL);
            if self.parse.work - work > budget {
                // At the symbol the budget ran out on.
                let rejection = Rejection {
                    position: self.position() - 1,
                    over_budget: Some(budget),
                    ..self.rejection(found(symbol))
                };
                self.truncate(start);
                return Err(rejection);
            }
        }
        let symbols = (self.parse.history.rows() - start) as u64;
        if !self.within_token_budget(before, symbols) {
            self.truncate(start);
            return Err(Rejection {
                token_budget: self.token_budget,
                ..self.rejection(first)
            });
        }
        if !self.within_limits() {
            self.truncate(start);
            return Err(Rejection {
                over_limit: true,
                ..self.rejection(first)
            });
        }
        if let Some(captures) = &mut self.captures {
            captures.scan(&self.parse.grammar, &self.parse.history, start);
        }
        self.steps.push(Step::at(start));
        Ok(())
    }

    /// Accepts `bytes` as one step, or rejects them and changes nothing.
    pub fn accept_bytes(&mut self, bytes: &[u8]) -> Result<(), Rejection> {
        self.accept(bytes.iter().map(|&b| Symbol::Byte(b)))
    }

    /// Accepts `text` as one step, or rejects it and changes nothing.
    pub fn accept_str(&mut self, text: &str) -> Result<(), Rejection> {
        self.accept_bytes(text.as_bytes())
    }

    /// Accepts one token matched by its id rather than its text — what
    /// `Token(…)`, `ExcludeToken(…)` and token dispatch match — as one step.
    pub fn accept_token_id(&mut self, token: TokenId) -> Result<(), Rejection> {
        self.accept(std::iter::once(Symbol::Token(token)))
    }

    /// Ends the output (the model produced its end-of-sequence token), as one
    /// step; rejected unless [`Matcher::can_terminate`].
    pub fn terminate(&mut self) -> Result<(), Rejection> {
        if self.terminated || !self.can_terminate() {
            return Err(self.rejection(Found::End));
        }
        self.steps.push(Step::at(self.parse.history.rows()));
        self.terminated = true;
        Ok(())
    }

    /// Whether the output has ended ([`Matcher::terminate`] was accepted).
    pub fn is_terminated(&self) -> bool {
        self.terminated
    }

    /// Why the output stops here, if it does: it ended with a stop token
    /// or [`Matcher::terminate`], or it is complete with nothing that can
    /// follow (a server can stop it without waiting for the model's stop
    /// token). `None` while the output goes on or may go on.
    pub fn stop_reason(&self) -> Option<StopReason> {
        if self.terminated {
            return Some(
                self.ended_by
                    .map_or(StopReason::Terminated, StopReason::StopToken),
            );
        }
        if self.tokens_left() == Some(0) && self.can_terminate() {
            return Some(StopReason::Budget);
        }
        self.is_complete().then_some(StopReason::Complete)
    }

    /// Whether the output may end here and nothing can follow.
    fn is_complete(&self) -> bool {
        self.can_terminate() && !self.expected().allows_more()
    }

    /// Whether the output so far is a complete match of the grammar, so the
    /// model may end it here.
    pub fn can_terminate(&self) -> bool {
        !self.terminated && self.parse.can_end()
    }

    /// Undoes the last `steps` steps. Costs what they added, not the length
    /// of the history.
    pub fn rollback(&mut self, steps: usize) -> Result<(), RollbackError> {
        let taken = self.steps.len();
        if steps > taken {
            return Err(RollbackError {
                requested: steps,
                available: taken,
            });
        }
        if steps == 0 {
            return Ok(());
        }
        let rows = self.steps[taken - steps].rows as usize;
        self.steps.truncate(taken - steps);
        self.terminated = false;
        self.ended_by = None;
        self.truncate(rows);
        Ok(())
    }

    /// Back to the start of the grammar.
    pub fn reset(&mut self) {
        self.steps.clear();
        self.terminated = false;
        self.ended_by = None;
        self.truncate(1);
    }

    /// An independent copy of this matcher, for tree or speculative
    /// decoding. Cheap: the rows of the history are shared, not copied.
    #[must_use]
    pub fn fork(&self) -> Self {
        self.clone()
    }

    /// The number of steps that can be rolled back.
    pub fn steps(&self) -> usize {
        self.steps.len()
    }

    /// The number of symbols accepted so far (bytes, and tokens matched by id).
    pub fn position(&self) -> usize {
        self.parse.history.rows() - 1
    }

    /// What the grammar allows next.
    pub fn expected(&self) -> Expected {
        Expected::of(
            &self.parse.grammar,
            self.parse.history.last(),
            self.can_terminate(),
        )
    }

    fn rejection(&self, found: Found) -> Rejection {
        Rejection {
            position: self.position(),
            found,
            expected: self.expected(),
            terminated: self.terminated,
            over_budget: None,
            token_budget: None,
            over_limit: false,
            failure: self.parse.failure.clone(),
        }
    }

    /// Bounds the work one step (one `accept_*` call) may do, in units of
    /// Earley items tried (some 20 ns each), plus 10,000 units for each
    /// byte or token of the step: a step past it is refused
    /// ([`Rejection::is_over_budget`]) and undone. Grammars written for
    /// generation take some tens of units a byte; the default,
    /// [`DEFAULT_STEP_BUDGET`], is about a second of work, there for
    /// ambiguous grammars whose work grows with the square of the output
    /// (`s ::= s s | "a"`).
    pub fn set_step_budget(&mut self, units: u64) {
        self.step_budget = units;
    }

    /// The step budget.
    pub fn step_budget(&self) -> u64 {
        self.step_budget
    }

    /// Sizes of the state.
    pub fn stats(&self) -> Stats {
        Stats {
            rows: self.parse.history.rows(),
            items: self.parse.history.items(),
        }
    }
}

fn found(symbol: Symbol) -> Found {
    match symbol {
        Symbol::Byte(byte) => Found::Byte(byte),
        Symbol::Token(token) => Found::Token(token),
    }
}
