"""Side-by-side runs of xg and its peers through their Python APIs: the
numbers a Python user sees, call overhead included.

``python -m xg.bench maskbench --tokenizer tokenizer.json FILES…`` runs
MaskBench files (a JSON Schema and valid and invalid instances each)
through xg, XGrammar and LLGuidance — those installed — and writes one
JSON object per file and engine, as ``xg bench maskbench`` does, then a
summary. Every engine compiles the same compact layout (``,`` and ``:``,
no whitespace) and is lenient (JSON Schema's ``additionalProperties``
default). A step is: fill the mask, check the token in it, accept it.

``python -m xg.bench compare --tokenizer tokenizer.json FILES…`` compiles
each schema with xg and XGrammar and compares their masks at every step
of every valid instance, writing each difference.

Test instances are tokenized with the ``tokenizers`` package (installed
with XGrammar and LLGuidance).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

import xg

COMPACT = (",", ":")


def _read_tokenizer_text(path: Path) -> str:
    raw = path.read_bytes()
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()


def _allowed(words: np.ndarray, token: int) -> bool:
    """Whether a one-row bitmask (as a flat NumPy view) allows ``token``."""
    return bool((int(words[token // 32]) >> (token % 32)) & 1)


def _view(bitmask: Any) -> np.ndarray:
    """A flat NumPy view of a bitmask (a torch tensor's shares its memory)."""
    array = bitmask.numpy() if hasattr(bitmask, "numpy") else np.asarray(bitmask)
    return array.reshape(-1)


class Model:
    """The tokenizer every engine is built from, and the test tokenizer."""

    def __init__(self, path: Path) -> None:
        import tokenizers

        self.path = path
        self.text = _read_tokenizer_text(path)
        self.tokenizer = tokenizers.Tokenizer.from_str(self.text)
        self.xg_info = xg.TokenizerInfo.from_tokenizer_json(path)
        self.stop = self.xg_info.stop_token_ids
        self.vocab_size = self.xg_info.vocab_size
        self._hf = None

    def hf(self) -> Any:
        """A transformers fast tokenizer (for the peers' constructors)."""
        if self._hf is None:
            from transformers import PreTrainedTokenizerFast

            self._hf = PreTrainedTokenizerFast(tokenizer_object=self.tokenizer)
        return self._hf

    def encode(self, text: str) -> List[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids


class XgEngine:
    name = "xg"

    def __init__(self, model: Model, cold: bool, any_order: bool = False) -> None:
        self.cold = cold
        self.any_order = any_order
        self.compiler = xg.GrammarCompiler(model.xg_info, time_limit=30.0)
        # NumPy, xg's fastest path (a torch tensor is filled through its NumPy view).
        self.bitmask = np.full(xg.get_bitmask_shape(1, model.vocab_size), -1, dtype=np.int32)
        self.view = _view(self.bitmask)

    def compile(self, schema: Any) -> Any:
        if self.cold:
            self.compiler.clear_cache()
        return self.compiler.compile_json_schema(
            json.dumps(schema),
            any_whitespace=False,
            separators=COMPACT,
            strict_mode=False,
            any_order=self.any_order,
        )

    def matcher(self, compiled: Any) -> "Stepper":
        matcher = xg.GrammarMatcher(compiled)
        return Stepper(
            fill=lambda: matcher.fill_next_token_bitmask(self.bitmask),
            allowed=lambda t: _allowed(self.view, t),
            accept=matcher.accept_token,
            accepting=matcher.is_completed,
        )


class XgrammarEngine:
    name = "xgrammar"

    def __init__(self, model: Model, cold: bool) -> None:
        import xgrammar

        self.xgr = xgrammar
        self.cold = cold
        info = xgrammar.TokenizerInfo.from_huggingface(
            model.hf(), vocab_size=model.vocab_size, stop_token_ids=model.stop
        )
        self.compiler = xgrammar.GrammarCompiler(info)
        # XGrammar's own (a torch tensor).
        self.bitmask = xgrammar.allocate_token_bitmask(1, model.vocab_size)
        self.view = _view(self.bitmask)

    def compile(self, schema: Any) -> Any:
        if self.cold:
            self.compiler.clear_cache()
        return self.compiler.compile_json_schema(
            json.dumps(schema), any_whitespace=False, separators=COMPACT, strict_mode=False
        )

    def matcher(self, compiled: Any) -> "Stepper":
        matcher = self.xgr.GrammarMatcher(compiled)
        return Stepper(
            fill=lambda: matcher.fill_next_token_bitmask(self.bitmask),
            allowed=lambda t: _allowed(self.view, t),
            accept=matcher.accept_token,
            accepting=matcher.is_completed,
        )


class LlguidanceEngine:
    name = "llguidance"

    def __init__(self, model: Model, cold: bool) -> None:
        import llguidance
        import llguidance.hf
        import llguidance.numpy

        self.llg = llguidance
        self.tokenizer = llguidance.hf.from_tokenizer(model.hf(), n_vocab=model.vocab_size, eos_token=model.stop)
        self.bitmask = llguidance.numpy.allocate_token_bitmask(1, self.tokenizer.vocab_size)
        self.view = _view(self.bitmask)

    def compile(self, schema: Any) -> Any:
        schema = dict(schema) if isinstance(schema, dict) else schema
        if isinstance(schema, dict):
            schema["x-guidance"] = {
                "whitespace_flexible": False,
                "item_separator": ",",
                "key_separator": ":",
                "lenient": True,
            }
        grammar = self.llg.LLMatcher.grammar_from_json_schema(schema)
        matcher = self.llg.LLMatcher(self.tokenizer, grammar)
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())
        return grammar

    def matcher(self, compiled: Any) -> "Stepper":
        matcher = self.llg.LLMatcher(self.tokenizer, compiled)

        def fill() -> None:
            self.llg.numpy.fill_next_token_bitmask(matcher, self.bitmask, 0)

        return Stepper(
            fill=fill,
            allowed=lambda t: _allowed(self.view, t),
            accept=lambda t: matcher.consume_token(t) and not matcher.is_error(),
            accepting=matcher.is_accepting,
        )


class Stepper:
    """One engine's matcher behind the bench's four operations."""

    def __init__(self, fill, allowed, accept, accepting) -> None:
        self.fill, self.allowed, self.accept, self.accepting = fill, allowed, accept, accepting


ENGINES = {"xg": XgEngine, "xgrammar": XgrammarEngine, "llguidance": LlguidanceEngine}


def _installed(name: str) -> bool:
    if name == "xg":
        return True
    try:
        __import__(name)
        return True
    except ImportError:
        return False


def _files(paths: Sequence[str]) -> List[Path]:
    files: List[Path] = []
    for path in map(Path, paths):
        files.extend(sorted(path.glob("*.json")) if path.is_dir() else [path])
    if not files:
        raise SystemExit("no MaskBench files given")
    return files


def _tests(document: Dict[str, Any], model: Model) -> List[Tuple[bool, List[int]]]:
    return [
        (bool(test.get("valid")), model.encode(json.dumps(test.get("data"), separators=COMPACT, ensure_ascii=False)))
        for test in document.get("tests", [])
    ]


def bench_file(engine: Any, name: str, document: Dict[str, Any], tests, timeout: float) -> Dict[str, Any]:
    """One file through one engine, as ``xg bench maskbench`` measures it."""
    outcome: Dict[str, Any] = {
        "file": name,
        "engine": engine.name,
        "compile_us": None,
        "compile_error": None,
        "token_us": [],
        "tests": [],
        "timeout": False,
        "cache_fallback": None,
    }
    start = time.perf_counter()
    try:
        compiled = engine.compile(document.get("schema"))
        engine.matcher(compiled).fill()
    except Exception as error:  # every engine's own exception types
        outcome["compile_error"] = str(error)[:500]
        return outcome
    outcome["compile_us"] = (time.perf_counter() - start) * 1e6
    if engine.name == "xg":
        outcome["cache_fallback"] = compiled.cache_fallback
    for valid, tokens in tests:
        stepper = engine.matcher(compiled)
        accepted, first = True, len(outcome["token_us"])
        for token in tokens:
            step = time.perf_counter()
            stepper.fill()
            ok = stepper.allowed(token) and stepper.accept(token)
            outcome["token_us"].append((time.perf_counter() - step) * 1e6)
            if not ok:
                accepted = False
                break
            if time.perf_counter() - start > timeout:
                outcome["timeout"] = True
                return outcome
        accepted = accepted and bool(stepper.accepting())
        outcome["tests"].append({"valid": valid, "accepted": accepted, "steps": len(outcome["token_us"]) - first})
    return outcome


def _percentile(values: List[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(outcomes: List[Dict[str, Any]], names: List[str]) -> str:
    """The table: correctness, time to first mask, and per-token times over
    the tests every engine accepted."""
    by_file: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for o in outcomes:
        by_file.setdefault(o["file"], {})[o["engine"]] = o
    common: Dict[str, List[float]] = {n: [] for n in names}
    for engines in by_file.values():
        if set(engines) != set(names) or any(e["compile_us"] is None for e in engines.values()):
            continue
        cursors = {n: 0 for n in names}
        counts = min(len(e["tests"]) for e in engines.values())
        for i in range(counts):
            tests = {n: engines[n]["tests"][i] for n in names}
            if all(t["accepted"] for t in tests.values()):
                for n in names:
                    common[n].extend(engines[n]["token_us"][cursors[n] : cursors[n] + tests[n]["steps"]])
            for n in names:
                cursors[n] += tests[n]["steps"]
    lines = [f"{'':28}" + "".join(f"{n:>14}" for n in names)]

    def row(label: str, values: Iterable[str]) -> None:
        lines.append(f"{label:28}" + "".join(f"{v:>14}" for v in values))

    per = {n: [o for o in outcomes if o["engine"] == n] for n in names}
    row("files compiled", (f"{sum(o['compile_us'] is not None for o in per[n])}/{len(per[n])}" for n in names))
    for valid, label in ((True, "valid accepted"), (False, "invalid rejected")):
        def share(n: str) -> str:
            tests = [t for o in per[n] for t in o["tests"] if t["valid"] == valid]
            good = sum(t["accepted"] == valid for t in tests)
            return f"{good}/{len(tests)}"

        row(label, (share(n) for n in names))
    ttfm = {n: [o["compile_us"] / 1000 for o in per[n] if o["compile_us"] is not None] for n in names}
    for label, f in (("TTFM p50 (ms)", 0.5), ("TTFM p99 (ms)", 0.99)):
        row(label, (f"{_percentile(ttfm[n], f):.2f}" for n in names))
    row("TTFM mean (ms)", (f"{statistics.fmean(ttfm[n]):.2f}" if ttfm[n] else "-" for n in names))
    row("TTFM max (ms)", (f"{max(ttfm[n]):.1f}" if ttfm[n] else "-" for n in names))
    row("common steps", (str(len(common[n])) for n in names))
    for label, f in (("per token p50 (us)", 0.5), ("per token p99 (us)", 0.99), ("per token p99.9 (us)", 0.999)):
        row(label, (f"{_percentile(common[n], f):.1f}" for n in names))
    row("per token mean (us)", (f"{statistics.fmean(common[n]):.1f}" if common[n] else "-" for n in names))
    row("per token max (us)", (f"{max(common[n]):.0f}" if common[n] else "-" for n in names))
    row("steps > 1 ms", (str(sum(t > 1000 for o in per[n] for t in o["token_us"])) for n in names))
    row("steps > 10 ms", (str(sum(t > 10000 for o in per[n] for t in o["token_us"])) for n in names))
    return "\n".join(lines)


def maskbench(args: argparse.Namespace) -> int:
    model = Model(Path(args.tokenizer))
    names = [n for n in (args.engine.split(",") if args.engine else ENGINES) if n in ENGINES]
    names = [n for n in names if _installed(n)] if not args.engine else names
    engines = [
        XgEngine(model, args.cold, any_order=args.order == "any") if n == "xg" else ENGINES[n](model, args.cold)
        for n in names
    ]
    files = _files(args.files)
    outcomes = []
    with open(args.out, "w") as out:
        for i, path in enumerate(files, 1):
            document = json.loads(path.read_text())
            tests = _tests(document, model)
            for engine in engines:
                outcome = bench_file(engine, path.name, document, tests, args.timeout)
                outcomes.append(outcome)
                out.write(json.dumps(outcome) + "\n")
            print(f"\r{i}/{len(files)} files", end="", file=sys.stderr)
    print(file=sys.stderr)
    print(
        f"MaskBench through Python: {len(files)} files, {'cold' if args.cold else 'warm'} caches, "
        f"properties in {'any' if args.order == 'any' else 'the given'} order, engines {', '.join(names)}"
    )
    print(summary(outcomes, names))
    print(f"\nresults: {args.out}")
    return 0


def compare(args: argparse.Namespace) -> int:
    """xg's and XGrammar's masks at every step of every valid instance."""
    model = Model(Path(args.tokenizer))
    ours, theirs = XgEngine(model, cold=False), XgrammarEngine(model, cold=False)
    steps = differing = 0
    files = _files(args.files)[:: args.every]
    with open(args.out, "w") as out:
        for i, path in enumerate(files, 1):
            document = json.loads(path.read_text())
            try:
                compiled = (ours.compile(document["schema"]), theirs.compile(document["schema"]))
            except Exception as error:
                out.write(json.dumps({"file": path.name, "compile_error": str(error)[:300]}) + "\n")
                continue
            for number, (valid, tokens) in enumerate(_tests(document, model)):
                if not valid:
                    continue
                a, b = ours.matcher(compiled[0]), theirs.matcher(compiled[1])
                for at, token in enumerate(tokens):
                    a.fill()
                    b.fill()
                    steps += 1
                    mask_a = ours.view
                    mask_b = theirs.view[: mask_a.size]
                    if not np.array_equal(mask_a, mask_b):
                        differing += 1
                        bits_a = np.unpackbits(mask_a.view(np.uint8), bitorder="little")
                        bits_b = np.unpackbits(mask_b.view(np.uint8), bitorder="little")
                        only_xg = np.flatnonzero(bits_a & ~bits_b)[:20].tolist()
                        only_xgr = np.flatnonzero(bits_b & ~bits_a)[:20].tolist()
                        prefix = model.tokenizer.decode(tokens[:at], skip_special_tokens=False)
                        out.write(json.dumps({
                            "file": path.name, "test": number, "step": at, "prefix": prefix[-80:],
                            "only_xg": [model.tokenizer.id_to_token(t) for t in only_xg],
                            "only_xgrammar": [model.tokenizer.id_to_token(t) for t in only_xgr],
                            "count_only_xg": int((bits_a & ~bits_b).sum()),
                            "count_only_xgrammar": int((bits_b & ~bits_a).sum()),
                        }, ensure_ascii=False) + "\n")
                        break  # the rest of this instance follows from here
                    if not (a.allowed(token) and a.accept(token) and b.allowed(token) and b.accept(token)):
                        break
            print(f"\r{i}/{len(files)} files", end="", file=sys.stderr)
    print(file=sys.stderr)
    print(f"{steps} steps compared, {differing} with different masks; differences in {args.out}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xg.bench", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("maskbench", help="MaskBench through each engine's Python API")
    run.add_argument("--tokenizer", required=True, help="tokenizer.json (gzip-compressed or not)")
    run.add_argument("--engine", help="comma-separated: xg, xgrammar, llguidance (default: those installed)")
    run.add_argument("--cold", action="store_true", help="empty caches before each file")
    run.add_argument(
        "--order",
        choices=("given", "any"),
        default="given",
        help="object properties as the schema lists them (the language LLGuidance accepts), or in any order (xg only)",
    )
    run.add_argument("--timeout", type=float, default=30.0, help="seconds per file and engine")
    run.add_argument("--out", required=True, help="JSONL results, one line per file and engine")
    run.add_argument("files", nargs="+", help="MaskBench files or directories")
    diff = commands.add_parser("compare", help="xg's masks against XGrammar's along valid instances")
    diff.add_argument("--tokenizer", required=True)
    diff.add_argument("--every", type=int, default=1, help="every Nth file")
    diff.add_argument("--out", required=True, help="JSONL, one line per differing step")
    diff.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    return maskbench(args) if args.command == "maskbench" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
