//! Helpers shared by the test binaries of this crate.

/// Removes every `Span { … }` from a `Debug` rendering, so two parses of
/// different texts can be compared as trees.
pub fn strip_spans(debug: &str) -> String {
    let mut out = String::with_capacity(debug.len());
    let mut rest = debug;
    while let Some(start) = rest.find("Span {") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find('}')
            .map_or(rest.len(), |i| start + i + 1);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}
