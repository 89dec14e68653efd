//! The records of the `.xgb` format: a header, a section table, and
//! sections of fixed-size little-endian records.
//!
//! Every record is `#[repr(C)]` plain old data without padding, read with
//! unaligned loads, so a bundle works from any buffer (a memory map, a
//! `static` byte string, a `Vec<u8>`); the writer still aligns each
//! section to [`SECTION_ALIGN`] bytes so that tools may map them directly.

use bytemuck::{Pod, Zeroable};

/// The first eight bytes of every bundle.
pub const MAGIC: [u8; 8] = *b"XGBUNDLE";

/// The format version this runtime reads and writes. Any change to a
/// record, a section's meaning or an encoding increments it.
pub const VERSION: u32 = 4;

/// Sections start at multiples of this many bytes.
pub const SECTION_ALIGN: usize = 64;

/// The start of a bundle.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct Header {
    /// [`MAGIC`].
    pub magic: [u8; 8],
    /// [`VERSION`].
    pub version: u32,
    /// Number of [`SectionRecord`]s that follow the header.
    pub section_count: u32,
    /// The fingerprint of the vocabulary the bundle is for (its mask
    /// entries, or token ids in its tables), or 0 for any vocabulary.
    pub vocabulary: u64,
    /// XXH3-64 of the header (with this field 0) and the section table.
    pub checksum: u64,
    /// The bundle's length in bytes.
    pub len: u64,
    /// Always 0.
    pub reserved: [u64; 3],
}

/// Where a section is and what it holds.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct SectionRecord {
    /// One of the `SectionRecord::` kinds.
    pub kind: u32,
    /// Always 0.
    pub reserved: u32,
    /// Offset from the start of the bundle.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// XXH3-64 of the section's bytes.
    pub checksum: u64,
}

impl SectionRecord {
    /// The entry rule: one `u32` (and a `u32` of padding).
    pub const ROOT: u32 = 1;
    /// [`RuleRecord`](crate::tables::RuleRecord)s.
    pub const RULES: u32 = 2;
    /// [`NodeRecord`](crate::tables::NodeRecord)s.
    pub const NODES: u32 = 3;
    /// [`EdgeRecord`](crate::tables::EdgeRecord)s.
    pub const EDGES: u32 = 4;
    /// [`TokenSetRecord`](crate::tables::TokenSetRecord)s.
    pub const TOKEN_SETS: u32 = 5;
    /// The token pool (`u32` ids).
    pub const TOKEN_POOL: u32 = 6;
    /// [`DispatchRecord`](crate::tables::DispatchRecord)s.
    pub const DISPATCHES: u32 = 7;
    /// [`PatternRecord`](crate::tables::PatternRecord)s.
    pub const PATTERNS: u32 = 8;
    /// The byte pool of dispatch patterns.
    pub const BYTE_POOL: u32 = 9;
    /// The pool of rule names.
    pub const NAME_POOL: u32 = 10;
    /// [`EntryRecord`]s, sorted by key: the index of precomputed masks.
    pub const MASK_INDEX: u32 = 16;
    /// The encoded mask entries the index points into.
    pub const MASK_DATA: u32 = 17;

    /// A section kind's name, for tools.
    pub fn kind_name(kind: u32) -> &'static str {
        match kind {
            Self::ROOT => "root",
            Self::RULES => "rules",
            Self::NODES => "nodes",
            Self::EDGES => "edges",
            Self::TOKEN_SETS => "token sets",
            Self::TOKEN_POOL => "token pool",
            Self::DISPATCHES => "dispatches",
            Self::PATTERNS => "patterns",
            Self::BYTE_POOL => "byte pool",
            Self::NAME_POOL => "name pool",
            Self::MASK_INDEX => "mask index",
            Self::MASK_DATA => "mask data",
            _ => "unknown",
        }
    }
}

/// An item above a precomputed entry's item, in an [`EntryRecord`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct ParentRecord {
    /// 1 if this parent is present, else 0 (and the other fields 0).
    pub present: u32,
    /// Its node within its rule.
    pub node: u32,
    /// Its rule's structural hash.
    pub rule_hash: u64,
    /// Its edge within the node, or `u32::MAX` at the node.
    pub edge: u32,
    /// Its repetition counts (`needed << 16 | room`).
    pub count: u32,
}

/// One precomputed mask entry: its key and where its data is.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct EntryRecord {
    /// The structural hash of the item's rule.
    pub rule_hash: u64,
    /// The kind of item: 0 a node, 1 tag-dispatch free text, 2 token-dispatch free region.
    pub kind: u32,
    /// The node within the rule, or the scanner state.
    pub state: u32,
    /// The items above it that the entry covers, lowest first.
    pub parents: [ParentRecord; 3],
    /// Offset of the entry's data in the mask-data section.
    pub offset: u64,
    /// Length of the entry's data in bytes.
    pub len: u32,
    /// Always 0.
    pub reserved: u32,
    /// XXH3-64 of this record (with this field 0) followed by the data.
    pub checksum: u64,
}

/// The head of an entry's data, followed by `words` `u32`s (the accepted
/// tokens) and `groups` [`GroupRecord`]s.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct EntryHead {
    /// How the accepted tokens are stored: one of the `EntryHead::` forms.
    pub form: u32,
    /// Number of `u32` words of accepted tokens.
    pub words: u32,
    /// Number of groups of uncertain tokens.
    pub groups: u32,
    /// Always 0.
    pub reserved: u32,
}

impl EntryHead {
    /// The words are the accepted token ids, sorted.
    pub const IDS: u32 = 0;
    /// The words are the text tokens *not* accepted, sorted.
    pub const COMPLEMENT: u32 = 1;
    /// The words are a bitset in mask layout.
    pub const BITS: u32 = 2;
}

/// Uncertain tokens of an entry: trie ranks `start..end` and where the
/// item's rule can end inside them.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct GroupRecord {
    /// First trie rank.
    pub start: u32,
    /// One past the last trie rank.
    pub end: u32,
    /// Bit `j`: the rule can end after the tokens' first `j` bytes.
    pub ends: u64,
}

// The sizes the book's format chapter documents.
const _: () = assert!(size_of::<Header>() == 64);
const _: () = assert!(size_of::<SectionRecord>() == 32);
const _: () = assert!(size_of::<EntryRecord>() == 112);
const _: () = assert!(size_of::<EntryHead>() == 16);
const _: () = assert!(size_of::<GroupRecord>() == 16);
const _: () = assert!(size_of::<crate::tables::RuleRecord>() == 64);
const _: () = assert!(size_of::<crate::tables::EdgeRecord>() == 20);
