"""Part `accuracy`: the core's examples/bench_accuracy.rs (FPR and bits/item).
"""

from .common import fmt_items, run_example, table


def part_accuracy(args, env):
    a = args
    rows = run_example(a, "bench_accuracy", "--capacity", a.acc_capacity, "--probes", a.acc_probes,
                       "--layouts", a.layouts, "--cf-slots", a.cf_slots,
                       "--cf-max-iterations", a.cf_max_iterations)
    return {"rows": rows}


def render_accuracy(res):
    meta = next((r for r in res["rows"] if r["kind"] == "acc_meta"), {})
    bl = [r for r in res["rows"] if r["kind"] == "acc_bloom"]
    cf = [r for r in res["rows"] if r["kind"] == "acc_cuckoo"]
    out = [f"Pure core (`crates/ferrobloom-core/examples/bench_accuracy.rs`), fixed seeds; {fmt_items(meta.get('probes', 0))} "
           f"non-member probes per row. Bloom filters reserved for {fmt_items(meta.get('capacity', 0))} items: "
           f"scaling (expansion 2) after 1x and 4x that many distinct items, non-scaling filled until it "
           f"refuses an item. bits/item = storage bits of all links / distinct items added; RedisBloom = its "
           f"sizing formula (bloom_init in RedisBloom's deps/bloom/bloom.c: scaling links at e/2, e/4, ...) for the same links and items; "
           f"textbook = |ln e| / ln(2)^2. \"FPR ≤ e\" allows 3 standard deviations of sampling noise.",
           ""]
    hdr = ["layout", "error e", "mode", "fill", "links", "measured FPR", "FPR ≤ e", "bits/item",
           "RedisBloom bits/item", "textbook bits/item", "bits vs RedisBloom"]
    rows = []
    for r in bl:
        ok = "yes" if r["fpr"] <= r["fpr_limit_3sigma"] else "**no**"
        rows.append([r["layout"], r["error"], r["mode"], r["fill"], r["links"], f"{r['fpr']:.3e}", ok,
                     f"{r['bits_per_item']:.2f}", f"{r['rb_bits_per_item']:.2f}",
                     f"{r['textbook_bits_per_item']:.2f}", f"{r['bits_per_item'] / r['rb_bits_per_item']:.4f}"])
    out.append(table(hdr, rows))
    out += ["", f"**Cuckoo**: one non-growing table of {fmt_items(cf[0]['slots']) if cf else '?'} slots per "
            f"row, filled until an insert fails (max iterations {meta.get('cf_max_iterations')}; the load "
            f"at the first failure with RedisBloom's default of 20 is shown too), then probed. Bound = "
            f"`core::cuckoo::fpr_bound` = 2b/(2^f - 1); the ERROR range is what `CF.RESERVE … ERROR e` "
            f"needs to pick that width at that bucket size.", ""]
    hdr = ["fingerprint bits", "bucket size", "ERROR that selects it", "load reached",
           "first failure at 20 iterations", "measured FPR", "bound", "FPR ≤ bound", "bits/item"]
    rows = []
    for r in cf:
        probes = r["probes"]
        fpr = f"{r['fpr']:.3e}" if r["false_positives"] else f"0 in {fmt_items(probes)}"
        sigma = (r["bound"] * (1 - r["bound"]) / probes) ** 0.5
        ok = "yes" if r["fpr"] <= r["bound"] + 3 * sigma else "**no**"
        sel = (f"[{r['error_option_min']:.2g}, {r['error_option_max']:.2g})"
               if r["error_option_max"] < 1 else f"≥ {r['error_option_min']:.2g} (or none)")
        rows.append([r["fp_bits"], r["bucket_size"], sel, f"{r['load']:.3f}", f"{r['load_at_20']:.3f}",
                     fpr, f"{r['bound']:.2e}", ok, f"{r['bits_per_item']:.2f}"])
    out.append(table(hdr, rows))
    return "\n".join(out)


