//! Diagnostics: errors and warnings with source spans, collected, never printed by passes.
//!
//! # Overview
//!
//! - [`Diagnostic`]: one error or warning — a stable code, a message, a primary
//!   span with a label, secondary spans (e.g. the first definition of a
//!   duplicate) and help notes.
//! - [`Diagnostics`]: what a run collected. Passes take `&mut Diagnostics` and
//!   keep going after recoverable errors, so one run reports many problems.
//!
//! Rendering is done in one place: [`Diagnostics::render`] (rustc-like text via
//! codespan-reporting) and [`Diagnostics::to_json`] (machine-readable).

use codespan_reporting::diagnostic as codespan;
use codespan_reporting::files;
use codespan_reporting::term::{self, termcolor};
use std::fmt::Write as _;

use crate::source::{Sources, Span, floor_char_boundary};

/// How bad a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The grammar cannot be used.
    Error,
    /// The grammar works, but something in it is probably a mistake.
    Warning,
}

impl Severity {
    fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// A span with a short message shown under it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    /// What the label points at.
    pub span: Span,
    /// Text shown at the span (may be empty).
    pub message: String,
}

/// One error or warning about a grammar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// A stable kebab-case name for the kind of problem (`undefined-rule`).
    pub code: &'static str,
    /// One line saying what is wrong.
    pub message: String,
    /// Where it is wrong.
    pub primary: Label,
    /// Other places that explain it (a first definition, an import).
    pub secondary: Vec<Label>,
    /// Suggestions and explanations.
    pub help: Vec<String>,
}

impl Diagnostic {
    /// An error at `span`.
    pub fn error(
        code: &'static str,
        message: impl Into<String>,
        span: Span,
        label: impl Into<String>,
    ) -> Self {
        Self::new(Severity::Error, code, message.into(), span, label.into())
    }

    /// A warning at `span`.
    pub fn warning(
        code: &'static str,
        message: impl Into<String>,
        span: Span,
        label: impl Into<String>,
    ) -> Self {
        Self::new(Severity::Warning, code, message.into(), span, label.into())
    }

    fn new(
        severity: Severity,
        code: &'static str,
        message: String,
        span: Span,
        label: String,
    ) -> Self {
        Self {
            severity,
            code,
            message,
            primary: Label {
                span,
                message: label,
            },
            secondary: Vec::new(),
            help: Vec::new(),
        }
    }

    /// Adds a secondary span.
    #[must_use]
    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> Self {
        self.secondary.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    /// Adds a help note.
    #[must_use]
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help.push(help.into());
        self
    }

    /// Renders the diagnostic in the rustc-like style (message, source
    /// excerpt with its labels, help), with colour if `color`.
    pub fn render(&self, sources: &Sources, color: bool) -> String {
        let mut buffer = if color {
            termcolor::Buffer::ansi()
        } else {
            termcolor::Buffer::no_color()
        };
        // Writing into memory fails only on a span outside its file, which
        // passes never produce; fall back to the bare message.
        let config = term::Config::default();
        let written = match Excerpt::of(self, sources) {
            Some(excerpt) => term::emit_to_write_style(
                &mut buffer,
                &config,
                &excerpt,
                &self.to_codespan(|span| ((), excerpt.range(span))),
            ),
            None => term::emit_to_write_style(
                &mut buffer,
                &config,
                sources,
                &self.to_codespan(|span| (span.file, span.start..span.end)),
            ),
        };
        if written.is_err() {
            return format!("{}: {}\n", self.severity.as_str(), self.message);
        }
        String::from_utf8_lossy(buffer.as_slice()).into_owned()
    }

    /// The diagnostic for codespan, each span placed by `place` (a file
    /// and a byte range in it).
    fn to_codespan<F>(
        &self,
        place: impl Fn(Span) -> (F, std::ops::Range<usize>),
    ) -> codespan::Diagnostic<F> {
        let severity = match self.severity {
            Severity::Error => codespan::Severity::Error,
            Severity::Warning => codespan::Severity::Warning,
        };
        let (file, range) = place(self.primary.span);
        let mut labels =
            vec![codespan::Label::primary(file, range).with_message(&self.primary.message)];
        labels.extend(self.secondary.iter().map(|label| {
            let (file, range) = place(label.span);
            codespan::Label::secondary(file, range).with_message(&label.message)
        }));
        codespan::Diagnostic::new(severity)
            .with_code(self.code)
            .with_message(&self.message)
            .with_labels(labels)
            .with_notes(self.help.iter().map(|h| format!("help: {h}")).collect())
    }
}

