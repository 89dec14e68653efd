"""xg's XGrammar-compatible API on the vendored Qwen3 tokenizer: what each
call returns, and that masks agree with what the matcher accepts."""

import gzip
import json
import random

import numpy as np
import pytest

import xg
from conftest import QWEN3, allowed

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "maximum": 150}},
    "required": ["name", "age"],
}


def walk(compiled, tokens, info):
    """Accepts `tokens` one by one; before each, the mask allows it and
    agrees with accept_token on 200 other random ids (checked on forks)."""
    matcher = xg.GrammarMatcher(compiled)
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    rng = random.Random(7)
    for token in tokens:
        matcher.fill_next_token_bitmask(bitmask)
        mask = allowed(bitmask)
        assert token in mask
        for other in rng.sample(range(info.vocab_size), 200):
            assert matcher.fork().accept_token(other) == (other in mask), other
        assert matcher.accept_token(token)
    return matcher


def test_tokenizer_from_json_file(info):
    assert info.vocab_size == 151669
    assert info.vocab_type == xg.VocabType.BYTE_LEVEL
    # tokenizer_config.json beside the file names <|im_end|>.
    assert info.stop_token_ids == [151645]
    assert 151644 in info.special_token_ids  # <|im_start|>
    assert info.decoded_vocab[15] == b"0"


def test_tokenizer_from_json_text_and_padding():
    text = gzip.open(QWEN3).read().decode()
    padded = xg.TokenizerInfo.from_tokenizer_json(text, vocab_size=151936, stop_token_ids=[151643])
    assert padded.vocab_size == 151936
    assert padded.stop_token_ids == [151643]
    assert set(range(151669, 151936)) <= set(padded.absent_token_ids)
    with pytest.raises(ValueError, match="fewer than"):
        xg.TokenizerInfo.from_tokenizer_json(text, vocab_size=1000)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        xg.TokenizerInfo.from_tokenizer_json(text, stop_token_ids=[10**9])


def test_padding_ids_are_never_allowed(compiler):
    padded = xg.TokenizerInfo.from_tokenizer_json(QWEN3, vocab_size=151936)
    compiled = xg.GrammarCompiler(padded).compile_builtin_json_grammar()
    matcher = xg.GrammarMatcher(compiled)
    bitmask = xg.allocate_token_bitmask(1, padded.vocab_size)
    assert matcher.fill_next_token_bitmask(bitmask)
    assert not allowed(bitmask) & set(range(151669, 151936))
    assert not matcher.accept_token(151900)


def test_tokenizer_from_pieces():
    raw = xg.TokenizerInfo([b"a", "b", b"ab", "</s>"], xg.VocabType.RAW, stop_token_ids=3)
    assert raw.decoded_vocab == [b"a", b"b", b"ab", b"</s>"]
    byte_level = xg.TokenizerInfo(["Ġhi", "Ċ", "<|end|>"], xg.VocabType.BYTE_LEVEL, special_token_ids=[2])
    assert byte_level.decoded_vocab == [b" hi", b"\n", b""]
    assert byte_level.stop_token_ids == [2]  # a known end token
    pieces = xg.TokenizerInfo(["▁hi", "<0x0A>"], xg.VocabType.BYTE_FALLBACK)
    assert pieces.decoded_vocab == [b" hi", b"\n"]
    with pytest.raises(ValueError, match="vocab_type"):
        xg.TokenizerInfo(["a"], 7)


def test_json_schema_walk(info, compiler, tokenize):
    compiled = compiler.compile_json_schema(PERSON, any_whitespace=False)
    matcher = walk(compiled, tokenize('{"name": "Ada", "age": 36}'), info)
    assert matcher.is_completed() and not matcher.is_terminated()
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    assert allowed(bitmask) == {151645}
    assert matcher.accept_token(151645)
    assert matcher.is_terminated()


