//! `xg trace`: a text through a grammar token by token, as a model would
//! produce it, with each step's token mask.
//!
//! The text is tokenized with the model's own `tokenizer.json` (the
//! `tokenizers` crate); then, per token, the mask is filled (timed), and the
//! token is checked against it and accepted. The table shows the token, how
//! many tokens the mask allowed, whether the token was among them, the time
//! and the mask cache's work — what a user needs when a grammar refuses an
//! output it should take.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use xg_runtime::{Grammar, Matcher, TokenId, ToolCallEvent, ToolCallStream, Vocabulary};

/// Where the text comes from.
pub(crate) enum Input<'a> {
    Text(String),
    File(&'a Path),
}

/// The name that stands for the Qwen3 tokenizer built into the tool (the
/// one in `data/tokenizers/qwen3`), where a path to a `tokenizer.json` is
/// expected and no file of that name exists.
pub(crate) const EMBEDDED_NAME: &str = "qwen3";

/// The embedded Qwen3 `tokenizer.json`, gzip-compressed.
const EMBEDDED_JSON_GZ: &[u8] = include_bytes!("../../data/tokenizers/qwen3/tokenizer.json.gz");

/// The embedded Qwen3 `tokenizer_config.json`.
const EMBEDDED_CONFIG: &[u8] = include_bytes!("../../data/tokenizers/qwen3/tokenizer_config.json");

/// A model's tokenizer files as read from disk.
pub(crate) struct TokenizerFiles {
    /// `tokenizer.json`, decompressed.
    pub json: Vec<u8>,
    /// `tokenizer_config.json`, if there is one.
    pub config: Option<Vec<u8>>,
}

/// Reads `path`: a `tokenizer.json`, gzip-compressed or not (decided by
/// its content, not its name), with `config` or else the
/// `tokenizer_config.json` beside it; or, if no file is called that,
/// [`EMBEDDED_NAME`] for the tokenizer built into the tool.
pub(crate) fn read_tokenizer(path: &Path, config: Option<&Path>) -> Result<TokenizerFiles> {
    let read_config = |beside: Option<Vec<u8>>| -> Result<Option<Vec<u8>>> {
        match config {
            Some(config) => {
                Ok(Some(std::fs::read(config).with_context(|| {
                    format!("cannot read `{}`", config.display())
                })?))
            }
            None => Ok(beside),
        }
    };
    if path == Path::new(EMBEDDED_NAME) && !path.exists() {
        return Ok(TokenizerFiles {
            json: gunzip(EMBEDDED_JSON_GZ).context("the embedded tokenizer")?,
            config: read_config(Some(EMBEDDED_CONFIG.to_vec()))?,
        });
    }
    let raw = std::fs::read(path).with_context(|| {
        format!(
            "cannot read `{}` (a tokenizer.json, or `{EMBEDDED_NAME}` for the built-in one)",
            path.display()
        )
    })?;
    let json = if raw.starts_with(&[0x1f, 0x8b]) {
        gunzip(&raw).with_context(|| format!("cannot decompress `{}`", path.display()))?
    } else {
        raw
    };
    let beside = std::fs::read(path.with_file_name("tokenizer_config.json")).ok();
    Ok(TokenizerFiles {
        json,
        config: read_config(beside)?,
    })
}

fn gunzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut out)?;
    Ok(out)
}

/// The model's tokenizer files.
pub(crate) struct Model<'a> {
    /// Its `tokenizer.json`.
    pub tokenizer: &'a Path,
    /// Its `tokenizer_config.json`; by default the one next to `tokenizer`.
    pub config: Option<&'a Path>,
    /// More stop token ids.
    pub stop: &'a [u32],
}

impl Model<'_> {
    /// The vocabulary, its token trie built as a server builds it when it
    /// loads the model (so the first step's time, and in `xg bench` the first
    /// schema's, is the mask's alone; LLGuidance builds its trie before any
    /// timing too), and the tokenizer's JSON.
    pub(crate) fn load(&self) -> Result<(Vocabulary, Vec<u8>)> {
        let path = self.tokenizer;
        let TokenizerFiles { json, config } = read_tokenizer(path, self.config)?;
        let stop = self
            .stop
            .iter()
            .map(|&id| TokenId::new(id as usize))
            .collect::<Result<Vec<_>, _>>()
            .context("stop token id out of range")?;
        let vocabulary = Vocabulary::from_tokenizer_json(&json, config.as_deref())
            .and_then(|vocabulary| vocabulary.with_stop_tokens(&stop))
            .with_context(|| format!("`{}`", path.display()))?;
        vocabulary.build_trie();
        Ok((vocabulary, json))
    }
}

