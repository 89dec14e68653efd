//! The grammar the JSON Schema front end builds: rules of simple expressions,
//! simplified as they are built, pruned of what can never match, and then
//! either printed as `.xg` text or turned into the resolved tree directly.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::hash::{BuildHasher as _, Hash, Hasher};

use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet, FxHasher};

use xg_runtime::RuleId;

use crate::budget::{Budget, Exceeded};
use crate::ir;
use crate::source::Span;
use crate::syntax::print;
use crate::tree::{self, CharSet};
use xg_runtime::lru::free_aside;

use super::strings;

/// How many levels of an item [`G::alt`] hashes to tell items apart.
const SHAPE_DEPTH: u32 = 3;

/// Most levels of nesting a rule body has: a part this high becomes a rule
/// of its own (see [`Rules::define`]). Every later stage walks expressions
/// recursively, so their depth must not grow with the input (a long
/// property name excluded from extra keys is a trie as deep as the name).
/// The highest body of the 10,802 MaskBench schemas has 193 levels.
pub(crate) const MAX_HEIGHT: usize = 256;

/// An expression of the generated grammar.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum G {
    /// Matches nothing at all (pruned away before output).
    Nothing,
    /// The empty string.
    Empty,
    /// A non-empty literal.
    Lit(String),
    /// One character of a non-empty set.
    Class(CharSet),
    /// A rule of the same grammar, by index.
    Ref(usize),
    /// Each in turn (at least two, none empty, nothing or a sequence).
    Seq(Vec<G>),
    /// Any one (at least two, none nothing or a choice).
    Alt(Vec<G>),
    /// Repeated `min` to `max` times (`None`: unbounded).
    Rep(Box<G>, u32, Option<u32>),
    /// A string body that is none of some strings (see [`Except`]).
    Except(Box<Except>),
}

/// A string body (between the quotes) that is none of `excluded`, written
/// canonically: an extra property's key. Its expression is a trie of the
/// excluded strings, half of a large schema's grammar when spelled out:
/// pruning, merging and inlining walk it as this one leaf, lowering makes
/// it an [`ir::Except`], which the automaton stage builds as a trie
/// directly, and only front ends that take `.xg` rules spell it out (by
/// [`strings::encoded_text_except`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Except {
    /// The excluded strings, sorted, without duplicates, each made of
    /// [`strings::PLAIN`] characters (others are spelled out at once).
    pub(crate) excluded: Vec<String>,
    /// One canonical character.
    pub(crate) any: G,
    /// One of the [`strings::NOT_PLAIN`] characters.
    pub(crate) not_plain: G,
}

impl G {
    /// The units of work a pass over the rules spends on this body
    /// ([`Budget::spend`]): one, and one per item of its top level, known
    /// without walking it (a large object's choice has 80,000 items); the
    /// clock is read once per batch, not once per rule.
    fn units(&self) -> usize {
        match self {
            G::Seq(items) | G::Alt(items) => 1 + items.len(),
            _ => 1,
        }
    }

    /// The approximate bytes `self` holds, itself included.
    fn bytes(&self) -> usize {
        size_of::<G>()
            + match self {
                G::Nothing | G::Empty | G::Ref(_) => 0,
                G::Lit(text) => text.len(),
                G::Class(set) => size_of_val(set.ranges()),
                G::Seq(items) | G::Alt(items) => items.iter().map(G::bytes).sum(),
                G::Rep(inner, _, _) => inner.bytes(),
                G::Except(except) => {
                    let strings: usize = except
                        .excluded
                        .iter()
                        .map(|s| size_of::<String>() + s.len())
                        .sum();
                    strings + except.any.bytes() + except.not_plain.bytes()
                }
            }
    }

    /// The literal `text` (`Empty` if it is empty).
    pub(crate) fn lit(text: impl Into<String>) -> G {
        let text = text.into();
        if text.is_empty() {
            G::Empty
        } else {
            G::Lit(text)
        }
    }

    /// One character from `ranges` (`Nothing` if there is none).
    pub(crate) fn class(ranges: impl IntoIterator<Item = (char, char)>) -> G {
        let set = CharSet::from_ranges(ranges);
        if set.is_empty() {
            G::Nothing
        } else {
            G::Class(set)
        }
    }

    /// `items` in turn: literals next to each other merge, empties vanish,
    /// and anything with `Nothing` in it is `Nothing`.
    pub(crate) fn seq(items: impl IntoIterator<Item = G>) -> G {
        let mut out: Vec<G> = Vec::new();
        for item in items {
            match item {
                G::Nothing => return G::Nothing,
                G::Empty => {}
                G::Seq(inner) => {
                    for g in inner {
                        push_seq(&mut out, g);
                    }
                }
                g => push_seq(&mut out, g),
            }
        }
        match out.len() {
            0 => G::Empty,
            1 => out.pop().expect("one item"),
            _ => G::Seq(out),
        }
    }

