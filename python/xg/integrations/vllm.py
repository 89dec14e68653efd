"""vLLM's structured-output backend on xg.

vLLM (v1 engine) builds one ``StructuredOutputBackend`` per engine and asks
it for a ``StructuredOutputGrammar`` per request; the scheduler fills one
bitmask row per request each step, accepts the sampled tokens, and with
speculative decoding validates draft tokens and rolls back. This module
implements both contracts: ``XgBackend`` and ``XgGrammar``.

vLLM picks its backend by name and has no registry; ``install()`` puts xg
in the place of its XGrammar backend (``structured_outputs_config.backend
= "xgrammar"``, or ``"auto"`` where that picks XGrammar). As a vLLM
general plugin (entry point ``xg``), it runs in every vLLM process when the
environment variable ``XG_VLLM_BACKEND=1`` is set::

    XG_VLLM_BACKEND=1 vllm serve MODEL --structured-outputs-config.backend xgrammar
"""

from __future__ import annotations

import json
import os
from typing import Any, List, Optional

import xg

try:  # vLLM's base classes when vLLM is installed, for isinstance checks.
    from vllm.v1.structured_output.backend_types import (
        StructuredOutputBackend as _Backend,
        StructuredOutputGrammar as _Grammar,
        StructuredOutputOptions,
    )
except ImportError:  # pragma: no cover - depends on the environment
    import enum

    _Backend = object
    _Grammar = object

    class StructuredOutputOptions(enum.Enum):  # type: ignore[no-redef]
        """vLLM's request types, as vLLM defines them."""

        JSON = enum.auto()
        JSON_OBJECT = enum.auto()
        REGEX = enum.auto()
        GRAMMAR = enum.auto()
        CHOICE = enum.auto()
        STRUCTURAL_TAG = enum.auto()


class XgGrammar(_Grammar):  # type: ignore[misc,valid-type]
    """One request's grammar state (vLLM's ``StructuredOutputGrammar``)."""

    def __init__(self, matcher: xg.GrammarMatcher, vocab_size: int) -> None:
        self.matcher = matcher
        self.vocab_size = vocab_size
        self.num_processed_tokens = 0
        self._terminated = False

    def accept_tokens(self, request_id: str, tokens: List[int]) -> bool:
        """Accepts ``tokens`` in order; false at the first one the grammar
        forbids (the ones before it stay accepted, as vLLM expects).
        Tokens after the end of the output are ignored."""
        for token in tokens:
            if self._terminated:
                break
            if not self.matcher.accept_token(token):
                return False
            self.num_processed_tokens += 1
            self._terminated = self.matcher.is_terminated()
        return True

    def validate_tokens(self, tokens: List[int]) -> List[int]:
        """The longest prefix of ``tokens`` the grammar accepts in a row;
        the state is unchanged."""
        if self._terminated:
            return []
        return list(tokens[: self.matcher.validate_tokens(tokens)])

    def rollback(self, num_tokens: int) -> None:
        """Undoes the last ``num_tokens`` accepted tokens."""
        self.matcher.rollback(num_tokens)
        self.num_processed_tokens -= num_tokens
        self._terminated = self.matcher.is_terminated()

    def fill_bitmask(self, bitmask: Any, idx: int) -> None:
        """Fills row ``idx`` of the batch's bitmask."""
        self.matcher.fill_next_token_bitmask(bitmask, idx)

    def find_jump_string(self) -> Optional[str]:
        """The text every continuation starts with, if any."""
        return self.matcher.find_jump_forward_string() or None

    def is_terminated(self) -> bool:
        """Whether the output has ended."""
        return self._terminated

    def reset(self) -> None:
        """Back to the start."""
        self.matcher.reset()
        self.num_processed_tokens = 0
        self._terminated = False


class XgBackend(_Backend):  # type: ignore[misc,valid-type]
    """vLLM's ``StructuredOutputBackend`` on xg: one compiler per engine,
    shared by every request (its caches included)."""

    def __init__(self, vllm_config: Any, tokenizer: Any, vocab_size: int) -> None:
        self.vllm_config = vllm_config
        self.tokenizer = tokenizer
        self.vocab_size = vocab_size
        config = getattr(vllm_config, "structured_outputs_config", None)
        self.any_whitespace = not getattr(config, "disable_any_whitespace", False)
        self.tokenizer_info = xg.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
        self.compiler = xg.GrammarCompiler(self.tokenizer_info)

    def compile_grammar(
        self,
        request_type: Any,
        grammar_spec: str,
        stop_token_ids: Optional[set] = None,
    ) -> XgGrammar:
        """Compiles one request's grammar; raises ``xg.CompileError``
        (a ``RuntimeError``) with the diagnostics if it does not compile."""
        kind = getattr(request_type, "name", request_type)
        if kind == "JSON":
            compiled = self.compiler.compile_json_schema(grammar_spec, any_whitespace=self.any_whitespace)
        elif kind == "JSON_OBJECT":
            compiled = self.compiler.compile_json_schema('{"type": "object"}', any_whitespace=self.any_whitespace)
        elif kind == "REGEX":
            compiled = self.compiler.compile_regex(grammar_spec)
        elif kind == "GRAMMAR":
            compiled = self.compiler.compile_grammar(grammar_spec)
        elif kind == "CHOICE":
            compiled = self.compiler.compile_grammar(choice_grammar(json.loads(grammar_spec)))
        elif kind == "STRUCTURAL_TAG":
            compiled = self.compiler.compile_structural_tag(grammar_spec)
        else:
            raise ValueError(f"unknown structured-output request type {request_type!r}")
        matcher = xg.GrammarMatcher(
            compiled, override_stop_tokens=sorted(stop_token_ids) if stop_token_ids else None
        )
        return XgGrammar(matcher, self.vocab_size)

    def allocate_token_bitmask(self, max_num_seqs: int) -> Any:
        """A bitmask of ``max_num_seqs`` rows, every token allowed."""
        return xg.allocate_token_bitmask(max_num_seqs, self.vocab_size)

    def destroy(self) -> None:
        """Frees the caches."""
        self.compiler.clear_cache()


def choice_grammar(choices: List[str]) -> str:
    """The ``.xg`` grammar of exactly one of ``choices``."""
    if not choices:
        raise ValueError("a choice request needs at least one choice")
    return "root ::= " + " | ".join(json.dumps(str(c)) for c in choices) + "\n"


def install() -> None:
    """Makes vLLM's XGrammar backend xg's (in this process)."""
    import vllm.v1.structured_output as manager

    manager.XgrammarBackend = XgBackend


def plugin() -> None:
    """vLLM general plugin: ``install()`` when ``XG_VLLM_BACKEND=1``."""
    if os.environ.get("XG_VLLM_BACKEND") == "1":
        install()
