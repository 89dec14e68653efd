//! Misused settings and missing files.
fn main() {
    let _ = xg::grammar!(file = "grammars/missing.xg");
    let _ = xg::grammar!(file = "grammars/broken.xg", rot = "x");
    let _ = xg::grammar!(root = "start");
    let _ = xg::grammar!("root ::= \"a\"", tokenizer = "no/tokenizer.json");
    let _ = xg::grammar!(r#"start ::= "a""#, root = "begin");
}
