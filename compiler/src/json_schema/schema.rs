//! Reading schemas: JSON pointers and `$ref`s, and the merge of a
//! conjunction of subschemas (a schema, its `$ref`, its `allOf` members and
//! the `anyOf` branches chosen so far) into one [`Node`] of constraints.

use std::cell::{OnceCell, RefCell};
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use rustc_hash::FxHashMap;
use serde_json::{Map, Value};

use super::notes::Notes;
use super::numbers::{Bound, Decimal};
use super::pointer::{pointer_to, pointer_to_index, unescape};

/// JSON types as bits.
pub(crate) mod types {
    /// `null`
    pub(crate) const NULL: u8 = 1;
    /// `true` / `false`
    pub(crate) const BOOLEAN: u8 = 2;
    /// Whole numbers.
    pub(crate) const INTEGER: u8 = 4;
    /// Numbers with a fraction (with `INTEGER`: every number).
    pub(crate) const FRACTION: u8 = 8;
    /// Strings.
    pub(crate) const STRING: u8 = 16;
    /// Arrays.
    pub(crate) const ARRAY: u8 = 32;
    /// Objects.
    pub(crate) const OBJECT: u8 = 64;
    /// Every type.
    pub(crate) const ALL: u8 = 127;

    /// The bits of type name `name`.
    pub(crate) fn of(name: &str) -> Option<u8> {
        Some(match name {
            "null" => NULL,
            "boolean" => BOOLEAN,
            "integer" => INTEGER,
            "number" => INTEGER | FRACTION,
            "string" => STRING,
            "array" => ARRAY,
            "object" => OBJECT,
            _ => return None,
        })
    }
}

/// `additionalProperties` / `items` beyond a tuple: what else may appear.
#[derive(Clone, Debug, PartialEq, Hash)]
pub(crate) enum Others {
    /// The keyword is absent.
    Unsaid,
    /// `true` / `{}`: anything.
    Any,
    /// `false`: nothing else.
    None,
    /// A schema, by pointer.
    Schema(String),
}

/// The object keywords of one schema object of the conjunction.
#[derive(Clone, Debug, PartialEq, Hash)]
pub(crate) struct ObjectPart {
    /// The schema object.
    pub(crate) pointer: String,
    /// `properties`: name → pointer.
    pub(crate) properties: Vec<(String, String)>,
    /// `patternProperties`: pattern → pointer.
    pub(crate) patterns: Vec<(String, String)>,
    /// `additionalProperties`.
    pub(crate) additional: Others,
}

/// The array keywords of one schema object of the conjunction.
#[derive(Clone, Debug, PartialEq, Hash)]
pub(crate) struct ArrayPart {
    /// `prefixItems` or draft-4 tuple `items`: pointers by position.
    pub(crate) prefix: Vec<String>,
    /// `items` (after a prefix: `additionalItems` in the tuple form).
    pub(crate) rest: Others,
}

/// One `anyOf` / `oneOf` / `if` group: its branches, each a conjunction.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Choice {
    /// The schema object that has it.
    pub(crate) pointer: String,
    /// The keyword (`anyOf`, `oneOf`, `if`).
    pub(crate) keyword: &'static str,
    /// Each branch's pointers.
    pub(crate) branches: Vec<Vec<String>>,
}