    /// Any one of `items`: nested choices flatten, `Nothing` drops out,
    /// duplicates are kept once.
    pub(crate) fn alt(items: impl IntoIterator<Item = G>) -> G {
        let mut out: Vec<G> = Vec::new();
        // Shape hashes of `out`'s items: a new one is a new item; a known
        // one is compared in full (a duplicate, or items alike near the
        // top). Not full hashes: a choice of nested choices (a trie) would
        // hash each subtree once per level above it.
        let mut seen: FxHashSet<u64> = FxHashSet::default();
        let mut push = |g: G| {
            let mut hasher = FxHasher::default();
            g.hash_shape(&mut hasher, SHAPE_DEPTH);
            if seen.insert(hasher.finish()) || !out.contains(&g) {
                out.push(g);
            }
        };
        for item in items {
            match item {
                G::Nothing => {}
                G::Alt(inner) => inner.into_iter().for_each(&mut push),
                g => push(g),
            }
        }
        match out.len() {
            0 => G::Nothing,
            1 => out.pop().expect("one item"),
            _ => G::Alt(out),
        }
    }

    /// Hashes what `self` is down to `depth` levels: the kind, literals,
    /// classes and references, and of a sequence or choice its length and
    /// its first and last items.
    fn hash_shape(&self, hasher: &mut FxHasher, depth: u32) {
        std::mem::discriminant(self).hash(hasher);
        match self {
            G::Nothing | G::Empty => {}
            G::Lit(text) => text.hash(hasher),
            G::Class(set) => set.hash(hasher),
            G::Ref(rule) => rule.hash(hasher),
            G::Seq(items) | G::Alt(items) => {
                items.len().hash(hasher);
                if depth > 0 {
                    for item in items.first().into_iter().chain(items.last()) {
                        item.hash_shape(hasher, depth - 1);
                    }
                }
            }
            G::Rep(inner, min, max) => {
                (min, max).hash(hasher);
                if depth > 0 {
                    inner.hash_shape(hasher, depth - 1);
                }
            }
            G::Except(except) => except.excluded.hash(hasher),
        }
    }

    /// `g` repeated `min` to `max` times.
    pub(crate) fn rep(g: G, min: u32, max: Option<u32>) -> G {
        if max.is_some_and(|max| max < min) {
            return G::Nothing;
        }
        match (g, min, max) {
            (_, 0, Some(0)) | (G::Empty, _, _) | (G::Nothing, 0, _) => G::Empty,
            (G::Nothing, _, _) => G::Nothing,
            (g, 1, Some(1)) => g,
            (g, min, max) => G::Rep(Box::new(g), min, max),
        }
    }

    /// `g` or nothing.
    pub(crate) fn opt(g: G) -> G {
        G::rep(g, 0, Some(1))
    }

    /// Whether the expression can match anything, given which rules can.
    fn productive(&self, rules: &[bool]) -> bool {
        match self {
            G::Nothing => false,
            // An exclusion leaves strings of a character no excluded
            // string starts with.
            G::Empty | G::Lit(_) | G::Class(_) | G::Except(_) => true,
            G::Ref(i) => rules[*i],
            G::Seq(items) => items.iter().all(|g| g.productive(rules)),
            G::Alt(items) => items.iter().any(|g| g.productive(rules)),
            G::Rep(g, min, _) => *min == 0 || g.productive(rules),
        }
    }

    /// The expression with references to unproductive rules replaced by
    /// `Nothing`, simplified again.
    fn prune(self, rules: &[bool]) -> G {
        self.replace_refs(&mut |i| (!rules[i]).then_some(G::Nothing))
            .0
    }

    /// The expression with each reference `i` for which `replacement(i)`
    /// is `Some` replaced by it, and whether any was. Only the parts above
    /// a replaced reference are simplified again (the rest is moved as it
    /// is: rule bodies of large schemas are large, and most references in
    /// them stay).
    fn replace_refs(self, replacement: &mut impl FnMut(usize) -> Option<G>) -> (G, bool) {
        let mut replace_all = |items: Vec<G>| {
            let mut replaced = false;
            let items: Vec<G> = items
                .into_iter()
                .map(|g| {
                    let (g, changed) = g.replace_refs(replacement);
                    replaced |= changed;
                    g
                })
                .collect();
            (items, replaced)
        };
        match self {
            G::Ref(i) => match replacement(i) {
                Some(g) => (g, true),
                None => (G::Ref(i), false),
            },
            G::Seq(items) => match replace_all(items) {
                (items, true) => (G::seq(items), true),
                (items, false) => (G::Seq(items), false),
            },
            G::Alt(items) => match replace_all(items) {
                (items, true) => (G::alt(items), true),
                (items, false) => (G::Alt(items), false),
            },
            G::Rep(g, min, max) => match g.replace_refs(replacement) {
                (g, true) => (G::rep(g, min, max), true),
                (g, false) => (G::Rep(Box::new(g), min, max), false),
            },
            G::Except(mut except) => {
                let (any, any_replaced) = except.any.replace_refs(replacement);
                let (not_plain, not_plain_replaced) = except.not_plain.replace_refs(replacement);
                except.any = any;
                except.not_plain = not_plain;
                (G::Except(except), any_replaced || not_plain_replaced)
            }
            g @ (G::Nothing | G::Empty | G::Lit(_) | G::Class(_)) => (g, false),
        }
    }

    /// Whether `self` holds a [`G::Except`].
    fn has_except(&self) -> bool {
        match self {
            G::Except(_) => true,
            G::Seq(items) | G::Alt(items) => items.iter().any(G::has_except),
            G::Rep(g, _, _) => g.has_except(),
            G::Nothing | G::Empty | G::Lit(_) | G::Class(_) | G::Ref(_) => false,
        }
    }

