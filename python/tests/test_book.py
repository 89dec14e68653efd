"""Every Python example of the book's Python chapter runs, from the
repository's root."""

import os
import re

import pytest

from conftest import REPO

PAGE = REPO / "book" / "src" / "python.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)


def test_the_page_has_examples():
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize("number", range(len(EXAMPLES)))
def test_book_example_runs(number):
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        exec(compile(EXAMPLES[number], f"python.md example {number + 1}", "exec"), {})
    finally:
        os.chdir(cwd)
