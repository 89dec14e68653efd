//! Tool-call events: a turn compiled by `xg tools` streamed as its text,
//! reasoning and calls, from the captures the tool grammar declares.
//!
//! The answer's text is captured as `text` ([`TEXT_CAPTURE`]), reasoning
//! as `reasoning` ([`REASONING_CAPTURE`]); a tag dispatch's capture is its
//! free text, and the bytes at its end that may begin a trigger or stop
//! string wait until they are known not to. Each call's arguments are a
//! rule captured under `tool:` and the tool's name ([`TOOL_CAPTURE_PREFIX`]). The rule is predicted once the model has
//! written the tool's name and what follows it up to the arguments, so a
//! match of it in progress says which tool is called; the bytes since its
//! start are arguments while the match has not ended, and up to its
//! latest end once it has (after an end, what follows may be more
//! arguments or the call's closing text); once no parse is inside it any
//! more, the call is finished.

use rustc_hash::FxHashSet;

use super::Matcher;
use super::captures::Match;
use crate::grammar::Grammar;

/// The prefix of the capture names under which a tool grammar captures
/// each call's arguments (`tool:get_weather`).
pub const TOOL_CAPTURE_PREFIX: &str = "tool:";

/// The capture name of a turn's answer text.
pub const TEXT_CAPTURE: &str = "text";

/// The capture name of a turn's reasoning.
pub const REASONING_CAPTURE: &str = "reasoning";

/// What a tool-calling turn did since the last [`ToolCallStream::poll`]:
/// what a server streams as OpenAI-style deltas.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolCallEvent {
    /// More of the answer's text (OpenAI's `content`); whole characters,
    /// and none that may begin a call's marker.
    Text {
        /// The text since the last delta.
        text: String,
    },
    /// More of the model's reasoning (`reasoning_content`), without its
    /// markers.
    Reasoning {
        /// The text since the last delta.
        text: String,
    },
    /// The model has named the tool of call `index` (counted from 0 in the
    /// turn).
    ToolCallStarted {
        /// The call's place in the turn.
        index: usize,
        /// The tool's name.
        name: String,
    },
    /// More of call `index`'s arguments, as the model wrote them (JSON, or
    /// the XML parameters of the XML formats); whole characters only.
    ArgumentsDelta {
        /// The call's place in the turn.
        index: usize,
        /// The arguments' text since the last delta.
        text: String,
    },
    /// Call `index` is complete: nothing the model writes next can change
    /// it.
    ToolCallFinished {
        /// The call's place in the turn.
        index: usize,
        /// The tool's name.
        name: String,
        /// The whole arguments.
        arguments: String,
    },
}

/// What a captured span of the turn is.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Role {
    /// A call's arguments; the call's place in the turn and its tool.
    Call { index: usize, name: String },
    /// Answer text.
    Text,
    /// Reasoning.
    Reasoning,
}

/// A span of the turn: a captured rule's match.
#[derive(Clone, Debug)]
struct Span {
    role: Role,
    /// Its rule, and the row its match began in.
    rule: u32,
    origin: u32,
    /// The rows (bytes, and tokens matched by id) given in events so far.
    sent: usize,
    /// The latest row a match of the span's rule from its origin ended in.
    end: Option<u32>,
    /// Whether a call's start was given.
    announced: bool,
    finished: bool,
}

/// Reads a tool-calling turn's matcher after each step and says what
/// changed: text and reasoning as they grow, calls started, their
/// arguments as they grow, calls finished.
///
/// Poll it after each accepted token (or any step); events are never
/// taken back, so poll a matcher whose steps stay — after a rollback of
/// polled steps, start a new stream.
///
/// ```
/// # use std::sync::Arc;
/// # use xg_runtime::{Grammar, Matcher, ToolCallEvent, ToolCallStream};
/// # fn demo(turn: Arc<Grammar>) {
/// // `turn`: `xg tools --format qwen` for a tool `get_weather`.
/// let mut matcher = Matcher::new(turn);
/// let mut stream = ToolCallStream::new();
/// matcher.accept_str("On it.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"ci").unwrap();
/// assert_eq!(
///     stream.poll(&matcher),
///     [
///         ToolCallEvent::Text { text: "On it.".into() },
///         ToolCallEvent::ToolCallStarted { index: 0, name: "get_weather".into() },
///         ToolCallEvent::ArgumentsDelta { index: 0, text: "{\"ci".into() },
///     ]
/// );
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct ToolCallStream {
    spans: Vec<Span>,
    /// The number of calls started.
    calls: usize,
    /// How many of the matcher's ended matches were read.
    read: usize,
}

impl ToolCallStream {
    /// A stream at the start of a turn.
    pub fn new() -> Self {
        Self::default()
    }

