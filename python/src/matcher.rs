//! `GrammarMatcher` and `BatchGrammarMatcher`: one sequence's state in a
//! compiled grammar, and masks for a batch of them on all cores.

use std::sync::Arc;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use xg_runtime::{Matcher, StopReason, TokenId, ToolCallEvent, ToolCallStream, Vocabulary};

use crate::bitmask::{MaskArray, allows_all};
use crate::compiler::CompiledGrammar;
use crate::tokenizer::token_id;

/// Where one sequence is in a grammar (XGrammar's class of the same
/// name): accepts tokens, fills the next token's bitmask, rolls back. A
/// rejected token or string leaves it unchanged.
#[pyclass(module = "xg")]
pub struct GrammarMatcher {
    matcher: Matcher,
    compiled: Py<CompiledGrammar>,
    vocabulary: Arc<Vocabulary>,
    terminate_without_stop_token: bool,
    max_rollback_tokens: i64,
    /// What `get_tool_call_events` has reported.
    tool_calls: ToolCallStream,
}

impl GrammarMatcher {
    fn vocab_len(&self) -> usize {
        self.vocabulary.len()
    }

    /// Fills row `index` of `array`; whether the row restricts anything.
    fn fill_row(&mut self, array: &mut MaskArray<'_>, index: usize) -> PyResult<bool> {
        array.check_row(index)?;
        array.check_width(self.vocabulary.mask_words())?;
        let (words, tokens) = (array.words, self.vocab_len());
        let row = &mut array.words_mut()[index * words..(index + 1) * words];
        fill(&mut self.matcher, row, tokens)
    }
}

/// Fills `row` (at least the vocabulary's words; the rest is cleared);
/// whether it restricts anything.
fn fill(matcher: &mut Matcher, row: &mut [u32], tokens: usize) -> PyResult<bool> {
    let needed = tokens.div_ceil(32);
    let (mask, rest) = row.split_at_mut(needed);
    rest.fill(0);
    matcher
        .fill_next_token_bitmask(mask)
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok(!allows_all(mask, tokens))
}

#[pymethods]
impl GrammarMatcher {
    /// A matcher at the start of `compiled_grammar`. `override_stop_tokens`
    /// replaces the tokenizer's stop tokens; with
    /// `terminate_without_stop_token` the matcher counts as terminated as
    /// soon as the output is complete. `max_rollback_tokens` is accepted
    /// for XGrammar's signature: xg keeps every step (a rollback costs
    /// what the rolled-back steps added). With `token_budget`, masks allow
    /// only tokens after which the output can still end within that many
    /// tokens in all (see `set_token_budget`).
    #[new]
    #[pyo3(signature = (compiled_grammar, *, override_stop_tokens = None, terminate_without_stop_token = false, max_rollback_tokens = -1, token_budget = None))]
    fn new(
        compiled_grammar: Py<CompiledGrammar>,
        override_stop_tokens: Option<Vec<i64>>,
        terminate_without_stop_token: bool,
        max_rollback_tokens: i64,
        token_budget: Option<usize>,
    ) -> PyResult<Self> {
        let compiled = compiled_grammar.get();
        let info = compiled.tokenizer_info.get();
        let vocabulary = match override_stop_tokens {
            Some(stop) => info.with_stop_tokens(&stop)?,
            None => Arc::clone(info.vocabulary()),
        };
        let mut matcher =
            Matcher::with_vocabulary(Arc::clone(&compiled.grammar), Arc::clone(&vocabulary));
        matcher.set_token_budget(token_budget);
        Ok(Self {
            matcher,
            compiled: compiled_grammar,
            vocabulary,
            terminate_without_stop_token,
            max_rollback_tokens,
            tool_calls: ToolCallStream::new(),
        })
    }

    /// Accepts one token; false (and nothing changed) if the grammar
    /// forbids it. An id outside the vocabulary raises `ValueError`.
    #[pyo3(signature = (token_id, *, debug_print = false))]
    fn accept_token(&mut self, token_id: i64, debug_print: bool) -> PyResult<bool> {
        let id = crate::tokenizer::token_id(token_id, self.vocab_len())?;
        Ok(report(self.matcher.accept_token(id), debug_print))
    }

