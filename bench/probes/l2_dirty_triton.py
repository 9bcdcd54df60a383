"""Does a do_bench L2 flush (a 256 MB memset: L2 left full of dirty lines) double the DRAM traffic of a
33.5 MB streaming read (batch-1 decode's K/V at cache 8192), and does an evict_first load avoid it?
On the H200: python3 bench/probes/l2_dirty_triton.py (bench/results/2026-12-04-decode-l2-probe)."""
import torch, triton, triton.language as tl, json, sys

@triton.jit
def stream_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVICT: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(pid * BLOCK, n, nprog * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        if EVICT:
            x = tl.load(x_ptr + offs, mask=offs < n, other=0.0, eviction_policy="evict_first")
        else:
            x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + pid, tl.sum(acc))

def main():
    n = 8192 * 8 * 128 * 2  # K and V of one sequence: 8192 tokens, 8 heads, D 128
    x = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(132 * 8, device="cuda", dtype=torch.float32)
    cache = torch.empty(256_000_000 // 4, dtype=torch.int32, device="cuda")
    rows = []
    for evict in (0, 1):
        for grid in (132 * 2, 132 * 8):
            f = lambda: stream_sum[(grid,)](x, out, n, BLOCK=2048, EVICT=evict, num_warps=8)
            f(); torch.cuda.synchronize()
            for flush in ("dirty", "clean", "none"):
                ts = []
                for _ in range(300):
                    if flush == "dirty":
                        cache.zero_()
                    elif flush == "clean":
                        cache.sum()
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    s.record(); f(); e.record()
                    ts.append((s, e))
                torch.cuda.synchronize()
                us = sorted(s.elapsed_time(e) * 1e3 for s, e in ts)
                mean = sum(us) / len(us)
                rows.append(dict(evict=evict, grid=grid, flush=flush, mean_us=round(mean, 2), p50=round(us[len(us)//2], 2), gb_s=round(n * 2 / mean / 1e3, 1)))
                print(json.dumps(rows[-1]), flush=True)
    print("evict grid  flush  mean_us  GB/s")
    for r in rows:
        print(f"{r['evict']:5d} {r['grid']:5d} {r['flush']:6s} {r['mean_us']:8.2f} {r['gb_s']:7.1f}")

main()
