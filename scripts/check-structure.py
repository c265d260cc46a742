#!/usr/bin/env python3
"""The two structure rules of docs/design.md, checked on every `make test`:

1. no Rust source file over 800 lines (tests count when they live in the file),
   and no Java source file of the Java library (java/src) over 800 lines either;
2. no import circle between files.

Files and modules: each crate's `src/` (and `tests/`, `examples/`, which only
import) is read; a file is one module (`a/b.rs` and `a/b/mod.rs` are `a::b`,
`lib.rs` the crate root). A file depends on another when it names an item of
that module or of one below it (`use crate::x::y`, `super::x`, `crate::x::f()`,
`ferrobloom_core::x`, `ferrobloom_cmd::x` from another crate). A module's own children are part of
it: a parent naming its child (`mod x; pub use x::Y;`) is not an edge, a child
naming its parent is. Every other edge must point one way: a cycle among files
is reported with its files.

Usage: scripts/check-structure.py [repo]   (exit status 1 on a violation)
"""
import os
import re
import sys

MAX_LINES = 800
ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
CRATES = {  # crate name as used in paths -> its src dir
    "ferrobloom": os.path.join(ROOT, "crates", "ferrobloom", "src"),
    "ferrobloom_cmd": os.path.join(ROOT, "crates", "ferrobloom-cmd", "src"),
    "ferrobloom_core": os.path.join(ROOT, "crates", "ferrobloom-core", "src"),
    "ferrobloom_jni": os.path.join(ROOT, "java", "native", "src"),
}
# Crates whose names other crates use in paths (`ferrobloom_cmd::x`, `ferrobloom_core::x`).
EXTERN = ("ferrobloom_core", "ferrobloom_cmd")
EXTRA_DIRS = ["crates/ferrobloom/tests", "crates/ferrobloom-core/examples", "crates/ferrobloom-core/tests", "python/src", "fuzz/fuzz_targets"]


def module_of(crate, src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("lib", "mod", "main"):
        rel = rel[:-1]
    return (crate,) + tuple(rel)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def rust_files(d):
    for dirpath, _, names in os.walk(d):
        for n in sorted(names):
            if n.endswith(".rs"):
                yield os.path.join(dirpath, n)


def main():
    problems = []
    # 1. sizes
    dirs = list(CRATES.values()) + [os.path.join(ROOT, d) for d in EXTRA_DIRS]
    for d in dirs:
        if not os.path.isdir(d):
            continue
        for f in rust_files(d):
            n = sum(1 for _ in open(f, encoding="utf-8"))
            if n > MAX_LINES:
                problems.append(f"{os.path.relpath(f, ROOT)}: {n} lines (at most {MAX_LINES})")
    for dirpath, _, names in os.walk(os.path.join(ROOT, "java", "src")):
        for name in sorted(names):
            if name.endswith(".java"):
                f = os.path.join(dirpath, name)
                n = sum(1 for _ in open(f, encoding="utf-8"))
                if n > MAX_LINES:
                    problems.append(f"{os.path.relpath(f, ROOT)}: {n} lines (at most {MAX_LINES})")
    # 2. import graph
    files = {}  # module path -> file
    for crate, src in CRATES.items():
        for f in rust_files(src):
            files[module_of(crate, src, f)] = f
    # #[path = "..."] modules: tests living in tests/ subdirectories keep their
    # parent's module path plus the declared name.
    for mod, f in list(files.items()):
        text = open(f, encoding="utf-8").read()
        for m in re.finditer(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)', text):
            target = os.path.normpath(os.path.join(os.path.dirname(f), m.group(1)))
            base = mod
            for k, v in list(files.items()):
                if os.path.normpath(v) == target:
                    del files[k]
            files[base + (m.group(2),)] = target
    by_file = {v: k for k, v in files.items()}

    def resolve(path):
        """The longest module prefix of `path` that is a file."""
        for n in range(len(path), 0, -1):
            if path[:n] in files:
                return path[:n]
        return None

    def absolute(mod, parts):
        """The module path `parts` (starting at `crate`, `super` or
        `ferrobloom_core`) names, seen from module `mod`."""
        if parts[0] == "crate":
            if mod[0] == "ferrobloom" and parts[1:2] == ["cmd"]:  # `pub use ferrobloom_cmd as cmd`
                return ("ferrobloom_cmd",) + tuple(parts[2:])
            return (mod[0],) + tuple(parts[1:])
        if parts[0] in EXTERN:
            return (parts[0],) + tuple(parts[1:])
        base = list(mod)
        while parts and parts[0] == "super":
            base = base[:-1]
            parts = parts[1:]
        return tuple(base) + tuple(parts)

    edges = {}
    for mod, f in files.items():
        text = strip_comments(open(f, encoding="utf-8").read())
        refs = set()
        for m in re.finditer(r"\b((?:crate|super|ferrobloom_core|ferrobloom_cmd)(?:::\w+)+)", text):
            refs.add(absolute(mod, m.group(1).split("::")))
        # `use super::{a, b}` and `use crate::x::{y, z}`: each name.
        for m in re.finditer(r"\b(crate|super(?:::super)*|ferrobloom_core|ferrobloom_cmd)((?:::\w+)*)::\{([^}]*)\}", text):
            head = m.group(1).split("::") + [p for p in m.group(2).split("::") if p]
            for name in re.findall(r"\b(\w+)", m.group(3)):
                refs.add(absolute(mod, head + [name]))
        out = set()
        for r in refs:
            t = resolve(r)
            if t is None or t == mod:
                continue
            if t[: len(mod)] == mod:  # a child of this module: part of it
                continue
            out.add(t)
        edges[mod] = out

    # cycles (Tarjan's strongly connected components)
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    sys.setrecursionlimit(10000)
    for v in list(edges):
        if v not in index:
            strong(v)
    for comp in comps:
        names = sorted(os.path.relpath(files[m], ROOT) for m in comp)
        problems.append("import circle: " + " <-> ".join(names))
    for p in problems:
        print("check-structure: " + p, file=sys.stderr)
    if problems:
        return 1
    print(f"check-structure: {len(files)} modules, no file over {MAX_LINES} lines, no import circle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