    fn visit_refs(&self, f: &mut impl FnMut(usize)) {
        match self {
            G::Ref(i) => f(*i),
            G::Seq(items) | G::Alt(items) => items.iter().for_each(|g| g.visit_refs(f)),
            G::Rep(g, _, _) => g.visit_refs(f),
            G::Except(except) => {
                except.any.visit_refs(f);
                except.not_plain.visit_refs(f);
            }
            G::Nothing | G::Empty | G::Lit(_) | G::Class(_) => {}
        }
    }

    /// Calls `f` on every reference, which it may change in place.
    fn visit_refs_mut(&mut self, f: &mut impl FnMut(&mut usize)) {
        match self {
            G::Ref(i) => f(i),
            G::Seq(items) | G::Alt(items) => items.iter_mut().for_each(|g| g.visit_refs_mut(f)),
            G::Rep(g, _, _) => g.visit_refs_mut(f),
            G::Except(except) => {
                except.any.visit_refs_mut(f);
                except.not_plain.visit_refs_mut(f);
            }
            G::Nothing | G::Empty | G::Lit(_) | G::Class(_) => {}
        }
    }
}

/// Whether `g` has `levels` levels of nesting or more (a literal has none),
/// found without recursion.
fn height_reaches(g: &G, levels: usize) -> bool {
    let mut stack = vec![(g, 0)];
    while let Some((g, level)) = stack.pop() {
        if level >= levels {
            return true;
        }
        match g {
            G::Seq(items) | G::Alt(items) => stack.extend(items.iter().map(|g| (g, level + 1))),
            G::Rep(inner, _, _) => stack.push((inner, level + 1)),
            G::Nothing | G::Empty | G::Lit(_) | G::Class(_) | G::Ref(_) | G::Except(_) => {}
        }
    }
    false
}

fn push_seq(out: &mut Vec<G>, g: G) {
    if let (Some(G::Lit(last)), G::Lit(next)) = (out.last_mut(), &g) {
        last.push_str(next);
        return;
    }
    out.push(g);
}

/// A generated grammar: named rules, rule 0 the root.
#[derive(Clone, Debug, Default)]
pub(crate) struct Rules {
    names: Vec<String>,
    bodies: Vec<G>,
    /// Every name declared, and per base name the next suffix to try: a
    /// schema with thousands of rules declares each in constant time.
    /// (Pruning drops rules, not names from here: nothing is declared
    /// after it.)
    declared: FxHashSet<String>,
    suffixes: FxHashMap<String, usize>,
    /// Rules written out where they are used once pruning is done: parts
    /// shared while the grammar is built (a large body that would
    /// otherwise be copied into, and walked in, every rule that uses it)
    /// but better inline in the automaton (see [`Rules::declare_inline`]).
    inline: FxHashSet<usize>,
    /// Per rule, whether it stays a rule of its own in the automata (see
    /// [`tree::Rule::keep`]).
    keep: Vec<bool>,
    /// The bytes of every body defined so far (see [`G::bytes`]).
    defined_bytes: usize,
}

impl Rules {
    /// The approximate bytes the rules hold.
    pub(crate) fn bytes(&self) -> usize {
        let names: usize = self
            .names
            .iter()
            .map(|n| size_of::<String>() + n.len())
            .sum();
        names + self.bodies.iter().map(G::bytes).sum::<usize>()
    }

    /// Declares a rule named `name` (made unique) with an empty body for now.
    pub(crate) fn declare(&mut self, name: &str) -> usize {
        let mut unique = sanitize(name);
        if self.declared.contains(&unique) {
            let base = unique;
            let n = self.suffixes.entry(base.clone()).or_insert(2);
            loop {
                unique = format!("{base}_{n}");
                *n += 1;
                if !self.declared.contains(&unique) {
                    break;
                }
            }
        }
        self.declared.insert(unique.clone());
        self.names.push(unique);
        self.bodies.push(G::Nothing);
        self.keep.push(false);
        self.names.len() - 1
    }

    /// Declares a rule like [`Rules::declare`] whose body pruning writes
    /// out in place of each reference to it: while the grammar is built and
    /// merged, its users hold a reference, not a copy; the automaton of
    /// each user has the body inline (an extra property's key, for one:
    /// as a rule of its own its walk would not see the `:` after it, and
    /// masks inside keys would cost more).
    pub(crate) fn declare_inline(&mut self, name: &str) -> usize {
        let rule = self.declare(name);
        self.inline.insert(rule);
        rule
    }

    /// Makes the declared `rule` another name for `original`: pruning sends
    /// its references to `original`, and drops it.
    pub(crate) fn alias(&mut self, rule: usize, original: usize) {
        self.define(rule, G::Ref(original));
        self.inline.insert(rule);
    }

    /// Declares a building block many schemas have: a rule kept of its own
    /// in the automata, however small, so that every grammar with it
    /// shares its mask-cache entries (see [`tree::Rule::keep`]).
    pub(crate) fn declare_kept(&mut self, name: &str) -> usize {
        let rule = self.declare(name);
        self.keep[rule] = true;
        rule
    }

    /// Sets the body of rule `rule`. Parts of it [`MAX_HEIGHT`] levels
    /// high become rules of their own (named after `rule`), so that no
    /// body is deeper than that.
    pub(crate) fn define(&mut self, rule: usize, body: G) {
        let body = if height_reaches(&body, MAX_HEIGHT) {
            let name = format!("{}_part", self.names[rule]);
            self.bounded(body, &name)
        } else {
            body
        };
        self.defined_bytes += body.bytes();
        self.bodies[rule] = body;
    }