def test_json_schema_options(compiler):
    as_text = compiler.compile_json_schema(json.dumps(PERSON), any_whitespace=False)
    m = xg.GrammarMatcher(as_text)
    assert m.accept_string('{"name": "A", ')
    assert not m.accept_string('"extra"')  # strict_mode: no other properties
    pretty = xg.GrammarMatcher(compiler.compile_json_schema(PERSON, indent=2))
    assert pretty.accept_string('{\n  "name": "A",\n  "age": 1\n}')
    compact = xg.GrammarMatcher(compiler.compile_json_schema(PERSON, any_whitespace=False, separators=(",", ":")))
    assert compact.accept_string('{"name":"A","age":1}')
    any_order = xg.GrammarMatcher(compiler.compile_json_schema(PERSON, any_order=True))
    assert any_order.accept_string('{"age": 1, "name": "A"}')
    assert any_order.is_completed()
    lenient = xg.GrammarMatcher(compiler.compile_json_schema(PERSON, strict_mode=False))
    assert lenient.accept_string('{"name": "A", "age": 1, "x": [true]}')


def test_pydantic_style_schema(compiler):
    class Model:
        @staticmethod
        def model_json_schema():
            return {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2}

    m = xg.GrammarMatcher(compiler.compile_json_schema(Model))
    assert m.accept_string('["a","b"]') and m.is_completed()


def test_other_grammar_forms(compiler, info, tokenize):
    regex = compiler.compile_regex(r"\d{3}-\d{4}")
    m = xg.GrammarMatcher(regex)
    assert m.accept_string("555-0199") and m.is_completed()
    assert not xg.GrammarMatcher(regex).accept_string("55a")
    ebnf = compiler.compile_grammar('root ::= "yes" | "no" | num\nnum ::= [0-9]+')
    walk(ebnf, tokenize("42"), info)
    grammar = xg.Grammar.from_ebnf("answer ::= [a-z]+", root_rule_name="answer")
    assert xg.GrammarMatcher(compiler.compile_grammar(grammar)).accept_string("abc")
    from_regex = xg.Grammar.from_regex("a/b+")
    assert xg.GrammarMatcher(compiler.compile_grammar(from_regex)).accept_string("a/bb")
    from_schema = xg.Grammar.from_json_schema({"type": "boolean"})
    assert "root" in str(from_schema)
    assert xg.GrammarMatcher(compiler.compile_grammar(from_schema)).accept_string("true")
    json_any = xg.GrammarMatcher(compiler.compile_builtin_json_grammar())
    assert json_any.accept_string('{"a": [1, null]}') and json_any.is_completed()


def test_structural_tags(compiler):
    tag = {
        "type": "structural_tag",
        "format": {
            "type": "triggered_tags",
            "triggers": ["<function="],
            "tags": [
                {
                    "type": "tag",
                    "begin": "<function=f>",
                    "content": {"type": "json_schema", "json_schema": {"type": "object"}},
                    "end": "</function>",
                }
            ],
        },
    }
    m = xg.GrammarMatcher(compiler.compile_structural_tag(tag))
    assert m.accept_string("Hi <function=f>{}</function>") and m.is_completed()
    legacy = compiler.compile_structural_tag(
        [xg.StructuralTagItem(begin="<f>", schema={"type": "integer"}, end="</f>")], ["<f>"]
    )
    m = xg.GrammarMatcher(legacy)
    assert m.accept_string("text <f>12</f>")
    assert not m.accept_string("<f>x")


def test_tools(compiler):
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    compiled = compiler.compile_tools(tools, format="qwen", reasoning="forbidden", tool_choice="required")
    m = xg.GrammarMatcher(compiled)
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    assert m.accept_string(call), m.expected()
    with pytest.raises(ValueError, match="format"):
        compiler.compile_tools(tools, format="nope")


