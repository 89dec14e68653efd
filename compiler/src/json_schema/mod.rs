//! The JSON Schema front end: a schema (serde_json) → a grammar whose strings
//! are exactly the JSON texts of the values the schema accepts, within the
//! representation chosen by [`Options`] (whitespace, separators, canonical
//! string escapes, plain integers).
//!
//! Every keyword is enforced exactly, or over-approximated with a warning in
//! the [`Report`] naming the keyword and JSON pointer (an error in strict
//! mode), or, for annotations, ignored. Nothing is relaxed silently.
//!
//! The schema becomes rules lazily from the root: each *conjunction* of
//! subschemas (a schema with its `$ref`, `allOf` members and chosen `anyOf`
//! branches, merged) is one rule, so recursive schemas become recursive
//! rules. The output is pruned of what can never match, then either printed
//! as `.xg` text ([`Generated::to_xg`]) or handed to the rest of the pipeline
//! as resolved rules.

mod content;
mod emit;
mod formats;
mod grammar;
pub(crate) mod locate;
mod notes;
mod numbers;
mod pointer;
mod schema;
mod strings;

pub(crate) use self::formats::KNOWN as KNOWN_FORMATS;
pub(crate) use self::notes::Kept;

use std::collections::HashMap;
use std::fmt;

use rustc_hash::FxHashMap;
use serde_json::Value;

use crate::budget::{Budget, Exceeded};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::request::Request;
use crate::source::{FileId, Sources, Span};
use crate::tree;

use self::grammar::Rules;

/// How the generated grammar lays out JSON text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Whitespace {
    /// No whitespace at all: the separators exactly as given.
    Compact,
    /// Any JSON whitespace (space, tab, line feed, carriage return) around
    /// punctuation, at most `max` characters in a row if bounded (a bound
    /// keeps a model from looping on whitespace; the default is
    /// [`DEFAULT_MAX_WHITESPACE`]).
    Flexible {
        /// Longest whitespace run; `None` is unbounded.
        max: Option<u32>,
    },
    /// Pretty-printed as Python's `json.dumps(value, indent=N)` writes it:
    /// each array item and object member on its own line, indented by
    /// `indent` spaces per level, the closing bracket on a line of its own
    /// at its container's indentation, empty containers as `[]` and `{}`.
    /// The item separator is followed by the line break (its trailing
    /// whitespace dropped), the key separator is used as given (`": "` is
    /// the usual choice). Values nested deeper than [`PRETTY_DEPTH`]
    /// levels take any JSON whitespace instead (each level has its own
    /// rules, so the depth is bounded).
    Pretty {
        /// Spaces per level.
        indent: u32,
    },
}

/// Most levels of arrays and objects a JSON value handed to a front end
/// (a schema, a structural tag, a tool list) may nest: what serde_json
/// allows when it parses text, so that a value built in memory is held to
/// the same bound as one parsed. Walks of a value (serde_json's own
/// printing among them) recurse on its depth.
pub const MAX_JSON_DEPTH: usize = 128;

/// The JSON pointer of the first value nested deeper than
/// [`MAX_JSON_DEPTH`] in `value`, if there is one; found without recursion.
pub fn too_deep(value: &Value) -> Option<String> {
    enum Children<'a> {
        Object(serde_json::map::Iter<'a>),
        Array(std::iter::Enumerate<std::slice::Iter<'a, Value>>),
    }
    fn children(value: &Value) -> Option<Children<'_>> {
        match value {
            Value::Object(map) => Some(Children::Object(map.iter())),
            Value::Array(items) => Some(Children::Array(items.iter().enumerate())),
            _ => None,
        }
    }
    /// The step from a container to one of its children: escaped into a
    /// pointer only when the limit is crossed.
    enum Step<'a> {
        Key(&'a str),
        Index(usize),
    }
    // The open containers from the root down, each with the step that
    // leads to it.
    let mut open: Vec<(Step<'_>, Children<'_>)> = Vec::new();
    if let Some(top) = children(value) {
        open.push((Step::Index(0), top));
    }
    while let Some((_, top)) = open.last_mut() {
        let next = match top {
            Children::Object(members) => members.next().map(|(key, value)| (Step::Key(key), value)),
            Children::Array(items) => items.next().map(|(i, value)| (Step::Index(i), value)),
        };
        let Some((step, child)) = next else {
            open.pop();
            continue;
        };
        if let Some(grandchildren) = children(child) {
            open.push((step, grandchildren));
            if open.len() > MAX_JSON_DEPTH {
                let steps: Vec<String> = open[1..]
                    .iter()
                    .map(|(step, _)| match step {
                        Step::Key(key) => pointer::escape(key),
                        Step::Index(i) => i.to_string(),
                    })
                    .collect();
                return Some(format!("#/{}", steps.join("/")));
            }
        }
    }
    None
}