/// The merged constraints of a conjunction of subschemas.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    /// A `false` schema or a contradiction: no value.
    pub(crate) nothing: bool,
    /// Allowed types ([`types`] bits).
    pub(crate) types: u8,
    /// `enum` / `const`: the allowed values (intersected), with a pointer.
    pub(crate) values: Option<(Vec<Value>, String)>,
    /// `minLength` (largest).
    pub(crate) min_length: u64,
    /// `maxLength` (smallest).
    pub(crate) max_length: Option<u64>,
    /// Where each `minLength` and `maxLength` is, by keyword: what to
    /// report when a pattern or format leaves them unenforced.
    pub(crate) length_keywords: Vec<(&'static str, String)>,
    /// `pattern`s with their pointers.
    pub(crate) patterns: Vec<(String, String)>,
    /// `format`s with their pointers.
    pub(crate) formats: Vec<(String, String)>,
    /// Lower bound (tightest).
    pub(crate) lower: Option<Bound>,
    /// Upper bound (tightest).
    pub(crate) upper: Option<Bound>,
    /// `multipleOf`s with their pointers.
    pub(crate) multiple_of: Vec<(Decimal, String)>,
    /// Object keywords per schema object.
    pub(crate) objects: Vec<ObjectPart>,
    /// `required` (union).
    pub(crate) required: Vec<String>,
    /// `propertyNames` pointers.
    pub(crate) property_names: Vec<String>,
    /// `minProperties` (largest), with pointer.
    pub(crate) min_properties: Option<(u64, String)>,
    /// `maxProperties` (smallest), with pointer.
    pub(crate) max_properties: Option<(u64, String)>,
    /// Array keywords per schema object.
    pub(crate) arrays: Vec<ArrayPart>,
    /// `minItems` (largest).
    pub(crate) min_items: u64,
    /// `maxItems` (smallest).
    pub(crate) max_items: Option<u64>,
    /// `uniqueItems: true`, with pointer.
    pub(crate) unique_items: Option<String>,
    /// `contains` pointers.
    pub(crate) contains: Vec<String>,
    /// `anyOf` / `oneOf` / `if` groups not yet chosen.
    pub(crate) choices: Vec<Choice>,
    /// `not` pointers.
    pub(crate) nots: Vec<String>,
    /// Properties that must not appear (`not: {required: [name]}`).
    pub(crate) forbidden: Vec<String>,
}

impl Default for Node {
    fn default() -> Self {
        Self {
            nothing: false,
            types: types::ALL,
            values: None,
            min_length: 0,
            max_length: None,
            length_keywords: Vec::new(),
            patterns: Vec::new(),
            formats: Vec::new(),
            lower: None,
            upper: None,
            multiple_of: Vec::new(),
            objects: Vec::new(),
            required: Vec::new(),
            property_names: Vec::new(),
            min_properties: None,
            max_properties: None,
            arrays: Vec::new(),
            min_items: 0,
            max_items: None,
            unique_items: None,
            contains: Vec::new(),
            choices: Vec::new(),
            nots: Vec::new(),
            forbidden: Vec::new(),
        }
    }
}

impl Node {
    /// A hash of the constraints, for finding equal nodes without choices
    /// (`Emitter::shared_body`): every field but the
    /// choices, the values of `enum`/`const` (their count and pointer stand
    /// for them) and the numbers (bounds, `multipleOf`), which
    /// [`PartialEq`] compares.
    pub(crate) fn fingerprint(&self) -> u64 {
        let mut hasher = rustc_hash::FxHasher::default();
        (self.nothing, self.types, self.min_length, self.max_length).hash(&mut hasher);
        let values = self.values.as_ref().map(|(values, at)| (values.len(), at));
        (values, &self.patterns, &self.formats, &self.objects).hash(&mut hasher);
        (&self.required, &self.property_names, &self.min_properties).hash(&mut hasher);
        (
            &self.max_properties,
            &self.arrays,
            self.min_items,
            self.max_items,
        )
            .hash(&mut hasher);
        (
            &self.unique_items,
            &self.contains,
            &self.nots,
            &self.forbidden,
        )
            .hash(&mut hasher);
        hasher.finish()
    }
}

/// Keywords that only annotate: ignored without a warning.
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "id",
    "$anchor",
    "$dynamicAnchor",
    "$recursiveAnchor",
    "$comment",
    "$defs",
    "definitions",
    "$vocabulary",
    "title",
    "description",
    "default",
    "examples",
    "example",
    "readOnly",
    "writeOnly",
    "deprecated",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
    "discriminator",
    "xml",
    "externalDocs",
    "markdownDescription",
    "errorMessage",
];

/// Keywords xg knows but can only over-approximate (not enforced at all).
const UNENFORCED: &[&str] = &[
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
    "$recursiveRef",
    "minContains",
    "maxContains",
];