def test_tools_families_and_their_default_reasoning(compiler):
    """The newer families: MiniMax M2's and Kimi K3's prompts open the
    reasoning, so by default the turn begins inside it; Kimi's markers are
    text in the Qwen3 vocabulary, so they are written as text."""
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    minimax = compiler.compile_tools(tools, format="minimax-m2")
    call = ('<minimax:tool_call>\n<invoke name="get_weather"><parameter name="city">Paris'
            '</parameter>\n</invoke>\n</minimax:tool_call>')
    m = xg.GrammarMatcher(minimax)
    assert m.accept_string("Weather in Paris.\n</think>\n\n" + call) and m.is_completed()
    # Without `</think>`, all of it is still reasoning: the turn cannot end.
    m = xg.GrammarMatcher(minimax)
    assert m.accept_string(call) and not m.is_completed()
    assert xg.GrammarMatcher(compiler.compile_tools(tools, format="minimax-m2", reasoning="forbidden")).accept_string(call)
    kimi = compiler.compile_tools(tools, format="kimi-k2", reasoning="forbidden", tool_choice="required")
    m = xg.GrammarMatcher(kimi)
    assert m.accept_string('<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:3'
                           '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>'
                           '<|tool_calls_section_end|>'), m.expected()
    assert m.is_completed()
    # Kimi K3: thinking on by default (the prompt opens `think`); typed XTML
    # arguments, an integer's type `number`.
    k3 = compiler.compile_tools(tools, format="kimi-k3")
    turn = ('Paris.<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|>'
            '<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>'
            '<|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>'
            '<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>')
    m = xg.GrammarMatcher(k3)
    assert m.accept_string(turn) and m.is_completed(), m.expected()
    assert not xg.GrammarMatcher(k3).accept_string(turn.replace('type="string"', 'type="number"'))
    # Gemma 4: arguments in its notation, keys bare, strings between <|"|>.
    gemma = compiler.compile_tools(tools, format="gemma-4", tool_choice="required")
    call = '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>'
    m = xg.GrammarMatcher(gemma)
    assert m.accept_string(call) and m.is_completed(), m.expected()
    assert not xg.GrammarMatcher(gemma).accept_string(call.replace("city:", '"city":'))
    # Qwen3.5: the prompt opens the reasoning.
    qwen35 = compiler.compile_tools(tools, format="qwen3.5")
    m = xg.GrammarMatcher(qwen35)
    assert m.accept_string("Paris, then.\n</think>\n\nIt is sunny.") and m.is_completed()


def test_tools_allowed_subset(compiler):
    """OpenAI's `allowed_tools` tool choice, in the Chat Completions and
    the Responses API forms: only the listed tools may be called."""
    def tool(name):
        return {"type": "function", "function": {"name": name, "parameters": {
            "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}

    tools = [tool("search"), tool("lookup")]
    chat = {"type": "allowed_tools", "allowed_tools": {
        "mode": "required", "tools": [{"type": "function", "function": {"name": "lookup"}}]}}
    responses = {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "lookup"}]}
    call = lambda name: '<tool_call>\n{"name": "%s", "arguments": {"q": "x"}}\n</tool_call>' % name
    for choice, text_ok in [(chat, False), (responses, True)]:
        compiled = compiler.compile_tools(tools, format="qwen", reasoning="forbidden", tool_choice=choice)
        assert xg.GrammarMatcher(compiled).accept_string(call("lookup"))
        assert not xg.GrammarMatcher(compiled).accept_string(call("search"))
        assert xg.GrammarMatcher(compiled).accept_string("Hello.") == text_ok
    with pytest.raises(ValueError, match="allowed_tools"):
        compiler.compile_tools(tools, format="qwen", tool_choice={"type": "allowed_tools", "mode": "sometimes", "tools": []})


def test_compile_errors_carry_diagnostics(compiler):
    with pytest.raises(xg.CompileError, match=r"#/minProperties") as error:
        compiler.compile_json_schema({"type": "object", "minProperties": "x"})
    assert isinstance(error.value, RuntimeError)  # as XGrammar's errors are
    with pytest.raises(xg.CompileError, match="grammar.xg:2"):
        compiler.compile_grammar('root ::= a\na ::= "x" |||')
    with pytest.raises(xg.CompileError, match="not valid JSON"):
        compiler.compile_json_schema("{not json")
    with pytest.raises(xg.CompileError):
        compiler.compile_regex("a(")

def test_request_grammars_read_no_files(compiler, tmp_path):
    secret = tmp_path / "secret.xg"
    secret.write_text('x ::= "launch-code-1234"\n')
    with pytest.raises(xg.CompileError, match="reads no files") as error:
        compiler.compile_grammar(f'import "{secret}" as s;\nroot ::= s.x')
    assert "launch-code" not in str(error.value)


def test_limits(info):
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(200)}}
    few_rules = xg.GrammarCompiler(info, max_rules=10)
    with pytest.raises(xg.CompileError, match="rule"):
        few_rules.compile_json_schema(wide)
    cancel = xg.CancelFlag()
    cancel.set()
    with pytest.raises(xg.CompileError, match="cancel"):
        xg.GrammarCompiler(info).compile_json_schema(wide, cancel=cancel)
    unlimited = xg.GrammarCompiler(info, time_limit=None)
    assert unlimited.compile_json_schema(wide).memory_size_bytes > 0
    long_literal = {"const": "x" * 400_000}
    small = xg.GrammarCompiler(info, memory_limit_bytes=1 << 20)
    with pytest.raises(xg.CompileError, match="1 MiB"):
        small.compile_json_schema(long_literal)
    roomy = xg.GrammarCompiler(info, memory_limit_bytes=None)
    assert roomy.compile_json_schema(long_literal).memory_size_bytes > 0


