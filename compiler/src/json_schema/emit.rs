//! From merged constraints to rules: one rule per conjunction of
//! subschemas, built breadth-first from the root (no recursion on the
//! schema's depth), plus the shared JSON building blocks.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::Value;

use crate::budget::{Budget, Exceeded, FREE_ASIDE_AT};
use xg_runtime::lru::free_aside;

use super::content::{self, Contents};
use super::grammar::{Except, G, Rules};
use super::notes::{Kept, Notes};
use super::numbers::{self, Decimal};
use super::schema::{self, ArrayPart, Node, Others, Reader, types};
use super::{
    EXACT_ANY_ORDER, Generated, Literals, MAX_INDENT, MAX_TRACKED, Options, PRETTY_DEPTH,
    PropertyOrder, SchemaError, Treatment, Whitespace, formats, strings,
};

/// The content hashes of a conjunction's schemas, and its level.
type ContentKey = (Vec<u64>, u32);

/// The shared building blocks, declared on first use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Block {
    Value,
    Object,
    Array,
    String,
    Char,
    CanonicalChar,
    /// A canonical character that is not printable ASCII.
    NotPlainChar,
    Number,
    Integer,
    Whitespace,
}

/// What goes between a container's brackets: its non-empty member lists
/// (`Nothing` if it cannot have members) and whether it may be empty. Kept
/// apart because the layout of `[]` differs from that of `[ items ]`.
struct Members {
    some: G,
    none: bool,
    /// Whether `some` ends in the layout's white space and the closing
    /// bracket, so that the container adds neither.
    closed: bool,
}

impl Members {
    /// Members whose last one ends where the container's layout goes on.
    fn new(some: G, none: bool) -> Self {
        Self {
            some,
            none,
            closed: false,
        }
    }
}

/// The state of one schema's compilation.
pub(crate) struct Emitter<'a> {
    /// The schema, read and merged.
    reader: Reader<'a>,
    /// What became of each keyword, and the errors.
    notes: Notes,
    options: &'a Options,
    /// Draft-06 or later (or none named): `type: integer` counts `1.0` an
    /// integer, as drafts 3 and 4 do not.
    zero_fraction_integers: bool,
    /// Whether `-0` is an integer (see [`Options::plain_integers`]).
    negative_zero: bool,
    rules: Rules,
    /// The rule of each conjunction at each nesting level (always level 0
    /// unless the layout is pretty).
    memo: FxHashMap<(Vec<String>, u32), usize>,
    /// The conjunctions with rules, by the content of their schemas and
    /// level: a copy of one takes its rule (see [`content`]).
    by_content: FxHashMap<ContentKey, Vec<(Vec<String>, usize)>>,
    contents: Contents,
    /// `(original, copy)`: schemas that took the rule of an equal one; what
    /// the report says under the original holds under the copy.
    copies: Vec<(String, String)>,
    /// The values each choice branch lists (`None`: it lists none), by
    /// branch: a branch is met once per conjunction it is chosen under.
    listed: FxHashMap<Vec<String>, Option<Rc<[Value]>>>,
    queue: VecDeque<(usize, Vec<String>, u32)>,
    blocks: FxHashMap<(Block, u32), usize>,
    /// The rule of the body of a key that is none of a set of names
    /// (sorted), per level: built once for copies of one object type
    /// (schemas that inline their definitions repeat them hundreds of
    /// times), and an inline rule (written out in the automaton, where the
    /// key's walk then sees the `:` after it).
    other_keys: FxHashMap<(Vec<String>, u32), usize>,
    /// The rules of large nodes (objects of [`SHARED_BODY_PROPERTIES`] or
    /// more), by fingerprint and level: another conjunction that merges
    /// into an equal node (a `$ref` with annotations beside it) refers to
    /// that rule instead of building the body again.
    by_node: FxHashMap<(u64, u32), Vec<(Node, usize)>>,
    /// The nesting depth of the rule being built.
    depth: u32,
    /// Per rule name, the JSON pointer of the schema it was made for.
    origins: HashMap<String, String>,
    /// How the budget ran out, if it did (its error is in `errors`).
    exhausted: Option<Exceeded>,
    budget: &'a Budget,
}

impl<'a> Emitter<'a> {
    /// The compilation of `doc`, whose numbers as its text writes them are
    /// `written_numbers` (by pointer), with `options`, within `budget`.
    pub(crate) fn new(
        doc: &'a Value,
        written_numbers: HashMap<String, String>,
        options: &'a Options,
        budget: &'a Budget,
        kept: Kept,
    ) -> Self {
        let draft = doc.get("$schema").and_then(Value::as_str).unwrap_or("");
        let zero_fraction_integers =
            !options.plain_integers && !["draft-03", "draft-04"].iter().any(|d| draft.contains(d));
        Self {
            reader: Reader::new(doc, written_numbers),
            notes: Notes::new(options.strict, kept),
            options,
            zero_fraction_integers,
            negative_zero: !options.plain_integers,
            rules: Rules::default(),
            memo: FxHashMap::default(),
            by_content: FxHashMap::default(),
            contents: Contents::default(),
            copies: Vec::new(),
            listed: FxHashMap::default(),
            queue: VecDeque::new(),
            blocks: FxHashMap::default(),
            other_keys: FxHashMap::default(),
            by_node: FxHashMap::default(),
            depth: 0,
            origins: HashMap::new(),
            exhausted: None,
            budget,
        }
    }

    pub(crate) fn run(mut self) -> Result<Generated, Vec<SchemaError>> {
        let outcome = self.generate();
        // What the passes keep to find their work again holds a key per
        // conjunction: for a schema of 80,000 properties, freeing it took
        // 70–100 ms, which a cancelled request waited for.
        let memos = (
            std::mem::take(&mut self.memo),
            std::mem::take(&mut self.other_keys),
            std::mem::take(&mut self.by_node),
            std::mem::take(&mut self.by_content),
            std::mem::take(&mut self.queue),
            std::mem::take(&mut self.copies),
            std::mem::take(&mut self.notes.noted),
        );
        let large = memos.0.len() + memos.1.len() >= FREE_ASIDE_AT;
        match outcome {
            Ok(()) => {
                if large {
                    free_aside(memos);
                }
                Ok(Generated {
                    rules: self.rules,
                    report: self.notes.report,
                    origins: self.origins,
                })
            }
            Err(errors) => {
                // Stopped: the rules and the report (a note per keyword)
                // go too.
                if large {
                    free_aside((memos, self.rules, self.notes.report, self.origins));
                }
                Err(errors)
            }
        }
    }

    /// Generates the rules of every conjunction reached from the root.
    fn generate(&mut self) -> Result<(), Vec<SchemaError>> {
        if !(self.reader.doc.is_object() || self.reader.doc.is_boolean()) {
            return Err(vec![SchemaError {
                pointer: "#".into(),
                message: "a JSON Schema must be an object or a boolean".into(),
            }]);
        }
        if let Whitespace::Pretty { indent } = self.options.whitespace
            && indent > MAX_INDENT
        {
            return Err(vec![SchemaError {
                pointer: "#".into(),
                message: format!(
                    "an indent of {indent} spaces is more than the {MAX_INDENT} the pretty layout takes"
                ),
            }]);
        }
        if self.out_of_budget() {
            return Err(std::mem::take(&mut self.notes.errors));
        }
        self.rule_for(vec![String::new()], 0, "root");
        while let Some((rule, key, depth)) = self.queue.pop_front() {
            self.depth = depth;
            if self.exhausted.is_some() {
                break;
            }
            if let Err(exceeded) = self.budget.check_rules(self.rules.len()) {
                self.exhaust(exceeded);
                break;
            }
            let node = self.collect(&key);
            if self.out_of_budget() {
                break;
            }
            let Some(node) = self.shared_body(rule, node, depth) else {
                continue;
            };
            let name = self.rules.name(rule).to_string();
            let body = self.body(node, &key, &name);
            self.rules.define(rule, body);
            if let Err(exceeded) = self.budget.check_memory(self.rules.defined_bytes()) {
                self.exhaust(exceeded);
                break;
            }
        }
        self.report_copies();
        if !self.notes.errors.is_empty() {
            return Err(std::mem::take(&mut self.notes.errors));
        }
        match self.rules.prune(self.budget) {
            Ok(true) => Ok(()),
            Ok(false) => Err(vec![SchemaError {
                pointer: "#".into(),
                message: "the schema accepts no value (its constraints contradict each other)"
                    .into(),
            }]),
            Err(exceeded) => Err(vec![SchemaError {
                pointer: "#".into(),
                message: exceeded.to_string(),
            }]),
        }
    }

