//! An invalid JSON Schema inline: the error points into it.
fn main() {
    let _ = xg::grammar! {
        root ::= %json {"type": "object", "properties": {"age": {"type": "integr"}}}
    };
}
