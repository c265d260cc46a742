"""Every creation option reaches every binding: the constructors' keywords,
their type stubs, ``ShardedBloomFilter.create`` and the command line's
``build`` options are checked against the option tables of the command layer
(``BF_RESERVE_OPTIONS`` / ``CF_RESERVE_OPTIONS``, exported by the native
module), so an option added there and missed in a binding fails here."""

import ast
import inspect
import pathlib

import ferrobloom
from ferrobloom import _ferrobloom, cli
from ferrobloom._sharded import ShardedBloomFilter

STUB = pathlib.Path(ferrobloom.__file__).with_name("_ferrobloom.pyi")


def table(name):
    rows = getattr(_ferrobloom, name)
    assert rows, name
    return {binding for _, binding in rows if binding is not None}


def stub_keywords(cls):
    """The keyword-only parameters of ``cls.__init__`` in the type stub."""
    tree = ast.parse(STUB.read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name == "__init__":
                    return {a.arg for a in f.args.kwonlyargs}
    raise AssertionError("no %s.__init__ in the stub" % cls)


def runtime_keywords(cls):
    """The keyword-only parameters of the native constructor."""
    sig = inspect.signature(cls)
    return {n for n, p in sig.parameters.items() if p.kind is p.KEYWORD_ONLY}


def cli_flag(binding):
    return "--" + ("error" if binding == "error_rate" else binding.replace("_", "-"))


def build_flags():
    p = cli.parser()
    sub = next(a for a in p._actions if a.dest == "command")
    return {s for a in sub.choices["build"]._actions for s in a.option_strings}


def test_the_tables_name_every_reserve_option():
    bf = dict(_ferrobloom.BF_RESERVE_OPTIONS)
    cf = dict(_ferrobloom.CF_RESERVE_OPTIONS)
    # Every BF.RESERVE option has a constructor keyword; CF's WINDOW is refused.
    assert all(b is not None for b in bf.values()), bf
    assert {"EXPANSION", "NONSCALING", "LAYOUT", "TIGHTENING", "SEED", "VALIDATESCALETO", "WINDOW"} <= set(bf)
    assert {"BUCKETSIZE", "MAXITERATIONS", "EXPANSION", "ERROR", "LAYOUT"} <= set(cf)
    assert cf["WINDOW"] is None


def test_constructors_take_every_option():
    assert runtime_keywords(ferrobloom.BloomFilter) == table("BF_RESERVE_OPTIONS")
    assert runtime_keywords(ferrobloom.CuckooFilter) == table("CF_RESERVE_OPTIONS")


def test_type_stubs_name_every_option():
    assert stub_keywords("BloomFilter") == table("BF_RESERVE_OPTIONS")
    assert stub_keywords("CuckooFilter") == table("CF_RESERVE_OPTIONS")


def test_sharded_create_takes_every_bloom_option():
    sig = inspect.signature(ShardedBloomFilter.create)
    kw = {n for n, p in sig.parameters.items() if p.kind is p.KEYWORD_ONLY}
    assert kw == table("BF_RESERVE_OPTIONS")


def test_the_command_line_builds_with_every_option():
    flags = build_flags()
    for binding in table("BF_RESERVE_OPTIONS") | table("CF_RESERVE_OPTIONS"):
        assert cli_flag(binding) in flags, binding


def test_the_command_line_passes_the_new_bloom_options(tmp_path):
    out = tmp_path / "f.bf"
    items = tmp_path / "items"
    items.write_text("a\nb\n")
    seed = "s" * 32
    rc = cli.main(["build", str(items), "-o", str(out), "--tightening", "0.25", "--seed", seed, "--no-progress"])
    assert rc == 0
    f = ferrobloom.from_bytes(out.read_bytes())
    same = ferrobloom.BloomFilter(100, 0.01, tightening=0.25, seed=seed.encode())
    same.update([b"a", b"b"])
    assert f.to_bytes() == same.to_bytes()
    w = tmp_path / "w.bf"
    assert cli.main(["build", str(items), "-o", str(w), "--window", "60", "--no-progress"]) == 0
    assert ferrobloom.from_bytes(w.read_bytes()).window == 60.0
