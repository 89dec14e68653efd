"""Fixtures: the vendored Qwen3 tokenizer (data/tokenizers/qwen3), loaded once."""

from pathlib import Path

import pytest

import xg

REPO = Path(__file__).resolve().parents[2]
QWEN3 = REPO / "data" / "tokenizers" / "qwen3" / "tokenizer.json.gz"


@pytest.fixture(scope="session")
def info() -> xg.TokenizerInfo:
    return xg.TokenizerInfo.from_tokenizer_json(QWEN3)


@pytest.fixture(scope="session")
def compiler(info) -> xg.GrammarCompiler:
    return xg.GrammarCompiler(info)


class Greedy:
    """Greedy longest-match tokenization over the text tokens' bytes: a
    valid (not canonical) tokenization, enough to drive a matcher."""

    def __init__(self, info: xg.TokenizerInfo) -> None:
        special = set(info.special_token_ids)
        self.ids = {}
        for i, b in enumerate(info.decoded_vocab):
            if b and i not in special and b not in self.ids:
                self.ids[b] = i
        self.longest = max(len(b) for b in self.ids)

    def __call__(self, text: str) -> list:
        data, out, at = text.encode(), [], 0
        while at < len(data):
            for n in range(min(self.longest, len(data) - at), 0, -1):
                token = self.ids.get(data[at : at + n])
                if token is not None:
                    out.append(token)
                    at += n
                    break
            else:
                raise ValueError(f"no token for byte {data[at]} at {at}")
        return out


@pytest.fixture(scope="session")
def tokenize(info) -> Greedy:
    return Greedy(info)


def allowed(bitmask, row: int = 0) -> set:
    """The token ids a bitmask row allows."""
    import numpy as np

    words = np.asarray(bitmask).reshape(-1, np.asarray(bitmask).shape[-1])[row]
    bits = np.unpackbits(words.astype("<i4").view(np.uint8), bitorder="little")
    return set(np.flatnonzero(bits).tolist())