/// The stretch of one long line (a minified JSON Schema is one line of
/// megabytes) around every label of a diagnostic, shown instead of the
/// whole line, with the line and column numbers of the original.
struct Excerpt<'a> {
    name: &'a str,
    /// The original text and the byte where its line starts.
    original: &'a str,
    line_start: usize,
    line_number: usize,
    /// Where the excerpt starts in the original, and its text (with `…`
    /// where it was cut).
    start: usize,
    text: String,
    /// The bytes of the leading `…`, if any.
    lead: usize,
}

/// Lines longer than this (in bytes) are cut to an excerpt.
const LONG_LINE: usize = 240;
/// Bytes kept on each side of the labels in an excerpt.
const EXCERPT_MARGIN: usize = 60;
/// Bytes of a label shown at most in an excerpt.
const EXCERPT_LABEL: usize = 120;

impl<'a> Excerpt<'a> {
    /// The excerpt for `diagnostic` if all its labels are on one long line
    /// of one file.
    fn of(diagnostic: &Diagnostic, sources: &'a Sources) -> Option<Self> {
        use files::Files;
        let spans: Vec<Span> = std::iter::once(diagnostic.primary.span)
            .chain(diagnostic.secondary.iter().map(|label| label.span))
            .collect();
        let file = spans[0].file;
        let original = sources.text(file);
        let line = sources.line_index(file, spans[0].start).ok()?;
        let range = sources.line_range(file, line).ok()?;
        let on_line =
            |span: &Span| span.file == file && range.start <= span.start && span.end <= range.end;
        if range.len() <= LONG_LINE || !spans.iter().all(on_line) {
            return None;
        }
        let first = spans.iter().map(|span| span.start).min()?;
        let last = spans
            .iter()
            .map(|span| span.end.min(span.start + EXCERPT_LABEL))
            .max()?;
        let start = floor_char_boundary(
            original,
            first.saturating_sub(EXCERPT_MARGIN).max(range.start),
        );
        let end = floor_char_boundary(original, (last + EXCERPT_MARGIN).min(range.end));
        let lead = if start > range.start { "…" } else { "" };
        let tail = if end < range.end { "…" } else { "" };
        Some(Self {
            name: sources.name(file),
            original,
            line_start: range.start,
            line_number: line + 1,
            start,
            text: format!("{lead}{}{tail}", &original[start..end]),
            lead: lead.len(),
        })
    }

    /// Where `span` is in the excerpt (cut to it).
    fn range(&self, span: Span) -> std::ops::Range<usize> {
        let shown = self.text.len() - self.lead;
        let at = |offset: usize| {
            floor_char_boundary(
                &self.text,
                self.lead + offset.saturating_sub(self.start).min(shown),
            )
        };
        let start = at(span.start);
        start..at(span.end.min(span.start + EXCERPT_LABEL)).max(start)
    }
}

