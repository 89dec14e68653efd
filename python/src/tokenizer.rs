//! `TokenizerInfo`: a model's vocabulary, as XGrammar's class of the same
//! name describes it, backed by an [`xg_runtime::Vocabulary`].

use std::io::Read;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use xg_runtime::{TokenId, TokenKind, TokenizerKind, Vocabulary};

/// Stop tokens looked for, in this order, when neither the caller nor a
/// `tokenizer_config.json` names the end of sequence: the end-of-turn and
/// end-of-text tokens of the model families xg knows.
const KNOWN_STOP_TOKENS: [&str; 10] = [
    "<|im_end|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<|endoftext|>",
    "<|return|>",
    "<|end|>",
    "<end_of_turn>",
    "<eos>",
    "<|eos|>",
    "</s>",
];

/// Vocabularies with a stop set other than the model's, made on request
/// (`GrammarMatcher(override_stop_tokens=…)`) and kept, so that matchers
/// with the same override share one mask cache.
type Overrides = Mutex<Vec<(Vec<TokenId>, Arc<Vocabulary>)>>;

/// A model's tokens: their bytes, which are special, which end the
/// output, and how many rows the model's logits have.
#[pyclass(module = "xg", frozen)]
pub struct TokenizerInfo {
    vocabulary: Arc<Vocabulary>,
    overrides: Overrides,
}

impl TokenizerInfo {
    fn wrap(vocabulary: Vocabulary) -> Self {
        vocabulary.build_trie();
        Self {
            vocabulary: Arc::new(vocabulary),
            overrides: Mutex::default(),
        }
    }

    /// The vocabulary, stop tokens as the model has them.
    pub fn vocabulary(&self) -> &Arc<Vocabulary> {
        &self.vocabulary
    }

    /// The vocabulary with exactly `stop` as stop tokens.
    pub fn with_stop_tokens(&self, stop: &[i64]) -> PyResult<Arc<Vocabulary>> {
        let mut ids = token_ids(stop, self.vocabulary.len())?;
        ids.sort_unstable();
        ids.dedup();
        if ids == self.vocabulary.stop_tokens() {
            return Ok(Arc::clone(&self.vocabulary));
        }
        let mut overrides = self
            .overrides
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((_, vocabulary)) = overrides.iter().find(|(set, _)| *set == ids) {
            return Ok(Arc::clone(vocabulary));
        }
        let vocabulary = Vocabulary::clone(&self.vocabulary)
            .with_stop_tokens_only(&ids)
            .map_err(value_error)?;
        vocabulary.build_trie();
        let vocabulary = Arc::new(vocabulary);
        overrides.push((ids, Arc::clone(&vocabulary)));
        Ok(vocabulary)
    }
}

#[pymethods]
impl TokenizerInfo {
    /// From each token's piece as the tokenizer writes it, in id order
    /// (XGrammar's constructor): `vocab_type` 0 (RAW: the piece is the
    /// text; bytes allowed), 1 (BYTE_FALLBACK: SentencePiece, `▁` and
    /// `<0x0A>`) or 2 (BYTE_LEVEL: GPT-2's byte-to-character map).
    #[new]
    #[pyo3(signature = (encoded_vocab, vocab_type = 0, *, vocab_size = None, stop_token_ids = None, add_prefix_space = false, special_token_ids = None))]
    fn new(
        encoded_vocab: Vec<Bound<'_, PyAny>>,
        vocab_type: i64,
        vocab_size: Option<usize>,
        stop_token_ids: Option<StopIds>,
        add_prefix_space: bool,
        special_token_ids: Option<Vec<i64>>,
    ) -> PyResult<Self> {
        if add_prefix_space {
            return Err(PyValueError::new_err(
                "add_prefix_space=True: xg takes each token's bytes as they are; \
                 give the pieces with their leading space",
            ));
        }
        let kind = match vocab_type {
            0 => TokenizerKind::Raw,
            1 => TokenizerKind::SentencePiece,
            2 => TokenizerKind::ByteLevel,
            other => {
                return Err(PyValueError::new_err(format!(
                    "vocab_type {other}: expected 0 (RAW), 1 (BYTE_FALLBACK) or 2 (BYTE_LEVEL)"
                )));
            }
        };
        let special = token_ids(&special_token_ids.unwrap_or_default(), encoded_vocab.len())?;
        let vocabulary = if kind == TokenizerKind::Raw {
            let tokens = encoded_vocab
                .iter()
                .map(piece_bytes)
                .collect::<PyResult<Vec<_>>>()?;
            Vocabulary::from_byte_strings(&tokens, &special)
        } else {
            let pieces = encoded_vocab
                .iter()
                .map(PyAnyMethods::extract::<String>)
                .collect::<PyResult<Vec<_>>>()?;
            Vocabulary::from_pieces(&pieces, kind, &special)
        }
        .map_err(value_error)?;
        finish(vocabulary, vocab_size, stop_token_ids.map(|s| s.0), None)
    }