def test_caches(info):
    compiler = xg.GrammarCompiler(info)
    compiler.compile_json_schema(PERSON)
    assert compiler.get_cache_size_bytes() > 0
    compiler.clear_cache()
    assert compiler.get_cache_size_bytes() == 0
    uncached = xg.GrammarCompiler(info, cache_enabled=False)
    uncached.compile_json_schema(PERSON)


def test_rejected_steps_change_nothing(compiler, info):
    m = xg.GrammarMatcher(compiler.compile_json_schema(PERSON, any_whitespace=False))
    assert m.accept_string('{"name": ')
    before = xg.allocate_token_bitmask(1, info.vocab_size)
    m.fill_next_token_bitmask(before)
    assert not m.accept_string("]")
    assert not m.accept_token(15)  # "0" is not a string
    with pytest.raises(ValueError, match="outside the vocabulary"):
        m.accept_token(info.vocab_size)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        m.accept_token(-1)
    with pytest.raises(ValueError, match="roll back"):
        m.rollback(5)
    after = xg.allocate_token_bitmask(1, info.vocab_size)
    m.fill_next_token_bitmask(after)
    assert np.array_equal(before, after)
    assert m.num_steps() == 1


def test_rollback_reset_fork_jump_forward(compiler):
    m = xg.GrammarMatcher(compiler.compile_json_schema(PERSON, any_whitespace=False))
    assert m.find_jump_forward_string() == '{"name": "'
    assert m.accept_string('{"name": "A"')
    assert m.find_jump_forward_string() == ', "age": '
    fork = m.fork()
    assert fork.accept_string(', "age": 1}') and fork.is_completed()
    assert not m.is_completed()
    m.rollback(1)
    assert m.num_steps() == 0
    m.accept_string("{")
    m.reset()
    assert m.num_steps() == 0 and m.find_jump_forward_string() == '{"name": "'


def test_stop_token_options(compiler, info):
    compiled = compiler.compile_regex("ab")
    m = xg.GrammarMatcher(compiled, override_stop_tokens=[151643])
    assert m.stop_token_ids == [151643]
    m.accept_string("ab")
    assert not m.accept_token(151645)  # no longer a stop token
    assert m.accept_token(151643) and m.is_terminated()
    eager = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    eager.accept_string("ab")
    assert eager.is_terminated()


def test_whitespace_runs_are_bounded_by_default(compiler):
    bounded = xg.GrammarMatcher(compiler.compile_json_schema(PERSON))
    assert bounded.accept_string("{" + " \n" * 16)  # 32 characters
    assert not bounded.accept_string(" ")
    assert bounded.accept_string('"name": "Ada", "age": 3}') and bounded.is_completed()
    unbounded = xg.GrammarMatcher(compiler.compile_json_schema(PERSON, max_whitespace_cnt=None))
    assert unbounded.accept_string("{" + " " * 1000 + '"name": "Ada", "age": 3}')
    json_mode = xg.GrammarMatcher(compiler.compile_builtin_json_grammar())
    assert json_mode.accept_string("[" + " " * 32) and not json_mode.accept_string(" ")


def test_stop_reason(compiler):
    compiled = compiler.compile_regex("ab?")
    m = xg.GrammarMatcher(compiled)
    assert m.stop_reason() is None
    assert m.accept_string("a") and m.is_completed()
    assert m.stop_reason() is None  # it may end, but "b" may follow
    assert m.accept_string("b")
    assert m.stop_reason() == ("complete", None)
    assert m.accept_token(151645)
    assert m.stop_reason() == ("stop_token", 151645)
    m.rollback(1)
    assert m.stop_reason() == ("complete", None)
    eager = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert eager.accept_string("a")
    assert eager.stop_reason() == ("terminated", None)