    /// The conjunction `key` merged into one node ([`Reader::collect`]).
    fn collect(&mut self, key: &[String]) -> Node {
        self.reader.collect(&mut self.notes, key)
    }

    // ---- Rules -----------------------------------------------------------

    /// The rule for the conjunction `key` at nesting `depth`, declared (and
    /// queued) on first use.
    fn rule_for(&mut self, mut key: Vec<String>, depth: u32, name: &str) -> usize {
        key.sort();
        key.dedup();
        let level = self.level(depth);
        let memo_key = (key, level);
        if let Some(&rule) = self.memo.get(&memo_key) {
            return rule;
        }
        let (key, _) = memo_key.clone();
        let content_key = self.content_key(&key).map(|hashes| (hashes, level));
        if let Some(rule) = content_key.as_ref().and_then(|k| self.copy_of(k, &key)) {
            self.memo.insert(memo_key, rule);
            return rule;
        }
        let rule = self.rules.declare(name);
        if let Some(pointer) = key.first() {
            self.origins
                .insert(self.rules.name(rule).to_owned(), format!("#{pointer}"));
        }
        self.memo.insert(memo_key, rule);
        if let Some(content_key) = content_key {
            let rules = self.by_content.entry(content_key).or_default();
            rules.push((key.clone(), rule));
        }
        self.queue.push_back((rule, key, level));
        rule
    }

    /// `node`, unless it is large and equal to the node of a rule built
    /// at the same level: then `rule` refers to that rule. The body of a
    /// node depends on the node and the level alone, but for its choices,
    /// whose branches merge with the conjunction's key: nodes with choices
    /// build their own. `JsonSchemaStore---renovate-schema.json` has 109
    /// properties that are `{"$ref": "#", "description": …}`; their 109
    /// copies of the root's 311 properties made 34,611 rules, merged back
    /// to 426 (time to first mask 120 → 22 ms).
    fn shared_body(&mut self, rule: usize, node: Node, level: u32) -> Option<Node> {
        let properties: usize = node.objects.iter().map(|o| o.properties.len()).sum();
        if properties < SHARED_BODY_PROPERTIES || !node.choices.is_empty() {
            return Some(node);
        }
        let built = self.by_node.entry((node.fingerprint(), level)).or_default();
        match built.iter().find(|(other, _)| *other == node) {
            Some(&(_, original)) => {
                self.rules.alias(rule, original);
                None
            }
            None => {
                built.push((node.clone(), rule));
                Some(node)
            }
        }
    }

    /// The content hashes of the schemas of `key` (`None` if one does not
    /// exist: its error is reported where it is built).
    fn content_key(&mut self, key: &[String]) -> Option<Vec<u64>> {
        key.iter()
            .map(|pointer| Some(self.contents.hash(self.reader.lookup(pointer)?)))
            .collect()
    }

    /// The rule of a conjunction with the same content as `key`'s, noting
    /// which schemas are copies of which.
    fn copy_of(&mut self, content_key: &ContentKey, key: &[String]) -> Option<usize> {
        let candidates = self.by_content.get(content_key)?;
        let (original, rule) = candidates.iter().find(|(original, _)| {
            original.iter().zip(key).all(|(a, b)| {
                let (a, b) = (self.reader.lookup(a), self.reader.lookup(b));
                a.zip(b).is_some_and(|(a, b)| content::same(a, b))
            })
        })?;
        let rule = *rule;
        let pairs = original.iter().zip(key).filter(|(a, b)| a != b);
        let pairs: Vec<(String, String)> = pairs.map(|(a, b)| (a.clone(), b.clone())).collect();
        self.copies.extend(pairs);
        Some(rule)
    }

    /// Whether the budget has run out, checked inside the loops over an
    /// object's members (one rule may have tens of thousands); the first
    /// time, its error is recorded and the rules stop at the next one. A
    /// call spends a unit: the clock is read once per
    /// [`Budget::spend`]'s batch, not at each of these small steps (reading
    /// it was 3 % of a large schema's compile).
    fn out_of_budget(&mut self) -> bool {
        if self.exhausted.is_none()
            && let Err(exceeded) = self.budget.spend(1)
        {
            self.exhaust(exceeded);
        }
        self.exhausted.is_some()
    }

    /// Records that the budget ran out.
    fn exhaust(&mut self, exceeded: Exceeded) {
        self.notes.errors.push(SchemaError {
            pointer: "#".into(),
            message: exceeded.to_string(),
        });
        self.exhausted = Some(exceeded);
    }

    /// Repeats under each copy what the report and the errors say under
    /// its original, until nothing changes (copies nest in copies).
    fn report_copies(&mut self) {
        if self.copies.is_empty() || self.exhausted.is_some() {
            return;
        }
        let mut copies: FxHashMap<String, Vec<String>> = FxHashMap::default();
        for (original, copy) in std::mem::take(&mut self.copies) {
            copies.entry(original).or_default().push(copy);
        }
        // The lengths originals have: a place is only looked up at those
        // of its prefixes (hashing every prefix of every note was most of
        // this pass).
        let lengths: FxHashSet<usize> = copies.keys().map(String::len).collect();
        // The same place under each copy whose original holds `pointer`.
        let moved = |pointer: &str| -> Vec<String> {
            let mut out = Vec::new();
            let cuts = pointer.match_indices('/').map(|(i, _)| i);
            for cut in cuts.chain([pointer.len()]) {
                if !lengths.contains(&cut) {
                    continue;
                }
                let (base, rest) = pointer.split_at(cut);
                for copy in copies.get(base).into_iter().flatten() {
                    out.push(format!("{copy}{rest}"));
                }
            }
            out
        };
        let mut changed = true;
        while changed {
            changed = false;
            let mut i = 0;
            while i < self.notes.report.notes.len() {
                if self.out_of_budget() {
                    return;
                }
                let pointers = moved(&self.notes.report.notes[i].pointer[1..]);
                if pointers.is_empty() {
                    i += 1;
                    continue;
                }
                let note = self.notes.report.notes[i].clone();
                for pointer in pointers {
                    if self.out_of_budget() {
                        return;
                    }
                    let before = self.notes.noted_at(&pointer, &note.keyword);
                    let before = before.map(|n| self.notes.report.notes[n].treatment);
                    if before.is_none_or(|t| t < note.treatment) {
                        self.notes
                            .note(&pointer, &note.keyword, note.treatment, &note.detail);
                        changed = true;
                    }
                }
                i += 1;
            }
            let mut i = 0;
            while i < self.notes.errors.len() {
                let error = self.notes.errors[i].clone();
                for pointer in moved(&error.pointer[1..]) {
                    let before = self.notes.errors.len();
                    self.notes.error(&pointer, error.message.clone());
                    changed |= self.notes.errors.len() > before;
                }
                i += 1;
            }
        }
    }

    /// A value inside a container of the rule being built, valid under
    /// every schema of `key` (any value if `key` is empty).
    fn child(&mut self, key: Vec<String>, name: &str) -> G {
        let depth = self.depth + 1;
        if self.allows_anything(&key) {
            self.block(Block::Value, depth)
        } else {
            G::Ref(self.rule_for(key, depth, name))
        }
    }

    /// Whether the schemas at `key` (all of them at once) allow any value:
    /// each is `true` or `{}`, or there are none.
    fn allows_anything(&self, key: &[String]) -> bool {
        key.iter().all(|p| match self.reader.lookup(p) {
            Some(Value::Bool(true)) => true,
            Some(Value::Object(map)) => map.is_empty(),
            _ => false,
        })
    }

    /// The level whose rules a value at `depth` uses: its depth, up to one
    /// past [`PRETTY_DEPTH`], when the layout is pretty; otherwise 0 (the
    /// layout does not depend on the depth, so every depth shares rules).
    fn level(&self, depth: u32) -> u32 {
        match self.options.whitespace {
            Whitespace::Pretty { .. } => depth.min(PRETTY_DEPTH + 1),
            _ => 0,
        }
    }

    /// The layout of a container at `depth`: pretty layouts turn flexible
    /// past [`PRETTY_DEPTH`].
    fn layout(&self, depth: u32) -> Whitespace {
        match self.options.whitespace {
            // Unbounded: the pretty-printer's indentation grows past any
            // bound with the depth.
            Whitespace::Pretty { .. } if depth > PRETTY_DEPTH => Whitespace::Flexible { max: None },
            ref layout => layout.clone(),
        }
    }

