#!/usr/bin/env python3
"""The structure rules of docs/design.md, checked on every `make test`:

1. no Rust, Python or Java source file over 800 lines (tests count when they
   live in the file; Python: python/, bench/, scripts/, examples/, tests/; Java: the
   Java library's java/src);
2. no import circle between Rust files;
3. `unsafe` only in the FFI wrapper files of each crate ([`UNSAFE_ALLOWED`]).

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
# Python sources under the same 800-line rule.
PYTHON_DIRS = ["python", "bench", "scripts", "examples", "tests"]
# The only Rust files that may contain `unsafe` (outside comments), per crate
# (docs/design.md, "Unsafe code"). Everything else is safe Rust.
UNSAFE_ALLOWED = {
    # The module: its FFI wrappers (raw API access, a command's context, typed
    # keys, the callbacks' IO, the load context, the allocator, defragmentation).
    "crates/ferrobloom": [
        "src/redis/ffi.rs",
        "src/redis/ctx.rs",
        "src/redis/key.rs",
        "src/redis/io.rs",
        "src/redis/load.rs",
        "src/redis/alloc.rs",
        "src/redis/defrag.rs",
    ],
    # The core: zeroed and cache-line-aligned allocations and their byte views,
    # the POPCNT path of BF.MERGE, relocation for active defragmentation, and
    # the test allocators.
    "crates/ferrobloom-core": [
        "src/bits.rs",
        "src/bloom/merge.rs",
        "src/cuckoo/table.rs",
        "src/relocate.rs",
        "src/tests/file_stream.rs",
        "src/tests/relocate.rs",
        "examples/common/bench.rs",
    ],
    "crates/ferrobloom-cmd": [],
    # The Python binding: borrowed str/bytes views without a copy, and its
    # global allocator.
    "python": ["src/lib.rs", "src/alloc.rs"],
    # The Java library's JNI layer: its one wrapper of the JNI calls.
    "java/native": ["src/ffi.rs"],
    "fuzz": [],
}


def module_of(crate, src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("lib", "mod", "main"):
        rel = rel[:-1]
    return (crate,) + tuple(rel)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def rust_files(d):
    yield from files_ending(d, (".rs",))


def files_ending(d, suffixes):
    for dirpath, dirs, names in os.walk(d):
        dirs[:] = sorted(x for x in dirs if x not in ("target", "__pycache__") and not x.startswith("."))
        for n in sorted(names):
            if n.endswith(suffixes):
                yield os.path.join(dirpath, n)


def strip_comments_and_strings(text):
    """Rust text without comments, string literals or char literals (where a
    word such as `unsafe` would not be code)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            i = n if end < 0 else end + 1 + len(hashes)
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.[^']*|[^'\\])'", text[i:]):
            i += len(re.match(r"'(\\.[^']*|[^'\\])'", text[i:]).group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def unsafe_outside_wrappers():
    """`unsafe` in code of a file not listed in UNSAFE_ALLOWED."""
    problems = []
    for crate, allowed in UNSAFE_ALLOWED.items():
        base = os.path.join(ROOT, crate)
        for f in files_ending(base, (".rs",)):
            rel = os.path.relpath(f, base).replace(os.sep, "/")
            if rel in allowed:
                continue
            code = strip_comments_and_strings(open(f, encoding="utf-8").read())
            for lineno, line in enumerate(code.splitlines(), 1):
                if re.search(r"\bunsafe\b", line):
                    problems.append(
                        f"{os.path.relpath(f, ROOT)}:{lineno}: `unsafe` outside the FFI wrapper "
                        f"files (UNSAFE_ALLOWED in scripts/check-structure.py, docs/design.md)"
                    )
                    break
    return problems


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
    for d in PYTHON_DIRS:
        for f in files_ending(os.path.join(ROOT, d), (".py", ".pyi")):
            n = sum(1 for _ in open(f, encoding="utf-8"))
            if n > MAX_LINES:
                problems.append(f"{os.path.relpath(f, ROOT)}: {n} lines (at most {MAX_LINES})")
    # 3. unsafe only in the wrappers
    problems += unsafe_outside_wrappers()
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
    print(
        f"check-structure: {len(files)} modules, no file over {MAX_LINES} lines, no import circle, "
        "unsafe only in the FFI wrapper files"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
