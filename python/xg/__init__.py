"""xg: structured generation for LLM inference, with XGrammar's Python API.

A server written against XGrammar switches with ``import xg as xgr``::

    import xg as xgr
    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=config.vocab_size)
    compiler = xgr.GrammarCompiler(info)
    compiled = compiler.compile_json_schema(schema)
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    xgr.apply_token_bitmask_inplace(logits, bitmask)
    matcher.accept_token(token_id)

Beyond XGrammar: ``.xg`` grammars with imports of the standard library,
``compile_tools`` for tool-calling turns, bundles (``CompiledGrammar.open``),
compile limits (``time_limit``, ``max_rules``, ``CancelFlag``) and the
compiler's warnings (``CompiledGrammar.warnings``).
"""

from enum import IntEnum

from ._xg import (
    BatchGrammarMatcher,
    CancelFlag,
    CompiledGrammar,
    CompileError,
    Grammar,
    GrammarCompiler,
    GrammarMatcher,
    TokenizerInfo,
)
from .bitmask import (
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    bitmask_dtype,
    get_bitmask_shape,
    reset_token_bitmask,
)


class VocabType(IntEnum):
    """How a tokenizer writes its tokens (``TokenizerInfo(vocab_type=…)``)."""

    RAW = 0
    """The piece is the token's text (or bytes)."""
    BYTE_FALLBACK = 1
    """SentencePiece: ``▁`` is a space, ``<0x0A>`` a byte."""
    BYTE_LEVEL = 2
    """GPT-2's byte-to-character map (Llama 3, Qwen, gpt-oss)."""


class StructuralTagItem:
    """One tag of the legacy ``compile_structural_tag(tags, triggers)``: text
    from ``begin`` to ``end`` whose content is JSON following ``schema``."""

    def __init__(self, *, begin: str, schema, end: str) -> None:
        self.begin = begin
        self.schema = schema
        self.end = end


__all__ = [
    "BatchGrammarMatcher",
    "CancelFlag",
    "CompileError",
    "CompiledGrammar",
    "Grammar",
    "GrammarCompiler",
    "GrammarMatcher",
    "StructuralTagItem",
    "TokenizerInfo",
    "VocabType",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "bitmask_dtype",
    "get_bitmask_shape",
    "reset_token_bitmask",
]