    /// Fills one bitmask row per node of a speculative draft tree
    /// (XGrammar's `traverse_draft_tree`): node 0 is where the matcher is
    /// (its token already accepted), `retrieve_next_token[i]` and
    /// `retrieve_next_sibling[i]` node `i`'s first child and next sibling
    /// (-1: none), `draft_tokens[i]` its token. Row `i` allows what may
    /// follow the path to node `i`; a node its parent refuses, and
    /// everything below it, gets an empty row. One step and one mask per
    /// node; the matcher is left as it was. `time_threshold` is accepted
    /// for XGrammar's signature (xg always completes: its masks are
    /// bounded by the mask budget instead); `temperatures`, if given, is
    /// filled with -1 (xg has no per-node temperature). Returns True.
    #[pyo3(signature = (retrieve_next_token, retrieve_next_sibling, draft_tokens, token_bitmask, time_threshold = -1.0, temperatures = None))]
    fn traverse_draft_tree(
        &mut self,
        retrieve_next_token: Vec<i64>,
        retrieve_next_sibling: Vec<i64>,
        draft_tokens: Vec<i64>,
        token_bitmask: &Bound<'_, PyAny>,
        time_threshold: f64,
        temperatures: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let _ = time_threshold;
        let py = token_bitmask.py();
        let count = draft_tokens.len();
        let tokens = draft_tokens
            .iter()
            .map(|&token| {
                usize::try_from(token)
                    .ok()
                    .and_then(|token| xg_runtime::TokenId::new(token).ok())
                    .ok_or_else(|| {
                        PyValueError::new_err(format!("draft token {token} is not a token id"))
                    })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let mut array = MaskArray::new(token_bitmask)?;
        if count > 0 {
            array.check_row(count - 1)?;
        }
        let needed = self.vocabulary.mask_words();
        array.check_width(needed)?;
        let tree = xg_runtime::DraftTree {
            tokens: &tokens,
            first_child: &retrieve_next_token,
            next_sibling: &retrieve_next_sibling,
        };
        let mut masks = vec![0u32; count * needed];
        let matcher = &mut self.matcher;
        py.detach(|| matcher.fill_draft_tree_bitmasks(tree, &mut masks))
            .map_err(|e| match e {
                xg_runtime::MaskError::DraftTree(_) => PyValueError::new_err(e.to_string()),
                _ => PyRuntimeError::new_err(e.to_string()),
            })?;
        let words = array.words;
        for (row, mask) in masks.chunks(needed.max(1)).enumerate().take(count) {
            let out = &mut array.words_mut()[row * words..(row + 1) * words];
            out[..needed].copy_from_slice(&mask[..needed]);
            out[needed..].fill(0);
        }
        if let Some(temperatures) = temperatures {
            let method = if temperatures.hasattr("fill_")? {
                "fill_"
            } else {
                "fill"
            };
            temperatures.call_method1(method, (-1.0,))?;
        }
        Ok(true)
    }

    /// How many of `tokens` the grammar accepts in a row from here (a
    /// speculative draft's valid prefix); the matcher is left as it was.
    /// An id outside the vocabulary raises `ValueError` (nothing checked).
    fn validate_tokens(&mut self, tokens: Vec<i64>) -> PyResult<usize> {
        let len = self.vocab_len();
        let ids = tokens
            .iter()
            .map(|&token| token_id(token, len))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(self.matcher.validate_tokens(&ids))
    }

    /// Accepts text (str or bytes) as one step; false (and nothing
    /// changed) if the grammar forbids it.
    #[pyo3(signature = (input_str, *, debug_print = false))]
    fn accept_string(&mut self, input_str: &Bound<'_, PyAny>, debug_print: bool) -> PyResult<bool> {
        let accepted = match input_str.extract::<String>() {
            Ok(text) => self.matcher.accept_str(&text),
            Err(_) => self.matcher.accept_bytes(&input_str.extract::<Vec<u8>>()?),
        };
        Ok(report(accepted, debug_print))
    }

    /// Fills row `index` of `bitmask` (int32, shape `(batch, words)` or
    /// `(words,)`, NumPy or CPU torch) with the tokens allowed next: bit
    /// `i % 32` of word `i / 32` for token `i`. Returns whether the mask
    /// restricts anything (false: every token is allowed, no need to apply
    /// it).
    #[pyo3(signature = (bitmask, index = 0, *, debug_print = false))]
    fn fill_next_token_bitmask(
        &mut self,
        bitmask: &Bound<'_, PyAny>,
        index: i64,
        debug_print: bool,
    ) -> PyResult<bool> {
        let _ = debug_print;
        let mut array = MaskArray::new(bitmask)?;
        let index = usize::try_from(index)
            .map_err(|_| PyValueError::new_err(format!("row {index} is negative")))?;
        self.fill_row(&mut array, index)
    }

    /// The text every continuation starts with (jump-forward decoding):
    /// empty when the output may end here or several characters may
    /// follow. Cut before an incomplete UTF-8 character.
    fn find_jump_forward_string(&self) -> String {
        let forced = self.matcher.forced_bytes();
        match std::str::from_utf8(&forced) {
            Ok(text) => text.to_owned(),
            Err(e) => String::from_utf8_lossy(&forced[..e.valid_up_to()]).into_owned(),
        }
    }

    /// The forced text as tokens (jump-forward in tokens): returns
    /// `(rollback, tokens)` — roll back `rollback` tokens, then accept
    /// `tokens` — so that the output stays tokenized as the model's
    /// tokenizer writes it. `tokenize` writes text as token ids with no
    /// special tokens added (`lambda s: tok.encode(s, add_special_tokens=False)`
    /// for a byte-level BPE tokenizer); the last few tokens are tokenized
    /// again with the forced text and taken back where the tokenizer joins
    /// them with it, and tokens the next text could still merge with are
    /// left out. An exception raised by `tokenize` propagates.
    fn find_jump_forward_tokens(
        &self,
        tokenize: &Bound<'_, PyAny>,
    ) -> PyResult<(usize, Vec<usize>)> {
        let mut failure = None;
        let len = self.vocab_len();
        let jump = self.matcher.forced_tokens(|text| {
            if failure.is_some() {
                return Vec::new();
            }
            let ids = tokenize
                .call1((text,))
                .and_then(|ids| ids.extract::<Vec<i64>>())
                .and_then(|ids| crate::tokenizer::token_ids(&ids, len));
            ids.unwrap_or_else(|error| {
                failure = Some(error);
                Vec::new()
            })
        });
        if let Some(error) = failure {
            return Err(error);
        }
        Ok((
            jump.rollback,
            jump.tokens.iter().map(|token| token.as_usize()).collect(),
        ))
    }

    /// The bytes every continuation starts with (`find_jump_forward_string`
    /// without the cut).
    fn forced_bytes(&self) -> Vec<u8> {
        self.matcher.forced_bytes()
    }

    /// Undoes the last `num_tokens` accepted tokens or strings.
    #[pyo3(signature = (num_tokens = 1))]
    fn rollback(&mut self, num_tokens: i64) -> PyResult<()> {
        let steps = usize::try_from(num_tokens)
            .map_err(|_| PyValueError::new_err(format!("cannot roll back {num_tokens} tokens")))?;
        self.matcher
            .rollback(steps)
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Back to the start of the grammar.
    fn reset(&mut self) {
        self.matcher.reset();
        self.tool_calls = ToolCallStream::new();
    }

    /// An independent copy (for speculative or tree decoding); cheap: the
    /// history is shared until either copy moves on.
    fn fork(&self, py: Python<'_>) -> Self {
        Self {
            matcher: self.matcher.fork(),
            compiled: self.compiled.clone_ref(py),
            vocabulary: Arc::clone(&self.vocabulary),
            terminate_without_stop_token: self.terminate_without_stop_token,
            max_rollback_tokens: self.max_rollback_tokens,
            tool_calls: self.tool_calls.clone(),
        }
    }

    /// Whether the output has ended: a stop token was accepted (or, with
    /// `terminate_without_stop_token`, the output is complete).
    fn is_terminated(&self) -> bool {
        self.matcher.is_terminated()
            || (self.terminate_without_stop_token && self.matcher.can_terminate())
    }

    /// Whether the output so far is complete: it may end here (or has).
    fn is_completed(&self) -> bool {
        self.matcher.is_terminated() || self.matcher.can_terminate()
    }

    /// Why the output stops, if it does: `("stop_token", id)` when the
    /// model wrote a stop token where the output could end,
    /// `("terminated", None)` when it ended without one (with
    /// `terminate_without_stop_token`, as soon as it may end), and
    /// `("complete", None)` when it is complete and nothing can follow (a
    /// server can end the request without waiting for a stop token).
    /// `("budget", None)` when the token budget is spent and the output
    /// may end. `None` while more may follow. Rollback undoes it.
    fn stop_reason(&self) -> Option<(&'static str, Option<u32>)> {
        match self.matcher.stop_reason() {
            Some(StopReason::StopToken(token)) => Some(("stop_token", Some(token.as_u32()))),
            Some(StopReason::Terminated) => Some(("terminated", None)),
            _ if self.terminate_without_stop_token && self.matcher.can_terminate() => {
                Some(("terminated", None))
            }
            Some(StopReason::Budget) => Some(("budget", None)),
            Some(StopReason::Complete) => Some(("complete", None)),
            None => None,
        }
    }

    /// Bounds the output to `tokens` tokens in all, counted from the
    /// start (`None` lifts the bound): masks then allow only tokens after
    /// which the output can still end in the tokens left, and
    /// `accept_token` refuses the others. Stop tokens stay allowed where
    /// the output may end. Guaranteed for vocabularies with a token per
    /// byte (byte-level BPE, byte fallback).
    #[pyo3(signature = (tokens))]
    fn set_token_budget(&mut self, tokens: Option<usize>) {
        self.matcher.set_token_budget(tokens);
    }

    /// The token budget, if one is set.
    #[getter]
    fn token_budget(&self) -> Option<usize> {
        self.matcher.token_budget()
    }

    /// The tokens left in the budget, if one is set.
    fn tokens_left(&self) -> Option<usize> {
        self.matcher.tokens_left()
    }

    /// The fewest tokens after which the output can end: a lower bound,
    /// exact where the rest is forced to an end. 0 where it may end now;
    /// `None` where nothing ends it.
    fn min_tokens_to_finish(&self) -> Option<usize> {
        self.matcher.min_tokens_to_finish()
    }

    /// The fewest bytes (special tokens count one) after which the output
    /// can end; `None` where nothing ends it.
    fn min_bytes_to_finish(&self) -> Option<usize> {
        self.matcher.min_bytes_to_finish()
    }

    /// The matches of the grammar's captured rules (`name [capture] ::= …`)
    /// so far, as `(name, text)` pairs by where they begin: each rule's
    /// longest match from each start. Rollback takes back the matches of
    /// the steps it undoes.
    fn get_captures(&self) -> Vec<(String, String)> {
        self.matcher
            .captures()
            .into_iter()
            .map(|capture| {
                let text = capture.text_lossy();
                (capture.name, text)
            })
            .collect()
    }

    /// What a tool-calling turn (`compile_tools`) did since the last call,
    /// as dicts a server turns into OpenAI-style deltas: `{"type": "text",
    /// "text"}`, `{"type": "reasoning", "text"}`, `{"type":
    /// "tool_call_started", "index", "name"}`, `{"type": "arguments_delta",
    /// "index", "text"}`, `{"type": "tool_call_finished", "index", "name",
    /// "arguments"}`. Events are never taken back: after rolling back
    /// steps already reported, `reset()` and replay.
    fn get_tool_call_events<'py>(&mut self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let mut ended;
        let matcher = if self.terminate_without_stop_token && self.matcher.can_terminate() {
            // Ended for the caller: every call is finished.
            ended = self.matcher.fork();
            ended.terminate().ok();
            &ended
        } else {
            &self.matcher
        };
        let events = self.tool_calls.poll(matcher);
        events
            .into_iter()
            .map(|event| {
                let dict = PyDict::new(py);
                match event {
                    ToolCallEvent::Text { text } => {
                        dict.set_item("type", "text")?;
                        dict.set_item("text", text)?;
                    }
                    ToolCallEvent::Reasoning { text } => {
                        dict.set_item("type", "reasoning")?;
                        dict.set_item("text", text)?;
                    }
                    ToolCallEvent::ToolCallStarted { index, name } => {
                        dict.set_item("type", "tool_call_started")?;
                        dict.set_item("index", index)?;
                        dict.set_item("name", name)?;
                    }
                    ToolCallEvent::ArgumentsDelta { index, text } => {
                        dict.set_item("type", "arguments_delta")?;
                        dict.set_item("index", index)?;
                        dict.set_item("text", text)?;
                    }
                    ToolCallEvent::ToolCallFinished {
                        index,
                        name,
                        arguments,
                    } => {
                        dict.set_item("type", "tool_call_finished")?;
                        dict.set_item("index", index)?;
                        dict.set_item("name", name)?;
                        dict.set_item("arguments", arguments)?;
                    }
                }
                Ok(dict)
            })
            .collect()
    }

    /// The number of steps that can be rolled back.
    fn num_steps(&self) -> usize {
        self.matcher.steps()
    }

    /// What the grammar allows next, in words (for error messages).
    fn expected(&self) -> String {
        self.matcher.expected().to_string()
    }

    /// The tokens that end the output for this matcher.
    #[getter]
    fn stop_token_ids(&self) -> Vec<usize> {
        crate::tokenizer::stop_ids(&self.vocabulary)
    }

    /// As given to the constructor (xg keeps every step).
    #[getter]
    fn max_rollback_tokens(&self) -> i64 {
        self.max_rollback_tokens
    }

    /// The grammar this matcher follows.
    #[getter]
    fn compiled_grammar(&self, py: Python<'_>) -> Py<CompiledGrammar> {
        self.compiled.clone_ref(py)
    }

    fn __repr__(&self) -> String {
        format!(
            "GrammarMatcher(steps={}, terminated={})",
            self.matcher.steps(),
            self.is_terminated()
        )
    }
}

/// Whether a step was accepted; the rejection goes to stderr if asked.
fn report<E: std::fmt::Display>(outcome: Result<(), E>, debug_print: bool) -> bool {
    match outcome {
        Ok(()) => true,
        Err(rejection) => {
            if debug_print {
                eprintln!("xg: rejected {rejection}");
            }
            false
        }
    }
}

/// Masks, accepts and rollbacks for a batch of matchers (XGrammar's class
/// of the same name): masks are filled on `max_threads` threads with the
/// GIL released.
#[pyclass(module = "xg", frozen)]
pub struct BatchGrammarMatcher {
    pool: rayon::ThreadPool,
}

#[pymethods]
impl BatchGrammarMatcher {
    /// `max_threads`: `"auto"` (every core) or a number of threads.
    #[new]
    #[pyo3(signature = (max_threads = None))]
    fn new(max_threads: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let threads = match max_threads {
            None => 0,
            Some(value) => match value.extract::<String>() {
                Ok(text) if text == "auto" => 0,
                Ok(text) => {
                    return Err(PyValueError::new_err(format!(
                        "max_threads `{text}`: expected \"auto\" or a number"
                    )));
                }
                Err(_) => usize::try_from(value.extract::<i64>()?)
                    .map_err(|_| PyValueError::new_err("max_threads must be positive"))?,
            },
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("xg-mask-{i}"))
            .build()
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok(Self { pool })
    }

    /// Fills one row of `bitmask` per matcher, in parallel: matcher `i`
    /// fills row `indices[i]` (row `i` without `indices`). Returns, per
    /// matcher, whether its row restricts anything.
    #[pyo3(signature = (matchers, bitmask, indices = None, *, debug_print = false))]
    fn batch_fill_next_token_bitmask(
        &self,
        py: Python<'_>,
        matchers: Vec<PyRefMut<'_, GrammarMatcher>>,
        bitmask: &Bound<'_, PyAny>,
        indices: Option<Vec<i64>>,
        debug_print: bool,
    ) -> PyResult<Vec<bool>> {
        let _ = debug_print;
        let mut array = MaskArray::new(bitmask)?;
        let rows: Vec<usize> = match indices {
            Some(indices) => {
                if indices.len() != matchers.len() {
                    return Err(PyValueError::new_err(format!(
                        "{} indices for {} matchers",
                        indices.len(),
                        matchers.len()
                    )));
                }
                indices
                    .into_iter()
                    .map(|i| {
                        usize::try_from(i)
                            .map_err(|_| PyValueError::new_err(format!("row {i} is negative")))
                    })
                    .collect::<PyResult<_>>()?
            }
            None => (0..matchers.len()).collect(),
        };
        let mut seen = vec![false; array.rows];
        for (&row, matcher) in rows.iter().zip(&matchers) {
            array.check_row(row)?;
            array.check_width(matcher.vocabulary.mask_words())?;
            if std::mem::replace(&mut seen[row], true) {
                return Err(PyValueError::new_err(format!(
                    "row {row} is given to two matchers"
                )));
            }
        }
        let words = array.words;
        let mut slots: Vec<Option<&mut [u32]>> = array
            .words_mut()
            .chunks_mut(words.max(1))
            .map(Some)
            .collect();
        let mut jobs: Vec<(&mut Matcher, usize, &mut [u32])> = Vec::with_capacity(matchers.len());
        let mut matchers = matchers;
        for (matcher, &row) in matchers.iter_mut().zip(&rows) {
            let tokens = matcher.vocabulary.len();
            let slot = slots[row].take().expect("rows are distinct");
            jobs.push((&mut matcher.matcher, tokens, slot));
        }
        let outcomes: Vec<PyResult<bool>> = py.detach(|| {
            use rayon::prelude::*;
            self.pool.install(|| {
                jobs.into_par_iter()
                    .map(|(matcher, tokens, row)| fill(matcher, row, tokens))
                    .collect()
            })
        });
        outcomes.into_iter().collect()
    }

    /// Accepts `tokens[i]` in matcher `i`, in parallel with the GIL
    /// released; per matcher, whether it was accepted.
    #[staticmethod]
    #[pyo3(signature = (matchers, tokens, *, debug_print = false))]
    fn batch_accept_token(
        py: Python<'_>,
        mut matchers: Vec<PyRefMut<'_, GrammarMatcher>>,
        tokens: Vec<i64>,
        debug_print: bool,
    ) -> PyResult<Vec<bool>> {
        same_length(matchers.len(), tokens.len(), "tokens")?;
        // Every id is checked before any matcher moves.
        let ids = matchers
            .iter()
            .zip(&tokens)
            .map(|(matcher, &token)| token_id(token, matcher.vocab_len()))
            .collect::<PyResult<Vec<_>>>()?;
        let mut jobs: Vec<(&mut Matcher, &[TokenId])> = matchers
            .iter_mut()
            .zip(&ids)
            .map(|(matcher, id)| (&mut matcher.matcher, std::slice::from_ref(id)))
            .collect();
        let results = py.detach(|| Matcher::accept_tokens_batch(&mut jobs));
        Ok(results
            .into_iter()
            .map(|result| report(result.map_err(|(_, rejection)| rejection), debug_print))
            .collect())
    }

    /// Accepts `strings[i]` (str or bytes) in matcher `i`; per matcher,
    /// whether it was accepted.
    #[staticmethod]
    #[pyo3(signature = (matchers, strings, *, debug_print = false))]
    fn batch_accept_string(
        mut matchers: Vec<PyRefMut<'_, GrammarMatcher>>,
        strings: Vec<Bound<'_, PyAny>>,
        debug_print: bool,
    ) -> PyResult<Vec<bool>> {
        same_length(matchers.len(), strings.len(), "strings")?;
        matchers
            .iter_mut()
            .zip(&strings)
            .map(|(matcher, text)| matcher.accept_string(text, debug_print))
            .collect()
    }

    /// Rolls matcher `i` back by `counts[i]` steps. Every count is checked
    /// before any matcher moves.
    #[staticmethod]
    fn batch_rollback(
        mut matchers: Vec<PyRefMut<'_, GrammarMatcher>>,
        counts: Vec<i64>,
    ) -> PyResult<()> {
        same_length(matchers.len(), counts.len(), "counts")?;
        let counts = counts
            .iter()
            .map(|&count| {
                usize::try_from(count)
                    .map_err(|_| PyValueError::new_err(format!("cannot roll back {count} tokens")))
            })
            .collect::<PyResult<Vec<usize>>>()?;
        let mut jobs: Vec<(&mut Matcher, usize)> = matchers
            .iter_mut()
            .map(|matcher| &mut matcher.matcher)
            .zip(counts)
            .collect();
        Matcher::rollback_batch(&mut jobs).map_err(|e| PyValueError::new_err(e.to_string()))
    }
}

fn same_length(matchers: usize, given: usize, what: &str) -> PyResult<()> {
    if matchers == given {
        Ok(())
    } else {
        Err(PyValueError::new_err(format!(
            "{given} {what} for {matchers} matchers"
        )))
    }
}
