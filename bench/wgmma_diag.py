"""Layout diagnosis for a failing forward: reads `flashgen check --parity-dir DIR` dumps and says where the
error lives. M depends only on S = Q·Kᵀ, so a right M with a wrong O puts the fault in P·V. For P·V it solves
O = P·V_eff per head (P from the f64 reference; causal P is triangular, so invertible) and matches V_eff's rows
and columns against V's: a permutation shows as a map, garbage as low correlation.
usage: python3 bench/wgmma_diag.py DIR
"""
import json, math, os, sys
import torch

d = sys.argv[1]
dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16}
for k in json.load(open(os.path.join(d, "index.json"))):
    Z, H, N, D = k["Z"], k["H"], k["N"], k["D"]
    dt = dtypes[k["dtype"]]
    def load(tag, dtype=torch.int16, sh=(Z, H, N, D)):
        raw = torch.frombuffer(bytearray(open(os.path.join(d, f"{k['name']}.{tag}.bin"), "rb").read()), dtype=dtype)
        return raw.reshape(sh)
    q, kk, v, o = (load(t).view(dt).cuda().double() for t in ("q", "k", "v", "o"))
    m = load("m", torch.float32, (Z, H, N)).cuda().double()
    s = q @ kk.transpose(-1, -2) / math.sqrt(D)
    if k["causal"]:
        s = s.masked_fill(torch.ones(N, N, device="cuda").triu(1).bool(), float("-inf"))
    m_ref = torch.logsumexp(s, -1) / math.log(2)
    p = torch.softmax(s, -1)
    o_ref = p @ v
    rel = lambda a, b: ((a - b).norm() / b.norm()).item()
    print(f"== {k['name']}: rel err O {rel(o, o_ref):.3e}, M {rel(m, m_ref):.3e}, NaN in O {torch.isnan(o).sum().item()}, in M {torch.isnan(m).sum().item()}")
    e_row = (o - o_ref).norm(dim=-1) / o_ref.norm(dim=-1)
    e_m = (m - m_ref).abs()
    print("  O row error by row % 64 (max over rows):", [round(x, 3) for x in e_row.reshape(-1, 64).amax(0).tolist()[:64:4]])
    print("  O row error by 64-row block:", [round(x, 3) for x in e_row[0, 0].reshape(-1, 64).amax(1).tolist()])
    print("  O col error by column (every 4th):", [round(x, 3) for x in ((o - o_ref).norm(dim=(0, 1, 2)) / o_ref.norm(dim=(0, 1, 2))).tolist()[::4]])
    print("  M abs error by row % 64:", [round(x, 4) for x in e_m.reshape(-1, 64).amax(0).tolist()[::4]])
    print("  M abs error by 64-row block:", [round(x, 4) for x in e_m[0, 0].reshape(-1, 64).amax(1).tolist()])
    if rel(m, m_ref) < 1e-3 and rel(o, o_ref) > 1e-2:
        # O = P·V_eff: which rows/columns of V did the kernel use?
        pz, oz, vz = p[0, 0], o[0, 0], v[0, 0]
        v_eff = torch.linalg.lstsq(pz, oz).solution
        vn = (vz - vz.mean(0)) / vz.std(0)
        en = (v_eff - v_eff.mean(0)) / v_eff.std(0)
        col_corr = (en.T @ vn) / N  # [D_eff, D]
        best_col = col_corr.abs().argmax(1)
        print("  V_eff column c ~ V column:", best_col.tolist()[:64], "corr", [round(x, 2) for x in col_corr.abs().amax(1).tolist()[:16]])
        vr = vz / vz.norm(dim=1, keepdim=True)
        er = v_eff[:, best_col.argsort()] if len(set(best_col.tolist())) == D else v_eff
        er = er / er.norm(dim=1, keepdim=True)
        row_corr = er @ vr.T  # [N, N]
        best_row = row_corr.abs().argmax(1)
        print("  V_eff row j ~ V row (first 80):", best_row.tolist()[:80], "corr", [round(x, 2) for x in row_corr.abs().amax(1).tolist()[:16]])
