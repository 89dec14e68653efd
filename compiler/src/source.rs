//! Source texts: grammar files, in-memory grammars and the embedded standard library.
//!
//! # Overview
//!
//! - [`Sources`] owns every text a compilation reads and implements
//!   codespan-reporting's `Files`, so any [`Span`] can be rendered.
//! - [`FileId`] names one text; [`Span`] is a byte range in one text.
//!
//! Texts are stored as `String`. A file that is not valid UTF-8 is kept with
//! its invalid bytes replaced (so the rest of it can still be checked) and an
//! error pointing at the first bad byte.

use std::io::Read as _;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use codespan_reporting::files::{self, SimpleFiles};
use xg_runtime::Vocabulary;

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::stdlib;

/// One text in [`Sources`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(usize);

/// A byte range in one source text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Span {
    /// The text the range is in.
    pub file: FileId,
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// The range `start..end` of `file`.
    pub fn new(file: FileId, start: usize, end: usize) -> Self {
        Self { file, start, end }
    }

    /// The smallest span covering `self` and `other` (same file).
    #[must_use]
    pub fn to(self, other: Span) -> Span {
        Span::new(
            self.file,
            self.start.min(other.start),
            self.end.max(other.end),
        )
    }
}

/// Largest file an import or a `%json` file may name: a grammar or
/// schema file of this size already takes a compilation of seconds.
pub const MAX_FILE_BYTES: u64 = 8 << 20;

/// Where a text came from; decides how its imports are found.
#[derive(Clone, Debug)]
enum Origin {
    /// A file on disk; relative imports are relative to its folder.
    Path(PathBuf),
    /// A grammar of the embedded standard library (`std/…`).
    Std,
    /// Text handed over directly; relative imports are relative to `base`,
    /// if any. Unless `trusted`, only to files inside `base`.
    Memory {
        base: Option<PathBuf>,
        trusted: bool,
    },
}

/// What an import path refers to, in a form that identifies a module uniquely.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ImportTarget {
    /// A grammar of the embedded standard library, by its path (`std/json.xg`).
    Std(&'static str),
    /// A file on disk (canonicalized when it exists).
    Path(PathBuf),
}

/// Every source text of a compilation, and the model vocabulary the
/// grammar is compiled for, if any.
///
/// Text handed over in memory ([`Sources::add`]) is treated as arriving
/// with a request: it imports the standard library, and files inside its
/// base folder if it has one — never an absolute path nor a path with
/// `..`, and the error says nothing of a refused target. Files on disk and
/// text the program's author wrote ([`Sources::add_trusted`]) may import
/// any path relative to their folder. Every file read is at most
/// [`MAX_FILE_BYTES`], checked before and while reading.
#[derive(Default)]
pub struct Sources {
    files: SimpleFiles<String, String>,
    origins: Vec<Origin>,
    /// Files read as data while compiling (`%json "schema.json"`), which are
    /// not source texts but which the result depends on all the same.
    data_files: Mutex<Vec<PathBuf>>,
    /// Resolves tokens named by their text (`Token("<|call|>")`).
    vocabulary: Option<Arc<Vocabulary>>,
}

impl Sources {
    /// An empty set of sources.
    pub fn new() -> Self {
        Self::default()
    }

    /// Names the model vocabulary the grammar is compiled for: tokens
    /// written by their text (`Token("<|call|>")`) are resolved in it.
    /// Without one, such tokens are errors.
    pub fn set_vocabulary(&mut self, vocabulary: Arc<Vocabulary>) {
        self.vocabulary = Some(vocabulary);
    }

    /// The vocabulary set by [`Sources::set_vocabulary`].
    pub fn vocabulary(&self) -> Option<&Vocabulary> {
        self.vocabulary.as_deref()
    }

    /// The vocabulary set by [`Sources::set_vocabulary`], shared.
    pub(crate) fn shared_vocabulary(&self) -> Option<Arc<Vocabulary>> {
        self.vocabulary.clone()
    }

    /// Adds a text that did not come from disk, such as a grammar that
    /// arrived with a request. It imports the standard library and, if
    /// `base` is a folder, files inside it (relative paths without `..`);
    /// nothing else on disk (see [`Sources`]).
    pub fn add(
        &mut self,
        name: impl Into<String>,
        text: impl Into<String>,
        base: Option<PathBuf>,
    ) -> FileId {
        let origin = Origin::Memory {
            base,
            trusted: false,
        };
        self.push(name.into(), text.into(), origin)
    }

    /// Adds a text the program's author wrote (a `grammar!` in Rust
    /// code): like a file in folder `base`, it may import any path
    /// relative to it, `..` included.
    pub fn add_trusted(
        &mut self,
        name: impl Into<String>,
        text: impl Into<String>,
        base: PathBuf,
    ) -> FileId {
        let origin = Origin::Memory {
            base: Some(base),
            trusted: true,
        };
        self.push(name.into(), text.into(), origin)
    }

