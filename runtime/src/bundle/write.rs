//! Writing bundles: a grammar's tables and its precomputed mask entries,
//! laid out deterministically (the same grammar and entries give the same
//! bytes).

use super::format::{Header, MAGIC, SECTION_ALIGN, SectionRecord, VERSION};
use super::masks::encode;
use super::read::checksum_of_head;
use super::{BundleError, Masks};
use crate::grammar::Grammar;

/// The bundle of `grammar`, with `masks` if given (precomputed for the
/// same grammar). The bundle names a vocabulary when it carries mask
/// entries, or when the grammar matches tokens by id and `masks` says
/// which vocabulary the ids are of. A grammar whose rules are built on
/// first use has them all built first; `Err` if one cannot be.
pub fn write(grammar: &Grammar, masks: Option<&Masks>) -> Result<Vec<u8>, BundleError> {
    let completed = grammar.completed().map_err(BundleError::Tables)?;
    Ok(write_complete(&completed, masks))
}

fn write_complete(grammar: &Grammar, masks: Option<&Masks>) -> Vec<u8> {
    let tables = grammar.tables();
    let mut sections: Vec<(u32, Vec<u8>)> = vec![
        (
            SectionRecord::ROOT,
            bytemuck::bytes_of(&[tables.root, 0]).to_vec(),
        ),
        (SectionRecord::RULES, bytes(&tables.rules)),
        (SectionRecord::NODES, bytes(&tables.nodes)),
        (SectionRecord::EDGES, bytes(&tables.edges)),
        (SectionRecord::TOKEN_SETS, bytes(&tables.token_sets)),
        (SectionRecord::TOKEN_POOL, bytes(&tables.token_pool)),
        (SectionRecord::DISPATCHES, bytes(&tables.dispatches)),
        (SectionRecord::PATTERNS, bytes(&tables.patterns)),
        (SectionRecord::BYTE_POOL, tables.byte_pool.clone()),
        (SectionRecord::NAME_POOL, tables.name_pool.clone()),
    ];
    let mut vocabulary = 0;
    if let Some(masks) = masks {
        if grammar.uses_tokens() {
            vocabulary = masks.fingerprint;
        }
        if !masks.entries.is_empty() {
            vocabulary = masks.fingerprint;
            let mut index = Vec::new();
            let mut data = Vec::new();
            for (key, entry) in &masks.entries {
                let record = encode(key, entry, &mut data);
                index.extend_from_slice(bytemuck::bytes_of(&record));
            }
            sections.push((SectionRecord::MASK_INDEX, index));
            sections.push((SectionRecord::MASK_DATA, data));
        }
    }
    let header_len = size_of::<Header>();
    let table_len = sections.len() * size_of::<SectionRecord>();
    let mut offset = align(header_len + table_len);
    let mut records = Vec::with_capacity(sections.len());
    for (kind, data) in &sections {
        records.push(SectionRecord {
            kind: *kind,
            reserved: 0,
            offset: offset as u64,
            len: data.len() as u64,
            checksum: xxhash_rust::xxh3::xxh3_64(data),
        });
        offset = align(offset + data.len());
    }
    let len = sections
        .last()
        .zip(records.last())
        .map_or(offset, |((_, data), record)| {
            usize::try_from(record.offset).expect("offsets fit") + data.len()
        });
    let table: Vec<u8> = records
        .iter()
        .flat_map(|record| bytemuck::bytes_of(record).to_vec())
        .collect();
    let mut header = Header {
        magic: MAGIC,
        version: VERSION,
        section_count: u32::try_from(sections.len()).expect("a few sections"),
        vocabulary,
        checksum: 0,
        len: len as u64,
        reserved: [0; 3],
    };
    header.checksum = checksum_of_head(&header, &table);
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(bytemuck::bytes_of(&header));
    out.extend_from_slice(&table);
    for ((_, data), record) in sections.iter().zip(&records) {
        out.resize(usize::try_from(record.offset).expect("offsets fit"), 0);
        out.extend_from_slice(data);
    }
    debug_assert_eq!(out.len(), len);
    out
}

fn bytes<T: bytemuck::Pod>(records: &[T]) -> Vec<u8> {
    bytemuck::cast_slice(records).to_vec()
}

fn align(offset: usize) -> usize {
    offset.next_multiple_of(SECTION_ALIGN)
}