/// Traces `input` through `grammar` with the model's vocabulary and
/// tokenizer (`json`, read from `tokenizer_path`); true if every token was
/// allowed and the grammar can end after the last one.
pub(crate) fn trace(
    grammar: Grammar,
    vocabulary: &Arc<Vocabulary>,
    json: &[u8],
    tokenizer_path: &Path,
    input: Input<'_>,
    token_budget: Option<usize>,
) -> Result<bool> {
    let ids = tokenize(json, tokenizer_path, input)?;
    header(ids.len(), vocabulary, token_budget);
    if let Some(why) = grammar.cache_fallback() {
        outln!("note: every mask is computed without the mask cache: {why}");
    }
    let mut matcher = Matcher::with_vocabulary(Arc::new(grammar), Arc::clone(vocabulary));
    matcher.set_token_budget(token_budget);
    let mut mask = vec![0; vocabulary.mask_words()];
    let mut times = Vec::new();
    let mut step = |matcher: &mut Matcher, label: &str, id: Option<TokenId>| -> Result<bool> {
        let started = Instant::now();
        matcher
            .fill_next_token_bitmask(&mut mask)
            .context("computing the token mask")?;
        let micros = started.elapsed().as_secs_f64() * 1e6;
        times.push(micros);
        let allowed: u32 = mask.iter().map(|w| w.count_ones()).sum();
        // The end: where the grammar can end, the stop tokens are allowed.
        let ok = id.map_or_else(|| matcher.can_terminate(), |id| is_set(&mask, id));
        let stats = matcher.last_mask_stats();
        let id_text = id.map_or_else(|| "end".to_owned(), |id| id.to_string());
        let budget = match matcher.tokens_left() {
            Some(left) => {
                let end = matcher
                    .min_bytes_to_finish()
                    .map_or_else(|| "-".to_owned(), |end| end.to_string());
                format!("  {left:>4}/{end:<4}")
            }
            None => String::new(),
        };
        outln!(
            "{:>5}  {:>7}  {:<24} {:>8}  {:<3} {:>9.1}  {:>7} {:>4} {:>5} {:>7} {:>9} {:>7} {:>8}{}",
            times.len(),
            id_text,
            label,
            allowed,
            if ok { "yes" } else { "NO" },
            micros,
            stats.entries,
            if stats.hits > 0 { "yes" } else { "-" },
            stats.built,
            stats.nodes_walked,
            // Verdicts kept from an earlier step at the same parse state.
            if stats.state_hits > 0 {
                "seen".to_owned()
            } else {
                stats.uncertain.to_string()
            },
            stats.bytes_pushed,
            stats.items,
            budget
        );
        Ok(ok)
    };
    let mut all_ok = true;
    let mut stream = ToolCallStream::new();
    for &raw in &ids {
        let id = TokenId::new(raw as usize).context("token id out of range")?;
        let label = shown(vocabulary.bytes(id));
        let allowed = step(&mut matcher, &label, Some(id))?;
        if let Err(rejection) = matcher.accept_token(id) {
            outln!("\nthe grammar refuses token {id} {label}: {rejection:#}");
            all_ok = false;
            break;
        }
        if !allowed {
            outln!("\nbug: token {id} was accepted but not in the mask");
            all_ok = false;
            break;
        }
        events(&stream.poll(&matcher));
    }
    if all_ok {
        let can_end = step(&mut matcher, "(end of output)", None)?;
        if can_end {
            let mut ended = matcher.fork();
            ended.terminate().context("ending the output")?;
            events(&stream.poll(&ended));
        } else {
            outln!(
                "\nthe output cannot end here; expected {}",
                matcher.expected()
            );
            all_ok = false;
        }
    }
    captures(&matcher);
    summary(&mut times, vocabulary);
    Ok(all_ok)
}

