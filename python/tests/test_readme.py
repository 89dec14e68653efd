"""The README's Python script runs as printed, from the repository's root."""

import os
import re

from conftest import REPO


def test_readme_script_runs():
    readme = (REPO / "README.md").read_text()
    section = readme.split("## From Python", 1)[1]
    script = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        exec(compile(script, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
