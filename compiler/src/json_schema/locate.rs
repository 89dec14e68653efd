//! Where in a schema's JSON text the value a JSON pointer names is, so a
//! diagnostic about `#/properties/age/type` can point at that value.
//!
//! serde_json gives values without positions; this walks the text itself,
//! skipping the values the pointer does not enter. It reads text that has
//! already parsed, so it only needs to be right on well-formed JSON (and
//! gives `None`, never a wrong place, when something does not fit).

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use rustc_hash::FxHashMap;

/// The byte range of the value at `pointer` (`#/properties/a`, `#` for the
/// whole) in the JSON `text`.
pub(crate) fn locate(text: &str, pointer: &str) -> Option<Range<usize>> {
    locate_all(text, &[pointer]).pop().flatten()
}

/// The byte range of the value at each of `pointers` in the JSON `text`, in
/// one pass: each value is skipped at most once per level however many
/// pointers there are (a large schema's hundreds of warnings would
/// otherwise each rescan it).
pub(crate) fn locate_all(text: &str, pointers: &[&str]) -> Vec<Option<Range<usize>>> {
    // A large schema has tens of thousands of warnings: a token is copied
    // only if it has an escape.
    let paths: Vec<Vec<Cow<'_, str>>> = pointers
        .iter()
        .map(|pointer| {
            let pointer = pointer.strip_prefix('#').unwrap_or(pointer);
            pointer
                .split('/')
                .skip(1)
                .map(super::pointer::unescape)
                .collect()
        })
        .collect();
    let mut found = vec![None; pointers.len()];
    let wanted: Vec<usize> = (0..pointers.len()).collect();
    descend(text, skip_space(text, 0), &paths, 0, wanted, &mut found);
    found
}

/// Finds, for each path in `wanted` (whose first `depth` tokens lead to the
/// value at `at`), the range of the value the rest leads to.
fn descend(
    text: &str,
    at: usize,
    paths: &[Vec<Cow<'_, str>>],
    depth: usize,
    wanted: Vec<usize>,
    found: &mut [Option<Range<usize>>],
) -> Option<()> {
    let (here, deeper): (Vec<usize>, Vec<usize>) =
        wanted.into_iter().partition(|&p| paths[p].len() == depth);
    if !here.is_empty() {
        let end = value_end(text, at)?;
        for p in here {
            found[p] = Some(at..end);
        }
    }
    if deeper.is_empty() {
        return Some(());
    }
    // Pointers by the token they take next; a value is entered once, for
    // all of them, and the first member of a name is the one meant.
    let mut next: FxHashMap<&str, Vec<usize>> = FxHashMap::default();
    for &p in &deeper {
        next.entry(&paths[p][depth]).or_default().push(p);
    }
    match text.as_bytes().get(at)? {
        b'{' => {
            let mut at = skip_space(text, at + 1);
            while !next.is_empty() && text.as_bytes().get(at)? == &b'"' {
                let key_end = value_end(text, at)?;
                let quoted = &text[at..key_end];
                let name: Cow<'_, str> = if quoted.contains('\\') {
                    Cow::Owned(serde_json::from_str(quoted).ok()?)
                } else {
                    Cow::Borrowed(&quoted[1..quoted.len() - 1])
                };
                at = skip_space(text, key_end);
                if text.as_bytes().get(at)? != &b':' {
                    return None;
                }
                let value = skip_space(text, at + 1);
                if let Some(wanted) = next.remove(&*name) {
                    descend(text, value, paths, depth + 1, wanted, found);
                }
                at = skip_space(text, value_end(text, value)?);
                if text.as_bytes().get(at) == Some(&b',') {
                    at = skip_space(text, at + 1);
                }
            }
        }
        b'[' => {
            let mut at = skip_space(text, at + 1);
            let mut index = 0usize;
            while !next.is_empty() && text.as_bytes().get(at)? != &b']' {
                if let Some(wanted) = next.remove(index.to_string().as_str()) {
                    descend(text, at, paths, depth + 1, wanted, found);
                }
                at = skip_space(text, value_end(text, at)?);
                if text.as_bytes().get(at)? != &b',' {
                    break;
                }
                at = skip_space(text, at + 1);
                index += 1;
            }
        }
        _ => {}
    }
    Some(())
}

/// Every number in the JSON `text`, by the pointer of its place (`#/minimum`,
/// `#/properties/a/maximum`), as written: serde_json keeps a number too
/// large for 64 bits, or with more digits than a double holds, only as the
/// nearest double, and a bound must be the schema's own. One pass, no
/// recursion; `None` if the text is not JSON as this reads it.
pub(crate) fn numbers(text: &str) -> Option<HashMap<String, String>> {
    // Per open container: its pointer, and the key or index of its
    // current member (a key is read before its value).
    enum Member {
        Key(Option<String>),
        Index(usize),
    }
    let bytes = text.as_bytes();
    let mut open: Vec<(String, Member)> = Vec::new();
    let mut found = HashMap::new();
    let here = |open: &[(String, Member)]| match open.last() {
        None => Some("#".to_string()),
        Some((pointer, Member::Key(Some(key)))) => Some(super::pointer::pointer_to(pointer, key)),
        Some((pointer, Member::Index(index))) => Some(format!("{pointer}/{index}")),
        Some((_, Member::Key(None))) => None,
    };
    let mut at = skip_space(text, 0);
    while at < bytes.len() {
        match bytes[at] {
            b'{' => {
                open.push((here(&open)?, Member::Key(None)));
                at += 1;
            }
            b'[' => {
                open.push((here(&open)?, Member::Index(0)));
                at += 1;
            }
            b'}' | b']' => {
                open.pop()?;
                at += 1;
            }
            b',' => {
                match &mut open.last_mut()?.1 {
                    Member::Key(key) => *key = None,
                    Member::Index(index) => *index += 1,
                }
                at += 1;
            }
            b':' => at += 1,
            b'"' => {
                let end = value_end(text, at)?;
                if let Some((_, Member::Key(key @ None))) = open.last_mut() {
                    *key = Some(serde_json::from_str(&text[at..end]).ok()?);
                }
                at = end;
            }
            b'-' | b'0'..=b'9' => {
                let end = value_end(text, at)?;
                found.insert(here(&open)?, text[at..end].to_string());
                at = end;
            }
            _ => at = value_end(text, at)?,
        }
        at = skip_space(text, at);
    }
    Some(found)
}