    /// The approximate bytes of every body defined so far, for the
    /// compilation's memory limit.
    pub(crate) fn defined_bytes(&self) -> usize {
        self.defined_bytes
    }

    /// A new rule named after `name` whose body is `body`, as a reference:
    /// for generators whose output is as deep as their input is long.
    pub(crate) fn part(&mut self, name: &str, body: G) -> G {
        let rule = self.declare(&format!("{name}_part"));
        self.define(rule, body);
        G::Ref(rule)
    }

    /// `g` rebuilt bottom-up without recursion, each part that reaches
    /// [`MAX_HEIGHT`] levels moved to a rule of its own named `name`.
    fn bounded(&mut self, g: G, name: &str) -> G {
        /// A sequence, choice or repetition being rebuilt.
        struct Open {
            shape: Shape,
            rest: std::vec::IntoIter<G>,
            done: Vec<G>,
            /// Levels of its highest child done so far, plus one.
            height: usize,
        }
        enum Shape {
            Seq,
            Alt,
            Rep(u32, Option<u32>),
        }
        let mut open: Vec<Open> = Vec::new();
        let mut next = g;
        loop {
            let (shape, children) = match next {
                G::Seq(items) if !items.is_empty() => (Shape::Seq, items),
                G::Alt(items) if !items.is_empty() => (Shape::Alt, items),
                G::Rep(inner, min, max) => (Shape::Rep(min, max), vec![*inner]),
                leaf => {
                    // Climb while the nodes above are complete.
                    let mut done = (leaf, 0);
                    loop {
                        let Some(top) = open.last_mut() else {
                            return done.0;
                        };
                        top.done.push(done.0);
                        top.height = top.height.max(done.1 + 1);
                        if let Some(child) = top.rest.next() {
                            next = child;
                            break;
                        }
                        let node = open.pop().expect("an open node");
                        let mut children = node.done;
                        let g = match node.shape {
                            Shape::Seq => G::Seq(children),
                            Shape::Alt => G::Alt(children),
                            Shape::Rep(min, max) => {
                                G::Rep(Box::new(children.pop().expect("one child")), min, max)
                            }
                        };
                        done = if node.height >= MAX_HEIGHT {
                            let rule = self.declare(name);
                            self.bodies[rule] = g;
                            (G::Ref(rule), 0)
                        } else {
                            (g, node.height)
                        };
                    }
                    continue;
                }
            };
            let mut rest = children.into_iter();
            let first = rest.next().expect("only non-empty nodes are opened");
            open.push(Open {
                shape,
                rest,
                done: Vec::new(),
                height: 0,
            });
            next = first;
        }
    }

    /// The name of rule `rule`.
    pub(crate) fn name(&self, rule: usize) -> &str {
        &self.names[rule]
    }

