//! Opening bundles: checking the header, the section table and the tables,
//! and describing a bundle for tools.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use super::format::{EntryRecord, Header, MAGIC, SectionRecord, VERSION};
use super::masks::{MaskSection, damaged};
use super::{Backing, BundleError, read_record};
use crate::cache::PrecomputedEntries;
use crate::grammar::Grammar;
use crate::tables::Tables;
use crate::vocab::Vocabulary;

/// The most sections a bundle may have.
const MAX_SECTIONS: u32 = 64;

/// A bundle's header and section table, checked: the magic, the version,
/// the length, the checksum, and every section within the bundle, after
/// the table, of a known kind and at most once.
struct Layout {
    header: Header,
    sections: Vec<SectionRecord>,
}

impl Layout {
    fn parse(bytes: &[u8]) -> Result<Self, BundleError> {
        if cfg!(target_endian = "big") {
            return Err(BundleError::BigEndian);
        }
        let header_len = size_of::<Header>();
        if bytes.len() >= MAGIC.len() && bytes[..MAGIC.len()] != MAGIC {
            return Err(BundleError::NotABundle);
        }
        let found = bytes.len() as u64;
        if bytes.len() < header_len {
            return Err(BundleError::Truncated {
                expected: header_len as u64,
                found,
            });
        }
        let header: Header = read_record(&bytes[..header_len]);
        if header.version != VERSION {
            return Err(BundleError::Version {
                found: header.version,
                supported: VERSION,
            });
        }
        if header.len > found {
            return Err(BundleError::Truncated {
                expected: header.len,
                found,
            });
        }
        if header.len < found {
            return Err(BundleError::Malformed(format!(
                "{} bytes after the bundle's end",
                found - header.len
            )));
        }
        if header.section_count > MAX_SECTIONS {
            return Err(BundleError::Malformed(format!(
                "{} sections (at most {MAX_SECTIONS})",
                header.section_count
            )));
        }
        let table_end = header_len + header.section_count as usize * size_of::<SectionRecord>();
        if table_end > bytes.len() {
            return Err(BundleError::Malformed(
                "the section table runs past the end".into(),
            ));
        }
        if checksum_of_head(&header, &bytes[header_len..table_end]) != header.checksum {
            return Err(BundleError::Checksum { what: "header" });
        }
        let sections: Vec<SectionRecord> = bytes[header_len..table_end]
            .chunks_exact(size_of::<SectionRecord>())
            .map(read_record)
            .collect();
        for (i, section) in sections.iter().enumerate() {
            let name = SectionRecord::kind_name(section.kind);
            if name == "unknown" {
                return Err(BundleError::Malformed(format!(
                    "section {i} has unknown kind {}",
                    section.kind
                )));
            }
            if sections[..i].iter().any(|s| s.kind == section.kind) {
                return Err(BundleError::Malformed(format!("two {name} sections")));
            }
            let within = section
                .offset
                .checked_add(section.len)
                .is_some_and(|end| section.offset >= table_end as u64 && end <= found);
            if !within {
                return Err(BundleError::Malformed(format!(
                    "the {name} section lies outside the bundle"
                )));
            }
        }
        // Sections do not overlap, and the padding between them is zero:
        // every byte of a bundle is checked by something.
        let mut order: Vec<&SectionRecord> = sections.iter().collect();
        order.sort_by_key(|s| (s.offset, s.len));
        let mut covered = table_end;
        for section in order {
            let start = range(section).start;
            if start < covered {
                return Err(BundleError::Malformed(format!(
                    "the {} section overlaps another",
                    SectionRecord::kind_name(section.kind)
                )));
            }
            if bytes[covered..start].iter().any(|&b| b != 0) {
                return Err(BundleError::Malformed("non-zero padding".into()));
            }
            covered = range(section).end;
        }
        if bytes[covered..].iter().any(|&b| b != 0) {
            return Err(BundleError::Malformed("non-zero padding".into()));
        }
        Ok(Self { header, sections })
    }

    fn section(&self, kind: u32) -> Option<&SectionRecord> {
        self.sections.iter().find(|s| s.kind == kind)
    }

