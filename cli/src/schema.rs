//! `xg json-schema`: a JSON Schema as `.xg` text, or the report of what was
//! enforced, approximated and ignored; and the shared loading of schema
//! files for every command that takes a grammar.

use std::path::Path;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use xg_compiler::json_schema::{self, Options, PropertyOrder, Whitespace};
use xg_compiler::{Budget, CompileCache, Limits, Request, pipeline};

/// The options of the JSON Schema front end, as flags.
#[derive(Args, Clone)]
pub struct SchemaFlags {
    /// Whitespace between tokens: none, any JSON whitespace, or
    /// pretty-printed (one item per line, indented).
    #[arg(long, value_enum, default_value_t = Layout::Flexible)]
    whitespace: Layout,
    /// With flexible whitespace, the longest run allowed (`unbounded` for
    /// none: a model may then loop on whitespace to its token limit).
    #[arg(long, value_name = "N|unbounded", default_value = "32", value_parser = max_run)]
    max_whitespace: MaxRun,
    /// With pretty whitespace, the spaces per level.
    #[arg(long, value_name = "N", default_value_t = 2)]
    indent: u32,
    /// Between array items and object members.
    #[arg(long, default_value = ",")]
    item_separator: String,
    /// Between a key and its value [default: `:`, or `: ` when pretty].
    #[arg(long)]
    key_separator: Option<String>,
    /// Properties in any order (required ones still required, none twice)
    /// instead of the schema's order.
    #[arg(long)]
    any_order: bool,
    /// Objects that list `properties` allow no others unless the schema
    /// says so (OpenAI's strict structured outputs).
    #[arg(long)]
    no_additional_properties: bool,
    /// Unknown keywords and keywords that can only be approximated are
    /// errors.
    #[arg(long)]
    strict: bool,
    /// Longest the compilation may take, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    time_limit_ms: u64,
    /// Most memory the compilation's rules and automata may take, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = (xg_compiler::budget::DEFAULT_MEMORY_LIMIT >> 20) as u64)]
    memory_limit_mib: u64,
}

/// The longest whitespace run flexible JSON allows; `None` is unbounded.
#[derive(Clone, Copy)]
struct MaxRun(Option<u32>);

