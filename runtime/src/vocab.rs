//! [`Vocabulary`]: what each token id of a model stands for, as bytes.
//!
//! Grammars match bytes; models emit token ids. A vocabulary maps every id
//! to the bytes the token decodes to, or marks it special (its text never
//! matches: `<|im_end|>` is an event, not the characters `<|im_end|>`) or
//! absent (a padding row of the model's output layer, never allowed). The
//! stop tokens — the tokenizer's end of sequence, a generation config's list,
//! a user's own — form one set, allowed exactly where the grammar can end.
//!
//! Loading reads a Hugging Face `tokenizer.json` (byte-level BPE with the
//! GPT-2 byte↔character mapping, SentencePiece-style pieces with `▁` and
//! `<0xNN>` byte fallback, or plain text pieces) or takes a list of byte
//! strings. The [fingerprint](Vocabulary::fingerprint) identifies the
//! vocabulary, so caches and bundles are never used with another one.

use std::fmt;

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::TokenId;
use crate::cache::MaskCache;
use crate::fnv::Fnv;
use crate::trie::TokenTrie;

/// How a tokenizer writes its tokens' bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenizerKind {
    /// Byte-level BPE: each byte is written as one character (GPT-2's
    /// mapping). Llama 3, Qwen, gpt-oss, GPT-2.
    ByteLevel,
    /// SentencePiece pieces: `▁` is a space, `<0xNN>` is the byte `NN`.
    /// Llama 2, Mistral, Gemma.
    SentencePiece,
    /// Pieces are their UTF-8 text, or the vocabulary was given as bytes.
    Raw,
}

/// What a token id stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    /// Text: the token's bytes.
    Text,
    /// A special token, matched only by id.
    Special,
    /// No token: a padding row of the model, never allowed.
    Absent,
}

/// A vocabulary could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VocabError {
    message: String,
}

impl VocabError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for VocabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid vocabulary: {}", self.message)
    }
}

impl std::error::Error for VocabError {}

/// The tokens of a model — bytes, kinds and stop set, immutable once
/// built — and the handle of the mask cache made for them
/// ([`Vocabulary::mask_cache`]), which fills as masks are computed and
/// which clones share. Share it behind an `Arc`.
///
/// The cache is held here, not beside the vocabulary, because its entries
/// are only sound for these tokens (they name tokens by their rank in this
/// vocabulary's trie): a vocabulary changed by a `with_*` method gets a new,
/// empty cache, and no matcher can pair a cache with another vocabulary.
#[derive(Clone, Debug)]
pub struct Vocabulary {
    /// Bytes of all text tokens, token after token.
    pool: Vec<u8>,
    /// Per token: its bytes are `pool[offsets[id]..offsets[id + 1]]`.
    offsets: Vec<u32>,
    kinds: Vec<TokenKind>,
    /// The special tokens' names (`<|im_end|>`), sorted, for
    /// [`Vocabulary::token_by_text`].
    special_names: Vec<(String, TokenId)>,
    /// Sorted, distinct.
    stop: Vec<TokenId>,
    kind: TokenizerKind,
    fingerprint: u64,
    /// Built on first use (masks need it; loading alone does not); clones
    /// of the vocabulary share it.
    trie: Arc<OnceLock<TokenTrie>>,
    /// Mask-cache entries of every grammar used with this vocabulary;
    /// clones of the vocabulary share it.
    cache: Arc<MaskCache>,
}

/// A token before the vocabulary is assembled.
#[derive(Clone, Debug)]
enum Entry {
    Absent,
    /// With its name (`<|im_end|>`), which is not its text.
    Special(String),
    Text(Vec<u8>),
}

