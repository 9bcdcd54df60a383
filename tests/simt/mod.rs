//! Run a kernel's LLVM IR on the CPU: a SIMT emulator for the CPU tests of kernels no GPU here can run.
//!
//! The kernel's rendered IR is retargeted to x86-64 (its @llvm.nvvm.* intrinsics renamed to the stand-ins of
//! wrappers.ll, which call emu.c; shared memory one static array), optimized with opt and compiled with llc,
//! linked with emu.c and a generated main that loads the buffers, runs the grid one CTA at a time or (a
//! launch's `together`) every CTA at once, a forked process each over shared device memory (each GPU
//! thread a pthread; warp instructions exchange operands at warp barriers; cp.async copies are done at the
//! wait_group that must have completed them) and writes the buffers back. Tools: opt-19 and llc-19 (Debian's
//! llvm-19, which scripts/setup.sh installs) and a C compiler (cc); `tools()` is None without them.
//!
//! The Hopper kernels' inline PTX becomes calls too: fixed texts through the tables below, the rest through
//! functions generated per asm (`AsmCall`: a kernel parameter's address, named barriers, wgmma chains with
//! their predicates and branches, the fused backward's bulk copies and chains' acquire/release). PTX the
//! emulator does not know panics with its text rather than compiling into something else.

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
    /// A TMA tensor map (emu.c's EmuMap, standing in for the driver's CUtensorMap) over buffer `buf` from
    /// `offset` bytes: `dims` innermost first, the byte strides of dims 1..3, boxes of 64 elements × `box_rows`
    /// rows of `elem`-byte elements.
    TensorMap { buf: usize, offset: usize, dims: [u64; 4], strides: [u64; 3], box_rows: u32, elem: u32 },
}