/// The lines above a trace's steps: the input's size, the budget if any,
/// the column names.
fn header(tokens: usize, vocabulary: &Vocabulary, token_budget: Option<usize>) {
    outln!(
        "{} tokens ({:?} tokenizer, {} ids, {} stop tokens)\n",
        tokens,
        vocabulary.tokenizer_kind(),
        vocabulary.len(),
        vocabulary.stop_tokens().len()
    );
    if let Some(budget) = token_budget {
        outln!("token budget: {budget} (the last column: tokens left, fewest bytes to an end)\n");
    }
    outln!(
        "{:>5}  {:>7}  {:<24} {:>8}  {:<3} {:>9}  {:>7} {:>4} {:>5} {:>7} {:>9} {:>7} {:>8}{}",
        "step",
        "id",
        "token",
        "allowed",
        "ok",
        "mask µs",
        "entries",
        "hit",
        "built",
        "walked",
        "uncertain",
        "pushed",
        "earley",
        if token_budget.is_some() {
            "  left/end"
        } else {
            ""
        }
    );
}

/// The events of a tool-calling turn's step, under it.
fn events(events: &[ToolCallEvent]) {
    for event in events {
        match event {
            ToolCallEvent::Text { text } => {
                outln!("{:>16}text: {}", "", quoted(text.as_bytes()));
            }
            ToolCallEvent::Reasoning { text } => {
                outln!("{:>16}reasoning: {}", "", quoted(text.as_bytes()));
            }
            ToolCallEvent::ToolCallStarted { index, name } => {
                outln!("{:>16}call {index} started: {name}", "");
            }
            ToolCallEvent::ArgumentsDelta { index, text } => {
                outln!(
                    "{:>16}call {index} arguments: {}",
                    "",
                    quoted(text.as_bytes())
                );
            }
            ToolCallEvent::ToolCallFinished { index, name, .. } => {
                outln!("{:>16}call {index} finished: {name}", "");
            }
        }
    }
}

/// The matches of the grammar's captured rules in the output, if it has any.
fn captures(matcher: &Matcher) {
    let captures = matcher.captures();
    if captures.is_empty() {
        return;
    }
    outln!("\ncaptures (name, bytes, text):");
    for capture in captures {
        outln!(
            "  {:<16} {:>6}..{:<6} {}",
            capture.name,
            capture.start,
            capture.end,
            quoted(&capture.text)
        );
    }
}

/// The text of `input` as the ids the model's tokenizer gives it.
fn tokenize(json: &[u8], tokenizer_path: &Path, input: Input<'_>) -> Result<Vec<u32>> {
    let encoder = tokenizers::Tokenizer::from_bytes(json)
        .map_err(|e| anyhow::anyhow!("`{}`: {e}", tokenizer_path.display()))?;
    let text = match input {
        Input::Text(text) => text,
        Input::File(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read `{}` as UTF-8 text", path.display()))?,
    };
    Ok(encoder
        .encode(text.as_str(), false)
        .map_err(|e| anyhow::anyhow!("cannot tokenize the text: {e}"))?
        .get_ids()
        .to_vec())
}

/// Mask times and the cache's counters.
fn summary(times: &mut [f64], vocabulary: &Vocabulary) {
    times.sort_by(f64::total_cmp);
    let count = u32::try_from(times.len()).unwrap_or(u32::MAX).max(1);
    let mean = times.iter().sum::<f64>() / f64::from(count);
    let cache = vocabulary.mask_cache().stats();
    outln!(
        "\nmasks: {} in all, mean {mean:.1} µs, max {:.1} µs; cache: {} row hits, {} entries built, {} loaded from the bundle, {} entries and {} rows held; {} steps at a parse state seen before",
        times.len(),
        times.last().copied().unwrap_or(0.0),
        cache.hits,
        cache.misses,
        cache.loaded,
        cache.entries,
        cache.combinations,
        cache.state_hits
    );
}

fn is_set(mask: &[u32], id: TokenId) -> bool {
    mask[id.as_usize() / 32] & (1 << (id.as_usize() % 32)) != 0
}

/// A token's bytes as a quoted, escaped label of bounded width.
fn shown(bytes: &[u8]) -> String {
    let label = quoted(bytes);
    if label.chars().count() > 22 {
        return label.chars().take(20).collect::<String>() + "…\"";
    }
    label
}

/// Bytes as a quoted string, with quotes, backslashes, control
/// characters and invalid UTF-8 escaped.
fn quoted(bytes: &[u8]) -> String {
    let mut label = String::from("\"");
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => label.push_str("\\\""),
                '\\' => label.push_str("\\\\"),
                c if c.is_control() => {
                    let _ = write!(label, "{}", c.escape_default());
                }
                c => label.push(c),
            }
        }
        for byte in chunk.invalid() {
            let _ = write!(label, "\\x{byte:02x}");
        }
    }
    label.push('"');
    label
}
