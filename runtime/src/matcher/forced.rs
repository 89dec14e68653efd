//! Jump-forward decoding: the text the grammar forces next, as bytes and as
//! the model's tokens.
//!
//! Forced bytes cost a model nothing to "generate", but a server appends
//! tokens, and the tokens must be the ones the model's tokenizer would have
//! written for the whole text, or the model sees a tokenization it was never
//! trained on. Two boundaries can go wrong: the last tokens already accepted
//! may merge with the forced text (`"` then `:` is `":` in many
//! vocabularies), and the forced text's last token may merge with what the
//! model writes after it. [`Matcher::forced_tokens`] tokenizes the first
//! again with some text before it (the tokenizer's word splitting looks
//! back: `{"$` then `schema` is not `$schema`), taking back the tokens it
//! writes differently, and stops short of the second (leaving out every
//! token the text after it could still grow into).

use super::Matcher;
use super::earley::{Start, Symbol};
use crate::TokenId;

/// The longest string [`Matcher::forced_bytes`] looks ahead.
const FORCED_LIMIT: usize = 1 << 16;

/// The most Earley items [`Matcher::forced_bytes`] builds looking ahead: a
/// grammar whose rows grow with each forced byte would otherwise cost time
/// quadratic in [`FORCED_LIMIT`] (a random grammar of the matcher property
/// test ran for over 15 minutes). Forced text cut short is still forced.
const FORCED_ITEMS: usize = 1 << 20;

/// How many of the model's last tokens [`Matcher::forced_tokens`] tokenizes
/// again with the forced text: enough for a tokenizer's word splitting to
/// see the word the forced text continues.
pub const CONTEXT_TOKENS: usize = 4;

/// Tokens a server appends for the text the grammar forces: first roll back
/// `rollback` steps (at most [`CONTEXT_TOKENS`]: the model's last tokens
/// that the tokenizer writes differently before the forced text), then
/// accept `tokens`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ForcedTokens {
    /// Steps to roll back before appending `tokens`.
    pub rollback: usize,
    /// The tokens to append, in order.
    pub tokens: Vec<TokenId>,
}

impl Matcher {
    /// The longest byte string the grammar forces next: every continuation
    /// of the output starts with it (jump-forward decoding). Empty when the
    /// output may end here or more than one byte may follow. The look-ahead
    /// stops at 64 KiB or about a million Earley items, whichever comes
    /// first (what follows is forced too, and found at the next step).
    pub fn forced_bytes(&self) -> Vec<u8> {
        self.forced().0
    }

    /// The forced bytes, and whether the output must end right after them.
    pub(super) fn forced(&self) -> (Vec<u8>, bool) {
        let mut probe = self.fork();
        let mut forced = Vec::new();
        let mut items = 0;
        while forced.len() < FORCED_LIMIT
            && items < FORCED_ITEMS
            && !probe.terminated
            && !probe.can_terminate()
        {
            let expected = probe.expected();
            if expected.allows_text() || expected.allows_tokens() {
                break;
            }
            let mut only = None;
            let mut viable = 0;
            for byte in expected.bytes() {
                // Without lookahead every byte an item can scan is viable.
                if !self.parse.grammar.has_lookahead() || probe.viable(Symbol::Byte(byte)) {
                    viable += 1;
                    only = Some(byte);
                    if viable > 1 {
                        break;
                    }
                }
            }
            match only {
                Some(byte) if viable == 1 && probe.push(Start::Scan(Symbol::Byte(byte))) => {
                    forced.push(byte);
                    items += probe
                        .parse
                        .history
                        .row(probe.parse.history.rows() - 1)
                        .len();
                }
                _ => break,
            }
        }
        (forced, probe.is_complete())
    }