    /// A shared building block; containers and values are per level.
    fn block(&mut self, block: Block, depth: u32) -> G {
        let level = match block {
            Block::Value | Block::Object | Block::Array => self.level(depth),
            _ => 0,
        };
        if let Some(&rule) = self.blocks.get(&(block, level)) {
            return G::Ref(rule);
        }
        let name = match block {
            Block::Value => "json_value",
            Block::Object => "json_object",
            Block::Array => "json_array",
            Block::String => "json_string",
            Block::Char => "json_char",
            Block::CanonicalChar => "canonical_char",
            Block::NotPlainChar => "not_plain_char",
            Block::Number => "json_number",
            Block::Integer => "json_integer",
            Block::Whitespace => "ws",
        };
        let rule = if matches!(block, Block::Number | Block::Integer) {
            self.rules.declare_kept(name)
        } else if level == 0 {
            self.rules.declare(name)
        } else {
            self.rules.declare(&format!("{name}_depth{level}"))
        };
        self.blocks.insert((block, level), rule);
        let body = match block {
            Block::Value => G::alt([
                self.block(Block::Object, depth),
                self.block(Block::Array, depth),
                self.block(Block::String, depth),
                self.block(Block::Number, depth),
                self.constant(Constant::True),
                self.constant(Constant::False),
                self.constant(Constant::Null),
            ]),
            Block::Object => {
                let member = G::seq([
                    self.block(Block::String, depth),
                    self.key_separator(depth),
                    self.block(Block::Value, depth + 1),
                ]);
                self.list("{", member, "}", depth)
            }
            Block::Array => {
                let value = self.block(Block::Value, depth + 1);
                self.list("[", value, "]", depth)
            }
            Block::String => G::seq([
                G::lit("\""),
                G::rep(self.block(Block::Char, depth), 0, None),
                G::lit("\""),
            ]),
            Block::Char => json_char(),
            Block::CanonicalChar => G::alt([
                G::class(strings::PLAIN),
                self.block(Block::NotPlainChar, depth),
            ]),
            Block::NotPlainChar => strings::encoded_class(&strings::NOT_PLAIN),
            Block::Number => numbers::any_number(),
            Block::Integer => {
                numbers::integers(None, None, self.zero_fraction_integers, self.negative_zero)
            }
            Block::Whitespace => {
                let max = match self.options.whitespace {
                    Whitespace::Flexible { max } => max,
                    Whitespace::Compact => Some(0),
                    Whitespace::Pretty { .. } => None,
                };
                G::rep(
                    G::class([(' ', ' '), ('\t', '\t'), ('\n', '\n'), ('\r', '\r')]),
                    0,
                    max,
                )
            }
        };
        self.rules.define(rule, body);
        G::Ref(rule)
    }

    /// `text` between the members of a container at `depth`; in a pretty
    /// layout a `line_break` ends it and indents the next member.
    fn separator(&mut self, text: &str, depth: u32, line_break: bool) -> G {
        match self.layout(depth) {
            Whitespace::Flexible { .. } => {
                let ws = self.block(Block::Whitespace, depth);
                G::seq([ws.clone(), G::lit(text.trim()), ws])
            }
            Whitespace::Pretty { indent } if line_break => G::lit(format!(
                "{}{}",
                text.trim_end(),
                new_line(indent, depth + 1)
            )),
            Whitespace::Compact | Whitespace::Pretty { .. } => G::lit(text),
        }
    }

    fn item_separator(&mut self, depth: u32) -> G {
        let text = self.options.item_separator.clone();
        self.separator(&text, depth, true)
    }

    fn key_separator(&mut self, depth: u32) -> G {
        let text = self.options.key_separator.clone();
        self.separator(&text, depth, false)
    }

    /// A container at `depth`: `open`, `members` laid out, `close`.
    fn container(&mut self, open: &str, members: Members, close: &str, depth: u32) -> G {
        if members.closed {
            let ws = self.block(Block::Whitespace, depth);
            let empty = if members.none {
                G::lit(close)
            } else {
                G::Nothing
            };
            return G::seq([G::lit(open), ws, G::alt([members.some, empty])]);
        }
        let none = if members.none { G::Empty } else { G::Nothing };
        let inside = match self.layout(depth) {
            Whitespace::Compact => G::alt([members.some, none]),
            Whitespace::Flexible { .. } => {
                let ws = self.block(Block::Whitespace, depth);
                G::seq([ws.clone(), G::alt([G::seq([members.some, ws]), none])])
            }
            Whitespace::Pretty { indent } => G::alt([
                G::seq([
                    G::lit(new_line(indent, depth + 1)),
                    members.some,
                    G::lit(new_line(indent, depth)),
                ]),
                none,
            ]),
        };
        G::seq([G::lit(open), inside, G::lit(close)])
    }

    /// `open item (sep item)* close`, or empty, at `depth`.
    fn list(&mut self, open: &str, item: G, close: &str, depth: u32) -> G {
        let sep = self.item_separator(depth);
        let members = Members::new(
            G::seq([item.clone(), G::rep(G::seq([sep, item]), 0, None)]),
            true,
        );
        self.container(open, members, close, depth)
    }

    // ---- Schemas ---------------------------------------------------------

    fn body(&mut self, mut node: Node, key: &[String], name: &str) -> G {
        if node.nothing {
            return G::Nothing;
        }
        if !node.choices.is_empty() {
            // The other choices merge into each branch through its key.
            let choice = node.choices.swap_remove(0);
            match choice.keyword {
                "anyOf" => self.notes.enforced(&choice.pointer, "anyOf"),
                "oneOf" => {
                    if self.exclusive(key, &choice.branches) {
                        self.notes.enforced(&choice.pointer, "oneOf");
                    } else {
                        self.notes.approximate(
                            &choice.pointer,
                            "oneOf",
                            "a value matching several branches is not rejected (the branches overlap)",
                        );
                    }
                }
                _ => self.notes.approximate(
                    &choice.pointer,
                    "if",
                    "a value may take the `else` branch even where `if` holds",
                ),
            }
            let mut alternatives = Vec::new();
            let checks = ValueChecks::of(&node);
            for (i, branch) in choice.branches.iter().enumerate() {
                if self.refuses_every_value(&checks, branch) {
                    continue;
                }
                let mut branch_key = key.to_vec();
                branch_key.extend(branch.iter().cloned());
                let rule = self.rule_for(branch_key, self.depth, &format!("{name}_{i}"));
                alternatives.push(G::Ref(rule));
            }
            return G::alt(alternatives);
        }
        for pointer in std::mem::take(&mut node.nots) {
            self.apply_not(&mut node, &pointer);
        }
        if let Some((values, _)) = node.values.clone() {
            self.note_value_patterns(&node);
            let checks = ValueChecks::of(&node);
            let fitting: Vec<G> = values
                .iter()
                .filter(|v| checks.fits(v))
                .map(|v| self.literal(v, self.depth))
                .collect();
            return G::alt(fitting);
        }
        let mut alternatives = Vec::new();
        if node.types & types::NULL != 0 {
            alternatives.push(self.constant(Constant::Null));
        }
        if node.types & types::BOOLEAN != 0 {
            alternatives.push(G::alt([
                self.constant(Constant::True),
                self.constant(Constant::False),
            ]));
        }
        if node.types & (types::INTEGER | types::FRACTION) != 0 {
            alternatives.push(self.number(&node));
        }
        if node.types & types::STRING != 0 {
            alternatives.push(self.string(&node));
        }
        if node.types & types::ARRAY != 0 {
            alternatives.push(self.array(&node, name));
        }
        if node.types & types::OBJECT != 0 {
            alternatives.push(self.object(&node, name));
        }
        G::alt(alternatives)
    }

    /// Whether `branch` of a choice lists the values it allows (`enum` or
    /// `const`) and the rest of its conjunction (`checks`) takes none of
    /// them: the branch matches nothing and needs no rule. A choice between
    /// hundreds of constants under a conjunction that allows one (a
    /// `pattern` per task name in Azure Pipelines' schema: 238 × 238
    /// branches) is then filtered here, not generated and pruned.
    fn refuses_every_value(&mut self, checks: &ValueChecks<'_>, branch: &[String]) -> bool {
        let values = match self.listed.get(branch) {
            Some(values) => values.clone(),
            None => {
                let values = self.listed_values(branch);
                self.listed.insert(branch.to_vec(), values.clone());
                values
            }
        };
        values.is_some_and(|values| !values.iter().any(|value| checks.fits(value)))
    }

