//! A JSON Schema embedded inline (`%json { … }` is Rust tokens too).
use xg::Matcher;

fn main() {
    let person = xg::grammar! {
        root ::= %json {
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 8},
                "age": {"type": "integer", "minimum": 0}
            },
            "required": ["name"]
        }
    };
    let accepts = |text: &str| {
        let mut matcher = Matcher::new(person.grammar());
        matcher.accept_str(text).is_ok() && matcher.can_terminate()
    };
    assert!(accepts(r#"{"name": "Ada", "age": 36}"#));
    assert!(!accepts(r#"{"name": "Ada Lovelace"}"#));
    assert!(!accepts(r#"{"age": 36}"#));
}
