"""The README's Python quick start must run as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_a_python_quickstart():
    assert python_blocks(), "README lost its Python quick start"


def test_readme_python_blocks_run():
    for block in python_blocks():
        exec(compile(block, str(README), "exec"), {"__name__": "__readme__"})
