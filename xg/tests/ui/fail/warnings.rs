//! Warnings reach the Rust compiler (as deprecation warnings, denied here
//! so that this file fails and its output is checked).
#![deny(deprecated)]

static UNUSED_RULE: xg::StaticGrammar = xg::grammar! {
    root ::= "a"
    spare ::= "b"
};

static APPROXIMATED: xg::StaticGrammar = xg::grammar! {
    root ::= %json {"type": "string", "format": "credit-card"}
};

fn main() {
    let _ = (&UNUSED_RULE, &APPROXIMATED);
}