impl<'b> files::Files<'b> for Excerpt<'_> {
    type FileId = ();
    type Name = &'b str;
    type Source = &'b str;

    fn name(&'b self, (): ()) -> Result<&'b str, files::Error> {
        Ok(self.name)
    }

    fn source(&'b self, (): ()) -> Result<&'b str, files::Error> {
        Ok(&self.text)
    }

    fn line_index(&'b self, (): (), _: usize) -> Result<usize, files::Error> {
        Ok(0)
    }

    fn line_range(&'b self, (): (), line: usize) -> Result<std::ops::Range<usize>, files::Error> {
        if line == 0 {
            Ok(0..self.text.len())
        } else {
            Err(files::Error::LineTooLarge {
                given: line,
                max: 0,
            })
        }
    }

    fn line_number(&'b self, (): (), _: usize) -> Result<usize, files::Error> {
        Ok(self.line_number)
    }

    /// The column in the original line, in characters.
    fn column_number(&'b self, (): (), _: usize, byte: usize) -> Result<usize, files::Error> {
        let offset = byte.saturating_sub(self.lead).min(self.text.len());
        let original = floor_char_boundary(self.original, self.start + offset);
        Ok(self.original[self.line_start..original].chars().count() + 1)
    }
}

/// The diagnostics of one run, in the order they were found.
#[derive(Clone, Debug, Default)]
pub struct Diagnostics {
    list: Vec<Diagnostic>,
    /// Diagnostics past [`MAX_DIAGNOSTICS`], counted, not kept: errors and
    /// the rest.
    dropped: (usize, usize),
}

/// Most diagnostics kept for one compilation. Text with an error on every
/// line (or a request built that way) would otherwise make thousands, and
/// rendering them would take seconds; past this many the rest are counted
/// and said in one line.
pub const MAX_DIAGNOSTICS: usize = 200;

impl Diagnostics {
    /// No diagnostics yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a diagnostic; past [`MAX_DIAGNOSTICS`], only counts it.
    pub fn push(&mut self, diagnostic: Diagnostic) {
        if self.list.len() < MAX_DIAGNOSTICS {
            self.list.push(diagnostic);
        } else if diagnostic.severity == Severity::Error {
            self.dropped.0 += 1;
        } else {
            self.dropped.1 += 1;
        }
    }

    /// Moves `other`'s diagnostics (and its count of those past the cap)
    /// after these.
    pub fn append(&mut self, other: Diagnostics) {
        for diagnostic in other.list {
            self.push(diagnostic);
        }
        self.dropped.0 += other.dropped.0;
        self.dropped.1 += other.dropped.1;
    }

    /// All diagnostics, in the order they were found.
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.list.iter()
    }

    /// The number of errors (those past [`MAX_DIAGNOSTICS`] included).
    pub fn error_count(&self) -> usize {
        self.dropped.0
            + self
                .list
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .count()
    }

    /// The number of warnings.
    pub fn warning_count(&self) -> usize {
        self.dropped.1
            + self
                .list
                .iter()
                .filter(|d| d.severity != Severity::Error)
                .count()
    }

    /// Whether any error was recorded.
    pub fn has_errors(&self) -> bool {
        self.error_count() > 0
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty() && self.dropped == (0, 0)
    }

    /// Sorts by file and position (stable for equal positions), so output does
    /// not depend on the order passes ran in.
    pub fn sort(&mut self) {
        self.list.sort_by_key(|d| {
            (
                d.primary.span.file,
                d.primary.span.start,
                d.primary.span.end,
            )
        });
    }

    /// Renders every diagnostic in the rustc-like style, with colour if `color`.
    pub fn render(&self, sources: &Sources, color: bool) -> String {
        let mut out: String = self
            .list
            .iter()
            .map(|diagnostic| diagnostic.render(sources, color))
            .collect();
        let (errors, others) = self.dropped;
        if errors + others > 0 {
            let _ = writeln!(
                out,
                "… and {errors} more errors and {others} more warnings, not shown \
                 (the first {MAX_DIAGNOSTICS} are)"
            );
        }
        out
    }

    /// Every diagnostic as a JSON object with file, 1-based line and column
    /// (in characters) and byte offsets, for editors and other tools.
    pub fn to_json(&self, sources: &Sources) -> serde_json::Value {
        let label_json = |label: &Label| {
            let (line, column) = sources.line_column(label.span.file, label.span.start);
            let (end_line, end_column) = sources.line_column(label.span.file, label.span.end);
            serde_json::json!({
                "file": sources.name(label.span.file),
                "line": line,
                "column": column,
                "end_line": end_line,
                "end_column": end_column,
                "start": label.span.start,
                "end": label.span.end,
                "message": label.message,
            })
        };
        self.list
            .iter()
            .map(|d| {
                serde_json::json!({
                    "severity": d.severity.as_str(),
                    "code": d.code,
                    "message": d.message,
                    "primary": label_json(&d.primary),
                    "secondary": d.secondary.iter().map(label_json).collect::<Vec<_>>(),
                    "help": d.help,
                })
            })
            .collect()
    }
}