    /// From a `transformers` tokenizer. A fast tokenizer is read from its
    /// `tokenizer.json`; a slow one from `get_vocab()`. Stop tokens:
    /// `stop_token_ids`, else the tokenizer's `eos_token_id`, else the
    /// known end tokens present in the vocabulary. `vocab_size`: the rows
    /// of the model's logits, when more than the tokenizer's tokens.
    #[staticmethod]
    #[pyo3(signature = (tokenizer, *, vocab_size = None, stop_token_ids = None))]
    fn from_huggingface(
        tokenizer: &Bound<'_, PyAny>,
        vocab_size: Option<usize>,
        stop_token_ids: Option<StopIds>,
    ) -> PyResult<Self> {
        let vocabulary = if tokenizer.hasattr("backend_tokenizer")? {
            let json: String = tokenizer
                .getattr("backend_tokenizer")?
                .call_method0("to_str")?
                .extract()?;
            Vocabulary::from_tokenizer_json(json.as_bytes(), None).map_err(value_error)?
        } else {
            slow_tokenizer_vocabulary(tokenizer)?
        };
        let eos = if stop_token_ids.is_none() && tokenizer.hasattr("eos_token_id")? {
            tokenizer
                .getattr("eos_token_id")?
                .extract::<Option<i64>>()?
        } else {
            None
        };
        let stop = stop_token_ids.map(|s| s.0).or(eos.map(|id| vec![id]));
        finish(vocabulary, vocab_size, stop, None)
    }

    /// From a Hugging Face `tokenizer.json`: a path (gzip-compressed or
    /// not) or the JSON text itself. Stop tokens: `stop_token_ids`, else
    /// the `eos_token` of a `tokenizer_config.json` beside the file, else
    /// the known end tokens present in the vocabulary.
    #[staticmethod]
    #[pyo3(signature = (path_or_json, *, vocab_size = None, stop_token_ids = None))]
    fn from_tokenizer_json(
        path_or_json: &Bound<'_, PyAny>,
        vocab_size: Option<usize>,
        stop_token_ids: Option<StopIds>,
    ) -> PyResult<Self> {
        let (json, config) = read_tokenizer_json(path_or_json)?;
        let vocabulary =
            Vocabulary::from_tokenizer_json(&json, config.as_deref()).map_err(value_error)?;
        let from_config = vocabulary.stop_tokens().to_vec();
        finish(
            vocabulary,
            vocab_size,
            stop_token_ids.map(|s| s.0),
            Some(from_config),
        )
    }

    /// The number of token ids: the rows of the model's logits.
    #[getter]
    fn vocab_size(&self) -> usize {
        self.vocabulary.len()
    }