    /// The forced text ([`Matcher::forced_bytes`]) as the model's tokens,
    /// tokenized the way `tokenize` (the model's tokenizer on text, with no
    /// special tokens added) writes the whole output.
    ///
    /// The forced text is tokenized after the text of the last few tokens
    /// the model wrote (up to [`CONTEXT_TOKENS`], those taken by their
    /// text): where the tokenizer writes that context differently followed
    /// by the forced text, `rollback` takes back the tokens from the first
    /// that differs, and `tokens` starts with their new tokens. Tokens at the
    /// end that the model's next text could still merge with — every token
    /// from the first place where the rest of the text begins a longer
    /// token — are left out (unless the output must end after the forced
    /// text), and so is a character cut off by the end of the forced bytes.
    /// Every returned token is accepted by the grammar after the rollback.
    /// Empty without a vocabulary, when nothing is forced, or when the
    /// tokenizer does not write the context's first token as the model did
    /// (the context may then start inside a word).
    ///
    /// `tokenize` must write a piece of text as it is written inside a
    /// longer one: byte-level BPE tokenizers (Llama 3, Qwen, gpt-oss) do;
    /// a SentencePiece tokenizer that adds a space before the first word
    /// needs that prefix removed.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use xg_runtime::{Grammar, Matcher, TokenId, Vocabulary};
    /// # fn demo(grammar: Arc<Grammar>, vocabulary: Arc<Vocabulary>,
    /// #         tokenize: impl FnMut(&str) -> Vec<TokenId>) {
    /// let mut matcher = Matcher::with_vocabulary(grammar, vocabulary);
    /// let jump = matcher.forced_tokens(tokenize);
    /// matcher.rollback(jump.rollback).unwrap();
    /// matcher.accept_tokens(&jump.tokens).unwrap();
    /// # }
    /// ```
    pub fn forced_tokens(&self, mut tokenize: impl FnMut(&str) -> Vec<TokenId>) -> ForcedTokens {
        let Some(vocabulary) = self.vocabulary.as_ref() else {
            return ForcedTokens::default();
        };
        let (forced, ends) = self.forced();
        if forced.is_empty() {
            return ForcedTokens::default();
        }
        // The last tokens taken by their text, from the first that starts a
        // character.
        let mut context: Vec<TokenId> = self
            .steps
            .iter()
            .rev()
            .map_while(|step| step.token)
            .take(CONTEXT_TOKENS)
            .collect();
        context.reverse();
        let mut from_start = context.len() == self.steps.len();
        while let Some(&first) = context.first() {
            match vocabulary.bytes(first).first() {
                Some(byte) if !is_continuation(*byte) => break,
                _ => {
                    context.remove(0);
                    from_start = false;
                }
            }
        }
        let mut bytes: Vec<u8> = context
            .iter()
            .flat_map(|&token| vocabulary.bytes(token))
            .copied()
            .collect();
        let context_len = bytes.len();
        bytes.extend_from_slice(&forced);
        let text = valid_prefix(&bytes);
        if text.len() <= context_len {
            return ForcedTokens::default();
        }
        let mut tokens = tokenize(text);
        // Unless the output ends after the forced text, keep only the tokens
        // that end before the first place from which the rest of the text
        // begins a longer token (the model's next text may complete it).
        if !(ends && text.len() == bytes.len()) {
            let trie = vocabulary.trie();
            let open = (text.len().saturating_sub(trie.max_depth())..text.len())
                .find(|&at| trie.extends(&text.as_bytes()[at..]))
                .unwrap_or(text.len());
            let mut end = 0;
            let kept = tokens
                .iter()
                .take_while(|&&token| {
                    end += vocabulary.bytes(token).len();
                    end <= open
                })
                .count();
            tokens.truncate(kept);
        }
        let same = tokens
            .iter()
            .zip(&context)
            .take_while(|(a, b)| a == b)
            .count();
        if same == 0 && !context.is_empty() && !from_start {
            return ForcedTokens::default();
        }
        tokens.drain(..same);
        let rollback = context.len() - same;
        // Each token must be one the grammar takes here (a tokenizer may, say,
        // read a special token's text as that token).
        let mut probe = self.fork();
        probe
            .rollback(rollback)
            .expect("the context's steps can be rolled back");
        let accepted = tokens
            .iter()
            .take_while(|&&token| probe.accept_token(token).is_ok())
            .count();
        tokens.truncate(accepted);
        // The new tokens must write at least the text taken back, and more.
        let taken_back: usize = context[same..]
            .iter()
            .map(|&t| vocabulary.bytes(t).len())
            .sum();
        let written: usize = tokens.iter().map(|&t| vocabulary.bytes(t).len()).sum();
        if written <= taken_back {
            return ForcedTokens::default();
        }
        ForcedTokens { rollback, tokens }
    }
}

/// Whether `byte` continues a UTF-8 character (never starts one).
fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// The longest prefix of `bytes` that is whole UTF-8 characters.
fn valid_prefix(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => std::str::from_utf8(&bytes[..error.valid_up_to()]).expect("valid up to here"),
    }
}