def test_captures(compiler):
    compiled = compiler.compile_grammar(
        'root ::= "call " name "(" arg ("," arg)* ")"\n'
        "name [capture] ::= [a-z_]+\n"
        "arg [capture] ::= [0-9]+\n"
    )
    m = xg.GrammarMatcher(compiled)
    assert m.accept_string("call get_time(1")
    assert m.get_captures() == [("name", "get_time"), ("arg", "1")]
    assert m.accept_string("2,3)")
    assert m.get_captures() == [("name", "get_time"), ("arg", "12"), ("arg", "3")]
    m.rollback(1)
    assert m.get_captures() == [("name", "get_time"), ("arg", "1")]
    assert xg.GrammarMatcher(compiler.compile_regex("a+")).get_captures() == []


def test_tool_call_events(compiler, info):
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}]
    m = xg.GrammarMatcher(compiler.compile_tools(tools, format="qwen", reasoning="forbidden"))
    assert m.accept_string('Sure.<tool_call>\n{"name": "get_weather", "arguments": {"ci')
    assert m.get_tool_call_events() == [
        {"type": "text", "text": "Sure."},
        {"type": "tool_call_started", "index": 0, "name": "get_weather"},
        {"type": "arguments_delta", "index": 0, "text": '{"ci'},
    ]
    assert m.get_tool_call_events() == []
    assert m.accept_string('ty": "Oslo"}}\n</tool_call>')
    assert m.get_tool_call_events() == [
        {"type": "arguments_delta", "index": 0, "text": 'ty": "Oslo"}'},
        {"type": "tool_call_finished", "index": 0, "name": "get_weather",
         "arguments": '{"city": "Oslo"}'},
    ]
    m.reset()
    assert m.get_tool_call_events() == []


def test_bitmask_checks(compiler, info):
    m = xg.GrammarMatcher(compiler.compile_regex("a+"))
    rows, words = xg.get_bitmask_shape(2, info.vocab_size)
    with pytest.raises(ValueError, match="int32"):
        m.fill_next_token_bitmask(np.zeros((rows, words), dtype=np.int64))
    with pytest.raises(ValueError, match="words per row"):
        m.fill_next_token_bitmask(np.zeros((rows, words - 1), dtype=np.int32))
    with pytest.raises(ValueError, match="shape"):
        m.fill_next_token_bitmask(np.zeros((1, rows, words), dtype=np.int32))
    with pytest.raises(ValueError, match="contiguous"):
        m.fill_next_token_bitmask(np.zeros((rows, 2 * words), dtype=np.int32)[:, ::2])
    frozen = np.zeros((rows, words), dtype=np.int32)
    frozen.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        m.fill_next_token_bitmask(frozen)
    with pytest.raises(ValueError, match="row 2"):
        m.fill_next_token_bitmask(np.zeros((rows, words), dtype=np.int32), 2)
    with pytest.raises(TypeError, match="NumPy array"):
        m.fill_next_token_bitmask([0] * words)
    # A one-dimensional row and a wider row work; extra words are cleared.
    one = np.full(words + 3, -1, dtype=np.int32)
    assert m.fill_next_token_bitmask(one)
    assert not one[words:].any()
    assert allowed(one) == {i for i, b in enumerate(info.decoded_vocab) if b and set(b) == {97}}


def test_serialize_and_bundles(compiler, info, tmp_path):
    compiled = compiler.compile_json_schema(PERSON)
    data = compiled.serialize()
    again = xg.CompiledGrammar.deserialize(data, info)
    a, b = xg.GrammarMatcher(compiled), xg.GrammarMatcher(again)
    masks = [xg.allocate_token_bitmask(1, info.vocab_size) for _ in range(2)]
    for text in ['{"name"', ': "x", "age": ', "12"]:
        a.fill_next_token_bitmask(masks[0])
        b.fill_next_token_bitmask(masks[1])
        assert np.array_equal(masks[0], masks[1])
        assert a.accept_string(text) and b.accept_string(text)
    path = tmp_path / "person.xgb"
    path.write_bytes(data)
    assert xg.GrammarMatcher(xg.CompiledGrammar.open(path, info)).accept_string('{"name"')
    with pytest.raises(ValueError):
        xg.CompiledGrammar.deserialize(data[:-7] + b"garbage", info)
    with pytest.raises(ValueError):
        xg.CompiledGrammar.deserialize(b"", info)


