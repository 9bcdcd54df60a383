"""Tables and the merged rows of one bench/device.sh call, from its working folder WORK (/tmp/fg-work):
ours in WORK/ours*.jsonl, WORK/v_*.jsonl, WORK/tuned.jsonl (`flashgen bench --json`), the anchors' JSON lines
in WORK/logs/anchors*.log (anchor_bench.py) and WORK/logs/fa4_*.log (fa4_bench.py).

usage: python3 bench/report.py table WORK                  ours (min-max over passes) against each anchor
       python3 bench/report.py variants WORK VARIANTS KIND  each variant's min-max and its ratio to the first
       python3 bench/report.py autotune WORK               seconds per key; tuned against default
       python3 bench/report.py merge WORK OUT.jsonl        every JSON row of the call, tagged "source"
"""
import glob
import json
import os
import statistics
import sys

ANCHORS = [("triton", "triton-seed-fa2"), ("fa2", "sdpa-flash(FA2)"), ("cudnn", "sdpa-cudnn"), ("fa4", "fa4-cute")]


def rows(path):
    """The JSON objects of a file, one a line; other lines (tables, logs) skipped."""
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError:
                        pass
    except FileNotFoundError:
        return


def timed(r):
    """A timed row: kind fwd or bwd with TFLOP/s (rows that failed carry "error" instead)."""
    return r.get("kind") in ("fwd", "bwd") and "tflops" in r


def key(r):
    return (r["kind"], int(r["D"]), int(r["N"]), int(bool(r["causal"])))


def span(v):
    return f"{min(v):6.1f}-{max(v):6.1f}"


def table(work):
    ours, anchors = {}, {}
    # the table's passes alone (ours1, ours2, ...; not the modes profile's ours_gqa/ours_varlen, whose D and N
    # collide with the table's rows), and FA4's table runs (fa4_1, ...; not fa4_modes)
    for path in sorted(glob.glob(f"{work}/ours[0-9]*.jsonl")):
        for r in filter(timed, rows(path)):
            ours.setdefault(key(r) + (r.get("config", "default"),), []).append(r["tflops"])
    for path in sorted(glob.glob(f"{work}/logs/anchors*.log") + glob.glob(f"{work}/logs/fa4_[0-9]*.log")):
        for r in filter(timed, rows(path)):
            anchors.setdefault((r["impl"],) + key(r), []).append(r["tflops"])
    if not ours:
        print("table: no rows of ours")
        return
    present = [(short, impl) for short, impl in ANCHORS if any(k[0] == impl for k in anchors)]
    print("\nkind   D     N c config           | ours (min-max) | " + " | ".join(f"{s:>6} ratio      " for s, _ in present))
    for (kind, d, n, c, config), v in sorted(ours.items()):
        cells = []
        for _, impl in present:
            a = anchors.get((impl, kind, d, n, c))
            # the widest honest ratio: ours' lowest against the anchor's highest, and the other way round
            cells.append(f"{statistics.mean(a):6.1f} {min(v) / max(a):.3f}-{max(v) / min(a):.3f}" if a else " " * 18)
        print(f"{kind:4} {d:3} {n:5} {c} {config[:16]:16} | {span(v)} | " + " | ".join(cells))


