//! The bytes that can come right after a rule: the first bytes of whatever
//! follows it anywhere in the grammar (the FOLLOW set of parsing theory,
//! one byte deep), read from the IR of every rule, built or not.
//!
//! A grammar built on first use asks for them (see
//! [`RuleBuilder::follow_bytes`](xg_runtime::RuleBuilder::follow_bytes))
//! where a rule is called from more places than it is worth building: a
//! token that runs on past white space before a value is refused at its
//! next byte unless a value, a comma or a bracket can begin there — most of
//! the 58,000 Llama 3.1 tokens that begin with white space go on with a
//! letter.
//!
//! Both sets over-approximate, never under-: a byte is left out only if no
//! text can put it there. Free text with dispatch counts as beginning with
//! any byte and possibly empty, excluded strings are not subtracted, and
//! lookaheads are not applied.

use xg_runtime::RuleId;

use super::{ByteSet, Expr, Grammar};

/// What a piece of text can begin with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Start {
    /// Its first bytes.
    bytes: ByteSet,
    /// Whether it can be empty.
    empty: bool,
}

impl Start {
    const EMPTY: Start = Start {
        bytes: ByteSet::empty(),
        empty: true,
    };

    /// What matches nothing begins with.
    const NOTHING: Start = Start {
        bytes: ByteSet::empty(),
        empty: false,
    };

    const ANY: Start = Start {
        bytes: ByteSet::full(),
        empty: true,
    };

    fn union(self, other: Start) -> Start {
        Start {
            bytes: self.bytes.union(&other.bytes),
            empty: self.empty || other.empty,
        }
    }

    /// `self` followed by `next`.
    fn then(self, next: Start) -> Start {
        if self.empty {
            Start {
                bytes: self.bytes.union(&next.bytes),
                empty: next.empty,
            }
        } else {
            self
        }
    }
}

/// What each rule of a grammar can begin with, from which what can follow
/// any rule is read ([`Starts::follow`]).
pub(crate) struct Starts {
    rules: Vec<Start>,
}

impl Starts {
    /// Every rule's start, to a fixed point: a rule is looked at again only
    /// when a rule it refers to changed (`callers[r]`: the rules whose IR
    /// refers to `r`), so a chain of rules costs one pass, not one per link.
    pub(crate) fn new(grammar: &Grammar, callers: &[Vec<RuleId>]) -> Self {
        let count = grammar.rules.len();
        let mut starts = Self {
            rules: vec![Start::NOTHING; count],
        };
        let mut queued = vec![true; count];
        let mut work: Vec<usize> = (0..count).rev().collect();
        while let Some(rule) = work.pop() {
            queued[rule] = false;
            let found = starts.of(&grammar.rules[rule].body);
            let known = starts.rules[rule];
            let grown = known.union(found);
            if grown == known {
                continue;
            }
            starts.rules[rule] = grown;
            for caller in callers.get(rule).map_or(&[][..], Vec::as_slice) {
                let caller = caller.as_usize();
                if !queued[caller] {
                    queued[caller] = true;
                    work.push(caller);
                }
            }
        }
        starts
    }

    /// The bytes that can come first after a match of `rule`, anywhere in
    /// `grammar` (`callers` as for [`Starts::new`]). Where the rule can end
    /// a rule that calls it, what follows that rule counts too; where it
    /// can end the output, nothing does (no byte follows the end).
    pub(crate) fn follow(
        &self,
        grammar: &Grammar,
        callers: &[Vec<RuleId>],
        rule: RuleId,
    ) -> ByteSet {
        let mut bytes = ByteSet::empty();
        let mut ends = vec![false; grammar.rules.len()];
        let Some(flag) = ends.get_mut(rule.as_usize()) else {
            return ByteSet::full();
        };
        *flag = true;
        let mut work = vec![rule];
        while let Some(target) = work.pop() {
            for &caller in callers
                .get(target.as_usize())
                .map_or(&[][..], Vec::as_slice)
            {
                let source = &grammar.rules[caller.as_usize()];
                // A rule inside a lookahead is followed by anything.
                if let Some(lookahead) = &source.lookahead
                    && self.after(lookahead, target).is_some()
                {
                    return ByteSet::full();
                }
                let Some(after) = self.after(&source.body, target) else {
                    continue;
                };
                bytes = bytes.union(&after.bytes);
                if after.empty && !ends[caller.as_usize()] {
                    ends[caller.as_usize()] = true;
                    work.push(caller);
                }
            }
        }
        bytes
    }

