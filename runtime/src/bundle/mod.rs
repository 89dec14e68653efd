//! Precompiled grammar bundles (`.xgb`): a grammar's tables and, for one
//! vocabulary, mask-cache entries built ahead of time.
//!
//! A bundle is a [header](format::Header), a section table and aligned
//! sections of little-endian [plain-old-data records](mod@format). Opening one
//! ([`Grammar::open`](crate::Grammar::open), or from bytes) checks the
//! header and the tables' checksums and indices, and copies the tables
//! (small: what validating them costs anyway); the mask entries — the bulk
//! of a bundle — stay in the mapped bytes and are read, checked against
//! their own checksums, only when a matcher first needs one. Opening thus
//! costs the same whatever the number of entries.
//!
//! [`write()`] lays a grammar out as a bundle, with [`Masks`] precomputed by
//! the policy a [`Precompute`] names; [`inspect`] describes one and checks
//! every checksum.

pub mod format;
mod masks;
mod read;
mod write;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use self::read::{Info, SectionInfo, inspect};
pub(crate) use self::read::{open_bytes, open_path};
pub use self::write::write;
pub use crate::matcher::Precompute;

use crate::cache::{Classified, Key};
use crate::grammar::Grammar;
use crate::tables::TablesError;
use crate::vocab::Vocabulary;

/// Grammars open bundles and write themselves as one: the bundle layer
/// adds these to [`Grammar`] (which knows nothing of the format).
impl Grammar {
    /// Opens the bundle `path` (written by `xg compile`), memory-mapped.
    ///
    /// The header and the tables are checked; the precomputed mask entries
    /// stay in the file until a matcher needs one. With `vocabulary`, a
    /// bundle compiled for another vocabulary is refused, and the bundle's
    /// entries join that vocabulary's mask cache, where every grammar with
    /// rules of the same structure finds them. (A [`Matcher`] with a
    /// vocabulary the bundle was compiled for does the same.)
    ///
    /// The file must not be modified while the grammar lives: replace a
    /// bundle by renaming a new file into place.
    ///
    /// [`Matcher`]: crate::Matcher
    pub fn open(
        path: impl AsRef<Path>,
        vocabulary: Option<&Vocabulary>,
    ) -> Result<Self, BundleError> {
        open_path(path.as_ref(), vocabulary)
    }

    /// Opens a bundle held in `bytes` (read from a file, received over the
    /// network), like [`Grammar::open`].
    pub fn from_bundle(
        bytes: Vec<u8>,
        vocabulary: Option<&Vocabulary>,
    ) -> Result<Self, BundleError> {
        open_bytes(Backing::Owned(bytes), vocabulary)
    }

    /// Opens a bundle embedded in the program (`include_bytes!`, or the
    /// `grammar!` macro), like [`Grammar::open`], without copying it.
    pub fn from_static_bundle(
        bytes: &'static [u8],
        vocabulary: Option<&Vocabulary>,
    ) -> Result<Self, BundleError> {
        open_bytes(Backing::Static(bytes), vocabulary)
    }

    /// The grammar as a bundle of its tables alone (masks are built on
    /// first use); [`bundle::write`](fn@write) adds
    /// precomputed masks. Rules built on first use are built first; `Err`
    /// if one cannot be.
    pub fn to_bundle(&self) -> Result<Vec<u8>, BundleError> {
        write(self, None)
    }
}

/// Mask-cache entries of one grammar, built ahead of time for one vocabulary.
pub struct Masks {
    fingerprint: u64,
    entries: Vec<(Key, Classified)>,
    candidates: usize,
}

impl fmt::Debug for Masks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Masks")
            .field("fingerprint", &self.fingerprint)
            .field("entries", &self.entries.len())
            .field("candidates", &self.candidates)
            .finish()
    }
}

