//! Precomputed mask entries in a bundle: their encoding, and looking them
//! up in place.
//!
//! The index is a sorted array of [`EntryRecord`]s, searched by binary
//! search in the mapped bytes; an entry is decoded, checked against its
//! checksum and the vocabulary, and handed to the mask cache only when a
//! matcher first asks for its key. Nothing is read at open, so opening
//! costs the same for any number of entries.

use std::ops::Range;
use std::sync::Arc;

use bytemuck::Zeroable;

use super::format::{EntryHead, EntryRecord, GroupRecord, ParentRecord};
use super::{Backing, read_record};
use crate::cache::{
    Classified, Group, Key, KeyKind, MAX_PARENTS, Parent, Place, PrecomputedEntries, TokenSet,
};
use crate::trie::TokenTrie;

/// The precomputed entries of a bundle, used in place.
pub(crate) struct MaskSection {
    bytes: Arc<Backing>,
    /// The index's bytes within `bytes`.
    index: Range<usize>,
    /// The data's bytes within `bytes`.
    data: Range<usize>,
    /// The vocabulary the entries are for.
    fingerprint: u64,
    /// Identifies the section's content (its index checksum).
    id: u64,
}

impl MaskSection {
    /// The section over `index` and `data` of `bytes` (checked to lie
    /// within it, the index a whole number of records).
    pub(crate) fn new(
        bytes: Arc<Backing>,
        index: Range<usize>,
        data: Range<usize>,
        fingerprint: u64,
        id: u64,
    ) -> Self {
        Self {
            bytes,
            index,
            data,
            fingerprint,
            id,
        }
    }

    fn record(&self, i: usize) -> EntryRecord {
        let start = self.index.start + i * size_of::<EntryRecord>();
        read_record(&self.bytes.as_slice()[start..start + size_of::<EntryRecord>()])
    }
}

impl PrecomputedEntries for MaskSection {
    fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    fn id(&self) -> u64 {
        self.id
    }

    fn len(&self) -> usize {
        self.index.len() / size_of::<EntryRecord>()
    }

    fn find(&self, key: &Key, trie: &TokenTrie) -> Option<Classified> {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let mid = low + (high - low) / 2;
            let record = self.record(mid);
            match record_key(&record)?.cmp(key) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => {
                    let data = &self.bytes.as_slice()[self.data.clone()];
                    return decode(&record, data, trie).ok();
                }
            }
        }
        None
    }
}

/// The number of entries of the index `index` (whole records) whose data
/// in `data` fails its checksum.
pub(crate) fn damaged(index: &[u8], data: &[u8]) -> usize {
    index
        .chunks_exact(size_of::<EntryRecord>())
        .filter(|chunk| entry_bytes(&read_record(chunk), data).is_none())
        .count()
}

/// The key a record stands for; `None` if the record is malformed.
fn record_key(record: &EntryRecord) -> Option<Key> {
    let mut parents = [None; MAX_PARENTS];
    for (slot, parent) in parents.iter_mut().zip(&record.parents) {
        *slot = match parent.present {
            0 => None,
            1 => Some(Parent {
                rule_hash: parent.rule_hash,
                node: parent.node,
                place: Place::from_code(parent.edge),
                count: parent.count,
            }),
            _ => return None,
        };
    }
    Some(Key {
        rule_hash: record.rule_hash,
        kind: KeyKind::from_code(record.kind)?,
        state: record.state,
        parents,
    })
}