def plot_accuracy(res, plt, path_fpr, path_bits):
    bl = [r for r in res["rows"] if r["kind"] == "acc_bloom"]
    cf = [r for r in res["rows"] if r["kind"] == "acc_cuckoo"]
    modes = [("scaling x2", "1x"), ("scaling x2", "4x"), ("non-scaling", "full")]
    layouts = sorted({r["layout"] for r in bl})
    # FPR vs requested error (log-log), and cuckoo FPR vs bound.
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    ax = axes[0]
    errs = sorted({r["error"] for r in bl})
    ax.plot(errs, errs, "k--", label="requested error (target)")
    for layout in layouts:
        for (mode, fill), m in zip(modes, ["o", "s", "^"]):
            rs = sorted([r for r in bl if r["layout"] == layout and r["mode"] == mode and r["fill"] == fill],
                        key=lambda r: r["error"])
            ax.plot([r["error"] for r in rs], [max(r["fpr"], 1e-7) for r in rs], m + "-",
                    label=f"{layout}: {mode} {fill}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("requested error rate")
    ax.set_ylabel("measured false-positive rate")
    ax.set_title("Bloom: measured FPR")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    ax = axes[1]
    for b, m in zip([1, 2, 4], ["o", "s", "^"]):
        rs = sorted([r for r in cf if r["bucket_size"] == b], key=lambda r: r["fp_bits"])
        ax.plot([r["fp_bits"] for r in rs], [r["bound"] for r in rs], m + "--", alpha=0.5, label=f"bound, b={b}")
        ax.plot([r["fp_bits"] for r in rs], [r["fpr"] if r["fpr"] > 0 else float("nan") for r in rs], m + "-",
                label=f"measured, b={b}")
    ax.set_yscale("log")
    ax.set_xlabel("fingerprint bits")
    ax.set_ylabel("false-positive rate")
    ax.set_title("Cuckoo: measured FPR vs bound 2b/(2^f-1) (0 not drawn)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path_fpr, dpi=110)
    plt.close(fig)
    # Bits per item.
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    ax = axes[0]
    for layout in layouts:
        for (mode, fill), m in zip(modes, ["o", "s", "^"]):
            rs = sorted([r for r in bl if r["layout"] == layout and r["mode"] == mode and r["fill"] == fill],
                        key=lambda r: r["error"])
            ax.plot([r["error"] for r in rs], [r["bits_per_item"] for r in rs], m + "-",
                    label=f"{layout}: {mode} {fill}")
    for (mode, fill), m in zip(modes, ["o", "s", "^"]):
        rs = sorted([r for r in bl if r["layout"] == layouts[0] and r["mode"] == mode and r["fill"] == fill],
                    key=lambda r: r["error"]) if layouts else []
        ax.plot([r["error"] for r in rs], [r["rb_bits_per_item"] for r in rs], m + ":", color="gray",
                label=f"RedisBloom formula: {mode} {fill}")
    rs = sorted([r for r in bl if r["mode"] == "non-scaling"], key=lambda r: r["error"])
    ax.plot([r["error"] for r in rs], [r["textbook_bits_per_item"] for r in rs], "k--", label="textbook |ln e|/ln²2")
    ax.set_xscale("log")
    ax.set_xlabel("requested error rate")
    ax.set_ylabel("bits per item")
    ax.set_title("Bloom: memory per item")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    ax = axes[1]
    for b, m in zip([1, 2, 4], ["o", "s", "^"]):
        rs = sorted([r for r in cf if r["bucket_size"] == b], key=lambda r: r["fp_bits"])
        ax.plot([r["fp_bits"] for r in rs], [r["bits_per_item"] for r in rs], m + "-", label=f"b={b}")
    ax.set_xlabel("fingerprint bits")
    ax.set_ylabel("bits per item at the reached load")
    ax.set_title("Cuckoo: memory per item")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path_bits, dpi=110)
    plt.close(fig)
