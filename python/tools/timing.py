"""Timing flashgen through Python, on the GPU (the H200). Two measurements, JSON rows on stdout and in --out:

  python3 python/tools/timing.py table [--rust ours.jsonl] [--out rows.jsonl]
      The table's rows (bf16, 16384 tokens per batch, H·D = 2048, N 1024/4096/16384, D 64/128, causal or not,
      forward and backward) through flashgen.flash_attn_func, timed by triton.testing.do_bench(warmup=25, rep=200)
      as the anchors are (anchor_bench.py; the Rust bench's `--timing do-bench` copies it step for step). The
      backward row is torch.autograd.grad(out, (q, k, v), dout, retain_graph=True), as anchor_bench.py times
      SDPA's. With --rust (the JSON lines of `flashgen bench --backward --timing do-bench --json ...` from the
      same call), each row's ratio to the Rust row; the issue's bar is within 3%.

  python3 python/tools/timing.py compare --rust rust1.jsonl rust2.jsonl ... --python python1.jsonl python2.jsonl ...
      The table's rows over rounds (Rust and Python alternating in one call: the board's clock drifts between
      runs, so one run of each reads ±6%, python-v1): each row's mean over the rounds on each side, their ratio.

  python3 python/tools/timing.py layer [--rounds 2] [--out rows.jsonl]
      The table's rows through flash_attn_func and autograd against the native calls with preallocated outputs
      (the runtime's path, as the Rust bench calls it) in one process on one timer, alternating: the cost of the
      Python layer itself, without the run-to-run drift of the board's clock that `compare` has to average out.

  python3 python/tools/timing.py overhead [--calls 200] [--out rows.jsonl]
      The host cost of a small call (B 1, H 8, N 128, D 64, bf16). Method, no profiler:
        1. GPU time per call: torch.cuda._sleep keeps the GPU busy for ~50 ms; meanwhile the host queues
           `calls` calls between two CUDA events. The host is done queueing long before the GPU reaches the
           first event (checked: the row says so), so the events time the calls' GPU work back to back,
           without host gaps: gpu_us = elapsed / calls (the kernel, and for flashgen the LSE scale kernel).
        2. Host time per call: the same queueing loop timed with time.perf_counter: host_us, the CPU time one
           call costs (Python, torch allocations, DLPack, the Rust checks, the driver's launches), none of it
           waiting on the GPU.
        3. A plain loop of `calls` calls with the GPU idle at the start, timed from before the first call to
           after a final synchronize: loop_us per call = what a caller issuing small calls back to back sees;
           loop_us - gpu_us is the host time per call above the kernel (0 when the GPU is the bottleneck).
      For: flash_attn_func (autograd eager path), flash_attn_func under torch.no_grad, the custom op
      torch.ops.flashgen.fwd, the native call with preallocated outputs (the Rust side alone), and torch's
      SDPA on the same shape as a yardstick, without and with autograd. The issue's bar: host time above the kernel <= 20 us.
      With --parts, also the no-grad call's pieces alone (allocations, DLPack, stream, checks): host_us each.
"""

import argparse
import json
import sys
import time

import torch
import torch.nn.functional as F

import flashgen
from flashgen import _native, flash_attn_func
from flashgen import _torch as ft


def flops(kind, b, h, n, d, causal):
    return 4.0 * b * h * n * n * d * (0.5 if causal else 1.0) * (2.5 if kind == "bwd" else 1.0)


def emit(row, out):
    line = json.dumps(row)
    print(line, flush=True)
    if out:
        out.write(line + "\n")
        out.flush()


def table_rows(args):
    """The table's rows as (d, n, causal, (b, h, q, k, v)): bf16 inputs (B, N, H, D) that require grad, 16384 tokens
    per batch, H·D = 2048, the same seed for every row."""
    for d in args.d:
        for n in args.n:
            for causal in args.causal:
                b, h = 16384 // n, 2048 // d
                g = torch.Generator(device="cuda").manual_seed(0)
                q, k, v = (torch.randn(b, n, h, d, dtype=torch.bfloat16, device="cuda", generator=g).requires_grad_() for _ in range(3))
                yield d, n, causal, (b, h, q, k, v)


