"""Ours against the anchors in one device call: $OUT/ours1.jsonl and ours2.jsonl (two passes of
`flashgen bench --json`, either may be missing) beside $OUT/anchors.log (anchor_bench.py's JSON lines), a row
per (kind, D, N, causal): ours min-max, then Triton's and cuDNN's TFLOP/s with our ratios to them.

usage: python3 bench/ratios.py OUT
"""
import json, sys

out = sys.argv[1]; ours, anc = {}, {}
for p in (1, 2):
    try:
        for l in open(f"{out}/ours{p}.jsonl"):
            r = json.loads(l); ours.setdefault((r["kind"], r["D"], r["N"], r["causal"]), []).append(r["tflops"])
    except FileNotFoundError: pass
for l in open(f"{out}/anchors.log"):
    if l.startswith("{"):
        r = json.loads(l)
        # rows that failed carry "error" and no "tflops"
        if r.get("kind") in ("fwd", "bwd") and "tflops" in r: anc[(r["impl"], r["kind"], r["D"], r["N"], r["causal"])] = r["tflops"]
print("kind  D     N c | ours (2 passes) | triton  ratio      | cudnn   ratio")
for (k, d, n, c), v in sorted(ours.items()):
    t, cu = anc.get(("triton-seed-fa2", k, d, n, c), float("nan")), anc.get(("sdpa-cudnn", k, d, n, c), float("nan"))
    lo, hi = min(v), max(v)
    print(f"{k} {d:3} {n:5} {int(c)} | {lo:6.1f}-{hi:6.1f} | {t:6.1f} {lo/t:.3f}-{hi/t:.3f} | {cu:6.1f} {lo/cu:.3f}-{hi/cu:.3f}")
