//! Run a kernel's LLVM IR on the CPU: a SIMT emulator for the CPU tests of kernels no GPU here can run.
//!
//! The kernel's rendered IR is retargeted to x86-64 (its @llvm.nvvm.* intrinsics renamed to the stand-ins of
//! wrappers.ll, which call emu.c; shared memory one static array), optimized with opt and compiled with llc,
//! linked with emu.c and a generated main that loads the buffers, runs the grid one CTA at a time (each GPU
//! thread a pthread; warp instructions exchange operands at warp barriers; cp.async copies are done at the
//! wait_group that must have completed them) and writes the buffers back. Tools: opt-19 and llc-19 (Debian's
//! llvm-19, which scripts/setup.sh installs) and a C compiler (cc); `tools()` is None without them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A kernel argument: a buffer (by index: its host address in the emulated run), a null pointer, a scalar.
#[derive(Clone, Copy, Debug)]
#[allow(dead_code)] // (each test binary that includes this module uses some of the kinds)
pub enum Arg {
    Buf(usize),
    /// A buffer's address `bytes` past its start (a view into the middle of a tensor).
    BufAt(usize, usize),
    Null,
    I64(i64),
    F32(f32),
    I32(i32),
}

/// One grid launch.
pub struct Launch {
    pub ir: String,
    pub entry: String,
    pub args: Vec<Arg>,
    pub grid: (u32, u32, u32),
    pub threads: u32,
}

/// The tools, if this machine has them.
pub struct Tools {
    opt: PathBuf,
    llc: PathBuf,
}

fn find(names: &[&str]) -> Option<PathBuf> {
    for n in names {
        for dir in ["/usr/bin", "/usr/lib/llvm-19/bin", "/usr/local/bin"] {
            let p = Path::new(dir).join(n);
            if p.exists() {
                return Some(p);
            }
        }
    }
    None
}

pub fn tools() -> Option<Tools> {
    let (opt, llc) = (find(&["opt-19", "opt"])?, find(&["llc-19", "llc"])?);
    Command::new("cc").arg("--version").output().ok().filter(|o| o.status.success())?;
    Some(Tools { opt, llc })
}