def test_apply_token_bitmask_numpy(info):
    bitmask = np.zeros(xg.get_bitmask_shape(2, 70), dtype=np.int32)
    bitmask[0, 0] = 0b101
    bitmask[1, 2] = 1 << 3  # token 67
    logits = np.zeros((3, 70), dtype=np.float32)
    xg.apply_token_bitmask_inplace(logits, bitmask, indices=[2, 0])
    assert np.isfinite(logits[2]).nonzero()[0].tolist() == [0, 2]
    assert np.isfinite(logits[0]).nonzero()[0].tolist() == [67]
    assert np.isfinite(logits[1]).all()
    xg.reset_token_bitmask(bitmask)
    assert (bitmask == -1).all()


def test_json_schema_report(compiler):
    report = compiler.json_schema_report(
        {"type": "string", "format": "color-hex", "pattern": "^[a-f0-9]+$", "x-custom": 1}
    )
    treatments = {(r["pointer"], r["keyword"]): r["treatment"] for r in report}
    assert treatments[("#", "pattern")] == "enforced"
    assert treatments[("#", "format")] == "ignored"
    assert all(set(r) == {"pointer", "keyword", "treatment", "detail"} for r in report)
    with pytest.raises(xg.CompileError, match="#/maxLength"):
        compiler.json_schema_report({"type": "string", "maxLength": -1})


def test_only_real_arrays_are_written(compiler, info):
    class Liar:
        """Claims memory it does not own."""

        __array_interface__ = {"data": (64, False), "shape": (1, 4740), "typestr": "<i4", "version": 3}

    m = xg.GrammarMatcher(compiler.compile_regex("a+"))
    with pytest.raises(TypeError, match="NumPy array"):
        m.fill_next_token_bitmask(Liar())


def test_validate_tokens(compiler, tokenize):
    m = xg.GrammarMatcher(compiler.compile_json_schema(PERSON, any_whitespace=False))
    draft = tokenize('{"name": "A", "age": 1}') + [151645]
    assert m.validate_tokens(draft) == len(draft)
    assert m.validate_tokens(draft[:3] + tokenize("]")) == 3
    assert m.num_steps() == 0 and m.find_jump_forward_string() == '{"name": "'
    with pytest.raises(ValueError, match="outside the vocabulary"):
        m.validate_tokens([draft[0], -1])


def test_traverse_draft_tree_equals_a_mask_per_replayed_path(compiler, info, tokenize):
    """XGrammar's traverse_draft_tree: row i is the mask after the path to
    node i (replayed here on a fork); refused nodes and their subtrees get
    empty rows; the matcher is unchanged; temperatures are filled with -1."""
    m = xg.GrammarMatcher(compiler.compile_json_schema(PERSON, any_whitespace=False))
    m.accept_string('{"name": "')
    ids = tokenize('Ada", "age": 36}')
    # 0 (root) -> 1 ids[0] -> 2 ids[1] -> 3 ids[2]; 1 -> 4 a raw line break (refused) -> 5 ids[1]
    tokens = [0, ids[0], ids[1], ids[2], tokenize("\n")[0], ids[1]]
    parent = [-1, 0, 1, 2, 1, 4]
    first_child = [1, 2, 3, -1, 5, -1]
    next_sibling = [-1, -1, 4, -1, -1, -1]
    bitmask = xg.allocate_token_bitmask(len(tokens), info.vocab_size)
    temperatures = np.zeros(len(tokens), dtype=np.float32)
    steps = m.num_steps()
    assert m.traverse_draft_tree(first_child, next_sibling, tokens, bitmask, temperatures=temperatures)
    assert m.num_steps() == steps and m.find_jump_forward_string() == ""
    assert (temperatures == -1).all()
    for node in range(len(tokens)):
        path, at = [], node
        while at > 0:
            path.append(tokens[at])
            at = parent[at]
        fork = m.fork()
        expected = xg.allocate_token_bitmask(1, info.vocab_size)
        expected[:] = 0
        if all(fork.accept_token(t) for t in reversed(path)):
            fork.fill_next_token_bitmask(expected)
        assert (bitmask[node] == expected[0]).all(), node
    assert not bitmask[4].any() and not bitmask[5].any()
    with pytest.raises(ValueError, match="not a draft tree"):
        m.traverse_draft_tree([1, 1], [-1, -1], [0, ids[0]], bitmask)


