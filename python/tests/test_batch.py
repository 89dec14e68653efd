"""BatchGrammarMatcher: rows equal to one-by-one fills, argument checks,
and the GIL released while masks are filled."""

import sys
import threading
import time

import numpy as np
import pytest

import xg
from conftest import allowed


def counting_during(work):
    """Runs `work()` while a Python thread counts; returns how far it
    counted during the call, its rate alone (per second) and the call's
    time. With the GIL held for the whole call, it would not count at all."""
    counter, stop = [0], threading.Event()

    def spin():
        while not stop.is_set():
            counter[0] += 1

    switch = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    thread = threading.Thread(target=spin)
    try:
        thread.start()
        alone_count, alone_start = counter[0], time.perf_counter()
        time.sleep(0.05)
        rate = (counter[0] - alone_count) / (time.perf_counter() - alone_start)
        start_count, start = counter[0], time.perf_counter()
        work()
        elapsed = time.perf_counter() - start
        progressed = counter[0] - start_count
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(switch)
    return progressed, rate, elapsed


def matchers_for(compiler, n):
    out = []
    for i in range(n):
        compiled = compiler.compile_json_schema(
            {"type": "object", "properties": {f"key{i}": {"type": "string", "maxLength": i + 1}}}
        )
        m = xg.GrammarMatcher(compiled)
        assert m.accept_string('{"key')
        out.append(m)
    return out


def test_batch_fill_matches_single_fills(compiler, info):
    matchers = matchers_for(compiler, 5)
    batch = xg.BatchGrammarMatcher(2)
    bitmask = xg.allocate_token_bitmask(7, info.vocab_size)
    indices = [6, 0, 3, 1, 5]
    restricts = batch.batch_fill_next_token_bitmask(matchers, bitmask, indices)
    assert restricts == [True] * 5
    single = xg.allocate_token_bitmask(1, info.vocab_size)
    for m, row in zip(matchers, indices):
        m.fill_next_token_bitmask(single)
        assert np.array_equal(np.asarray(bitmask)[row], np.asarray(single)[0])
    assert (np.asarray(bitmask)[[2, 4]] == -1).all()  # rows not given are untouched
    assert allowed(bitmask, 6)


def test_batch_argument_checks(compiler, info):
    matchers = matchers_for(compiler, 2)
    batch = xg.BatchGrammarMatcher("auto")
    bitmask = xg.allocate_token_bitmask(2, info.vocab_size)
    with pytest.raises(ValueError, match="two matchers"):
        batch.batch_fill_next_token_bitmask(matchers, bitmask, [1, 1])
    with pytest.raises(ValueError, match="indices"):
        batch.batch_fill_next_token_bitmask(matchers, bitmask, [0])
    with pytest.raises(ValueError, match="row 5"):
        batch.batch_fill_next_token_bitmask(matchers, bitmask, [0, 5])
    with pytest.raises(ValueError, match="max_threads"):
        xg.BatchGrammarMatcher("many")


def test_batch_accept_and_rollback(compiler, tokenize):
    matchers = matchers_for(compiler, 3)
    digits = [tokenize(str(i))[0] for i in range(3)]  # the keys' last characters
    assert xg.BatchGrammarMatcher.batch_accept_token(matchers, digits[1:] + digits[:1]) == [False] * 3
    assert xg.BatchGrammarMatcher.batch_accept_token(matchers, digits) == [True] * 3
    with pytest.raises(ValueError, match="outside the vocabulary"):
        xg.BatchGrammarMatcher.batch_accept_token(matchers, [digits[0], -4, digits[2]])
    assert [m.num_steps() for m in matchers] == [2, 2, 2]  # nothing moved
    assert xg.BatchGrammarMatcher.batch_accept_string(matchers, ['"', "}", b'"']) == [True, False, True]
    with pytest.raises(ValueError, match="roll back 3"):
        xg.BatchGrammarMatcher.batch_rollback(matchers, [1, 3, 1])
    xg.BatchGrammarMatcher.batch_rollback(matchers, [2, 1, 3])
    assert [m.num_steps() for m in matchers] == [1, 1, 0]


def test_batch_fill_releases_the_gil(info):
    # 32 free-text grammars, each excluding another character, with cold
    # caches: every row walks most of the vocabulary (about 0.1 s in all).
    # While the fill runs, a Python thread must keep counting at the rate
    # it counts alone; with the GIL held it would stop for the whole call.
    compiler = xg.GrammarCompiler(info)
    matchers = [
        xg.GrammarMatcher(compiler.compile_grammar(f'root ::= [^{letter}]* "x"'))
        for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef"
    ]
    compiler.clear_cache()
    bitmask = xg.allocate_token_bitmask(len(matchers), info.vocab_size)
    progressed, rate, elapsed = counting_during(
        lambda: xg.BatchGrammarMatcher(1).batch_fill_next_token_bitmask(matchers, bitmask)
    )
    assert elapsed > 0.02, f"the fill took {elapsed:.3f} s: too short to tell"
    assert progressed > 0.3 * rate * elapsed, (
        f"the other thread counted {progressed} in {elapsed:.3f} s; alone, {rate:.0f} per second"
    )


def test_compiles_release_the_gil_and_run_in_parallel(info):
    # A schema of 3,000 objects takes tens of milliseconds to compile (most
    # automata are built on first use, so it takes that many); a Python
    # thread must keep counting meanwhile, and four threads compiling
    # different schemas at once with one compiler all get their grammar.
    wide = {
        "type": "object",
        "properties": {
            f"p{i}": {"type": "object", "properties": {f"q{i}": {"type": "integer", "minimum": i}}}
            for i in range(3000)
        },
    }
    compiler = xg.GrammarCompiler(info, time_limit=None)
    progressed, rate, elapsed = counting_during(lambda: compiler.compile_json_schema(wide))
    assert elapsed > 0.01, f"the compile took {elapsed:.3f} s: too short to tell"
    assert progressed > 0.3 * rate * elapsed, (progressed, rate, elapsed)

    results = {}

    def compile_one(i):
        schema = {"type": "object", "properties": {f"k{i}": {"type": "string", "maxLength": i}}}
        results[i] = xg.GrammarMatcher(compiler.compile_json_schema(schema)).accept_string(
            '{"k%d": "%s"}' % (i, "x" * i)
        )

    threads = [threading.Thread(target=compile_one, args=(i,)) for i in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {1: True, 2: True, 3: True, 4: True}