    /// Adds a text given as raw bytes. Invalid UTF-8 is replaced and reported.
    pub fn add_bytes(
        &mut self,
        name: impl Into<String>,
        bytes: &[u8],
        base: Option<PathBuf>,
        diagnostics: &mut Diagnostics,
    ) -> FileId {
        let (text, bad) = decode_utf8(bytes);
        let origin = Origin::Memory {
            base,
            trusted: false,
        };
        let id = self.push(name.into(), text, origin);
        if let Some(at) = bad {
            diagnostics.push(invalid_utf8(id, at));
        }
        id
    }

    /// Reads a grammar file from disk; diagnostics name it as `path` is written.
    pub fn load(&mut self, path: &Path, diagnostics: &mut Diagnostics) -> std::io::Result<FileId> {
        self.load_as(path, path.display().to_string(), diagnostics)
    }

    /// Reads a grammar file from disk (at most [`MAX_FILE_BYTES`]);
    /// diagnostics name it `name`.
    pub fn load_as(
        &mut self,
        path: &Path,
        name: String,
        diagnostics: &mut Diagnostics,
    ) -> std::io::Result<FileId> {
        let bytes = read_limited(path)?;
        let (text, bad) = decode_utf8(&bytes);
        let id = self.push(name, text, Origin::Path(path.to_path_buf()));
        if let Some(at) = bad {
            diagnostics.push(invalid_utf8(id, at));
        }
        Ok(id)
    }

    /// Adds the standard-library grammar at `path` (`std/json.xg`), if there is one.
    pub fn load_std(&mut self, path: &'static str) -> FileId {
        let text = stdlib::get(path).unwrap_or_default();
        self.push(path.to_string(), text.to_string(), Origin::Std)
    }

    fn push(&mut self, name: String, text: String, origin: Origin) -> FileId {
        let id = FileId(self.files.add(name, text));
        self.origins.push(origin);
        id
    }