    /// The values `branch` lists that pass its own checks, if it lists
    /// any.
    fn listed_values(&mut self, branch: &[String]) -> Option<Rc<[Value]>> {
        let lists_values = |value: &Value| {
            value
                .as_object()
                .is_some_and(|map| map.contains_key("enum") || map.contains_key("const"))
        };
        if !branch
            .iter()
            .any(|pointer| self.reader.lookup(pointer).is_some_and(lists_values))
        {
            return None;
        }
        let own = self.collect(branch);
        let (values, _) = own.values.as_ref()?;
        let checks = ValueChecks::of(&own);
        Some(values.iter().filter(|v| checks.fits(v)).cloned().collect())
    }

    /// The `pattern`s of a schema whose values are listed: each value is
    /// checked against them ([`ValueChecks`]); one that cannot be read
    /// leaves the values unchecked.
    fn note_value_patterns(&mut self, node: &Node) {
        for (pattern, pointer) in &node.patterns {
            if strings::pattern_regex(pattern).is_some() {
                self.notes.enforced(pointer, "pattern");
            } else {
                self.notes.approximate(
                    pointer,
                    "pattern",
                    "the pattern cannot be read; the listed values are not checked against it",
                );
            }
        }
    }

    /// Whether at most one of `branches` (each merged with `key`) can match
    /// any value: their types are disjoint, their constants are, or a
    /// required property's constants are.
    fn exclusive(&mut self, key: &[String], branches: &[Vec<String>]) -> bool {
        let nodes: Vec<Node> = branches
            .iter()
            .map(|b| {
                let mut k = key.to_vec();
                k.extend(b.iter().cloned());
                self.collect(&k)
            })
            .collect();
        let mut discriminators = Vec::new();
        for node in &nodes {
            let mut constants = HashMap::new();
            for name in &node.required {
                let pointers: Vec<String> = node
                    .objects
                    .iter()
                    .filter_map(|o| {
                        o.properties
                            .iter()
                            .find(|(n, _)| n == name)
                            .map(|(_, p)| p.clone())
                    })
                    .collect();
                if !pointers.is_empty() {
                    let property = self.collect(&pointers);
                    if let Some((values, _)) = property.values {
                        constants.insert(name.clone(), values);
                    }
                }
            }
            discriminators.push(constants);
        }
        for i in 0..nodes.len() {
            for j in i + 1..nodes.len() {
                let (a, b) = (&nodes[i], &nodes[j]);
                let disjoint_types = a.types & b.types == 0;
                let disjoint_values = match (&a.values, &b.values) {
                    (Some((x, _)), Some((y, _))) => x.iter().all(|v| !y.contains(v)),
                    _ => false,
                };
                let disjoint_property = discriminators[i].iter().any(|(name, x)| {
                    discriminators[j]
                        .get(name)
                        .is_some_and(|y| x.iter().all(|v| !y.contains(v)))
                });
                if !(disjoint_types || disjoint_values || disjoint_property) {
                    return false;
                }
            }
        }
        true
    }

    /// `not`: exact for a type, a set of values, or one required property;
    /// otherwise reported and not enforced.
    fn apply_not(&mut self, node: &mut Node, pointer: &str) {
        let (parent, _) = pointer.rsplit_once('/').unwrap_or(("", pointer));
        let negated = self.collect(&[pointer.to_string()]);
        let blank = Node::default();
        let only_types = negated.types != types::ALL && is_blank_except_types(&negated);
        if negated.nothing {
            self.notes.enforced(parent, "not");
        } else if only_types {
            node.types &= !negated.types;
            if node.types & types::INTEGER == 0 && node.types & types::FRACTION != 0 {
                // "A number that is not an integer" is not a grammar xg writes.
                self.notes.approximate(
                    parent,
                    "not",
                    "a non-integer number is only checked to be a number",
                );
                node.types |= types::INTEGER;
            } else {
                self.notes.enforced(parent, "not");
            }
        } else if negated.types == types::ALL
            && let Some((excluded, _)) = &negated.values
            && is_blank_except_types(&Node {
                values: None,
                ..negated.clone()
            })
            && let Some((values, _)) = &mut node.values
        {
            values.retain(|v| !excluded.contains(v));
            self.notes.enforced(parent, "not");
        } else if negated.required.len() == 1
            && is_blank_except_types(&Node {
                required: Vec::new(),
                ..negated.clone()
            })
            && negated.types == blank.types
        {
            node.forbidden.push(negated.required[0].clone());
            self.notes.enforced(parent, "not");
        } else {
            self.notes.approximate(
                parent,
                "not",
                "only `not` of a type, of constants or of one required property is enforced",
            );
        }
    }