    /// The bytes of the section of `kind` (which must exist), checked
    /// against its checksum.
    fn checked<'a>(&self, bytes: &'a [u8], kind: u32) -> Result<&'a [u8], BundleError> {
        let what = SectionRecord::kind_name(kind);
        let section = self
            .section(kind)
            .ok_or_else(|| BundleError::Malformed(format!("no {what} section")))?;
        let data = section_bytes(bytes, section);
        if xxhash_rust::xxh3::xxh3_64(data) != section.checksum {
            return Err(BundleError::Checksum { what });
        }
        Ok(data)
    }

    /// The grammar tables, each section checked against its checksum and
    /// its record size, then validated.
    fn tables(&self, bytes: &[u8]) -> Result<Tables, BundleError> {
        fn records<T: bytemuck::Pod>(data: &[u8], what: &str) -> Result<Vec<T>, BundleError> {
            if !data.len().is_multiple_of(size_of::<T>()) {
                return Err(BundleError::Malformed(format!(
                    "the {what} section is not a whole number of records"
                )));
            }
            Ok(data.chunks_exact(size_of::<T>()).map(read_record).collect())
        }
        let root: Vec<[u32; 2]> = records(self.checked(bytes, SectionRecord::ROOT)?, "root")?;
        let [[root, _]] = root[..] else {
            return Err(BundleError::Malformed(
                "the root section is not one record".into(),
            ));
        };
        let tables = Tables {
            root,
            rules: records(self.checked(bytes, SectionRecord::RULES)?, "rules")?,
            nodes: records(self.checked(bytes, SectionRecord::NODES)?, "nodes")?,
            edges: records(self.checked(bytes, SectionRecord::EDGES)?, "edges")?,
            token_sets: records(
                self.checked(bytes, SectionRecord::TOKEN_SETS)?,
                "token sets",
            )?,
            token_pool: records(
                self.checked(bytes, SectionRecord::TOKEN_POOL)?,
                "token pool",
            )?,
            dispatches: records(
                self.checked(bytes, SectionRecord::DISPATCHES)?,
                "dispatches",
            )?,
            patterns: records(self.checked(bytes, SectionRecord::PATTERNS)?, "patterns")?,
            byte_pool: self.checked(bytes, SectionRecord::BYTE_POOL)?.to_vec(),
            name_pool: self.checked(bytes, SectionRecord::NAME_POOL)?.to_vec(),
        };
        tables.validate().map_err(BundleError::Tables)?;
        Ok(tables)
    }

    /// The mask index and data sections, if the bundle has them: their
    /// byte ranges and the index's checksum (which names the content). The
    /// entries are checked one by one when used.
    fn masks(&self) -> Result<Option<(Range, Range, u64)>, BundleError> {
        let index = self.section(SectionRecord::MASK_INDEX);
        let data = self.section(SectionRecord::MASK_DATA);
        match (index, data) {
            (None, None) => Ok(None),
            (Some(index), Some(data)) => {
                if index.len % size_of::<EntryRecord>() as u64 != 0 {
                    return Err(BundleError::Malformed(
                        "the mask index is not a whole number of records".into(),
                    ));
                }
                if self.header.vocabulary == 0 {
                    return Err(BundleError::Malformed(
                        "mask entries without a vocabulary fingerprint".into(),
                    ));
                }
                Ok(Some((range(index), range(data), index.checksum)))
            }
            _ => Err(BundleError::Malformed(
                "a mask index without mask data, or the reverse".into(),
            )),
        }
    }
}

type Range = std::ops::Range<usize>;

fn range(section: &SectionRecord) -> Range {
    // Checked to lie within the bundle, so within usize.
    let start = usize::try_from(section.offset).expect("section within the bundle");
    start..start + usize::try_from(section.len).expect("section within the bundle")
}

fn section_bytes<'a>(bytes: &'a [u8], section: &SectionRecord) -> &'a [u8] {
    &bytes[range(section)]
}

/// The checksum a header carries: of itself (checksum 0) and the section table.
pub(super) fn checksum_of_head(header: &Header, table: &[u8]) -> u64 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(bytemuck::bytes_of(&Header {
        checksum: 0,
        ..*header
    }));
    hasher.update(table);
    hasher.digest()
}

/// Opens the bundle in the file `path`, mapped into memory.
pub(crate) fn open_path(
    path: &Path,
    vocabulary: Option<&Vocabulary>,
) -> Result<Grammar, BundleError> {
    let io = |error| BundleError::Io {
        path: path.to_path_buf(),
        error,
    };
    let file = File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    if len < size_of::<Header>() as u64 {
        // Too short to map usefully (and an empty file cannot be mapped).
        let bytes = std::fs::read(path).map_err(io)?;
        return open_bytes(Backing::Owned(bytes), vocabulary);
    }
    let map = map(&file).map_err(io)?;
    open_bytes(Backing::Mapped(map), vocabulary)
}

