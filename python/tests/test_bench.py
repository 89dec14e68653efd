"""python -m xg.bench on every 50th file of the vendored MaskBench sample,
xg alone (the peers are not installed in CI): the JSONL has the fields
`xg bench maskbench` writes, and every valid instance is accepted."""

import json
import tarfile

import pytest

from conftest import QWEN3, REPO

pytest.importorskip("tokenizers")

from xg import bench  # noqa: E402


def test_maskbench_through_python(tmp_path, capsys):
    with tarfile.open(REPO / "tests" / "data" / "maskbench" / "maskbench.tar.gz") as archive:
        members = sorted(archive.getmembers(), key=lambda m: m.name)[::50]
        archive.extractall(tmp_path / "files", members=members)
    out = tmp_path / "results.jsonl"
    assert bench.main(["maskbench", "--engine", "xg", "--cold", "--tokenizer", str(QWEN3), "--out", str(out), str(tmp_path / "files")]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == len(members) == 12
    for line in lines:
        assert set(line) == {"file", "engine", "compile_us", "compile_error", "token_us", "tests", "timeout", "cache_fallback"}
        assert line["compile_error"] is None and line["cache_fallback"] is None, line["file"]
        assert sum(t["steps"] for t in line["tests"]) == len(line["token_us"])
        assert all(t["accepted"] for t in line["tests"] if t["valid"]), line["file"]
    summary = capsys.readouterr().out
    assert "valid accepted" in summary and "per token p99.9" in summary