impl Vocabulary {
    /// A vocabulary from the bytes of each token, in id order; `special`
    /// ids match only by id. For tests and tokenizers without a
    /// `tokenizer.json`.
    pub fn from_byte_strings<B: AsRef<[u8]>>(
        tokens: &[B],
        special: &[TokenId],
    ) -> Result<Self, VocabError> {
        let mut entries: Vec<Entry> = tokens
            .iter()
            .map(|t| Entry::Text(t.as_ref().to_vec()))
            .collect();
        for id in special {
            let entry = entries
                .get_mut(id.as_usize())
                .ok_or_else(|| VocabError::new(format!("special token {id} is out of range")))?;
            if let Entry::Text(bytes) = entry {
                *entry = Entry::Special(String::from_utf8_lossy(bytes).into_owned());
            }
        }
        Self::assemble(entries, TokenizerKind::Raw, &[])
    }

    /// A vocabulary from each token's piece as the tokenizer writes it
    /// (`Ġhello` for byte-level BPE, `▁hello` and `<0x0A>` for
    /// SentencePiece with byte fallback), in id order; `special` ids match
    /// only by id. For tokenizers known by their piece list alone (as
    /// XGrammar's `TokenizerInfo` takes them).
    pub fn from_pieces<S: AsRef<str>>(
        pieces: &[S],
        kind: TokenizerKind,
        special: &[TokenId],
    ) -> Result<Self, VocabError> {
        let mut entries: Vec<Entry> = pieces
            .iter()
            .map(|piece| Entry::Text(decode_piece(piece.as_ref(), kind, true)))
            .collect();
        for id in special {
            let entry = entries
                .get_mut(id.as_usize())
                .ok_or_else(|| VocabError::new(format!("special token {id} is out of range")))?;
            *entry = Entry::Special(pieces[id.as_usize()].as_ref().to_owned());
        }
        Self::assemble(entries, kind, &[])
    }

    /// A vocabulary from a Hugging Face `tokenizer.json`, with the end of
    /// sequence token named by its `tokenizer_config.json` (if given) as the
    /// stop token.
    pub fn from_tokenizer_json(
        tokenizer: &[u8],
        config: Option<&[u8]>,
    ) -> Result<Self, VocabError> {
        let json: Value = serde_json::from_slice(tokenizer)
            .map_err(|e| VocabError::new(format!("tokenizer.json is not JSON: {e}")))?;
        let kind = detect_kind(&json);
        let model = json
            .get("model")
            .ok_or_else(|| VocabError::new("tokenizer.json has no `model`"))?;
        let byte_fallback = model.get("byte_fallback").and_then(Value::as_bool) == Some(true);
        let pieces = model_pieces(model)?;
        let added = json.get("added_tokens").and_then(Value::as_array);
        // Ids are dense in every real tokenizer: an id far beyond the
        // tokens listed is refused before anything is allocated for it.
        let listed = pieces.len() + added.map_or(0, Vec::len);
        let id_bound = listed.saturating_add(MAX_ID_GAP);
        let mut entries: Vec<Entry> = Vec::new();
        let mut by_text: Vec<(String, u32)> = Vec::new();
        // Per id, the text it was given by the model's vocabulary.
        let mut model_text: Vec<Option<String>> = Vec::new();
        for (piece, id) in pieces {
            let index = checked_index(id, id_bound, listed)?;
            if model_text.len() <= index {
                model_text.resize(index + 1, None);
                entries.resize(index + 1, Entry::Absent);
            }
            if let Some(earlier) = &model_text[index] {
                return Err(VocabError::new(format!(
                    "token id {id} is given twice, to `{earlier}` and to `{piece}`"
                )));
            }
            entries[index] = Entry::Text(decode_piece(&piece, kind, byte_fallback));
            model_text[index] = Some(piece.clone());
            by_text.push((piece, id));
        }
        let mut added_text: Vec<(u32, String)> = Vec::new();
        for token in added.into_iter().flatten() {
            let id = token
                .get("id")
                .and_then(Value::as_u64)
                .and_then(|id| u32::try_from(id).ok())
                .filter(|&id| (id as usize) < TokenId::LIMIT)
                .ok_or_else(|| VocabError::new("an added token has no valid `id`"))?;
            let index = checked_index(id, id_bound, listed)?;
            let content = token
                .get("content")
                .and_then(Value::as_str)
                .ok_or_else(|| VocabError::new(format!("added token {id} has no `content`")))?;
            // An added token may restate a token of the model's vocabulary
            // (Llama 2's `<unk>`, `<s>`, `</s>`), not give its id to another.
            let earlier = model_text
                .get(index)
                .and_then(Option::as_deref)
                .or_else(|| {
                    added_text
                        .iter()
                        .find(|(other, _)| *other == id)
                        .map(|(_, text)| text.as_str())
                });
            if let Some(earlier) = earlier
                && earlier != content
            {
                return Err(VocabError::new(format!(
                    "token id {id} is given twice, to `{earlier}` and to the added token `{content}`"
                )));
            }
            if entries.len() <= index {
                entries.resize(index + 1, Entry::Absent);
            }
            let special = token.get("special").and_then(Value::as_bool) == Some(true);
            // Added tokens are written as plain text, not byte-mapped.
            entries[index] = if special {
                Entry::Special(content.to_owned())
            } else {
                Entry::Text(content.as_bytes().to_vec())
            };
            added_text.push((id, content.to_owned()));
            by_text.push((content.to_owned(), id));
        }
        if entries.is_empty() {
            return Err(VocabError::new("tokenizer.json has no tokens"));
        }
        let mut stop = Vec::new();
        if let Some(config) = config {
            let config: Value = serde_json::from_slice(config)
                .map_err(|e| VocabError::new(format!("tokenizer_config.json is not JSON: {e}")))?;
            let eos = match config.get("eos_token") {
                Some(Value::String(text)) => Some(text.as_str()),
                Some(Value::Object(object)) => object.get("content").and_then(Value::as_str),
                _ => None,
            };
            if let Some(eos) = eos {
                let (_, id) = by_text
                    .iter()
                    .rev()
                    .find(|(t, _)| t == eos)
                    .ok_or_else(|| {
                        VocabError::new(format!("the end-of-sequence token `{eos}` is not a token"))
                    })?;
                stop.push(TokenId::new(*id as usize).map_err(|e| VocabError::new(e.to_string()))?);
            }
        }
        Self::assemble(entries, kind, &stop)
    }