    /// How many rules there are.
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }

    /// Drops everything that can never match and every rule the root no
    /// longer reaches. `false` if the root itself can never match. Checks `budget` rule by
    /// rule (a schema's rules can be large: a long property name spells
    /// itself out in them).
    pub(crate) fn prune(&mut self, budget: &Budget) -> Result<bool, Exceeded> {
        let referrers = self.referrers(budget)?;
        let productive = self.productive(&referrers, budget)?;
        if !productive[0] {
            return Ok(false);
        }
        let mut refers_to_dead = vec![false; self.bodies.len()];
        for (_, referrers) in productive.iter().zip(&referrers).filter(|(p, _)| !**p) {
            for &referrer in referrers {
                refers_to_dead[referrer] = true;
            }
        }
        let bodies = std::mem::take(&mut self.bodies);
        self.bodies = bodies
            .into_iter()
            .zip(refers_to_dead)
            .map(|(g, dead)| {
                budget.spend(g.units())?;
                Ok(if dead { g.prune(&productive) } else { g })
            })
            .collect::<Result<_, Exceeded>>()?;
        // Pruning only drops references: the lists still hold every one.
        self.merge_equal(referrers, budget)?;
        self.write_out_inline(budget)?;
        budget.check()?;
        // Keep the rules the root reaches, in first-reached order.
        let mut order = vec![0];
        let mut new_index = vec![usize::MAX; self.bodies.len()];
        new_index[0] = 0;
        let mut next = 0;
        while next < order.len() {
            let rule = order[next];
            next += 1;
            budget.spend(1)?;
            self.bodies[rule].visit_refs(&mut |target| {
                if new_index[target] == usize::MAX {
                    new_index[target] = order.len();
                    order.push(target);
                }
            });
        }
        let mut bodies = std::mem::take(&mut self.bodies);
        let mut names = std::mem::take(&mut self.names);
        let mut kept = Vec::with_capacity(order.len());
        for &i in &order {
            if let Err(exceeded) = budget.spend(1) {
                free_aside((bodies, names, kept));
                return Err(exceeded);
            }
            let mut body = std::mem::replace(&mut bodies[i], G::Nothing);
            body.visit_refs_mut(&mut |rule| *rule = new_index[*rule]);
            kept.push(body);
        }
        self.bodies = kept;
        self.names = order
            .iter()
            .map(|&i| std::mem::take(&mut names[i]))
            .collect();
        self.keep = order.iter().map(|&i| self.keep[i]).collect();
        Ok(true)
    }

    /// The rules with every [`G::Except`] spelled out as its trie, for
    /// front ends that take `.xg` rules (the automaton stage builds the
    /// trie itself from [`ir::Except`]).
    fn spelled_out(&self) -> Cow<'_, Rules> {
        if !self.bodies.iter().any(G::has_except) {
            return Cow::Borrowed(self);
        }
        let mut rules = self.clone();
        for rule in 0..rules.bodies.len() {
            let body = std::mem::replace(&mut rules.bodies[rule], G::Nothing);
            let name = format!("{}_key", rules.names[rule]);
            rules.bodies[rule] = rules.spell_out(body, &name).0;
        }
        Cow::Owned(rules)
    }

    /// `g` with every [`G::Except`] spelled out as its trie (parts too deep
    /// for one body become rules named after `name`), and whether it had
    /// one. Only the parts above one are simplified again.
    fn spell_out(&mut self, g: G, name: &str) -> (G, bool) {
        let spell_out_all = |items: Vec<G>, rules: &mut Self| {
            let mut changed = false;
            let items: Vec<G> = items
                .into_iter()
                .map(|g| {
                    let (g, spelled) = rules.spell_out(g, name);
                    changed |= spelled;
                    g
                })
                .collect();
            (items, changed)
        };
        match g {
            G::Except(except) => {
                let excluded: Vec<&str> = except.excluded.iter().map(String::as_str).collect();
                let trie = strings::encoded_text_except(
                    &excluded,
                    &except.any,
                    &except.not_plain,
                    &mut |g| self.part(name, g),
                );
                (trie, true)
            }
            G::Seq(items) => match spell_out_all(items, self) {
                (items, true) => (G::seq(items), true),
                (items, false) => (G::Seq(items), false),
            },
            G::Alt(items) => match spell_out_all(items, self) {
                (items, true) => (G::alt(items), true),
                (items, false) => (G::Alt(items), false),
            },
            G::Rep(inner, min, max) => match self.spell_out(*inner, name) {
                (inner, true) => (G::rep(inner, min, max), true),
                (inner, false) => (G::Rep(Box::new(inner), min, max), false),
            },
            g @ (G::Nothing | G::Empty | G::Lit(_) | G::Class(_) | G::Ref(_)) => (g, false),
        }
    }

    /// Makes rules with equal bodies one rule: references to each go to
    /// the first, until no two bodies are equal. Schemas repeat themselves
    /// (every property that is a non-empty string gets a rule of its own),
    /// and one rule in many places has one automaton and, at run time, one
    /// mask-cache combination and one parse state where there were many.
    /// A merged rule is named `shared_N`: it stands for several places.
    ///
    /// In rounds: rules are filed by the hash of their body, equal ones
    /// merge, and the rules that referred to a merged rule are redirected
    /// (each once per round) and filed again in the next.
    ///
    /// `referrers` lists, per rule, the rules that refer to it (a rule
    /// more than once if it may not any more: they are only visited again).
    fn merge_equal(
        &mut self,
        mut referrers: Vec<Vec<usize>>,
        budget: &Budget,
    ) -> Result<(), Exceeded> {
        let n = self.bodies.len();
        // `merged[r]`: the rule `r` became (itself while it lives).
        let mut merged: Vec<usize> = (0..n).collect();
        let mut filed: Vec<Option<u64>> = vec![None; n];
        let mut by_hash: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
        let mut shared = vec![false; n];
        let mut round: Vec<usize> = (0..n).collect();
        let mut stale = vec![false; n];
        while !round.is_empty() {
            let mut next = Vec::new();
            for rule in round {
                budget.spend(self.bodies[rule].units())?;
                stale[rule] = false;
                if merged[rule] != rule {
                    continue;
                }
                if let Some(old) = filed[rule].take() {
                    let list = by_hash.get_mut(&old).expect("filed rules are listed");
                    list.retain(|&r| r != rule);
                }
                let body = std::mem::replace(&mut self.bodies[rule], G::Nothing);
                self.bodies[rule] = redirect(body, &merged);
                let hash = FxBuildHasher.hash_one(&self.bodies[rule]);
                let list = by_hash.entry(hash).or_default();
                let Some(place) = list
                    .iter()
                    .position(|&other| self.bodies[other] == self.bodies[rule])
                else {
                    list.push(rule);
                    filed[rule] = Some(hash);
                    continue;
                };
                // The earlier rule stays (the root is rule 0), filed where
                // the other was.
                let (kept, gone) = (rule.min(list[place]), rule.max(list[place]));
                list[place] = kept;
                filed[kept] = Some(hash);
                filed[gone] = None;
                merged[gone] = kept;
                shared[kept] = true;
                self.keep[kept] |= self.keep[gone];
                self.bodies[gone] = G::Nothing;
                let moved = std::mem::take(&mut referrers[gone]);
                for &referrer in &moved {
                    if !stale[referrer] && filed[referrer].is_some() {
                        stale[referrer] = true;
                        next.push(referrer);
                    }
                }
                referrers[kept].extend(moved);
            }
            round = next;
        }
        let mut count = 0;
        for (rule, &is_shared) in shared.iter().enumerate() {
            // The root keeps its name.
            if is_shared && rule != 0 && merged[rule] == rule {
                loop {
                    count += 1;
                    let name = format!("shared_{count}");
                    if !self.declared.contains(&name) {
                        self.names[rule] = name;
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// Replaces every reference to an inline rule by its body (simplified
    /// into its place as if written there); the inline rules are then
    /// reached no more and dropped.
    fn write_out_inline(&mut self, budget: &Budget) -> Result<(), Exceeded> {
        if self.inline.is_empty() {
            return Ok(());
        }
        let inline = std::mem::take(&mut self.inline);
        // An inline rule used once, by a rule that is not inline, is moved
        // to its place rather than copied.
        let mut uses = vec![0u32; self.bodies.len()];
        for (rule, body) in self.bodies.iter().enumerate() {
            let weight = if inline.contains(&rule) { 2 } else { 1 };
            let mut visited = 1;
            body.visit_refs(&mut |target| {
                uses[target] += weight;
                visited += 1;
            });
            budget.spend(visited)?;
        }
        let mut bodies = Inliner {
            bodies: &mut self.bodies,
            inline: &inline,
            moved: &uses.iter().map(|&n| n == 1).collect::<Vec<bool>>(),
        };
        for rule in 0..bodies.bodies.len() {
            budget.spend(bodies.bodies[rule].units())?;
            if inline.contains(&rule) {
                continue;
            }
            let mut uses = false;
            bodies.bodies[rule].visit_refs(&mut |target| uses |= inline.contains(&target));
            if uses {
                let body = std::mem::replace(&mut bodies.bodies[rule], G::Nothing);
                bodies.bodies[rule] = bodies.write_out(body);
            }
        }
        Ok(())
    }

    /// Per rule, the rules whose bodies refer to it (once per reference).
    fn referrers(&self, budget: &Budget) -> Result<Vec<Vec<usize>>, Exceeded> {
        let mut referrers: Vec<Vec<usize>> = vec![Vec::new(); self.bodies.len()];
        for (i, body) in self.bodies.iter().enumerate() {
            let mut visited = 1;
            body.visit_refs(&mut |target| {
                referrers[target].push(i);
                visited += 1;
            });
            budget.spend(visited)?;
        }
        Ok(referrers)
    }

    /// Per rule, whether it can match anything (`referrers` as
    /// [`Rules::referrers`] gives them): a rule is rechecked only
    /// when a rule it refers to turns out productive, so this is linear in
    /// the references, whatever order the rules come in.
    fn productive(&self, referrers: &[Vec<usize>], budget: &Budget) -> Result<Vec<bool>, Exceeded> {
        let mut productive = vec![false; self.bodies.len()];
        // A rule waits in `work` at most once at a time: a choice of
        // hundreds of rules is not checked again for each of them.
        let mut queued = vec![true; self.bodies.len()];
        let mut work: Vec<usize> = (0..self.bodies.len()).rev().collect();
        while let Some(rule) = work.pop() {
            budget.spend(1)?;
            queued[rule] = false;
            if productive[rule] || !self.bodies[rule].productive(&productive) {
                continue;
            }
            productive[rule] = true;
            for &referrer in &referrers[rule] {
                if !productive[referrer] && !queued[referrer] {
                    queued[referrer] = true;
                    work.push(referrer);
                }
            }
        }
        Ok(productive)
    }

    /// The grammar as `.xg` text, one rule per line, root first.
    pub(crate) fn to_xg(&self) -> String {
        let rules = self.spelled_out();
        let mut out = String::new();
        for (name, body) in rules.names.iter().zip(&rules.bodies) {
            let _ = write!(out, "{name} ::= ");
            rules.print(&mut out, body, 0);
            out.push('\n');
        }
        out
    }

    /// The grammar as resolved rules whose ids start at `first`, every span
    /// `span`, names prefixed with `prefix`.
    pub(crate) fn to_tree(&self, first: usize, span: Span, prefix: &str) -> Vec<tree::Rule> {
        let rules = self.spelled_out();
        rules
            .names
            .iter()
            .zip(&rules.bodies)
            .zip(&rules.keep)
            .map(|((name, body), &keep)| tree::Rule {
                name: format!("{prefix}{name}"),
                span,
                body: tree_expr(body, first, span),
                lookahead: None,
                keep,
                capture: None,
                limit: crate::tree::Limit::default(),
            })
            .collect()
    }

    /// The grammar as byte-level rules (root first), what [`Rules::to_tree`]
    /// and [`crate::ir::lower`] make of it without the tree in between: a
    /// schema of thousands of rules compiles without building, lowering
    /// and dropping a tree of spans.
    /// Checks `budget` rule by rule.
    pub(crate) fn to_ir(&self, budget: &Budget) -> Result<Vec<ir::Rule>, Exceeded> {
        let mut rules = Vec::with_capacity(self.names.len());
        for ((name, body), &keep) in self.names.iter().zip(&self.bodies).zip(&self.keep) {
            let body = match budget
                .spend(body.units())
                .and_then(|()| ir_expr(body, budget))
            {
                Ok(body) => body,
                Err(exceeded) => {
                    free_aside(rules);
                    return Err(exceeded);
                }
            };
            rules.push(ir::Rule {
                name: name.clone(),
                body,
                lookahead: None,
                keep,
                capture: None,
                limit: crate::tree::Limit::default(),
            });
        }
        Ok(rules)
    }

    /// `items` joined by `separator`, each printed at `item_level`, in
    /// parentheses if `paren`.
    fn print_list(
        &self,
        out: &mut String,
        items: &[G],
        separator: &str,
        paren: bool,
        item_level: u8,
    ) {
        if paren {
            out.push('(');
        }
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(separator);
            }
            self.print(out, item, item_level);
        }
        if paren {
            out.push(')');
        }
    }

    /// Precedence: 0 inside a choice or at the top, 1 inside a sequence,
    /// 2 under a repetition.
    fn print(&self, out: &mut String, g: &G, level: u8) {
        match g {
            G::Nothing => unreachable!("pruned before printing"),
            G::Except(_) => unreachable!("spelled out before printing"),
            G::Empty => out.push_str("()"),
            G::Lit(text) => out.push_str(&print::string(text)),
            G::Class(set) => out.push_str(&print::class(set.ranges())),
            G::Ref(i) => out.push_str(&self.names[*i]),
            G::Seq(items) => self.print_list(out, items, " ", level >= 2, 2.min(level.max(1))),
            G::Alt(items) => self.print_list(out, items, " | ", level >= 1, 0),
            G::Rep(inner, min, max) => {
                // A repetition of a repetition needs parentheses (`(x{1,4})?`).
                let paren = level >= 2;
                if paren {
                    out.push('(');
                }
                self.print(out, inner, 2);
                match (min, max) {
                    (0, Some(1)) => out.push('?'),
                    (0, None) => out.push('*'),
                    (1, None) => out.push('+'),
                    (min, None) => {
                        let _ = write!(out, "{{{min},}}");
                    }
                    (min, Some(max)) if min == max => {
                        let _ = write!(out, "{{{min}}}");
                    }
                    (min, Some(max)) => {
                        let _ = write!(out, "{{{min},{max}}}");
                    }
                }
                if paren {
                    out.push(')');
                }
            }
        }
    }
}

/// `g` with every reference to a merged rule sent to the rule it became
/// (see [`Rules::merge_equal`]), simplified again (two alternatives may have
/// become one).
fn redirect(g: G, merged: &[usize]) -> G {
    let mut moved = false;
    g.visit_refs(&mut |rule| moved |= merged[rule] != rule);
    if moved { redirect_refs(g, merged) } else { g }
}

fn redirect_refs(g: G, merged: &[usize]) -> G {
    g.replace_refs(&mut |mut i| {
        if merged[i] == i {
            return None;
        }
        while merged[i] != i {
            i = merged[i];
        }
        Some(G::Ref(i))
    })
    .0
}

/// The rule bodies while inline rules are written out.
struct Inliner<'a> {
    bodies: &'a mut [G],
    inline: &'a FxHashSet<usize>,
    /// Per rule, whether its one use takes its body.
    moved: &'a [bool],
}

impl Inliner<'_> {
    /// `g` with each reference to one of the `inline` rules replaced by the
    /// rule's body (itself written out).
    fn write_out(&mut self, g: G) -> G {
        g.replace_refs(&mut |i| {
            if !self.inline.contains(&i) {
                return None;
            }
            let body = if self.moved[i] {
                std::mem::replace(&mut self.bodies[i], G::Nothing)
            } else {
                self.bodies[i].clone()
            };
            Some(self.write_out(body))
        })
        .0
    }
}

