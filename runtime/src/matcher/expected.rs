//! [`Expected`]: what a row of the matcher can take next, for error messages
//! and for finding forced bytes.

use std::fmt;

use super::item::{Item, Kind};
use crate::byteset::ByteSet;
use crate::grammar::Grammar;
use crate::tables::Edge;

/// The most rule names an [`Expected`] keeps.
const MAX_RULES: usize = 4;

/// What the grammar allows at a position.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expected {
    /// Bytes some automaton edge takes.
    bytes: ByteSet,
    /// Free text of a tag or token dispatch (almost any byte).
    text: bool,
    /// A token matched by id.
    tokens: bool,
    /// The end of the output.
    end: bool,
    /// The rules being matched there, innermost, in order of appearance.
    rules: Vec<String>,
}

impl Expected {
    pub(super) fn of(grammar: &Grammar, row: &[Item], end: bool) -> Self {
        let mut expected = Self {
            end,
            ..Self::default()
        };
        for item in row {
            let rule = match item.kind {
                Kind::Node => {
                    let mut scans = false;
                    for edge in grammar.edges(item.a) {
                        match edge.label() {
                            Edge::Bytes { lo, hi } => {
                                expected.bytes.insert_range(lo, hi);
                                scans = true;
                            }
                            Edge::Tokens { .. } => {
                                expected.tokens = true;
                                scans = true;
                            }
                            Edge::Rule { .. } | Edge::Repeat { .. } => {}
                        }
                    }
                    if !scans {
                        continue;
                    }
                    grammar.node_rule(item.a)
                }
                Kind::Free => {
                    expected.text = true;
                    item.a
                }
                Kind::TokenFree => {
                    expected.text = true;
                    expected.tokens = true;
                    item.a
                }
                _ => continue,
            };
            let name = grammar.tables().rule_name(rule);
            if expected.rules.len() < MAX_RULES && !expected.rules.iter().any(|r| r == name) {
                expected.rules.push(name.to_owned());
            }
        }
        expected
    }

    /// The bytes automaton edges take here (free text not included).
    pub fn bytes(&self) -> impl Iterator<Item = u8> + '_ {
        self.bytes.iter()
    }

    /// Whether free text of a dispatch may continue here.
    pub fn allows_text(&self) -> bool {
        self.text
    }

    /// Whether a token matched by id may come here.
    pub fn allows_tokens(&self) -> bool {
        self.tokens
    }

    /// Whether the output may end here.
    pub fn allows_end(&self) -> bool {
        self.end
    }

    /// Whether anything may come here: a byte, free text or a token.
    pub fn allows_more(&self) -> bool {
        self.bytes().next().is_some() || self.text || self.tokens
    }

    /// The rules being matched here (the innermost ones; at most a few).
    pub fn rules(&self) -> &[String] {
        &self.rules
    }

    /// The same without the rule names, for grammars whose rules a front
    /// end generated (`root_after_0`, `shared_14`) and that says where in
    /// its own terms (a JSON Schema's pointer).
    #[must_use]
    pub fn without_rules(&self) -> Self {
        Self {
            rules: Vec::new(),
            ..self.clone()
        }
    }
}

/// Writes a byte as it would appear in a `.xg` class.
fn class_byte(byte: u8) -> String {
    match byte {
        b'-' | b']' | b'[' | b'^' | b'\\' => format!("\\{}", char::from(byte)),
        0x20..=0x7e => char::from(byte).to_string(),
        _ => format!("\\x{byte:02x}"),
    }
}

/// Writes a byte as a `.xg` string literal.
pub(crate) fn literal_byte(byte: u8) -> String {
    match byte {
        b'"' | b'\\' => format!("\"\\{}\"", char::from(byte)),
        b'\n' => "\"\\n\"".to_owned(),
        b'\t' => "\"\\t\"".to_owned(),
        b'\r' => "\"\\r\"".to_owned(),
        0x20..=0x7e => format!("\"{}\"", char::from(byte)),
        _ => format!("\"\\x{byte:02x}\""),
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        let bytes: Vec<u8> = self.bytes().collect();
        let mut k = 0;
        while k < bytes.len() {
            let lo = bytes[k];
            let mut hi = lo;
            while k + 1 < bytes.len() && bytes[k + 1] == hi + 1 {
                k += 1;
                hi = bytes[k];
            }
            k += 1;
            if hi - lo <= 1 {
                parts.extend((lo..=hi).map(literal_byte));
            } else {
                parts.push(format!("[{}-{}]", class_byte(lo), class_byte(hi)));
            }
        }
        if self.text {
            parts.push("free text".to_owned());
        }
        if self.tokens {
            parts.push("a token".to_owned());
        }
        if self.end {
            parts.push("the end of the output".to_owned());
        }
        match parts.len() {
            0 => write!(f, "nothing")?,
            1 => write!(f, "{}", parts[0])?,
            _ => write!(f, "one of {}", parts.join(", "))?,
        }
        if !self.rules.is_empty() {
            write!(f, " (in {})", self.rules.join(", "))?;
        }
        Ok(())
    }
}