    /// What can follow the references to `target` in `body` within it
    /// (`empty`: a reference can end `body`); `None` if there are none.
    fn after(&self, body: &Expr, target: RuleId) -> Option<Start> {
        let mut found: Option<Start> = None;
        let mut open = vec![(body, Start::EMPTY)];
        while let Some((expr, after)) = open.pop() {
            match expr {
                Expr::Ref(rule) if *rule == target => {
                    found = Some(found.map_or(after, |known| known.union(after)));
                }
                Expr::RepeatRule { rule, max, .. } if *rule == target => {
                    let again = self.rules[rule.as_usize()];
                    let after = if max.is_none_or(|max| max > 1) {
                        again.then(after).union(after)
                    } else {
                        after
                    };
                    found = Some(found.map_or(after, |known| known.union(after)));
                }
                Expr::Sequence(items) => {
                    let mut next = after;
                    for item in items.iter().rev() {
                        open.push((item, next));
                        next = self.of(item).then(next);
                    }
                }
                Expr::Choice(items) => open.extend(items.iter().map(|item| (item, after))),
                Expr::Repeat { expr, max, .. } => {
                    let after = if max.is_none_or(|max| max > 1) {
                        self.of(expr).then(after).union(after)
                    } else {
                        after
                    };
                    open.push((expr, after));
                }
                Expr::Except(except) => {
                    // Units follow units, in any number.
                    let unit = Start {
                        bytes: except.plain,
                        empty: false,
                    }
                    .union(self.of(&except.other));
                    open.push((&except.other, unit.then(after).union(after)));
                }
                Expr::Dispatch(dispatch) => {
                    open.extend(dispatch.arms.iter().map(|(_, arm)| (arm, Start::ANY)));
                }
                Expr::TokenDispatch(dispatch) => {
                    open.extend(dispatch.arms.iter().map(|(_, arm)| (arm, Start::ANY)));
                }
                Expr::Empty
                | Expr::Bytes(_)
                | Expr::Class(_)
                | Expr::Ref(_)
                | Expr::RepeatRule { .. }
                | Expr::Tokens(_) => {}
            }
        }
        found
    }

