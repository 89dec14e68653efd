//! `xg._xg`: the native half of xg's Python package.
//!
//! The classes carry XGrammar's Python names and semantics
//! ([`TokenizerInfo`](tokenizer::TokenizerInfo),
//! [`GrammarCompiler`](compiler::GrammarCompiler),
//! [`CompiledGrammar`](compiler::CompiledGrammar),
//! [`GrammarMatcher`](matcher::GrammarMatcher),
//! [`BatchGrammarMatcher`](matcher::BatchGrammarMatcher)) so that a server
//! written against XGrammar switches by changing an import; the pure-Python
//! package `xg` re-exports them and adds the bitmask helpers and the
//! server integrations. Work that takes time (compiling, batch mask
//! fills) runs with the GIL released.
#![deny(unsafe_code)]

mod bitmask;
mod compiler;
mod matcher;
mod tokenizer;

use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// Rust allocations of the extension (Python's own are unaffected).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

create_exception!(
    xg,
    CompileError,
    PyRuntimeError,
    "A grammar, schema, regex, structural tag or tool list was refused; the message is the compiler's diagnostics."
);

/// The module `xg._xg`.
#[pymodule]
fn _xg(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CompileError", m.py().get_type::<CompileError>())?;
    m.add_class::<tokenizer::TokenizerInfo>()?;
    m.add_class::<compiler::Grammar>()?;
    m.add_class::<compiler::GrammarCompiler>()?;
    m.add_class::<compiler::CompiledGrammar>()?;
    m.add_class::<compiler::CancelFlag>()?;
    m.add_class::<matcher::GrammarMatcher>()?;
    m.add_class::<matcher::BatchGrammarMatcher>()?;
    Ok(())
}