    fn assemble(
        entries: Vec<Entry>,
        kind: TokenizerKind,
        stop: &[TokenId],
    ) -> Result<Self, VocabError> {
        if entries.len() >= TokenId::LIMIT {
            return Err(VocabError::new("too many tokens"));
        }
        let mut vocabulary = Self {
            pool: Vec::new(),
            offsets: vec![0],
            kinds: Vec::with_capacity(entries.len()),
            special_names: Vec::new(),
            stop: Vec::new(),
            kind,
            fingerprint: 0,
            trie: Arc::default(),
            cache: Arc::default(),
        };
        for (index, entry) in entries.into_iter().enumerate() {
            let kind = match entry {
                Entry::Absent => TokenKind::Absent,
                Entry::Special(name) => {
                    let id = TokenId::new(index).map_err(|e| VocabError::new(e.to_string()))?;
                    vocabulary.special_names.push((name, id));
                    TokenKind::Special
                }
                // A token of no bytes would be allowed at every step
                // without moving the output on: never allowed.
                Entry::Text(bytes) if bytes.is_empty() => TokenKind::Absent,
                Entry::Text(bytes) => {
                    vocabulary.pool.extend_from_slice(&bytes);
                    TokenKind::Text
                }
            };
            vocabulary.kinds.push(kind);
            let end = u32::try_from(vocabulary.pool.len())
                .map_err(|_| VocabError::new("token bytes exceed 4 GiB"))?;
            vocabulary.offsets.push(end);
        }
        vocabulary.special_names.sort_unstable();
        vocabulary.with_stop_tokens(stop)
    }