    /// How pieces were written: 0 RAW, 1 BYTE_FALLBACK, 2 BYTE_LEVEL.
    #[getter]
    fn vocab_type(&self) -> i64 {
        match self.vocabulary.tokenizer_kind() {
            TokenizerKind::Raw => 0,
            TokenizerKind::SentencePiece => 1,
            TokenizerKind::ByteLevel => 2,
        }
    }

    /// Always false: xg takes each token's bytes as they are.
    #[getter]
    fn add_prefix_space(&self) -> bool {
        false
    }

    /// Always false, as `add_prefix_space`.
    #[getter]
    fn prepend_space_in_tokenization(&self) -> bool {
        false
    }

    /// The tokens that end the output.
    #[getter]
    fn stop_token_ids(&self) -> Vec<usize> {
        stop_ids(&self.vocabulary)
    }

    /// The tokens matched only by id (`<|im_start|>`), never as text.
    #[getter]
    fn special_token_ids(&self) -> Vec<usize> {
        self.ids_of(TokenKind::Special)
    }

    /// Ids that are no token (padding rows of the logits): never allowed.
    #[getter]
    fn absent_token_ids(&self) -> Vec<usize> {
        self.ids_of(TokenKind::Absent)
    }

    /// Each token's bytes, in id order (empty for special and absent ids).
    #[getter]
    fn decoded_vocab<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyBytes>> {
        (0..self.vocabulary.len())
            .map(|index| {
                let id = TokenId::new(index).expect("ids of the vocabulary are valid");
                PyBytes::new(py, self.vocabulary.bytes(id))
            })
            .collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "TokenizerInfo(vocab_size={}, vocab_type={}, stop_token_ids={:?})",
            self.vocab_size(),
            self.vocab_type(),
            self.stop_token_ids()
        )
    }
}

impl TokenizerInfo {
    fn ids_of(&self, kind: TokenKind) -> Vec<usize> {
        (0..self.vocabulary.len())
            .filter(|&index| {
                let id = TokenId::new(index).expect("ids of the vocabulary are valid");
                self.vocabulary.kind_of(id) == kind
            })
            .collect()
    }
}

/// `stop_token_ids`: one id or a list of them.
pub struct StopIds(Vec<i64>);

impl<'a, 'py> FromPyObject<'a, 'py> for StopIds {
    type Error = PyErr;

    fn extract(object: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(id) = object.extract::<i64>() {
            return Ok(Self(vec![id]));
        }
        Ok(Self(object.extract::<Vec<i64>>()?))
    }
}

/// Sizes the vocabulary to the model and sets its stop tokens: `given`,
/// else `from_config` when it names any, else the known end tokens.
fn finish(
    vocabulary: Vocabulary,
    vocab_size: Option<usize>,
    given: Option<Vec<i64>>,
    from_config: Option<Vec<TokenId>>,
) -> PyResult<TokenizerInfo> {
    let mut vocabulary = match vocab_size {
        Some(size) => vocabulary.with_model_size(size).map_err(value_error)?,
        None => vocabulary,
    };
    let stop = match (given, from_config) {
        (Some(given), _) => token_ids(&given, vocabulary.len())?,
        (None, Some(config)) if !config.is_empty() => config,
        _ => KNOWN_STOP_TOKENS
            .iter()
            .find_map(|name| vocabulary.token_by_text(name))
            .into_iter()
            .collect(),
    };
    vocabulary = vocabulary
        .with_stop_tokens_only(&stop)
        .map_err(value_error)?;
    Ok(TokenizerInfo::wrap(vocabulary))
}

/// A vocabulary's stop tokens, as Python ints.
pub fn stop_ids(vocabulary: &Vocabulary) -> Vec<usize> {
    vocabulary
        .stop_tokens()
        .iter()
        .map(|id| id.as_usize())
        .collect()
}

/// Token ids given from Python, checked against a vocabulary of `len` ids.
pub fn token_ids(ids: &[i64], len: usize) -> PyResult<Vec<TokenId>> {
    ids.iter().map(|&id| token_id(id, len)).collect()
}