fn ir_expr(g: &G, budget: &Budget) -> Result<ir::Expr, Exceeded> {
    budget.spend(1)?;
    let all = |items: &[G]| -> Result<Vec<ir::Expr>, Exceeded> {
        items.iter().map(|g| ir_expr(g, budget)).collect()
    };
    Ok(match g {
        G::Nothing => unreachable!("pruned before lowering"),
        G::Except(except) => ir::Expr::Except(ir::Except {
            excluded: except
                .excluded
                .iter()
                .map(|name| name.as_bytes().to_vec())
                .collect(),
            plain: plain_bytes(),
            other: Box::new(ir_expr(&except.not_plain, budget)?),
        }),
        G::Empty => ir::Expr::Empty,
        G::Lit(text) => ir::Expr::Bytes(text.as_bytes().to_vec()),
        G::Class(set) => ir::char_set(set),
        G::Ref(i) => ir::Expr::Ref(RuleId::new(*i).expect("rule count fits")),
        G::Seq(items) => ir::Expr::Sequence(all(items)?),
        G::Alt(items) => ir::Expr::Choice(all(items)?),
        G::Rep(inner, min, max) => ir::Expr::Repeat {
            expr: Box::new(ir_expr(inner, budget)?),
            min: *min,
            max: *max,
        },
    })
}