fn max_run(text: &str) -> Result<MaxRun, String> {
    match text {
        "unbounded" => Ok(MaxRun(None)),
        _ => text
            .parse()
            .map(|n| MaxRun(Some(n)))
            .map_err(|_| format!("`{text}` is neither a number nor `unbounded`")),
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum Layout {
    /// No whitespace at all.
    Compact,
    /// Any JSON whitespace around punctuation.
    Flexible,
    /// As `json.dumps(value, indent=N)` writes it.
    Pretty,
}

impl SchemaFlags {
    fn options(&self) -> Options {
        Options {
            whitespace: match self.whitespace {
                Layout::Compact => Whitespace::Compact,
                Layout::Flexible => Whitespace::Flexible {
                    max: self.max_whitespace.0,
                },
                Layout::Pretty => Whitespace::Pretty {
                    indent: self.indent,
                },
            },
            item_separator: self.item_separator.clone(),
            key_separator: self.key_separator.clone().unwrap_or_else(|| {
                match self.whitespace {
                    Layout::Pretty => ": ",
                    Layout::Compact | Layout::Flexible => ":",
                }
                .to_string()
            }),
            strict: self.strict,
            property_order: if self.any_order {
                PropertyOrder::Any
            } else {
                PropertyOrder::Given
            },
            additional_properties: !self.no_additional_properties,
            plain_integers: false,
            literals: xg_compiler::json_schema::Literals::Json,
        }
    }

    fn limits(&self) -> Limits {
        Limits {
            time: Some(std::time::Duration::from_millis(self.time_limit_ms)),
            memory: usize::try_from(self.memory_limit_mib)
                .ok()
                .and_then(|mib| mib.checked_mul(1 << 20)),
            ..Limits::default()
        }
    }
}

/// Reads and parses a schema file into the request's sources; a JSON
/// syntax error is a diagnostic at its line and column.
fn load(
    path: &Path,
    request: &mut Request,
) -> Result<Option<(xg_compiler::FileId, serde_json::Value)>> {
    let file = request
        .sources
        .load(path, &mut request.diagnostics)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    let schema = request.parse_json(file, &format!("`{}`", path.display()));
    Ok(schema.map(|schema| (file, schema)))
}

/// The front end on the JSON file `path` — a JSON Schema, or a structural
/// tag when its `type` is `structural_tag` — added to the request, within
/// the limits `flags` set, its diagnostics (at their places in the file)
/// the request's: the checked tree, or `None` if it does not compile. The
/// request's vocabulary resolves a tag's tokens given by text.
pub fn check_json(
    path: &Path,
    flags: &SchemaFlags,
    request: &mut Request,
) -> Result<Option<xg_compiler::tree::Grammar>> {
    request.budget = Budget::new(flags.limits());
    let Some((file, value)) = load(path, request)? else {
        return Ok(None);
    };
    if crate::load::is_structural_tag(&value) {
        return Ok(xg_compiler::structural_tag::check(request, &value, file));
    }
    Ok(json_schema::check(request, &value, file, &flags.options()))
}

/// The `.xg` text of the JSON Schema in `path` (what `xg fmt` prints for
/// one), or `None` with its diagnostics in `diagnostics`.
pub fn xg_text(path: &Path, flags: &SchemaFlags, request: &mut Request) -> Result<Option<String>> {
    let Some((file, schema)) = load(path, request)? else {
        return Ok(None);
    };
    if crate::load::is_structural_tag(&schema) {
        anyhow::bail!(
            "`{}` is a structural tag: `xg fmt` prints JSON Schemas and `.xg` grammars as `.xg` text",
            path.display()
        );
    }
    let outcome = json_schema::generate_from_text(
        &schema,
        request.sources.text(file),
        &flags.options(),
        &Budget::new(flags.limits()),
    );
    json_schema::diagnose(&outcome, &request.sources, file, &mut request.diagnostics);
    Ok(outcome.ok().map(|generated| generated.to_xg()))
}

/// The schema in `path` compiled with properties in any order, when the
/// flags ask for the schema's order; `None` otherwise or if it does not
/// compile (nothing is printed). `xg match` tries it when an output is
/// refused, to say whether the properties' order was the reason.
pub fn any_order_variant(path: &Path, flags: &SchemaFlags) -> Option<xg_runtime::Grammar> {
    if flags.any_order {
        return None;
    }
    let flags = SchemaFlags {
        any_order: true,
        ..flags.clone()
    };
    let (mut request, file, schema) = quiet_schema(path, &flags)?;
    pipeline::json_schema(&mut request, &schema, file, &flags.options())
}

/// A compilation within the limits `flags` set.
fn request(flags: &SchemaFlags) -> Request {
    Request::new(&flags.limits(), &CompileCache::default())
}

/// The JSON Schema in `path` and its place in a new request with `flags`'
/// limits, if the file holds one (not a structural tag); nothing is
/// printed.
fn quiet_schema(
    path: &Path,
    flags: &SchemaFlags,
) -> Option<(Request, xg_compiler::FileId, serde_json::Value)> {
    let mut request = request(flags);
    let (file, schema) = load(path, &mut request).ok()??;
    (!crate::load::is_structural_tag(&schema)).then_some((request, file, schema))
}

/// Where in the schema of `path` a refusal comes from, as `the schema at
/// POINTER refuses it: {keywords}` — the subschema's constraints, its
/// annotations left out. The place is the deeper of two: the first of the
/// `rules` (innermost first, as a rejection lists them) made for a schema
/// of its own, and the schema of the value the refused byte is in, found
/// by following the instance written so far (`written`) through the
/// schema's `properties`, `items` and local `$ref`s (rules small enough to
/// be inlined name no place). After a complete string, object or array the
/// place is its container, and `the schema at POINTER requires `age`, not
/// written yet` names the container's required members not written. `None`
/// if the file is not a schema or neither finds a place.
pub fn refusal_place(
    path: &Path,
    flags: &SchemaFlags,
    rules: &[String],
    written: &[u8],
) -> Option<String> {
    let (request, file, schema) = quiet_schema(path, flags)?;
    let generated = json_schema::generate_from_text(
        &schema,
        request.sources.text(file),
        &flags.options(),
        &Budget::new(flags.limits()),
    )
    .ok()?;
    let place = instance_path(written);
    // An empty path is the root: named only as a container.
    let by_value = value_schema(&schema, &place.path)
        .or_else(|| (place.after_value && place.path.is_empty()).then(|| "#".to_string()));
    // After a complete value, what refuses the next byte is its container
    // (a required member missing, no more items), not the value's rules.
    let by_rule = if place.after_value {
        None
    } else {
        rules.iter().find_map(|rule| generated.origin(rule))
    };
    let pointer = match (by_rule, by_value.as_deref()) {
        (Some(rule), Some(value)) if value.len() > rule.len() => value.to_string(),
        (Some(rule), _) => rule.to_string(),
        (None, value) => value?.to_string(),
    };
    let mut shown = schema.pointer(pointer.trim_start_matches('#'))?.clone();
    let missing: Vec<&str> = if place.after_value {
        let required = shown.get("required").and_then(serde_json::Value::as_array);
        required
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_str)
            .filter(|name| !place.keys.iter().any(|key| key == name))
            .collect()
    } else {
        Vec::new()
    };
    let refusal = match missing.as_slice() {
        [] => "refuses it".to_string(),
        names => format!(
            "requires {}, not written yet",
            names
                .iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    if let Some(object) = shown.as_object_mut() {
        for annotation in [
            "description",
            "title",
            "examples",
            "default",
            "$comment",
            "deprecated",
            "readOnly",
            "writeOnly",
        ] {
            object.remove(annotation);
        }
    }
    let mut shown = shown.to_string();
    if shown.chars().count() > 160 {
        shown = shown.chars().take(157).collect::<String>() + "...";
    }
    Some(format!("the schema at `{pointer}` {refusal}: {shown}"))
}

/// Compiles the schema in `path` into a runtime grammar, printing its
/// diagnostics (errors, and the report's warnings).
pub fn compile(path: &Path, flags: &SchemaFlags, color: bool) -> Result<xg_runtime::Grammar> {
    let mut request = request(flags);
    let grammar = load(path, &mut request)?.and_then(|(file, schema)| {
        pipeline::json_schema(&mut request, &schema, file, &flags.options())
    });
    eprint!("{}", request.diagnostics.render(&request.sources, color));
    grammar.with_context(|| format!("`{}` does not compile", path.display()))
}

/// `xg json-schema`: prints the grammar (or, with `report`, the report);
/// true if the schema compiled.
pub fn json_schema(path: &Path, flags: &SchemaFlags, report: bool, color: bool) -> Result<bool> {
    let mut request = request(flags);
    let Some((file, schema)) = load(path, &mut request)? else {
        eprint!("{}", request.diagnostics.render(&request.sources, color));
        return Ok(false);
    };
    let Request {
        sources,
        mut diagnostics,
        budget,
        ..
    } = request;
    let outcome =
        json_schema::generate_from_text(&schema, sources.text(file), &flags.options(), &budget);
    json_schema::diagnose(&outcome, &sources, file, &mut diagnostics);
    eprint!("{}", diagnostics.render(&sources, color));
    let Ok(generated) = outcome else {
        return Ok(false);
    };
    if report {
        outln!("{:<14} {:<24} pointer / detail", "treatment", "keyword");
        for note in &generated.report.notes {
            outln!(
                "{:<14} {:<24} {}{}",
                note.treatment.to_string(),
                note.keyword,
                note.pointer,
                if note.detail.is_empty() {
                    String::new()
                } else {
                    format!(" — {}", note.detail)
                }
            );
        }
    } else {
        out!("{}", generated.to_xg());
    }
    Ok(true)
}

/// One step into a JSON value: a member's key or an item's index.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// Where a prefix of a JSON text ends: the path of the value it ends
/// inside, or of the container whose last value it completed.
#[derive(Debug, Default, PartialEq, Eq)]
struct Place {
    /// The keys and indices of the containers open at the end, down to the
    /// value it ends inside.
    path: Vec<Step>,
    /// Whether the text ends after a complete string, object or array in
    /// the innermost container (`path` then leads to the container).
    after_value: bool,
    /// The keys of the innermost object, if it is one, written so far.
    keys: Vec<String>,
}

/// A container open in a prefix of a JSON text.
enum Open {
    Object {
        /// The key of the current member, once written.
        key: Option<String>,
        /// Whether the current member's value has started.
        in_value: bool,
        /// Whether that value is a complete string, object or array.
        done: bool,
        /// Every key written in the object.
        keys: Vec<String>,
    },
    Array {
        index: usize,
        /// Whether the current item is a complete string, object or array.
        done: bool,
    },
}

impl Open {
    /// The step to its current value, unless it is not one yet or
    /// `complete` values count as the container's.
    fn step(&self, complete: bool) -> Option<Step> {
        match self {
            Open::Object { done: true, .. } | Open::Array { done: true, .. } if complete => None,
            Open::Object {
                key: Some(key),
                in_value: true,
                ..
            } => Some(Step::Key(key.clone())),
            Open::Object { .. } => None,
            Open::Array { index, .. } => Some(Step::Index(*index)),
        }
    }

    /// Its current value is complete.
    fn complete(&mut self) {
        if let Open::Object {
            in_value: true,
            done,
            ..
        }
        | Open::Array { done, .. } = self
        {
            *done = true;
        }
    }

    /// A `,`: on to the next member or item.
    fn next(&mut self) {
        match self {
            Open::Object {
                key,
                in_value,
                done,
                ..
            } => {
                *key = None;
                *in_value = false;
                *done = false;
            }
            Open::Array { index, done } => {
                *index += 1;
                *done = false;
            }
        }
    }
}

/// The string that starts after a `"` in `chars`, unescaped, and whether
/// it is closed.
fn read_string(chars: &mut impl Iterator<Item = char>) -> (String, bool) {
    let mut string = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => return (string, true),
            '\\' => string.extend(chars.next()),
            c => string.push(c),
        }
    }
    (string, false)
}

/// The [`Place`] where `written`, a prefix of a JSON text, ends.
fn instance_path(written: &[u8]) -> Place {
    let text = String::from_utf8_lossy(written);
    let mut open: Vec<Open> = Vec::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '{' => open.push(Open::Object {
                key: None,
                in_value: false,
                done: false,
                keys: Vec::new(),
            }),
            '[' => open.push(Open::Array {
                index: 0,
                done: false,
            }),
            '}' | ']' => {
                open.pop();
                if let Some(container) = open.last_mut() {
                    container.complete();
                }
            }
            ',' => {
                if let Some(container) = open.last_mut() {
                    container.next();
                }
            }
            ':' => {
                if let Some(Open::Object { in_value, .. }) = open.last_mut() {
                    *in_value = true;
                }
            }
            '"' => {
                let (string, closed) = read_string(&mut chars);
                match open.last_mut() {
                    Some(Open::Object {
                        key,
                        in_value: false,
                        keys,
                        ..
                    }) => {
                        keys.push(string.clone());
                        *key = Some(string);
                    }
                    Some(container) if closed => container.complete(),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let after_value = matches!(
        open.last(),
        Some(Open::Object { done: true, .. } | Open::Array { done: true, .. })
    );
    let keys = match open.last() {
        Some(Open::Object { keys, .. }) => keys.clone(),
        _ => Vec::new(),
    };
    let last = open.len().saturating_sub(1);
    let path = (open.iter().enumerate())
        .filter_map(|(depth, container)| container.step(depth == last))
        .collect();
    Place {
        path,
        after_value,
        keys,
    }
}

/// The JSON pointer of the subschema of `schema` that the value at `path`
/// is checked against, as far as `properties`, `additionalProperties`,
/// `prefixItems`/`items` and local `$ref`s lead; `None` if not past the
/// root.
fn value_schema(schema: &serde_json::Value, path: &[Step]) -> Option<String> {
    let follow = |mut pointer: String| {
        // Local references, a few deep at most (a cycle stops there).
        for _ in 0..8 {
            let here = schema.pointer(pointer.trim_start_matches('#'))?;
            match here.get("$ref").and_then(serde_json::Value::as_str) {
                Some(target) if target.starts_with('#') => pointer = target.to_string(),
                _ => return Some(pointer),
            }
        }
        Some(pointer)
    };
    let escape = |key: &str| key.replace('~', "~0").replace('/', "~1");
    let mut pointer = follow("#".to_string())?;
    let mut moved = false;
    for step in path {
        let here = schema.pointer(pointer.trim_start_matches('#'))?;
        let next = match step {
            Step::Key(key) => {
                if here.get("properties").and_then(|p| p.get(key)).is_some() {
                    format!("{pointer}/properties/{}", escape(key))
                } else if here
                    .get("additionalProperties")
                    .is_some_and(serde_json::Value::is_object)
                {
                    format!("{pointer}/additionalProperties")
                } else {
                    break;
                }
            }
            Step::Index(index) => {
                if here
                    .get("prefixItems")
                    .and_then(|p| p.get(*index))
                    .is_some()
                {
                    format!("{pointer}/prefixItems/{index}")
                } else if here.get("items").is_some_and(serde_json::Value::is_object) {
                    format!("{pointer}/items")
                } else if here.get("items").and_then(|p| p.get(*index)).is_some() {
                    format!("{pointer}/items/{index}")
                } else {
                    break;
                }
            }
        };
        pointer = follow(next)?;
        moved = true;
    }
    moved.then_some(pointer)
}