    /// The JSON text of `value` at `depth` in the configured layout.
    fn literal(&mut self, value: &Value, depth: u32) -> G {
        match value {
            Value::Null => self.constant(Constant::Null),
            Value::Bool(true) => self.constant(Constant::True),
            Value::Bool(false) => self.constant(Constant::False),
            Value::Number(n) => number_literal(&n.to_string()),
            Value::String(s) => quoted(strings::encoded_text(s)),
            Value::Array(items) => {
                let sep = self.item_separator(depth);
                let mut parts = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        parts.push(sep.clone());
                    }
                    parts.push(self.literal(item, depth + 1));
                }
                let members = fixed_members(parts);
                self.container("[", members, "]", depth)
            }
            Value::Object(map) => {
                let sep = self.item_separator(depth);
                let key_sep = self.key_separator(depth);
                let entries: Vec<G> = map
                    .iter()
                    .map(|(k, v)| {
                        G::seq([
                            quoted(strings::encoded_text(k)),
                            key_sep.clone(),
                            self.literal(v, depth + 1),
                        ])
                    })
                    .collect();
                let members = if self.options.property_order == PropertyOrder::Any && map.len() > 1
                {
                    let entries: Vec<(G, bool)> = entries.into_iter().map(|e| (e, true)).collect();
                    self.any_order_body(&entries, None, &sep, &Node::default(), "value")
                } else {
                    let mut parts = Vec::new();
                    for (i, entry) in entries.into_iter().enumerate() {
                        if i > 0 {
                            parts.push(sep.clone());
                        }
                        parts.push(entry);
                    }
                    fixed_members(parts)
                };
                self.container("{", members, "}", depth)
            }
        }
    }

    fn number(&mut self, node: &Node) -> G {
        let typed_integer = node.types & types::FRACTION == 0;
        let mut integer_only = typed_integer;
        let mut fraction_digits: Option<u32> = None;
        for (step, pointer) in node.multiple_of.clone() {
            let one = step.integer == 1 && step.fraction.is_empty();
            let power_of_ten = step.integer == 0
                && step.fraction.last() == Some(&1)
                && step.fraction[..step.fraction.len() - 1]
                    .iter()
                    .all(|&d| d == 0);
            if one {
                integer_only = true;
                self.notes.enforced(&pointer, "multipleOf");
            } else if power_of_ten && node.lower.is_none() && node.upper.is_none() {
                let digits = u32::try_from(step.fraction.len()).unwrap_or(u32::MAX);
                fraction_digits = Some(fraction_digits.map_or(digits, |d| d.min(digits)));
                self.notes.enforced(&pointer, "multipleOf");
            } else {
                self.notes.approximate(
                    &pointer,
                    "multipleOf",
                    "only multiples of 1, and of 0.1, 0.01, … without bounds, are enforced",
                );
            }
        }
        if integer_only {
            // `6000.0` is a multiple of 1 in every draft, an integer in
            // draft 6 and later.
            let zero_fraction = !typed_integer || self.zero_fraction_integers;
            if node.lower.is_none()
                && node.upper.is_none()
                && zero_fraction == self.zero_fraction_integers
            {
                return self.block(Block::Integer, self.depth);
            }
            let (lo, hi) = numbers::integer_range(node.lower.as_ref(), node.upper.as_ref());
            return numbers::integers(lo, hi, zero_fraction, self.negative_zero);
        }
        if let Some(digits) = fraction_digits {
            // Digits beyond the step's must be zeros.
            let d = G::class([('0', '9')]);
            return G::seq([
                G::opt(G::lit("-")),
                G::alt([
                    G::lit("0"),
                    G::seq([G::class([('1', '9')]), G::rep(d.clone(), 0, None)]),
                ]),
                G::opt(G::seq([
                    G::lit("."),
                    G::rep(d, 1, Some(digits)),
                    G::rep(G::lit("0"), 0, None),
                ])),
            ]);
        }
        if node.lower.is_none() && node.upper.is_none() {
            return self.block(Block::Number, self.depth);
        }
        numbers::bounded_numbers(node.lower.as_ref(), node.upper.as_ref())
    }

    fn string(&mut self, node: &Node) -> G {
        let length_limited = node.min_length > 0 || node.max_length.is_some();
        let mut body = None;
        for (pattern, pointer) in node.patterns.clone() {
            if body.is_some() {
                self.notes.approximate(
                    &pointer,
                    "pattern",
                    "only one `pattern` per string is enforced",
                );
                continue;
            }
            match strings::pattern_body(&pattern) {
                Ok(g) => {
                    self.notes.enforced(&pointer, "pattern");
                    body = Some(g);
                }
                Err(err) => self.notes.approximate(
                    &pointer,
                    "pattern",
                    &format!("{}; any string is allowed", err.0),
                ),
            }
        }
        for (format, pointer) in node.formats.clone() {
            match formats::body(&format) {
                Some(g) if body.is_none() => {
                    match formats::approximation(&format) {
                        Some(detail) => self.notes.approximate(&pointer, "format", detail),
                        None => self.notes.enforced(&pointer, "format"),
                    }
                    body = Some(g);
                }
                Some(_) => self.notes.approximate(
                    &pointer,
                    "format",
                    "only one of `pattern` and `format` is enforced",
                ),
                None if self.options.strict => self.notes.error(
                    &format!("{pointer}/format"),
                    format!("format `{format}` is not one xg checks (strict mode)"),
                ),
                None => self.notes.note(
                    &pointer,
                    "format",
                    Treatment::Ignored,
                    &format!(
                        "format `{format}` is not one xg checks (known: {})",
                        formats::KNOWN.join(", ")
                    ),
                ),
            }
        }
        let body = match body {
            Some(g) => {
                for (keyword, pointer) in &node.length_keywords {
                    self.notes.approximate(
                        pointer,
                        keyword,
                        "length limits next to a pattern or format are not enforced",
                    );
                }
                g
            }
            None if length_limited => {
                let min = u32::try_from(node.min_length).unwrap_or(u32::MAX);
                let max = node.max_length.and_then(|m| u32::try_from(m).ok());
                G::rep(self.block(Block::Char, self.depth), min, max)
            }
            None => return self.block(Block::String, self.depth),
        };
        quoted(body)
    }

    fn array(&mut self, node: &Node, name: &str) -> G {
        let prefix_len = node
            .arrays
            .iter()
            .map(|a| a.prefix.len())
            .max()
            .unwrap_or(0);
        let mut max_items = node.max_items;
        for part in &node.arrays {
            if part.rest == Others::None {
                let len = part.prefix.len() as u64;
                max_items = Some(max_items.map_or(len, |m| m.min(len)));
            }
        }
        let position = |i: usize, parts: &[ArrayPart]| -> Vec<String> {
            parts
                .iter()
                .filter_map(|part| match part.prefix.get(i) {
                    Some(p) => Some(p.clone()),
                    None => match &part.rest {
                        Others::Schema(p) => Some(p.clone()),
                        _ => None,
                    },
                })
                .collect()
        };
        if let Some(pointer) = node.unique_items.clone() {
            if max_items.is_some_and(|m| m <= 1) {
                self.notes.enforced(&pointer, "uniqueItems");
            } else {
                self.notes
                    .approximate(&pointer, "uniqueItems", "repeated items are not rejected");
            }
        }
        for pointer in node.contains.clone() {
            let (parent, _) = pointer.rsplit_once('/').unwrap_or(("", &pointer));
            self.notes
                .approximate(parent, "contains", "not enforced by a grammar");
        }
        let items: Vec<G> = (0..prefix_len)
            .map(|i| {
                let key = position(i, &node.arrays);
                self.child(key, &format!("{name}_{i}"))
            })
            .collect();
        let rest_key = position(prefix_len, &node.arrays);
        let rest = self.child(rest_key, &format!("{name}_item"));
        let sep = self.item_separator(self.depth);
        let mut part = |g| self.rules.part(name, g);
        let members = array_members(&items, &rest, &sep, node.min_items, max_items, &mut part);
        self.container("[", members, "]", self.depth)
    }

    fn object(&mut self, node: &Node, name: &str) -> G {
        let names = property_names(node);
        let required: FxHashSet<&str> = node.required.iter().map(String::as_str).collect();
        let always_forbidden: FxHashSet<&str> = node.forbidden.iter().map(String::as_str).collect();
        // Per part, its properties by name (the first of a name).
        let declared: Vec<FxHashMap<&str, &String>> = node
            .objects
            .iter()
            .map(|part| {
                let mut by_name = FxHashMap::default();
                for (n, pointer) in &part.properties {
                    by_name.entry(n.as_str()).or_insert(pointer);
                }
                by_name
            })
            .collect();
        let extras_forbidden = |part: &schema::ObjectPart, default: bool| match &part.additional {
            Others::None => true,
            Others::Unsaid => !default && !part.properties.is_empty(),
            _ => false,
        };
        if self.out_of_budget() {
            return G::Nothing;
        }
        let default = self.options.additional_properties;
        let property_names =
            (!node.property_names.is_empty()).then(|| self.collect(&node.property_names));
        let mut members: Vec<(G, bool)> = Vec::new();
        for property in &names {
            if self.out_of_budget() {
                return G::Nothing;
            }
            let required = required.contains(property.as_str());
            let mut key = Vec::new();
            let mut forbidden = always_forbidden.contains(property.as_str())
                || property_names
                    .as_ref()
                    .is_some_and(|names| !name_fits(names, property));
            for (part, declared) in node.objects.iter().zip(&declared) {
                if let Some(&p) = declared.get(property.as_str()) {
                    key.push(p.clone());
                    continue;
                }
                let matching: Vec<String> = part
                    .patterns
                    .iter()
                    .filter(|(pattern, _)| pattern_matches(pattern, property))
                    .map(|(_, p)| p.clone())
                    .collect();
                if !matching.is_empty() {
                    key.extend(matching);
                } else if extras_forbidden(part, default) {
                    forbidden = true;
                } else if let Others::Schema(p) = &part.additional {
                    key.push(p.clone());
                }
            }
            if forbidden {
                if required {
                    return G::Nothing;
                }
                continue;
            }
            let value = self.child(key, &format!("{name}_{property}"));
            let member = G::seq([
                quoted(strings::encoded_text(property)),
                self.key_separator(self.depth),
                value,
            ]);
            members.push((member, required));
        }
        let extra = self.extra_member(node, &names, name).map(|g| {
            let rule = self.rules.declare(&format!("{name}_other"));
            self.rules.define(rule, g);
            G::Ref(rule)
        });
        let sep = self.item_separator(self.depth);
        let body = if members.is_empty() {
            self.extra_members_only(node, extra.as_ref(), &sep)
        } else {
            self.note_property_counts(node, &members, extra.is_some());
            match self.options.property_order {
                PropertyOrder::Given => self.members_body(&members, extra.as_ref(), &sep, name),
                PropertyOrder::Any => {
                    self.any_order_body(&members, extra.as_ref(), &sep, node, name)
                }
            }
        };
        self.container("{", body, "}", self.depth)
    }

    /// The members of an object that declares none: extra members, their
    /// count within `minProperties` / `maxProperties` exactly.
    fn extra_members_only(&mut self, node: &Node, extra: Option<&G>, sep: &G) -> Members {
        let min = node.min_properties.as_ref().map_or(0, |(m, _)| *m);
        let max = node.max_properties.as_ref().map(|(m, _)| *m);
        for (keyword, bound) in [
            ("minProperties", &node.min_properties),
            ("maxProperties", &node.max_properties),
        ] {
            if let Some((_, pointer)) = bound {
                self.notes.enforced(pointer, keyword);
            }
        }
        match extra {
            Some(extra) => array_members(&[], extra, sep, min, max, &mut |g| g),
            None => Members::new(G::Nothing, min == 0),
        }
    }

    /// Notes `minProperties` / `maxProperties` next to declared `members`:
    /// enforced when the required members and the absence of extras imply
    /// them, approximated otherwise.
    fn note_property_counts(&mut self, node: &Node, members: &[(G, bool)], extras: bool) {
        let required_count = members.iter().filter(|(_, r)| *r).count() as u64;
        let declared = members.len() as u64;
        if let Some((min, pointer)) = node.min_properties.clone() {
            if min <= required_count {
                self.notes.enforced(&pointer, "minProperties");
            } else {
                self.notes.approximate(
                    &pointer,
                    "minProperties",
                    "a count over optional properties is not enforced",
                );
            }
        }
        if let Some((max, pointer)) = node.max_properties.clone() {
            if !extras && max >= declared {
                self.notes.enforced(&pointer, "maxProperties");
            } else {
                self.notes.approximate(
                    &pointer,
                    "maxProperties",
                    "a count over optional properties is not enforced",
                );
            }
        }
    }

    /// The members of an object in declared order: each optional unless
    /// required, separated, then extra members (if any) at the end. The
    /// tails are rules, so the grammar stays linear in the member count.
    ///
    /// With flexible white space, the white space after a member is written
    /// once, before the choice of what comes next, and the tails end with
    /// the closing bracket: `m ws ("," ws m' ws …)? "}"`, not `m (ws ","
    /// ws m')? (ws "," ws m'')? … ws "}"`. Each member's tail is a rule of
    /// its own, and in the second form every one of them waits past an
    /// empty `ws` after a value, so each is a mask-cache entry to build at
    /// once (hundreds for a schema with many optional properties); in the
    /// first, the tails are entered by a comma, like compact JSON's, and one
    /// entry covers them. The bracket inside the tails keeps white space
    /// before it from ending them: a token such as `\n}` is then accepted
    /// by the entry, not checked against the whole parse at every member.
    fn members_body(
        &mut self,
        members: &[(G, bool)],
        extra: Option<&G>,
        sep: &G,
        name: &str,
    ) -> Members {
        let spacing = match self.layout(self.depth) {
            Whitespace::Flexible { .. } => Some((
                self.block(Block::Whitespace, self.depth),
                G::lit(self.options.item_separator.trim()),
            )),
            _ => None,
        };
        // A member led by its separator: `sep m`, or with flexible white
        // space `"," ws m ws` (the white space before the comma is the one
        // after the member before). `after[i]`: the members from `i` on,
        // each so led.
        let lead = |member: &G| match &spacing {
            Some((ws, comma)) => G::seq([comma.clone(), ws.clone(), member.clone(), ws.clone()]),
            None => G::seq([sep.clone(), member.clone()]),
        };
        let n = members.len();
        let extras = extra.map_or(G::Empty, |e| G::rep(lead(e), 0, None));
        let last = match spacing {
            Some(_) => G::seq([extras, G::lit("}")]),
            None => extras,
        };
        let mut after = vec![last.clone()];
        for (i, (member, required)) in members.iter().enumerate().rev() {
            if self.out_of_budget() {
                break;
            }
            let this = if *required {
                lead(member)
            } else {
                G::opt(lead(member))
            };
            let body = G::seq([this, after.last().expect("one").clone()]);
            let g = if n - i > 2 {
                let rule = self.rules.declare(&format!("{name}_from_{i}"));
                self.rules.define(rule, body);
                G::Ref(rule)
            } else {
                body
            };
            after.push(g);
        }
        after.reverse();
        // What follows a member written first: the white space after it,
        // then the rest.
        let then = |rest: &G| match &spacing {
            Some((ws, _)) => G::seq([ws.clone(), rest.clone()]),
            None => rest.clone(),
        };
        // The first member present is i: members before it are optional and absent.
        let mut alternatives = Vec::new();
        for (i, (member, required)) in members.iter().enumerate() {
            if self.out_of_budget() {
                break;
            }
            alternatives.push(G::seq([member.clone(), then(&after[i + 1])]));
            if *required {
                break;
            }
        }
        let none = !members.iter().any(|(_, required)| *required);
        if none && let Some(extra) = extra {
            alternatives.push(G::seq([extra.clone(), then(&last)]));
        }
        Members {
            some: G::alt(alternatives),
            none,
            closed: spacing.is_some(),
        }
    }

    /// Members in any order: rules per set of tracked members written so far
    /// (at most 2^8). Each member is a rule of its own, so the set rules are
    /// a few references each (their number is exponential, their size must
    /// not be) and every set shares the members' automata and mask entries.
    fn any_order_body(
        &mut self,
        members: &[(G, bool)],
        extra: Option<&G>,
        sep: &G,
        node: &Node,
        name: &str,
    ) -> Members {
        let track_all = members.len() <= EXACT_ANY_ORDER;
        let required = members.iter().filter(|m| m.1).count();
        let tracked: Vec<usize> = (0..members.len())
            .filter(|&i| track_all || members[i].1)
            .take(MAX_TRACKED)
            .collect();
        let pointer = node
            .objects
            .first()
            .map_or("", |o| o.pointer.as_str())
            .to_string();
        if required > MAX_TRACKED {
            self.notes.approximate(
                &pointer,
                "required",
                &format!("in any order, only {MAX_TRACKED} of the {required} required properties are checked to be present once"),
            );
        }
        if !track_all {
            self.notes.approximate(&pointer, "properties", "in any order, an optional property may appear twice (too many properties to track)");
        }
        // Untracked members stay expressions: in one choice their keys
        // share one automaton.
        let member_rules: Vec<G> = tracked
            .iter()
            .map(|&i| self.rule_of(&members[i].0, &format!("{name}_member_{i}")))
            .collect();
        let free_members: Vec<G> = (0..members.len())
            .filter(|i| !tracked.contains(i))
            .map(|i| members[i].0.clone())
            .chain(extra.cloned())
            .collect();
        let free = match free_members.len() {
            0 => None,
            1 => free_members.into_iter().next(),
            _ => Some(self.rule_of(&G::alt(free_members), &format!("{name}_any"))),
        };
        let required_mask: usize = tracked
            .iter()
            .enumerate()
            .filter(|(_, i)| members[**i].1)
            .map(|(bit, _)| 1 << bit)
            .sum();
        // after[seen]: the rest of the members once those in `seen` are written.
        let states = 1usize << tracked.len();
        let rules: Vec<usize> = (0..states)
            .map(|seen| self.rules.declare(&format!("{name}_after_{seen}")))
            .collect();
        // The tracked members that may come next once those in `seen` are
        // written.
        let next = |seen: usize| {
            let mut choices = Vec::new();
            for (bit, member) in member_rules.iter().enumerate() {
                if seen & (1 << bit) == 0 {
                    choices.push(G::seq([member.clone(), G::Ref(rules[seen | 1 << bit])]));
                }
            }
            G::alt(choices)
        };
        // Untracked members leave `seen` as it is: a loop in the set's rule,
        // not a reference back to it, so a long run of them does not nest
        // (right recursion would make every member's end complete one rule
        // per member before it).
        let free_loop = free.as_ref().map_or(G::Empty, |m| {
            G::rep(G::seq([sep.clone(), m.clone()]), 0, None)
        });
        for (seen, &rule) in rules.iter().enumerate() {
            let end = if seen & required_mask == required_mask {
                G::Empty
            } else {
                G::Nothing
            };
            let more = G::seq([sep.clone(), next(seen)]);
            self.rules
                .define(rule, G::seq([free_loop.clone(), G::alt([end, more])]));
        }
        let first_free = free.map(|m| G::seq([m, G::Ref(rules[0])]));
        Members::new(
            G::alt([next(0)].into_iter().chain(first_free)),
            required_mask == 0,
        )
    }

    /// `g` as a reference: itself if it is one, else a new rule named `name`.
    fn rule_of(&mut self, g: &G, name: &str) -> G {
        if let G::Ref(_) = g {
            return g.clone();
        }
        let rule = self.rules.declare(name);
        self.rules.define(rule, g.clone());
        G::Ref(rule)
    }

    /// A member whose key is none of `declared` (`None` if none may appear).
    fn extra_member(&mut self, node: &Node, declared: &[String], name: &str) -> Option<G> {
        let default = self.options.additional_properties;
        let forbidden = node.objects.iter().any(|part| match &part.additional {
            Others::None => part.patterns.is_empty(),
            Others::Unsaid => !default && !part.properties.is_empty() && part.patterns.is_empty(),
            _ => false,
        });
        if forbidden {
            return None;
        }
        let pattern_parts: Vec<&schema::ObjectPart> = node
            .objects
            .iter()
            .filter(|p| !p.patterns.is_empty())
            .collect();
        let mut members = Vec::new();
        let mut pattern_part = None;
        if let Some(part) = pattern_parts.first() {
            let part = (*part).clone();
            if pattern_parts.len() > 1 || part.patterns.len() > 1 {
                self.notes.approximate(
                    &part.pointer,
                    "patternProperties",
                    "a key matching several patterns needs only one pattern's schema",
                );
            }
            members = self.pattern_members(&part, declared, name);
            if part.additional == Others::None {
                return Some(G::alt(members.into_iter().map(|member| member.member)));
            }
            pattern_part = Some(part.pointer);
        }
        let key: Vec<String> = node
            .objects
            .iter()
            .filter_map(|part| match &part.additional {
                Others::Schema(p) => Some(p.clone()),
                _ => None,
            })
            .collect();
        let any_value = self.allows_anything(&key);
        let value = self.child(key, &format!("{name}_value"));
        // A pattern member whose value is the one any other key takes, and
        // whose pattern no declared name matches, adds nothing to the
        // other keys' member (unless `propertyNames` restricts those).
        if node.property_names.is_empty() {
            members.retain(|member| member.shadows_declared || member.value != value);
        }
        if let Some(pointer) = pattern_part.filter(|_| !members.is_empty()) {
            self.notes.approximate(
                &pointer,
                "patternProperties",
                "a key matching a pattern may take the `additionalProperties` schema instead",
            );
            // So where any other key takes any value, a pattern member adds
            // nothing either — but work: a key pattern such as
            // `[0-9a-f]{32}` may begin at every character of a key, and
            // the two readings of every key made the first entry inside it
            // walk the whole trie (`Github_trivial---o78129`).
            if node.property_names.is_empty() && any_value {
                members.retain(|member| member.shadows_declared);
            }
        }
        let mut alternatives: Vec<G> = members.into_iter().map(|member| member.member).collect();
        let key_separator = self.key_separator(self.depth);
        if let Some(pointer) = node.property_names.first().cloned() {
            let names = self.collect(&node.property_names);
            let (parent, _) = pointer.rsplit_once('/').unwrap_or(("", &pointer));
            if names.nothing || names.types & types::STRING == 0 {
                // No name is allowed: only pattern members, if any.
                self.notes.enforced(parent, "propertyNames");
                return (!alternatives.is_empty()).then(|| G::alt(alternatives));
            }
            if declared.is_empty() {
                self.notes.enforced(parent, "propertyNames");
                // A quoted string (or the shared string block).
                let key = self.string(&names);
                alternatives.push(G::seq([key, key_separator, value]));
                return Some(G::alt(alternatives));
            }
            self.notes.approximate(
                parent,
                "propertyNames",
                "only checked when no properties are declared",
            );
        }
        let key_body = self.other_key(declared, name);
        alternatives.push(G::seq([quoted(key_body), key_separator, value]));
        Some(G::alt(alternatives))
    }

    /// The body of a key that is none of `declared`: a reference to an
    /// inline rule.
    fn other_key(&mut self, declared: &[String], name: &str) -> G {
        let mut names = declared.to_vec();
        names.sort();
        let memo_key = (names, self.level(self.depth));
        if let Some(&rule) = self.other_keys.get(&memo_key) {
            return G::Ref(rule);
        }
        let any = self.block(Block::CanonicalChar, self.depth);
        let not_plain = self.block(Block::NotPlainChar, self.depth);
        let mut excluded = memo_key.0.clone();
        excluded.dedup();
        let rule_name = format!("{name}_other_key");
        // Names with other characters have more than one spelling at a
        // byte (escapes, multi-byte characters): their trie is spelled out
        // here, rarely.
        let body = if excluded.iter().all(|name| strings::is_plain(name)) {
            G::Except(Box::new(Except {
                excluded,
                any,
                not_plain,
            }))
        } else {
            let excluded: Vec<&str> = excluded.iter().map(String::as_str).collect();
            strings::encoded_text_except(&excluded, &any, &not_plain, &mut |g| {
                self.rules.part(&rule_name, g)
            })
        };
        let rule = self.rules.declare_inline(&rule_name);
        self.rules.define(rule, body);
        self.other_keys.insert(memo_key, rule);
        G::Ref(rule)
    }

    /// One member per pattern of `patternProperties`: a key the pattern
    /// matches and the pattern's value schema.
    fn pattern_members(
        &mut self,
        part: &schema::ObjectPart,
        declared: &[String],
        name: &str,
    ) -> Vec<PatternMember> {
        let key_separator = self.key_separator(self.depth);
        let mut members = Vec::new();
        for (pattern, pointer) in &part.patterns {
            let shadows_declared = declared.iter().any(|d| pattern_matches(pattern, d));
            if shadows_declared {
                self.notes.approximate(
                    &part.pointer,
                    "patternProperties",
                    "a declared property may appear again under a pattern",
                );
            }
            let value = self.child(vec![pointer.clone()], &format!("{name}_pattern"));
            let member = match strings::pattern_body(pattern) {
                Ok(key) => {
                    self.notes.enforced(&part.pointer, "patternProperties");
                    G::seq([quoted(key), key_separator.clone(), value.clone()])
                }
                Err(err) => {
                    self.notes.approximate(
                        &part.pointer,
                        "patternProperties",
                        &format!("{}; any key is allowed", err.0),
                    );
                    // Any key: the declared names too.
                    members.push(PatternMember {
                        member: G::seq([
                            self.block(Block::String, self.depth),
                            key_separator.clone(),
                            value.clone(),
                        ]),
                        value,
                        shadows_declared: true,
                    });
                    continue;
                }
            };
            members.push(PatternMember {
                member,
                value,
                shadows_declared,
            });
        }
        members
    }
}