def decode_variants(work, tags):
    """DECODE=1: K/V GB/s per (B, cache, paged) and the batch-1 step's µs, per variant, min-max over rounds."""
    t, step = {}, {}
    for path in glob.glob(f"{work}/v_*.jsonl"):
        tag = os.path.basename(path)[2:-len(".jsonl")].rsplit("_", 1)[0]
        for r in rows(path):
            if r.get("kind") == "decode" and r.get("gb_s"):
                t.setdefault((r["B"], r["NK"], bool(r.get("paged")), r.get("config", "default")), {}).setdefault(tag, []).append(r["gb_s"])
            elif r.get("kind") == "decode_latency":
                step.setdefault((tag, r.get("config", "default")), []).append(r["us"])
    ref = tags[0]
    print(f"\n  B    NK paged config     | " + " | ".join(f"{x:>22}" for x in tags) + f" | (K/V GB/s min-max; ratio of means to {ref}'s)")
    for (b, nk, paged, config), x in sorted(t.items()):
        base = x.get(ref)
        cells = [(f"{min(v):7.0f}-{max(v):7.0f} {statistics.mean(v) / statistics.mean(base):.3f}" if v and base else " " * 22) for v in (x.get(tag) for tag in tags)]
        print(f"{b:3} {nk:5} {int(paged):5} {config[:10]:10} | " + " | ".join(cells))
    for (tag, config), us in sorted(step.items()):
        print(f"step (batch 1, cache 8192, bench's timer) {tag} {config}: {min(us):.2f}-{max(us):.2f} us")


def variants(work, spec, kind):
    tags = [v.split(":", 1)[0] for v in spec.split(";")]
    if kind == "decode":
        decode_variants(work, tags)
        return
    t = {}
    for path in glob.glob(f"{work}/v_*.jsonl"):
        tag = os.path.basename(path)[2:-len(".jsonl")].rsplit("_", 1)[0]
        for r in filter(timed, rows(path)):
            if r["kind"] == kind:
                t.setdefault(key(r)[1:] + (r.get("config", "default"),), {}).setdefault(tag, []).append(r["tflops"])
    if not t:
        print("variants: no rows")
        return
    ref = tags[0]
    print(f"\n  D     N c config           | " + " | ".join(f"{x:>19}" for x in tags) + f" | (TFLOP/s min-max; ratio of means to {ref}'s default row)")
    for (d, n, c, config), x in sorted(t.items()):
        base = t.get((d, n, c, "default"), {}).get(ref)
        cells = []
        for tag in tags:
            v = x.get(tag)
            ratio = f"{statistics.mean(v) / statistics.mean(base):.3f}" if v and base else "     "
            cells.append(f"{span(v)} {ratio}" if v else " " * 19)
        print(f"{d:3} {n:5} {c} {config[:16]:16} | " + " | ".join(cells))


def autotune(work):
    keys = list(rows(f"{work}/autotune.jsonl"))
    for r in keys:
        print(f"{r['key']:<52} {r['seconds']:6.2f} s (setup {r['setup_s']:.2f}, compile wait {r['compile_wait_s']:.2f}, "
              f"check {r['verify_s']:.2f}, time {r['time_s']:.2f})  best {r.get('best')}")
    if keys:
        s = [r["seconds"] for r in keys]
        print(f"keys {len(keys)}, max {max(s):.2f} s, over 2 s: {sum(x > 2 for x in s)}")
    t = {}
    for r in filter(timed, rows(f"{work}/tuned.jsonl")):
        t.setdefault(key(r), {})[r.get("config")] = r["tflops"]
    if t:
        print("\nkind   D     N c | default  tuned  tuned/default")
        for k, x in sorted(t.items()):
            if "default" in x and "tuned" in x:
                print(f"{k[0]:4} {k[1]:3} {k[2]:5} {k[3]} | {x['default']:7.1f} {x['tuned']:6.1f}  {x['tuned'] / x['default']:.3f}")


def _sortable(key):
    """A shape key with its absent fields (None: a mode's rows lack HKV, NK, ...) sorting first."""
    return tuple((0, 0) if x is None else (1, x) for x in key)


