//! Grammars Rust cannot split into tokens go in a string literal.
use xg::{Matcher, StaticGrammar};

static CSV: StaticGrammar = xg::grammar!(
    r#"
    # `.xg` comments, quotes and escapes Rust does not know.
    line  ::= field ("," field)* "\u000A"
    field ::= [^,"\n]* | "\"" ([^"] | "\"\"")* "\""
    "#,
    root = "line",
);

fn main() {
    let accepts = |text: &str| {
        let mut matcher = Matcher::new(CSV.grammar());
        matcher.accept_str(text).is_ok() && matcher.can_terminate()
    };
    assert!(accepts("a,b,\"c, \"\"d\"\"\"\n"));
    assert!(!accepts("a,b"));
    assert_eq!(CSV.rule_name(CSV.root()), "line");
}
