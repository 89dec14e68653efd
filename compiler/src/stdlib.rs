//! The standard library of `.xg` grammars (`grammars/` in the repository),
//! embedded in the compiler so `import "std/json.xg" as json;` works anywhere.

/// The standard library: import path → text.
const LIBRARY: &[(&str, &str)] = &[("std/json.xg", include_str!("../../grammars/std/json.xg"))];

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
