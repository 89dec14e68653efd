"""With torch and transformers installed (not in CI: they are large), the
same calls on torch tensors and on a real transformers tokenizer."""

import gzip

import numpy as np
import pytest

import xg
from conftest import QWEN3, allowed

torch = pytest.importorskip("torch")


def test_torch_bitmasks(compiler, info):
    m = xg.GrammarMatcher(compiler.compile_regex("a+"))
    bitmask = xg.allocate_token_bitmask(2, info.vocab_size)
    assert isinstance(bitmask, torch.Tensor) and bitmask.dtype == torch.int32
    assert m.fill_next_token_bitmask(bitmask, 1)
    assert allowed(bitmask.numpy(), 1) == {i for i, b in enumerate(info.decoded_vocab) if b and set(b) == {97}}
    with pytest.raises(ValueError, match="int32"):
        m.fill_next_token_bitmask(torch.zeros(bitmask.shape, dtype=torch.int64))
    with pytest.raises(ValueError, match="contiguous"):
        m.fill_next_token_bitmask(torch.zeros((2, bitmask.shape[1] * 2), dtype=torch.int32)[:, ::2])
    logits = torch.zeros((2, info.vocab_size))
    xg.apply_token_bitmask_inplace(logits, bitmask)
    assert torch.isfinite(logits[0]).all()
    assert set(torch.isfinite(logits[1]).nonzero().flatten().tolist()) == allowed(bitmask.numpy(), 1)


def test_from_a_transformers_tokenizer(tmp_path):
    transformers = pytest.importorskip("transformers")
    path = tmp_path / "tokenizer.json"
    path.write_bytes(gzip.open(QWEN3).read())
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path), eos_token="<|im_end|>")
    info = xg.TokenizerInfo.from_huggingface(tokenizer, vocab_size=151936)
    assert info.vocab_size == 151936 and info.stop_token_ids == [151645]
    reference = xg.TokenizerInfo.from_tokenizer_json(QWEN3)
    assert info.decoded_vocab[:151669] == reference.decoded_vocab
    compiled = xg.GrammarCompiler(info).compile_json_schema({"type": "integer"})
    matcher = xg.GrammarMatcher(compiled)
    for token in tokenizer.encode("12345", add_special_tokens=False):
        assert matcher.accept_token(token)
    assert matcher.accept_token(151645) and matcher.is_terminated()
    np.testing.assert_equal(info.special_token_ids, reference.special_token_ids)
