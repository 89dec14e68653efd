//! Errors in an inline grammar point at the exact tokens, all at once.
static ANSWER: xg::StaticGrammar = xg::grammar! {
    root ::= "yes" | "no" | numbr | list
    number ::= [0-9]{3,1}
    list ::= "[" number ("," number)* "]" [z-a]
    number ::= [0-9]+
};

fn main() {
    let _ = &ANSWER;
}