/// The error for a value nested deeper than [`MAX_JSON_DEPTH`], at `pointer`.
pub(crate) fn too_deep_message() -> String {
    format!("nested more than {MAX_JSON_DEPTH} levels deep (arrays and objects; the limit)")
}

/// Nesting levels laid out exactly by [`Whitespace::Pretty`].
pub const PRETTY_DEPTH: u32 = 12;

/// The widest indentation level [`Whitespace::Pretty`] takes, in spaces.
pub const MAX_INDENT: u32 = 32;

/// The longest whitespace run [`Whitespace::Flexible`] allows unless told
/// otherwise: a line break and the indentation of a pretty-printed value
/// seven levels deep at four spaces a level (or fifteen at two), and no
/// more. Unbounded whitespace lets a model that wants to write what the
/// schema forbids write spaces and line breaks instead, to its token limit
/// — the failure the peers' users report most (vLLM and others now cap the
/// run at 8, which refuses pretty-printing past the first level).
pub const DEFAULT_MAX_WHITESPACE: u32 = 32;

/// In which order an object's properties may appear.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PropertyOrder {
    /// As the schema lists them (other properties after them).
    Given,
    /// Any order. Required properties are still required and no property
    /// appears twice: the grammar tracks which properties were written
    /// (all of them for up to [`EXACT_ANY_ORDER`] properties, else up to
    /// [`MAX_TRACKED`] required ones, with a reported approximation for
    /// the others).
    Any,
}

/// Up to this many properties, any-order objects track every property.
pub const EXACT_ANY_ORDER: usize = 6;

/// Most properties an any-order object tracks (the grammar has a rule per
/// subset of them).
pub const MAX_TRACKED: usize = 8;

/// Options of the JSON Schema front end.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// Whitespace between tokens.
    pub whitespace: Whitespace,
    /// Between array items and object members (`","`; compact mode uses it
    /// as given, e.g. `", "`; flexible mode trims it and allows whitespace).
    pub item_separator: String,
    /// Between a key and its value (`":"`).
    pub key_separator: String,
    /// Unknown keywords and keywords that can only be approximated are errors.
    pub strict: bool,
    /// The order of object properties.
    pub property_order: PropertyOrder,
    /// Whether an object schema that lists `properties` and does not say
    /// `additionalProperties` allows other properties: `true` is JSON Schema's
    /// rule, `false` OpenAI's strict structured outputs.
    pub additional_properties: bool,
    /// Integers as a reader that tells integers from floats by their
    /// spelling (serde's) needs them: digits only — no fraction of zeros
    /// (`6000.0`, an integer from draft 6 on) and no `-0` (JSON Schema's
    /// zero, serde's float). `false` is JSON Schema's rule.
    pub plain_integers: bool,
    /// How values are written: as JSON, or as Python literals.
    pub literals: Literals,
}

/// How the front end writes values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Literals {
    /// As JSON.
    #[default]
    Json,
    /// As Python literals (what `repr` writes and `ast.literal_eval`
    /// reads): `True`, `False` and `None` for `true`, `false` and `null`;
    /// strings, numbers, lists and dicts as in JSON, which Python reads
    /// alike (but for the escape `\/`).
    Python,
}

impl Default for Options {
    /// Flexible whitespace (runs of at most [`DEFAULT_MAX_WHITESPACE`]),
    /// `,` and `:`, lenient, properties in the given
    /// order, JSON Schema's `additionalProperties` default and integers.
    fn default() -> Self {
        Self {
            whitespace: Whitespace::Flexible {
                max: Some(DEFAULT_MAX_WHITESPACE),
            },
            item_separator: ",".to_string(),
            key_separator: ":".to_string(),
            strict: false,
            property_order: PropertyOrder::Given,
            additional_properties: true,
            plain_integers: false,
            literals: Literals::Json,
        }
    }
}

/// What the front end did with one keyword at one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Treatment {
    /// Enforced exactly.
    Enforced,
    /// Over-approximated: the grammar may accept values the keyword forbids.
    Approximated,
    /// Not enforced (an unknown keyword or a format xg does not check).
    Ignored,
}