/// One grid launch.
pub struct Launch {
    pub ir: String,
    pub entry: String,
    pub args: Vec<Arg>,
    pub grid: (u32, u32, u32),
    pub threads: u32,
    /// Run every CTA at once (a process each: its own shared memory, device memory common), for grids whose
    /// programs wait on programs launched after them; otherwise one CTA after another, in launch order.
    pub together: bool,
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
const INLINE_PTX: [(&str, &str); 6] = [
    (r#"asm "tanh.approx.f32 $0, $1;", "=f,f""#, "@emu.tanh"),
    // the emulator runs a grid to its end before the next launch: the overlapped launch's pair is a no-op
    (r#"asm sideeffect "griddepcontrol.launch_dependents;", """#, "@emu.griddepcontrol"),
    (r#"asm sideeffect "griddepcontrol.wait;", "~{memory}""#, "@emu.griddepcontrol"),
    (r#"asm sideeffect "fence.acq_rel.gpu;", "~{memory}""#, "@emu.fence"),
    (r#"asm sideeffect "fence.mbarrier_init.release.cluster;", "~{memory}""#, "@emu.fence"),
    (r#"asm sideeffect "fence.proxy.async.shared::cta;", "~{memory}""#, "@emu.fence"),
];

/// The Hopper kernels' inline PTX of fixed text and the hopper.ll functions that stand in for it (shared
/// addresses as i32).
const HOPPER_PTX: [(&str, &str); 14] = [
    (r#"asm sideeffect "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}""#, "@emu.hop.mbar_init"),
    (r#"asm sideeffect "{\0A\09.reg .b64 st;\0A\09mbarrier.arrive.expect_tx.shared::cta.b64 st, [$0], $1;\0A\09}", "r,r,~{memory}""#, "@emu.hop.mbar_expect_tx"),
    (r#"asm sideeffect "{\0A\09.reg .b64 st;\0A\09mbarrier.arrive.shared::cta.b64 st, [$0];\0A\09}", "r,~{memory}""#, "@emu.hop.mbar_arrive"),
    (r#"asm sideeffect "{\0A\09.reg .pred p;\0A\09mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\0A\09selp.u32 $0, 1, 0, p;\0A\09}", "=r,r,r,~{memory}""#, "@emu.hop.mbar_try_wait"),
    (r#"asm sideeffect "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3, $4, $5}], [$6];", "r,l,r,r,r,r,r,~{memory}""#, "@emu.hop.tma_load"),
    // (the decode kernel's boxes carry an L2 policy, which the emulator has no cache to apply)
    (r#"asm sideeffect "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [$0], [$1, {$2, $3, $4, $5}], [$6], $7;", "r,l,r,r,r,r,r,l,~{memory}""#, "@emu.hop.tma_load_hint"),
    (r#"asm sideeffect "ld.shared.u32 $0, [$1];", "=r,r,~{memory}""#, "@emu.hop.ld_shared"),
    (r#"asm sideeffect "st.shared.u32 [$0], $1;", "r,r,~{memory}""#, "@emu.hop.st_shared"),
    (r#"asm sideeffect "atom.acq_rel.gpu.global.add.u32 $0, [$1], 1;", "=r,l,~{memory}""#, "@emu.hop.atom_add1"),
    (r#"asm sideeffect "atom.relaxed.gpu.global.add.u32 $0, [$1], 1;", "=r,l,~{memory}""#, "@emu.hop.atom_add1"),
    (r#"asm sideeffect "st.relaxed.gpu.global.u32 [$0], 0;\0A\09st.relaxed.gpu.global.u32 [$1], 0;", "l,l,~{memory}""#, "@emu.hop.store_zero2"),
    // wgmma runs where it is issued (emu_wgmma), so its fence and commit have nothing to order
    (r#"asm sideeffect "wgmma.fence.sync.aligned;", "~{memory}""#, "@emu.hop.nop"),
    (r#"asm sideeffect "wgmma.commit_group.sync.aligned;", "~{memory}""#, "@emu.hop.nop"),
    // (an L2 prefetch: the emulator has no cache, but the address must be one the kernel may read)
    (r#"asm sideeffect "cp.async.bulk.prefetch.L2.global [$0], $1;", "l,r,~{memory}""#, "@emu.hop.prefetch"),
];

/// The kernel's IR for x86-64 with the emulator's intrinsics.
pub fn retarget(ir: &str) -> String {
    let hopper = ir.contains("@smem = external");
    let params = parameter_names(ir);
    let mut generated = String::new();
    let mut out = String::new();
    for line in asm_calls_joined(ir) {
        let line = line.as_str();
        let l = line.trim_start();
        if l.starts_with("target datalayout") {
            out.push_str(X86_LAYOUT);
        } else if l.starts_with("target triple") {
            out.push_str(X86_TRIPLE);
        } else if l.starts_with("@smem = external") {
            // (256 KB aligned: emu.c finds a shared address's bytes from its low bits, wgmma's descriptors from 18)
            let _ = write!(out, "@smem = internal addrspace(3) global [{SMEM_BYTES} x i8] zeroinitializer, align {SMEM_BYTES}");
        } else if l.starts_with("declare") && l.contains("@llvm.nvvm.") {
            continue;
        } else {
            // the PTX the templates write inline (softcap's tanh, the decode pair's launch overlap, the Hopper
            // kernels' barriers, copies and wgmma) as calls of stand-ins
            let line = INLINE_PTX.iter().chain(if hopper { HOPPER_PTX.as_slice() } else { &[] }).fold(line.to_string(), |l, (asm, stand_in)| l.replace(asm, stand_in));
            // (a CUtensorMap parameter: a pointer to the emulator's map, its address what the kernel reads)
            let line = line.replace("ptr byval([128 x i8]) align 64 %", "ptr %");
            let line = match AsmCall::parse(&line) {
                Some(call) => call.stand_in(&line, &params, &mut generated),
                None => line,
            };
            out.push_str(&line.replace("@llvm.nvvm.", "@emu.nvvm."));
        }
        out.push('\n');
    }
    out.push_str(include_str!("wrappers.ll"));
    if hopper {
        out.push_str(include_str!("hopper.ll"));
    }
    out.push_str(&generated);
    out
}

/// The IR's lines, an inline asm whose text spans lines (the templates' narrowed wgmma chains) joined into
/// one (the line breaks in its PTX dropped: its statements are separated by \0A\09).
fn asm_calls_joined(ir: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut open = false;
    for line in ir.lines() {
        if open {
            lines.last_mut().unwrap().push_str(line);
        } else {
            lines.push(line.to_string());
        }
        let last = lines.last().unwrap();
        open = last.contains(" asm ") && last.matches('"').count() % 2 == 1;
    }
    lines
}

/// The kernel's parameter names in order (`%name` of its define), for the asm that reads parameter i.
fn parameter_names(ir: &str) -> Vec<String> {
    let Some(start) = ir.find("\ndefine ") else { return Vec::new() };
    let header = &ir[start..];
    let open = header.find('(').unwrap_or(0);
    let close = header.find(") {").unwrap_or(open);
    header[open + 1..close].split(',').filter_map(|p| p.split_whitespace().last().map(|n| n.trim_start_matches('%').to_string())).collect()
}

/// One inline-asm call that no fixed stand-in replaced: `call RET asm [sideeffect] "TEXT", "CONS"(ARGS)`.
struct AsmCall<'a> {
    /// The call's byte range in its line (from `call ` to the argument list's `)`).
    range: std::ops::Range<usize>,
    ret: &'a str,
    text: &'a str,
    cons: &'a str,
    /// (type, value) of each argument.
    args: Vec<(&'a str, &'a str)>,
}

impl<'a> AsmCall<'a> {
    fn parse(line: &'a str) -> Option<AsmCall<'a>> {
        let at = line.find(" asm ")?;
        let call = line[..at].rfind("call ")?;
        let ret = &line[call + 5..at];
        let rest = &line[at + 5..];
        let q = rest.find('"')?;
        let body = &rest[q + 1..];
        let text_end = body.find("\", \"")?;
        let text = &body[..text_end];
        let cons_body = &body[text_end + 4..];
        let cons_end = cons_body.find("\"(")?;
        let cons = &cons_body[..cons_end];
        let args_body = &cons_body[cons_end + 2..];
        // (the argument list's own `)`: types may hold parentheses, `ptr addrspace(1)`)
        let mut depth = 0;
        let args_end = args_body.char_indices().find_map(|(i, ch)| match ch {
            '(' => {
                depth += 1;
                None
            }
            ')' if depth == 0 => Some(i),
            ')' => {
                depth -= 1;
                None
            }
            _ => None,
        })?;
        let args = if args_body[..args_end].trim().is_empty() {
            Vec::new()
        } else {
            args_body[..args_end].split(", ").map(|a| a.trim().rsplit_once(' ').expect("an asm argument is `type value`")).collect()
        };
        let end = line.len() - args_body.len() + args_end + 1;
        Some(AsmCall { range: call..end, ret, text, cons, args })
    }

    /// The line with this call replaced by a call of a generated function (appended to `defs`) that does what
    /// the PTX does: a kernel parameter's address, a named barrier, setmaxnreg (nothing), or a chain of wgmma
    /// and its waits. Other PTX panics, naming itself: the emulator does not know it.
    fn stand_in(&self, line: &str, params: &[String], defs: &mut String) -> String {
        let replaced = |callee: &str| format!("{}call {} {callee}{}", &line[..self.range.start], self.ret, &line[self.range.end..]);
        if let Some(i) = self.text.find("_param_") {
            let index: usize = self.text[i + 7..].split(';').next().and_then(|n| n.parse().ok()).expect("a parameter index");
            return replaced(&format!("@emu.hop.param(ptr %{})", params[index]));
        }
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let name = format!("@emu.asm.{}", COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let params: Vec<String> = self.args.iter().enumerate().map(|(i, (t, _))| format!("{t} %a{i}")).collect();
        let body = if self.text.starts_with("setmaxnreg.") {
            "  ret void\n".to_string()
        } else if let Some(b) = self.named_barrier() {
            b
        } else if self.text.contains("wgmma.") {
            self.wgmma_chain()
        } else if let Some(b) = self.memory_op() {
            b
        } else {
            panic!("the emulator has no stand-in for this inline PTX: \"{}\", \"{}\"", self.text, self.cons);
        };
        let _ = writeln!(defs, "define internal {} {name}({}) {{\nentry:\n{body}}}", self.ret, params.join(", "));
        let values: Vec<String> = self.args.iter().map(|(t, v)| format!("{t} {v}")).collect();
        replaced(&format!("{name}({})", values.join(", ")))
    }

    /// `%aK` for operand `$k` (outputs come first in the numbering).
    fn operand(&self, token: &str) -> String {
        let outputs = self.cons.split(',').filter(|c| c.starts_with('=')).count();
        let k: usize = token.trim().trim_start_matches('$').parse().unwrap_or_else(|_| panic!("operand {token} in {}", self.text));
        format!("%a{}", k - outputs)
    }

    /// The fused backward's other PTX: special registers, register moves, bulk copies out of shared memory
    /// (done at once: their waits are then nothing), cp.async's arrival on an mbarrier, the ordered chains'
    /// acquire / release, vector and swizzled stores to shared memory.
    fn memory_op(&self) -> Option<String> {
        let t = self.text;
        let smem = "  %s = call ptr @emu.smem()\n";
        // (argument i as a generic pointer %{name}: the asm's "l" operand is an i64 or a pointer)
        let global = |i: usize, name: &str| -> String {
            match self.args[i].0 {
                "i64" => format!("  %{name} = inttoptr i64 %a{i} to ptr\n"),
                "ptr" => format!("  %{name} = getelementptr i8, ptr %a{i}, i64 0\n"),
                t => format!("  %{name} = addrspacecast {t} %a{i} to ptr\n"),
            }
        };
        // (argument i, a shared address, as a generic pointer %{name}: an i32 or a `ptr addrspace(3)`)
        let shared = |i: usize, name: &str| -> String {
            match self.args[i].0 {
                "i32" => format!("  %{name} = call ptr @emu_sh(ptr %s, i32 %a{i})\n"),
                t => format!("  %{name} = addrspacecast {t} %a{i} to ptr\n"),
            }
        };
        // (a constant, or an operand $k: the asm's argument k)
        let bulk_bytes = |t: &str| -> String {
            let bytes = t.split("], ").nth(2).and_then(|x| x.split(';').next()).expect("bulk copy bytes");
            bytes.strip_prefix('$').map_or_else(|| bytes.to_string(), |k| format!("%a{k}"))
        };
        let body = if let Some(reg) = t.strip_prefix("mov.u32 $0, %").map(|r| r.trim_end_matches(';')) {
            let f = match reg {
                "tid.x" => "@emu_tid",
                "ctaid.x" => "@emu_ctaid_x",
                "ctaid.y" => "@emu_ctaid_y",
                "nctaid.x" => "@emu_nctaid_x",
                _ => return None,
            };
            format!("  %r = call i32 {f}()\n  ret i32 %r\n")
        } else if t == "mov.u32 $0, $1;" || t == "mov.b64 $0, $1;" {
            format!("  ret {} %a0\n", self.ret)
        } else if t.starts_with("cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], ") {
            format!("{smem}{}{}  call void @emu_bulk_store(ptr %g, ptr %h, i32 {})\n  ret void\n", global(0, "g"), shared(1, "h"), bulk_bytes(t))
        } else if t.starts_with("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], ") {
            format!("{smem}{}{}  call void @emu_bulk_reduce_add_f32(ptr %g, ptr %h, i32 {})\n  ret void\n", global(0, "g"), shared(1, "h"), bulk_bytes(t))
        } else if t.starts_with("cp.async.bulk.wait_group") {
            "  ret void\n".to_string()
        } else if t == "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];" {
            format!("{smem}{}  call void @emu_cp_arrive_noinc(ptr %h)\n  ret void\n", shared(0, "h"))
        } else if t == "ld.acquire.gpu.global.b32 $0, [$1];" {
            format!("{}  %r = call i32 @emu_ld_acquire(ptr %p)\n  ret i32 %r\n", global(0, "p"))
        } else if t == "st.release.gpu.global.b32 [$0], $1;" {
            format!("{}  call void @emu_st_release(ptr %p, i32 %a1)\n  ret void\n", global(0, "p"))
        } else if t == "st.shared.v4.f32 [$0], {$1, $2, $3, $4};" {
            format!("{smem}{}  call void @emu_st_shared_v4f32(ptr %h, float %a1, float %a2, float %a3, float %a4)\n  ret void\n", shared(0, "h"))
        } else if let Some(rest) = t.strip_prefix("{\\0A\\09.reg .b32 a;\\0A\\09xor.b32 a, $0, ") {
            // st.shared.b32 [a + offset], $k for a = $0 ^ constant
            let mut stmts = rest.split("\\0A\\09");
            let x = stmts.next()?.trim_end_matches(';');
            let mut b = format!("{smem}  %a = xor i32 %a0, {x}\n");
            for (i, st) in stmts.filter_map(|s| s.strip_prefix("st.shared.b32 [a+")).enumerate() {
                let (off, v) = st.trim_end_matches(';').split_once("], ")?;
                let _ = writeln!(b, "  %at{i} = add i32 %a, {off}\n  call void @emu_st_shared_u32(ptr %s, i32 %at{i}, i32 {})", self.operand(v));
            }
            b + "  ret void\n"
        } else {
            return None;
        };
        Some(body)
    }

    /// bar.sync / bar.arrive / barrier.sync / barrier.arrive with an id ($k or a literal) and a thread count.
    fn named_barrier(&self) -> Option<String> {
        let t = self.text.trim_end_matches(';');
        let (op, rest) = t.split_once(' ')?;
        let wait = match op {
            "bar.sync" | "barrier.sync" => true,
            "bar.arrive" | "barrier.arrive" => false,
            _ => return None,
        };
        let (id, count) = rest.split_once(", ")?;
        let id = if id.starts_with('$') { self.operand(id) } else { id.to_string() };
        let f = if wait { "@emu_bar_sync" } else { "@emu_bar_arrive" };
        Some(format!("  call void {f}(i32 {id}, i32 {count})\n  ret void\n"))
    }

    /// A chain of wgmma.mma_async and wgmma.wait_group (with the templates' predicates and branches) over the
    /// accumulators: the outputs, which tied inputs start from; each wgmma computed in emu_wgmma.
    fn wgmma_chain(&self) -> String {
        let cons: Vec<&str> = self.cons.split(',').filter(|c| !c.starts_with("~{")).collect();
        let outputs = cons.iter().filter(|c| c.starts_with('=')).count();
        let mut b = format!("  %acc = alloca [{outputs} x float], align 16\n  %ar = alloca [4 x i32], align 16\n  %s = call ptr @emu.smem()\n");
        for (j, c) in cons[outputs..].iter().enumerate() {
            if let Ok(i) = c.parse::<usize>() {
                let _ = writeln!(b, "  %t{j} = getelementptr float, ptr %acc, i32 {i}\n  store float %a{j}, ptr %t{j}");
            }
        }
        let mut fresh = 0;
        for stmt in self.text.split("\\0A\\09").map(str::trim) {
            let s = stmt.trim_end_matches(';');
            if s.is_empty() || s == "{" || s == "}" || s.starts_with(".reg") || s.starts_with("wgmma.wait_group") {
                continue;
            } else if let Some(label) = s.strip_suffix(':') {
                let _ = writeln!(b, "  br label %{label}\n{label}:");
            } else if let Some(rest) = s.strip_prefix("setp.ne.b32 ") {
                let v: Vec<&str> = rest.split(", ").collect();
                let _ = writeln!(b, "  %p.{} = icmp ne i32 {}, {}", v[0], self.operand(v[1]), v[2]);
            } else if let Some(rest) = s.strip_prefix('@') {
                let (pred, what) = rest.split_once(' ').unwrap();
                if what.starts_with("wgmma.wait_group") {
                    continue;
                }
                let target = what.strip_prefix("bra.uni ").unwrap_or_else(|| panic!("predicated {what}"));
                fresh += 1;
                let _ = writeln!(b, "  br i1 %p.{pred}, label %{target}, label %f{fresh}\nf{fresh}:");
            } else if let Some(target) = s.strip_prefix("bra.uni ") {
                fresh += 1;
                let _ = writeln!(b, "  br label %{target}\nf{fresh}:");
            } else if s.starts_with("wgmma.mma_async") {
                fresh += 1;
                b.push_str(&self.wgmma(s, outputs, fresh));
            } else {
                panic!("the emulator has no stand-in for `{s}` in \"{}\"", self.text);
            }
        }
        let mut agg = "undef".to_string();
        for i in 0..outputs {
            let _ = writeln!(b, "  %o{i}p = getelementptr float, ptr %acc, i32 {i}\n  %o{i} = load float, ptr %o{i}p\n  %r{i} = insertvalue {} {agg}, float %o{i}, {i}", self.ret);
            agg = format!("%r{i}");
        }
        let _ = writeln!(b, "  ret {} {agg}", self.ret);
        b
    }

    /// One `wgmma.mma_async.sync.aligned.m64n{N}k16.f32.{t}.{t} {acc}, A, B-desc, scale-d, 1, 1, [tnsp-a,] tnsp-b`.
    fn wgmma(&self, s: &str, outputs: usize, id: usize) -> String {
        let (op, rest) = s.split_once(' ').unwrap();
        let n: usize = op.split("m64n").nth(1).and_then(|x| x.split("k16").next()).and_then(|x| x.parse().ok()).expect("wgmma shape");
        let bf16 = op.ends_with(".bf16.bf16") as u32;
        let parts: Vec<&str> = rest.split(", ").collect();
        let acc: Vec<String> = (0..n / 2).map(|i| format!("${i}")).collect();
        assert_eq!(parts[0], format!("{{{}}}", acc.join(",")), "wgmma accumulators other than the asm's outputs in order");
        assert_eq!(n / 2, outputs, "wgmma of {n} columns in an asm of {outputs} outputs");
        let mut b = String::new();
        let (a, da, nums) = if let Some(regs) = parts[1].strip_prefix('{') {
            for (q, r) in regs.trim_end_matches('}').split(',').enumerate() {
                let _ = writeln!(b, "  %ar{id}.{q} = getelementptr i32, ptr %ar, i32 {q}\n  store i32 {}, ptr %ar{id}.{q}", self.operand(r));
            }
            ("ptr %ar".to_string(), "0".to_string(), &parts[3..])
        } else {
            ("ptr null".to_string(), self.operand(parts[1]), &parts[3..])
        };
        let db = self.operand(parts[2]);
        let (scale, tnsp_a, tnsp_b) = match nums.len() {
            4 => (nums[0], "0", nums[3]),
            5 => (nums[0], nums[3], nums[4]),
            _ => panic!("wgmma operands {rest}"),
        };
        let _ = writeln!(b, "  call void @emu_wgmma(ptr %s, ptr %acc, i32 {n}, {a}, i64 {da}, i64 {db}, i32 {scale}, i32 {tnsp_a}, i32 {tnsp_b}, i32 {bf16})");
        b
    }
}

fn c_type(a: &Arg) -> &'static str {
    match a {
        Arg::Buf(_) | Arg::BufAt(..) | Arg::Null | Arg::TensorMap { .. } => "void *",
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
        // (a compound literal: it lives while the launch's kernel call runs)
        Arg::TensorMap { buf, offset, dims: [d0, d1, d2, d3], strides: [s0, s1, s2], box_rows, elem } => {
            format!("(void *)&(EmuMap){{ (unsigned char *)B[{buf}] + {offset}, {{ {d0}ULL, {d1}ULL, {d2}ULL, {d3}ULL }}, {{ {s0}ULL, {s1}ULL, {s2}ULL }}, {box_rows}u, {elem}u }}")
        }
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
    main.push_str("typedef void (*Launch)(void);\nvoid emu_run_grid(int, int, int, int, Launch, int);\nvoid emu_register(const void *, size_t);\nvoid *emu_alloc(size_t);\n");
    main.push_str("static float f32_of(unsigned u) { float f; memcpy(&f, &u, 4); return f; }\n");
    main.push_str("typedef struct { unsigned char *base; unsigned long long dims[4]; unsigned long long strides[3]; unsigned box_rows, elem; } EmuMap;\n");
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
        let _ = writeln!(main, "  B[{i}] = emu_alloc({size}); {{ FILE *f = fopen(\"in{i}.bin\", \"rb\"); if (!f || fread(B[{i}], 1, {}, f) != {}) return 2; fclose(f); }} emu_register(B[{i}], {});", b.len(), b.len(), b.len());
    }
    for (i, l) in launches.iter().enumerate() {
        let _ = writeln!(main, "  emu_run_grid({}, {}, {}, {}, launch{i}, {});", l.grid.0, l.grid.1, l.grid.2, l.threads, u8::from(l.together));
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
    // (a deadlocked kernel spins for ever: ten minutes is far past any emulated grid here)
    sh(Command::new("timeout").arg("600").arg(&exe).current_dir(&dir), "the emulated run (exit status 124: it ran 600 s, a deadlock?)")?;
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
