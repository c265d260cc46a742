"""Part `core`: the core's examples/bench_core.rs (ns per add/contains by
filter size, hashing cost).
"""

from .common import fmt_bytes, fmt_items, run_example, spread, table


def part_core(args, env):
    a = args
    rows = run_example(a, "bench_core", "--sizes", a.core_sizes, "--ops", a.core_ops,
                       "--min-ops", a.core_ops, "--rounds", a.rounds, "--layouts", a.layouts,
                       "--lengths", "8,16,32,64,128,256", "--hash-ops", a.hash_ops)
    return {"rows": rows}


def render_core_floor(res):
    """The batch API's ns/item against the memory floor of the lines it reads,
    measured in the same rounds (bench_core's floor_*_ns)."""
    bl = [r for r in res["rows"] if r["kind"] == "core_bloom" and "floor_read_ns_all" in r]
    if not bl:
        return ""
    rows = []
    for r in bl:
        ra = [x / (f * r["lines_add"]) for x, f in zip(r["add_batch_api_ns_all"], r["floor_rmw_ns_all"])]
        rm = [x / (f * r["lines_mixed"]) for x, f in zip(r["contains_mixed_batch_api_ns_all"], r["floor_read_ns_all"])]
        rows.append([r["layout"], fmt_bytes(r["bytes"]), fmt_items(r["items"]),
                     spread(r["add_batch_api_ns_all"]), f"{r['lines_add']:.2g}",
                     spread([f * r["lines_add"] for f in r["floor_rmw_ns_all"]]), f"**{spread(ra)}**",
                     spread(r["contains_mixed_batch_api_ns_all"]), f"{r['lines_mixed']:.2g}",
                     spread([f * r["lines_mixed"] for f in r["floor_read_ns_all"]]), f"**{spread(rm)}**"])
    return ("\n\n**The batch API against the memory floor.** `BloomFilter::add_hashes` / `contains_hashes` "
            "(what the Python package runs; BF.MADD and BF.MEXISTS run the same per-item add and lookup), "
            "calls of 1000 items, the same adds and mixed lookups as above. Floor: in each round, right after "
            "the filter's timings, the loops of `crates/ferrobloom-core/examples/bench_memref.rs` on a buffer "
            "of the filter's size (independent random 64-byte lines, batches of 1000, THP off as in "
            "redis-server): read-modify-write ns for adds, read ns for lookups, times the lines the operation "
            "must read (blocked: 1; classic add: k; classic mixed lookup: half members with k, half non-members "
            "with their probes up to the first clear bit at the filter's measured fill). ÷ floor: each round's "
            "time ÷ that round's floor, median (min-max). Below the last-level cache the floor is a cache's and "
            "the ratio measures compute.\n\n"
            + table(["layout", "size", "items", "add ns", "lines", "floor ns", "÷ floor",
                     "mixed lookup ns", "lines", "floor ns", "÷ floor"], rows))