def test_find_jump_forward_tokens_follows_the_tokenizer(compiler, info):
    """Jump-forward in tokens on the vendored Qwen3 tokenizer: after a
    model began a word the grammar then forces ("a" of "application/json"),
    the returned rollback and tokens leave the output tokenized exactly as
    the tokenizer writes the whole text; an error in `tokenize` propagates."""
    import gzip

    tokenizers = pytest.importorskip("tokenizers")
    from conftest import QWEN3

    tok = tokenizers.Tokenizer.from_str(gzip.decompress(QWEN3.read_bytes()).decode())

    def tokenize(text):
        return tok.encode(text, add_special_tokens=False).ids

    schema = {"type": "object", "properties": {"type": {"enum": ["application/json", "text/plain"]}},
              "required": ["type"]}
    m = xg.GrammarMatcher(compiler.compile_json_schema(schema, any_whitespace=False))
    written = tokenize('{"type": "a')
    for token in written:
        assert m.accept_token(token)
    rollback, tokens = m.find_jump_forward_tokens(tokenize)
    assert rollback >= 1 and tokens
    m.rollback(rollback)
    for token in tokens:
        assert m.accept_token(token)
    written = written[: len(written) - rollback] + tokens
    whole = tokenize('{"type": "application/json"}')
    assert written == whole[: len(written)]

    def broken(text):
        raise KeyError("tokenizer down")

    m.reset()
    with pytest.raises(KeyError, match="tokenizer down"):
        m.find_jump_forward_tokens(broken)


def test_token_budget(compiler, info):
    """Random walks among the allowed tokens of a schema with a 32-token
    budget always end in time; the budget's stop reason and the fewest
    tokens or bytes to an end."""
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["name", "tags"],
    }
    compiled = compiler.compile_json_schema(schema, any_whitespace=False)
    start = xg.GrammarMatcher(compiled)
    # XGrammar's separators without free white space: ", " and ": ".
    assert start.min_bytes_to_finish() == len('{"name": "", "tags": []}')
    assert 1 <= start.min_tokens_to_finish() <= start.min_bytes_to_finish()
    stops = set(start.stop_token_ids)
    rng = random.Random(3)
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    for _ in range(5):
        m = xg.GrammarMatcher(compiled, token_budget=32)
        assert m.token_budget == 32
        for step in range(32):
            assert m.tokens_left() == 32 - step
            m.fill_next_token_bitmask(bitmask)
            choices = sorted(allowed(bitmask) - stops)
            if not choices:
                break
            assert m.accept_token(rng.choice(choices))
        assert m.is_completed()
        assert m.stop_reason() in (("budget", None), ("complete", None))
    m.set_token_budget(None)
    assert m.token_budget is None and m.tokens_left() is None


def test_rules_limited_in_tokens(compiler, info):
    """A rule limited to 6 tokens (`[max_tokens=6]`) and a structural tag's
    `any_text` limited to 10 (with its end): random walks among the allowed
    tokens always end, the limited text spanning at most that many tokens;
    a step past the limit is refused."""
    compiled = compiler.compile_grammar(
        'root ::= "<think>" thought "</think>" "done"\nthought [max_tokens=6] ::= [a-z ]*\n'
    )
    tag = {
        "type": "structural_tag",
        "format": {"type": "tag", "begin": "<think>", "content": {"type": "any_text", "max_tokens": 10}, "end": "</think>"},
    }
    tagged = compiler.compile_structural_tag(tag)
    vocab = info.decoded_vocab
    rng = random.Random(5)
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    for grammar, most, end in ((compiled, 6, b""), (tagged, 10, b"</think>")):
        for _ in range(4):
            m = xg.GrammarMatcher(grammar)
            stops = set(m.stop_token_ids)
            # The end offset of each token's bytes.
            output, ends = b"", []
            for _ in range(64):
                m.fill_next_token_bitmask(bitmask)
                choices = sorted(allowed(bitmask) - stops)
                if not choices:
                    break
                token = rng.choice(choices)
                assert m.accept_token(token)
                output += vocab[token]
                ends.append(len(output))
            assert m.is_completed()
            # The limited text: after `<think>`, to the end of `</think>`
            # for the tag, to its start for the rule.
            start = len("<think>")
            stop = output.index(b"</think>") + len(end)
            spanned = [e for e, s in zip(ends, [0] + ends) if e > start and s < stop]
            assert len(spanned) <= most, output
    m = xg.GrammarMatcher(compiled)
    assert m.accept_string("<think>")
    for word in ["a", "b", "c", "d", "e", "f"]:
        assert m.accept_string(word)
    assert not m.accept_string("g")
    assert m.accept_string("</think>done")
    assert m.is_completed()