/// One token id given from Python, checked against a vocabulary of `len` ids.
pub fn token_id(id: i64, len: usize) -> PyResult<TokenId> {
    usize::try_from(id)
        .ok()
        .filter(|&index| index < len)
        .and_then(|index| TokenId::new(index).ok())
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "token id {id} is outside the vocabulary of {len} ids"
            ))
        })
}

fn value_error(error: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(error.to_string())
}

/// A piece of a RAW vocabulary: its bytes, or its text as UTF-8.
fn piece_bytes(piece: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(bytes) = piece.cast::<PyBytes>() {
        return Ok(bytes.as_bytes().to_vec());
    }
    if let Ok(text) = piece.cast::<PyString>() {
        return Ok(text.to_cow()?.as_bytes().to_vec());
    }
    Err(PyTypeError::new_err(
        "each token of encoded_vocab is str or bytes",
    ))
}

/// A slow (Python) `transformers` tokenizer's vocabulary, from
/// `get_vocab()`: SentencePiece if it has byte-fallback pieces, byte-level
/// if it has GPT-2's space character, else raw; `all_special_ids` special.
fn slow_tokenizer_vocabulary(tokenizer: &Bound<'_, PyAny>) -> PyResult<Vocabulary> {
    let by_piece = tokenizer.call_method0("get_vocab")?;
    let by_piece = by_piece
        .cast::<PyDict>()
        .map_err(|_| PyTypeError::new_err("tokenizer.get_vocab() did not return a dict"))?;
    let mut pieces: Vec<String> = Vec::new();
    for (piece, id) in by_piece.iter() {
        let id: usize = id.extract()?;
        if id >= TokenId::LIMIT {
            return Err(PyValueError::new_err(format!("token id {id} is too large")));
        }
        if pieces.len() <= id {
            pieces.resize(id + 1, String::new());
        }
        pieces[id] = piece.extract()?;
    }
    let kind = if pieces.iter().any(|p| p == "<0x0A>") {
        TokenizerKind::SentencePiece
    } else if pieces.iter().any(|p| p.starts_with('Ġ')) {
        TokenizerKind::ByteLevel
    } else {
        TokenizerKind::Raw
    };
    let special: Vec<i64> = if tokenizer.hasattr("all_special_ids")? {
        tokenizer.getattr("all_special_ids")?.extract()?
    } else {
        Vec::new()
    };
    let special = token_ids(&special, pieces.len())?;
    Vocabulary::from_pieces(&pieces, kind, &special).map_err(value_error)
}

/// The bytes of a `tokenizer.json` (the text given, or the file read and
/// gunzipped if compressed) and of the `tokenizer_config.json` beside the
/// file, if there is one.
fn read_tokenizer_json(source: &Bound<'_, PyAny>) -> PyResult<(Vec<u8>, Option<Vec<u8>>)> {
    if let Ok(text) = source.cast::<PyString>() {
        let text = text.to_cow()?;
        if text.trim_start().starts_with('{') {
            return Ok((text.as_bytes().to_vec(), None));
        }
    }
    if let Ok(bytes) = source.cast::<PyBytes>()
        && bytes.as_bytes().trim_ascii_start().starts_with(b"{")
    {
        return Ok((bytes.as_bytes().to_vec(), None));
    }
    let path: PathBuf = source.extract()?;
    let raw = std::fs::read(&path)
        .map_err(|e| PyValueError::new_err(format!("`{}`: {e}", path.display())))?;
    let json = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(raw.as_slice())
            .read_to_end(&mut json)
            .map_err(|e| PyValueError::new_err(format!("`{}`: {e}", path.display())))?;
        json
    } else {
        raw
    };
    let config = path
        .parent()
        .map(|dir| dir.join("tokenizer_config.json"))
        .and_then(|config| std::fs::read(config).ok());
    Ok((json, config))
}