/// The modifiers' tensor slots (flashgen::abi::modifier_tensors) of a kernel without score_mod or mask_mod:
/// null, which such kernels never read.
#[allow(dead_code)] // (the decode kernels, the other user of this module, have no modifier slots)
pub fn no_modifier_tensors() -> [(&'static str, Arg); 4] {
    [("MOD_TENSOR0", Arg::Null), ("MOD_TENSOR1", Arg::Null), ("MOD_TENSOR2", Arg::Null), ("MOD_TENSOR3", Arg::Null)]
}

/// The geometry group of the kernel ABI (`flashgen::abi`) for fixed lengths: `z` sequences of `n_q` queries
/// and `n_kv` keys, `h` query heads on `h_kv` K/V heads, the causal diagonal bottom-right, no packed offsets.
#[allow(dead_code)] // (the ring's merges take no geometry)
pub fn fixed_geometry(z: usize, h: usize, h_kv: usize, n_q: usize, n_kv: usize) -> [(&'static str, Arg); 12] {
    [
        ("Z", Arg::I32(z as i32)),
        ("H", Arg::I32(h as i32)),
        ("H_KV", Arg::I32(h_kv as i32)),
        ("N_Q", Arg::I32(n_q as i32)),
        ("N_KV", Arg::I32(n_kv as i32)),
        ("ALIGN", Arg::I32(1)),
        ("CU_SEQLENS_Q", Arg::Null),
        ("CU_SEQLENS_K", Arg::Null),
        ("TOTAL_Q", Arg::I32((z * n_q) as i32)),
        ("TOTAL_K", Arg::I32((z * n_kv) as i32)),
        // (no window: the window kernels' unbounded sides, which the others ignore)
        ("WINDOW_LEFT", Arg::I32(1 << 30)),
        ("WINDOW_RIGHT", Arg::I32(0)),
    ]
}

/// `tools()`, saying on stderr why a test skips without them.
pub fn tools_or_skip() -> Option<Tools> {
    let t = tools();
    if t.is_none() {
        eprintln!("SKIPPED: opt-19/llc-19 or cc not found (scripts/setup.sh installs llvm-19)");
    }
    t
}

const X86_LAYOUT: &str = "target datalayout = \"e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128\"";
const X86_TRIPLE: &str = "target triple = \"x86_64-unknown-linux-gnu\"";
/// Bytes of the emulated shared memory (the largest opt-in on any target is 227 KB).
const SMEM_BYTES: usize = 262_144;

/// Inline PTX of the templates and the wrappers.ll functions that stand in for it.
const INLINE_PTX: [(&str, &str); 10] = [
    (r#"asm "tanh.approx.f32 $0, $1;", "=f,f""#, "@emu.tanh"),
    // the emulator runs a grid to its end before the next launch: the overlapped launch's pair is a no-op
    (r#"asm sideeffect "griddepcontrol.launch_dependents;", """#, "@emu.griddepcontrol"),
    (r#"asm sideeffect "griddepcontrol.wait;", "~{memory}""#, "@emu.griddepcontrol"),
    (r#"asm sideeffect "fence.acq_rel.gpu;", "~{memory}""#, "@emu.fence"),
    // the decode kernel's bulk copies (Schedule::bulk_kv): mbarriers with transaction counts, copies that
    // land when a thread waits on their barrier (emu.c)
    (r#"asm sideeffect "mbarrier.init.shared::cta.b64 [$0], 1;", "l,~{memory}""#, "@emu.mbar_init"),
    (r#"asm sideeffect "fence.mbarrier_init.release.cluster;", "~{memory}""#, "@emu.fence"),
    (r#"asm sideeffect "fence.proxy.async.shared::cta;", "~{memory}""#, "@emu.fence"),
    (r#"asm sideeffect "{\0A\09.reg .b64 st;\0A\09mbarrier.arrive.expect_tx.shared::cta.b64 st, [$0], $1;\0A\09}", "l,r,~{memory}""#, "@emu.mbar_expect_tx"),
    (r#"asm sideeffect "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [$0], [$1], $2, [$3], $4;", "l,l,r,l,l,~{memory}""#, "@emu.bulk_copy"),
    (r#"asm sideeffect "{\0A\09.reg .pred p;\0A\09mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\0A\09selp.u32 $0, 1, 0, p;\0A\09}", "=r,l,r,~{memory}""#, "@emu.mbar_try_wait"),
];

/// The kernel's IR for x86-64 with the emulator's intrinsics.
pub fn retarget(ir: &str) -> String {
    let mut out = String::new();
    for line in ir.lines() {
        let l = line.trim_start();
        if l.starts_with("target datalayout") {
            out.push_str(X86_LAYOUT);
        } else if l.starts_with("target triple") {
            out.push_str(X86_TRIPLE);
        } else if l.starts_with("@smem = external") {
            let _ = write!(out, "@smem = internal addrspace(3) global [{SMEM_BYTES} x i8] zeroinitializer, align 128");
        } else if l.starts_with("declare") && l.contains("@llvm.nvvm.") {
            continue;
        } else {
            // the PTX the templates write inline (softcap's tanh, the decode pair's launch overlap) as calls of stand-ins
            let line = INLINE_PTX.iter().fold(line.to_string(), |l, (asm, stand_in)| l.replace(asm, stand_in));
            out.push_str(&line.replace("@llvm.nvvm.", "@emu.nvvm."));
        }
        out.push('\n');
    }
    out.push_str(include_str!("wrappers.ll"));
    out
}

fn c_type(a: &Arg) -> &'static str {
    match a {
        Arg::Buf(_) | Arg::BufAt(..) | Arg::Null => "void *",
        Arg::I64(_) => "long long",
        Arg::F32(_) => "float",
        Arg::I32(_) => "int",
    }
}

fn c_value(a: &Arg) -> String {
    match a {
        Arg::Buf(i) => format!("B[{i}]"),
        Arg::BufAt(i, bytes) => format!("(void *)((char *)B[{i}] + {bytes})"),
        Arg::Null => "(void *)0".into(),
        Arg::I64(v) => format!("{v}LL"),
        Arg::F32(v) => format!("f32_of(0x{:08x}u)", v.to_bits()),
        Arg::I32(v) => format!("({v})"),
    }
}

fn sh(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{what} failed: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)));
    }
    Ok(())
}

/// Run `launches` in order on `buffers` (their bytes are the device memory; they are updated in place).
pub fn run(tools: &Tools, launches: &[Launch], buffers: &mut [Vec<u8>]) -> Result<(), String> {
    static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("flashgen-simt-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut objects = Vec::new();
    let mut main = String::from("#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n");
    main.push_str("typedef void (*Launch)(void);\nvoid emu_run_grid(int, int, int, int, Launch);\nvoid emu_register(const void *, size_t);\n");
    main.push_str("static float f32_of(unsigned u) { float f; memcpy(&f, &u, 4); return f; }\n");
    let _ = writeln!(main, "static void *B[{}];", buffers.len().max(1));
    // (a module compiled once however many launches run its entries)
    let mut compiled: Vec<&str> = Vec::new();
    let mut declared: Vec<&str> = Vec::new();
    for (i, l) in launches.iter().enumerate() {
        if !compiled.contains(&l.ir.as_str()) {
            compiled.push(&l.ir);
            let ll = dir.join(format!("k{i}.ll"));
            std::fs::write(&ll, retarget(&l.ir)).map_err(|e| e.to_string())?;
            let bc = dir.join(format!("k{i}.bc"));
            sh(Command::new(&tools.opt).arg("-O2").arg(&ll).arg("-o").arg(&bc), "opt")?;
            let obj = dir.join(format!("k{i}.o"));
            sh(Command::new(&tools.llc).args(["-O2", "-relocation-model=pic", "-filetype=obj"]).arg(&bc).arg("-o").arg(&obj), "llc")?;
            objects.push(obj);
        }
        let types: Vec<&str> = l.args.iter().map(c_type).collect();
        let values: Vec<String> = l.args.iter().map(c_value).collect();
        if !declared.contains(&l.entry.as_str()) {
            declared.push(&l.entry);
            let _ = writeln!(main, "extern void {}({});", l.entry, types.join(", "));
        }
        let _ = writeln!(main, "static void launch{i}(void) {{ {}({}); }}", l.entry, values.join(", "));
    }
    main.push_str("int main(void) {\n");
    for (i, b) in buffers.iter().enumerate() {
        let size = b.len().max(1).next_multiple_of(128);
        let _ = writeln!(main, "  B[{i}] = aligned_alloc(128, {size}); {{ FILE *f = fopen(\"in{i}.bin\", \"rb\"); if (!f || fread(B[{i}], 1, {}, f) != {}) return 2; fclose(f); }} emu_register(B[{i}], {});", b.len(), b.len(), b.len());
    }
    for (i, l) in launches.iter().enumerate() {
        let _ = writeln!(main, "  emu_run_grid({}, {}, {}, {}, launch{i});", l.grid.0, l.grid.1, l.grid.2, l.threads);
    }
    for (i, b) in buffers.iter().enumerate() {
        let _ = writeln!(main, "  {{ FILE *f = fopen(\"out{i}.bin\", \"wb\"); if (!f || fwrite(B[{i}], 1, {}, f) != {}) return 3; fclose(f); }}", b.len(), b.len());
    }
    main.push_str("  return 0;\n}\n");
    std::fs::write(dir.join("main.c"), main).map_err(|e| e.to_string())?;
    for (i, b) in buffers.iter().enumerate() {
        std::fs::write(dir.join(format!("in{i}.bin")), b).map_err(|e| e.to_string())?;
    }
    let emu = Path::new(env!("CARGO_MANIFEST_DIR")).join("simt/emu.c");
    let exe = dir.join("run");
    sh(Command::new("cc").args(["-O2", "-pthread"]).arg(dir.join("main.c")).arg(&emu).args(&objects).args(["-lm", "-o"]).arg(&exe), "cc")?;
    sh(Command::new(&exe).current_dir(&dir), "the emulated run")?;
    for (i, b) in buffers.iter_mut().enumerate() {
        *b = std::fs::read(dir.join(format!("out{i}.bin"))).map_err(|e| e.to_string())?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

// ---- the buffers' bytes: elements of the tensors' dtypes and f32 (shared by the emulator tests) ----

#[allow(dead_code)]
pub fn bits(dtype: flashgen::DType, x: f32) -> u16 {
    match dtype {
        flashgen::DType::Bf16 => half::bf16::from_f32(x).to_bits(),
        flashgen::DType::F16 => half::f16::from_f32(x).to_bits(),
    }
}
#[allow(dead_code)]
pub fn value(dtype: flashgen::DType, b: u16) -> f32 {
    match dtype {
        flashgen::DType::Bf16 => half::bf16::from_bits(b).to_f32(),
        flashgen::DType::F16 => half::f16::from_bits(b).to_f32(),
    }
}
#[allow(dead_code)]
pub fn bytes16(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
#[allow(dead_code)]
pub fn bytes32<T: Copy + Into<f64>>(v: &[T], f: impl Fn(T) -> [u8; 4]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}
#[allow(dead_code)]
pub fn u16s(b: &[u8]) -> Vec<u16> {
    b.chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()
}
#[allow(dead_code)]
pub fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}