impl Masks {
    /// Builds the entries `how` picks among those `grammar`'s items can
    /// ask for, for `vocabulary` (on every core). Grammars with lookahead
    /// assertions do not use the mask cache: they get no entries.
    pub fn precompute(grammar: &Arc<Grammar>, vocabulary: &Vocabulary, how: Precompute) -> Self {
        // Entries are for every rule: a grammar that builds rules on first
        // use has them all built (none can be, if one fails).
        let completed = match grammar.completed() {
            Ok(completed) if !grammar.is_complete() => Arc::new(completed),
            Ok(_) => Arc::clone(grammar),
            Err(_) => {
                return Self {
                    fingerprint: vocabulary.fingerprint(),
                    entries: Vec::new(),
                    candidates: 0,
                };
            }
        };
        let built = crate::matcher::precompute(&completed, vocabulary, how);
        Self {
            fingerprint: vocabulary.fingerprint(),
            entries: built.entries,
            candidates: built.candidates,
        }
    }

    /// The fingerprint of the vocabulary the entries are for.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// The number of entries built.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry was built.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The number of entries the grammar's items can ask for (those built
    /// and those left to first use).
    pub fn candidates(&self) -> usize {
        self.candidates
    }
}

/// The bytes behind an opened bundle.
pub(crate) enum Backing {
    Mapped(memmap2::Mmap),
    Static(&'static [u8]),
    Owned(Vec<u8>),
}

impl Backing {
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            Self::Mapped(map) => map,
            Self::Static(bytes) => bytes,
            Self::Owned(bytes) => bytes,
        }
    }
}

/// A record read from `bytes` (exactly its size) at any alignment.
pub(crate) fn read_record<T: bytemuck::Pod>(bytes: &[u8]) -> T {
    bytemuck::pod_read_unaligned(bytes)
}

/// Why a bundle cannot be used.
#[derive(Debug)]
pub enum BundleError {
    /// The file cannot be read or mapped.
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        error: std::io::Error,
    },
    /// The bytes do not start with the bundle magic: not a bundle.
    NotABundle,
    /// A bundle of a format version this runtime does not read.
    Version {
        /// The bundle's version.
        found: u32,
        /// The version this runtime reads.
        supported: u32,
    },
    /// Fewer bytes than the bundle says it has: a truncated file.
    Truncated {
        /// The bundle's length by its header (or the least length).
        expected: u64,
        /// The bytes there are.
        found: u64,
    },
    /// A checksum does not match: the bytes were damaged.
    Checksum {
        /// What it covers: the header, or a section's name.
        what: &'static str,
    },
    /// The section table or a section is malformed.
    Malformed(String),
    /// The tables are not valid.
    Tables(TablesError),
    /// The bundle was compiled for another vocabulary.
    OtherVocabulary {
        /// The fingerprint of the vocabulary the bundle is for.
        bundle: u64,
        /// The fingerprint of the vocabulary given.
        given: u64,
    },
    /// Bundles are little-endian and this machine is not.
    BigEndian,
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, error } => write!(f, "cannot read `{}`: {error}", path.display()),
            Self::NotABundle => write!(f, "not an xg bundle (no `XGBUNDLE` magic)"),
            Self::Version { found, supported } => write!(
                f,
                "bundle format version {found}, but this xg reads version {supported}: \
                 recompile it with this xg's `xg compile`"
            ),
            Self::Truncated { expected, found } => {
                write!(f, "truncated bundle: {found} bytes of {expected}")
            }
            Self::Checksum { what } => {
                write!(f, "damaged bundle: the {what} checksum does not match")
            }
            Self::Malformed(what) => write!(f, "malformed bundle: {what}"),
            Self::Tables(error) => write!(f, "bundle: {error}"),
            Self::OtherVocabulary { bundle, given } => write!(
                f,
                "the bundle was compiled for another vocabulary (fingerprint {bundle:016x}, \
                 this one is {given:016x}): recompile it with this model's tokenizer"
            ),
            Self::BigEndian => write!(f, "bundles are little-endian; this machine is big-endian"),
        }
    }
}

/// The message of a read or table error includes the error it wraps, so
/// it has no `source`: a report that prints the chain (`anyhow`'s `{:#}`)
/// would say it twice.
impl std::error::Error for BundleError {}