    /// Adds stop tokens (a generation config's end-of-sequence list, a
    /// user's stop ids). A stop token is allowed exactly where the grammar can
    /// end.
    pub fn with_stop_tokens(mut self, ids: &[TokenId]) -> Result<Self, VocabError> {
        for &id in ids {
            if id.as_usize() >= self.len() {
                return Err(VocabError::new(format!(
                    "stop token {id} is outside the vocabulary of {} tokens",
                    self.len()
                )));
            }
            if self.kinds[id.as_usize()] == TokenKind::Absent {
                return Err(VocabError::new(format!("stop token {id} is not a token")));
            }
            self.stop.push(id);
        }
        self.stop.sort_unstable();
        self.stop.dedup();
        self.reset_derived();
        Ok(self)
    }

    /// The same tokens with exactly `ids` as stop tokens (a request that
    /// overrides the model's end-of-sequence set). The mask cache starts
    /// empty: masks depend on the stop set.
    pub fn with_stop_tokens_only(mut self, ids: &[TokenId]) -> Result<Self, VocabError> {
        self.stop.clear();
        self.with_stop_tokens(ids)
    }

    /// Extends the vocabulary to the model's output size: a model's logits
    /// may have more rows than the tokenizer has tokens; the extra ids are
    /// absent and never allowed.
    pub fn with_model_size(mut self, size: usize) -> Result<Self, VocabError> {
        if size < self.len() {
            return Err(VocabError::new(format!(
                "the model's {size} tokens are fewer than the tokenizer's {}",
                self.len()
            )));
        }
        if size >= TokenId::LIMIT {
            return Err(VocabError::new("too many tokens"));
        }
        let end = *self.offsets.last().expect("offsets start with 0");
        self.kinds.resize(size, TokenKind::Absent);
        self.offsets.resize(size + 1, end);
        self.reset_derived();
        Ok(self)
    }

    /// Bounds the mask cache to about `bytes` (1 GiB by default); the
    /// least recently used entries are dropped beyond it.
    #[must_use]
    pub fn with_cache_limit(mut self, bytes: usize) -> Self {
        self.cache = Arc::new(MaskCache::new(bytes));
        self
    }

    /// The tokens, stop set or size changed: what was derived from them
    /// is stale.
    fn reset_derived(&mut self) {
        self.trie = Arc::default();
        self.cache = Arc::new(MaskCache::new(self.cache.limit()));
        self.fingerprint = self.compute_fingerprint();
    }

    /// The cache of token-mask entries shared by every grammar and matcher
    /// used with this vocabulary: its counters show what was reused.
    pub fn mask_cache(&self) -> &MaskCache {
        &self.cache
    }

    /// The number of token ids (the width of a token mask).
    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    /// Whether there are no tokens.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// What `id` stands for (absent if out of range).
    pub fn kind_of(&self, id: TokenId) -> TokenKind {
        self.kinds
            .get(id.as_usize())
            .copied()
            .unwrap_or(TokenKind::Absent)
    }

    /// The bytes of `id` (empty for special and absent tokens).
    pub fn bytes(&self, id: TokenId) -> &[u8] {
        let index = id.as_usize();
        if index >= self.len() {
            return &[];
        }
        &self.pool[self.offsets[index] as usize..self.offsets[index + 1] as usize]
    }

    /// How `id` is written: a text token's bytes, a special token's name
    /// (`<|im_end|>`); empty for an absent token. What a capture holding
    /// the token reads.
    pub fn written(&self, id: TokenId) -> &[u8] {
        match self.kind_of(id) {
            TokenKind::Special => (self.special_names.iter())
                .find(|(_, special)| *special == id)
                .map_or(&[], |(name, _)| name.as_bytes()),
            _ => self.bytes(id),
        }
    }

    /// The token written `text`: a special token by its name
    /// (`<|im_end|>`), else the lowest-numbered text token whose bytes are
    /// `text`. For formats that name tokens by text (structural tags).
    pub fn token_by_text(&self, text: &str) -> Option<TokenId> {
        self.special_token(text).or_else(|| {
            (0..self.len())
                .map(|index| TokenId::new(index).expect("ids fit"))
                .find(|&id| {
                    self.kinds[id.as_usize()] == TokenKind::Text
                        && self.bytes(id) == text.as_bytes()
                })
        })
    }

