//! Errors in a raw string: an excerpt at the Rust file's line and column.
fn main() {
    let _ = xg::grammar!(
        r#"
        root ::= "a" item
        item ::= [z-a]
        "#
    );
}
