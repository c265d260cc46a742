"""Part `merge`: BF.MERGE of filters of random bits, server time and GB/s.
"""

from .common import GiB, MiB, Server, check_module_allocator, fmt_bytes, log, med, spread, table
from .persistence import random_chunks


def load_random_filter(c, key, capacity, layout, pool, chunk=16 * MiB):
    """`BF.RESERVE key 0.01 capacity LAYOUT layout`, its bits replaced by random bytes
    (LOADCHUNK of its own SCANDUMP header, then the chunks). Returns the data bytes."""
    c.execute_command("BF.RESERVE", "tmp:" + key, 0.01, capacity, "LAYOUT", layout)
    _, header = c.execute_command("BF.SCANDUMP", "tmp:" + key, 0)
    c.delete("tmp:" + key, key)
    c.execute_command("BF.LOADCHUNK", key, 1, header)
    link_bytes = [int(f.split(b"bytes:")[1].split()[0]) for f in c.execute_command("BF.DEBUG", key)[1:]]
    off, k = 0, 0
    for lb in link_bytes:
        end = off + lb
        while off < end:
            n = min(chunk, end - off)
            c.execute_command("BF.LOADCHUNK", key, off + n + 1, pool[k % len(pool)][:n])
            off += n
            k += 1
    return sum(link_bytes)


def slowlog_usec(c, name):
    """Server microseconds of the last `name` command in the SLOWLOG (threshold 0)."""
    for e in c.slowlog_get(32):
        cmd = e["command"]
        cmd = cmd.decode() if isinstance(cmd, bytes) else cmd
        if cmd.upper().startswith(name):
            return e["duration"]
    raise RuntimeError(f"{name} not in the SLOWLOG")


def part_merge(args, env):
    a = args
    sizes = [int(x) * MiB for x in a.merge_mib.split(",")]
    res = {"rounds": a.rounds, "rows": []}
    srv = Server(a, "merge", extra=["--slowlog-log-slower-than", "0", "--slowlog-max-len", "128",
                                    "--bf.merge-max-bytes", str(64 * GiB)])
    try:
        c = srv.client()
        pool = random_chunks(4, 16 * MiB)
        import math
        for layout in ("classic", "blocked"):
            for size in sizes:
                bpe = abs(math.log(0.005)) / 0.480453013918201
                cap = max(1000, int(size * 8 / bpe))
                c.flushall()
                data = load_random_filter(c, "a", cap, layout, pool)
                load_random_filter(c, "b", cap, layout, pool[1:] + pool[:1])
                check_module_allocator(c, 2 * data)
                for case, cmd, touched in (("new key", ("BF.MERGE", "d", 2, "a", "b"), 3 * data),
                                           ("into a source", ("BF.MERGE", "a", 2, "a", "b"), 2 * data)):
                    usecs = []
                    for _ in range(a.rounds):
                        c.delete("d")
                        c.slowlog_reset()
                        c.execute_command(*cmd)
                        usecs.append(slowlog_usec(c, "BF.MERGE"))
                    res["rows"].append({"layout": layout, "data_bytes": data, "case": case,
                                        "touched": touched, "usec": usecs,
                                        "gbps": [touched / u / 1e3 for u in usecs]})
                    log(f"  {layout} {fmt_bytes(data)} {case}: {med(usecs) / 1e3:.1f} ms, "
                        f"{touched / med(usecs) / 1e3:.2f} GB/s")
                c.flushall()
    finally:
        srv.close()
    return res


def render_merge(res):
    rows = [[r["layout"], fmt_bytes(r["data_bytes"]), r["case"], fmt_bytes(r["touched"]),
             spread([u / 1e3 for u in r["usec"]], lambda x: f"{x:.1f}"),
             spread(r["gbps"], lambda x: f"{x:.2f}")] for r in res["rows"]]
    return ("`BF.MERGE` of two filters of random bits (`BF.RESERVE` sized to each size, its bits "
            "replaced by random `BF.LOADCHUNK`s), `bf.merge-max-bytes` raised out of the way. "
            "\"new key\": `BF.MERGE d 2 a b` (allocates d, reads a and b: 3x the data touched); "
            "\"into a source\": `BF.MERGE a 2 a b` (reads b, reads and writes a: 2x). Server time "
            f"from the SLOWLOG (threshold 0), {res['rounds']} round(s), min/median/max; GB/s = bytes "
            "touched / server time.\n\n"
            + table(["layout", "each filter", "merge", "bytes touched", "server ms", "GB/s"], rows))


def plot_merge(res, plt, path):
    fig, ax = plt.subplots(figsize=(7, 4))
    for layout in sorted({r["layout"] for r in res["rows"]}):
        for case in sorted({r["case"] for r in res["rows"]}):
            rs = [r for r in res["rows"] if r["layout"] == layout and r["case"] == case]
            ax.plot([r["data_bytes"] / MiB for r in rs], [med(r["gbps"]) for r in rs], marker="o",
                    label=f"{layout}, {case}")
    ax.set_xscale("log")
    ax.set_xlabel("each filter (MiB)")
    ax.set_ylabel("GB/s of bytes touched")
    ax.set_title("BF.MERGE throughput")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