/// A member of an object for one pattern of `patternProperties`.
struct PatternMember {
    /// The key, the separator and the value.
    member: G,
    /// The value alone.
    value: G,
    /// Whether a declared property's name may match the key.
    shadows_declared: bool,
}

/// The items of an array: prefix items by position, then `rest`, with the
/// count between `min` and `max`. `part` makes a rule of the items after
/// every [`PREFIX_RUN`] prefix items (their optional tails nest).
fn array_members(
    prefix: &[G],
    rest: &G,
    sep: &G,
    min: u64,
    max: Option<u64>,
    part: &mut dyn FnMut(G) -> G,
) -> Members {
    let some = if max == Some(0) {
        G::Nothing
    } else {
        items(prefix, rest, sep, min.max(1), max, part)
    };
    Members::new(some, min == 0)
}

/// Prefix items nested in one rule body at most (each is a level or two).
const PREFIX_RUN: usize = 32;

/// The fewest properties of a node whose rule an equal node shares (see
/// [`Emitter::shared_body`]): below, comparing costs about what building
/// the body again does.
const SHARED_BODY_PROPERTIES: usize = 16;

/// The items of a non-empty array (see [`array_members`]), built from the
/// last prefix item back: item `i` is followed by the items after it, and
/// may be the last once there are `min` items.
fn items(
    prefix: &[G],
    rest: &G,
    sep: &G,
    min: u64,
    max: Option<u64>,
    part: &mut dyn FnMut(G) -> G,
) -> G {
    let lead = |i: usize| if i == 0 { G::Empty } else { sep.clone() };
    // Where the count reaches `max`, or the items after the prefix.
    let within_prefix =
        max.and_then(|max| usize::try_from(max).ok().filter(|&m| m <= prefix.len()));
    let (last, mut tail) = match within_prefix {
        Some(max) => (max, G::Empty),
        _ => {
            let count = prefix.len() as u64;
            let at_least = u32::try_from(min.saturating_sub(count)).unwrap_or(u32::MAX);
            let at_most = max.map(|m| u32::try_from(m - count).unwrap_or(u32::MAX));
            let tail = if prefix.is_empty() {
                // The first item has no separator.
                let more = G::rep(
                    G::seq([sep.clone(), rest.clone()]),
                    at_least.saturating_sub(1),
                    at_most.map(|m| m - 1),
                );
                let first = G::seq([rest.clone(), more]);
                if at_least == 0 { G::opt(first) } else { first }
            } else {
                G::rep(G::seq([sep.clone(), rest.clone()]), at_least, at_most)
            };
            (prefix.len(), tail)
        }
    };
    for i in (0..last).rev() {
        if i > 0 && (last - i).is_multiple_of(PREFIX_RUN) {
            tail = part(tail);
        }
        let this = G::seq([lead(i), prefix[i].clone(), tail]);
        tail = if i as u64 >= min { G::opt(this) } else { this };
    }
    tail
}

