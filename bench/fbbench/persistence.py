"""Part `persistence`: SAVE and restart-load time of a large filter vs a string.
"""

import os
import shutil
import tempfile
import time

from .common import MiB, Server, check_module_allocator, finfo, fmt_bytes, log, med, spread, table


def random_chunks(n, size, seed=12345):
    """`n` distinct random chunks (numpy when available: fast; else os.urandom)."""
    try:
        import numpy as np
        rng = np.random.default_rng(seed)
        return [rng.bytes(size) for _ in range(n)]
    except ImportError:
        return [os.urandom(size) for _ in range(n)]


def part_persistence(args, env):
    a = args
    target = a.persist_bytes
    chunk = 16 * MiB
    res = {"target_bytes": target, "rounds": a.persist_rounds, "runs": []}
    workdir = tempfile.mkdtemp(prefix="ferrobloom-bench-persist-")
    srv = None
    try:
        srv = Server(a, "persist", extra=["--proto-max-bulk-len", "2gb", "--dbfilename", "bench.rdb"],
                     workdir=workdir)
        # Random data in 16 MiB chunks: 8 distinct chunks cycled (LZF's window is far
        # shorter than 16 MiB, so repeats cannot be compressed).
        pool = random_chunks(8, chunk)
        # Baseline: a restart with nothing to load (process start, module load).
        empty = []
        for _ in range(3):
            srv.stop()
            empty.append(srv.start())
        res["empty_start_s"] = med(empty)
        for rnd in range(a.persist_rounds):
            for kind in ("filter", "string"):
                c = srv.client()
                c.flushall()
                t = time.perf_counter()
                if kind == "filter":
                    # BF.RESERVE sized to ~target bytes: scaling link at e/2 = 0.005.
                    import math
                    bpe = abs(math.log(0.005)) / 0.480453013918201
                    cap = int(target * 8 / bpe)
                    c.execute_command("BF.RESERVE", "tmp", 0.01, cap)
                    _, header = c.execute_command("BF.SCANDUMP", "tmp", 0)
                    c.delete("tmp")
                    c.execute_command("BF.LOADCHUNK", "big", 1, header)
                    link_bytes = [int(f.split(b"bytes:")[1].split()[0])
                                  for f in c.execute_command("BF.DEBUG", "big")[1:]]
                    total = sum(link_bytes)
                    off, k = 0, 0
                    for lb in link_bytes:          # chunks never span links
                        end = off + lb
                        while off < end:
                            n = min(chunk, end - off)
                            c.execute_command("BF.LOADCHUNK", "big", off + n + 1, pool[k % len(pool)][:n])
                            off += n
                            k += 1
                    size = int(finfo(c, "BF.INFO", "big")["Size"])
                else:
                    total = res["runs"][-1]["data_bytes"] if res["runs"] else target
                    last = (total - 1) // chunk * chunk
                    # Allocate the whole string at once (the last chunk first), then fill it.
                    c.setrange("big", last, pool[0][:total - last])
                    for k, off in enumerate(range(0, last, chunk)):
                        c.setrange("big", off, pool[k % len(pool)])
                    size = int(c.strlen("big"))
                create_s = time.perf_counter() - t
                used = check_module_allocator(c, total)
                t = time.perf_counter()
                c.save()
                save_s = time.perf_counter() - t
                rdb = os.path.getsize(os.path.join(workdir, "bench.rdb"))
                c.close()
                srv.stop()
                load_s = srv.start(timeout=600)
                c = srv.client()
                ok = (int(finfo(c, "BF.INFO", "big")["Size"]) == size if kind == "filter"
                      else int(c.strlen("big")) == size)
                if kind == "filter":
                    ok = ok and c.execute_command("BF.SCANDUMP", "big", 1)[1] == pool[0][:min(chunk, link_bytes[0])]
                else:
                    ok = ok and c.getrange("big", 0, 1023) == pool[0][:1024]
                if not ok:
                    raise RuntimeError(f"{kind}: data differs after restart")
                c.close()
                os.remove(os.path.join(workdir, "bench.rdb"))
                res["runs"].append({"round": rnd, "kind": kind, "data_bytes": total, "size": size,
                                    "used_memory": used, "rdb_bytes": rdb, "create_s": create_s,
                                    "save_s": save_s, "load_s": load_s})
                log(f"  {kind}: {fmt_bytes(total)} created in {create_s:.1f} s, SAVE {save_s:.2f} s, "
                    f"restart to PING {load_s:.2f} s, RDB {fmt_bytes(rdb)}")
    finally:
        if srv:
            srv.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return res


def render_persistence(res):
    rows = []
    f = [r for r in res["runs"] if r["kind"] == "filter"]
    s = [r for r in res["runs"] if r["kind"] == "string"]
    for kind, rs in (("Bloom filter", f), ("string", s)):
        if rs:
            rows.append([kind, fmt_bytes(rs[0]["data_bytes"]), fmt_bytes(rs[0]["rdb_bytes"]),
                         spread([r["save_s"] for r in rs]), spread([r["load_s"] for r in rs])])
    if f and s:
        rows.append(["ratio filter / string", "", "", f"{med([r['save_s'] for r in f]) / med([r['save_s'] for r in s]):.2f}",
                     f"{med([r['load_s'] for r in f]) / med([r['load_s'] for r in s]):.2f}"])
    return (f"One server, sequentially, {res['rounds']} round(s): a ~{fmt_bytes(res['target_bytes'])} Bloom filter "
            f"(`BF.RESERVE` sized to it, its SCANDUMP header loaded into a fresh key, then random 16 MiB "
            f"`BF.LOADCHUNK`s), then a string of the same length (`SETRANGE` of random 16 MiB chunks, "
            f"`proto-max-bulk-len 2gb`). Random bytes, so LZF compression (on by default) gains nothing "
            f"on either side. SAVE = wall time of the `SAVE` command; load = from starting redis-server "
            f"to its first PING answered without -LOADING (an empty restart takes "
            f"{res.get('empty_start_s', float('nan')):.2f} s). Seconds.\n\n"
            + table(["value", "data", "RDB file", "SAVE s", "restart + load s"], rows))


def plot_persistence(res, plt, path):
    fig, ax = plt.subplots(figsize=(6, 4))
    kinds = ["filter", "string"]
    save = [med([r["save_s"] for r in res["runs"] if r["kind"] == k] or [0]) for k in kinds]
    load = [med([r["load_s"] for r in res["runs"] if r["kind"] == k] or [0]) for k in kinds]
    x = range(len(kinds))
    ax.bar([i - 0.2 for i in x], save, 0.4, label="SAVE")
    ax.bar([i + 0.2 for i in x], load, 0.4, label="restart + load")
    ax.set_xticks(list(x))
    ax.set_xticklabels([f"Bloom filter ({fmt_bytes(res['target_bytes'])})", "string (same length)"])
    ax.set_ylabel("seconds")
    ax.set_title("persistence")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