/// Appends `entry`'s data to `data`; its index record.
pub(crate) fn encode(key: &Key, entry: &Classified, data: &mut Vec<u8>) -> EntryRecord {
    let offset = data.len();
    let (form, words) = match &entry.accepted {
        TokenSet::Ids(words) => (EntryHead::IDS, words),
        TokenSet::Complement(words) => (EntryHead::COMPLEMENT, words),
        TokenSet::Bits(words) => (EntryHead::BITS, words),
    };
    let head = EntryHead {
        form,
        words: u32::try_from(words.len()).expect("entry words fit in u32"),
        groups: u32::try_from(entry.groups.len()).expect("entry groups fit in u32"),
        reserved: 0,
    };
    data.extend_from_slice(bytemuck::bytes_of(&head));
    for word in words {
        data.extend_from_slice(&word.to_le_bytes());
    }
    for group in &entry.groups {
        let record = GroupRecord {
            start: group.start,
            end: group.end,
            ends: group.ends,
        };
        data.extend_from_slice(bytemuck::bytes_of(&record));
    }
    let mut parents = [ParentRecord::zeroed(); MAX_PARENTS];
    for (record, parent) in parents.iter_mut().zip(&key.parents) {
        if let Some(parent) = parent {
            *record = ParentRecord {
                present: 1,
                node: parent.node,
                rule_hash: parent.rule_hash,
                edge: parent.place.code(),
                count: parent.count,
            };
        }
    }
    let mut record = EntryRecord {
        rule_hash: key.rule_hash,
        kind: key.kind.code(),
        state: key.state,
        parents,
        offset: offset as u64,
        len: u32::try_from(data.len() - offset).expect("an entry fits in 4 GiB"),
        reserved: 0,
        checksum: 0,
    };
    record.checksum = checksum(&record, &data[offset..]);
    record
}

fn checksum(record: &EntryRecord, bytes: &[u8]) -> u64 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(bytemuck::bytes_of(&EntryRecord {
        checksum: 0,
        ..*record
    }));
    hasher.update(bytes);
    hasher.digest()
}

/// The bytes of `record`'s entry in `data`, if they lie within it and
/// match the checksum.
fn entry_bytes<'a>(record: &EntryRecord, data: &'a [u8]) -> Option<&'a [u8]> {
    let start = usize::try_from(record.offset).ok()?;
    let end = start.checked_add(record.len as usize)?;
    let bytes = data.get(start..end)?;
    (checksum(record, bytes) == record.checksum).then_some(bytes)
}

/// Decodes and checks `record`'s entry: ids of text tokens in order, a
/// bitset of the mask's width within the text tokens, groups of trie
/// ranks in order.
fn decode(record: &EntryRecord, data: &[u8], trie: &TokenTrie) -> Result<Classified, &'static str> {
    let bytes = entry_bytes(record, data).ok_or("checksum")?;
    let head_len = size_of::<EntryHead>();
    let head: EntryHead = read_record(bytes.get(..head_len).ok_or("short")?);
    let words_len = head.words as usize * 4;
    let groups_len = head.groups as usize * size_of::<GroupRecord>();
    if bytes.len() != head_len + words_len + groups_len {
        return Err("length");
    }
    let words: Box<[u32]> = bytes[head_len..head_len + words_len]
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    let universe = trie.universe();
    let is_text = |id: u32| {
        universe
            .get(id as usize / 32)
            .is_some_and(|word| word & (1 << (id % 32)) != 0)
    };
    let ids_ok = || words.windows(2).all(|w| w[0] < w[1]) && words.iter().all(|&id| is_text(id));
    let accepted = match head.form {
        EntryHead::IDS if ids_ok() => TokenSet::Ids(words),
        EntryHead::COMPLEMENT if ids_ok() => TokenSet::Complement(words),
        EntryHead::BITS
            if words.len() == universe.len()
                && words.iter().zip(universe).all(|(w, u)| w & !u == 0) =>
        {
            TokenSet::Bits(words)
        }
        _ => return Err("accepted tokens"),
    };
    let ranks = u32::try_from(trie.ranked().len()).map_err(|_| "ranks")?;
    let mut groups = Vec::with_capacity(head.groups as usize);
    let mut previous_end = 0;
    for chunk in bytes[head_len + words_len..].chunks_exact(size_of::<GroupRecord>()) {
        let group: GroupRecord = read_record(chunk);
        if group.start < previous_end
            || group.start >= group.end
            || group.end > ranks
            || group.ends == 0
            || group.ends & 1 != 0
        {
            return Err("groups");
        }
        previous_end = group.end;
        groups.push(Group {
            start: group.start,
            end: group.end,
            ends: group.ends,
        });
    }
    Ok(Classified {
        accepted,
        groups: groups.into(),
    })
}