def table(args, out):
    from triton.testing import do_bench
    rust = {}
    for path in args.rust or []:
        for line in open(path):
            line = line.strip()
            if line.startswith("{"):
                r = json.loads(line)
                rust[(r["kind"], r["N"], r["D"], bool(r["causal"]))] = r
    ratios = []
    for d, n, causal, (b, h, q, k, v) in table_rows(args):
        ms = do_bench(lambda: flash_attn_func(q, k, v, causal=causal), warmup=25, rep=200)
        rows = [("fwd", ms)]
        out_ = flash_attn_func(q, k, v, causal=causal)
        dout = torch.randn_like(out_)
        ms = do_bench(lambda: torch.autograd.grad(out_, (q, k, v), dout, retain_graph=True), warmup=25, rep=200)
        rows.append(("bwd", ms))
        for kind, ms in rows:
            row = dict(kind=kind, impl="flashgen-python", B=b, H=h, N=n, D=d, causal=int(causal), dtype="bf16", ms=ms,
                       tflops=flops(kind, b, h, n, d, causal) / ms / 1e9, timing="do_bench")
            r = rust.get((kind, n, d, causal))
            if r is not None:
                row["rust_ms"] = r["ms"]
                row["python_over_rust"] = ms / r["ms"]
                ratios.append(row["python_over_rust"])
            emit(row, out)
        del q, k, v, out_, dout
        torch.cuda.empty_cache()
    if ratios:
        worst = max(ratios)
        print(f"python/rust: {min(ratios):.3f} .. {worst:.3f} over {len(ratios)} rows; bar 1.03: {'met' if worst <= 1.03 else 'NOT met'}",
              file=sys.stderr)


def layer(args, out):
    """Python's layer alone: each table row through flash_attn_func (autograd: requires_grad inputs, the backward
    by torch.autograd.grad) and through the native calls with preallocated outputs (the runtime's path, as the
    Rust bench calls it), in one process, on one timer (do_bench), alternating which goes first each round."""
    from triton.testing import do_bench
    ratios = []
    cap = ft._to_dlpack
    for d, n, causal, (b, h, q, k, v) in table_rows(args):
        qd, kd, vd = q.detach(), k.detach(), v.detach()
        scale, stream = d ** -0.5, ft._stream(q)
        o, m = ft._forward(qd, kd, vd, scale, causal, (-1, -1), 0.0, None)
        dq, dk, dv = (torch.empty_like(x) for x in (qd, kd, vd))
        out_ = flash_attn_func(q, k, v, causal=causal)
        dout = torch.randn_like(out_)
        paths = {
            "fwd": (lambda: _native.forward(cap(qd), cap(kd), cap(vd), cap(o), cap(m), scale, causal, -1, -1, 0.0, None, 0.0,
                                            stream, True),
                    lambda: flash_attn_func(q, k, v, causal=causal)),
            "bwd": (lambda: _native.backward(cap(dout), cap(qd), cap(kd), cap(vd), cap(o), cap(m), cap(dq), cap(dk), cap(dv),
                                             scale, causal, -1, -1, 0.0, None, False, stream, True),
                    lambda: torch.autograd.grad(out_, (q, k, v), dout, retain_graph=True)),
        }
        for kind, (native, python) in paths.items():
            t = {"native": [], "python": []}
            for r in range(args.rounds):
                for name in (("native", "python") if r % 2 == 0 else ("python", "native")):
                    t[name].append(do_bench(native if name == "native" else python, warmup=25, rep=200))
            ratio = (sum(t["python"]) / len(t["python"])) / (sum(t["native"]) / len(t["native"]))
            ratios.append(ratio)
            emit(dict(kind=kind, impl="flashgen-python-layer", B=b, H=h, N=n, D=d, causal=int(causal), dtype="bf16",
                      native_ms=t["native"], python_ms=t["python"], python_over_native=ratio, timing="do_bench"), out)
        del q, k, v, qd, kd, vd, o, m, dq, dk, dv, out_, dout, paths
        torch.cuda.empty_cache()
    if ratios:
        print(f"python/native, one process, one timer: {min(ratios):.3f} .. {max(ratios):.3f} over {len(ratios)} rows; "
              f"bar 1.03: {'met' if max(ratios) <= 1.03 else 'NOT met'}", file=sys.stderr)