impl fmt::Display for Treatment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Treatment::Enforced => "enforced",
            Treatment::Approximated => "approximated",
            Treatment::Ignored => "ignored",
        })
    }
}

/// One keyword at one JSON pointer, and what became of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// The schema object's JSON pointer (`#/properties/name`).
    pub pointer: String,
    /// The keyword (`pattern`).
    pub keyword: String,
    /// What was done with it.
    pub treatment: Treatment,
    /// Why, for anything not enforced exactly.
    pub detail: String,
}

/// Every keyword the front end met and what it did with it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// In the order they were met.
    pub notes: Vec<Note>,
}

impl Report {
    /// The notes that are not [`Treatment::Enforced`]: the warnings.
    pub fn warnings(&self) -> impl Iterator<Item = &Note> {
        self.notes
            .iter()
            .filter(|n| n.treatment != Treatment::Enforced)
    }
}

/// A schema the front end refuses, with the JSON pointer of the offending part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    /// Where in the schema (`#/properties/age/minimum`).
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.pointer, self.message)
    }
}

/// The grammar of a schema and the report of how it was made.
#[derive(Clone, Debug)]
pub struct Generated {
    rules: Rules,
    /// What was enforced, approximated and ignored (of a request's schema,
    /// only what was not enforced: its warnings).
    pub report: Report,
    /// Per rule name, the JSON pointer of the schema it was made for.
    origins: std::collections::HashMap<String, String>,
}

impl Generated {
    /// The grammar as `.xg` text (entry rule `root`), readable and
    /// parseable.
    pub fn to_xg(&self) -> String {
        self.rules.to_xg()
    }

    /// How many rules the grammar has.
    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// The JSON pointer (`#/properties/age`) of the schema the rule named
    /// `rule` was made for: where a refusal inside it comes from. `None`
    /// for rules that stand for several places (`shared_N`) or for no
    /// schema of their own.
    pub fn origin(&self, rule: &str) -> Option<&str> {
        self.origins.get(rule).map(String::as_str)
    }

    /// The approximate bytes it holds (what a cache counts).
    pub(crate) fn bytes(&self) -> usize {
        let notes: usize = self
            .report
            .notes
            .iter()
            .map(|n| size_of::<Note>() + n.pointer.len() + n.keyword.len() + n.detail.len())
            .sum();
        let origins: usize = self
            .origins
            .iter()
            .map(|(name, pointer)| 2 * size_of::<String>() + name.len() + pointer.len())
            .sum();
        self.rules.bytes() + notes + origins
    }

    /// The rules as resolved rules numbered from `first`, every span `span`,
    /// names prefixed by `prefix`; the first is the root.
    pub(crate) fn to_tree(&self, first: usize, span: Span, prefix: &str) -> Vec<tree::Rule> {
        self.rules.to_tree(first, span, prefix)
    }

    /// The rules lowered to bytes, the first the root: what
    /// [`crate::ir::lower`] makes of the resolved tree of an embedded
    /// schema's rules, built without the tree.
    pub fn to_ir(&self) -> crate::ir::Grammar {
        self.to_ir_within(&Budget::unlimited())
            .expect("an unlimited budget")
    }

    /// [`Generated::to_ir`], checking `budget` rule by rule.
    pub fn to_ir_within(&self, budget: &Budget) -> Result<crate::ir::Grammar, Exceeded> {
        Ok(crate::ir::Grammar {
            rules: self.rules.to_ir(budget)?,
            root: xg_runtime::RuleId::new(0).expect("rule 0"),
        })
    }
}

/// Compiles `schema` into a grammar within `budget` (its rule limit, time
/// and cancellation). Errors name the JSON pointer of each offending part;
/// all found are returned at once.
pub fn generate(
    schema: &Value,
    options: &Options,
    budget: &Budget,
) -> Result<Generated, Vec<SchemaError>> {
    generate_with_numbers(schema, WrittenNumbers::default(), options, budget)
}

/// [`generate`] for a schema that arrived as JSON text (`text` parses to
/// `schema`): numeric bounds (`minimum`, `maximum`, the exclusive ones,
/// `multipleOf`) are read from the text as written, so that digits beyond
/// a double's precision count (`"maximum": 99999999999999999999` refuses
/// `100000000000000000000`, which a double cannot tell apart from it).
pub fn generate_from_text(
    schema: &Value,
    text: &str,
    options: &Options,
    budget: &Budget,
) -> Result<Generated, Vec<SchemaError>> {
    generate_with_numbers(schema, inexact_numbers(schema, text), options, budget)
}

