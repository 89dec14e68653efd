//! Inline grammars, in a `static` and in a `let`.
use xg::{Matcher, StaticGrammar};

static ANSWER: StaticGrammar = xg::grammar! {
    // Rust comments are fine; so are line breaks anywhere.
    root ::= "yes" | "no" | number
    number ::= [0-9]{1,3} ("." [0-9]+)?
};

fn accepts(grammar: &StaticGrammar, text: &str) -> bool {
    let mut matcher = Matcher::new(grammar.grammar());
    matcher.accept_str(text).is_ok() && matcher.can_terminate()
}

fn main() {
    assert!(accepts(&ANSWER, "yes"));
    assert!(accepts(&ANSWER, "123.5"));
    assert!(!accepts(&ANSWER, "1234"));
    assert!(!accepts(&ANSWER, "maybe"));

    let greeting = xg::grammar! {
        root ::= "Hello, " name "!"
        name ::= [A-Z] [a-z]*
    };
    assert!(accepts(&greeting, "Hello, Ada!"));
    assert!(!accepts(&greeting, "Hello, ada!"));
    assert_eq!(greeting.rule_name(greeting.root()), "root");
}
