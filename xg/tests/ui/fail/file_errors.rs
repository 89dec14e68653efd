//! Errors in a grammar file and in a file it imports: excerpts with file:line:col.
static BROKEN: xg::StaticGrammar = xg::grammar!(file = "grammars/broken.xg");

fn main() {
    let _ = &BROKEN;
}