/// Where each `$anchor` / fragment `$id` points.
pub(crate) fn anchors(root: &Value) -> HashMap<String, String> {
    /// Keywords whose values are data, not schemas (an `$anchor` inside an
    /// `enum` value declares nothing).
    const DATA: &[&str] = &["enum", "const", "default", "examples"];
    /// Keywords whose values map names to schemas (a property may be called
    /// `enum`).
    const NAMED: &[&str] = &[
        "properties",
        "patternProperties",
        "$defs",
        "definitions",
        "dependentSchemas",
    ];
    /// `out`: anchor → (how many embedded resources deep, pointer); the
    /// shallowest declaration wins, so the root resource's anchors come
    /// first.
    fn walk(value: &Value, pointer: &str, depth: usize, out: &mut Anchors) {
        let mut declare = |name: &str, depth: usize| {
            let known = out.get(name).is_some_and(|&(d, _)| d <= depth);
            if !known {
                out.insert(name.to_string(), (depth, pointer.to_string()));
            }
        };
        match value {
            Value::Object(map) => {
                let embedded = ["$id", "id"].iter().any(|key| {
                    map.get(*key)
                        .and_then(Value::as_str)
                        .is_some_and(|id| !id.starts_with('#'))
                });
                let depth = depth + usize::from(embedded && !pointer.is_empty());
                for key in ["$anchor", "$dynamicAnchor"] {
                    if let Some(Value::String(anchor)) = map.get(key) {
                        declare(anchor, depth);
                    }
                }
                for key in ["$id", "id"] {
                    if let Some(Value::String(id)) = map.get(key)
                        && let Some(fragment) = id.strip_prefix('#')
                        && !fragment.is_empty()
                    {
                        declare(fragment, depth);
                    }
                }
                for (key, child) in map {
                    let at = pointer_to(pointer, key);
                    if DATA.contains(&key.as_str()) {
                        continue;
                    }
                    match child {
                        Value::Object(named) if NAMED.contains(&key.as_str()) => {
                            for (name, schema) in named {
                                walk(schema, &pointer_to(&at, name), depth, out);
                            }
                        }
                        _ => walk(child, &at, depth, out),
                    }
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    walk(child, &pointer_to_index(pointer, i), depth, out);
                }
            }
            _ => {}
        }
    }
    type Anchors = HashMap<String, (usize, String)>;
    let mut out = Anchors::new();
    walk(root, "", 0, &mut out);
    out.into_iter().map(|(name, (_, at))| (name, at)).collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len() + 1
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `pointer` names a branch of a choice (`anyOf`, `oneOf`, `if`).
fn is_branch(pointer: &str) -> bool {
    let mut parts = pointer.rsplit('/');
    let last = parts.next().unwrap_or_default();
    let before = parts.next().unwrap_or_default();
    let named = matches!(
        before,
        "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas"
    );
    (matches!(last, "if" | "then" | "else") && !named) || matches!(before, "anyOf" | "oneOf")
}

/// A step of [`Reader::collect`]: a subschema to merge, or the rest of
/// one whose merging stopped to merge the subschemas it names first.
enum Merge {
    Schema(String),
    Rest { pointer: String, from: usize },
}

/// One schema document as the emitter reads it: subschemas by pointer,
/// `$ref`s followed, conjunctions merged into [`Node`]s. What it makes of
/// each keyword goes into the [`Notes`] it is given.
pub(crate) struct Reader<'a> {
    pub(crate) doc: &'a Value,
    /// Draft-07 or earlier: keywords next to `$ref` are ignored.
    legacy_ref: bool,
    /// The root's `$id`, so absolute `$ref`s into the same document resolve.
    root_id: Option<String>,
    /// Each anchor's pointer, read (a walk of the whole schema) when a
    /// `$ref` first names one.
    anchors: OnceCell<HashMap<String, String>>,
    /// The schema at each pointer looked up so far.
    found: RefCell<FxHashMap<Box<str>, Option<&'a Value>>>,
    /// The schema's numbers as its text writes them, by pointer (empty
    /// without the text): bounds are read from them, not from doubles.
    written_numbers: HashMap<String, String>,
}

impl<'a> Reader<'a> {
    /// A reader of `doc`, whose numbers as its text writes them are
    /// `written_numbers` (by pointer).
    pub(crate) fn new(doc: &'a Value, written_numbers: HashMap<String, String>) -> Self {
        let draft = doc.get("$schema").and_then(Value::as_str).unwrap_or("");
        let legacy_ref = ["draft-03", "draft-04", "draft-06", "draft-07"]
            .iter()
            .any(|d| draft.contains(d));
        let root_id = ["$id", "id"]
            .iter()
            .find_map(|k| doc.get(*k).and_then(Value::as_str))
            .map(str::to_string);
        Self {
            doc,
            legacy_ref,
            root_id,
            anchors: OnceCell::new(),
            found: RefCell::default(),
            written_numbers,
        }
    }

    /// Each anchor the schema declares, and the pointer of its schema.
    fn anchors(&self) -> &HashMap<String, String> {
        self.anchors.get_or_init(|| anchors(self.doc))
    }

