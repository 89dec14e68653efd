//! What a schema's compilation says about it as it reads and emits: one
//! note per keyword and place (enforced, approximated or ignored) and the
//! errors.

use rustc_hash::FxHashMap;

use super::pointer::{pointer_to, shown};
use super::{Note, Report, SchemaError, Treatment};

/// What a compilation's report keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kept {
    /// Every keyword at every place, enforced ones too: the report a user
    /// asks for (`xg json-schema --report`, [`super::generate`]).
    Everything,
    /// Only what is not enforced exactly: all a request shows (its
    /// warnings). Notes of enforced keywords, one per keyword and place,
    /// and their copies were a tenth of a large schema's compile time.
    Warnings,
}

/// The notes and errors of one schema's compilation.
pub(crate) struct Notes {
    /// Strict mode: what would be approximated or ignored is an error.
    strict: bool,
    kept: Kept,
    pub(super) report: Report,
    /// Where each note is in the report, by pointer, then keyword (looked
    /// up without making strings: most notes repeat one already made).
    pub(super) noted: FxHashMap<String, FxHashMap<String, usize>>,
    pub(super) errors: Vec<SchemaError>,
}

impl Notes {
    /// No notes yet, for a compilation in strict mode or not, keeping
    /// what `kept` says.
    pub(crate) fn new(strict: bool, kept: Kept) -> Self {
        Self {
            strict,
            kept,
            report: Report::default(),
            noted: FxHashMap::default(),
            errors: Vec::new(),
        }
    }

    /// Records what became of `keyword` at `pointer`: one note per place,
    /// the weakest treatment winning (a keyword enforced on one path and
    /// approximated on another is approximated).
    pub(crate) fn note(
        &mut self,
        pointer: &str,
        keyword: &str,
        treatment: Treatment,
        detail: &str,
    ) {
        // An enforced note never replaces a weaker one: leaving it out
        // changes no warning.
        if treatment == Treatment::Enforced && self.kept == Kept::Warnings {
            return;
        }
        let note = || Note {
            pointer: shown(pointer),
            keyword: keyword.to_string(),
            treatment,
            detail: detail.to_string(),
        };
        if let Some(at) = self.noted_at(pointer, keyword) {
            if treatment > self.report.notes[at].treatment {
                self.report.notes[at] = note();
            }
            return;
        }
        let keywords = match self.noted.get_mut(pointer) {
            Some(keywords) => keywords,
            None => self.noted.entry(pointer.to_string()).or_default(),
        };
        keywords.insert(keyword.to_string(), self.report.notes.len());
        self.report.notes.push(note());
    }

    /// Where the note of `keyword` at `pointer` is in the report, if made.
    pub(super) fn noted_at(&self, pointer: &str, keyword: &str) -> Option<usize> {
        self.noted.get(pointer)?.get(keyword).copied()
    }

    /// `keyword` at `pointer` is enforced exactly.
    pub(crate) fn enforced(&mut self, pointer: &str, keyword: &str) {
        self.note(pointer, keyword, Treatment::Enforced, "");
    }

    /// An over-approximation: a warning, or an error in strict mode.
    pub(crate) fn approximate(&mut self, pointer: &str, keyword: &str, detail: &str) {
        if self.strict {
            let at = pointer_to(pointer, keyword);
            self.error(
                &at,
                format!("`{keyword}` cannot be enforced exactly: {detail} (strict mode)"),
            );
        } else {
            self.note(pointer, keyword, Treatment::Approximated, detail);
        }
    }

    /// A keyword xg does not know: ignored with a warning, or an error in
    /// strict mode.
    pub(crate) fn unknown(&mut self, pointer: &str, keyword: &str) {
        if self.strict {
            let at = pointer_to(pointer, keyword);
            self.error(&at, format!("unknown keyword `{keyword}` (strict mode)"));
        } else {
            self.note(pointer, keyword, Treatment::Ignored, "unknown keyword");
        }
    }

    /// An error at `pointer` (each said once).
    pub(crate) fn error(&mut self, pointer: &str, message: String) {
        let error = SchemaError {
            pointer: shown(pointer),
            message,
        };
        if !self.errors.contains(&error) {
            self.errors.push(error);
        }
    }
}
