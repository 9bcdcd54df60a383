"""The anchors' forwards timed two ways in one process, to separate the timer from the kernel:
"do-bench" (triton.testing.do_bench, as anchor_bench.py times them: a 256 MB memset before each launch, the
mean) and "batched" (flashgen bench's default: 5 warm-up launches, 15 batches of 10 back-to-back launches
between two events, three input sets rotated, the median). Needs anchor_bench.py beside it (.carry/).
Env: OUT (JSON lines to $OUT/anchor_timing.jsonl), ANCHOR_D, ANCHOR_N, IMPLS (triton,cudnn)."""
import json, math, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".carry"))
import torch
from triton.testing import do_bench
import anchor_bench as ab
from torch.nn.attention import sdpa_kernel, SDPBackend


def batched(fn, sets):
    for i in range(5):
        fn(*sets[i % len(sets)])
    times, turn = [], 0
    for _ in range(15):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(10):
            fn(*sets[turn % len(sets)]); turn += 1
        e.record(); e.synchronize()
        times.append(s.elapsed_time(e) / 10)
    return sorted(times)[len(times) // 2]


def cudnn(q, k, v, causal, sm):
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm)


def main():
    out = open(os.path.join(os.environ.get("OUT", "."), "anchor_timing.jsonl"), "w")
    impls = {"triton-seed-fa2": ab.triton_fwd, "sdpa-cudnn": cudnn}
    wanted = os.environ.get("IMPLS", "triton-seed-fa2,sdpa-cudnn").split(",")
    for D in [int(x) for x in os.environ.get("ANCHOR_D", "64,128").split(",")]:
        for N in [int(x) for x in os.environ.get("ANCHOR_N", "1024,4096,16384").split(",")]:
            H, B = 2048 // D, 16384 // N
            for causal in [False, True]:
                sets = [tuple(torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(3)) for _ in range(3)]
                sm = 1.0 / math.sqrt(D)
                for name in wanted:
                    f = impls[name]
                    q, k, v = sets[0]
                    row = {"kind": "fwd", "impl": name, "B": B, "H": H, "N": N, "D": D, "causal": causal}
                    for timing, ms in [("do-bench", do_bench(lambda: f(q, k, v, causal, sm), warmup=25, rep=200)),
                                       ("batched", batched(lambda q, k, v: f(q, k, v, causal, sm), sets))]:
                        r = dict(row, timing=timing, ms=ms, tflops=ab.flops(B, H, N, D, causal, "fwd") / ms / 1e9)
                        print(json.dumps(r), flush=True); out.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
