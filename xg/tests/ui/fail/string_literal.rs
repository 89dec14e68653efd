//! Errors in string literals: an excerpt at the Rust file's line and
//! column for a raw string; named after the literal's place for a string
//! with escapes (its text is not the file's).
fn main() {
    let _ = xg::grammar!(
        r#"
        root ::= "a" item
        item ::= [z-a]
        "#
    );
    let _ = xg::grammar!("root ::= \"a\"\n    | [z-a]");
}