def render_core(res):
    meta = next((r for r in res["rows"] if r["kind"] == "core_meta"), {})
    bl = [r for r in res["rows"] if r["kind"] == "core_bloom"]
    cf = [r for r in res["rows"] if r["kind"] == "core_cuckoo"]
    hs = [r for r in res["rows"] if r["kind"] == "core_hash"]

    def s(r, k):
        return spread(r[k + "_all"])

    out = [f"Pure core, no Redis (`crates/ferrobloom-core/examples/bench_core.rs`). Median (min-max) of {meta.get('rounds')} rounds, "
           f"ns per operation. Item hashes are precomputed (hashing is the last table). Adds run on an "
           f"empty, pre-faulted filter up to half its capacity (at most {fmt_items(meta.get('ops', 0))} "
           f"items); lookups then probe members, non-members, and a half/half mix, item by item and in "
           f"batches of {meta.get('batch')} with each item's first cache line prefetched before the batch "
           f"is probed.",
           "", "**Bloom filter** (one non-scaling link at error "
           f"{meta.get('error')}):", ""]
    out.append(table(["layout", "size", "k", "items", "add", "contains member", "contains non-member",
                      "contains mixed", "mixed, batch + prefetch"],
                     [[r["layout"], fmt_bytes(r["bytes"]), r["hashes"], fmt_items(r["items"]), s(r, "add_ns"),
                       s(r, "contains_member_ns"), s(r, "contains_absent_ns"), s(r, "contains_mixed_ns"),
                       s(r, "contains_mixed_batch_prefetch_ns")] for r in bl]))
    floor = render_core_floor(res)
    if floor:
        out.append(floor)
    out += ["", "**Cuckoo filter** (bucket size 2, 8-bit fingerprints, max iterations 20):", ""]
    out.append(table(["size", "items", "add", "contains member", "contains non-member", "contains mixed"],
                     [[fmt_bytes(r["bytes"]), fmt_items(r["items"]), s(r, "add_ns"), s(r, "contains_member_ns"),
                       s(r, "contains_absent_ns"), s(r, "contains_mixed_ns")] for r in cf]))
    out += ["", "**Hashing** per item (random items of each length): `ItemHash::of` (what every command "
            "runs once per item), a direct `xxh3_128` call, and two 64-bit passes (what a scheme with a "
            "second hash would cost):", ""]
    out.append(table(["item bytes", "ItemHash::of ns", "xxh3_128 ns", "2 x xxh3_64 ns",
                      "ItemHash / xxh3_128 (fastest rounds)"],
                     [[r["len"], s(r, "itemhash_ns"), s(r, "xxh3_128_ns"), s(r, "two_pass_xxh3_64_ns"),
                       f"{r['itemhash_ns_min'] / r['xxh3_128_ns_min']:.2f}"] for r in hs]))
    return "\n".join(out)


def plot_core(res, plt, path):
    bl = [r for r in res["rows"] if r["kind"] == "core_bloom"]
    cf = [r for r in res["rows"] if r["kind"] == "core_cuckoo"]
    hs = [r for r in res["rows"] if r["kind"] == "core_hash"]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    ax = axes[0]
    for layout in sorted({r["layout"] for r in bl}):
        rs = [r for r in bl if r["layout"] == layout]
        x = [r["bytes"] for r in rs]
        for k, lab in [("add_ns", "add"), ("contains_member_ns", "contains member"),
                       ("contains_absent_ns", "contains non-member"),
                       ("contains_mixed_batch_prefetch_ns", "mixed, batch+prefetch")]:
            ax.plot(x, [r[k + "_median"] for r in rs], "o-", label=f"{layout}: {lab}")
    ax.set_title("Bloom (non-scaling, 1%)")
    ax2 = axes[1]
    x = [r["bytes"] for r in cf]
    for k, lab in [("add_ns", "add"), ("contains_member_ns", "contains member"),
                   ("contains_absent_ns", "contains non-member")]:
        ax2.plot(x, [r[k + "_median"] for r in cf], "o-", label=lab)
    ax2.set_title("Cuckoo (b=2, 8-bit)")
    for a_ in (ax, ax2):
        a_.set_xscale("log", base=2)
        a_.set_yscale("log")
        a_.set_xlabel("filter bytes")
        a_.set_ylabel("ns per operation")
        a_.legend(fontsize=7)
        a_.grid(True, which="both", alpha=0.3)
    ax3 = axes[2]
    x = [r["len"] for r in hs]
    ax3.plot(x, [r["itemhash_ns_median"] for r in hs], "o-", label="ItemHash::of (one xxh3_128)")
    ax3.plot(x, [r["two_pass_xxh3_64_ns_median"] for r in hs], "s--", label="two xxh3_64 passes")
    ax3.set_xscale("log", base=2)
    ax3.set_xlabel("item bytes")
    ax3.set_ylabel("ns per item")
    ax3.set_title("hashing")
    ax3.legend(fontsize=8)
    ax3.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
