; The stand-ins of the Hopper kernels' inline PTX (tests/simt/mod.rs replaces each asm with a call of one of
; these; the wgmma chains get functions generated per asm): shared addresses arrive as the kernels hold them
; (i32) and go to emu.c with @smem's host address, from which it finds their bytes. Appended to modules
; that have @smem.
declare void @emu_mbar_init_n(ptr, i32, i32)
declare void @emu_mbar_arrive_r(ptr, i32)
declare void @emu_mbar_expect_tx_r(ptr, i32, i32)
declare i32 @emu_mbar_try_wait_r(ptr, i32, i32)
declare i32 @emu_ld_shared_u32(ptr, i32)
declare void @emu_st_shared_u32(ptr, i32, i32)
declare i32 @emu_atom_add1(ptr)
declare void @emu_store_zero2(ptr, ptr)
declare void @emu_prefetch(ptr, i32)
declare void @emu_tma_load(ptr, i32, ptr, i32, i32, i32, i32, i32)
declare void @emu_bar_sync(i32, i32)
declare void @emu_bar_arrive(i32, i32)
declare void @emu_wgmma(ptr, ptr, i32, ptr, i64, i64, i32, i32, i32, i32)
declare ptr @emu_sh(ptr, i32)
declare void @emu_bulk_store(ptr, ptr, i32)
declare void @emu_bulk_reduce_add_f32(ptr, ptr, i32)
declare void @emu_cp_arrive_noinc(ptr)
declare i32 @emu_ld_acquire(ptr)
declare void @emu_st_release(ptr, i32)
declare void @emu_st_shared_v4f32(ptr, float, float, float, float)

define internal ptr @emu.smem() {
  %p = addrspacecast ptr addrspace(3) @smem to ptr
  ret ptr %p
}
define internal void @emu.hop.mbar_init(i32 %a, i32 %n) {
  %s = call ptr @emu.smem()
  call void @emu_mbar_init_n(ptr %s, i32 %a, i32 %n)
  ret void
}
define internal void @emu.hop.mbar_arrive(i32 %a) {
  %s = call ptr @emu.smem()
  call void @emu_mbar_arrive_r(ptr %s, i32 %a)
  ret void
}
define internal void @emu.hop.mbar_expect_tx(i32 %a, i32 %n) {
  %s = call ptr @emu.smem()
  call void @emu_mbar_expect_tx_r(ptr %s, i32 %a, i32 %n)
  ret void
}
define internal i32 @emu.hop.mbar_try_wait(i32 %a, i32 %parity) {
  %s = call ptr @emu.smem()
  %r = call i32 @emu_mbar_try_wait_r(ptr %s, i32 %a, i32 %parity)
  ret i32 %r
}
define internal i32 @emu.hop.ld_shared(i32 %a) {
  %s = call ptr @emu.smem()
  %r = call i32 @emu_ld_shared_u32(ptr %s, i32 %a)
  ret i32 %r
}
define internal void @emu.hop.st_shared(i32 %a, i32 %v) {
  %s = call ptr @emu.smem()
  call void @emu_st_shared_u32(ptr %s, i32 %a, i32 %v)
  ret void
}
define internal i32 @emu.hop.atom_add1(i64 %a) {
  %p = inttoptr i64 %a to ptr
  %r = call i32 @emu_atom_add1(ptr %p)
  ret i32 %r
}
define internal void @emu.hop.store_zero2(i64 %a, i64 %b) {
  %p = inttoptr i64 %a to ptr
  %q = inttoptr i64 %b to ptr
  call void @emu_store_zero2(ptr %p, ptr %q)
  ret void
}
define internal void @emu.hop.prefetch(i64 %a, i32 %n) {
  %p = inttoptr i64 %a to ptr
  call void @emu_prefetch(ptr %p, i32 %n)
  ret void
}
define internal void @emu.hop.tma_load(i32 %dst, i64 %map, i32 %c0, i32 %c1, i32 %c2, i32 %c3, i32 %bar) {
  %s = call ptr @emu.smem()
  %m = inttoptr i64 %map to ptr
  call void @emu_tma_load(ptr %s, i32 %dst, ptr %m, i32 %c0, i32 %c1, i32 %c2, i32 %c3, i32 %bar)
  ret void
}
define internal void @emu.hop.tma_load_hint(i32 %dst, i64 %map, i32 %c0, i32 %c1, i32 %c2, i32 %c3, i32 %bar, i64 %policy) {
  call void @emu.hop.tma_load(i32 %dst, i64 %map, i32 %c0, i32 %c1, i32 %c2, i32 %c3, i32 %bar)
  ret void
}
define internal void @emu.hop.bar_sync256(i32 %id) {
  call void @emu_bar_sync(i32 %id, i32 256)
  ret void
}
define internal void @emu.hop.bar_arrive256(i32 %id) {
  call void @emu_bar_arrive(i32 %id, i32 256)
  ret void
}
define internal i64 @emu.hop.param(ptr %p) {
  %a = ptrtoint ptr %p to i64
  ret i64 %a
}
define internal void @emu.hop.nop() {
  ret void
}
