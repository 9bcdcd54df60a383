; The @emu.nvvm.* stand-ins of the NVVM intrinsics (tests/simt/mod.rs renames @llvm.nvvm.* calls to them):
; each calls emu.c. Internal, so that each kernel's object has its own.
declare i32 @emu_tid()
declare i32 @emu_ctaid_x()
declare i32 @emu_ctaid_y()
declare i32 @emu_ctaid_z()
declare i32 @emu_nctaid_x()
declare void @emu_barrier()
declare float @emu_shfl_bfly(float, i32)
declare float @emu_shfl_idx(float, i32)
declare i32 @emu_vote_any(i32)
declare i32 @emu_redux_umin(i32)
declare void @emu_ldmatrix(ptr, i32, ptr)
declare i32 @emu_ff2bf16x2(float, float)
declare i32 @emu_ff2f16x2(float, float)
declare void @emu_mma(i32, i32, i32, i32, i32, i32, float, float, float, float, i32, ptr)
declare void @emu_cp_async(ptr, ptr, i32, i32)
declare void @emu_cp_commit()
declare void @emu_cp_wait(i32)
declare float @emu_ex2(float)
declare float @emu_lg2(float)
declare float @emu_rcp(float)

define internal i32 @emu.nvvm.read.ptx.sreg.tid.x() {
  %v = call i32 @emu_tid()
  ret i32 %v
}
define internal i32 @emu.nvvm.read.ptx.sreg.ctaid.x() {
  %v = call i32 @emu_ctaid_x()
  ret i32 %v
}
define internal i32 @emu.nvvm.read.ptx.sreg.ctaid.y() {
  %v = call i32 @emu_ctaid_y()
  ret i32 %v
}
define internal i32 @emu.nvvm.read.ptx.sreg.ctaid.z() {
  %v = call i32 @emu_ctaid_z()
  ret i32 %v
}
define internal i32 @emu.nvvm.read.ptx.sreg.nctaid.x() {
  %v = call i32 @emu_nctaid_x()
  ret i32 %v
}
define internal void @emu.nvvm.barrier0() {
  call void @emu_barrier()
  ret void
}
define internal void @emu.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %d, ptr addrspace(1) %s, i32 %n) {
  %dd = addrspacecast ptr addrspace(3) %d to ptr
  %ss = addrspacecast ptr addrspace(1) %s to ptr
  call void @emu_cp_async(ptr %dd, ptr %ss, i32 16, i32 %n)
  ret void
}
define internal void @emu.nvvm.cp.async.ca.shared.global.4.s(ptr addrspace(3) %d, ptr addrspace(1) %s, i32 %n) {
  %dd = addrspacecast ptr addrspace(3) %d to ptr
  %ss = addrspacecast ptr addrspace(1) %s to ptr
  call void @emu_cp_async(ptr %dd, ptr %ss, i32 4, i32 %n)
  ret void
}
define internal void @emu.griddepcontrol() {
  ret void
}
define internal void @emu.fence() {
  fence seq_cst
  ret void
}
declare float @tanhf(float)
define internal float @emu.tanh(float %x) {
  %r = call float @tanhf(float %x)
  ret float %r
}
define internal void @emu.nvvm.cp.async.commit.group() {
  call void @emu_cp_commit()
  ret void
}
define internal void @emu.nvvm.cp.async.wait.group(i32 %n) {
  call void @emu_cp_wait(i32 %n)
  ret void
}
define internal {i32, i32, i32, i32} @emu.ldm(ptr addrspace(3) %p, i32 %trans) {
  %buf = alloca [4 x i32], align 16
  %pp = addrspacecast ptr addrspace(3) %p to ptr
  call void @emu_ldmatrix(ptr %pp, i32 %trans, ptr %buf)
  %p1 = getelementptr i32, ptr %buf, i32 1
  %p2 = getelementptr i32, ptr %buf, i32 2
  %p3 = getelementptr i32, ptr %buf, i32 3
  %v0 = load i32, ptr %buf
  %v1 = load i32, ptr %p1
  %v2 = load i32, ptr %p2
  %v3 = load i32, ptr %p3
  %r0 = insertvalue {i32, i32, i32, i32} undef, i32 %v0, 0
  %r1 = insertvalue {i32, i32, i32, i32} %r0, i32 %v1, 1
  %r2 = insertvalue {i32, i32, i32, i32} %r1, i32 %v2, 2
  %r3 = insertvalue {i32, i32, i32, i32} %r2, i32 %v3, 3
  ret {i32, i32, i32, i32} %r3
}
define internal {i32, i32, i32, i32} @emu.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %p) {
  %r = call {i32, i32, i32, i32} @emu.ldm(ptr addrspace(3) %p, i32 0)
  ret {i32, i32, i32, i32} %r
}
define internal {i32, i32, i32, i32} @emu.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %p) {
  %r = call {i32, i32, i32, i32} @emu.ldm(ptr addrspace(3) %p, i32 1)
  ret {i32, i32, i32, i32} %r
}
define internal {float, float, float, float} @emu.mma(i32 %a0, i32 %a1, i32 %a2, i32 %a3, i32 %b0, i32 %b1, float %c0, float %c1, float %c2, float %c3, i32 %bf) {
  %buf = alloca [4 x float], align 16
  call void @emu_mma(i32 %a0, i32 %a1, i32 %a2, i32 %a3, i32 %b0, i32 %b1, float %c0, float %c1, float %c2, float %c3, i32 %bf, ptr %buf)
  %p1 = getelementptr float, ptr %buf, i32 1
  %p2 = getelementptr float, ptr %buf, i32 2
  %p3 = getelementptr float, ptr %buf, i32 3
  %v0 = load float, ptr %buf
  %v1 = load float, ptr %p1
  %v2 = load float, ptr %p2
  %v3 = load float, ptr %p3
  %r0 = insertvalue {float, float, float, float} undef, float %v0, 0
  %r1 = insertvalue {float, float, float, float} %r0, float %v1, 1
  %r2 = insertvalue {float, float, float, float} %r1, float %v2, 2
  %r3 = insertvalue {float, float, float, float} %r2, float %v3, 3
  ret {float, float, float, float} %r3
}
define internal {float, float, float, float} @emu.nvvm.mma.m16n8k16.row.col.bf16(i32 %a0, i32 %a1, i32 %a2, i32 %a3, i32 %b0, i32 %b1, float %c0, float %c1, float %c2, float %c3) {
  %r = call {float, float, float, float} @emu.mma(i32 %a0, i32 %a1, i32 %a2, i32 %a3, i32 %b0, i32 %b1, float %c0, float %c1, float %c2, float %c3, i32 1)
  ret {float, float, float, float} %r
}
define internal {float, float, float, float} @emu.nvvm.mma.m16n8k16.row.col.f32.f32(<2 x half> %a0, <2 x half> %a1, <2 x half> %a2, <2 x half> %a3, <2 x half> %b0, <2 x half> %b1, float %c0, float %c1, float %c2, float %c3) {
  %i0 = bitcast <2 x half> %a0 to i32
  %i1 = bitcast <2 x half> %a1 to i32
  %i2 = bitcast <2 x half> %a2 to i32
  %i3 = bitcast <2 x half> %a3 to i32
  %j0 = bitcast <2 x half> %b0 to i32
  %j1 = bitcast <2 x half> %b1 to i32
  %r = call {float, float, float, float} @emu.mma(i32 %i0, i32 %i1, i32 %i2, i32 %i3, i32 %j0, i32 %j1, float %c0, float %c1, float %c2, float %c3, i32 0)
  ret {float, float, float, float} %r
}
define internal float @emu.nvvm.shfl.sync.bfly.f32(i32 %m, float %v, i32 %lm, i32 %c) {
  %r = call float @emu_shfl_bfly(float %v, i32 %lm)
  ret float %r
}
define internal float @emu.nvvm.shfl.sync.idx.f32(i32 %m, float %v, i32 %src, i32 %c) {
  %r = call float @emu_shfl_idx(float %v, i32 %src)
  ret float %r
}
define internal i1 @emu.nvvm.vote.any.sync(i32 %m, i1 %p) {
  %pi = zext i1 %p to i32
  %r = call i32 @emu_vote_any(i32 %pi)
  %b = icmp ne i32 %r, 0
  ret i1 %b
}
define internal i32 @emu.nvvm.redux.sync.umin(i32 %v, i32 %m) {
  %r = call i32 @emu_redux_umin(i32 %v)
  ret i32 %r
}
define internal float @emu.nvvm.ex2.approx.ftz.f(float %x) {
  %r = call float @emu_ex2(float %x)
  ret float %r
}
define internal float @emu.nvvm.lg2.approx.f(float %x) {
  %r = call float @emu_lg2(float %x)
  ret float %r
}
define internal float @emu.nvvm.lg2.approx.ftz.f(float %x) {
  %r = call float @emu_lg2(float %x)
  ret float %r
}
define internal float @emu.nvvm.rcp.approx.ftz.f(float %x) {
  %r = call float @emu_rcp(float %x)
  ret float %r
}
define internal <2 x bfloat> @emu.nvvm.ff2bf16x2.rn(float %hi, float %lo) {
  %u = call i32 @emu_ff2bf16x2(float %hi, float %lo)
  %r = bitcast i32 %u to <2 x bfloat>
  ret <2 x bfloat> %r
}
define internal <2 x half> @emu.nvvm.ff2f16x2.rn(float %hi, float %lo) {
  %u = call i32 @emu_ff2f16x2(float %hi, float %lo)
  %r = bitcast i32 %u to <2 x half>
  ret <2 x half> %r
}
declare void @emu_warp_sync(i32)
declare i64 @emu_globaltimer()
define internal void @emu.nvvm.bar.warp.sync(i32 %m) {
  call void @emu_warp_sync(i32 %m)
  ret void
}
define internal i64 @emu.nvvm.read.ptx.sreg.globaltimer() {
  %t = call i64 @emu_globaltimer()
  ret i64 %t
}