    /// What changed in `matcher`'s turn since the last poll, in the order
    /// of the output.
    pub fn poll(&mut self, matcher: &Matcher) -> Vec<ToolCallEvent> {
        let Some(ended) = matcher.capture_matches() else {
            return Vec::new();
        };
        // Only the matches ended since the last poll are new.
        let ended = &ended[self.read.min(ended.len())..];
        self.read += ended.len();
        let live = if matcher.is_terminated() {
            FxHashSet::default()
        } else {
            matcher.live_rules()
        };
        self.discover(matcher, ended, &live);
        // Where the latest text and reasoning begin: an earlier span of
        // the same kind still open is another reading of the same bytes,
        // and the one where what came before took the most is streamed.
        let latest = |role: &Role| {
            let same = self.spans.iter().filter(|s| !s.finished && s.role == *role);
            same.map(|s| s.origin).max()
        };
        let (latest_text, latest_reasoning) = (latest(&Role::Text), latest(&Role::Reasoning));
        let mut events = Vec::new();
        for span in &mut self.spans {
            if span.finished {
                continue;
            }
            if let (Role::Call { index, name }, false) = (&span.role, span.announced) {
                events.push(ToolCallEvent::ToolCallStarted {
                    index: *index,
                    name: name.clone(),
                });
                span.announced = true;
            }
            let Some((settled, closed)) = extent(matcher, span, &live) else {
                continue;
            };
            let latest = match span.role {
                Role::Text => latest_text,
                Role::Reasoning => latest_reasoning,
                Role::Call { .. } => None,
            };
            if !closed && latest.is_some_and(|latest| latest > span.origin) {
                span.finished = true;
                continue;
            }
            span.advance(matcher, settled, closed, &mut events);
        }
        events
    }

    /// Adds the spans begun since the last poll (in progress, or ended),
    /// numbering calls in order, and keeps every span in output order.
    fn discover(&mut self, matcher: &Matcher, ended: &[Match], live: &FxHashSet<(u32, u32)>) {
        let grammar = matcher.grammar();
        let mut begun: Vec<(u32, u32)> = live
            .iter()
            .copied()
            .chain(ended.iter().map(|m| (m.rule, m.origin)))
            .filter(|&(rule, _)| role_of(grammar, rule).is_some())
            .collect();
        begun.sort_unstable_by_key(|&(rule, origin)| (origin, rule));
        begun.dedup();
        let known = self.spans.len();
        for (rule, origin) in begun {
            let seen = self.spans[..known]
                .iter()
                .any(|span| (span.rule, span.origin) == (rule, origin));
            let Some(mut role) = role_of(grammar, rule).filter(|_| !seen) else {
                continue;
            };
            if let Role::Call { index, .. } = &mut role {
                *index = self.calls;
                self.calls += 1;
            }
            self.spans.push(Span {
                role,
                rule,
                origin,
                sent: 0,
                end: None,
                announced: false,
                finished: false,
            });
        }
        self.spans.sort_by_key(|span| span.origin);
        for found in ended {
            for span in &mut self.spans {
                if (span.rule, span.origin) == (found.rule, found.origin) {
                    span.end = span.end.max(Some(found.end));
                }
            }
        }
    }
}

impl Span {
    /// Gives the span's text up to row `settled` (whole characters unless
    /// it is `closed`), and its end if it is.
    fn advance(
        &mut self,
        matcher: &Matcher,
        settled: usize,
        closed: bool,
        events: &mut Vec<ToolCallEvent>,
    ) {
        let start = self.origin as usize;
        let from = start + self.sent;
        let mut to = settled.max(from);
        let mut text = matcher.input_text(from, to);
        // Whole characters unless closed: the rows that end inside one
        // wait (a row is a byte, or a token matched by id: its text).
        while !closed && to > from && whole_characters(&text) < text.len() {
            to -= 1;
            text = matcher.input_text(from, to);
        }
        self.sent = to - start;
        if !text.is_empty() {
            let text = String::from_utf8_lossy(&text).into_owned();
            events.push(match &self.role {
                Role::Call { index, .. } => ToolCallEvent::ArgumentsDelta {
                    index: *index,
                    text,
                },
                Role::Text => ToolCallEvent::Text { text },
                Role::Reasoning => ToolCallEvent::Reasoning { text },
            });
        }
        if closed {
            self.finished = true;
            if let Role::Call { index, name } = &self.role {
                let arguments = matcher.input_text(start, start + self.sent);
                events.push(ToolCallEvent::ToolCallFinished {
                    index: *index,
                    name: name.clone(),
                    arguments: String::from_utf8_lossy(&arguments).into_owned(),
                });
            }
        }
    }
}

/// What the capture of `rule` is in a turn, if it is one of a turn's.
fn role_of(grammar: &Grammar, rule: u32) -> Option<Role> {
    if !grammar.tables().rules[rule as usize].is_captured() {
        return None;
    }
    match grammar.tables().rule_name(rule) {
        TEXT_CAPTURE => Some(Role::Text),
        REASONING_CAPTURE => Some(Role::Reasoning),
        name => name
            .strip_prefix(TOOL_CAPTURE_PREFIX)
            .map(|tool| Role::Call {
                index: 0,
                name: tool.to_owned(),
            }),
    }
}

/// The row up to which `span` is known, and whether it has ended; `None`
/// for a span that neither goes on nor ended.
fn extent(matcher: &Matcher, span: &Span, live: &FxHashSet<(u32, u32)>) -> Option<(usize, bool)> {
    if let Some(free) = matcher.free_text(span.rule, span.origin) {
        return Some(free);
    }
    let end = span.end.map(|end| end as usize);
    let in_progress = live.contains(&(span.rule, span.origin));
    // All of it while the match has not ended; up to its latest end after
    // one (what follows may be more of it, or what comes after it).
    match end {
        Some(end) => Some((end, !in_progress)),
        None if in_progress => Some((matcher.position(), false)),
        None => None,
    }
}

/// How much of `text` is whole UTF-8 characters: all of it but a
/// character cut off at the end (a token may end inside one).
fn whole_characters(text: &[u8]) -> usize {
    match std::str::from_utf8(text) {
        Err(error) if error.error_len().is_none() => error.valid_up_to(),
        _ => text.len(),
    }
}