/// The bytes of the [`strings::PLAIN`] characters.
fn plain_bytes() -> ir::ByteSet {
    let mut set = ir::ByteSet::empty();
    for (lo, hi) in strings::PLAIN {
        let byte = |c: char| u8::try_from(c).expect("plain characters are ASCII");
        set.insert_range(byte(lo), byte(hi));
    }
    set
}

fn tree_expr(g: &G, first: usize, span: Span) -> tree::Expr {
    let kind = match g {
        G::Nothing => unreachable!("pruned before lowering"),
        G::Except(_) => unreachable!("spelled out before lowering"),
        G::Empty => tree::ExprKind::Empty,
        G::Lit(text) => tree::ExprKind::Literal(text.clone()),
        G::Class(set) => tree::ExprKind::Class(set.clone()),
        G::Ref(i) => tree::ExprKind::Ref(RuleId::new(first + i).expect("rule count fits")),
        G::Seq(items) => {
            tree::ExprKind::Sequence(items.iter().map(|g| tree_expr(g, first, span)).collect())
        }
        G::Alt(items) => {
            tree::ExprKind::Choice(items.iter().map(|g| tree_expr(g, first, span)).collect())
        }
        G::Rep(inner, min, max) => tree::ExprKind::Repeat {
            expr: Box::new(tree_expr(inner, first, span)),
            min: *min,
            max: *max,
        },
    };
    tree::Expr { kind, span }
}