/// Maps `file` read-only.
#[allow(unsafe_code)]
fn map(file: &File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the map is read-only and only ever read through `&[u8]`;
    // the remaining hazard is another process truncating or rewriting the
    // file while it is mapped, which the book's bundle chapter tells users
    // not to do (replace bundles by renaming a new file into place).
    unsafe { memmap2::Mmap::map(file) }
}

/// Opens the bundle in `backing`: with `vocabulary`, a bundle for another
/// vocabulary is refused and its mask entries seed that vocabulary's cache.
pub(crate) fn open_bytes(
    backing: Backing,
    vocabulary: Option<&Vocabulary>,
) -> Result<Grammar, BundleError> {
    let backing = Arc::new(backing);
    let bytes = backing.as_slice();
    let layout = Layout::parse(bytes)?;
    let fingerprint = layout.header.vocabulary;
    if let Some(vocabulary) = vocabulary
        && fingerprint != 0
        && fingerprint != vocabulary.fingerprint()
    {
        return Err(BundleError::OtherVocabulary {
            bundle: fingerprint,
            given: vocabulary.fingerprint(),
        });
    }
    let tables = layout.tables(bytes)?;
    let masks = layout.masks()?;
    let mut grammar = Grammar::new(tables).map_err(BundleError::Tables)?;
    if let Some((index, data, id)) = masks {
        let section: Arc<dyn PrecomputedEntries> = Arc::new(MaskSection::new(
            Arc::clone(&backing),
            index,
            data,
            fingerprint,
            id,
        ));
        if let Some(vocabulary) = vocabulary
            && section.fingerprint() == vocabulary.fingerprint()
        {
            vocabulary.mask_cache().attach(&section);
        }
        grammar.set_precomputed(section);
    }
    Ok(grammar)
}

/// What a bundle holds, for tools.
#[derive(Clone, Debug)]
pub struct Info {
    /// The format version.
    pub version: u32,
    /// The length in bytes.
    pub len: u64,
    /// The fingerprint of the vocabulary it is for, if any.
    pub vocabulary: Option<u64>,
    /// Its sections, in table order.
    pub sections: Vec<SectionInfo>,
    /// The grammar's rules.
    pub rules: usize,
    /// The grammar's automaton nodes.
    pub nodes: usize,
    /// The grammar's automaton edges.
    pub edges: usize,
    /// Precomputed mask entries.
    pub entries: usize,
    /// Precomputed mask entries whose checksum does not match.
    pub damaged_entries: usize,
}

/// One section of a bundle, for tools.
#[derive(Clone, Debug)]
pub struct SectionInfo {
    /// What it holds.
    pub name: &'static str,
    /// Offset from the start of the bundle.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// Whether its checksum matches.
    pub checksum_ok: bool,
}

/// Describes the bundle in `bytes`, checking every checksum (the mask
/// entries' too, which opening leaves to first use). An error if it cannot
/// be opened at all.
pub fn inspect(bytes: &[u8]) -> Result<Info, BundleError> {
    let layout = Layout::parse(bytes)?;
    let sections = layout
        .sections
        .iter()
        .map(|section| SectionInfo {
            name: SectionRecord::kind_name(section.kind),
            offset: section.offset,
            len: section.len,
            checksum_ok: xxhash_rust::xxh3::xxh3_64(section_bytes(bytes, section))
                == section.checksum,
        })
        .collect();
    let tables = layout.tables(bytes)?;
    let (entries, damaged_entries) = match layout.masks()? {
        Some((index, data, _)) => (
            index.len() / size_of::<EntryRecord>(),
            damaged(&bytes[index], &bytes[data]),
        ),
        None => (0, 0),
    };
    Ok(Info {
        version: layout.header.version,
        len: layout.header.len,
        vocabulary: (layout.header.vocabulary != 0).then_some(layout.header.vocabulary),
        sections,
        rules: tables.rules.len(),
        nodes: tables.nodes.len(),
        edges: tables.edges.len(),
        entries,
        damaged_entries,
    })
}