def modes(work):
    """fa4_bench.py's gqa, varlen, decode, window and hdim shapes: ours (ours_gqa, ours_varlen, ours_decode,
    ours_window, ours_softcap, ours_hdim, ours_hdim192) against FA4
    and cuDNN from the same call (logs/fa4_modes.log), matched on every field that names a shape."""
    shape = lambda r: (r["kind"], r.get("B"), r.get("H"), r.get("HKV"), r.get("N"), r.get("NK"), r.get("D"),
                       int(bool(r.get("causal"))), bool(r.get("varlen")), bool(r.get("paged")),
                       r.get("window_left") or 0, r.get("softcap") or 0)
    sources = ("ours_gqa", "ours_varlen", "ours_decode", "ours_window", "ours_softcap", "ours_hdim", "ours_hdim192")
    # (a row per shape and config: the window's backward is timed on its default and on the pair, --fused)
    ours = {shape(r) + (r.get("config", "default"),): r for src in sources for r in rows(f"{work}/{src}.jsonl")}
    theirs = {}
    for r in rows(f"{work}/logs/fa4_modes.log"):
        if r.get("kind") in ("fwd", "bwd", "decode"):
            theirs[(r.get("impl"),) + shape(r)] = r
    if not ours:
        print("modes: no rows of ours")
        return
    print("\nkind  B  H HKV     N  D c varlen window cap config   |  ours TFLOP/s |   fa4 ratio    | cudnn ratio")
    for k, r in sorted(((k, r) for k, r in ours.items() if k[0] in ("fwd", "bwd")), key=lambda kr: _sortable(kr[0])):
        cells = []
        for impl in ("fa4-cute", "sdpa-cudnn"):
            a = theirs.get((impl,) + k[:-1])
            cells.append(f"{a['tflops']:6.1f} {r['tflops'] / a['tflops']:.3f}" if a and "tflops" in a else " " * 12)
        print(f"{k[0]:4} {k[1]:2} {k[2]:2} {k[3] or k[2]:3} {k[4]:5} {k[6]:3} {k[7]} {str(k[8]):6} {k[10]:6} {k[11]:3g} {k[12][:8]:8} | {r['tflops']:13.1f} | " + " | ".join(cells))
    print("\ndecode B  H HKV    NK paged |  ours GB/s   ms      |  fa4 GB/s  ratio")
    for k, r in sorted(((k, r) for k, r in ours.items() if k[0] == "decode"), key=lambda kr: _sortable(kr[0])):
        a = theirs.get(("fa4-cute",) + k)
        cell = f"{a['gb_s']:9.1f}  {r['gb_s'] / a['gb_s']:.3f}" if a and "gb_s" in a else ""
        print(f"       {k[1]:2} {k[2]:2} {k[3]:3} {k[5]:5} {str(k[9]):5} | {r['gb_s']:9.1f} {r['ms']:.5f} | {cell}")
    for r in rows(f"{work}/ours_decode.jsonl"):
        if r.get("kind") == "decode_latency":
            print(f"\ndecode latency, B {r['B']}, cache {r['NK']}: {r['us']:.1f} us (do-bench, L2 flushed), "
                  f"{r.get('us_back_to_back', float('nan')):.1f} back to back, {r.get('us_graph', float('nan')):.1f} in a CUDA graph, "
                  f"{r.get('us_host_enqueue', float('nan')):.1f} host enqueue; splits {r.get('splits')}")


def merge(work, out):
    """Every JSON row of the call, tagged "source" (the file's name without its extension): the .jsonl files,
    and the logs of the steps that wrote none (a step's log repeats the rows of its .jsonl)."""
    stem = lambda path: os.path.basename(path).rsplit(".", 1)[0]
    files = sorted(glob.glob(f"{work}/*.jsonl"))
    files += [p for p in sorted(glob.glob(f"{work}/logs/*.log")) if stem(p) not in {stem(q) for q in files}]
    with open(out, "w") as f:
        for path in files:
            source = stem(path)
            for r in rows(path):
                r.setdefault("source", source)
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    what, work = sys.argv[1], sys.argv[2]
    if what == "table":
        table(work)
    elif what == "variants":
        variants(work, sys.argv[3], sys.argv[4])
    elif what == "autotune":
        autotune(work)
    elif what == "modes":
        modes(work)
    elif what == "merge":
        merge(work, sys.argv[3])
    else:
        sys.exit(__doc__)