/// `name` as an `.xg` identifier: letters, digits and `_`, not starting
/// with a digit, never empty.
fn sanitize(name: &str) -> String {
    let bytes = name.as_bytes();
    let clean = !bytes.is_empty()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_')
        && !bytes[0].is_ascii_digit()
        && bytes[0] != b'_'
        && bytes[bytes.len() - 1] != b'_'
        && !name.contains("__");
    if clean {
        return name.to_string();
    }
    let mut out: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    while out.contains("__") {
        out = out.replace("__", "_");
    }
    let trimmed = out.trim_matches('_');
    let mut out = if trimmed.is_empty() {
        "rule".to_string()
    } else {
        trimmed.to_string()
    };
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'r');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_simplify() {
        assert_eq!(G::seq([G::lit("a"), G::Empty, G::lit("b")]), G::lit("ab"));
        assert_eq!(G::seq([G::lit("a"), G::Nothing]), G::Nothing);
        assert_eq!(G::alt([G::Nothing, G::lit("a"), G::lit("a")]), G::lit("a"));
        assert_eq!(G::rep(G::Nothing, 0, None), G::Empty);
        assert_eq!(G::rep(G::lit("a"), 2, Some(1)), G::Nothing);
    }

    #[test]
    fn rule_names_are_identifiers_whether_or_not_they_need_rewriting() {
        let cases = [
            ("properties_name", "properties_name"),
            ("a", "a"),
            ("a__b", "a_b"),
            ("_a_", "a"),
            ("a-b.c", "a_b_c"),
            ("9lives", "r9lives"),
            ("_9", "r9"),
            ("", "rule"),
            ("___", "rule"),
            ("é", "rule"),
        ];
        for (name, sanitized) in cases {
            assert_eq!(sanitize(name), sanitized, "{name:?}");
        }
    }

    #[test]
    fn unproductive_rules_are_pruned_and_printed_text_is_xg() {
        let mut rules = Rules::default();
        let root = rules.declare("root");
        let loops = rules.declare("loops");
        let used = rules.declare("1 used");
        rules.define(loops, G::seq([G::lit("["), G::Ref(loops), G::lit("]")]));
        rules.define(
            root,
            G::alt([
                G::Ref(loops),
                G::seq([G::lit("x"), G::rep(G::Ref(used), 0, None)]),
            ]),
        );
        rules.define(used, G::class([('a', 'c')]));
        assert!(rules.prune(&Budget::unlimited()).unwrap());
        assert_eq!(
            rules.to_xg(),
            "root ::= \"x\" r1_used*\nr1_used ::= [a-c]\n"
        );
    }

    #[test]
    fn bodies_deeper_than_the_bound_are_split_into_rules() {
        let mut rules = Rules::default();
        let root = rules.declare("root");
        let mut deep = G::lit("x");
        for _ in 0..10_000 {
            deep = G::Rep(Box::new(G::Seq(vec![G::lit("a"), deep])), 0, Some(1));
        }
        rules.define(root, deep);
        assert!(rules.len() > 10_000 * 2 / MAX_HEIGHT);
        assert!(
            rules
                .bodies
                .iter()
                .all(|body| !height_reaches(body, MAX_HEIGHT + 1))
        );
        assert!(rules.prune(&Budget::unlimited()).unwrap());
        let text = rules.to_xg();
        assert!(
            text.starts_with("root ::= (\"a\" ((\"a\" "),
            "{}",
            &text[..100]
        );
        assert!(text.contains("root_part_2 ::= "));
    }

    #[test]
    fn inline_rules_are_written_out_where_used_moved_or_copied() {
        let mut rules = Rules::default();
        let root = rules.declare("root");
        let user = rules.declare("user");
        let once = rules.declare_inline("once");
        let twice = rules.declare_inline("twice");
        let inner = rules.declare_inline("inner");
        // `once` is used once (moved), `twice` twice (copied), `inner`
        // once but from an inline rule (copied with it).
        rules.define(
            root,
            G::seq([G::Ref(once), G::Ref(twice), G::Ref(user), G::lit("!")]),
        );
        rules.define(user, G::alt([G::Ref(twice), G::lit("u")]));
        rules.define(once, G::lit("o"));
        rules.define(twice, G::seq([G::lit("t"), G::Ref(inner)]));
        rules.define(inner, G::alt([G::lit("i"), G::lit("j")]));
        assert!(rules.prune(&Budget::unlimited()).unwrap());
        // Literals written out next to each other merge; the rest moves.
        assert_eq!(
            rules.to_xg(),
            "root ::= \"ot\" (\"i\" | \"j\") user \"!\"\nuser ::= \"t\" (\"i\" | \"j\") | \"u\"\n"
        );
    }
}
