//! Tool-call events: a turn compiled by `xg tools` streamed as the calls
//! it makes, from the captures the tool grammar declares.
//!
//! Each call's arguments are a rule captured under `tool:` and the tool's
//! name ([`TOOL_CAPTURE_PREFIX`]). The rule is predicted once the model has
//! written the tool's name and what follows it up to the arguments, so a
//! match of it in progress says which tool is called; the bytes since its
//! start are arguments while the match has not ended, and up to its
//! latest end once it has (after an end, what follows may be more
//! arguments or the call's closing text); once no parse is inside it any
//! more, the call is finished.

use rustc_hash::FxHashSet;

use super::Matcher;

/// The prefix of the capture names under which a tool grammar captures
/// each call's arguments (`tool:get_weather`).
pub const TOOL_CAPTURE_PREFIX: &str = "tool:";

/// What a tool-calling turn did since the last [`ToolCallStream::poll`]:
/// what a server streams as OpenAI-style tool-call deltas.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolCallEvent {
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

/// One call of the turn.
#[derive(Clone, Debug)]
struct Call {
    /// Its arguments' rule, and the row their match began in.
    rule: u32,
    origin: u32,
    /// The bytes of the arguments given in deltas so far.
    sent: usize,
    finished: bool,
}

/// Reads a tool-calling turn's matcher after each step and says what
/// changed: calls started, their arguments as they grow, calls finished.
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
/// matcher.accept_str("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"ci").unwrap();
/// assert_eq!(
///     stream.poll(&matcher),
///     [
///         ToolCallEvent::ToolCallStarted { index: 0, name: "get_weather".into() },
///         ToolCallEvent::ArgumentsDelta { index: 0, text: "{\"ci".into() },
///     ]
/// );
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct ToolCallStream {
    calls: Vec<Call>,
}

impl ToolCallStream {
    /// A stream at the start of a turn.
    pub fn new() -> Self {
        Self::default()
    }

    /// What changed in `matcher`'s turn since the last poll.
    pub fn poll(&mut self, matcher: &Matcher) -> Vec<ToolCallEvent> {
        let Some(ended) = matcher.capture_matches() else {
            return Vec::new();
        };
        let grammar = matcher.grammar();
        let tool = |rule: u32| {
            grammar
                .rule_name(rule)
                .strip_prefix(TOOL_CAPTURE_PREFIX)
                .filter(|_| grammar.tables().rules[rule as usize].is_captured())
        };
        let live = if matcher.is_terminated() {
            FxHashSet::default()
        } else {
            matcher.live_rules()
        };
        // Every call begun: in progress, or ended since the last poll.
        let mut begun: Vec<(u32, u32)> = live
            .iter()
            .copied()
            .chain(ended.iter().map(|m| (m.rule, m.origin)))
            .filter(|&(rule, _)| tool(rule).is_some())
            .collect();
        begun.sort_unstable_by_key(|&(rule, origin)| (origin, rule));
        begun.dedup();
        let mut events = Vec::new();
        for (rule, origin) in begun {
            let known = self
                .calls
                .iter()
                .any(|call| (call.rule, call.origin) == (rule, origin));
            if !known {
                events.push(ToolCallEvent::ToolCallStarted {
                    index: self.calls.len(),
                    name: tool(rule).unwrap_or_default().to_owned(),
                });
                self.calls.push(Call {
                    rule,
                    origin,
                    sent: 0,
                    finished: false,
                });
            }
        }
        let position = matcher.position();
        for (index, call) in self.calls.iter_mut().enumerate() {
            if call.finished {
                continue;
            }
            let end = ended
                .iter()
                .filter(|m| (m.rule, m.origin) == (call.rule, call.origin))
                .map(|m| m.end as usize)
                .max();
            let in_progress = live.contains(&(call.rule, call.origin));
            // Arguments for certain: all of it while the match has not
            // ended; up to its latest end after one.
            let settled = match end {
                Some(end) => end,
                None if in_progress => position,
                None => continue,
            };
            let start = call.origin as usize;
            let text = matcher.input_text(start + call.sent, settled);
            let whole = if in_progress {
                whole_characters(&text)
            } else {
                text.len()
            };
            if whole > 0 {
                events.push(ToolCallEvent::ArgumentsDelta {
                    index,
                    text: String::from_utf8_lossy(&text[..whole]).into_owned(),
                });
                call.sent += whole;
            }
            if !in_progress {
                call.finished = true;
                let arguments = matcher.input_text(start, settled);
                events.push(ToolCallEvent::ToolCallFinished {
                    index,
                    name: tool(call.rule).unwrap_or_default().to_owned(),
                    arguments: String::from_utf8_lossy(&arguments).into_owned(),
                });
            }
        }
        events
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