    /// Reads a file the compilation depends on without it being a source
    /// text (a `%json` schema file, found by [`Sources::data_file`]; at
    /// most [`MAX_FILE_BYTES`]), and remembers it among
    /// [`Sources::files_read`].
    pub fn read_data_file(&self, path: &Path) -> std::io::Result<String> {
        let text = String::from_utf8(read_limited(path)?)
            .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidData, err))?;
        self.data_files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(path.to_path_buf());
        Ok(text)
    }

    /// Every file read from disk so far — grammar files, then data files —
    /// once each: what a build must watch to know when to compile again.
    pub fn files_read(&self) -> Vec<PathBuf> {
        let sources = self.origins.iter().filter_map(|origin| match origin {
            Origin::Path(path) => Some(path.clone()),
            Origin::Memory { .. } | Origin::Std => None,
        });
        let data = self
            .data_files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut seen = std::collections::HashSet::new();
        sources
            .chain(data)
            .filter(|path| seen.insert(path.clone()))
            .collect()
    }

    /// The name to show for the file that `importer` refers to as `path` (an
    /// import or a `%json` file): the path joined to the importer's folder as
    /// the user wrote them, so messages do not depend on where the checkout is.
    pub fn relative_name(&self, importer: FileId, path: &str) -> String {
        if path.starts_with("std/") || Path::new(path).is_absolute() {
            return path.to_string();
        }
        let folder = Path::new(self.name(importer))
            .parent()
            .unwrap_or(Path::new(""));
        folder.join(path).display().to_string()
    }

    /// The text of `file`.
    pub fn text(&self, file: FileId) -> &str {
        self.files.get(file.0).map_or("", |f| f.source().as_str())
    }

    /// The name `file` is shown under in diagnostics.
    pub fn name(&self, file: FileId) -> &str {
        self.files.get(file.0).map_or("", |f| f.name().as_str())
    }

    /// The text a span covers (empty if the span is out of range).
    pub fn slice(&self, span: Span) -> &str {
        self.text(span.file).get(span.start..span.end).unwrap_or("")
    }

    /// Where the import `path` written in `importer` points, or why it cannot.
    pub fn import_target(&self, importer: FileId, path: &str) -> Result<ImportTarget, String> {
        if path.starts_with("std/") {
            return stdlib::path(path)
                .map(ImportTarget::Std)
                .ok_or_else(|| format!("the standard library has no grammar `{path}`"));
        }
        if let Origin::Std = self.origins[importer.0] {
            return Err("standard-library grammars import only `std/…` paths".into());
        }
        self.data_file(importer, path).map(ImportTarget::Path)
    }

    /// The file on disk that `path`, written in `file` (an import or a
    /// `%json` file), names — canonical, and allowed to be read from that
    /// text (see [`Sources`]) — or why it cannot be read.
    pub fn data_file(&self, file: FileId, path: &str) -> Result<PathBuf, String> {
        let relative = Path::new(path);
        let (full, confined_to) = match &self.origins[file.0] {
            Origin::Path(p) => (p.parent().unwrap_or(Path::new("")).join(relative), None),
            Origin::Memory {
                base: Some(base),
                trusted: true,
            } => (base.join(relative), None),
            Origin::Memory {
                base: Some(base),
                trusted: false,
            } => {
                let inside = relative
                    .components()
                    .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
                if !inside {
                    return Err(format!(
                        "a grammar given as text reads only files inside its folder; `{path}` \
                         is absolute or leaves it"
                    ));
                }
                (base.join(relative), Some(base))
            }
            Origin::Memory { base: None, .. } => {
                return Err(format!(
                    "a grammar given as text with no folder reads no files, only the \
                     standard library (`std/…`); `{path}` is not one"
                ));
            }
            Origin::Std => {
                return Err("standard-library grammars read no files".into());
            }
        };
        let shown = self.relative_name(file, path);
        let canonical = full
            .canonicalize()
            .map_err(|err| format!("cannot open `{shown}`: {err}"))?;
        if let Some(base) = confined_to {
            // A link inside the folder may still point out of it.
            let base = base
                .canonicalize()
                .map_err(|err| format!("cannot open the grammar's folder: {err}"))?;
            if !canonical.starts_with(&base) {
                return Err(format!(
                    "a grammar given as text reads only files inside its folder; `{path}` \
                     leads out of it"
                ));
            }
        }
        if !canonical.is_file() {
            return Err(format!("`{shown}` is not a file"));
        }
        Ok(canonical)
    }

    /// The folder a file's relative paths (imports, `%json` files) resolve
    /// against, if it has one.
    pub fn base_dir(&self, file: FileId) -> Option<PathBuf> {
        match &self.origins[file.0] {
            Origin::Path(p) => Some(p.parent().unwrap_or(Path::new("")).to_path_buf()),
            Origin::Memory { base, .. } => base.clone(),
            Origin::Std => None,
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_column(&self, file: FileId, offset: usize) -> (usize, usize) {
        use codespan_reporting::files::Files;
        let text = self.text(file);
        let offset = floor_char_boundary(text, offset);
        match self.files.location(file.0, offset) {
            Ok(loc) => (loc.line_number, loc.column_number),
            Err(_) => (1, 1),
        }
    }
}

/// `offset` (at most the text's length), moved back to the start of the
/// character it is in.
pub(crate) fn floor_char_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

impl<'a> files::Files<'a> for Sources {
    type FileId = FileId;
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, id: FileId) -> Result<&'a str, files::Error> {
        self.files.get(id.0).map(|f| f.name().as_str())
    }

    fn source(&'a self, id: FileId) -> Result<&'a str, files::Error> {
        self.files.get(id.0).map(|f| f.source().as_str())
    }

    fn line_index(&'a self, id: FileId, byte_index: usize) -> Result<usize, files::Error> {
        self.files.line_index(id.0, byte_index)
    }

    fn line_range(
        &'a self,
        id: FileId,
        line_index: usize,
    ) -> Result<std::ops::Range<usize>, files::Error> {
        self.files.line_range(id.0, line_index)
    }
}

/// The bytes of the file at `path`, if it is a regular file of at most
/// [`MAX_FILE_BYTES`] (checked before reading, and while reading: files
/// under `/proc` say they are empty).
fn read_limited(path: &Path) -> std::io::Result<Vec<u8>> {
    let too_large = || {
        std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("larger than {MAX_FILE_BYTES} bytes (the limit for a grammar or schema file)"),
        )
    };
    let file = std::fs::File::open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Decodes bytes as UTF-8, replacing invalid sequences; also returns the
/// offset (in the decoded text) of the first replacement, if any.
fn decode_utf8(bytes: &[u8]) -> (String, Option<usize>) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_string(), None),
        Err(err) => (
            String::from_utf8_lossy(bytes).into_owned(),
            Some(err.valid_up_to()),
        ),
    }
}

fn invalid_utf8(file: FileId, at: usize) -> Diagnostic {
    let replacement = char::REPLACEMENT_CHARACTER.len_utf8();
    Diagnostic::error(
        "invalid-utf8",
        "grammar text is not valid UTF-8",
        Span::new(file, at, at + replacement),
        "invalid byte sequence here",
    )
    .with_help("save the file as UTF-8; write other bytes with escapes such as `\\xHH`")
}
