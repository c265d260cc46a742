"""The Python in the docs is Python: every ``python`` block of
docs/clients.md, README.md and python/README.md compiles, and the constructor
blocks of docs/clients.md run and show each parameter's real default (the
one in the classes' signatures)."""

import ast
import inspect
import re
from pathlib import Path

import pytest

import ferrobloom

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "docs" / "clients.md", ROOT / "README.md", ROOT / "python" / "README.md"]


def blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_compile(path):
    found = blocks(path)
    assert found
    for b in found:
        compile(b, str(path), "exec")


def constructor_calls():
    """The ``ferrobloom.BloomFilter(...)`` / ``CuckooFilter(...)`` calls of the
    blocks that show every parameter at its default."""
    calls = {}
    for b in blocks(ROOT / "docs" / "clients.md"):
        if "Every parameter at its default" not in b:
            continue
        for node in ast.walk(ast.parse(b)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                calls[node.func.attr] = (b, node)
    return calls


def test_constructor_blocks_show_the_signatures_defaults():
    calls = constructor_calls()
    assert set(calls) == {"BloomFilter", "CuckooFilter"}
    for name, (block, call) in calls.items():
        params = inspect.signature(getattr(ferrobloom, name)).parameters
        shown = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
        defaults = {k: p.default for k, p in params.items() if p.default is not inspect.Parameter.empty}
        assert shown == defaults, name
        # Runnable as written.
        env = {}
        exec("import ferrobloom\n" + block, env)
    f = ferrobloom.BloomFilter(1_000_000)
    assert (f.error_rate, f.expansion, f.layout) == (0.01, 2, "classic")
    c = ferrobloom.CuckooFilter(1024)
    info = c.info()
    assert (info["Bucket size"], info["Max iterations"], info["Expansion rate"], c.layout) == (2, 20, 1, "ferrobloom")


def test_one_item_per_line_rule_everywhere():
    """The READMEs read items with ``ferrobloom.lines`` (the CLI's rule), no
    hand-made strip of their own."""
    for path in (ROOT / "README.md", ROOT / "python" / "README.md"):
        code = "\n".join(blocks(path))
        if "ferrobloom" not in code:
            continue
        assert "strip(" not in code, path
        if "open(" in code:
            assert "ferrobloom.lines(" in code, path