/// [`generate_from_text`] with the text's [`inexact_numbers`] found
/// already.
pub fn generate_with_numbers(
    schema: &Value,
    written: WrittenNumbers,
    options: &Options,
    budget: &Budget,
) -> Result<Generated, Vec<SchemaError>> {
    if let Some(pointer) = too_deep(schema) {
        return Err(vec![SchemaError {
            pointer,
            message: too_deep_message(),
        }]);
    }
    // Checking the depth walked all of a schema: milliseconds for a large
    // one.
    if let Err(exceeded) = budget.check() {
        return Err(vec![SchemaError {
            pointer: "#".into(),
            message: exceeded.to_string(),
        }]);
    }
    generate_shallow(schema, written, options, budget, Kept::Everything)
}

/// A schema embedded in a larger grammar (`%json` in `.xg`, a structural
/// tag's `json_schema` format): generated through `cache` within `budget`
/// (a schema an earlier request embedded is not generated again), its
/// warnings pushed to `diagnostics` at `placement`. Its errors, for the
/// caller to report where the schema sits, if it does not compile.
pub(crate) fn embed(
    schema: &Value,
    options: &Options,
    cache: &crate::cache::CompileCache,
    budget: &Budget,
    placement: &Placement<'_>,
    diagnostics: &mut Diagnostics,
) -> Result<std::sync::Arc<Generated>, Vec<SchemaError>> {
    let generated = cache.schema(schema.to_string(), options, || {
        generate(schema, options, budget)
    })?;
    push_warnings(&generated.report, placement, diagnostics);
    Ok(generated)
}

/// [`generate_with_numbers`] for a schema [`too_deep`] has passed already
/// (the pipeline checks it before printing the schema as its cache key),
/// its report keeping what `kept` says.
pub(crate) fn generate_shallow(
    schema: &Value,
    written: WrittenNumbers,
    options: &Options,
    budget: &Budget,
    kept: Kept,
) -> Result<Generated, Vec<SchemaError>> {
    emit::Emitter::new(schema, written.0, options, budget, kept).run()
}

/// A schema's numbers that serde_json does not print as its text writes
/// them, by pointer (`/maximum`, without the `#`), as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WrittenNumbers(HashMap<String, String>);

/// The numbers of `text` (the JSON of `schema`) that serde_json does not
/// print as written: those [`generate_from_text`] must read from the text.
pub fn inexact_numbers(schema: &Value, text: &str) -> WrittenNumbers {
    // A double prints every number of up to 15 significant digits as
    // written (or as another spelling of the same value): without a longer
    // run of digits there is nothing to find, and nothing to scan.
    let mut run = 0;
    let long = text.bytes().any(|byte| {
        match byte {
            b'0'..=b'9' => run += 1,
            b'.' => {}
            _ => run = 0,
        }
        run > 15
    });
    if !long {
        return WrittenNumbers::default();
    }
    let Some(numbers) = locate::numbers(text) else {
        return WrittenNumbers::default();
    };
    WrittenNumbers(
        numbers
            .into_iter()
            .filter_map(|(pointer, written)| {
                // Keyed as the generator writes pointers: `/maximum`, no `#`.
                let pointer = pointer.trim_start_matches('#').to_string();
                let Some(Value::Number(number)) = schema.pointer(&pointer) else {
                    return None;
                };
                // Printed as written, or the same number: nothing to keep.
                let printed = number.to_string();
                (printed != written
                    && numbers::Decimal::parse(&printed) != numbers::Decimal::parse(&written))
                .then_some((pointer, written))
            })
            .collect(),
    )
}

/// Compiles `schema` (parsed from the text of `file`) all the way to a
/// checked tree for the rest of the pipeline, within the request's budget,
/// reporting errors and warnings as the request's diagnostics (see
/// [`diagnose`]).
pub fn check(
    request: &mut Request,
    schema: &Value,
    file: FileId,
    options: &Options,
) -> Option<tree::Grammar> {
    let outcome = generate(schema, options, &request.budget);
    diagnose(&outcome, &request.sources, file, &mut request.diagnostics);
    let rules = outcome.ok()?.to_tree(0, Span::new(file, 0, 0), "");
    Some(tree::Grammar {
        rules,
        root: xg_runtime::RuleId::new(0).expect("rule 0"),
    })
}