    /// The special token named `name` (`<|im_end|>`), if there is one: a
    /// lookup among the special tokens alone, where
    /// [`Vocabulary::token_by_text`] also searches the text tokens.
    pub fn special_token(&self, name: &str) -> Option<TokenId> {
        self.special_names
            .binary_search_by(|(known, _)| known.as_str().cmp(name))
            .ok()
            .map(|at| self.special_names[at].1)
    }

    /// The stop tokens, sorted.
    pub fn stop_tokens(&self) -> &[TokenId] {
        &self.stop
    }

    /// Whether `id` is a stop token.
    pub fn is_stop(&self, id: TokenId) -> bool {
        self.stop.binary_search(&id).is_ok()
    }

    /// The number of 32-bit words of a token mask: bit `i % 32` of word
    /// `i / 32` stands for token `i`.
    pub fn mask_words(&self) -> usize {
        self.len().div_ceil(32)
    }

    pub(crate) fn trie(&self) -> &TokenTrie {
        self.trie.get_or_init(|| {
            let text = (0..self.len())
                .filter_map(|i| TokenId::new(i).ok())
                .filter(|&id| self.kind_of(id) == TokenKind::Text && !self.is_stop(id))
                .map(|id| (id, self.bytes(id)));
            let trie = TokenTrie::new(text, self.mask_words());
            // Walks inside strings need them from their first mask on.
            trie.tails();
            trie
        })
    }

    /// Builds the token trie masks walk now, if it is not built yet, instead
    /// of in the first mask: a server calls it when it loads the model, so
    /// the first request does not wait for it (tens of milliseconds for a
    /// 128k-token vocabulary).
    pub fn build_trie(&self) {
        self.trie();
    }

    /// How the tokenizer writes bytes.
    pub fn tokenizer_kind(&self) -> TokenizerKind {
        self.kind
    }

    /// A stable hash of every id's kind and bytes and of the stop set: equal
    /// for the same vocabulary on any machine, different for another.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    fn compute_fingerprint(&self) -> u64 {
        // FNV-1a over an explicit little-endian encoding: the value is part
        // of cache keys and bundle headers, so it must not depend on the
        // platform or on a hasher's version.
        let mut hash = Fnv::new();
        hash.write(b"xg-vocabulary-1");
        hash.write(&u64::try_from(self.len()).unwrap_or(u64::MAX).to_le_bytes());
        for index in 0..self.len() {
            let id = TokenId::new(index).expect("ids fit");
            let kind: u8 = match self.kinds[index] {
                TokenKind::Text => 0,
                TokenKind::Special => 1,
                TokenKind::Absent => 2,
            };
            let bytes = self.bytes(id);
            hash.write(&[kind]);
            hash.write(&u32::try_from(bytes.len()).unwrap_or(u32::MAX).to_le_bytes());
            hash.write(bytes);
        }
        for id in &self.stop {
            hash.write(&id.as_u32().to_le_bytes());
        }
        hash.0
    }
}

/// Whether a component (or any member of a `Sequence`) has type `ty`, or,
/// for `Replace`, replaces `▁`.
fn has_component(value: Option<&Value>, ty: &str) -> bool {
    let Some(value) = value else {
        return false;
    };
    let here = value.get("type").and_then(Value::as_str);
    if here == Some(ty) {
        return true;
    }
    if here == Some("Replace") && ty == "Replace▁" {
        return value.pointer("/pattern/String").and_then(Value::as_str) == Some("▁");
    }
    ["decoders", "pretokenizers", "normalizers"]
        .iter()
        .filter_map(|key| value.get(*key).and_then(Value::as_array))
        .flatten()
        .any(|member| has_component(Some(member), ty))
}

