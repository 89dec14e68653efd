"""An SGLang grammar backend on xg.

SGLang compiles a request's constraint through a grammar backend
(``dispatch_json``, ``dispatch_regex``, ``dispatch_ebnf``,
``dispatch_structural_tag``), keeps the result in its cache and hands each
request a ``copy()``; the scheduler fills vocabulary-mask rows, applies
them, accepts tokens, rolls back speculative ones and jumps forward.
``register()`` adds xg to SGLang's registry::

    import xg.integrations.sglang
    xg.integrations.sglang.register()   # then --grammar-backend xg
"""

from __future__ import annotations

import json
import logging
from typing import Any, List, Optional, Tuple

import xg

logger = logging.getLogger(__name__)

try:  # SGLang's base classes when SGLang is installed.
    from sglang.srt.constrained import base_grammar_backend as _base

    _GrammarBase = _base.BaseGrammarObject
    _BackendBase = _base.BaseGrammarBackend
except ImportError:  # pragma: no cover - depends on the environment
    _base = None
    _GrammarBase = object
    _BackendBase = object


class XgGrammarObject(_GrammarBase):  # type: ignore[misc,valid-type]
    """One request's grammar state (SGLang's ``BaseGrammarObject``)."""

    def __init__(self, compiled: xg.CompiledGrammar, vocab_size: int, stop: Optional[List[int]]) -> None:
        if _GrammarBase is not object:
            super().__init__()
        self.compiled = compiled
        self.vocab_size = vocab_size
        self.stop = stop
        self.matcher = xg.GrammarMatcher(compiled, override_stop_tokens=stop)
        self.finished = False

    def accept_token(self, token: int) -> None:
        """Accepts the sampled token; a token the mask forbade is an error."""
        if self.matcher.is_terminated():
            return
        if not self.matcher.accept_token(token):
            raise ValueError(f"token {token} is not allowed here; expected {self.matcher.expected()}")

    def rollback(self, k: int) -> None:
        """Undoes the last ``k`` tokens (speculative decoding)."""
        self.matcher.rollback(k)

    def is_terminated(self) -> bool:
        """Whether the output has ended."""
        return self.matcher.is_terminated()

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device: Any) -> Any:
        """A bitmask for ``batch_size`` rows (on the CPU, where it is filled)."""
        return xg.allocate_token_bitmask(batch_size, vocab_size)

    def fill_vocab_mask(self, vocab_mask: Any, idx: int) -> None:
        """Fills row ``idx``."""
        self.matcher.fill_next_token_bitmask(vocab_mask, idx)

    @staticmethod
    def move_vocab_mask(vocab_mask: Any, device: Any) -> Any:
        """The mask on the logits' device."""
        return vocab_mask.to(device, non_blocking=True) if hasattr(vocab_mask, "to") else vocab_mask

    @staticmethod
    def apply_vocab_mask(logits: Any, vocab_mask: Any) -> None:
        """Sets forbidden tokens' logits to ``-inf``."""
        xg.apply_token_bitmask_inplace(logits, vocab_mask)

    def copy(self) -> "XgGrammarObject":
        """A fresh state of the same grammar, for another request."""
        return XgGrammarObject(self.compiled, self.vocab_size, self.stop)

    def try_jump_forward(self, tokenizer: Any) -> Optional[Tuple[List[int], str]]:
        """The forced text, if any, as SGLang's jump-forward helper."""
        forced = self.matcher.find_jump_forward_string()
        return ([], forced) if forced else None

    def jump_forward_str_state(self, helper: Tuple[List[int], str]) -> Tuple[str, int]:
        """The text to append, and no state of its own (-1)."""
        return helper[1], -1

    def jump_and_retokenize(self, old_output_ids: List[int], new_output_ids: List[int], next_state: int) -> None:
        """After a jump the output was retokenized: rolls back to the common
        prefix of the old and new token lists, then accepts the new tail."""
        common = 0
        for old, new in zip(old_output_ids, new_output_ids):
            if old != new:
                break
            common += 1
        if common < len(old_output_ids):
            self.matcher.rollback(len(old_output_ids) - common)
        for token in new_output_ids[common:]:
            if not self.matcher.accept_token(token):
                raise ValueError(f"retokenized token {token} is not allowed")


def _invalid(message: str) -> Any:
    """What the installed SGLang expects for a grammar that did not compile."""
    if _base is not None and hasattr(_base, "InvalidGrammarObject"):
        return _base.InvalidGrammarObject(message)
    if _base is not None and hasattr(_base, "INVALID_GRAMMAR_OBJ"):
        return _base.INVALID_GRAMMAR_OBJ
    return None


class XgGrammarBackend(_BackendBase):  # type: ignore[misc,valid-type]
    """SGLang's ``BaseGrammarBackend`` on xg: one compiler per server."""

    def __init__(
        self,
        tokenizer: Any,
        vocab_size: int,
        eos_token_ids: Optional[set] = None,
        any_whitespace: bool = True,
    ) -> None:
        if _BackendBase is not object:
            super().__init__()
        stop = sorted(eos_token_ids) if eos_token_ids else None
        self.tokenizer_info = xg.TokenizerInfo.from_huggingface(
            tokenizer, vocab_size=vocab_size, stop_token_ids=stop
        )
        self.compiler = xg.GrammarCompiler(self.tokenizer_info)
        self.vocab_size = vocab_size
        self.any_whitespace = any_whitespace

    def _grammar(self, kind: str, key: str, compile_it: Any) -> Any:
        try:
            compiled = compile_it()
        except (xg.CompileError, ValueError) as error:
            logger.error("xg: invalid %s: %s", kind, error)
            return _invalid(str(error))
        return XgGrammarObject(compiled, self.vocab_size, None)

    def dispatch_json(self, key_string: str) -> Any:
        """A JSON Schema (``$$ANY$$``: any JSON value)."""
        if key_string == "$$ANY$$":
            return self._grammar("json", key_string, self.compiler.compile_builtin_json_grammar)
        return self._grammar(
            "json",
            key_string,
            lambda: self.compiler.compile_json_schema(key_string, any_whitespace=self.any_whitespace),
        )

    def dispatch_regex(self, key_string: str) -> Any:
        """A regular expression."""
        return self._grammar("regex", key_string, lambda: self.compiler.compile_regex(key_string))

    def dispatch_ebnf(self, key_string: str) -> Any:
        """An EBNF (``.xg``) grammar."""
        return self._grammar("ebnf", key_string, lambda: self.compiler.compile_grammar(key_string))

    def dispatch_structural_tag(self, key_string: str) -> Any:
        """A structural tag, current or legacy JSON."""
        return self._grammar(
            "structural_tag", key_string, lambda: self.compiler.compile_structural_tag(json.loads(key_string))
        )

    def reset(self) -> None:
        """Empties the caches."""
        if _BackendBase is not object:
            super().reset()
        self.compiler.clear_cache()


def create_backend(server_args: Any, tokenizer: Any, vocab_size: int, eos_token_ids: Optional[set] = None) -> XgGrammarBackend:
    """SGLang's backend factory signature."""
    disable = getattr(server_args, "constrained_json_disable_any_whitespace", False)
    return XgGrammarBackend(tokenizer, vocab_size, eos_token_ids, any_whitespace=not disable)


def register(name: str = "xg") -> None:
    """Adds xg to SGLang's grammar backends as ``name``."""
    if _base is None:
        raise ImportError("SGLang is not installed")
    _base.register_grammar_backend(name, create_backend)