/// The diagnostics of a [`generate`] outcome: its errors, or its report's
/// warnings, each at the part of the schema's text (`file` in `sources`)
/// that its JSON pointer names.
pub fn diagnose(
    outcome: &Result<Generated, Vec<SchemaError>>,
    sources: &Sources,
    file: FileId,
    diagnostics: &mut Diagnostics,
) {
    let placement = Placement {
        whole: Span::new(file, 0, 0),
        text: Some((sources.text(file), 0)),
    };
    match outcome {
        Ok(generated) => push_warnings(&generated.report, &placement, diagnostics),
        Err(errors) => push_errors(errors, &placement, diagnostics),
    }
}

/// Where a schema's diagnostics go: at the whole schema, or — when its
/// text is at hand — at the part a JSON pointer names.
pub(crate) struct Placement<'a> {
    /// The whole schema.
    pub whole: Span,
    /// The schema's JSON text and the offset of its first byte in `whole`'s file.
    pub text: Option<(&'a str, usize)>,
}

impl Placement<'_> {
    /// Diagnostics at `span`, without the text.
    pub(crate) fn at(whole: Span) -> Placement<'static> {
        Placement { whole, text: None }
    }

    /// Per list of `candidates`, the span of the first of its pointers
    /// found in the text and the label for it; the whole schema if none
    /// is. The text is read once per rank of candidate: a later one is
    /// looked for only where the ones before it were not found (a
    /// warning's keyword is found, and its schema, often large, is not
    /// read to its end: `service-schema.json`'s 4,600 warnings took 10 ms).
    fn place_each(&self, candidates: &[Vec<String>]) -> Vec<(Span, &'static str)> {
        let whole = (self.whole, "in this JSON Schema");
        // Nothing to place (a schema without warnings): the text is not read.
        let Some((text, start)) = self.text.filter(|_| !candidates.is_empty()) else {
            return vec![whole; candidates.len()];
        };
        let mut found: Vec<Option<std::ops::Range<usize>>> = vec![None; candidates.len()];
        for rank in 0.. {
            let open: Vec<usize> = (0..candidates.len())
                .filter(|&i| found[i].is_none() && candidates[i].len() > rank)
                .collect();
            if open.is_empty() {
                break;
            }
            let pointers: Vec<&str> = open.iter().map(|&i| candidates[i][rank].as_str()).collect();
            for (i, range) in open.into_iter().zip(locate::locate_all(text, &pointers)) {
                found[i] = range;
            }
        }
        found
            .into_iter()
            .map(|range| {
                range.map_or(whole, |range| {
                    let span = Span::new(self.whole.file, start + range.start, start + range.end);
                    (span, "here")
                })
            })
            .collect()
    }
}

/// The report's warnings as diagnostics, at the keyword's value where the
/// text is known.
pub(crate) fn push_warnings(report: &Report, at: &Placement, diagnostics: &mut Diagnostics) {
    // One warning per keyword, treatment and reason, at its first place: a
    // schema that uses an unknown keyword 3,000 times (`ignoreCase` in Azure
    // Pipelines' schema) says so once, not 3,000 times (each place placed in
    // the text was a tenth of that schema's compile time). The report keeps
    // every place.
    let mut groups: FxHashMap<(&str, Treatment, &str), usize> = FxHashMap::default();
    let mut firsts: Vec<(&Note, usize)> = Vec::new();
    for note in report.warnings() {
        let key = (note.keyword.as_str(), note.treatment, note.detail.as_str());
        match groups.get(&key) {
            Some(&group) => firsts[group].1 += 1,
            None => {
                groups.insert(key, firsts.len());
                firsts.push((note, 0));
            }
        }
    }
    let candidates: Vec<Vec<String>> = firsts
        .iter()
        .map(|(note, _)| {
            let keyword = pointer::pointer_to(&note.pointer, &note.keyword);
            vec![keyword, note.pointer.clone()]
        })
        .collect();
    for ((note, more), (span, label)) in firsts.iter().zip(at.place_each(&candidates)) {
        let elsewhere = match more {
            0 => String::new(),
            1 => " (and at 1 more place; the report lists it)".to_string(),
            n => format!(" (and at {n} more places; the report lists each)"),
        };
        diagnostics.push(Diagnostic::warning(
            "json-schema-approximated",
            format!(
                "`{}` at {} is {}: {}{elsewhere}",
                note.keyword, note.pointer, note.treatment, note.detail
            ),
            span,
            label,
        ));
    }
}