    /// The schema at `pointer`. A schema is looked up several times (as a
    /// child, for its content, to merge it), and each level of a walk
    /// hashes its name again: the answers are kept.
    pub(crate) fn lookup(&self, pointer: &str) -> Option<&'a Value> {
        if let Some(&found) = self.found.borrow().get(pointer) {
            return found;
        }
        let found = self.walk_to(pointer);
        self.found.borrow_mut().insert(pointer.into(), found);
        found
    }

    /// The schema at `pointer`, walked to from the root.
    fn walk_to(&self, pointer: &str) -> Option<&'a Value> {
        let mut value = self.doc;
        for token in pointer.split('/').skip(1) {
            let token = unescape(token);
            value = match value {
                Value::Object(map) => map.get(token.as_ref())?,
                Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(value)
    }

    /// The pointer a `$ref` at `from` names, or why it cannot be followed.
    fn resolve_ref(&self, reference: &str) -> Result<String, String> {
        let local = match reference.split_once('#') {
            Some((document, fragment)) => {
                let same = document.is_empty()
                    || self
                        .root_id
                        .as_deref()
                        .is_some_and(|id| id.trim_end_matches('#') == document);
                if !same {
                    return Err(format!(
                        "`$ref` to another document (`{reference}`) is not supported; inline it under `$defs`"
                    ));
                }
                fragment
            }
            None if reference.is_empty() => "",
            None => {
                return Err(format!(
                    "`$ref` to another document (`{reference}`) is not supported; inline it under `$defs`"
                ));
            }
        };
        let local = percent_decode(local);
        if local.is_empty() || local.starts_with('/') {
            if self.lookup(&local).is_none() {
                return Err(format!("`$ref` target `#{local}` does not exist"));
            }
            return Ok(local);
        }
        self.anchors()
            .get(&local)
            .cloned()
            .ok_or_else(|| format!("`$ref` names anchor `#{local}`, which no schema declares"))
    }

    /// Merges the conjunction `key` into one node. Subschemas merge where
    /// they are named (`$ref`, `allOf`, a chosen branch), keyword by
    /// keyword in document order, so that properties keep the order a
    /// reader of the schema sees; without recursion (a chain of `$ref`s is
    /// as long as the schema).
    pub(crate) fn collect(&self, notes: &mut Notes, key: &[String]) -> Node {
        let mut node = Node::default();
        // The branches `key` chose merge where their choice is met; the
        // rest first (a key is sorted, and a branch's pointer may sort
        // before the schema that makes the choice).
        let (branches, bases): (Vec<&String>, Vec<&String>) =
            key.iter().partition(|pointer| is_branch(pointer));
        let mut work: Vec<Merge> = bases
            .into_iter()
            .chain(branches)
            .rev()
            .cloned()
            .map(Merge::Schema)
            .collect();
        let mut seen: HashSet<String> = HashSet::new();
        // Schemas whose merging waits for subschemas they name (a `Rest`
        // on `work`), and how many times: one of them named again is a
        // cycle of merges.
        let mut open: HashMap<String, usize> = HashMap::new();
        // Whether a keyword other than `$ref` and `allOf` applied, and the
        // first schema a cycle of merges came back to.
        let mut asserted = false;
        let mut cycle: Option<String> = None;
        while let Some(next) = work.pop() {
            let (pointer, from) = match next {
                Merge::Schema(pointer) => {
                    if !seen.insert(pointer.clone()) {
                        if cycle.is_none() && open.get(&pointer).is_some_and(|&n| n > 0) {
                            cycle = Some(pointer);
                        }
                        continue;
                    }
                    (pointer, 0)
                }
                Merge::Rest { pointer, from } => {
                    if let Some(n) = open.get_mut(&pointer) {
                        *n -= 1;
                    }
                    (pointer, from)
                }
            };
            let Some(value) = self.lookup(&pointer) else {
                notes.error(&pointer, "this schema does not exist".to_string());
                node.nothing = true;
                continue;
            };
            match value {
                Value::Bool(true) => {}
                Value::Bool(false) => node.nothing = true,
                Value::Object(map) => {
                    let stop = self.apply(notes, &mut node, &pointer, map, key, from);
                    let merged_to = stop.as_ref().map_or(map.len(), |(next, _)| *next);
                    asserted |= map
                        .keys()
                        .take(merged_to)
                        .skip(from)
                        .any(|k| !matches!(k.as_str(), "$ref" | "allOf") && !is_annotation(k));
                    if let Some((next, inner)) = stop {
                        *open.entry(pointer.clone()).or_default() += 1;
                        work.push(Merge::Rest {
                            pointer,
                            from: next,
                        });
                        work.extend(inner.into_iter().rev().map(Merge::Schema));
                    }
                }
                _ => {
                    notes.error(
                        &pointer,
                        "a schema must be an object or a boolean".to_string(),
                    );
                    node.nothing = true;
                }
            }
        }
        // `{"$ref": "#"}`: a schema that is only itself says nothing a
        // validator could finish checking; not "any value".
        if let Some(pointer) = cycle
            && !asserted
            && !node.nothing
        {
            notes.error(
                &pointer,
                "this schema leads back to itself through `$ref`/`allOf` alone, with no \
                 keyword that constrains a value: it defines nothing"
                    .to_string(),
            );
            node.nothing = true;
        }
        node
    }

    /// Adds the keywords of the schema object `map` at `pointer` to `node`,
    /// from the `from`th on. At the first keyword that names subschemas to
    /// merge, stops and returns the index of the keyword after it and the
    /// subschemas: they merge before the rest of `map`.
    fn apply(
        &self,
        notes: &mut Notes,
        node: &mut Node,
        pointer: &str,
        map: &Map<String, Value>,
        key: &[String],
        from: usize,
    ) -> Option<(usize, Vec<String>)> {
        let mut inner: Vec<String> = Vec::new();
        if from == 0
            && self.legacy_ref
            && let Some(reference) = map.get("$ref")
        {
            self.reference(notes, pointer, reference, &mut inner);
            for keyword in map.keys().filter(|k| *k != "$ref" && !is_annotation(k)) {
                notes.note(
                    pointer,
                    keyword,
                    super::Treatment::Ignored,
                    "next to `$ref`, which draft-07 and earlier ignore",
                );
            }
            return Some((map.len(), inner));
        }
        for (index, (keyword, value)) in map.iter().enumerate().skip(from) {
            // Made only where a keyword needs it: most keywords of a large
            // schema are annotations.
            let at = || pointer_to(pointer, keyword);
            match keyword.as_str() {
                "type" => {
                    let mut bits = Self::types(notes, pointer, value);
                    if map.get("nullable").and_then(Value::as_bool) == Some(true) {
                        bits |= types::NULL;
                    }
                    node.types &= bits;
                }
                "$ref" => self.reference(notes, pointer, value, &mut inner),
                "enum" | "const" => Self::values(notes, node, pointer, &at(), keyword, value),
                "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
                | "maxProperties" => Self::size(notes, node, pointer, keyword, value),
                "pattern" => match value.as_str() {
                    Some(p) => node.patterns.push((p.to_string(), pointer.to_string())),
                    None => notes.error(&at(), "`pattern` must be a string".into()),
                },
                "format" => match value.as_str() {
                    Some(f) => node.formats.push((f.to_string(), pointer.to_string())),
                    None => notes.error(&at(), "`format` must be a string".into()),
                },
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => {
                    self.bound(notes, node, pointer, map, keyword, value);
                }
                "multipleOf" => match value
                    .as_number()
                    .and_then(|n| Decimal::parse(&self.written(&at(), n)))
                {
                    Some(d) if !d.negative && (d.integer > 0 || !d.fraction.is_empty()) => {
                        node.multiple_of.push((d, pointer.to_string()));
                    }
                    _ => notes.error(&at(), "`multipleOf` must be a positive number".into()),
                },
                "properties" | "patternProperties" | "additionalProperties" => {
                    Self::object_keyword(notes, node, pointer, map);
                }
                "required" => Self::required(notes, node, pointer, value),
                "propertyNames" => node.property_names.push(at()),
                "items" | "prefixItems" | "additionalItems" => {
                    Self::array_keyword(notes, node, pointer, map);
                }
                "uniqueItems" => {
                    if value.as_bool() == Some(true) {
                        node.unique_items = Some(pointer.to_string());
                    }
                }
                "contains" => node.contains.push(at()),
                "allOf" => match value.as_array() {
                    Some(items) => {
                        notes.enforced(pointer, keyword);
                        let at = at();
                        inner.extend((0..items.len()).map(|i| pointer_to_index(&at, i)));
                    }
                    None => notes.error(&at(), "`allOf` must be an array".into()),
                },
                "anyOf" | "oneOf" => {
                    if let Some(chosen) =
                        Self::alternatives(notes, node, pointer, &at(), keyword, value, key)
                    {
                        inner.extend(chosen);
                    }
                }
                "if" => {
                    if let Some(chosen) = Self::conditional(notes, node, pointer, &at(), map, key) {
                        inner.extend(chosen);
                    }
                }
                "nullable" => notes.enforced(pointer, keyword),
                "not" => node.nots.push(at()),
                // Read with `if` above.
                "then" | "else" => {}
                k if is_annotation(k) => {}
                k if UNENFORCED.contains(&k) => {
                    notes.approximate(pointer, k, "not enforced by a grammar");
                }
                k => notes.unknown(pointer, k),
            }
            if !inner.is_empty() {
                return Some((index + 1, inner));
            }
        }
        None
    }

    /// `$ref`: the target goes on `work`.
    fn reference(
        &self,
        notes: &mut Notes,
        pointer: &str,
        reference: &Value,
        work: &mut Vec<String>,
    ) {
        match reference.as_str().map(|r| self.resolve_ref(r)) {
            Some(Ok(target)) => {
                notes.enforced(pointer, "$ref");
                work.push(target);
            }
            Some(Err(message)) => notes.error(&format!("{pointer}/$ref"), message),
            None => notes.error(&format!("{pointer}/$ref"), "`$ref` must be a string".into()),
        }
    }

    /// `type`: the type bits it allows.
    fn types(notes: &mut Notes, pointer: &str, value: &Value) -> u8 {
        let names: Vec<&Value> = match value {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        let mut bits = 0;
        for name in names {
            match name.as_str().and_then(types::of) {
                Some(b) => bits |= b,
                None => notes.error(&pointer_to(pointer, "type"), format!("unknown type {name}")),
            }
        }
        notes.enforced(pointer, "type");
        bits
    }

    /// `enum` and `const`: the allowed values, intersected with earlier ones.
    fn values(
        notes: &mut Notes,
        node: &mut Node,
        pointer: &str,
        at: &str,
        keyword: &str,
        value: &Value,
    ) {
        let values = match (keyword, value) {
            ("const", v) => vec![v.clone()],
            (_, Value::Array(items)) => items.clone(),
            _ => {
                notes.error(at, "`enum` must be an array".into());
                return;
            }
        };
        node.values = Some(match node.values.take() {
            None => (values, at.to_string()),
            Some((old, p)) => (old.into_iter().filter(|v| values.contains(v)).collect(), p),
        });
        notes.enforced(pointer, keyword);
    }

    /// The length and size bounds of strings, arrays and objects.
    fn size(notes: &mut Notes, node: &mut Node, pointer: &str, keyword: &str, value: &Value) {
        let Some(n) = Self::count(notes, pointer, keyword, value) else {
            return;
        };
        let at_most = |old: Option<u64>| Some(old.map_or(n, |m| m.min(n)));
        match keyword {
            "minLength" => {
                node.min_length = node.min_length.max(n);
                if n > 0 {
                    node.length_keywords
                        .push(("minLength", pointer.to_string()));
                }
            }
            "maxLength" => {
                node.max_length = at_most(node.max_length);
                node.length_keywords
                    .push(("maxLength", pointer.to_string()));
            }
            "minItems" => node.min_items = node.min_items.max(n),
            "maxItems" => node.max_items = at_most(node.max_items),
            "minProperties" => {
                if node.min_properties.as_ref().is_none_or(|(m, _)| n > *m) {
                    node.min_properties = Some((n, pointer.to_string()));
                }
            }
            _ => {
                if node.max_properties.as_ref().is_none_or(|(m, _)| n < *m) {
                    node.max_properties = Some((n, pointer.to_string()));
                }
            }
        }
    }

    /// `required`: names added to the node's.
    fn required(notes: &mut Notes, node: &mut Node, pointer: &str, value: &Value) {
        let Some(names) = value.as_array() else {
            // Draft 3's boolean `required` on a property.
            notes.note(
                pointer,
                "required",
                super::Treatment::Ignored,
                "draft-3 boolean `required` is not supported",
            );
            return;
        };
        for name in names {
            match name.as_str() {
                Some(n) if !node.required.iter().any(|r| r == n) => {
                    node.required.push(n.to_string());
                }
                Some(_) => {}
                None => notes.error(
                    &pointer_to(pointer, "required"),
                    "`required` must list strings".into(),
                ),
            }
        }
        notes.enforced(pointer, "required");
    }

    /// `anyOf` and `oneOf`: a choice; or, where `key` already chose a
    /// branch, the branch, which merges here.
    fn alternatives(
        notes: &mut Notes,
        node: &mut Node,
        pointer: &str,
        at: &str,
        keyword: &str,
        value: &Value,
        key: &[String],
    ) -> Option<Vec<String>> {
        match value.as_array() {
            Some(items) if !items.is_empty() => {
                // The branch `key` chose, if any: the first `{at}/{i}` it
                // holds. One pass over the key, not one per branch (a
                // schema of hundreds of alternatives under long keys spent
                // most of its compile time here).
                let prefix = format!("{at}/");
                let chosen = key
                    .iter()
                    .filter_map(|pointer| pointer.strip_prefix(&prefix))
                    .filter_map(|index| {
                        index
                            .parse::<usize>()
                            .ok()
                            .filter(|&i| i < items.len() && i.to_string() == index)
                    })
                    .min();
                if let Some(i) = chosen {
                    return Some(vec![pointer_to_index(at, i)]);
                }
                node.choices.push(Choice {
                    pointer: pointer.to_string(),
                    keyword: if keyword == "anyOf" { "anyOf" } else { "oneOf" },
                    branches: (0..items.len())
                        .map(|i| vec![pointer_to_index(at, i)])
                        .collect(),
                });
                None
            }
            _ => {
                notes.error(at, format!("`{keyword}` must be a non-empty array"));
                None
            }
        }
    }

    /// `if`/`then`/`else`: a choice between `if ∧ then` and `else`.
    fn conditional(
        notes: &mut Notes,
        node: &mut Node,
        pointer: &str,
        at: &str,
        map: &Map<String, Value>,
        key: &[String],
    ) -> Option<Vec<String>> {
        let then = map.contains_key("then").then(|| format!("{pointer}/then"));
        let otherwise = map.contains_key("else").then(|| format!("{pointer}/else"));
        match (then, otherwise) {
            (Some(then), Some(otherwise)) => {
                let branches = vec![vec![at.to_string(), then], vec![otherwise]];
                let chosen = branches
                    .iter()
                    .find(|b| b.iter().any(|p| key.contains(p)))
                    .cloned();
                if chosen.is_none() {
                    node.choices.push(Choice {
                        pointer: pointer.to_string(),
                        keyword: "if",
                        branches,
                    });
                }
                chosen
            }
            (None, None) => None,
            _ => {
                notes.approximate(
                    pointer,
                    "if",
                    "a conditional with only one branch is not enforced",
                );
                None
            }
        }
    }

    /// The value of `keyword`, a non-negative integer keyword of the schema
    /// at `pointer`.
    fn count(notes: &mut Notes, pointer: &str, keyword: &str, value: &Value) -> Option<u64> {
        let n = value.as_u64().or_else(|| {
            value
                .as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                // Integral and non-negative; past 2^64 it saturates, which
                // no bound of a real schema reaches.
                .map(|f| {
                    #[expect(
                        clippy::cast_possible_truncation,
                        clippy::cast_sign_loss,
                        reason = "checked integral and non-negative"
                    )]
                    let n = f as u64;
                    n
                })
        });
        if n.is_none() {
            let at = pointer_to(pointer, keyword);
            notes.error(&at, "must be a non-negative integer".into());
        } else {
            notes.enforced(pointer, keyword);
        }
        n
    }

    /// The number at `pointer` as the schema's text writes it, if the text
    /// was given and says the same number; else as serde_json prints it
    /// (exact for integers within 64 bits, the nearest double beyond).
    fn written(&self, pointer: &str, number: &serde_json::Number) -> String {
        match self.written_numbers.get(pointer) {
            Some(text) if text.parse::<f64>().ok() == number.as_f64() => text.clone(),
            _ => number.to_string(),
        }
    }

    fn bound(
        &self,
        notes: &mut Notes,
        node: &mut Node,
        pointer: &str,
        map: &Map<String, Value>,
        keyword: &str,
        value: &Value,
    ) {
        let at = format!("{pointer}/{keyword}");
        // Draft 4: `exclusiveMinimum: true` modifies `minimum`.
        if let Value::Bool(_) = value {
            notes.enforced(pointer, keyword);
            return;
        }
        let Some(number) = value.as_number() else {
            notes.error(&at, format!("`{keyword}` must be a number"));
            return;
        };
        let Some(decimal) = Decimal::parse(&self.written(&at, number)) else {
            // Generated schemas bound doubles by `±1.7976931348623157e308`.
            notes.approximate(
                pointer,
                keyword,
                "bounds of 10^38 and beyond are not enforced",
            );
            return;
        };
        let lower = keyword.ends_with("inimum");
        let exclusive = keyword.starts_with("exclusive")
            || map
                .get(if lower {
                    "exclusiveMinimum"
                } else {
                    "exclusiveMaximum"
                })
                .and_then(Value::as_bool)
                == Some(true);
        let bound = Bound {
            value: decimal,
            exclusive,
        };
        let slot = if lower {
            &mut node.lower
        } else {
            &mut node.upper
        };
        let tighter = match slot {
            None => true,
            Some(old) => {
                let order = bound.value.cmp_value(&old.value);
                let stricter =
                    order == std::cmp::Ordering::Equal && bound.exclusive && !old.exclusive;
                stricter
                    || if lower {
                        order == std::cmp::Ordering::Greater
                    } else {
                        order == std::cmp::Ordering::Less
                    }
            }
        };
        if tighter {
            *slot = Some(bound);
        }
        notes.enforced(pointer, keyword);
    }

    fn object_keyword(notes: &mut Notes, node: &mut Node, pointer: &str, map: &Map<String, Value>) {
        if node.objects.iter().any(|o| o.pointer == pointer) {
            return;
        }
        let mut part = ObjectPart {
            pointer: pointer.to_string(),
            properties: Vec::new(),
            patterns: Vec::new(),
            additional: Others::Unsaid,
        };
        if let Some(properties) = Self::named_schemas(notes, map, "properties", pointer) {
            part.properties = properties;
            notes.enforced(pointer, "properties");
        }
        part.patterns =
            Self::named_schemas(notes, map, "patternProperties", pointer).unwrap_or_default();
        if let Some(additional) = map.get("additionalProperties") {
            part.additional = others(additional, format!("{pointer}/additionalProperties"));
            notes.enforced(pointer, "additionalProperties");
        }
        node.objects.push(part);
    }

    /// The entries of `keyword` (an object of name → schema, such as
    /// `properties`) as `(name, pointer)`; `None` if absent or not an
    /// object (an error).
    fn named_schemas(
        notes: &mut Notes,
        map: &Map<String, Value>,
        keyword: &str,
        pointer: &str,
    ) -> Option<Vec<(String, String)>> {
        let at = format!("{pointer}/{keyword}");
        let Some(entries) = map.get(keyword)?.as_object() else {
            notes.error(&at, format!("`{keyword}` must be an object"));
            return None;
        };
        Some(
            entries
                .keys()
                .map(|name| (name.clone(), pointer_to(&at, name)))
                .collect(),
        )
    }

    fn array_keyword(notes: &mut Notes, node: &mut Node, pointer: &str, map: &Map<String, Value>) {
        let mut part = ArrayPart {
            prefix: Vec::new(),
            rest: Others::Unsaid,
        };
        let mut seen_here = false;
        if let Some(Value::Array(prefix)) = map.get("prefixItems") {
            part.prefix = (0..prefix.len())
                .map(|i| format!("{pointer}/prefixItems/{i}"))
                .collect();
            seen_here = true;
            if let Some(items) = map.get("items") {
                part.rest = others(items, format!("{pointer}/items"));
            }
        } else {
            match map.get("items") {
                Some(Value::Array(tuple)) => {
                    part.prefix = (0..tuple.len())
                        .map(|i| format!("{pointer}/items/{i}"))
                        .collect();
                    if let Some(additional) = map.get("additionalItems") {
                        part.rest = others(additional, format!("{pointer}/additionalItems"));
                    }
                    seen_here = true;
                }
                Some(items) => {
                    part.rest = others(items, format!("{pointer}/items"));
                    seen_here = true;
                }
                None => {}
            }
        }
        for keyword in ["items", "prefixItems", "additionalItems"] {
            if map.contains_key(keyword) {
                notes.enforced(pointer, keyword);
            }
        }
        if seen_here
            && !node
                .arrays
                .iter()
                .any(|a| a.prefix == part.prefix && a.rest == part.rest)
        {
            node.arrays.push(part);
        }
    }
}

fn others(value: &Value, pointer: String) -> Others {
    match value {
        Value::Bool(true) => Others::Any,
        Value::Bool(false) => Others::None,
        Value::Object(map) if map.is_empty() => Others::Any,
        _ => Others::Schema(pointer),
    }
}

fn is_annotation(keyword: &str) -> bool {
    ANNOTATIONS.contains(&keyword) || keyword.starts_with("x-")
}