/// Members of a literal: `parts` in turn, if there are any.
fn fixed_members(parts: Vec<G>) -> Members {
    let none = parts.is_empty();
    Members::new(if none { G::Nothing } else { G::seq(parts) }, none)
}

/// A keyword constant of JSON.
#[derive(Clone, Copy)]
enum Constant {
    True,
    False,
    Null,
}

impl Emitter<'_> {
    /// `constant` as the options write it: JSON's, or Python's.
    fn constant(&self, constant: Constant) -> G {
        G::lit(match (constant, self.options.literals) {
            (Constant::True, Literals::Json) => "true",
            (Constant::False, Literals::Json) => "false",
            (Constant::Null, Literals::Json) => "null",
            (Constant::True, Literals::Python) => "True",
            (Constant::False, Literals::Python) => "False",
            (Constant::Null, Literals::Python) => "None",
        })
    }
}

/// `body` between double quotes.
fn quoted(body: G) -> G {
    match body {
        // One string made, not three joined: a schema has thousands.
        G::Lit(text) => G::Lit(format!("\"{text}\"")),
        body => G::seq([G::lit("\""), body, G::lit("\"")]),
    }
}

/// A line break and the indentation of `depth` levels of `indent` spaces.
fn new_line(indent: u32, depth: u32) -> String {
    let width = usize::try_from(indent.saturating_mul(depth)).unwrap_or(usize::MAX);
    format!("\n{:width$}", "")
}

