"""A ``transformers`` logits processor on xg, for ``model.generate``::

    compiled = xg.GrammarCompiler(xg.TokenizerInfo.from_huggingface(tok)).compile_json_schema(schema)
    model.generate(**inputs, logits_processor=[xg.integrations.transformers.LogitsProcessor(compiled)])

Each call accepts the token sampled at the previous step in every row of
the batch, then masks the next token's logits. Works on torch tensors and
on NumPy arrays.
"""

from __future__ import annotations

from typing import Any, List, Sequence, Union

import numpy as np

import xg

try:  # transformers' marker base class when installed.
    from transformers.generation.logits_process import LogitsProcessor as _Base
except ImportError:  # pragma: no cover - depends on the environment
    _Base = object


class LogitsProcessor(_Base):  # type: ignore[misc,valid-type]
    """Constrains ``generate`` to a compiled grammar: one grammar for every
    row, or one per row of the batch."""

    def __init__(self, compiled: Union[xg.CompiledGrammar, Sequence[xg.CompiledGrammar]]) -> None:
        self.compiled: List[xg.CompiledGrammar] = (
            [compiled] if isinstance(compiled, xg.CompiledGrammar) else list(compiled)
        )
        self.matchers: List[xg.GrammarMatcher] = []
        self.prompt_length = 0
        self.bitmask: Any = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        rows = scores.shape[0]
        if not self.matchers:
            compiled = self.compiled * rows if len(self.compiled) == 1 else self.compiled
            if len(compiled) != rows:
                raise ValueError(f"{len(self.compiled)} grammars for a batch of {rows}")
            self.matchers = [xg.GrammarMatcher(c) for c in compiled]
            self.prompt_length = input_ids.shape[1]
            vocab = self.compiled[0].tokenizer_info.vocab_size
            self.bitmask = np.full(xg.get_bitmask_shape(rows, vocab), -1, dtype=np.int32)
        else:
            for row, matcher in enumerate(self.matchers):
                if matcher.is_terminated():
                    continue
                token = int(input_ids[row, -1])
                if not matcher.accept_token(token):
                    raise ValueError(f"row {row}: token {token} is not allowed; expected {matcher.expected()}")
        for row, matcher in enumerate(self.matchers):
            if matcher.is_terminated():
                self.bitmask[row] = -1
            else:
                matcher.fill_next_token_bitmask(self.bitmask, row)
        xg.apply_token_bitmask_inplace(scores, self.bitmask)
        return scores