def compare(args, out):
    """Python against Rust over rounds: each row's mean over the rounds on each side (the files of --rust, the
    flashgen-python rows of --python), the ratio of the means, and the spread of the per-round means."""
    def load(paths, impl=None):
        rows = {}
        for path in paths:
            for line in open(path):
                if line.startswith("{"):
                    r = json.loads(line)
                    if impl is None or r.get("impl") == impl:
                        rows.setdefault((r["kind"], r["N"], r["D"], bool(r["causal"])), []).append(r["ms"])
        return rows
    rust, python = load(args.rust or []), load(args.python or [], "flashgen-python")
    ratios = []
    for key in sorted(set(rust) & set(python)):
        r, p = sum(rust[key]) / len(rust[key]), sum(python[key]) / len(python[key])
        kind, n, d, causal = key
        row = dict(kind=kind, impl="python-over-rust", N=n, D=d, causal=int(causal), rust_ms=r, python_ms=p, python_over_rust=p / r,
                   rust_rounds=len(rust[key]), python_rounds=len(python[key]),
                   rust_spread=max(rust[key]) / min(rust[key]) - 1, python_spread=max(python[key]) / min(python[key]) - 1)
        ratios.append(p / r)
        emit(row, out)
    if ratios:
        worst = max(ratios, key=lambda x: abs(x - 1))
        print(f"python/rust (means over rounds): {min(ratios):.3f} .. {max(ratios):.3f} over {len(ratios)} rows; "
              f"bar ±3%: {'met' if abs(worst - 1) <= 0.03 else 'NOT met'}", file=sys.stderr)


