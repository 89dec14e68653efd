//! The standard library of `.xg` grammars (`grammars/` in the repository),
//! embedded in the compiler so `import "std/json.xg" as json;` works anywhere.

/// The standard library: import path → text.
const LIBRARY: &[(&str, &str)] = &[
    ("std/json.xg", include_str!("../../grammars/std/json.xg")),
    (
        "std/json_compact.xg",
        include_str!("../../grammars/std/json_compact.xg"),
    ),
    (
        "std/reasoning.xg",
        include_str!("../../grammars/std/reasoning.xg"),
    ),
    ("std/qwen.xg", include_str!("../../grammars/std/qwen.xg")),
    (
        "std/qwen3_coder.xg",
        include_str!("../../grammars/std/qwen3_coder.xg"),
    ),
    (
        "std/llama3.xg",
        include_str!("../../grammars/std/llama3.xg"),
    ),
    (
        "std/llama3_function.xg",
        include_str!("../../grammars/std/llama3_function.xg"),
    ),
    (
        "std/mistral.xg",
        include_str!("../../grammars/std/mistral.xg"),
    ),
    (
        "std/deepseek.xg",
        include_str!("../../grammars/std/deepseek.xg"),
    ),
    (
        "std/harmony.xg",
        include_str!("../../grammars/std/harmony.xg"),
    ),
    (
        "std/deepseek_v3_1.xg",
        include_str!("../../grammars/std/deepseek_v3_1.xg"),
    ),
    (
        "std/deepseek_v3_2.xg",
        include_str!("../../grammars/std/deepseek_v3_2.xg"),
    ),
    (
        "std/deepseek_v4.xg",
        include_str!("../../grammars/std/deepseek_v4.xg"),
    ),
    ("std/glm.xg", include_str!("../../grammars/std/glm.xg")),
    ("std/kimi.xg", include_str!("../../grammars/std/kimi.xg")),
    (
        "std/mistral_v11.xg",
        include_str!("../../grammars/std/mistral_v11.xg"),
    ),
    (
        "std/command.xg",
        include_str!("../../grammars/std/command.xg"),
    ),
    (
        "std/kimi_k3.xg",
        include_str!("../../grammars/std/kimi_k3.xg"),
    ),
    (
        "std/minimax.xg",
        include_str!("../../grammars/std/minimax.xg"),
    ),
    (
        "std/pythonic.xg",
        include_str!("../../grammars/std/pythonic.xg"),
    ),
    (
        "std/gemma4.xg",
        include_str!("../../grammars/std/gemma4.xg"),
    ),
    (
        "std/tool_code.xg",
        include_str!("../../grammars/std/tool_code.xg"),
    ),
];

/// Example grammars shipped with xg (`grammars/examples/`): name → text.
pub const EXAMPLES: &[(&str, &str)] = &[
    (
        "examples/arithmetic.xg",
        include_str!("../../grammars/examples/arithmetic.xg"),
    ),
    (
        "examples/tool_calling.xg",
        include_str!("../../grammars/examples/tool_calling.xg"),
    ),
    (
        "examples/xgrammar_compat.xg",
        include_str!("../../grammars/examples/xgrammar_compat.xg"),
    ),
];

/// The text of the standard-library grammar at `path` (`std/json.xg`).
pub fn get(path: &str) -> Option<&'static str> {
    LIBRARY
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, text)| *text)
}

/// The interned form of a standard-library path, if the library has it.
pub fn path(path: &str) -> Option<&'static str> {
    LIBRARY.iter().find(|(p, _)| *p == path).map(|(p, _)| *p)
}

/// Every standard-library path.
pub fn paths() -> impl Iterator<Item = &'static str> {
    LIBRARY.iter().map(|(p, _)| *p)
}