/// One JSON string character, any escape allowed; a surrogate pair
/// written as two `\u` escapes is one character, a lone surrogate none.
fn json_char() -> G {
    let hex = || G::class([('0', '9'), ('a', 'f'), ('A', 'F')]);
    let code = G::alt([
        G::seq([
            G::class([('0', '9'), ('a', 'c'), ('A', 'C'), ('e', 'f'), ('E', 'F')]),
            hex(),
            hex(),
            hex(),
        ]),
        G::seq([
            G::class([('d', 'd'), ('D', 'D')]),
            G::class([('0', '7')]),
            hex(),
            hex(),
        ]),
        G::seq([
            G::class([('d', 'd'), ('D', 'D')]),
            G::class([('8', '9'), ('a', 'b'), ('A', 'B')]),
            hex(),
            hex(),
            G::lit("\\u"),
            G::class([('d', 'd'), ('D', 'D')]),
            G::class([('c', 'f'), ('C', 'F')]),
            hex(),
            hex(),
        ]),
    ]);
    G::alt([
        G::class([('\u{20}', '!'), ('#', '['), (']', char::MAX)]),
        G::seq([
            G::lit("\\"),
            G::alt([
                G::class([
                    ('"', '"'),
                    ('\\', '\\'),
                    ('/', '/'),
                    ('b', 'b'),
                    ('f', 'f'),
                    ('n', 'n'),
                    ('r', 'r'),
                    ('t', 't'),
                ]),
                G::seq([G::lit("u"), code]),
            ]),
        ]),
    ])
}

/// Whether `value` passes the simple checks of `node` (types, lengths,
/// bounds): `enum` values are filtered by the schema's other keywords.
fn fits(node: &Node, value: &Value) -> bool {
    let kind = match value {
        Value::Null => types::NULL,
        Value::Bool(_) => types::BOOLEAN,
        Value::Number(n) => {
            let integral = n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0);
            if integral {
                types::INTEGER
            } else {
                types::FRACTION
            }
        }
        Value::String(_) => types::STRING,
        Value::Array(_) => types::ARRAY,
        Value::Object(_) => types::OBJECT,
    };
    if node.types & kind == 0 {
        return false;
    }
    match value {
        Value::String(s) => {
            let len = s.chars().count() as u64;
            len >= node.min_length && node.max_length.is_none_or(|m| len <= m)
        }
        Value::Number(n) => {
            let Some(d) = Decimal::parse(&n.to_string()) else {
                return true;
            };
            // `d` is on the allowed side of a bound, or on it if inclusive.
            let within = |bound: Option<&numbers::Bound>, side: std::cmp::Ordering| {
                bound.is_none_or(|b| {
                    let order = d.cmp_value(&b.value);
                    order == side || (order.is_eq() && !b.exclusive)
                })
            };
            within(node.lower.as_ref(), std::cmp::Ordering::Greater)
                && within(node.upper.as_ref(), std::cmp::Ordering::Less)
        }
        _ => true,
    }
}

/// What a listed value (`enum`, `const`) must pass in a schema: `node`'s
/// checks ([`fits`]) and, for a string, every `pattern` of it that can be
/// read (compiled once for all the values).
struct ValueChecks<'n> {
    node: &'n Node,
    patterns: Vec<regex_automata::meta::Regex>,
}

impl<'n> ValueChecks<'n> {
    fn of(node: &'n Node) -> Self {
        let patterns = (node.patterns.iter())
            .filter_map(|(pattern, _)| strings::pattern_regex(pattern))
            .collect();
        Self { node, patterns }
    }

    fn fits(&self, value: &Value) -> bool {
        fits(self.node, value)
            && match value {
                Value::String(text) => self.patterns.iter().all(|regex| regex.is_match(text)),
                _ => true,
            }
    }
}

/// A number of `enum` / `const` (as serde_json prints it) in every
/// plain spelling of its value: trailing zeros after the point, and `.0…`
/// after an integer (`1`, `1.0` and `1.00` are the same JSON Schema value).
fn number_literal(text: &str) -> G {
    if text.contains(['e', 'E']) {
        return G::lit(text);
    }
    let zeros = |min| G::rep(G::lit("0"), min, None);
    match text.split_once('.') {
        Some((int, fraction)) => {
            let fraction = fraction.trim_end_matches('0');
            if fraction.is_empty() {
                G::seq([G::lit(int), G::opt(G::seq([G::lit("."), zeros(1)]))])
            } else {
                G::seq([G::lit(format!("{int}.{fraction}")), zeros(0)])
            }
        }
        None => G::seq([G::lit(text), G::opt(G::seq([G::lit("."), zeros(1)]))]),
    }
}

/// Whether the property name `name` satisfies the `propertyNames` schema
/// `names` (its type, lengths, patterns and values).
fn name_fits(names: &Node, name: &str) -> bool {
    let value = Value::String(name.to_string());
    !names.nothing
        && fits(names, &value)
        && names
            .patterns
            .iter()
            .all(|(pattern, _)| pattern_matches(pattern, name))
        && names
            .values
            .as_ref()
            .is_none_or(|(values, _)| values.contains(&value))
}

/// Whether `node` constrains nothing but its types.
fn is_blank_except_types(node: &Node) -> bool {
    let blank = Node {
        types: node.types,
        ..Node::default()
    };
    node.values == blank.values
        && node.min_length == 0
        && node.max_length.is_none()
        && node.patterns.is_empty()
        && node.formats.is_empty()
        && node.lower.is_none()
        && node.upper.is_none()
        && node.multiple_of.is_empty()
        && node.objects.is_empty()
        && node.required.is_empty()
        && node.property_names.is_empty()
        && node.min_properties.is_none()
        && node.max_properties.is_none()
        && node.arrays.is_empty()
        && node.min_items == 0
        && node.max_items.is_none()
        && node.unique_items.is_none()
        && node.contains.is_empty()
        && node.choices.is_empty()
        && node.nots.is_empty()
        && node.forbidden.is_empty()
}

/// Whether the ECMA-262 `pattern` matches somewhere in `text` (false if the
/// pattern cannot be compiled).
fn pattern_matches(pattern: &str, text: &str) -> bool {
    strings::pattern_regex(pattern).is_some_and(|re| re.is_match(text))
}

/// An object's property names: the declared ones in order of first
/// appearance, then the required ones that no `properties` declares.
/// Looked up in a set: a schema may list tens of thousands of properties.
fn property_names(node: &Node) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut seen: FxHashSet<&str> = FxHashSet::default();
    let declared = (node.objects.iter())
        .flat_map(|part| &part.properties)
        .map(|(n, _)| n);
    for n in declared.chain(&node.required) {
        if seen.insert(n) {
            names.push(n.clone());
        }
    }
    names
}