def overhead(args, out):
    b, h, n, d = 1, 8, 128, 64
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(b, n, h, d, dtype=torch.bfloat16, device="cuda", generator=g) for _ in range(3))
    qg, kg, vg = (x.clone().requires_grad_() for x in (q, k, v))
    o = torch.empty_like(q)
    lse = torch.empty(b, h, n, dtype=torch.float32, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    caps = [ft._to_dlpack(x) for x in (q, k, v, o, lse)]
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    qgt, kgt, vgt = (x.transpose(1, 2) for x in (qg, kg, vg))

    def no_grad_call():
        with torch.no_grad():
            return flash_attn_func(q, k, v)

    def no_grad_alone():
        with torch.no_grad():
            pass

    paths = {
        "flash_attn_func (autograd)": lambda: flash_attn_func(qg, kg, vg),
        "flash_attn_func (no grad)": no_grad_call,
        "torch.ops.flashgen.fwd": lambda: torch.ops.flashgen.fwd(qg, kg, vg, 0.125, False, -1, -1, 0.0, None, False),
        "_native.forward (preallocated)": lambda: _native.forward(*caps, 0.125, False, -1, -1, 0.0, None, 0.0, stream, True),
        "torch SDPA (yardstick)": lambda: F.scaled_dot_product_attention(qt, kt, vt),
        "torch SDPA autograd (yardstick)": lambda: F.scaled_dot_product_attention(qgt, kgt, vgt),
    }
    if args.parts:
        # the no-grad call's pieces, each alone (no GPU work but the native call's): where its host time goes
        caps_then_call = lambda: _native.forward(*(ft._to_dlpack(x) for x in (q, k, v, o, lse)), 0.125, False, -1, -1, 0.0,
                                                 None, 0.0, ft._stream(q), True)
        paths.update({
            "part: torch.empty out + lse": lambda: (torch.empty(q.shape, dtype=q.dtype, device=q.device),
                                                   torch.empty(ft._lse_shape(q, None), dtype=torch.float32, device=q.device)),
            "part: empty_like out + new_empty lse": lambda: (torch.empty_like(q), q.new_empty((b, h, n), dtype=torch.float32)),
            "part: _to_dlpack x5": lambda: [ft._to_dlpack(x) for x in (q, k, v, o, lse)],
            "part: data_ptr+shape+stride x5": lambda: [(x.data_ptr(), x.shape, x.stride()) for x in (q, k, v, o, lse)],
            "part: _stream": lambda: ft._stream(q),
            "part: check_arguments": lambda: _native.check_arguments(False, -1, -1, 0.0, None, 0.0, None),
            "part: _check_tensors": lambda: ft._check_tensors(q, k, v),
            "part: is_compiling + grad checks": lambda: (torch.compiler.is_compiling(), torch.is_grad_enabled()
                                                         and (q.requires_grad or k.requires_grad or v.requires_grad)),
            "part: torch.no_grad context": no_grad_alone,
            "part: _native.forward, capsules per call": caps_then_call,
        })
    if args.parts:
        # the autograd.Function's own cost, in the form FlashAttnFunc had until 2026-12-03 (eleven arguments, two
        # outputs, one marked non-differentiable, seven saved) and in its form now (q, k, v and one object, one
        # output, four saved, the statistics in the object): the same two allocations, no GPU work
        class Before(torch.autograd.Function):
            @staticmethod
            def forward(ctx, q, k, v, *rest):
                out, lse = torch.empty_like(q), q.new_empty((b, h, n), dtype=torch.float32)
                ctx.save_for_backward(q, k, v, out, lse, None, None)
                ctx.args = rest
                ctx.mark_non_differentiable(lse)
                return out, lse

        class Now(torch.autograd.Function):
            @staticmethod
            def forward(ctx, q, k, v, call):
                out, lse = torch.empty_like(q), q.new_empty((b, h, n), dtype=torch.float32)
                ctx.save_for_backward(q, k, v, out)
                ctx.call = call
                call.lse = lse
                return out

        call = ft._Call(0.125, False, (-1, -1), 0.0, None, False, None, None)
        paths.update({
            "part: Function before (11 args, 2 outputs)": lambda: Before.apply(qg, kg, vg, 0.125, False, (-1, -1), 0.0, None, False, None, None),
            "part: Function now (4 args, 1 output)": lambda: Now.apply(qg, kg, vg, call),
        })
        now_c = ft._c_apply_of(Now)
        if now_c is not None:
            # the same Function through the C apply alone (`_apply_flash_attn`, outside functorch's transforms)
            paths["part: Function now, C apply"] = lambda: now_c(qg, kg, vg, call)
    calls = args.calls
    for name, f in paths.items():
        for _ in range(50):  # compile, load, allocator warm
            f()
        torch.cuda.synchronize()
        # 1 + 2: queue behind a long sleep
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(100_000_000)  # ~50 ms at the H200's clock
        e0.record()
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        host_s = time.perf_counter() - t0
        e1.record()
        behind = not e0.query()  # the GPU had not reached e0 when the host was done: no host gaps in e0..e1
        torch.cuda.synchronize()
        gpu_us = e0.elapsed_time(e1) * 1e3 / calls
        host_us = host_s * 1e6 / calls
        # 3: a plain loop from an idle GPU
        best = float("inf")
        for _ in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                f()
            torch.cuda.synchronize()
            best = min(best, (time.perf_counter() - t0) * 1e6 / calls)
        emit(dict(kind="overhead", impl=name, B=b, H=h, N=n, D=d, causal=0, dtype="bf16", calls=calls, gpu_us=gpu_us,
                  host_us=host_us, loop_us=best, above_kernel_us=max(best - gpu_us, 0.0), gpu_was_behind=behind), out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["table", "overhead", "compare", "layer"])
    p.add_argument("--rust", nargs="*", help="the Rust bench's JSON lines (flashgen bench --backward --timing do-bench --json), "
                                             "one file a round")
    p.add_argument("--python", nargs="*", help="compare: the table's JSON lines, one file a round")
    p.add_argument("--out", help="append the rows here as JSON lines")
    p.add_argument("--d", type=lambda s: [int(x) for x in s.split(",")], default=[64, 128])
    p.add_argument("--n", type=lambda s: [int(x) for x in s.split(",")], default=[1024, 4096, 16384])
    p.add_argument("--causal", type=lambda s: [bool(int(x)) for x in s.split(",")], default=[False, True])
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--rounds", type=int, default=2, help="layer: do_bench runs of each path per row, alternating")
    p.add_argument("--parts", action="store_true", help="overhead: also time the no-grad call's pieces one by one")
    args = p.parse_args()
    if args.what != "compare":
        print(f"# flashgen {flashgen.__version__} on {flashgen.device_info(torch.cuda.current_device())}, torch {torch.__version__}",
              file=sys.stderr)
    with open(args.out, "a") if args.out else open("/dev/null", "w") as out:
        {"table": table, "overhead": overhead, "compare": compare, "layer": layer}[args.what](args, out if args.out else None)


if __name__ == "__main__":
    main()