fn detect_kind(json: &Value) -> TokenizerKind {
    let decoder = json.get("decoder");
    let pre = json.get("pre_tokenizer");
    if has_component(decoder, "ByteLevel") || has_component(pre, "ByteLevel") {
        TokenizerKind::ByteLevel
    } else if has_component(decoder, "Metaspace")
        || has_component(pre, "Metaspace")
        || has_component(decoder, "Replace▁")
    {
        TokenizerKind::SentencePiece
    } else {
        TokenizerKind::Raw
    }
}

/// The model's pieces with their ids.
/// How far beyond the number of tokens a `tokenizer.json` lists its ids
/// may reach (real tokenizers leave at most a few reserved ids unlisted).
const MAX_ID_GAP: usize = 1 << 16;

/// `id` as an index, if it is below `bound` (`listed` tokens plus
/// [`MAX_ID_GAP`]).
fn checked_index(id: u32, bound: usize, listed: usize) -> Result<usize, VocabError> {
    let index = id as usize;
    if index >= bound {
        return Err(VocabError::new(format!(
            "token id {id} is far beyond the {listed} tokens listed (ids are dense in a tokenizer)"
        )));
    }
    Ok(index)
}

fn model_pieces(model: &Value) -> Result<Vec<(String, u32)>, VocabError> {
    let id_of = |value: &Value| {
        value
            .as_u64()
            .and_then(|id| u32::try_from(id).ok())
            .filter(|&id| (id as usize) < TokenId::LIMIT)
    };
    match model.get("vocab") {
        Some(Value::Object(vocab)) => vocab
            .iter()
            .map(|(piece, id)| {
                id_of(id)
                    .map(|id| (piece.clone(), id))
                    .ok_or_else(|| VocabError::new(format!("token `{piece}` has no valid id")))
            })
            .collect(),
        // Unigram: a list of [piece, score]; the id is the position.
        Some(Value::Array(vocab)) => vocab
            .iter()
            .enumerate()
            .map(|(index, entry)| {
                let piece = entry.get(0).and_then(Value::as_str).ok_or_else(|| {
                    VocabError::new(format!("unigram entry {index} has no piece"))
                })?;
                let id = u32::try_from(index).map_err(|_| VocabError::new("too many tokens"))?;
                Ok((piece.to_owned(), id))
            })
            .collect(),
        _ => Err(VocabError::new("tokenizer.json has no `model.vocab`")),
    }
}

/// GPT-2's byte-level mapping, reversed: `BYTE_LEVEL[c]` is the byte written
/// as the character `c` (every character it uses is below 324), or 256.
const BYTE_LEVEL: [u16; 324] = {
    let mut table = [256u16; 324];
    let mut next = 256;
    let mut byte: u16 = 0;
    while byte < 256 {
        let printable = (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || byte >= 174;
        if printable {
            table[byte as usize] = byte;
        } else {
            // The other bytes, in order, are written as 256, 257, …
            table[next] = byte;
            next += 1;
        }
        byte += 1;
    }
    table
};

/// The byte that GPT-2's byte-level mapping writes as `c`, if any.
fn byte_level_byte(c: char) -> Option<u8> {
    let value = *BYTE_LEVEL.get(u32::from(c) as usize)?;
    u8::try_from(value).ok()
}

fn decode_piece(piece: &str, kind: TokenizerKind, byte_fallback: bool) -> Vec<u8> {
    match kind {
        TokenizerKind::ByteLevel => {
            let mut bytes = Vec::with_capacity(piece.len());
            for c in piece.chars() {
                match byte_level_byte(c) {
                    Some(byte) => bytes.push(byte),
                    // Not a byte-level character: keep its text.
                    None => bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                }
            }
            bytes
        }
        TokenizerKind::SentencePiece => {
            if byte_fallback
                && let Some(hex) = piece.strip_prefix("<0x").and_then(|p| p.strip_suffix('>'))
                && hex.len() == 2
                && let Ok(byte) = u8::from_str_radix(hex, 16)
            {
                return vec![byte];
            }
            piece.replace('▁', " ").into_bytes()
        }
        TokenizerKind::Raw => piece.as_bytes().to_vec(),
    }
}
