"""Which copy mechanism streams K/V past a dirty L2 fastest (batch-1 decode: 256 programs x 128 KB, each
issued at once): cp.async (today's), cp.async.bulk per 256-byte row with and without an EVICT_FIRST
cache hint, cp.async after an L2 prefetch of the same rows by the TMA unit (cp.async.bulk.prefetch.L2) with
and without EVICT_FIRST, ld.global into registers with and without a createpolicy hint (ld's own
.L2::evict_first needs 256-bit loads: sm_100). Raw PTX through the driver API (ctypes), timed after do_bench's flush (a 256 MB
memset: dirty L2) and after a read of the same 256 MB (clean L2). On the H200: python3 bench/probes/l2_dirty_ptx.py
(bench/results/2026-12-04-decode-l2-probe)."""
import ctypes, json, sys, torch

PROG_BYTES, THREADS, GRID = 131072, 128, 256
HEAD = ".version 8.0\n.target sm_90a\n.address_size 64\n.extern .shared .align 1024 .b8 smem[];\n"

def entry(name, body):
    return f""".visible .entry {name}(.param .u64 src, .param .u64 out)
{{
  .reg .u64 %rd<40>; .reg .u32 %r<200>; .reg .pred %p<4>; .reg .b64 %pol;
  ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x;
  mul.wide.u32 %rd3, %r2, {PROG_BYTES}; add.u64 %rd4, %rd1, %rd3;
  mov.u32 %r3, smem;
{body}
  mul.wide.u32 %rd30, %r2, {THREADS * 4}; add.u64 %rd31, %rd2, %rd30;
  mul.wide.u32 %rd32, %r1, 4; add.u64 %rd33, %rd31, %rd32;
  st.global.u32 [%rd33], %r99;
  ret;
}}
"""

def cpasync():
    return f"""  mul.wide.u32 %rd5, %r1, 16; add.u64 %rd6, %rd4, %rd5;
  shl.b32 %r4, %r1, 4; add.u32 %r5, %r3, %r4; mov.u32 %r6, 0;
CP:
  cp.async.cg.shared.global [%r5], [%rd6], 16;
  add.u64 %rd6, %rd6, {THREADS * 16}; add.u32 %r5, %r5, {THREADS * 16}; add.u32 %r6, %r6, 1;
  setp.lt.u32 %p1, %r6, {PROG_BYTES // THREADS // 16}; @%p1 bra CP;
  cp.async.wait_all; bar.sync 0;
  shl.b32 %r7, %r1, 2; add.u32 %r8, %r3, %r7; ld.shared.u32 %r99, [%r8];"""

def bulk(hint):
    rows = PROG_BYTES // 256 // THREADS
    copy = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes" + (".L2::cache_hint" if hint else "")
    pol = ", %pol" if hint else ""
    issue = "\n".join(f"""  {copy} [%r{20+i}], [%rd{10+i}], 256, [%r3]{pol};""" for i in range(rows))
    addrs = "\n".join(f"""  add.u64 %rd{10+i}, %rd6, {i * THREADS * 256}; add.u32 %r{20+i}, %r5, {i * THREADS * 256};""" for i in range(rows))
    return f"""  mov.b64 %pol, 0x12F0000000000000;
  setp.eq.u32 %p2, %r1, 0;
  @%p2 mbarrier.init.shared.b64 [%r3], 1;
  fence.mbarrier_init.release.cluster; fence.proxy.async.shared::cta;
  @%p2 mbarrier.arrive.expect_tx.shared.b64 %rd20, [%r3], {PROG_BYTES};
  bar.sync 0;
  mul.wide.u32 %rd5, %r1, 256; add.u64 %rd6, %rd4, %rd5;
  shl.b32 %r4, %r1, 8; add.u32 %r9, %r3, 1024; add.u32 %r5, %r9, %r4;
{addrs}
{issue}
WAIT:
  mbarrier.try_wait.parity.shared.b64 %p1, [%r3], 0;
  @!%p1 bra WAIT;
  bar.sync 0;
  shl.b32 %r7, %r1, 2; add.u32 %r8, %r9, %r7; ld.shared.u32 %r99, [%r8];"""

def prefetch_then_cpasync(hint):
    """cp.async as today, each thread first asking the TMA unit to prefetch its rows into L2
    (cp.async.bulk.prefetch.L2, 256 bytes a request as the decode's rows), with or without EVICT_FIRST."""
    rows = PROG_BYTES // 256 // THREADS
    op = "cp.async.bulk.prefetch.L2.global" + (".L2::cache_hint" if hint else "")
    pol = ", %pol" if hint else ""
    issue = "\n".join(f"  {op} [%rd{10+i}], 256{pol};" for i in range(rows))
    addrs = "\n".join(f"  add.u64 %rd{10+i}, %rd7, {i * THREADS * 256};" for i in range(rows))
    return f"""  mov.b64 %pol, 0x12F0000000000000;
  mul.wide.u32 %rd8, %r1, 256; add.u64 %rd7, %rd4, %rd8;
{addrs}
{issue}
""" + cpasync()


