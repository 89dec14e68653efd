"""The server integrations, each driven the way its server drives it (with
NumPy arrays, and a stand-in for a transformers fast tokenizer)."""

import gzip
import json
from types import SimpleNamespace

import numpy as np
import pytest

import xg
from conftest import QWEN3, allowed
from xg.integrations import sglang as xg_sglang
from xg.integrations import transformers as xg_transformers
from xg.integrations import vllm as xg_vllm

IM_END = 151645
VOCAB = 151936  # Qwen3's logits: more rows than the tokenizer's 151,669 tokens
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city", "days"],
}


class FastTokenizer:
    """What the integrations read of a transformers fast tokenizer."""

    def __init__(self):
        text = gzip.open(QWEN3).read().decode()
        self.backend_tokenizer = SimpleNamespace(to_str=lambda: text)
        self.eos_token_id = IM_END


@pytest.fixture(scope="module")
def hf_tokenizer():
    return FastTokenizer()


def test_from_huggingface_reads_a_fast_tokenizer(hf_tokenizer):
    info = xg.TokenizerInfo.from_huggingface(hf_tokenizer, vocab_size=VOCAB)
    assert info.vocab_size == VOCAB and info.stop_token_ids == [IM_END]


def test_vllm_backend_with_speculative_decoding(hf_tokenizer, tokenize):
    config = SimpleNamespace(structured_outputs_config=SimpleNamespace(disable_any_whitespace=True))
    backend = xg_vllm.XgBackend(config, tokenizer=hf_tokenizer, vocab_size=VOCAB)
    grammar = backend.compile_grammar(xg_vllm.StructuredOutputOptions.JSON, json.dumps(SCHEMA))
    target = tokenize('{"city": "Oslo", "days": 3}') + [IM_END]
    wrong = tokenize("]")[0]
    bitmask = backend.allocate_token_bitmask(4)
    assert bitmask.shape == (4, VOCAB // 32)
    done = 0
    while not grammar.is_terminated():
        # The drafter proposes three tokens, the third wrong every other step.
        draft = target[done : done + 3]
        if done % 2 == 0 and len(draft) == 3:
            draft[2] = wrong
        # As vLLM's grammar_bitmask: one row per draft position, advancing
        # through the draft and rolling back after.
        advanced = 0
        for row, token in enumerate(draft + [None]):
            grammar.fill_bitmask(bitmask, row)
            expected = target[done + row] if done + row < len(target) else None
            if expected is not None and (token is None or token == expected):
                assert expected in allowed(bitmask, row)
            if token is None or not grammar.accept_tokens("req-1", [token]):
                break
            advanced += 1
            if grammar.is_terminated():
                break
        grammar.rollback(advanced)
        # The sampler keeps the valid prefix of the draft and one token of its own.
        kept = grammar.validate_tokens(draft)
        assert kept == [t for t, e in zip(draft, target[done:]) if t == e][: len(kept)]
        sampled = kept + target[done + len(kept) : done + len(kept) + 1]
        assert grammar.accept_tokens("req-1", sampled)
        done += len(sampled)
    assert done == len(target) and grammar.num_processed_tokens == len(target)
    assert grammar.validate_tokens([IM_END]) == []
    grammar.reset()
    assert not grammar.is_terminated() and grammar.find_jump_string() == '{"city": "'


def test_vllm_request_types(hf_tokenizer):
    backend = xg_vllm.XgBackend(SimpleNamespace(), tokenizer=hf_tokenizer, vocab_size=VOCAB)
    kinds = xg_vllm.StructuredOutputOptions
    cases = [
        (kinds.JSON_OBJECT, "", '{"a": 1}'),
        (kinds.REGEX, r"\d+-\d+", "12-34"),
        (kinds.GRAMMAR, 'root ::= "yes" | "no"', "no"),
        (kinds.CHOICE, json.dumps(["red", "green"]), "green"),
        (
            kinds.STRUCTURAL_TAG,
            json.dumps({"structures": [{"begin": "<f>", "schema": {"type": "integer"}, "end": "</f>"}], "triggers": ["<f>"]}),
            "x<f>7</f>",
        ),
    ]
    for kind, spec, text in cases:
        grammar = backend.compile_grammar(kind, spec)
        assert grammar.matcher.accept_string(text), kind
        assert grammar.matcher.is_completed(), kind
    stop = backend.compile_grammar(kinds.REGEX, "ab", stop_token_ids={151643})
    assert stop.matcher.stop_token_ids == [151643]
    with pytest.raises(RuntimeError, match="minimum"):
        backend.compile_grammar(kinds.JSON, '{"type": "integer", "minimum": "low"}')
    backend.destroy()


def test_sglang_backend(hf_tokenizer, tokenize):
    server_args = SimpleNamespace(constrained_json_disable_any_whitespace=True)
    backend = xg_sglang.create_backend(server_args, hf_tokenizer, VOCAB, {IM_END})
    cached = backend.dispatch_json(json.dumps(SCHEMA))
    grammar = cached.copy()  # SGLang hands each request a copy of the cached object
    mask = grammar.allocate_vocab_mask(VOCAB, 2, "cpu")
    target = '{"city": "Oslo", "days": 3}'
    text, ids, jumps = "", [], 0
    while not grammar.is_terminated():
        helper = grammar.try_jump_forward(None)
        if helper is not None:
            # As SGLang's jump-forward: append the forced text, retokenize
            # the output, and let the grammar follow the new tokens.
            forced, _ = grammar.jump_forward_str_state(helper)
            assert target.startswith(text + forced)
            text += forced
            new_ids = tokenize(text)
            grammar.jump_and_retokenize(ids, new_ids, -1)
            ids, jumps = new_ids, jumps + 1
            continue
        token = tokenize(target[len(text) :])[0] if len(text) < len(target) else IM_END
        grammar.fill_vocab_mask(mask, 1)
        logits = np.zeros((2, VOCAB), dtype=np.float32)
        grammar.apply_vocab_mask(logits, grammar.move_vocab_mask(mask, "cpu"))
        assert np.isfinite(logits[1, token]) and np.isfinite(logits[0]).all()
        assert np.isinf(logits[1, VOCAB - 1])  # padding ids never
        grammar.accept_token(token)
        ids.append(token)
        if token != IM_END:
            text += hf_bytes(token).decode()
    assert text == target and jumps >= 2
    grammar.rollback(1)
    assert not grammar.is_terminated()
    with pytest.raises(ValueError, match="not allowed"):
        grammar.accept_token(tokenize("x")[0])
    assert backend.dispatch_regex("a(") is None  # SGLang's "invalid" without SGLang installed
    assert backend.dispatch_ebnf('root ::= "a"').copy().matcher.accept_string("a")
    assert backend.dispatch_json("$$ANY$$").matcher.accept_string("[1]")
    tag = {"structures": [{"begin": "<f>", "schema": {"type": "null"}, "end": "</f>"}], "triggers": ["<f>"]}
    assert backend.dispatch_structural_tag(json.dumps(tag)).matcher.accept_string("<f>null</f>")
    backend.reset()


_INFO = {}


def hf_bytes(token):
    if "info" not in _INFO:
        _INFO["info"] = xg.TokenizerInfo.from_tokenizer_json(QWEN3)
    return _INFO["info"].decoded_vocab[token]


def test_transformers_logits_processor(compiler, tokenize):
    compiled = [
        compiler.compile_json_schema(SCHEMA, any_whitespace=False),
        compiler.compile_regex("(yes|no)"),
    ]
    processor = xg_transformers.LogitsProcessor(compiled)
    targets = [tokenize('{"city": "Oslo", "days": 3}') + [IM_END], tokenize("no") + [IM_END]]
    input_ids = np.array([[1, 2, 3], [1, 2, 3]])
    vocab = compiler.tokenizer_info.vocab_size
    for step in range(max(map(len, targets))):
        scores = processor(input_ids, np.zeros((2, vocab), dtype=np.float32))
        chosen = []
        for row, target in enumerate(targets):
            token = target[min(step, len(target) - 1)] if step < len(target) else IM_END
            if step < len(target):
                assert np.isfinite(scores[row, token]), (row, step)
                assert np.isinf(scores[row, 151644])  # <|im_start|>: never allowed
            chosen.append(token)
        input_ids = np.concatenate([input_ids, np.array(chosen)[:, None]], axis=1)
    processor(input_ids, np.zeros((2, vocab), dtype=np.float32))
    assert all(m.is_terminated() for m in processor.matchers)
