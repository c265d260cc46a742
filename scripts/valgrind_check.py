#!/usr/bin/env python3
"""Summarise valgrind logs of `make stress VALGRIND=1`; exit 1 if any reported error (or
definite leak) has a stack frame in ferrobloom, or if a log has no final summary (the server
was killed before valgrind could finish). Errors entirely inside Redis are listed, not fatal.

usage: valgrind_check.py vg.<pid>.log...
"""
import re
import sys


def blocks(lines):
    """Split a valgrind log into blocks separated by empty `==pid== ` lines."""
    cur = []
    for line in lines:
        text = re.sub(r"^==\d+== ?", "", line.rstrip("\n"))
        if text == "":
            if cur:
                yield cur
            cur = []
        else:
            cur.append(text)
    if cur:
        yield cur


def main(paths):
    import os
    paths = [p for p in paths if os.path.isfile(p)]
    if not paths:
        print("valgrind: no logs (did any server start under valgrind?)")
        return 1
    bad = 0
    for path in paths:
        with open(path, errors="replace") as f:
            lines = f.readlines()
        summary = [l for l in lines if "ERROR SUMMARY:" in l]
        command = next((l.split("Command:", 1)[1].strip() for l in lines if "Command:" in l), "?")
        if not summary:
            print(f"{path}: no ERROR SUMMARY (process killed before valgrind finished)")
            bad += 1
            continue
        ours, theirs = [], []
        for b in blocks(lines):
            head = b[0]
            is_error = (
                not head.startswith(("Memcheck,", "Copyright", "Using Valgrind", "Command:",
                                     "Parent PID", "HEAP SUMMARY", "LEAK SUMMARY",
                                     "Reachable blocks", "To see them", "For lists of",
                                     "For counts of", "ERROR SUMMARY", "Use --track-origins",
                                     "in use at exit", "All heap blocks"))
                and any(l.lstrip().startswith(("at 0x", "by 0x")) for l in b)
            )
            if not is_error:
                continue
            if any("ferrobloom" in l for l in b):
                ours.append(b)
            else:
                theirs.append(b)
        print(f"{path}: {summary[-1].split('==', 2)[-1].strip()}; "
              f"{len(ours)} in ferrobloom, {len(theirs)} elsewhere ({command[:60]}...)")
        for b in ours + theirs:
            tag = "FERROBLOOM" if b in ours else "redis"
            print(f"  [{tag}] " + "\n    ".join(b[:25]))
        bad += len(ours)
    if bad:
        print(f"valgrind: {bad} problem(s) pointing into ferrobloom (or unfinished logs)")
        return 1
    print(f"valgrind: {len(paths)} log(s), no error pointing into ferrobloom")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
