# FA4's backward at the table's D64 / D128 N 1024 non-causal shapes, a few times, for Nsight Compute to
# time each of its kernels (call: ncu --launch-skip/--launch-count around this).
import os, torch
from flash_attn.cute.interface import flash_attn_func
D = int(os.environ.get("D", "64")); N = 1024; H = 2048 // D; Z = 16384 // N
q, k, v = (torch.randn(Z, N, H, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
for i in range(3):
    out = flash_attn_func(q, k, v, causal=False)
    out = out[0] if isinstance(out, tuple) else out
    g = torch.randn_like(out)
    torch.autograd.grad(out, (q, k, v), g)
torch.cuda.synchronize()
print("done", D)
