//! A grammar file importing the standard library and a file of its own,
//! with a JSON Schema from a file; settings after the path.
use xg::{Matcher, StaticGrammar};

static TOOLS: StaticGrammar = xg::grammar!(file = "grammars/tools.xg", root = "turn");

fn accepts(text: &str) -> bool {
    let mut matcher = Matcher::new(TOOLS.grammar());
    matcher.accept_str(text).is_ok() && matcher.can_terminate()
}

fn main() {
    assert!(accepts("It is sunny.<|im_end|>"));
    assert!(accepts(
        "Let me look.<tool_call>{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}</tool_call><|im_end|>"
    ));
    // `days` must be an integer from 1 to 16 (the schema file).
    assert!(!accepts(
        "<tool_call>{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 30}}</tool_call><|im_end|>"
    ));
    // `note` is a JSON string (std/json.xg, through common.xg).
    assert!(accepts(
        "<tool_call>{\"name\": \"remember\", \"arguments\": {\"note\": \"caf\\u00e9\"}}</tool_call><|im_end|>"
    ));
    assert!(!accepts("<tool_call>{\"name\": \"forget\"}</tool_call><|im_end|>"));
}
