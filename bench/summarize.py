"""Merge one device session's outputs into bench/results/<date>-<what>.jsonl and print a markdown table.

usage: python3 bench/summarize.py DEVICE_DIR RESULT_NAME COMMIT
DEVICE_DIR holds bench.jsonl (ours, from `flashgen bench --json`) and anchors.log (anchor_bench.py's
JSON lines), both from the same device call. Each flashgen row keeps its config; the table shows the
default config and the best config measured.
"""
import json, os, sys

src, name, commit = sys.argv[1], sys.argv[2], sys.argv[3]
rows = []
for fn in ("bench.jsonl", "anchors.log"):
    path = os.path.join(src, fn)
    if not os.path.exists(path):
        continue
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line)
            r["commit"] = commit
            rows.append(r)
env = open(os.path.join(src, "env.txt")).read().splitlines()
out = os.path.join(os.path.dirname(__file__), "results", name + ".jsonl")
with open(out, "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")

def key(r):
    return (r["kind"], r["D"], r["N"], bool(r["causal"]))

table = {}
for r in rows:
    if r.get("kind") not in ("fwd", "bwd") or "tflops" not in r:
        continue
    cell = table.setdefault(key(r), {})
    impl = r["impl"]
    if impl == "flashgen":
        if r.get("config") == "default":
            cell["flashgen"] = r["tflops"]
            cell.setdefault("flashgen-tuned", r["tflops"])
        if r.get("config") == "tuned":
            cell["flashgen-tuned"] = r["tflops"]
        if r.get("config") in ("wgmma", "mma.sync"):
            cell["flashgen-" + r["config"]] = r["tflops"]
        cell["flashgen-best"] = max(cell.get("flashgen-best", 0), r["tflops"])
    else:
        cell[impl] = r["tflops"]
impls = ["flashgen", "flashgen-tuned", "flashgen-best", "triton-seed-fa2", "sdpa-flash(FA2)", "sdpa-cudnn"]
for extra in ("flashgen-wgmma", "flashgen-mma.sync"):
    if any(extra in c for c in table.values()):
        impls.insert(2, extra)
print(f"{name} (commit {commit}; {env[0] if env else ''}; {env[-1] if env else ''})\n")
ratios = [("default/FA2", "flashgen", "sdpa-flash(FA2)"), ("tuned/FA2", "flashgen-tuned", "sdpa-flash(FA2)"),
          ("tuned/triton", "flashgen-tuned", "triton-seed-fa2"), ("tuned/cuDNN", "flashgen-tuned", "sdpa-cudnn")]
print("| pass | D | N | causal | " + " | ".join(impls) + " | " + " | ".join(r[0] for r in ratios) + " |")
print("|" + "---|" * (len(impls) + 4 + len(ratios)))
for k in sorted(table):
    c = table[k]
    vals = [f"{c[i]:.0f}" if i in c else "" for i in impls]
    ratio = lambda a, b: f"{c[a] / c[b]:.2f}" if a in c and b in c else ""
    print(f"| {k[0]} | {k[1]} | {k[2]} | {int(k[3])} | " + " | ".join(vals) + " | " + " | ".join(ratio(a, b) for _, a, b in ratios) + " |")
