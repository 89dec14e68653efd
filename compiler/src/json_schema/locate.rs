//! Where in a schema's JSON text the value a JSON pointer names is, so a
//! diagnostic about `#/properties/age/type` can point at that value.
//!
//! serde_json gives values without positions; this walks the text itself,
//! skipping the values the pointer does not enter. It reads text that has
//! already parsed, so it only needs to be right on well-formed JSON (and
//! gives `None`, never a wrong place, when something does not fit).

use std::ops::Range;

/// The byte range of the value at `pointer` (`#/properties/a`, `#` for the
/// whole) in the JSON `text`.
pub(crate) fn locate(text: &str, pointer: &str) -> Option<Range<usize>> {
    let pointer = pointer.strip_prefix('#').unwrap_or(pointer);
    let mut at = skip_space(text, 0);
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        at = match text.as_bytes().get(at)? {
            b'{' => member(text, at, &token)?,
            b'[' => element(text, at, token.parse().ok()?)?,
            _ => return None,
        };
    }
    Some(at..value_end(text, at)?)
}

/// The start of the value of `key` in the object at `at`.
fn member(text: &str, at: usize, key: &str) -> Option<usize> {
    let mut at = skip_space(text, at + 1);
    while text.as_bytes().get(at)? == &b'"' {
        let key_end = value_end(text, at)?;
        let name: String = serde_json::from_str(&text[at..key_end]).ok()?;
        at = skip_space(text, key_end);
        if text.as_bytes().get(at)? != &b':' {
            return None;
        }
        let value = skip_space(text, at + 1);
        if name == key {
            return Some(value);
        }
        at = skip_space(text, value_end(text, value)?);
        if text.as_bytes().get(at) == Some(&b',') {
            at = skip_space(text, at + 1);
        }
    }
    None
}

/// The start of element `index` of the array at `at`.
fn element(text: &str, at: usize, index: usize) -> Option<usize> {
    let mut at = skip_space(text, at + 1);
    for _ in 0..index {
        if text.as_bytes().get(at)? == &b']' {
            return None;
        }
        at = skip_space(text, value_end(text, at)?);
        if text.as_bytes().get(at)? != &b',' {
            return None;
        }
        at = skip_space(text, at + 1);
    }
    (text.as_bytes().get(at)? != &b']').then_some(at)
}

/// The end of the value that starts at `at`.
fn value_end(text: &str, at: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    match bytes.get(at)? {
        b'"' => {
            let mut i = at + 1;
            loop {
                match bytes.get(i)? {
                    b'\\' => i += 2,
                    b'"' => return Some(i + 1),
                    _ => i += 1,
                }
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
    use super::locate;

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
    }

    #[test]
    fn what_is_not_there_is_not_found() {
        assert_eq!(at("#/required"), None);
        assert_eq!(at("#/properties/tags/prefixItems/2"), None);
        assert_eq!(at("#/type/0"), None);
        assert_eq!(at("#/properties/tags/prefixItems/x"), None);
        assert_eq!(locate("{\"a\": ", "#/a"), None);
    }
}