def ld(qual, policy=False):
    per = PROG_BYTES // THREADS // 16  # 64 loads of 16 bytes
    batch = 16
    pol = ", %pol" if policy else ""
    lines = ["  mul.wide.u32 %rd5, %r1, 16; add.u64 %rd6, %rd4, %rd5; mov.u32 %r99, 0;"]
    if policy:
        lines.append("  createpolicy.fractional.L2::evict_first.b64 %pol, 1.0;")
    for b in range(per // batch):
        for i in range(batch):
            off = (b * batch + i) * THREADS * 16
            lines.append(f"  ld.global{qual}.v4.u32 {{%r{100+4*i}, %r{101+4*i}, %r{102+4*i}, %r{103+4*i}}}, [%rd6+{off}]{pol};")
        for i in range(batch * 4):
            lines.append(f"  xor.b32 %r99, %r99, %r{100+i};")
    return "\n".join(lines)

VARIANTS = {
    "cp_async": cpasync(),
    "bulk": bulk(False),
    "bulk_evict_first": bulk(True),
    "prefetch_cp_async": prefetch_then_cpasync(False),
    "prefetch_ef_cp_async": prefetch_then_cpasync(True),
    "ld": ld(".L1::no_allocate"),
    "ld_policy": ld(".L1::no_allocate.L2::cache_hint", policy=True),
}

def main():
    torch.cuda.init(); torch.zeros(1, device="cuda"); torch.cuda.synchronize()
    cu = ctypes.CDLL("libcuda.so.1")
    ptx = HEAD + "".join(entry(n, b) for n, b in VARIANTS.items())
    open(sys.argv[1] if len(sys.argv) > 1 else "/tmp/probe.ptx", "w").write(ptx)
    mod = ctypes.c_void_p()
    log = ctypes.create_string_buffer(1 << 16)
    opts = (ctypes.c_int * 2)(5, 6)  # CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
    vals = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), ctypes.c_void_p(1 << 16))
    rc = cu.cuModuleLoadDataEx(ctypes.byref(mod), ctypes.c_char_p(ptx.encode()), 2, opts, vals)
    if rc:
        print("load failed", rc, log.value.decode()); return
    n = PROG_BYTES * GRID
    x = torch.randint(0, 1 << 30, (n // 4,), dtype=torch.int32, device="cuda")
    out = torch.zeros(GRID * THREADS, dtype=torch.int32, device="cuda")
    cache = torch.empty(256_000_000 // 4, dtype=torch.int32, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    ref = None
    for name in VARIANTS:
        f = ctypes.c_void_p()
        assert cu.cuModuleGetFunction(ctypes.byref(f), mod, name.encode()) == 0
        smem = PROG_BYTES + 1024
        assert cu.cuFuncSetAttribute(f, 8, smem) == 0
        a, b = ctypes.c_uint64(x.data_ptr()), ctypes.c_uint64(out.data_ptr())
        params = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(a), ctypes.c_void_p), ctypes.cast(ctypes.byref(b), ctypes.c_void_p))
        launch = lambda: cu.cuLaunchKernel(f, GRID, 1, 1, THREADS, 1, 1, smem, ctypes.c_void_p(stream), params, None)
        out.zero_(); rc = launch(); torch.cuda.synchronize()
        if rc:
            print(name, "launch rc", rc); continue
        if name in ("cp_async", "bulk", "bulk_evict_first"):
            # the first word of each thread's 16 bytes (cp.async) / of its row (bulk) must arrive
            pass
        for flush in ("dirty", "clean"):
            ts = []
            for _ in range(400):
                if flush == "dirty":
                    cache.zero_()
                else:
                    cache.sum()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); launch(); e.record(); ts.append((s, e))
            torch.cuda.synchronize()
            us = [s.elapsed_time(e) * 1e3 for s, e in ts][50:]
            mean = sum(us) / len(us)
            rows.append(dict(variant=name, flush=flush, mean_us=round(mean, 2), gb_s=round(n / mean / 1e3, 1)))
            print(json.dumps(rows[-1]), flush=True)
    print(f"{'variant':18s} flush   mean_us   GB/s")
    for r in rows:
        print(f"{r['variant']:18s} {r['flush']:6s} {r['mean_us']:8.2f} {r['gb_s']:7.1f}")

main()
