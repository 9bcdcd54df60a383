"""Triton parity: rerun the seed's Triton FA2 (anchor_bench.triton_fwd) on the inputs `flashgen check
--parity-dir DIR` used, and compare our O and base-2 M with Triton's: relative error <= 1e-2 (O), <= 1e-3 (M).
usage: python3 bench/triton_parity.py DIR [path/to/anchor_bench.py]; prints one JSON line per kernel, exits 1 on a failure.
"""
import importlib.util, json, math, os, sys
import torch

d = sys.argv[1]
spec = importlib.util.spec_from_file_location("anchor_bench", sys.argv[2] if len(sys.argv) > 2 else ".carry/anchor_bench.py")
ab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ab)
dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16}
failed = 0
for k in json.load(open(os.path.join(d, "index.json"))):
    shape = (k["Z"], k["H"], k["N"], k["D"])
    dt = dtypes[k["dtype"]]
    def load(tag, dtype=torch.int16, sh=shape):
        raw = torch.frombuffer(bytearray(open(os.path.join(d, f"{k['name']}.{tag}.bin"), "rb").read()), dtype=dtype)
        return raw.reshape(sh)
    q, kk, v, o = (load(t).view(dt).cuda() for t in ("q", "k", "v", "o"))
    m = load("m", torch.float32, shape[:3]).cuda()
    o_t, m_t = ab.triton_fwd(q, kk, v, k["causal"], 1.0 / math.sqrt(k["D"]))
    eo = ((o.float() - o_t.float()).norm() / o_t.float().norm()).item()
    em = ((m - m_t).norm() / m_t.norm()).item()
    ok = eo <= 1e-2 and em <= 1e-3 and not math.isnan(eo + em)
    failed += not ok
    print(json.dumps({"kind": "parity", "spec": k["name"], "vs": "triton-seed-fa2", "rel_err_o": eo, "rel_err_m": em, "pass": ok}), flush=True)
print(f"{sum(1 for _ in json.load(open(os.path.join(d, 'index.json')))) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