/// Schema errors as diagnostics, at the offending part where the text is
/// known.
pub(crate) fn push_errors(errors: &[SchemaError], at: &Placement, diagnostics: &mut Diagnostics) {
    let candidates: Vec<Vec<String>> = errors.iter().map(|e| vec![e.pointer.clone()]).collect();
    for (error, (span, label)) in errors.iter().zip(at.place_each(&candidates)) {
        diagnostics.push(Diagnostic::error(
            "json-schema",
            format!("{}: {}", error.pointer, error.message),
            span,
            label,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::Placement;
    use crate::source::{Sources, Span};

    /// Each list takes its first pointer that the text has; a later one is
    /// only read where the earlier ones are missing, and a list with none
    /// goes to the whole schema.
    #[test]
    fn each_list_of_pointers_is_placed_at_its_first_found() {
        let text = r#"{"properties": {"a": {"type": "string", "x-unknown": 17}}}"#;
        let mut sources = Sources::new();
        let file = sources.add("schema.json", text.to_string(), None);
        let whole = Span::new(file, 0, text.len());
        let placement = Placement {
            whole,
            text: Some((text, 0)),
        };
        let lists = |pointers: &[&[&str]]| -> Vec<Vec<String>> {
            let list = |p: &&[&str]| p.iter().map(ToString::to_string).collect();
            pointers.iter().map(list).collect()
        };
        let placed = placement.place_each(&lists(&[
            &["#/properties/a/x-unknown", "#/properties/a"],
            &["#/properties/a/minLength", "#/properties/a"],
            &["#/properties/b", "#/nothing"],
        ]));
        let shown: Vec<(&str, &str)> = placed
            .iter()
            .map(|(span, label)| (&text[span.start..span.end], *label))
            .collect();
        assert_eq!(
            shown,
            [
                ("17", "here"),
                (r#"{"type": "string", "x-unknown": 17}"#, "here"),
                (text, "in this JSON Schema"),
            ]
        );
    }

    /// A request's report, which notes no enforced keyword, holds exactly
    /// the warnings of the full report (in any order): a keyword enforced
    /// on one path and approximated on another, and warnings under schemas
    /// reused at several places (their copies) included.
    #[test]
    fn a_report_of_warnings_only_has_the_full_reports_warnings() {
        use super::{Kept, Options, WrittenNumbers, generate_shallow};
        let item = serde_json::json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "vendorHint": 1},
                "tags": {"type": "array", "uniqueItems": true},
            },
            "dependentRequired": {"tags": ["name"]},
        });
        let schemas = [
            serde_json::json!({"type": "object", "properties": {"a": item, "b": item, "c": item}}),
            // `format` enforced on the first branch, approximated (next to
            // a pattern) on the second: the full report notes it enforced,
            // then approximated in the same place.
            serde_json::json!({
                "allOf": [{"$ref": "#/definitions/s"}],
                "anyOf": [{"type": "string"}, {"pattern": "^2"}],
                "definitions": {"s": {"type": "string", "format": "date-time"}},
            }),
            serde_json::json!({
                "definitions": {"node": {"properties": {"next": {"$ref": "#/definitions/node"},
                                                       "at": {"format": "date-time", "x-note": 1}}}},
                "properties": {"first": {"$ref": "#/definitions/node"},
                               "second": {"$ref": "#/definitions/node"}},
                "patternProperties": {"^x": {"type": "integer"}},
            }),
        ];
        let budget = crate::Budget::unlimited();
        for schema in &schemas {
            let report = |kept| {
                let options = Options::default();
                let generated =
                    generate_shallow(schema, WrittenNumbers::default(), &options, &budget, kept)
                        .expect("the schema generates");
                generated.report
            };
            let sorted = |mut notes: Vec<super::Note>| {
                notes.sort_by(|a, b| (&a.pointer, &a.keyword).cmp(&(&b.pointer, &b.keyword)));
                notes
            };
            let full = report(Kept::Everything);
            let warnings = report(Kept::Warnings);
            let expected = sorted(full.warnings().cloned().collect());
            assert!(!expected.is_empty(), "{schema}");
            assert!(full.notes.len() > expected.len(), "{schema}");
            assert_eq!(sorted(warnings.notes), expected, "{schema}");
        }
    }
}