    /// What `expr` can begin with, its rules' starts as known so far. A
    /// sequence is read only up to its first item that cannot be empty
    /// (an object's rule: its `{`). Walked with a stack of its own: bodies
    /// may be deep.
    fn of(&self, expr: &Expr) -> Start {
        /// A node whose children are being read.
        enum Frame<'e> {
            /// The items, the next to read, what the read ones begin with.
            Sequence(&'e [Expr], usize, Start),
            Choice(&'e [Expr], usize, Start),
            /// The least number of repetitions.
            Repeat(u32),
            /// The bytes that are units on their own.
            Except(ByteSet),
        }
        let mut frames: Vec<Frame<'_>> = Vec::new();
        let mut current = expr;
        'descend: loop {
            let mut value = match current {
                Expr::Sequence(items) if !items.is_empty() => {
                    frames.push(Frame::Sequence(items, 1, Start::EMPTY));
                    current = &items[0];
                    continue 'descend;
                }
                Expr::Choice(items) if !items.is_empty() => {
                    frames.push(Frame::Choice(items, 1, Start::NOTHING));
                    current = &items[0];
                    continue 'descend;
                }
                Expr::Repeat { expr, min, .. } => {
                    frames.push(Frame::Repeat(*min));
                    current = expr;
                    continue 'descend;
                }
                Expr::Except(except) => {
                    frames.push(Frame::Except(except.plain));
                    current = &except.other;
                    continue 'descend;
                }
                // An empty sequence is the empty string.
                Expr::Sequence(_) | Expr::Empty => Start::EMPTY,
                Expr::Bytes(bytes) => {
                    let mut first = ByteSet::empty();
                    if let Some(&byte) = bytes.first() {
                        first.insert(byte);
                    }
                    Start {
                        bytes: first,
                        empty: bytes.is_empty(),
                    }
                }
                Expr::Class(set) => Start {
                    bytes: *set,
                    empty: false,
                },
                Expr::Ref(rule) => self.rules[rule.as_usize()],
                Expr::RepeatRule { rule, min, .. } => {
                    let start = self.rules[rule.as_usize()];
                    Start {
                        bytes: start.bytes,
                        empty: *min == 0 || start.empty,
                    }
                }
                // An empty choice matches nothing; a token is taken by
                // its id, never byte by byte.
                Expr::Choice(_) | Expr::Tokens(_) => Start::NOTHING,
                Expr::Dispatch(_) | Expr::TokenDispatch(_) => Start::ANY,
            };
            while let Some(frame) = frames.pop() {
                value = match frame {
                    Frame::Sequence(items, next, read) => {
                        let read = read.then(value);
                        if read.empty && next < items.len() {
                            frames.push(Frame::Sequence(items, next + 1, read));
                            current = &items[next];
                            continue 'descend;
                        }
                        read
                    }
                    Frame::Choice(items, next, read) => {
                        let read = read.union(value);
                        if next < items.len() {
                            frames.push(Frame::Choice(items, next + 1, read));
                            current = &items[next];
                            continue 'descend;
                        }
                        read
                    }
                    Frame::Repeat(min) => Start {
                        bytes: value.bytes,
                        empty: min == 0 || value.empty,
                    },
                    Frame::Except(plain) => Start {
                        bytes: plain.union(&value.bytes),
                        empty: true,
                    },
                };
            }
            return value;
        }
    }
}

#[cfg(test)]
mod tests {
    use xg_runtime::RuleId;

    use super::Starts;
    use crate::{Request, ir, pipeline};

    /// The bytes that can follow each named rule of `text`'s grammar.
    fn follow(text: &str, names: &[&str]) -> Vec<String> {
        let mut request = Request::ahead_of_time();
        let file = request.add("g.xg", text);
        let tree = pipeline::check(&mut request, file, "root").unwrap();
        let grammar = ir::lower(&tree);
        let mut callers = vec![Vec::new(); grammar.rules.len()];
        for (caller, callees) in crate::hash::references_of(&grammar, &crate::Budget::unlimited())
            .unwrap()
            .iter()
            .enumerate()
        {
            for &callee in callees {
                callers[callee].push(RuleId::new(caller).unwrap());
            }
        }
        let starts = Starts::new(&grammar, &callers);
        let rule = |name: &str| {
            let at = grammar.rules.iter().position(|rule| rule.name == name);
            RuleId::new(at.unwrap()).unwrap()
        };
        names
            .iter()
            .map(|&name| {
                let bytes = starts.follow(&grammar, &callers, rule(name));
                (0..=255u8)
                    .filter(|&byte| bytes.contains(byte))
                    .map(char::from)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn what_follows_a_rule_is_what_begins_after_it_in_every_caller() {
        let text = r#"
            root ::= "[" ws item ("," ws item)* ws "]" | "<" ws ">"
            ws ::= [ \n]*
            item ::= "a" ws | "{" ws "}" | "x" item? | key
            key ::= "k" [0-9]{2}
        "#;
        // White space: an item's first byte, white space again (an item
        // can end with it), `]`, `>`, `}` and `,`. An item and a key: what
        // follows an item in the list (after `x`, an item ends an item).
        // Nothing follows the root: no byte comes after the end.
        assert_eq!(
            follow(text, &["ws", "item", "key", "root"]),
            ["\n ,>]akx{}", "\n ,]", "\n ,]", ""]
        );
    }
}
