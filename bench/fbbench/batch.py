"""Part `batch`: BF.MADD/CF.INSERT filling filters to capacity, then
BF.MEXISTS/CF.MEXISTS, server ns/item from INFO commandstats.
"""

import subprocess
import time

from .common import (
    Server,
    check_module_allocator,
    cmdstat,
    finfo,
    fmt_bytes,
    fmt_items,
    fmt_num,
    log,
    med,
    run_example,
    spread,
    table,
)
from .one_item import bf_key, in_turn, redisbloom_variant


def items(prefix, start, n):
    return [b"%s%d" % (prefix, i) for i in range(start, start + n)]


def resp(args):
    """One command in RESP (the wire protocol), from bytes/str arguments."""
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(parts)


def send_batches(port, cmd, key, batches):
    """Sends each batch as one command through `redis-cli --pipe` (C speed: encoding 1000s
    of arguments per command with redis-py would dominate the run time)."""
    head = [cmd, key] + (["ITEMS"] if cmd == "CF.INSERT" else [])
    data = b"".join(resp(head + b) for b in batches)
    p = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "--pipe"], input=data,
                       capture_output=True, timeout=600)
    out = p.stdout.decode(errors="replace")
    if p.returncode != 0 or "errors: 0," not in out or f"replies: {len(batches)}" not in out:
        raise RuntimeError(f"{cmd}: redis-cli --pipe: {out.strip()[-300:]} {p.stderr.decode()[-300:]}")


def timed_send(port, client, cmd, key, batches):
    """Sends the batches; returns (calls, usec) of `cmd` on the server for them."""
    client.config_resetstat()
    send_batches(port, cmd, key, batches)
    return cmdstat(client, cmd)