/// The end of the value that starts at `at`.
fn value_end(text: &str, at: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    match bytes.get(at)? {
        b'"' => {
            // Long descriptions are most of a schema's text.
            let mut i = at + 1;
            loop {
                i += memchr::memchr2(b'"', b'\\', bytes.get(i..)?)?;
                if bytes[i] == b'"' {
                    return Some(i + 1);
                }
                i += 2;
            }
        }
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match bytes.get(i)? {
                    b'"' => i = value_end(text, i)?,
                    b'{' | b'[' => {
                        depth += 1;
                        i += 1;
                    }
                    b'}' | b']' => {
                        depth -= 1;
                        i += 1;
                        if depth == 0 {
                            return Some(i);
                        }
                    }
                    _ => i += 1,
                }
            }
        }
        _ => {
            let rest = &bytes[at..];
            let len = rest
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
                .unwrap_or(rest.len());
            (len > 0).then_some(at + len)
        }
    }
}

fn skip_space(text: &str, at: usize) -> usize {
    let bytes = text.as_bytes();
    let mut at = at;
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::{locate, locate_all, numbers};

    #[test]
    fn numbers_are_found_as_written_at_their_pointers() {
        let text = r#"{"maximum": 99999999999999999999, "properties": {"a/b": {"exclusiveMinimum": 0.10000000000000001},
            "q\"": {"enum": [1, -2.50e3]}}, "s": "1,2"}"#;
        let found = numbers(text).unwrap();
        assert_eq!(found["#/maximum"], "99999999999999999999");
        assert_eq!(
            found["#/properties/a~1b/exclusiveMinimum"],
            "0.10000000000000001"
        );
        assert_eq!(found["#/properties/q\"/enum/1"], "-2.50e3");
        assert_eq!(found.len(), 4);
        assert!(numbers("{\"a\": [1,").is_some());
        assert!(numbers("}").is_none());
    }

    const SCHEMA: &str = r#" {
        "type": "object",
        "properties": {
            "a/b": {"type": "integr"},
            "tags": {"type": "array", "prefixItems": [{"const": "x,]}"}, {"minimum": -1.5e3}]},
            "esc\"aped": true
        }
    }"#;

    fn at(pointer: &str) -> Option<&'static str> {
        locate(SCHEMA, pointer).map(|range| &SCHEMA[range])
    }

    #[test]
    fn pointers_find_their_values() {
        assert!(at("#").unwrap().starts_with('{') && at("#").unwrap().ends_with('}'));
        assert_eq!(at("#/type"), Some("\"object\""));
        assert_eq!(at("#/properties/a~1b/type"), Some("\"integr\""));
        assert_eq!(
            at("#/properties/tags/prefixItems/0"),
            Some(r#"{"const": "x,]}"}"#)
        );
        assert_eq!(
            at("#/properties/tags/prefixItems/1/minimum"),
            Some("-1.5e3")
        );
        assert_eq!(at("#/properties/esc\"aped"), Some("true"));
        let escapes = r#"{"a": "x\\", "b": "\"}\\\""}"#;
        let b = locate(escapes, "#/b").map(|range| &escapes[range]);
        assert_eq!(b, Some(r#""\"}\\\"""#));
        assert_eq!(locate(r#"{"a": "x\"#, "#/b"), None);
    }

    #[test]
    fn what_is_not_there_is_not_found() {
        assert_eq!(at("#/required"), None);
        assert_eq!(at("#/properties/tags/prefixItems/2"), None);
        assert_eq!(at("#/type/0"), None);
        assert_eq!(at("#/properties/tags/prefixItems/x"), None);
        assert_eq!(locate("{\"a\": ", "#/a"), None);
    }

    #[test]
    fn many_pointers_at_once_are_found_as_each_alone() {
        let pointers = [
            "#/properties/tags/prefixItems/1/minimum",
            "#",
            "#/properties/a~1b/type",
            "#/properties/tags/prefixItems/1/minimum",
            "#/properties/tags/prefixItems/5",
            "#/properties/tags",
            "#/required",
            "#/properties/tags/prefixItems/0",
            "#/type/0",
        ];
        let together = locate_all(SCHEMA, &pointers);
        let alone: Vec<_> = pointers.iter().map(|p| locate(SCHEMA, p)).collect();
        assert_eq!(together, alone);
        assert_eq!(together.iter().filter(|r| r.is_some()).count(), 6);
    }
}