def part_batch(args, env):
    a = args
    bsz = a.batch_items
    srv = Server(a, "batch")
    c = srv.client()
    # RedisBloom 2.8.2 beside it, same filters, same batches, measured in turn.
    rb = Server(a, "batch-rb", module=a.redisbloom) if a.redisbloom else None
    rc = rb.client() if rb else None
    res = {"batch_items": bsz, "calls": a.batch_calls, "rounds": a.rounds, "error": 0.01,
           "variants": a.bf_variants, "redisbloom": bool(rb), "fill_fraction": a.batch_fill,
           "rows": [], "memref": []}
    rb_variant = redisbloom_variant(a.bf_variants)
    try:
        for cap in a.batch_capacities:
            c.flushall()
            if rc:
                rc.flushall()
                rc.execute_command("BF.RESERVE", "bf", 0.01, cap)
                rc.execute_command("CF.RESERVE", "cf", cap)
            # (label, command, key, RedisBloom's key or None): BF per Bloom variant, then CF.
            fills, probes = [], []
            for v, extra in a.bf_variants:
                c.execute_command("BF.RESERVE", bf_key(v), 0.01, cap, *extra)
                sfx = f" [{v}]" if v else ""
                rbk = "bf" if rc and v == rb_variant else None
                fills.append((f"BF.MADD{sfx}", "BF.MADD", bf_key(v), rbk))
                probes.append((f"BF.MEXISTS{sfx}", "BF.MEXISTS", bf_key(v), rbk))
            c.execute_command("CF.RESERVE", "cf", cap)
            fills.append(("CF.INSERT", "CF.INSERT", "cf", "cf" if rc else None))
            probes.append(("CF.MEXISTS", "CF.MEXISTS", "cf", "cf" if rc else None))
            # The fill is the measurement of the adds: every filter goes from empty to
            # `fill` items in steps, each step sent to ferrobloom and RedisBloom in turn
            # (which goes first alternates), server time summed per tenth of the fill.
            fill = int(cap * a.batch_fill)
            tenths = {(label, m): [[0, 0] for _ in range(10)] for label, *_ in fills for m in ("fb", "rb")}
            t = time.perf_counter()
            step = bsz * 100
            for k, start in enumerate(range(0, fill, step)):
                batches = [items(b"m", x, min(bsz, fill - x)) for x in range(start, min(start + step, fill), bsz)]
                n_items = sum(len(b) for b in batches)
                tenth = min(start * 10 // max(fill, 1), 9)
                for label, cmd, key, rbk in fills:
                    order = [("fb", srv.port, c, key)] + ([("rb", rb.port, rc, rbk)] if rbk else [])
                    for m, port, client, kk in in_turn(order, k):
                        _, usec = timed_send(port, client, cmd, kk, batches)
                        acc = tenths[(label, m)][tenth]
                        acc[0] += usec
                        acc[1] += n_items
            log(f"  {fmt_items(cap)}: filled {fill} items per filter in {time.perf_counter() - t:.1f} s")
            size = {key: int(finfo(c, "BF.INFO" if key != "cf" else "CF.INFO", key)["Size"])
                    for _, _, key, _ in fills}
            growth = {key: int(finfo(c, "CF.INFO" if key == "cf" else "BF.INFO", key)["Number of filters"])
                      for key in size}
            rb_growth = {}
            if rc:
                rb_growth = {k: int(finfo(rc, "CF.INFO" if k == "cf" else "BF.INFO", k)["Number of filters"])
                             for k in ("bf", "cf")}
            samples = {}
            for label, cmd, key, rbk in fills:
                for m in ("fb", "rb"):
                    ts = [u * 1000.0 / n for u, n in tenths[(label, m)] if n]
                    tot_u = sum(u for u, _ in tenths[(label, m)])
                    tot_n = sum(n for _, n in tenths[(label, m)])
                    samples[(label, m)] = (tot_u * 1000.0 / tot_n if tot_n else None, ts)
            # Lookups on the filled filters: half present, half absent, interleaved;
            # `rounds` rounds, which module goes first alternating.
            for label, cmd, key, rbk in probes:
                for m in ("fb", "rb"):
                    samples[(label, m)] = (None, [])
            for rnd in range(a.rounds):
                for label, cmd, key, rbk in probes:
                    batches = []
                    for i in range(a.batch_calls):
                        pres = items(b"m", (i * 7919 * (bsz // 2)) % max(fill - bsz, 1), bsz // 2)
                        absent = items(b"x%d:" % rnd, i * bsz, bsz - bsz // 2)
                        batches.append([x for pair in zip(pres, absent) for x in pair])
                    order = [("fb", srv.port, c, key)] + ([("rb", rb.port, rc, rbk)] if rbk else [])
                    for m, port, client, kk in in_turn(order, rnd):
                        calls, usec = timed_send(port, client, cmd, kk, batches)
                        samples[(label, m)][1].append(usec * 1000.0 / (calls * bsz))
            # The reference, measured now (same run), on buffers of the filters' sizes.
            ref = run_example(a, "bench_memref", "--sizes", ",".join(str(x) for x in sorted(set(size.values()))),
                              "--batch", bsz, "--rounds", a.rounds, "--reads", a.memref_reads)
            res["memref"].extend(ref)
            refs = {r["bytes"]: r for r in ref}
            for label, cmd, key, rbk in fills + probes:
                r = refs[size[key]]
                fb_total, fb_s = samples[(label, "fb")]
                rb_total, rb_s = samples[(label, "rb")]
                fb_head = fb_total if fb_total is not None else med(fb_s)
                rb_head = (rb_total if rb_total is not None else med(rb_s)) if rb_s else None
                res["rows"].append({
                    "capacity": cap, "command": label, "key": key, "bytes": size[key], "filled": fill,
                    "phase": "fill" if fb_total is not None else "lookup",
                    "ns_per_item": fb_s, "ns_per_item_head": fb_head,
                    "ref_ns_per_read": r["ns_per_read_all"], "ref_dependent_ns": r["ns_dependent_median"],
                    "ratio": fb_head / r["ns_per_read_median"],
                    "growth": growth[key], "redisbloom_growth": rb_growth.get(rbk) if rbk else None,
                    "redisbloom_ns_per_item": rb_s, "redisbloom_ns_per_item_head": rb_head,
                    "vs_redisbloom": (rb_head / fb_head) if rb_head else None,
                })
                log(f"  {fmt_items(cap)} {label:18s} {fb_head:7.1f} ns/item"
                    + (f", RedisBloom {rb_head:7.1f} ({rb_head / fb_head:.2f}x)" if rb_head else ""))
        check_module_allocator(c, 1)
    finally:
        srv.close()
        if rb:
            rb.close()
    return res


def render_batch(res):
    rows = []
    for r in res["rows"]:
        rbs = r.get("redisbloom_ns_per_item") or []
        vs = r.get("vs_redisbloom")
        fill = r.get("phase") == "fill"
        head = r.get("ns_per_item_head", med(r["ns_per_item"]))
        rb_head = r.get("redisbloom_ns_per_item_head")
        fb_txt = (f"{fmt_num(head)} ({fmt_num(min(r['ns_per_item']))}-{fmt_num(max(r['ns_per_item']))})"
                  if fill and len(r["ns_per_item"]) > 1 else spread(r["ns_per_item"]))
        rb_txt = "-"
        if rbs:
            rb_txt = (f"{fmt_num(rb_head)} ({fmt_num(min(rbs))}-{fmt_num(max(rbs))})"
                      if fill and len(rbs) > 1 else spread(rbs))
        grew = str(r["growth"]) + (f" / {r['redisbloom_growth']}" if r.get("redisbloom_growth") else "")
        rows.append([fmt_items(r["capacity"]), r["command"] + (" (fill)" if fill else ""),
                     fmt_bytes(r["bytes"]), fb_txt, rb_txt, f"**{vs:.2f}x**" if vs else "-",
                     spread(r["ref_ns_per_read"]), f"{r['ratio']:.1f}", fmt_num(r["ref_dependent_ns"]), grew])
    hdr = ["reserved for", "command", "filter size", "ferrobloom server ns/item",
           "RedisBloom 2.8.2 ns/item", "RedisBloom ÷ ferrobloom", "reference ns/read",
           "÷ reference", "one dependent miss, ns", "links / sub-filters (fb / RB)"]
    variants = ", ".join(f"`[{v}]` = `BF.RESERVE … {' '.join(x)}`".replace(" … `", "` as is")
                         for v, x in res.get("variants", []) if v)
    frac = res.get("fill_fraction", 1.0)
    return ((f"Bloom variants: {variants}. " if variants else "") +
            f"{res['batch_items']} items per command. Filters: `BF.RESERVE bf 0.01 <n>` and "
            f"`CF.RESERVE cf <n>` (bucket size 2, 8-bit fingerprints), filled "
            f"{'to capacity' if frac == 1 else f'to {frac:.0%} of capacity'} with BF.MADD / CF.INSERT: "
            f"the \"(fill)\" rows are that fill, ns per item = the fill's total server time ÷ items, "
            f"(min-max) over its ten tenths (later tenths cost more: fuller tables, longer kick chains). "
            f"The MEXISTS rows probe the filled filters, half present and half never added items, "
            f"{res['calls']} commands per measurement, {res['rounds']} rounds: median (min-max). "
            f"Server-side time = `usec` of `INFO commandstats` (after `CONFIG RESETSTAT`). "
            + ("RedisBloom 2.8.2 (Debian's redis-server 7.0.15 for both) gets the same filters and "
               "batches, each step sent to both in turn (the first of the two alternating); servers "
               "pinned to core 0, the load generator to the other; its rows pair with the classic "
               "variant (RedisBloom has one layout). "
               if res.get("redisbloom") else "RedisBloom was not available for this run. ") +
            f"Reference: `crates/ferrobloom-core/examples/bench_memref.rs` in the same run, batches of {res['batch_items']} "
            f"independent random 64-byte reads from a buffer of the filter's size (the cost of one "
            f"cache miss per item when misses overlap); the dependent-miss column is the full latency "
            f"of one miss, for context.\n\n"
            + table(hdr, rows))


def plot_batch(res, plt, path):
    caps = sorted({r["capacity"] for r in res["rows"]})
    labels = list(dict.fromkeys(r["command"] for r in res["rows"]))
    fig, axes = plt.subplots(1, len(caps), figsize=(5 * len(caps), 4.5), squeeze=False)
    for ax, cap in zip(axes[0], caps):
        rows = {r["command"]: r for r in res["rows"] if r["capacity"] == cap}
        xs = list(range(len(labels)))
        fb = [rows[lb].get("ns_per_item_head", med(rows[lb]["ns_per_item"])) if lb in rows else 0 for lb in labels]
        rbv = [(rows[lb].get("redisbloom_ns_per_item_head") or 0) if lb in rows else 0 for lb in labels]
        ax.bar([x - 0.2 for x in xs], fb, width=0.4, color="#1f77b4", label="ferrobloom")
        if any(rbv):
            ax.bar([x + 0.2 for x in xs], rbv, width=0.4, color="#d62728", label="RedisBloom 2.8.2")
        ax.set_xticks(xs)
        ax.set_xticklabels([lb + (" (fill)" if rows.get(lb, {}).get("phase") == "fill" else "") for lb in labels],
                           rotation=35, ha="right", fontsize=7)
        ax.set_ylabel("server ns per item")
        ax.set_title(f"filters reserved for {fmt_items(cap)} items")
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"batch commands, {res['batch_items']} items per command")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
