; flashgen FlashAttention-2 forward (mma.sync): fa2_fwd_bf16_d64_st1_bm128_bn64_w4_ns3_sm90a
; dtype=bf16 HEAD_DIM=64 BLOCK_M=128 BLOCK_N=64 STAGE=1 num_warps=4 num_stages=3
; Each warp owns 32 query rows (2 m16 tile(s)); K/V stream through a ring of 3 shared-memory slots.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

; dynamic shared memory: [Q tile | NUM_STAGES x (K tile, V tile)], rows swizzled in 16-byte chunks
@smem = external addrspace(3) global [0 x i8], align 128

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.z()
declare void @llvm.nvvm.barrier0()
declare void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3), ptr addrspace(1), i32)
declare void @llvm.nvvm.cp.async.ca.shared.global.4.s(ptr addrspace(3), ptr addrspace(1), i32)
declare void @llvm.nvvm.cp.async.commit.group()
declare void @llvm.nvvm.cp.async.wait.group(i32 immarg)
declare {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3))
declare {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3))
declare {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32, i32, i32, i32, i32, i32, float, float, float, float)
declare {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.f32.f32(<2 x half>, <2 x half>, <2 x half>, <2 x half>, <2 x half>, <2 x half>, float, float, float, float)
declare float @llvm.nvvm.shfl.sync.bfly.f32(i32, float, i32, i32)
declare float @llvm.nvvm.ex2.approx.ftz.f(float)
declare float @llvm.nvvm.lg2.approx.f(float)
declare float @llvm.nvvm.lg2.approx.ftz.f(float)
declare float @llvm.nvvm.rcp.approx.ftz.f(float)
declare float @llvm.maxnum.f32(float, float)
declare float @llvm.minnum.f32(float, float)
declare <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float, float)
declare <2 x half> @llvm.nvvm.ff2f16x2.rn(float, float)
declare float @llvm.fma.f32(float, float, float)
declare i1 @llvm.nvvm.vote.any.sync(i32, i1)
declare i32 @llvm.smin.i32(i32, i32)
declare i32 @llvm.umin.i32(i32, i32)
declare i32 @llvm.smax.i32(i32, i32)
declare i32 @llvm.umax.i32(i32, i32)
declare i32 @llvm.nvvm.redux.sync.umin(i32, i32)

; the parameters: compiler/src/abi.rs (docs/ABI.md)
define void @fa2_fwd_bf16_d64_st1_bm128_bn64_w4_ns3_sm90a(ptr addrspace(1) noalias readonly align 16 %Q,
    ptr addrspace(1) noalias readonly align 16 %K,
    ptr addrspace(1) noalias readonly align 16 %V,
    float %sm_scale,
    float %SOFTCAP,
    ptr addrspace(1) noalias align 4 %M,
    ptr addrspace(1) noalias align 16 %Out,
    i64 %stride_qz,
    i64 %stride_qh,
    i64 %stride_qm,
    i64 %stride_qk,
    i64 %stride_kz,
    i64 %stride_kh,
    i64 %stride_kn,
    i64 %stride_kk,
    i64 %stride_vz,
    i64 %stride_vh,
    i64 %stride_vk,
    i64 %stride_vn,
    i64 %stride_oz,
    i64 %stride_oh,
    i64 %stride_om,
    i64 %stride_on,
    i32 %Z,
    i32 %H,
    i32 %H_KV,
    i32 %N_Q,
    i32 %N_KV,
    i32 %ALIGN,
    ptr addrspace(1) noalias readonly align 4 %CU_SEQLENS_Q,
    ptr addrspace(1) noalias readonly align 4 %CU_SEQLENS_K,
    i32 %TOTAL_Q,
    i32 %TOTAL_K,
    i32 %WINDOW_LEFT,
    i32 %WINDOW_RIGHT,
    ptr addrspace(1) noalias readonly align 4 %MOD_TENSOR0,
    ptr addrspace(1) noalias readonly align 4 %MOD_TENSOR1,
    ptr addrspace(1) noalias readonly align 4 %MOD_TENSOR2,
    ptr addrspace(1) noalias readonly align 4 %MOD_TENSOR3) {
entry:
  ; ---- program ids: one BLOCK_M slice of queries (grid x) of one (batch, head) (grid y) ----
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()

  %start_m = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()

  %off_hz = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
  %warp = lshr i32 %tid, 5
  %lane = and i32 %tid, 31
  %g = lshr i32 %lane, 2            ; fragment row within the m16 tile (and g + 8)
  %t = and i32 %lane, 3             ; fragment column pair: columns 2t, 2t+1
  %t2 = shl i32 %t, 1
  %lane7 = and i32 %lane, 7
  ; ---- the program's sequence: its batch, query head and K/V head, lengths, diagonal, rows in the tensors ----
%off_z = udiv i32 %off_hz, %H
  %off_h = urem i32 %off_hz, %H
  %off_z64 = zext i32 %off_z to i64
  %off_h64 = zext i32 %off_h to i64
%kv_group = udiv i32 %H, %H_KV
  %off_hk = udiv i32 %off_h, %kv_group
  %off_hk64 = zext i32 %off_hk to i64

  %q_len = add i32 %N_Q, 0
  %kv_len = add i32 %N_KV, 0
  %tz = add i32 %off_z, 0
  %tz64 = zext i32 %off_z to i64

  %stat_row0 = mul i32 %off_hz, %N_Q



  %q_offz = mul i64 %tz64, %stride_qz
  %q_offh = mul i64 %off_h64, %stride_qh
  %q_off = add i64 %q_offz, %q_offh
%q_base = getelementptr bfloat, ptr addrspace(1) %Q, i64 %q_off
  %o_offz = mul i64 %tz64, %stride_oz
  %o_offh = mul i64 %off_h64, %stride_oh
  %o_off = add i64 %o_offz, %o_offh
%o_base = getelementptr bfloat, ptr addrspace(1) %Out, i64 %o_off


  %k_offz = mul i64 %tz64, %stride_kz
  %k_offh = mul i64 %off_hk64, %stride_kh
  %k_off = add i64 %k_offz, %k_offh
%k_base = getelementptr bfloat, ptr addrspace(1) %K, i64 %k_off
  %v_offz = mul i64 %tz64, %stride_vz
  %v_offh = mul i64 %off_hk64, %stride_vh
  %v_off = add i64 %v_offz, %v_offh
%v_base = getelementptr bfloat, ptr addrspace(1) %V, i64 %v_off

  %kv_last = sub i32 %kv_len, 1

  %q_last = sub i32 %q_len, 1
  %tiles = getelementptr i8, ptr addrspace(3) @smem, i32 0
  %kv_smem = getelementptr i8, ptr addrspace(3) %tiles, i32 16384

  ; ---- qk_scale = sm_scale * RCP_LN2: log2(e) folded once, so the loop uses exp2 only (softcap: cap · RCP_LN2) ----

  %qk_scale = fmul float %sm_scale, 0x3FF7154760000000

  ; ---- this program's rows and its K/V block range ----
  %row0 = mul i32 %start_m, 128

  %warp_row = mul i32 %warp, 32
  %row_w = add i32 %row0, %warp_row
  %row_g = add i32 %row_w, %g

  ; STAGE=1 (non-causal): inner stage 3 runs every full block without a mask; a ragged last block
  ; (kv_len not a multiple of BLOCK_N) runs once more with the bounds mask only.
  %n_full = udiv i32 %kv_len, 64
  %n_total_r = add i32 %kv_len, 63
  %n_total = udiv i32 %n_total_r, 64

  ; ---- per-thread copy and fragment addresses (loop-invariant) ----

  %qcp.q0 = add i32 %tid, 0
  %qcp.row0 = udiv i32 %qcp.q0, 8
  %qcp.c0 = urem i32 %qcp.q0, 8
  %qcp.r7_0 = and i32 %qcp.row0, 7
  %qcp.swz0 = xor i32 %qcp.c0, %qcp.r7_0
  %qcp.drow0 = mul i32 %qcp.row0, 128
  %qcp.dchunk0 = shl i32 %qcp.swz0, 4
  %qcp.dst0 = add i32 %qcp.drow0, %qcp.dchunk0
  %qcp.c8_0 = shl i32 %qcp.c0, 3
  %qcp.col0 = zext i32 %qcp.c8_0 to i64
  %qcp.q1 = add i32 %tid, 128
  %qcp.row1 = udiv i32 %qcp.q1, 8
  %qcp.c1 = urem i32 %qcp.q1, 8
  %qcp.r7_1 = and i32 %qcp.row1, 7
  %qcp.swz1 = xor i32 %qcp.c1, %qcp.r7_1
  %qcp.drow1 = mul i32 %qcp.row1, 128
  %qcp.dchunk1 = shl i32 %qcp.swz1, 4
  %qcp.dst1 = add i32 %qcp.drow1, %qcp.dchunk1
  %qcp.c8_1 = shl i32 %qcp.c1, 3
  %qcp.col1 = zext i32 %qcp.c8_1 to i64
  %qcp.q2 = add i32 %tid, 256
  %qcp.row2 = udiv i32 %qcp.q2, 8
  %qcp.c2 = urem i32 %qcp.q2, 8
  %qcp.r7_2 = and i32 %qcp.row2, 7
  %qcp.swz2 = xor i32 %qcp.c2, %qcp.r7_2
  %qcp.drow2 = mul i32 %qcp.row2, 128
  %qcp.dchunk2 = shl i32 %qcp.swz2, 4
  %qcp.dst2 = add i32 %qcp.drow2, %qcp.dchunk2
  %qcp.c8_2 = shl i32 %qcp.c2, 3
  %qcp.col2 = zext i32 %qcp.c8_2 to i64
  %qcp.q3 = add i32 %tid, 384
  %qcp.row3 = udiv i32 %qcp.q3, 8
  %qcp.c3 = urem i32 %qcp.q3, 8
  %qcp.r7_3 = and i32 %qcp.row3, 7
  %qcp.swz3 = xor i32 %qcp.c3, %qcp.r7_3
  %qcp.drow3 = mul i32 %qcp.row3, 128
  %qcp.dchunk3 = shl i32 %qcp.swz3, 4
  %qcp.dst3 = add i32 %qcp.drow3, %qcp.dchunk3
  %qcp.c8_3 = shl i32 %qcp.c3, 3
  %qcp.col3 = zext i32 %qcp.c8_3 to i64
  %qcp.q4 = add i32 %tid, 512
  %qcp.row4 = udiv i32 %qcp.q4, 8
  %qcp.c4 = urem i32 %qcp.q4, 8
  %qcp.r7_4 = and i32 %qcp.row4, 7
  %qcp.swz4 = xor i32 %qcp.c4, %qcp.r7_4
  %qcp.drow4 = mul i32 %qcp.row4, 128
  %qcp.dchunk4 = shl i32 %qcp.swz4, 4
  %qcp.dst4 = add i32 %qcp.drow4, %qcp.dchunk4
  %qcp.c8_4 = shl i32 %qcp.c4, 3
  %qcp.col4 = zext i32 %qcp.c8_4 to i64
  %qcp.q5 = add i32 %tid, 640
  %qcp.row5 = udiv i32 %qcp.q5, 8
  %qcp.c5 = urem i32 %qcp.q5, 8
  %qcp.r7_5 = and i32 %qcp.row5, 7
  %qcp.swz5 = xor i32 %qcp.c5, %qcp.r7_5
  %qcp.drow5 = mul i32 %qcp.row5, 128
  %qcp.dchunk5 = shl i32 %qcp.swz5, 4
  %qcp.dst5 = add i32 %qcp.drow5, %qcp.dchunk5
  %qcp.c8_5 = shl i32 %qcp.c5, 3
  %qcp.col5 = zext i32 %qcp.c8_5 to i64
  %qcp.q6 = add i32 %tid, 768
  %qcp.row6 = udiv i32 %qcp.q6, 8
  %qcp.c6 = urem i32 %qcp.q6, 8
  %qcp.r7_6 = and i32 %qcp.row6, 7
  %qcp.swz6 = xor i32 %qcp.c6, %qcp.r7_6
  %qcp.drow6 = mul i32 %qcp.row6, 128
  %qcp.dchunk6 = shl i32 %qcp.swz6, 4
  %qcp.dst6 = add i32 %qcp.drow6, %qcp.dchunk6
  %qcp.c8_6 = shl i32 %qcp.c6, 3
  %qcp.col6 = zext i32 %qcp.c8_6 to i64
  %qcp.q7 = add i32 %tid, 896
  %qcp.row7 = udiv i32 %qcp.q7, 8
  %qcp.c7 = urem i32 %qcp.q7, 8
  %qcp.r7_7 = and i32 %qcp.row7, 7
  %qcp.swz7 = xor i32 %qcp.c7, %qcp.r7_7
  %qcp.drow7 = mul i32 %qcp.row7, 128
  %qcp.dchunk7 = shl i32 %qcp.swz7, 4
  %qcp.dst7 = add i32 %qcp.drow7, %qcp.dchunk7
  %qcp.c8_7 = shl i32 %qcp.c7, 3
  %qcp.col7 = zext i32 %qcp.c8_7 to i64

  %kvcp.q0 = add i32 %tid, 0
  %kvcp.row0 = udiv i32 %kvcp.q0, 8
  %kvcp.c0 = urem i32 %kvcp.q0, 8
  %kvcp.r7_0 = and i32 %kvcp.row0, 7
  %kvcp.swz0 = xor i32 %kvcp.c0, %kvcp.r7_0
  %kvcp.drow0 = mul i32 %kvcp.row0, 128
  %kvcp.dchunk0 = shl i32 %kvcp.swz0, 4
  %kvcp.dst0 = add i32 %kvcp.drow0, %kvcp.dchunk0
  %kvcp.c8_0 = shl i32 %kvcp.c0, 3
  %kvcp.col0 = zext i32 %kvcp.c8_0 to i64
  %kvcp.q1 = add i32 %tid, 128
  %kvcp.row1 = udiv i32 %kvcp.q1, 8
  %kvcp.c1 = urem i32 %kvcp.q1, 8
  %kvcp.r7_1 = and i32 %kvcp.row1, 7
  %kvcp.swz1 = xor i32 %kvcp.c1, %kvcp.r7_1
  %kvcp.drow1 = mul i32 %kvcp.row1, 128
  %kvcp.dchunk1 = shl i32 %kvcp.swz1, 4
  %kvcp.dst1 = add i32 %kvcp.drow1, %kvcp.dchunk1
  %kvcp.c8_1 = shl i32 %kvcp.c1, 3
  %kvcp.col1 = zext i32 %kvcp.c8_1 to i64
  %kvcp.q2 = add i32 %tid, 256
  %kvcp.row2 = udiv i32 %kvcp.q2, 8
  %kvcp.c2 = urem i32 %kvcp.q2, 8
  %kvcp.r7_2 = and i32 %kvcp.row2, 7
  %kvcp.swz2 = xor i32 %kvcp.c2, %kvcp.r7_2
  %kvcp.drow2 = mul i32 %kvcp.row2, 128
  %kvcp.dchunk2 = shl i32 %kvcp.swz2, 4
  %kvcp.dst2 = add i32 %kvcp.drow2, %kvcp.dchunk2
  %kvcp.c8_2 = shl i32 %kvcp.c2, 3
  %kvcp.col2 = zext i32 %kvcp.c8_2 to i64
  %kvcp.q3 = add i32 %tid, 384
  %kvcp.row3 = udiv i32 %kvcp.q3, 8
  %kvcp.c3 = urem i32 %kvcp.q3, 8
  %kvcp.r7_3 = and i32 %kvcp.row3, 7
  %kvcp.swz3 = xor i32 %kvcp.c3, %kvcp.r7_3
  %kvcp.drow3 = mul i32 %kvcp.row3, 128
  %kvcp.dchunk3 = shl i32 %kvcp.swz3, 4
  %kvcp.dst3 = add i32 %kvcp.drow3, %kvcp.dchunk3
  %kvcp.c8_3 = shl i32 %kvcp.c3, 3
  %kvcp.col3 = zext i32 %kvcp.c8_3 to i64
; K as the B operand of S = Q·Kᵀ: rows n = lane % 8, chunks 4kp + lane / 8
  %lane_row_bytes = mul i32 %lane7, 128
  %lane_q3 = lshr i32 %lane, 3
  %k_chunk0 = add i32 %lane_q3, 0
  %k_swz0 = xor i32 %k_chunk0, %lane7
  %k_swzb0 = shl i32 %k_swz0, 4
  %k_lane_off0 = add i32 %lane_row_bytes, %k_swzb0
  %k_chunk1 = add i32 %lane_q3, 4
  %k_swz1 = xor i32 %k_chunk1, %lane7
  %k_swzb1 = shl i32 %k_swz1, 4
  %k_lane_off1 = add i32 %lane_row_bytes, %k_swzb1
  ; Q (A operand) and V (B operand, transposed): rows lane % 8 + 8·((lane / 8) % 2), chunks 2i + lane / 16
  %lane_b3 = and i32 %lane_q3, 1
  %lane_r8 = shl i32 %lane_b3, 3
  %lane_row16 = add i32 %lane7, %lane_r8
  %lane_row16_bytes = mul i32 %lane_row16, 128
  %lane_q4 = lshr i32 %lane, 4
  %v_chunk0 = add i32 %lane_q4, 0
  %v_swz0 = xor i32 %v_chunk0, %lane7
  %v_swzb0 = shl i32 %v_swz0, 4
  %v_lane_off0 = add i32 %lane_row16_bytes, %v_swzb0
  %v_chunk1 = add i32 %lane_q4, 2
  %v_swz1 = xor i32 %v_chunk1, %lane7
  %v_swzb1 = shl i32 %v_swz1, 4
  %v_lane_off1 = add i32 %lane_row16_bytes, %v_swzb1
  %v_chunk2 = add i32 %lane_q4, 4
  %v_swz2 = xor i32 %v_chunk2, %lane7
  %v_swzb2 = shl i32 %v_swz2, 4
  %v_lane_off2 = add i32 %lane_row16_bytes, %v_swzb2
  %v_chunk3 = add i32 %lane_q4, 6
  %v_swz3 = xor i32 %v_chunk3, %lane7
  %v_swzb3 = shl i32 %v_swz3, 4
  %v_lane_off3 = add i32 %lane_row16_bytes, %v_swzb3

  ; ---- prologue: Q tile, then K/V blocks 0 .. NUM_STAGES-2 in flight (one cp.async group each) ----


  %cq.grow0 = add i32 %row0, %qcp.row0
  %cq.ok0 = icmp ult i32 %cq.grow0, %q_len
  %cq.srow0 = select i1 %cq.ok0, i32 %cq.grow0, i32 %q_last
  %cq.srow64_0 = zext i32 %cq.srow0 to i64
  %cq.soffr0 = mul i64 %cq.srow64_0, %stride_qm
  %cq.soff0 = add i64 %cq.soffr0, %qcp.col0
  %cq.src0 = getelementptr bfloat, ptr addrspace(1) %q_base, i64 %cq.soff0
  %cq.dst0 = getelementptr i8, ptr addrspace(3) %tiles, i32 %qcp.dst0
  %cq.n0 = select i1 %cq.ok0, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %cq.dst0, ptr addrspace(1) %cq.src0, i32 %cq.n0)
  %cq.grow1 = add i32 %row0, %qcp.row1
  %cq.ok1 = icmp ult i32 %cq.grow1, %q_len
  %cq.srow1 = select i1 %cq.ok1, i32 %cq.grow1, i32 %q_last
  %cq.srow64_1 = zext i32 %cq.srow1 to i64
  %cq.soffr1 = mul i64 %cq.srow64_1, %stride_qm
  %cq.soff1 = add i64 %cq.soffr1, %qcp.col1
  %cq.src1 = getelementptr bfloat, ptr addrspace(1) %q_base, i64 %cq.soff1
  %cq.dst1 = getelementptr i8, ptr addrspace(3) %tiles, i32 %qcp.dst1
  %cq.n1 = select i1 %cq.ok1, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %cq.dst1, ptr addrspace(1) %cq.src1, i32 %cq.n1)
  %cq.grow2 = add i32 %row0, %qcp.row2
  %cq.ok2 = icmp ult i32 %cq.grow2, %q_len
  %cq.srow2 = select i1 %cq.ok2, i32 %cq.grow2, i32 %q_last
  %cq.srow64_2 = zext i32 %cq.srow2 to i64
  %cq.soffr2 = mul i64 %cq.srow64_2, %stride_qm
  %cq.soff2 = add i64 %cq.soffr2, %qcp.col2
  %cq.src2 = getelementptr bfloat, ptr addrspace(1) %q_base, i64 %cq.soff2
  %cq.dst2 = getelementptr i8, ptr addrspace(3) %tiles, i32 %qcp.dst2
  %cq.n2 = select i1 %cq.ok2, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %cq.dst2, ptr addrspace(1) %cq.src2, i32 %cq.n2)
  %cq.grow3 = add i32 %row0, %qcp.row3
  %cq.ok3 = icmp ult i32 %cq.grow3, %q_len
  %cq.srow3 = select i1 %cq.ok3, i32 %cq.grow3, i32 %q_last
  %cq.srow64_3 = zext i32 %cq.srow3 to i64
  %cq.soffr3 = mul i64 %cq.srow64_3, %stride_qm
  %cq.soff3 = add i64 %cq.soffr3, %qcp.col3
  %cq.src3 = getelementptr bfloat, ptr addrspace(1) %q_base, i64 %cq.soff3
  %cq.dst3 = getelementptr i8, ptr addrspace(3) %tiles, i32 %qcp.dst3
  %cq.n3 = select i1 %cq.ok3, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %cq.dst3, ptr addrspace(1) %cq.src3, i32 %cq.n3)
  %cq.grow4 = add i32 %row0, %qcp.row4
  %cq.ok4 = icmp ult i32 %cq.grow4, %q_len
  %cq.srow4 = select i1 %cq.ok4, i32 %cq.grow4, i32 %q_last
  %cq.srow64_4 = zext i32 %cq.srow4 to i64
  %cq.soffr4 = mul i64 %cq.srow64_4, %stride_qm
  %cq.soff4 = add i64 %cq.soffr4, %qcp.col4
  %cq.src4 = getelementptr bfloat, ptr addrspace(1) %q_base, i64 %cq.soff4
  %cq.dst4 = getelementptr i8, ptr addrspace(3) %tiles, i32 %qcp.dst4
  %cq.n4 = select i1 %cq.ok4, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %cq.dst4, ptr addrspace(1) %cq.src4, i32 %cq.n4)
  %cq.grow5 = add i32 %row0, %qcp.row5
  %cq.ok5 = icmp ult i32 %cq.grow5, %q_len
  %cq.srow5 = select i1 %cq.ok5, i32 %cq.grow5, i32 %q_last
  %cq.srow64_5 = zext i32 %cq.srow5 to i64
  %cq.soffr5 = mul i64 %cq.srow64_5, %stride_qm
  %cq.soff5 = add i64 %cq.soffr5, %qcp.col5
  %cq.src5 = getelementptr bfloat, ptr addrspace(1) %q_base, i64 %cq.soff5
  %cq.dst5 = getelementptr i8, ptr addrspace(3) %tiles, i32 %qcp.dst5
  %cq.n5 = select i1 %cq.ok5, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %cq.dst5, ptr addrspace(1) %cq.src5, i32 %cq.n5)
  %cq.grow6 = add i32 %row0, %qcp.row6
  %cq.ok6 = icmp ult i32 %cq.grow6, %q_len
  %cq.srow6 = select i1 %cq.ok6, i32 %cq.grow6, i32 %q_last
  %cq.srow64_6 = zext i32 %cq.srow6 to i64
  %cq.soffr6 = mul i64 %cq.srow64_6, %stride_qm
  %cq.soff6 = add i64 %cq.soffr6, %qcp.col6
  %cq.src6 = getelementptr bfloat, ptr addrspace(1) %q_base, i64 %cq.soff6
  %cq.dst6 = getelementptr i8, ptr addrspace(3) %tiles, i32 %qcp.dst6
  %cq.n6 = select i1 %cq.ok6, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %cq.dst6, ptr addrspace(1) %cq.src6, i32 %cq.n6)
  %cq.grow7 = add i32 %row0, %qcp.row7
  %cq.ok7 = icmp ult i32 %cq.grow7, %q_len
  %cq.srow7 = select i1 %cq.ok7, i32 %cq.grow7, i32 %q_last
  %cq.srow64_7 = zext i32 %cq.srow7 to i64
  %cq.soffr7 = mul i64 %cq.srow64_7, %stride_qm
  %cq.soff7 = add i64 %cq.soffr7, %qcp.col7
  %cq.src7 = getelementptr bfloat, ptr addrspace(1) %q_base, i64 %cq.soff7
  %cq.dst7 = getelementptr i8, ptr addrspace(3) %tiles, i32 %qcp.dst7
  %cq.n7 = select i1 %cq.ok7, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %cq.dst7, ptr addrspace(1) %cq.src7, i32 %cq.n7)
  call void @llvm.nvvm.cp.async.commit.group()

  %pro0.go = icmp ult i32 0, %n_total
  br i1 %pro0.go, label %pro0.copy, label %pro0.done
pro0.copy:
  %pro0.k = getelementptr i8, ptr addrspace(3) %kv_smem, i32 0
  %pro0.v = getelementptr i8, ptr addrspace(3) %kv_smem, i32 8192


  %pro0.ck.grow0 = add i32 0, %kvcp.row0
  %pro0.ck.ok0 = icmp ult i32 %pro0.ck.grow0, %kv_len
  %pro0.ck.srow0 = select i1 %pro0.ck.ok0, i32 %pro0.ck.grow0, i32 %kv_last
  %pro0.ck.srow64_0 = zext i32 %pro0.ck.srow0 to i64
  %pro0.ck.soffr0 = mul i64 %pro0.ck.srow64_0, %stride_kn
  %pro0.ck.soff0 = add i64 %pro0.ck.soffr0, %kvcp.col0
  %pro0.ck.src0 = getelementptr bfloat, ptr addrspace(1) %k_base, i64 %pro0.ck.soff0
  %pro0.ck.dst0 = getelementptr i8, ptr addrspace(3) %pro0.k, i32 %kvcp.dst0
  %pro0.ck.n0 = select i1 %pro0.ck.ok0, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %pro0.ck.dst0, ptr addrspace(1) %pro0.ck.src0, i32 %pro0.ck.n0)
  %pro0.ck.grow1 = add i32 0, %kvcp.row1
  %pro0.ck.ok1 = icmp ult i32 %pro0.ck.grow1, %kv_len
  %pro0.ck.srow1 = select i1 %pro0.ck.ok1, i32 %pro0.ck.grow1, i32 %kv_last
  %pro0.ck.srow64_1 = zext i32 %pro0.ck.srow1 to i64
  %pro0.ck.soffr1 = mul i64 %pro0.ck.srow64_1, %stride_kn
  %pro0.ck.soff1 = add i64 %pro0.ck.soffr1, %kvcp.col1
  %pro0.ck.src1 = getelementptr bfloat, ptr addrspace(1) %k_base, i64 %pro0.ck.soff1
  %pro0.ck.dst1 = getelementptr i8, ptr addrspace(3) %pro0.k, i32 %kvcp.dst1
  %pro0.ck.n1 = select i1 %pro0.ck.ok1, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %pro0.ck.dst1, ptr addrspace(1) %pro0.ck.src1, i32 %pro0.ck.n1)
  %pro0.ck.grow2 = add i32 0, %kvcp.row2
  %pro0.ck.ok2 = icmp ult i32 %pro0.ck.grow2, %kv_len
  %pro0.ck.srow2 = select i1 %pro0.ck.ok2, i32 %pro0.ck.grow2, i32 %kv_last
  %pro0.ck.srow64_2 = zext i32 %pro0.ck.srow2 to i64
  %pro0.ck.soffr2 = mul i64 %pro0.ck.srow64_2, %stride_kn
  %pro0.ck.soff2 = add i64 %pro0.ck.soffr2, %kvcp.col2
  %pro0.ck.src2 = getelementptr bfloat, ptr addrspace(1) %k_base, i64 %pro0.ck.soff2
  %pro0.ck.dst2 = getelementptr i8, ptr addrspace(3) %pro0.k, i32 %kvcp.dst2
  %pro0.ck.n2 = select i1 %pro0.ck.ok2, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %pro0.ck.dst2, ptr addrspace(1) %pro0.ck.src2, i32 %pro0.ck.n2)
  %pro0.ck.grow3 = add i32 0, %kvcp.row3
  %pro0.ck.ok3 = icmp ult i32 %pro0.ck.grow3, %kv_len
  %pro0.ck.srow3 = select i1 %pro0.ck.ok3, i32 %pro0.ck.grow3, i32 %kv_last
  %pro0.ck.srow64_3 = zext i32 %pro0.ck.srow3 to i64
  %pro0.ck.soffr3 = mul i64 %pro0.ck.srow64_3, %stride_kn
  %pro0.ck.soff3 = add i64 %pro0.ck.soffr3, %kvcp.col3
  %pro0.ck.src3 = getelementptr bfloat, ptr addrspace(1) %k_base, i64 %pro0.ck.soff3
  %pro0.ck.dst3 = getelementptr i8, ptr addrspace(3) %pro0.k, i32 %kvcp.dst3
  %pro0.ck.n3 = select i1 %pro0.ck.ok3, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %pro0.ck.dst3, ptr addrspace(1) %pro0.ck.src3, i32 %pro0.ck.n3)


  %pro0.cv.grow0 = add i32 0, %kvcp.row0
  %pro0.cv.ok0 = icmp ult i32 %pro0.cv.grow0, %kv_len
  %pro0.cv.srow0 = select i1 %pro0.cv.ok0, i32 %pro0.cv.grow0, i32 %kv_last
  %pro0.cv.srow64_0 = zext i32 %pro0.cv.srow0 to i64
  %pro0.cv.soffr0 = mul i64 %pro0.cv.srow64_0, %stride_vk
  %pro0.cv.soff0 = add i64 %pro0.cv.soffr0, %kvcp.col0
  %pro0.cv.src0 = getelementptr bfloat, ptr addrspace(1) %v_base, i64 %pro0.cv.soff0
  %pro0.cv.dst0 = getelementptr i8, ptr addrspace(3) %pro0.v, i32 %kvcp.dst0
  %pro0.cv.n0 = select i1 %pro0.cv.ok0, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %pro0.cv.dst0, ptr addrspace(1) %pro0.cv.src0, i32 %pro0.cv.n0)
  %pro0.cv.grow1 = add i32 0, %kvcp.row1
  %pro0.cv.ok1 = icmp ult i32 %pro0.cv.grow1, %kv_len
  %pro0.cv.srow1 = select i1 %pro0.cv.ok1, i32 %pro0.cv.grow1, i32 %kv_last
  %pro0.cv.srow64_1 = zext i32 %pro0.cv.srow1 to i64
  %pro0.cv.soffr1 = mul i64 %pro0.cv.srow64_1, %stride_vk
  %pro0.cv.soff1 = add i64 %pro0.cv.soffr1, %kvcp.col1
  %pro0.cv.src1 = getelementptr bfloat, ptr addrspace(1) %v_base, i64 %pro0.cv.soff1
  %pro0.cv.dst1 = getelementptr i8, ptr addrspace(3) %pro0.v, i32 %kvcp.dst1
  %pro0.cv.n1 = select i1 %pro0.cv.ok1, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %pro0.cv.dst1, ptr addrspace(1) %pro0.cv.src1, i32 %pro0.cv.n1)
  %pro0.cv.grow2 = add i32 0, %kvcp.row2
  %pro0.cv.ok2 = icmp ult i32 %pro0.cv.grow2, %kv_len
  %pro0.cv.srow2 = select i1 %pro0.cv.ok2, i32 %pro0.cv.grow2, i32 %kv_last
  %pro0.cv.srow64_2 = zext i32 %pro0.cv.srow2 to i64
  %pro0.cv.soffr2 = mul i64 %pro0.cv.srow64_2, %stride_vk
  %pro0.cv.soff2 = add i64 %pro0.cv.soffr2, %kvcp.col2
  %pro0.cv.src2 = getelementptr bfloat, ptr addrspace(1) %v_base, i64 %pro0.cv.soff2
  %pro0.cv.dst2 = getelementptr i8, ptr addrspace(3) %pro0.v, i32 %kvcp.dst2
  %pro0.cv.n2 = select i1 %pro0.cv.ok2, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %pro0.cv.dst2, ptr addrspace(1) %pro0.cv.src2, i32 %pro0.cv.n2)
  %pro0.cv.grow3 = add i32 0, %kvcp.row3
  %pro0.cv.ok3 = icmp ult i32 %pro0.cv.grow3, %kv_len
  %pro0.cv.srow3 = select i1 %pro0.cv.ok3, i32 %pro0.cv.grow3, i32 %kv_last
  %pro0.cv.srow64_3 = zext i32 %pro0.cv.srow3 to i64
  %pro0.cv.soffr3 = mul i64 %pro0.cv.srow64_3, %stride_vk
  %pro0.cv.soff3 = add i64 %pro0.cv.soffr3, %kvcp.col3
  %pro0.cv.src3 = getelementptr bfloat, ptr addrspace(1) %v_base, i64 %pro0.cv.soff3
  %pro0.cv.dst3 = getelementptr i8, ptr addrspace(3) %pro0.v, i32 %kvcp.dst3
  %pro0.cv.n3 = select i1 %pro0.cv.ok3, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %pro0.cv.dst3, ptr addrspace(1) %pro0.cv.src3, i32 %pro0.cv.n3)
  br label %pro0.done
pro0.done:
  call void @llvm.nvvm.cp.async.commit.group()
  %pro1.go = icmp ult i32 1, %n_total
  br i1 %pro1.go, label %pro1.copy, label %pro1.done
pro1.copy:
  %pro1.k = getelementptr i8, ptr addrspace(3) %kv_smem, i32 16384
  %pro1.v = getelementptr i8, ptr addrspace(3) %kv_smem, i32 24576


  %pro1.ck.grow0 = add i32 64, %kvcp.row0
  %pro1.ck.ok0 = icmp ult i32 %pro1.ck.grow0, %kv_len
  %pro1.ck.srow0 = select i1 %pro1.ck.ok0, i32 %pro1.ck.grow0, i32 %kv_last
  %pro1.ck.srow64_0 = zext i32 %pro1.ck.srow0 to i64
  %pro1.ck.soffr0 = mul i64 %pro1.ck.srow64_0, %stride_kn
  %pro1.ck.soff0 = add i64 %pro1.ck.soffr0, %kvcp.col0
  %pro1.ck.src0 = getelementptr bfloat, ptr addrspace(1) %k_base, i64 %pro1.ck.soff0
  %pro1.ck.dst0 = getelementptr i8, ptr addrspace(3) %pro1.k, i32 %kvcp.dst0
  %pro1.ck.n0 = select i1 %pro1.ck.ok0, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %pro1.ck.dst0, ptr addrspace(1) %pro1.ck.src0, i32 %pro1.ck.n0)
  %pro1.ck.grow1 = add i32 64, %kvcp.row1
  %pro1.ck.ok1 = icmp ult i32 %pro1.ck.grow1, %kv_len
  %pro1.ck.srow1 = select i1 %pro1.ck.ok1, i32 %pro1.ck.grow1, i32 %kv_last
  %pro1.ck.srow64_1 = zext i32 %pro1.ck.srow1 to i64
  %pro1.ck.soffr1 = mul i64 %pro1.ck.srow64_1, %stride_kn
  %pro1.ck.soff1 = add i64 %pro1.ck.soffr1, %kvcp.col1
  %pro1.ck.src1 = getelementptr bfloat, ptr addrspace(1) %k_base, i64 %pro1.ck.soff1
  %pro1.ck.dst1 = getelementptr i8, ptr addrspace(3) %pro1.k, i32 %kvcp.dst1
  %pro1.ck.n1 = select i1 %pro1.ck.ok1, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %pro1.ck.dst1, ptr addrspace(1) %pro1.ck.src1, i32 %pro1.ck.n1)
  %pro1.ck.grow2 = add i32 64, %kvcp.row2
  %pro1.ck.ok2 = icmp ult i32 %pro1.ck.grow2, %kv_len
  %pro1.ck.srow2 = select i1 %pro1.ck.ok2, i32 %pro1.ck.grow2, i32 %kv_last
  %pro1.ck.srow64_2 = zext i32 %pro1.ck.srow2 to i64
  %pro1.ck.soffr2 = mul i64 %pro1.ck.srow64_2, %stride_kn
  %pro1.ck.soff2 = add i64 %pro1.ck.soffr2, %kvcp.col2
  %pro1.ck.src2 = getelementptr bfloat, ptr addrspace(1) %k_base, i64 %pro1.ck.soff2
  %pro1.ck.dst2 = getelementptr i8, ptr addrspace(3) %pro1.k, i32 %kvcp.dst2
  %pro1.ck.n2 = select i1 %pro1.ck.ok2, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %pro1.ck.dst2, ptr addrspace(1) %pro1.ck.src2, i32 %pro1.ck.n2)
  %pro1.ck.grow3 = add i32 64, %kvcp.row3
  %pro1.ck.ok3 = icmp ult i32 %pro1.ck.grow3, %kv_len
  %pro1.ck.srow3 = select i1 %pro1.ck.ok3, i32 %pro1.ck.grow3, i32 %kv_last
  %pro1.ck.srow64_3 = zext i32 %pro1.ck.srow3 to i64
  %pro1.ck.soffr3 = mul i64 %pro1.ck.srow64_3, %stride_kn
  %pro1.ck.soff3 = add i64 %pro1.ck.soffr3, %kvcp.col3
  %pro1.ck.src3 = getelementptr bfloat, ptr addrspace(1) %k_base, i64 %pro1.ck.soff3
  %pro1.ck.dst3 = getelementptr i8, ptr addrspace(3) %pro1.k, i32 %kvcp.dst3
  %pro1.ck.n3 = select i1 %pro1.ck.ok3, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %pro1.ck.dst3, ptr addrspace(1) %pro1.ck.src3, i32 %pro1.ck.n3)


  %pro1.cv.grow0 = add i32 64, %kvcp.row0
  %pro1.cv.ok0 = icmp ult i32 %pro1.cv.grow0, %kv_len
  %pro1.cv.srow0 = select i1 %pro1.cv.ok0, i32 %pro1.cv.grow0, i32 %kv_last
  %pro1.cv.srow64_0 = zext i32 %pro1.cv.srow0 to i64
  %pro1.cv.soffr0 = mul i64 %pro1.cv.srow64_0, %stride_vk
  %pro1.cv.soff0 = add i64 %pro1.cv.soffr0, %kvcp.col0
  %pro1.cv.src0 = getelementptr bfloat, ptr addrspace(1) %v_base, i64 %pro1.cv.soff0
  %pro1.cv.dst0 = getelementptr i8, ptr addrspace(3) %pro1.v, i32 %kvcp.dst0
  %pro1.cv.n0 = select i1 %pro1.cv.ok0, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %pro1.cv.dst0, ptr addrspace(1) %pro1.cv.src0, i32 %pro1.cv.n0)
  %pro1.cv.grow1 = add i32 64, %kvcp.row1
  %pro1.cv.ok1 = icmp ult i32 %pro1.cv.grow1, %kv_len
  %pro1.cv.srow1 = select i1 %pro1.cv.ok1, i32 %pro1.cv.grow1, i32 %kv_last
  %pro1.cv.srow64_1 = zext i32 %pro1.cv.srow1 to i64
  %pro1.cv.soffr1 = mul i64 %pro1.cv.srow64_1, %stride_vk
  %pro1.cv.soff1 = add i64 %pro1.cv.soffr1, %kvcp.col1
  %pro1.cv.src1 = getelementptr bfloat, ptr addrspace(1) %v_base, i64 %pro1.cv.soff1
  %pro1.cv.dst1 = getelementptr i8, ptr addrspace(3) %pro1.v, i32 %kvcp.dst1
  %pro1.cv.n1 = select i1 %pro1.cv.ok1, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %pro1.cv.dst1, ptr addrspace(1) %pro1.cv.src1, i32 %pro1.cv.n1)
  %pro1.cv.grow2 = add i32 64, %kvcp.row2
  %pro1.cv.ok2 = icmp ult i32 %pro1.cv.grow2, %kv_len
  %pro1.cv.srow2 = select i1 %pro1.cv.ok2, i32 %pro1.cv.grow2, i32 %kv_last
  %pro1.cv.srow64_2 = zext i32 %pro1.cv.srow2 to i64
  %pro1.cv.soffr2 = mul i64 %pro1.cv.srow64_2, %stride_vk
  %pro1.cv.soff2 = add i64 %pro1.cv.soffr2, %kvcp.col2
  %pro1.cv.src2 = getelementptr bfloat, ptr addrspace(1) %v_base, i64 %pro1.cv.soff2
  %pro1.cv.dst2 = getelementptr i8, ptr addrspace(3) %pro1.v, i32 %kvcp.dst2
  %pro1.cv.n2 = select i1 %pro1.cv.ok2, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %pro1.cv.dst2, ptr addrspace(1) %pro1.cv.src2, i32 %pro1.cv.n2)
  %pro1.cv.grow3 = add i32 64, %kvcp.row3
  %pro1.cv.ok3 = icmp ult i32 %pro1.cv.grow3, %kv_len
  %pro1.cv.srow3 = select i1 %pro1.cv.ok3, i32 %pro1.cv.grow3, i32 %kv_last
  %pro1.cv.srow64_3 = zext i32 %pro1.cv.srow3 to i64
  %pro1.cv.soffr3 = mul i64 %pro1.cv.srow64_3, %stride_vk
  %pro1.cv.soff3 = add i64 %pro1.cv.soffr3, %kvcp.col3
  %pro1.cv.src3 = getelementptr bfloat, ptr addrspace(1) %v_base, i64 %pro1.cv.soff3
  %pro1.cv.dst3 = getelementptr i8, ptr addrspace(3) %pro1.v, i32 %kvcp.dst3
  %pro1.cv.n3 = select i1 %pro1.cv.ok3, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %pro1.cv.dst3, ptr addrspace(1) %pro1.cv.src3, i32 %pro1.cv.n3)
  br label %pro1.done
pro1.done:
  call void @llvm.nvvm.cp.async.commit.group()

  ; ---- Q tile resident: its fragments stay in registers for the whole loop ----
  call void @llvm.nvvm.cp.async.wait.group(i32 2)
  call void @llvm.nvvm.barrier0()
  %q_warp_bytes = mul i32 %warp, 4096
%qf.lane_bytes = add i32 %q_warp_bytes, %lane_row16_bytes
  %qfa0_0.c = add i32 %lane_q4, 0
  %qfa0_0.s = xor i32 %qfa0_0.c, %lane7
  %qfa0_0.b = shl i32 %qfa0_0.s, 4
  %qfa0_0.o0 = add i32 %qf.lane_bytes, 0
  %qfa0_0.o = add i32 %qfa0_0.o0, %qfa0_0.b
  %qfa0_0 = getelementptr i8, ptr addrspace(3) %tiles, i32 %qfa0_0.o
%qf0_0.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %qfa0_0)
  %qf0_0.0 = extractvalue {i32, i32, i32, i32} %qf0_0.r, 0
  %qf0_0.1 = extractvalue {i32, i32, i32, i32} %qf0_0.r, 1
  %qf0_0.2 = extractvalue {i32, i32, i32, i32} %qf0_0.r, 2
  %qf0_0.3 = extractvalue {i32, i32, i32, i32} %qf0_0.r, 3
  %qfa0_1.c = add i32 %lane_q4, 2
  %qfa0_1.s = xor i32 %qfa0_1.c, %lane7
  %qfa0_1.b = shl i32 %qfa0_1.s, 4
  %qfa0_1.o0 = add i32 %qf.lane_bytes, 0
  %qfa0_1.o = add i32 %qfa0_1.o0, %qfa0_1.b
  %qfa0_1 = getelementptr i8, ptr addrspace(3) %tiles, i32 %qfa0_1.o
%qf0_1.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %qfa0_1)
  %qf0_1.0 = extractvalue {i32, i32, i32, i32} %qf0_1.r, 0
  %qf0_1.1 = extractvalue {i32, i32, i32, i32} %qf0_1.r, 1
  %qf0_1.2 = extractvalue {i32, i32, i32, i32} %qf0_1.r, 2
  %qf0_1.3 = extractvalue {i32, i32, i32, i32} %qf0_1.r, 3
  %qfa0_2.c = add i32 %lane_q4, 4
  %qfa0_2.s = xor i32 %qfa0_2.c, %lane7
  %qfa0_2.b = shl i32 %qfa0_2.s, 4
  %qfa0_2.o0 = add i32 %qf.lane_bytes, 0
  %qfa0_2.o = add i32 %qfa0_2.o0, %qfa0_2.b
  %qfa0_2 = getelementptr i8, ptr addrspace(3) %tiles, i32 %qfa0_2.o
%qf0_2.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %qfa0_2)
  %qf0_2.0 = extractvalue {i32, i32, i32, i32} %qf0_2.r, 0
  %qf0_2.1 = extractvalue {i32, i32, i32, i32} %qf0_2.r, 1
  %qf0_2.2 = extractvalue {i32, i32, i32, i32} %qf0_2.r, 2
  %qf0_2.3 = extractvalue {i32, i32, i32, i32} %qf0_2.r, 3
  %qfa0_3.c = add i32 %lane_q4, 6
  %qfa0_3.s = xor i32 %qfa0_3.c, %lane7
  %qfa0_3.b = shl i32 %qfa0_3.s, 4
  %qfa0_3.o0 = add i32 %qf.lane_bytes, 0
  %qfa0_3.o = add i32 %qfa0_3.o0, %qfa0_3.b
  %qfa0_3 = getelementptr i8, ptr addrspace(3) %tiles, i32 %qfa0_3.o
%qf0_3.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %qfa0_3)
  %qf0_3.0 = extractvalue {i32, i32, i32, i32} %qf0_3.r, 0
  %qf0_3.1 = extractvalue {i32, i32, i32, i32} %qf0_3.r, 1
  %qf0_3.2 = extractvalue {i32, i32, i32, i32} %qf0_3.r, 2
  %qf0_3.3 = extractvalue {i32, i32, i32, i32} %qf0_3.r, 3
  %qfa1_0.c = add i32 %lane_q4, 0
  %qfa1_0.s = xor i32 %qfa1_0.c, %lane7
  %qfa1_0.b = shl i32 %qfa1_0.s, 4
  %qfa1_0.o0 = add i32 %qf.lane_bytes, 2048
  %qfa1_0.o = add i32 %qfa1_0.o0, %qfa1_0.b
  %qfa1_0 = getelementptr i8, ptr addrspace(3) %tiles, i32 %qfa1_0.o
%qf1_0.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %qfa1_0)
  %qf1_0.0 = extractvalue {i32, i32, i32, i32} %qf1_0.r, 0
  %qf1_0.1 = extractvalue {i32, i32, i32, i32} %qf1_0.r, 1
  %qf1_0.2 = extractvalue {i32, i32, i32, i32} %qf1_0.r, 2
  %qf1_0.3 = extractvalue {i32, i32, i32, i32} %qf1_0.r, 3
  %qfa1_1.c = add i32 %lane_q4, 2
  %qfa1_1.s = xor i32 %qfa1_1.c, %lane7
  %qfa1_1.b = shl i32 %qfa1_1.s, 4
  %qfa1_1.o0 = add i32 %qf.lane_bytes, 2048
  %qfa1_1.o = add i32 %qfa1_1.o0, %qfa1_1.b
  %qfa1_1 = getelementptr i8, ptr addrspace(3) %tiles, i32 %qfa1_1.o
%qf1_1.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %qfa1_1)
  %qf1_1.0 = extractvalue {i32, i32, i32, i32} %qf1_1.r, 0
  %qf1_1.1 = extractvalue {i32, i32, i32, i32} %qf1_1.r, 1
  %qf1_1.2 = extractvalue {i32, i32, i32, i32} %qf1_1.r, 2
  %qf1_1.3 = extractvalue {i32, i32, i32, i32} %qf1_1.r, 3
  %qfa1_2.c = add i32 %lane_q4, 4
  %qfa1_2.s = xor i32 %qfa1_2.c, %lane7
  %qfa1_2.b = shl i32 %qfa1_2.s, 4
  %qfa1_2.o0 = add i32 %qf.lane_bytes, 2048
  %qfa1_2.o = add i32 %qfa1_2.o0, %qfa1_2.b
  %qfa1_2 = getelementptr i8, ptr addrspace(3) %tiles, i32 %qfa1_2.o
%qf1_2.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %qfa1_2)
  %qf1_2.0 = extractvalue {i32, i32, i32, i32} %qf1_2.r, 0
  %qf1_2.1 = extractvalue {i32, i32, i32, i32} %qf1_2.r, 1
  %qf1_2.2 = extractvalue {i32, i32, i32, i32} %qf1_2.r, 2
  %qf1_2.3 = extractvalue {i32, i32, i32, i32} %qf1_2.r, 3
  %qfa1_3.c = add i32 %lane_q4, 6
  %qfa1_3.s = xor i32 %qfa1_3.c, %lane7
  %qfa1_3.b = shl i32 %qfa1_3.s, 4
  %qfa1_3.o0 = add i32 %qf.lane_bytes, 2048
  %qfa1_3.o = add i32 %qfa1_3.o0, %qfa1_3.b
  %qfa1_3 = getelementptr i8, ptr addrspace(3) %tiles, i32 %qfa1_3.o
%qf1_3.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %qfa1_3)
  %qf1_3.0 = extractvalue {i32, i32, i32, i32} %qf1_3.r, 0
  %qf1_3.1 = extractvalue {i32, i32, i32, i32} %qf1_3.r, 1
  %qf1_3.2 = extractvalue {i32, i32, i32, i32} %qf1_3.r, 2
  %qf1_3.3 = extractvalue {i32, i32, i32, i32} %qf1_3.r, 3
  br label %entry_end
entry_end:
  br label %kv.head
; ======== the K/V loop, STAGE=1 (non-causal), blocks 0 .. n_total-1:
;   inner stage 3: every full block (j < n_full) without a mask, then the ragged edge block (if
;   N_CTX is not a multiple of BLOCK_N) with the bounds mask.
; Loop-carried state starts at m_i = -inf, l_i = 1.0 (cancelled by alpha = 0 on the first block), acc = 0.
; One body serves both inner stages (the mask is a block of its own), so the kernel's code is not doubled.
kv.head:
  %kv.j = phi i32 [ 0, %entry_end ], [ %kv.next, %kv.latch ]
  %kv.in.m0_0 = phi float [ 0xFFF0000000000000, %entry_end ], [ %kv.mij0_0, %kv.latch ]
  %kv.in.l0_0 = phi float [ 1.0, %entry_end ], [ %kv.ls0_0_8, %kv.latch ]
  %kv.in.m0_1 = phi float [ 0xFFF0000000000000, %entry_end ], [ %kv.mij0_1, %kv.latch ]
  %kv.in.l0_1 = phi float [ 1.0, %entry_end ], [ %kv.ls0_1_8, %kv.latch ]
  %kv.in.m1_0 = phi float [ 0xFFF0000000000000, %entry_end ], [ %kv.mij1_0, %kv.latch ]
  %kv.in.l1_0 = phi float [ 1.0, %entry_end ], [ %kv.ls1_0_8, %kv.latch ]
  %kv.in.m1_1 = phi float [ 0xFFF0000000000000, %entry_end ], [ %kv.mij1_1, %kv.latch ]
  %kv.in.l1_1 = phi float [ 1.0, %entry_end ], [ %kv.ls1_1_8, %kv.latch ]
  %kv.in.acc0_0.0 = phi float [ 0.0, %entry_end ], [ %kv.acc0_0_k3.0, %kv.latch ]
  %kv.in.acc0_0.1 = phi float [ 0.0, %entry_end ], [ %kv.acc0_0_k3.1, %kv.latch ]
  %kv.in.acc0_0.2 = phi float [ 0.0, %entry_end ], [ %kv.acc0_0_k3.2, %kv.latch ]
  %kv.in.acc0_0.3 = phi float [ 0.0, %entry_end ], [ %kv.acc0_0_k3.3, %kv.latch ]
  %kv.in.acc0_1.0 = phi float [ 0.0, %entry_end ], [ %kv.acc0_1_k3.0, %kv.latch ]
  %kv.in.acc0_1.1 = phi float [ 0.0, %entry_end ], [ %kv.acc0_1_k3.1, %kv.latch ]
  %kv.in.acc0_1.2 = phi float [ 0.0, %entry_end ], [ %kv.acc0_1_k3.2, %kv.latch ]
  %kv.in.acc0_1.3 = phi float [ 0.0, %entry_end ], [ %kv.acc0_1_k3.3, %kv.latch ]
  %kv.in.acc0_2.0 = phi float [ 0.0, %entry_end ], [ %kv.acc0_2_k3.0, %kv.latch ]
  %kv.in.acc0_2.1 = phi float [ 0.0, %entry_end ], [ %kv.acc0_2_k3.1, %kv.latch ]
  %kv.in.acc0_2.2 = phi float [ 0.0, %entry_end ], [ %kv.acc0_2_k3.2, %kv.latch ]
  %kv.in.acc0_2.3 = phi float [ 0.0, %entry_end ], [ %kv.acc0_2_k3.3, %kv.latch ]
  %kv.in.acc0_3.0 = phi float [ 0.0, %entry_end ], [ %kv.acc0_3_k3.0, %kv.latch ]
  %kv.in.acc0_3.1 = phi float [ 0.0, %entry_end ], [ %kv.acc0_3_k3.1, %kv.latch ]
  %kv.in.acc0_3.2 = phi float [ 0.0, %entry_end ], [ %kv.acc0_3_k3.2, %kv.latch ]
  %kv.in.acc0_3.3 = phi float [ 0.0, %entry_end ], [ %kv.acc0_3_k3.3, %kv.latch ]
  %kv.in.acc0_4.0 = phi float [ 0.0, %entry_end ], [ %kv.acc0_4_k3.0, %kv.latch ]
  %kv.in.acc0_4.1 = phi float [ 0.0, %entry_end ], [ %kv.acc0_4_k3.1, %kv.latch ]
  %kv.in.acc0_4.2 = phi float [ 0.0, %entry_end ], [ %kv.acc0_4_k3.2, %kv.latch ]
  %kv.in.acc0_4.3 = phi float [ 0.0, %entry_end ], [ %kv.acc0_4_k3.3, %kv.latch ]
  %kv.in.acc0_5.0 = phi float [ 0.0, %entry_end ], [ %kv.acc0_5_k3.0, %kv.latch ]
  %kv.in.acc0_5.1 = phi float [ 0.0, %entry_end ], [ %kv.acc0_5_k3.1, %kv.latch ]
  %kv.in.acc0_5.2 = phi float [ 0.0, %entry_end ], [ %kv.acc0_5_k3.2, %kv.latch ]
  %kv.in.acc0_5.3 = phi float [ 0.0, %entry_end ], [ %kv.acc0_5_k3.3, %kv.latch ]
  %kv.in.acc0_6.0 = phi float [ 0.0, %entry_end ], [ %kv.acc0_6_k3.0, %kv.latch ]
  %kv.in.acc0_6.1 = phi float [ 0.0, %entry_end ], [ %kv.acc0_6_k3.1, %kv.latch ]
  %kv.in.acc0_6.2 = phi float [ 0.0, %entry_end ], [ %kv.acc0_6_k3.2, %kv.latch ]
  %kv.in.acc0_6.3 = phi float [ 0.0, %entry_end ], [ %kv.acc0_6_k3.3, %kv.latch ]
  %kv.in.acc0_7.0 = phi float [ 0.0, %entry_end ], [ %kv.acc0_7_k3.0, %kv.latch ]
  %kv.in.acc0_7.1 = phi float [ 0.0, %entry_end ], [ %kv.acc0_7_k3.1, %kv.latch ]
  %kv.in.acc0_7.2 = phi float [ 0.0, %entry_end ], [ %kv.acc0_7_k3.2, %kv.latch ]
  %kv.in.acc0_7.3 = phi float [ 0.0, %entry_end ], [ %kv.acc0_7_k3.3, %kv.latch ]
  %kv.in.acc1_0.0 = phi float [ 0.0, %entry_end ], [ %kv.acc1_0_k3.0, %kv.latch ]
  %kv.in.acc1_0.1 = phi float [ 0.0, %entry_end ], [ %kv.acc1_0_k3.1, %kv.latch ]
  %kv.in.acc1_0.2 = phi float [ 0.0, %entry_end ], [ %kv.acc1_0_k3.2, %kv.latch ]
  %kv.in.acc1_0.3 = phi float [ 0.0, %entry_end ], [ %kv.acc1_0_k3.3, %kv.latch ]
  %kv.in.acc1_1.0 = phi float [ 0.0, %entry_end ], [ %kv.acc1_1_k3.0, %kv.latch ]
  %kv.in.acc1_1.1 = phi float [ 0.0, %entry_end ], [ %kv.acc1_1_k3.1, %kv.latch ]
  %kv.in.acc1_1.2 = phi float [ 0.0, %entry_end ], [ %kv.acc1_1_k3.2, %kv.latch ]
  %kv.in.acc1_1.3 = phi float [ 0.0, %entry_end ], [ %kv.acc1_1_k3.3, %kv.latch ]
  %kv.in.acc1_2.0 = phi float [ 0.0, %entry_end ], [ %kv.acc1_2_k3.0, %kv.latch ]
  %kv.in.acc1_2.1 = phi float [ 0.0, %entry_end ], [ %kv.acc1_2_k3.1, %kv.latch ]
  %kv.in.acc1_2.2 = phi float [ 0.0, %entry_end ], [ %kv.acc1_2_k3.2, %kv.latch ]
  %kv.in.acc1_2.3 = phi float [ 0.0, %entry_end ], [ %kv.acc1_2_k3.3, %kv.latch ]
  %kv.in.acc1_3.0 = phi float [ 0.0, %entry_end ], [ %kv.acc1_3_k3.0, %kv.latch ]
  %kv.in.acc1_3.1 = phi float [ 0.0, %entry_end ], [ %kv.acc1_3_k3.1, %kv.latch ]
  %kv.in.acc1_3.2 = phi float [ 0.0, %entry_end ], [ %kv.acc1_3_k3.2, %kv.latch ]
  %kv.in.acc1_3.3 = phi float [ 0.0, %entry_end ], [ %kv.acc1_3_k3.3, %kv.latch ]
  %kv.in.acc1_4.0 = phi float [ 0.0, %entry_end ], [ %kv.acc1_4_k3.0, %kv.latch ]
  %kv.in.acc1_4.1 = phi float [ 0.0, %entry_end ], [ %kv.acc1_4_k3.1, %kv.latch ]
  %kv.in.acc1_4.2 = phi float [ 0.0, %entry_end ], [ %kv.acc1_4_k3.2, %kv.latch ]
  %kv.in.acc1_4.3 = phi float [ 0.0, %entry_end ], [ %kv.acc1_4_k3.3, %kv.latch ]
  %kv.in.acc1_5.0 = phi float [ 0.0, %entry_end ], [ %kv.acc1_5_k3.0, %kv.latch ]
  %kv.in.acc1_5.1 = phi float [ 0.0, %entry_end ], [ %kv.acc1_5_k3.1, %kv.latch ]
  %kv.in.acc1_5.2 = phi float [ 0.0, %entry_end ], [ %kv.acc1_5_k3.2, %kv.latch ]
  %kv.in.acc1_5.3 = phi float [ 0.0, %entry_end ], [ %kv.acc1_5_k3.3, %kv.latch ]
  %kv.in.acc1_6.0 = phi float [ 0.0, %entry_end ], [ %kv.acc1_6_k3.0, %kv.latch ]
  %kv.in.acc1_6.1 = phi float [ 0.0, %entry_end ], [ %kv.acc1_6_k3.1, %kv.latch ]
  %kv.in.acc1_6.2 = phi float [ 0.0, %entry_end ], [ %kv.acc1_6_k3.2, %kv.latch ]
  %kv.in.acc1_6.3 = phi float [ 0.0, %entry_end ], [ %kv.acc1_6_k3.3, %kv.latch ]
  %kv.in.acc1_7.0 = phi float [ 0.0, %entry_end ], [ %kv.acc1_7_k3.0, %kv.latch ]
  %kv.in.acc1_7.1 = phi float [ 0.0, %entry_end ], [ %kv.acc1_7_k3.1, %kv.latch ]
  %kv.in.acc1_7.2 = phi float [ 0.0, %entry_end ], [ %kv.acc1_7_k3.2, %kv.latch ]
  %kv.in.acc1_7.3 = phi float [ 0.0, %entry_end ], [ %kv.acc1_7_k3.3, %kv.latch ]
  %kv.go = icmp ult i32 %kv.j, %n_total
  br i1 %kv.go, label %kv.body, label %epilogue
kv.body:
  ; ---- wait for block j's K/V, then refill the slot block j-1 used with block j + NUM_STAGES - 1 ----
  call void @llvm.nvvm.cp.async.wait.group(i32 1)
  call void @llvm.nvvm.barrier0()
  %kv.jn = add i32 %kv.j, 2
  %kv.do_pf = icmp ult i32 %kv.jn, %n_total
  br i1 %kv.do_pf, label %kv.prefetch, label %kv.compute
kv.prefetch:
  %kv.pslot = urem i32 %kv.jn, 3
  %kv.pslot_off = mul i32 %kv.pslot, 16384
  %kv.pk = getelementptr i8, ptr addrspace(3) %kv_smem, i32 %kv.pslot_off
  %kv.pv = getelementptr i8, ptr addrspace(3) %kv.pk, i32 8192
  %kv.prow = mul i32 %kv.jn, 64


  %kv.ck.grow0 = add i32 %kv.prow, %kvcp.row0
  %kv.ck.ok0 = icmp ult i32 %kv.ck.grow0, %kv_len
  %kv.ck.srow0 = select i1 %kv.ck.ok0, i32 %kv.ck.grow0, i32 %kv_last
  %kv.ck.srow64_0 = zext i32 %kv.ck.srow0 to i64
  %kv.ck.soffr0 = mul i64 %kv.ck.srow64_0, %stride_kn
  %kv.ck.soff0 = add i64 %kv.ck.soffr0, %kvcp.col0
  %kv.ck.src0 = getelementptr bfloat, ptr addrspace(1) %k_base, i64 %kv.ck.soff0
  %kv.ck.dst0 = getelementptr i8, ptr addrspace(3) %kv.pk, i32 %kvcp.dst0
  %kv.ck.n0 = select i1 %kv.ck.ok0, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %kv.ck.dst0, ptr addrspace(1) %kv.ck.src0, i32 %kv.ck.n0)
  %kv.ck.grow1 = add i32 %kv.prow, %kvcp.row1
  %kv.ck.ok1 = icmp ult i32 %kv.ck.grow1, %kv_len
  %kv.ck.srow1 = select i1 %kv.ck.ok1, i32 %kv.ck.grow1, i32 %kv_last
  %kv.ck.srow64_1 = zext i32 %kv.ck.srow1 to i64
  %kv.ck.soffr1 = mul i64 %kv.ck.srow64_1, %stride_kn
  %kv.ck.soff1 = add i64 %kv.ck.soffr1, %kvcp.col1
  %kv.ck.src1 = getelementptr bfloat, ptr addrspace(1) %k_base, i64 %kv.ck.soff1
  %kv.ck.dst1 = getelementptr i8, ptr addrspace(3) %kv.pk, i32 %kvcp.dst1
  %kv.ck.n1 = select i1 %kv.ck.ok1, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %kv.ck.dst1, ptr addrspace(1) %kv.ck.src1, i32 %kv.ck.n1)
  %kv.ck.grow2 = add i32 %kv.prow, %kvcp.row2
  %kv.ck.ok2 = icmp ult i32 %kv.ck.grow2, %kv_len
  %kv.ck.srow2 = select i1 %kv.ck.ok2, i32 %kv.ck.grow2, i32 %kv_last
  %kv.ck.srow64_2 = zext i32 %kv.ck.srow2 to i64
  %kv.ck.soffr2 = mul i64 %kv.ck.srow64_2, %stride_kn
  %kv.ck.soff2 = add i64 %kv.ck.soffr2, %kvcp.col2
  %kv.ck.src2 = getelementptr bfloat, ptr addrspace(1) %k_base, i64 %kv.ck.soff2
  %kv.ck.dst2 = getelementptr i8, ptr addrspace(3) %kv.pk, i32 %kvcp.dst2
  %kv.ck.n2 = select i1 %kv.ck.ok2, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %kv.ck.dst2, ptr addrspace(1) %kv.ck.src2, i32 %kv.ck.n2)
  %kv.ck.grow3 = add i32 %kv.prow, %kvcp.row3
  %kv.ck.ok3 = icmp ult i32 %kv.ck.grow3, %kv_len
  %kv.ck.srow3 = select i1 %kv.ck.ok3, i32 %kv.ck.grow3, i32 %kv_last
  %kv.ck.srow64_3 = zext i32 %kv.ck.srow3 to i64
  %kv.ck.soffr3 = mul i64 %kv.ck.srow64_3, %stride_kn
  %kv.ck.soff3 = add i64 %kv.ck.soffr3, %kvcp.col3
  %kv.ck.src3 = getelementptr bfloat, ptr addrspace(1) %k_base, i64 %kv.ck.soff3
  %kv.ck.dst3 = getelementptr i8, ptr addrspace(3) %kv.pk, i32 %kvcp.dst3
  %kv.ck.n3 = select i1 %kv.ck.ok3, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %kv.ck.dst3, ptr addrspace(1) %kv.ck.src3, i32 %kv.ck.n3)


  %kv.cv.grow0 = add i32 %kv.prow, %kvcp.row0
  %kv.cv.ok0 = icmp ult i32 %kv.cv.grow0, %kv_len
  %kv.cv.srow0 = select i1 %kv.cv.ok0, i32 %kv.cv.grow0, i32 %kv_last
  %kv.cv.srow64_0 = zext i32 %kv.cv.srow0 to i64
  %kv.cv.soffr0 = mul i64 %kv.cv.srow64_0, %stride_vk
  %kv.cv.soff0 = add i64 %kv.cv.soffr0, %kvcp.col0
  %kv.cv.src0 = getelementptr bfloat, ptr addrspace(1) %v_base, i64 %kv.cv.soff0
  %kv.cv.dst0 = getelementptr i8, ptr addrspace(3) %kv.pv, i32 %kvcp.dst0
  %kv.cv.n0 = select i1 %kv.cv.ok0, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %kv.cv.dst0, ptr addrspace(1) %kv.cv.src0, i32 %kv.cv.n0)
  %kv.cv.grow1 = add i32 %kv.prow, %kvcp.row1
  %kv.cv.ok1 = icmp ult i32 %kv.cv.grow1, %kv_len
  %kv.cv.srow1 = select i1 %kv.cv.ok1, i32 %kv.cv.grow1, i32 %kv_last
  %kv.cv.srow64_1 = zext i32 %kv.cv.srow1 to i64
  %kv.cv.soffr1 = mul i64 %kv.cv.srow64_1, %stride_vk
  %kv.cv.soff1 = add i64 %kv.cv.soffr1, %kvcp.col1
  %kv.cv.src1 = getelementptr bfloat, ptr addrspace(1) %v_base, i64 %kv.cv.soff1
  %kv.cv.dst1 = getelementptr i8, ptr addrspace(3) %kv.pv, i32 %kvcp.dst1
  %kv.cv.n1 = select i1 %kv.cv.ok1, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %kv.cv.dst1, ptr addrspace(1) %kv.cv.src1, i32 %kv.cv.n1)
  %kv.cv.grow2 = add i32 %kv.prow, %kvcp.row2
  %kv.cv.ok2 = icmp ult i32 %kv.cv.grow2, %kv_len
  %kv.cv.srow2 = select i1 %kv.cv.ok2, i32 %kv.cv.grow2, i32 %kv_last
  %kv.cv.srow64_2 = zext i32 %kv.cv.srow2 to i64
  %kv.cv.soffr2 = mul i64 %kv.cv.srow64_2, %stride_vk
  %kv.cv.soff2 = add i64 %kv.cv.soffr2, %kvcp.col2
  %kv.cv.src2 = getelementptr bfloat, ptr addrspace(1) %v_base, i64 %kv.cv.soff2
  %kv.cv.dst2 = getelementptr i8, ptr addrspace(3) %kv.pv, i32 %kvcp.dst2
  %kv.cv.n2 = select i1 %kv.cv.ok2, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %kv.cv.dst2, ptr addrspace(1) %kv.cv.src2, i32 %kv.cv.n2)
  %kv.cv.grow3 = add i32 %kv.prow, %kvcp.row3
  %kv.cv.ok3 = icmp ult i32 %kv.cv.grow3, %kv_len
  %kv.cv.srow3 = select i1 %kv.cv.ok3, i32 %kv.cv.grow3, i32 %kv_last
  %kv.cv.srow64_3 = zext i32 %kv.cv.srow3 to i64
  %kv.cv.soffr3 = mul i64 %kv.cv.srow64_3, %stride_vk
  %kv.cv.soff3 = add i64 %kv.cv.soffr3, %kvcp.col3
  %kv.cv.src3 = getelementptr bfloat, ptr addrspace(1) %v_base, i64 %kv.cv.soff3
  %kv.cv.dst3 = getelementptr i8, ptr addrspace(3) %kv.pv, i32 %kvcp.dst3
  %kv.cv.n3 = select i1 %kv.cv.ok3, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %kv.cv.dst3, ptr addrspace(1) %kv.cv.src3, i32 %kv.cv.n3)
  br label %kv.compute
kv.compute:
  call void @llvm.nvvm.cp.async.commit.group()
  %kv.slot = urem i32 %kv.j, 3
  %kv.slot_off = mul i32 %kv.slot, 16384
  %kv.kt = getelementptr i8, ptr addrspace(3) %kv_smem, i32 %kv.slot_off
  %kv.vt = getelementptr i8, ptr addrspace(3) %kv.kt, i32 8192
; ---- S = Q·Kᵀ (f32 accumulators; one ldmatrix.x4 of K feeds two k16 steps of one n8 tile) ----
  %kv.ka0_0 = getelementptr i8, ptr addrspace(3) %kv.kt, i32 0
  %kv.kaddr0_0 = getelementptr i8, ptr addrspace(3) %kv.ka0_0, i32 %k_lane_off0
%kv.kf0_0.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %kv.kaddr0_0)
  %kv.kf0_0.0 = extractvalue {i32, i32, i32, i32} %kv.kf0_0.r, 0
  %kv.kf0_0.1 = extractvalue {i32, i32, i32, i32} %kv.kf0_0.r, 1
  %kv.kf0_0.2 = extractvalue {i32, i32, i32, i32} %kv.kf0_0.r, 2
  %kv.kf0_0.3 = extractvalue {i32, i32, i32, i32} %kv.kf0_0.r, 3
%kv.s0_0_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_0.0, i32 %qf0_0.1, i32 %qf0_0.2, i32 %qf0_0.3, i32 %kv.kf0_0.0, i32 %kv.kf0_0.1, float 0.0, float 0.0, float 0.0, float 0.0)
  %kv.s0_0_k0.0 = extractvalue {float, float, float, float} %kv.s0_0_k0.r, 0
  %kv.s0_0_k0.1 = extractvalue {float, float, float, float} %kv.s0_0_k0.r, 1
  %kv.s0_0_k0.2 = extractvalue {float, float, float, float} %kv.s0_0_k0.r, 2
  %kv.s0_0_k0.3 = extractvalue {float, float, float, float} %kv.s0_0_k0.r, 3
%kv.s0_0_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_1.0, i32 %qf0_1.1, i32 %qf0_1.2, i32 %qf0_1.3, i32 %kv.kf0_0.2, i32 %kv.kf0_0.3, float %kv.s0_0_k0.0, float %kv.s0_0_k0.1, float %kv.s0_0_k0.2, float %kv.s0_0_k0.3)
  %kv.s0_0_k1.0 = extractvalue {float, float, float, float} %kv.s0_0_k1.r, 0
  %kv.s0_0_k1.1 = extractvalue {float, float, float, float} %kv.s0_0_k1.r, 1
  %kv.s0_0_k1.2 = extractvalue {float, float, float, float} %kv.s0_0_k1.r, 2
  %kv.s0_0_k1.3 = extractvalue {float, float, float, float} %kv.s0_0_k1.r, 3
%kv.s1_0_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_0.0, i32 %qf1_0.1, i32 %qf1_0.2, i32 %qf1_0.3, i32 %kv.kf0_0.0, i32 %kv.kf0_0.1, float 0.0, float 0.0, float 0.0, float 0.0)
  %kv.s1_0_k0.0 = extractvalue {float, float, float, float} %kv.s1_0_k0.r, 0
  %kv.s1_0_k0.1 = extractvalue {float, float, float, float} %kv.s1_0_k0.r, 1
  %kv.s1_0_k0.2 = extractvalue {float, float, float, float} %kv.s1_0_k0.r, 2
  %kv.s1_0_k0.3 = extractvalue {float, float, float, float} %kv.s1_0_k0.r, 3
%kv.s1_0_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_1.0, i32 %qf1_1.1, i32 %qf1_1.2, i32 %qf1_1.3, i32 %kv.kf0_0.2, i32 %kv.kf0_0.3, float %kv.s1_0_k0.0, float %kv.s1_0_k0.1, float %kv.s1_0_k0.2, float %kv.s1_0_k0.3)
  %kv.s1_0_k1.0 = extractvalue {float, float, float, float} %kv.s1_0_k1.r, 0
  %kv.s1_0_k1.1 = extractvalue {float, float, float, float} %kv.s1_0_k1.r, 1
  %kv.s1_0_k1.2 = extractvalue {float, float, float, float} %kv.s1_0_k1.r, 2
  %kv.s1_0_k1.3 = extractvalue {float, float, float, float} %kv.s1_0_k1.r, 3
  %kv.ka1_0 = getelementptr i8, ptr addrspace(3) %kv.kt, i32 1024
  %kv.kaddr1_0 = getelementptr i8, ptr addrspace(3) %kv.ka1_0, i32 %k_lane_off0
%kv.kf1_0.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %kv.kaddr1_0)
  %kv.kf1_0.0 = extractvalue {i32, i32, i32, i32} %kv.kf1_0.r, 0
  %kv.kf1_0.1 = extractvalue {i32, i32, i32, i32} %kv.kf1_0.r, 1
  %kv.kf1_0.2 = extractvalue {i32, i32, i32, i32} %kv.kf1_0.r, 2
  %kv.kf1_0.3 = extractvalue {i32, i32, i32, i32} %kv.kf1_0.r, 3
%kv.s0_1_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_0.0, i32 %qf0_0.1, i32 %qf0_0.2, i32 %qf0_0.3, i32 %kv.kf1_0.0, i32 %kv.kf1_0.1, float 0.0, float 0.0, float 0.0, float 0.0)
  %kv.s0_1_k0.0 = extractvalue {float, float, float, float} %kv.s0_1_k0.r, 0
  %kv.s0_1_k0.1 = extractvalue {float, float, float, float} %kv.s0_1_k0.r, 1
  %kv.s0_1_k0.2 = extractvalue {float, float, float, float} %kv.s0_1_k0.r, 2
  %kv.s0_1_k0.3 = extractvalue {float, float, float, float} %kv.s0_1_k0.r, 3
%kv.s0_1_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_1.0, i32 %qf0_1.1, i32 %qf0_1.2, i32 %qf0_1.3, i32 %kv.kf1_0.2, i32 %kv.kf1_0.3, float %kv.s0_1_k0.0, float %kv.s0_1_k0.1, float %kv.s0_1_k0.2, float %kv.s0_1_k0.3)
  %kv.s0_1_k1.0 = extractvalue {float, float, float, float} %kv.s0_1_k1.r, 0
  %kv.s0_1_k1.1 = extractvalue {float, float, float, float} %kv.s0_1_k1.r, 1
  %kv.s0_1_k1.2 = extractvalue {float, float, float, float} %kv.s0_1_k1.r, 2
  %kv.s0_1_k1.3 = extractvalue {float, float, float, float} %kv.s0_1_k1.r, 3
%kv.s1_1_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_0.0, i32 %qf1_0.1, i32 %qf1_0.2, i32 %qf1_0.3, i32 %kv.kf1_0.0, i32 %kv.kf1_0.1, float 0.0, float 0.0, float 0.0, float 0.0)
  %kv.s1_1_k0.0 = extractvalue {float, float, float, float} %kv.s1_1_k0.r, 0
  %kv.s1_1_k0.1 = extractvalue {float, float, float, float} %kv.s1_1_k0.r, 1
  %kv.s1_1_k0.2 = extractvalue {float, float, float, float} %kv.s1_1_k0.r, 2
  %kv.s1_1_k0.3 = extractvalue {float, float, float, float} %kv.s1_1_k0.r, 3
%kv.s1_1_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_1.0, i32 %qf1_1.1, i32 %qf1_1.2, i32 %qf1_1.3, i32 %kv.kf1_0.2, i32 %kv.kf1_0.3, float %kv.s1_1_k0.0, float %kv.s1_1_k0.1, float %kv.s1_1_k0.2, float %kv.s1_1_k0.3)
  %kv.s1_1_k1.0 = extractvalue {float, float, float, float} %kv.s1_1_k1.r, 0
  %kv.s1_1_k1.1 = extractvalue {float, float, float, float} %kv.s1_1_k1.r, 1
  %kv.s1_1_k1.2 = extractvalue {float, float, float, float} %kv.s1_1_k1.r, 2
  %kv.s1_1_k1.3 = extractvalue {float, float, float, float} %kv.s1_1_k1.r, 3
  %kv.ka2_0 = getelementptr i8, ptr addrspace(3) %kv.kt, i32 2048
  %kv.kaddr2_0 = getelementptr i8, ptr addrspace(3) %kv.ka2_0, i32 %k_lane_off0
%kv.kf2_0.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %kv.kaddr2_0)
  %kv.kf2_0.0 = extractvalue {i32, i32, i32, i32} %kv.kf2_0.r, 0
  %kv.kf2_0.1 = extractvalue {i32, i32, i32, i32} %kv.kf2_0.r, 1
  %kv.kf2_0.2 = extractvalue {i32, i32, i32, i32} %kv.kf2_0.r, 2
  %kv.kf2_0.3 = extractvalue {i32, i32, i32, i32} %kv.kf2_0.r, 3
%kv.s0_2_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_0.0, i32 %qf0_0.1, i32 %qf0_0.2, i32 %qf0_0.3, i32 %kv.kf2_0.0, i32 %kv.kf2_0.1, float 0.0, float 0.0, float 0.0, float 0.0)
  %kv.s0_2_k0.0 = extractvalue {float, float, float, float} %kv.s0_2_k0.r, 0
  %kv.s0_2_k0.1 = extractvalue {float, float, float, float} %kv.s0_2_k0.r, 1
  %kv.s0_2_k0.2 = extractvalue {float, float, float, float} %kv.s0_2_k0.r, 2
  %kv.s0_2_k0.3 = extractvalue {float, float, float, float} %kv.s0_2_k0.r, 3
%kv.s0_2_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_1.0, i32 %qf0_1.1, i32 %qf0_1.2, i32 %qf0_1.3, i32 %kv.kf2_0.2, i32 %kv.kf2_0.3, float %kv.s0_2_k0.0, float %kv.s0_2_k0.1, float %kv.s0_2_k0.2, float %kv.s0_2_k0.3)
  %kv.s0_2_k1.0 = extractvalue {float, float, float, float} %kv.s0_2_k1.r, 0
  %kv.s0_2_k1.1 = extractvalue {float, float, float, float} %kv.s0_2_k1.r, 1
  %kv.s0_2_k1.2 = extractvalue {float, float, float, float} %kv.s0_2_k1.r, 2
  %kv.s0_2_k1.3 = extractvalue {float, float, float, float} %kv.s0_2_k1.r, 3
%kv.s1_2_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_0.0, i32 %qf1_0.1, i32 %qf1_0.2, i32 %qf1_0.3, i32 %kv.kf2_0.0, i32 %kv.kf2_0.1, float 0.0, float 0.0, float 0.0, float 0.0)
  %kv.s1_2_k0.0 = extractvalue {float, float, float, float} %kv.s1_2_k0.r, 0
  %kv.s1_2_k0.1 = extractvalue {float, float, float, float} %kv.s1_2_k0.r, 1
  %kv.s1_2_k0.2 = extractvalue {float, float, float, float} %kv.s1_2_k0.r, 2
  %kv.s1_2_k0.3 = extractvalue {float, float, float, float} %kv.s1_2_k0.r, 3
%kv.s1_2_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_1.0, i32 %qf1_1.1, i32 %qf1_1.2, i32 %qf1_1.3, i32 %kv.kf2_0.2, i32 %kv.kf2_0.3, float %kv.s1_2_k0.0, float %kv.s1_2_k0.1, float %kv.s1_2_k0.2, float %kv.s1_2_k0.3)
  %kv.s1_2_k1.0 = extractvalue {float, float, float, float} %kv.s1_2_k1.r, 0
  %kv.s1_2_k1.1 = extractvalue {float, float, float, float} %kv.s1_2_k1.r, 1
  %kv.s1_2_k1.2 = extractvalue {float, float, float, float} %kv.s1_2_k1.r, 2
  %kv.s1_2_k1.3 = extractvalue {float, float, float, float} %kv.s1_2_k1.r, 3
  %kv.ka3_0 = getelementptr i8, ptr addrspace(3) %kv.kt, i32 3072
  %kv.kaddr3_0 = getelementptr i8, ptr addrspace(3) %kv.ka3_0, i32 %k_lane_off0
%kv.kf3_0.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %kv.kaddr3_0)
  %kv.kf3_0.0 = extractvalue {i32, i32, i32, i32} %kv.kf3_0.r, 0
  %kv.kf3_0.1 = extractvalue {i32, i32, i32, i32} %kv.kf3_0.r, 1
  %kv.kf3_0.2 = extractvalue {i32, i32, i32, i32} %kv.kf3_0.r, 2
  %kv.kf3_0.3 = extractvalue {i32, i32, i32, i32} %kv.kf3_0.r, 3
%kv.s0_3_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_0.0, i32 %qf0_0.1, i32 %qf0_0.2, i32 %qf0_0.3, i32 %kv.kf3_0.0, i32 %kv.kf3_0.1, float 0.0, float 0.0, float 0.0, float 0.0)
  %kv.s0_3_k0.0 = extractvalue {float, float, float, float} %kv.s0_3_k0.r, 0
  %kv.s0_3_k0.1 = extractvalue {float, float, float, float} %kv.s0_3_k0.r, 1
  %kv.s0_3_k0.2 = extractvalue {float, float, float, float} %kv.s0_3_k0.r, 2
  %kv.s0_3_k0.3 = extractvalue {float, float, float, float} %kv.s0_3_k0.r, 3
%kv.s0_3_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_1.0, i32 %qf0_1.1, i32 %qf0_1.2, i32 %qf0_1.3, i32 %kv.kf3_0.2, i32 %kv.kf3_0.3, float %kv.s0_3_k0.0, float %kv.s0_3_k0.1, float %kv.s0_3_k0.2, float %kv.s0_3_k0.3)
  %kv.s0_3_k1.0 = extractvalue {float, float, float, float} %kv.s0_3_k1.r, 0
  %kv.s0_3_k1.1 = extractvalue {float, float, float, float} %kv.s0_3_k1.r, 1
  %kv.s0_3_k1.2 = extractvalue {float, float, float, float} %kv.s0_3_k1.r, 2
  %kv.s0_3_k1.3 = extractvalue {float, float, float, float} %kv.s0_3_k1.r, 3
%kv.s1_3_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_0.0, i32 %qf1_0.1, i32 %qf1_0.2, i32 %qf1_0.3, i32 %kv.kf3_0.0, i32 %kv.kf3_0.1, float 0.0, float 0.0, float 0.0, float 0.0)
  %kv.s1_3_k0.0 = extractvalue {float, float, float, float} %kv.s1_3_k0.r, 0
  %kv.s1_3_k0.1 = extractvalue {float, float, float, float} %kv.s1_3_k0.r, 1
  %kv.s1_3_k0.2 = extractvalue {float, float, float, float} %kv.s1_3_k0.r, 2
  %kv.s1_3_k0.3 = extractvalue {float, float, float, float} %kv.s1_3_k0.r, 3
%kv.s1_3_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_1.0, i32 %qf1_1.1, i32 %qf1_1.2, i32 %qf1_1.3, i32 %kv.kf3_0.2, i32 %kv.kf3_0.3, float %kv.s1_3_k0.0, float %kv.s1_3_k0.1, float %kv.s1_3_k0.2, float %kv.s1_3_k0.3)
  %kv.s1_3_k1.0 = extractvalue {float, float, float, float} %kv.s1_3_k1.r, 0
  %kv.s1_3_k1.1 = extractvalue {float, float, float, float} %kv.s1_3_k1.r, 1
  %kv.s1_3_k1.2 = extractvalue {float, float, float, float} %kv.s1_3_k1.r, 2
  %kv.s1_3_k1.3 = extractvalue {float, float, float, float} %kv.s1_3_k1.r, 3
  %kv.ka4_0 = getelementptr i8, ptr addrspace(3) %kv.kt, i32 4096
  %kv.kaddr4_0 = getelementptr i8, ptr addrspace(3) %kv.ka4_0, i32 %k_lane_off0
%kv.kf4_0.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %kv.kaddr4_0)
  %kv.kf4_0.0 = extractvalue {i32, i32, i32, i32} %kv.kf4_0.r, 0
  %kv.kf4_0.1 = extractvalue {i32, i32, i32, i32} %kv.kf4_0.r, 1
  %kv.kf4_0.2 = extractvalue {i32, i32, i32, i32} %kv.kf4_0.r, 2
  %kv.kf4_0.3 = extractvalue {i32, i32, i32, i32} %kv.kf4_0.r, 3
%kv.s0_4_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_0.0, i32 %qf0_0.1, i32 %qf0_0.2, i32 %qf0_0.3, i32 %kv.kf4_0.0, i32 %kv.kf4_0.1, float 0.0, float 0.0, float 0.0, float 0.0)
  %kv.s0_4_k0.0 = extractvalue {float, float, float, float} %kv.s0_4_k0.r, 0
  %kv.s0_4_k0.1 = extractvalue {float, float, float, float} %kv.s0_4_k0.r, 1
  %kv.s0_4_k0.2 = extractvalue {float, float, float, float} %kv.s0_4_k0.r, 2
  %kv.s0_4_k0.3 = extractvalue {float, float, float, float} %kv.s0_4_k0.r, 3
%kv.s0_4_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_1.0, i32 %qf0_1.1, i32 %qf0_1.2, i32 %qf0_1.3, i32 %kv.kf4_0.2, i32 %kv.kf4_0.3, float %kv.s0_4_k0.0, float %kv.s0_4_k0.1, float %kv.s0_4_k0.2, float %kv.s0_4_k0.3)
  %kv.s0_4_k1.0 = extractvalue {float, float, float, float} %kv.s0_4_k1.r, 0
  %kv.s0_4_k1.1 = extractvalue {float, float, float, float} %kv.s0_4_k1.r, 1
  %kv.s0_4_k1.2 = extractvalue {float, float, float, float} %kv.s0_4_k1.r, 2
  %kv.s0_4_k1.3 = extractvalue {float, float, float, float} %kv.s0_4_k1.r, 3
%kv.s1_4_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_0.0, i32 %qf1_0.1, i32 %qf1_0.2, i32 %qf1_0.3, i32 %kv.kf4_0.0, i32 %kv.kf4_0.1, float 0.0, float 0.0, float 0.0, float 0.0)
  %kv.s1_4_k0.0 = extractvalue {float, float, float, float} %kv.s1_4_k0.r, 0
  %kv.s1_4_k0.1 = extractvalue {float, float, float, float} %kv.s1_4_k0.r, 1
  %kv.s1_4_k0.2 = extractvalue {float, float, float, float} %kv.s1_4_k0.r, 2
  %kv.s1_4_k0.3 = extractvalue {float, float, float, float} %kv.s1_4_k0.r, 3
%kv.s1_4_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_1.0, i32 %qf1_1.1, i32 %qf1_1.2, i32 %qf1_1.3, i32 %kv.kf4_0.2, i32 %kv.kf4_0.3, float %kv.s1_4_k0.0, float %kv.s1_4_k0.1, float %kv.s1_4_k0.2, float %kv.s1_4_k0.3)
  %kv.s1_4_k1.0 = extractvalue {float, float, float, float} %kv.s1_4_k1.r, 0
  %kv.s1_4_k1.1 = extractvalue {float, float, float, float} %kv.s1_4_k1.r, 1
  %kv.s1_4_k1.2 = extractvalue {float, float, float, float} %kv.s1_4_k1.r, 2
  %kv.s1_4_k1.3 = extractvalue {float, float, float, float} %kv.s1_4_k1.r, 3
  %kv.ka5_0 = getelementptr i8, ptr addrspace(3) %kv.kt, i32 5120
  %kv.kaddr5_0 = getelementptr i8, ptr addrspace(3) %kv.ka5_0, i32 %k_lane_off0
%kv.kf5_0.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %kv.kaddr5_0)
  %kv.kf5_0.0 = extractvalue {i32, i32, i32, i32} %kv.kf5_0.r, 0
  %kv.kf5_0.1 = extractvalue {i32, i32, i32, i32} %kv.kf5_0.r, 1
  %kv.kf5_0.2 = extractvalue {i32, i32, i32, i32} %kv.kf5_0.r, 2
  %kv.kf5_0.3 = extractvalue {i32, i32, i32, i32} %kv.kf5_0.r, 3
%kv.s0_5_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_0.0, i32 %qf0_0.1, i32 %qf0_0.2, i32 %qf0_0.3, i32 %kv.kf5_0.0, i32 %kv.kf5_0.1, float 0.0, float 0.0, float 0.0, float 0.0)
  %kv.s0_5_k0.0 = extractvalue {float, float, float, float} %kv.s0_5_k0.r, 0
  %kv.s0_5_k0.1 = extractvalue {float, float, float, float} %kv.s0_5_k0.r, 1
  %kv.s0_5_k0.2 = extractvalue {float, float, float, float} %kv.s0_5_k0.r, 2
  %kv.s0_5_k0.3 = extractvalue {float, float, float, float} %kv.s0_5_k0.r, 3
%kv.s0_5_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_1.0, i32 %qf0_1.1, i32 %qf0_1.2, i32 %qf0_1.3, i32 %kv.kf5_0.2, i32 %kv.kf5_0.3, float %kv.s0_5_k0.0, float %kv.s0_5_k0.1, float %kv.s0_5_k0.2, float %kv.s0_5_k0.3)
  %kv.s0_5_k1.0 = extractvalue {float, float, float, float} %kv.s0_5_k1.r, 0
  %kv.s0_5_k1.1 = extractvalue {float, float, float, float} %kv.s0_5_k1.r, 1
  %kv.s0_5_k1.2 = extractvalue {float, float, float, float} %kv.s0_5_k1.r, 2
  %kv.s0_5_k1.3 = extractvalue {float, float, float, float} %kv.s0_5_k1.r, 3
%kv.s1_5_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_0.0, i32 %qf1_0.1, i32 %qf1_0.2, i32 %qf1_0.3, i32 %kv.kf5_0.0, i32 %kv.kf5_0.1, float 0.0, float 0.0, float 0.0, float 0.0)
  %kv.s1_5_k0.0 = extractvalue {float, float, float, float} %kv.s1_5_k0.r, 0
  %kv.s1_5_k0.1 = extractvalue {float, float, float, float} %kv.s1_5_k0.r, 1
  %kv.s1_5_k0.2 = extractvalue {float, float, float, float} %kv.s1_5_k0.r, 2
  %kv.s1_5_k0.3 = extractvalue {float, float, float, float} %kv.s1_5_k0.r, 3
%kv.s1_5_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_1.0, i32 %qf1_1.1, i32 %qf1_1.2, i32 %qf1_1.3, i32 %kv.kf5_0.2, i32 %kv.kf5_0.3, float %kv.s1_5_k0.0, float %kv.s1_5_k0.1, float %kv.s1_5_k0.2, float %kv.s1_5_k0.3)
  %kv.s1_5_k1.0 = extractvalue {float, float, float, float} %kv.s1_5_k1.r, 0
  %kv.s1_5_k1.1 = extractvalue {float, float, float, float} %kv.s1_5_k1.r, 1
  %kv.s1_5_k1.2 = extractvalue {float, float, float, float} %kv.s1_5_k1.r, 2
  %kv.s1_5_k1.3 = extractvalue {float, float, float, float} %kv.s1_5_k1.r, 3
  %kv.ka6_0 = getelementptr i8, ptr addrspace(3) %kv.kt, i32 6144
  %kv.kaddr6_0 = getelementptr i8, ptr addrspace(3) %kv.ka6_0, i32 %k_lane_off0
%kv.kf6_0.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %kv.kaddr6_0)
  %kv.kf6_0.0 = extractvalue {i32, i32, i32, i32} %kv.kf6_0.r, 0
  %kv.kf6_0.1 = extractvalue {i32, i32, i32, i32} %kv.kf6_0.r, 1
  %kv.kf6_0.2 = extractvalue {i32, i32, i32, i32} %kv.kf6_0.r, 2
  %kv.kf6_0.3 = extractvalue {i32, i32, i32, i32} %kv.kf6_0.r, 3
%kv.s0_6_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_0.0, i32 %qf0_0.1, i32 %qf0_0.2, i32 %qf0_0.3, i32 %kv.kf6_0.0, i32 %kv.kf6_0.1, float 0.0, float 0.0, float 0.0, float 0.0)
  %kv.s0_6_k0.0 = extractvalue {float, float, float, float} %kv.s0_6_k0.r, 0
  %kv.s0_6_k0.1 = extractvalue {float, float, float, float} %kv.s0_6_k0.r, 1
  %kv.s0_6_k0.2 = extractvalue {float, float, float, float} %kv.s0_6_k0.r, 2
  %kv.s0_6_k0.3 = extractvalue {float, float, float, float} %kv.s0_6_k0.r, 3
%kv.s0_6_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_1.0, i32 %qf0_1.1, i32 %qf0_1.2, i32 %qf0_1.3, i32 %kv.kf6_0.2, i32 %kv.kf6_0.3, float %kv.s0_6_k0.0, float %kv.s0_6_k0.1, float %kv.s0_6_k0.2, float %kv.s0_6_k0.3)
  %kv.s0_6_k1.0 = extractvalue {float, float, float, float} %kv.s0_6_k1.r, 0
  %kv.s0_6_k1.1 = extractvalue {float, float, float, float} %kv.s0_6_k1.r, 1
  %kv.s0_6_k1.2 = extractvalue {float, float, float, float} %kv.s0_6_k1.r, 2
  %kv.s0_6_k1.3 = extractvalue {float, float, float, float} %kv.s0_6_k1.r, 3
%kv.s1_6_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_0.0, i32 %qf1_0.1, i32 %qf1_0.2, i32 %qf1_0.3, i32 %kv.kf6_0.0, i32 %kv.kf6_0.1, float 0.0, float 0.0, float 0.0, float 0.0)
  %kv.s1_6_k0.0 = extractvalue {float, float, float, float} %kv.s1_6_k0.r, 0
  %kv.s1_6_k0.1 = extractvalue {float, float, float, float} %kv.s1_6_k0.r, 1
  %kv.s1_6_k0.2 = extractvalue {float, float, float, float} %kv.s1_6_k0.r, 2
  %kv.s1_6_k0.3 = extractvalue {float, float, float, float} %kv.s1_6_k0.r, 3
%kv.s1_6_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_1.0, i32 %qf1_1.1, i32 %qf1_1.2, i32 %qf1_1.3, i32 %kv.kf6_0.2, i32 %kv.kf6_0.3, float %kv.s1_6_k0.0, float %kv.s1_6_k0.1, float %kv.s1_6_k0.2, float %kv.s1_6_k0.3)
  %kv.s1_6_k1.0 = extractvalue {float, float, float, float} %kv.s1_6_k1.r, 0
  %kv.s1_6_k1.1 = extractvalue {float, float, float, float} %kv.s1_6_k1.r, 1
  %kv.s1_6_k1.2 = extractvalue {float, float, float, float} %kv.s1_6_k1.r, 2
  %kv.s1_6_k1.3 = extractvalue {float, float, float, float} %kv.s1_6_k1.r, 3
  %kv.ka7_0 = getelementptr i8, ptr addrspace(3) %kv.kt, i32 7168
  %kv.kaddr7_0 = getelementptr i8, ptr addrspace(3) %kv.ka7_0, i32 %k_lane_off0
%kv.kf7_0.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %kv.kaddr7_0)
  %kv.kf7_0.0 = extractvalue {i32, i32, i32, i32} %kv.kf7_0.r, 0
  %kv.kf7_0.1 = extractvalue {i32, i32, i32, i32} %kv.kf7_0.r, 1
  %kv.kf7_0.2 = extractvalue {i32, i32, i32, i32} %kv.kf7_0.r, 2
  %kv.kf7_0.3 = extractvalue {i32, i32, i32, i32} %kv.kf7_0.r, 3
%kv.s0_7_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_0.0, i32 %qf0_0.1, i32 %qf0_0.2, i32 %qf0_0.3, i32 %kv.kf7_0.0, i32 %kv.kf7_0.1, float 0.0, float 0.0, float 0.0, float 0.0)
  %kv.s0_7_k0.0 = extractvalue {float, float, float, float} %kv.s0_7_k0.r, 0
  %kv.s0_7_k0.1 = extractvalue {float, float, float, float} %kv.s0_7_k0.r, 1
  %kv.s0_7_k0.2 = extractvalue {float, float, float, float} %kv.s0_7_k0.r, 2
  %kv.s0_7_k0.3 = extractvalue {float, float, float, float} %kv.s0_7_k0.r, 3
%kv.s0_7_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_1.0, i32 %qf0_1.1, i32 %qf0_1.2, i32 %qf0_1.3, i32 %kv.kf7_0.2, i32 %kv.kf7_0.3, float %kv.s0_7_k0.0, float %kv.s0_7_k0.1, float %kv.s0_7_k0.2, float %kv.s0_7_k0.3)
  %kv.s0_7_k1.0 = extractvalue {float, float, float, float} %kv.s0_7_k1.r, 0
  %kv.s0_7_k1.1 = extractvalue {float, float, float, float} %kv.s0_7_k1.r, 1
  %kv.s0_7_k1.2 = extractvalue {float, float, float, float} %kv.s0_7_k1.r, 2
  %kv.s0_7_k1.3 = extractvalue {float, float, float, float} %kv.s0_7_k1.r, 3
%kv.s1_7_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_0.0, i32 %qf1_0.1, i32 %qf1_0.2, i32 %qf1_0.3, i32 %kv.kf7_0.0, i32 %kv.kf7_0.1, float 0.0, float 0.0, float 0.0, float 0.0)
  %kv.s1_7_k0.0 = extractvalue {float, float, float, float} %kv.s1_7_k0.r, 0
  %kv.s1_7_k0.1 = extractvalue {float, float, float, float} %kv.s1_7_k0.r, 1
  %kv.s1_7_k0.2 = extractvalue {float, float, float, float} %kv.s1_7_k0.r, 2
  %kv.s1_7_k0.3 = extractvalue {float, float, float, float} %kv.s1_7_k0.r, 3
%kv.s1_7_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_1.0, i32 %qf1_1.1, i32 %qf1_1.2, i32 %qf1_1.3, i32 %kv.kf7_0.2, i32 %kv.kf7_0.3, float %kv.s1_7_k0.0, float %kv.s1_7_k0.1, float %kv.s1_7_k0.2, float %kv.s1_7_k0.3)
  %kv.s1_7_k1.0 = extractvalue {float, float, float, float} %kv.s1_7_k1.r, 0
  %kv.s1_7_k1.1 = extractvalue {float, float, float, float} %kv.s1_7_k1.r, 1
  %kv.s1_7_k1.2 = extractvalue {float, float, float, float} %kv.s1_7_k1.r, 2
  %kv.s1_7_k1.3 = extractvalue {float, float, float, float} %kv.s1_7_k1.r, 3
  %kv.ka0_1 = getelementptr i8, ptr addrspace(3) %kv.kt, i32 0
  %kv.kaddr0_1 = getelementptr i8, ptr addrspace(3) %kv.ka0_1, i32 %k_lane_off1
%kv.kf0_1.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %kv.kaddr0_1)
  %kv.kf0_1.0 = extractvalue {i32, i32, i32, i32} %kv.kf0_1.r, 0
  %kv.kf0_1.1 = extractvalue {i32, i32, i32, i32} %kv.kf0_1.r, 1
  %kv.kf0_1.2 = extractvalue {i32, i32, i32, i32} %kv.kf0_1.r, 2
  %kv.kf0_1.3 = extractvalue {i32, i32, i32, i32} %kv.kf0_1.r, 3
%kv.s0_0_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_2.0, i32 %qf0_2.1, i32 %qf0_2.2, i32 %qf0_2.3, i32 %kv.kf0_1.0, i32 %kv.kf0_1.1, float %kv.s0_0_k1.0, float %kv.s0_0_k1.1, float %kv.s0_0_k1.2, float %kv.s0_0_k1.3)
  %kv.s0_0_k2.0 = extractvalue {float, float, float, float} %kv.s0_0_k2.r, 0
  %kv.s0_0_k2.1 = extractvalue {float, float, float, float} %kv.s0_0_k2.r, 1
  %kv.s0_0_k2.2 = extractvalue {float, float, float, float} %kv.s0_0_k2.r, 2
  %kv.s0_0_k2.3 = extractvalue {float, float, float, float} %kv.s0_0_k2.r, 3
%kv.s0_0_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_3.0, i32 %qf0_3.1, i32 %qf0_3.2, i32 %qf0_3.3, i32 %kv.kf0_1.2, i32 %kv.kf0_1.3, float %kv.s0_0_k2.0, float %kv.s0_0_k2.1, float %kv.s0_0_k2.2, float %kv.s0_0_k2.3)
  %kv.s0_0_k3.0 = extractvalue {float, float, float, float} %kv.s0_0_k3.r, 0
  %kv.s0_0_k3.1 = extractvalue {float, float, float, float} %kv.s0_0_k3.r, 1
  %kv.s0_0_k3.2 = extractvalue {float, float, float, float} %kv.s0_0_k3.r, 2
  %kv.s0_0_k3.3 = extractvalue {float, float, float, float} %kv.s0_0_k3.r, 3
%kv.s1_0_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_2.0, i32 %qf1_2.1, i32 %qf1_2.2, i32 %qf1_2.3, i32 %kv.kf0_1.0, i32 %kv.kf0_1.1, float %kv.s1_0_k1.0, float %kv.s1_0_k1.1, float %kv.s1_0_k1.2, float %kv.s1_0_k1.3)
  %kv.s1_0_k2.0 = extractvalue {float, float, float, float} %kv.s1_0_k2.r, 0
  %kv.s1_0_k2.1 = extractvalue {float, float, float, float} %kv.s1_0_k2.r, 1
  %kv.s1_0_k2.2 = extractvalue {float, float, float, float} %kv.s1_0_k2.r, 2
  %kv.s1_0_k2.3 = extractvalue {float, float, float, float} %kv.s1_0_k2.r, 3
%kv.s1_0_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_3.0, i32 %qf1_3.1, i32 %qf1_3.2, i32 %qf1_3.3, i32 %kv.kf0_1.2, i32 %kv.kf0_1.3, float %kv.s1_0_k2.0, float %kv.s1_0_k2.1, float %kv.s1_0_k2.2, float %kv.s1_0_k2.3)
  %kv.s1_0_k3.0 = extractvalue {float, float, float, float} %kv.s1_0_k3.r, 0
  %kv.s1_0_k3.1 = extractvalue {float, float, float, float} %kv.s1_0_k3.r, 1
  %kv.s1_0_k3.2 = extractvalue {float, float, float, float} %kv.s1_0_k3.r, 2
  %kv.s1_0_k3.3 = extractvalue {float, float, float, float} %kv.s1_0_k3.r, 3
  %kv.ka1_1 = getelementptr i8, ptr addrspace(3) %kv.kt, i32 1024
  %kv.kaddr1_1 = getelementptr i8, ptr addrspace(3) %kv.ka1_1, i32 %k_lane_off1
%kv.kf1_1.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %kv.kaddr1_1)
  %kv.kf1_1.0 = extractvalue {i32, i32, i32, i32} %kv.kf1_1.r, 0
  %kv.kf1_1.1 = extractvalue {i32, i32, i32, i32} %kv.kf1_1.r, 1
  %kv.kf1_1.2 = extractvalue {i32, i32, i32, i32} %kv.kf1_1.r, 2
  %kv.kf1_1.3 = extractvalue {i32, i32, i32, i32} %kv.kf1_1.r, 3
%kv.s0_1_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_2.0, i32 %qf0_2.1, i32 %qf0_2.2, i32 %qf0_2.3, i32 %kv.kf1_1.0, i32 %kv.kf1_1.1, float %kv.s0_1_k1.0, float %kv.s0_1_k1.1, float %kv.s0_1_k1.2, float %kv.s0_1_k1.3)
  %kv.s0_1_k2.0 = extractvalue {float, float, float, float} %kv.s0_1_k2.r, 0
  %kv.s0_1_k2.1 = extractvalue {float, float, float, float} %kv.s0_1_k2.r, 1
  %kv.s0_1_k2.2 = extractvalue {float, float, float, float} %kv.s0_1_k2.r, 2
  %kv.s0_1_k2.3 = extractvalue {float, float, float, float} %kv.s0_1_k2.r, 3
%kv.s0_1_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_3.0, i32 %qf0_3.1, i32 %qf0_3.2, i32 %qf0_3.3, i32 %kv.kf1_1.2, i32 %kv.kf1_1.3, float %kv.s0_1_k2.0, float %kv.s0_1_k2.1, float %kv.s0_1_k2.2, float %kv.s0_1_k2.3)
  %kv.s0_1_k3.0 = extractvalue {float, float, float, float} %kv.s0_1_k3.r, 0
  %kv.s0_1_k3.1 = extractvalue {float, float, float, float} %kv.s0_1_k3.r, 1
  %kv.s0_1_k3.2 = extractvalue {float, float, float, float} %kv.s0_1_k3.r, 2
  %kv.s0_1_k3.3 = extractvalue {float, float, float, float} %kv.s0_1_k3.r, 3
%kv.s1_1_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_2.0, i32 %qf1_2.1, i32 %qf1_2.2, i32 %qf1_2.3, i32 %kv.kf1_1.0, i32 %kv.kf1_1.1, float %kv.s1_1_k1.0, float %kv.s1_1_k1.1, float %kv.s1_1_k1.2, float %kv.s1_1_k1.3)
  %kv.s1_1_k2.0 = extractvalue {float, float, float, float} %kv.s1_1_k2.r, 0
  %kv.s1_1_k2.1 = extractvalue {float, float, float, float} %kv.s1_1_k2.r, 1
  %kv.s1_1_k2.2 = extractvalue {float, float, float, float} %kv.s1_1_k2.r, 2
  %kv.s1_1_k2.3 = extractvalue {float, float, float, float} %kv.s1_1_k2.r, 3
%kv.s1_1_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_3.0, i32 %qf1_3.1, i32 %qf1_3.2, i32 %qf1_3.3, i32 %kv.kf1_1.2, i32 %kv.kf1_1.3, float %kv.s1_1_k2.0, float %kv.s1_1_k2.1, float %kv.s1_1_k2.2, float %kv.s1_1_k2.3)
  %kv.s1_1_k3.0 = extractvalue {float, float, float, float} %kv.s1_1_k3.r, 0
  %kv.s1_1_k3.1 = extractvalue {float, float, float, float} %kv.s1_1_k3.r, 1
  %kv.s1_1_k3.2 = extractvalue {float, float, float, float} %kv.s1_1_k3.r, 2
  %kv.s1_1_k3.3 = extractvalue {float, float, float, float} %kv.s1_1_k3.r, 3
  %kv.ka2_1 = getelementptr i8, ptr addrspace(3) %kv.kt, i32 2048
  %kv.kaddr2_1 = getelementptr i8, ptr addrspace(3) %kv.ka2_1, i32 %k_lane_off1
%kv.kf2_1.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %kv.kaddr2_1)
  %kv.kf2_1.0 = extractvalue {i32, i32, i32, i32} %kv.kf2_1.r, 0
  %kv.kf2_1.1 = extractvalue {i32, i32, i32, i32} %kv.kf2_1.r, 1
  %kv.kf2_1.2 = extractvalue {i32, i32, i32, i32} %kv.kf2_1.r, 2
  %kv.kf2_1.3 = extractvalue {i32, i32, i32, i32} %kv.kf2_1.r, 3
%kv.s0_2_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_2.0, i32 %qf0_2.1, i32 %qf0_2.2, i32 %qf0_2.3, i32 %kv.kf2_1.0, i32 %kv.kf2_1.1, float %kv.s0_2_k1.0, float %kv.s0_2_k1.1, float %kv.s0_2_k1.2, float %kv.s0_2_k1.3)
  %kv.s0_2_k2.0 = extractvalue {float, float, float, float} %kv.s0_2_k2.r, 0
  %kv.s0_2_k2.1 = extractvalue {float, float, float, float} %kv.s0_2_k2.r, 1
  %kv.s0_2_k2.2 = extractvalue {float, float, float, float} %kv.s0_2_k2.r, 2
  %kv.s0_2_k2.3 = extractvalue {float, float, float, float} %kv.s0_2_k2.r, 3
%kv.s0_2_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_3.0, i32 %qf0_3.1, i32 %qf0_3.2, i32 %qf0_3.3, i32 %kv.kf2_1.2, i32 %kv.kf2_1.3, float %kv.s0_2_k2.0, float %kv.s0_2_k2.1, float %kv.s0_2_k2.2, float %kv.s0_2_k2.3)
  %kv.s0_2_k3.0 = extractvalue {float, float, float, float} %kv.s0_2_k3.r, 0
  %kv.s0_2_k3.1 = extractvalue {float, float, float, float} %kv.s0_2_k3.r, 1
  %kv.s0_2_k3.2 = extractvalue {float, float, float, float} %kv.s0_2_k3.r, 2
  %kv.s0_2_k3.3 = extractvalue {float, float, float, float} %kv.s0_2_k3.r, 3
%kv.s1_2_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_2.0, i32 %qf1_2.1, i32 %qf1_2.2, i32 %qf1_2.3, i32 %kv.kf2_1.0, i32 %kv.kf2_1.1, float %kv.s1_2_k1.0, float %kv.s1_2_k1.1, float %kv.s1_2_k1.2, float %kv.s1_2_k1.3)
  %kv.s1_2_k2.0 = extractvalue {float, float, float, float} %kv.s1_2_k2.r, 0
  %kv.s1_2_k2.1 = extractvalue {float, float, float, float} %kv.s1_2_k2.r, 1
  %kv.s1_2_k2.2 = extractvalue {float, float, float, float} %kv.s1_2_k2.r, 2
  %kv.s1_2_k2.3 = extractvalue {float, float, float, float} %kv.s1_2_k2.r, 3
%kv.s1_2_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_3.0, i32 %qf1_3.1, i32 %qf1_3.2, i32 %qf1_3.3, i32 %kv.kf2_1.2, i32 %kv.kf2_1.3, float %kv.s1_2_k2.0, float %kv.s1_2_k2.1, float %kv.s1_2_k2.2, float %kv.s1_2_k2.3)
  %kv.s1_2_k3.0 = extractvalue {float, float, float, float} %kv.s1_2_k3.r, 0
  %kv.s1_2_k3.1 = extractvalue {float, float, float, float} %kv.s1_2_k3.r, 1
  %kv.s1_2_k3.2 = extractvalue {float, float, float, float} %kv.s1_2_k3.r, 2
  %kv.s1_2_k3.3 = extractvalue {float, float, float, float} %kv.s1_2_k3.r, 3
  %kv.ka3_1 = getelementptr i8, ptr addrspace(3) %kv.kt, i32 3072
  %kv.kaddr3_1 = getelementptr i8, ptr addrspace(3) %kv.ka3_1, i32 %k_lane_off1
%kv.kf3_1.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %kv.kaddr3_1)
  %kv.kf3_1.0 = extractvalue {i32, i32, i32, i32} %kv.kf3_1.r, 0
  %kv.kf3_1.1 = extractvalue {i32, i32, i32, i32} %kv.kf3_1.r, 1
  %kv.kf3_1.2 = extractvalue {i32, i32, i32, i32} %kv.kf3_1.r, 2
  %kv.kf3_1.3 = extractvalue {i32, i32, i32, i32} %kv.kf3_1.r, 3
%kv.s0_3_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_2.0, i32 %qf0_2.1, i32 %qf0_2.2, i32 %qf0_2.3, i32 %kv.kf3_1.0, i32 %kv.kf3_1.1, float %kv.s0_3_k1.0, float %kv.s0_3_k1.1, float %kv.s0_3_k1.2, float %kv.s0_3_k1.3)
  %kv.s0_3_k2.0 = extractvalue {float, float, float, float} %kv.s0_3_k2.r, 0
  %kv.s0_3_k2.1 = extractvalue {float, float, float, float} %kv.s0_3_k2.r, 1
  %kv.s0_3_k2.2 = extractvalue {float, float, float, float} %kv.s0_3_k2.r, 2
  %kv.s0_3_k2.3 = extractvalue {float, float, float, float} %kv.s0_3_k2.r, 3
%kv.s0_3_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_3.0, i32 %qf0_3.1, i32 %qf0_3.2, i32 %qf0_3.3, i32 %kv.kf3_1.2, i32 %kv.kf3_1.3, float %kv.s0_3_k2.0, float %kv.s0_3_k2.1, float %kv.s0_3_k2.2, float %kv.s0_3_k2.3)
  %kv.s0_3_k3.0 = extractvalue {float, float, float, float} %kv.s0_3_k3.r, 0
  %kv.s0_3_k3.1 = extractvalue {float, float, float, float} %kv.s0_3_k3.r, 1
  %kv.s0_3_k3.2 = extractvalue {float, float, float, float} %kv.s0_3_k3.r, 2
  %kv.s0_3_k3.3 = extractvalue {float, float, float, float} %kv.s0_3_k3.r, 3
%kv.s1_3_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_2.0, i32 %qf1_2.1, i32 %qf1_2.2, i32 %qf1_2.3, i32 %kv.kf3_1.0, i32 %kv.kf3_1.1, float %kv.s1_3_k1.0, float %kv.s1_3_k1.1, float %kv.s1_3_k1.2, float %kv.s1_3_k1.3)
  %kv.s1_3_k2.0 = extractvalue {float, float, float, float} %kv.s1_3_k2.r, 0
  %kv.s1_3_k2.1 = extractvalue {float, float, float, float} %kv.s1_3_k2.r, 1
  %kv.s1_3_k2.2 = extractvalue {float, float, float, float} %kv.s1_3_k2.r, 2
  %kv.s1_3_k2.3 = extractvalue {float, float, float, float} %kv.s1_3_k2.r, 3
%kv.s1_3_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_3.0, i32 %qf1_3.1, i32 %qf1_3.2, i32 %qf1_3.3, i32 %kv.kf3_1.2, i32 %kv.kf3_1.3, float %kv.s1_3_k2.0, float %kv.s1_3_k2.1, float %kv.s1_3_k2.2, float %kv.s1_3_k2.3)
  %kv.s1_3_k3.0 = extractvalue {float, float, float, float} %kv.s1_3_k3.r, 0
  %kv.s1_3_k3.1 = extractvalue {float, float, float, float} %kv.s1_3_k3.r, 1
  %kv.s1_3_k3.2 = extractvalue {float, float, float, float} %kv.s1_3_k3.r, 2
  %kv.s1_3_k3.3 = extractvalue {float, float, float, float} %kv.s1_3_k3.r, 3
  %kv.ka4_1 = getelementptr i8, ptr addrspace(3) %kv.kt, i32 4096
  %kv.kaddr4_1 = getelementptr i8, ptr addrspace(3) %kv.ka4_1, i32 %k_lane_off1
%kv.kf4_1.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %kv.kaddr4_1)
  %kv.kf4_1.0 = extractvalue {i32, i32, i32, i32} %kv.kf4_1.r, 0
  %kv.kf4_1.1 = extractvalue {i32, i32, i32, i32} %kv.kf4_1.r, 1
  %kv.kf4_1.2 = extractvalue {i32, i32, i32, i32} %kv.kf4_1.r, 2
  %kv.kf4_1.3 = extractvalue {i32, i32, i32, i32} %kv.kf4_1.r, 3
%kv.s0_4_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_2.0, i32 %qf0_2.1, i32 %qf0_2.2, i32 %qf0_2.3, i32 %kv.kf4_1.0, i32 %kv.kf4_1.1, float %kv.s0_4_k1.0, float %kv.s0_4_k1.1, float %kv.s0_4_k1.2, float %kv.s0_4_k1.3)
  %kv.s0_4_k2.0 = extractvalue {float, float, float, float} %kv.s0_4_k2.r, 0
  %kv.s0_4_k2.1 = extractvalue {float, float, float, float} %kv.s0_4_k2.r, 1
  %kv.s0_4_k2.2 = extractvalue {float, float, float, float} %kv.s0_4_k2.r, 2
  %kv.s0_4_k2.3 = extractvalue {float, float, float, float} %kv.s0_4_k2.r, 3
%kv.s0_4_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_3.0, i32 %qf0_3.1, i32 %qf0_3.2, i32 %qf0_3.3, i32 %kv.kf4_1.2, i32 %kv.kf4_1.3, float %kv.s0_4_k2.0, float %kv.s0_4_k2.1, float %kv.s0_4_k2.2, float %kv.s0_4_k2.3)
  %kv.s0_4_k3.0 = extractvalue {float, float, float, float} %kv.s0_4_k3.r, 0
  %kv.s0_4_k3.1 = extractvalue {float, float, float, float} %kv.s0_4_k3.r, 1
  %kv.s0_4_k3.2 = extractvalue {float, float, float, float} %kv.s0_4_k3.r, 2
  %kv.s0_4_k3.3 = extractvalue {float, float, float, float} %kv.s0_4_k3.r, 3
%kv.s1_4_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_2.0, i32 %qf1_2.1, i32 %qf1_2.2, i32 %qf1_2.3, i32 %kv.kf4_1.0, i32 %kv.kf4_1.1, float %kv.s1_4_k1.0, float %kv.s1_4_k1.1, float %kv.s1_4_k1.2, float %kv.s1_4_k1.3)
  %kv.s1_4_k2.0 = extractvalue {float, float, float, float} %kv.s1_4_k2.r, 0
  %kv.s1_4_k2.1 = extractvalue {float, float, float, float} %kv.s1_4_k2.r, 1
  %kv.s1_4_k2.2 = extractvalue {float, float, float, float} %kv.s1_4_k2.r, 2
  %kv.s1_4_k2.3 = extractvalue {float, float, float, float} %kv.s1_4_k2.r, 3
%kv.s1_4_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_3.0, i32 %qf1_3.1, i32 %qf1_3.2, i32 %qf1_3.3, i32 %kv.kf4_1.2, i32 %kv.kf4_1.3, float %kv.s1_4_k2.0, float %kv.s1_4_k2.1, float %kv.s1_4_k2.2, float %kv.s1_4_k2.3)
  %kv.s1_4_k3.0 = extractvalue {float, float, float, float} %kv.s1_4_k3.r, 0
  %kv.s1_4_k3.1 = extractvalue {float, float, float, float} %kv.s1_4_k3.r, 1
  %kv.s1_4_k3.2 = extractvalue {float, float, float, float} %kv.s1_4_k3.r, 2
  %kv.s1_4_k3.3 = extractvalue {float, float, float, float} %kv.s1_4_k3.r, 3
  %kv.ka5_1 = getelementptr i8, ptr addrspace(3) %kv.kt, i32 5120
  %kv.kaddr5_1 = getelementptr i8, ptr addrspace(3) %kv.ka5_1, i32 %k_lane_off1
%kv.kf5_1.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %kv.kaddr5_1)
  %kv.kf5_1.0 = extractvalue {i32, i32, i32, i32} %kv.kf5_1.r, 0
  %kv.kf5_1.1 = extractvalue {i32, i32, i32, i32} %kv.kf5_1.r, 1
  %kv.kf5_1.2 = extractvalue {i32, i32, i32, i32} %kv.kf5_1.r, 2
  %kv.kf5_1.3 = extractvalue {i32, i32, i32, i32} %kv.kf5_1.r, 3
%kv.s0_5_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_2.0, i32 %qf0_2.1, i32 %qf0_2.2, i32 %qf0_2.3, i32 %kv.kf5_1.0, i32 %kv.kf5_1.1, float %kv.s0_5_k1.0, float %kv.s0_5_k1.1, float %kv.s0_5_k1.2, float %kv.s0_5_k1.3)
  %kv.s0_5_k2.0 = extractvalue {float, float, float, float} %kv.s0_5_k2.r, 0
  %kv.s0_5_k2.1 = extractvalue {float, float, float, float} %kv.s0_5_k2.r, 1
  %kv.s0_5_k2.2 = extractvalue {float, float, float, float} %kv.s0_5_k2.r, 2
  %kv.s0_5_k2.3 = extractvalue {float, float, float, float} %kv.s0_5_k2.r, 3
%kv.s0_5_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_3.0, i32 %qf0_3.1, i32 %qf0_3.2, i32 %qf0_3.3, i32 %kv.kf5_1.2, i32 %kv.kf5_1.3, float %kv.s0_5_k2.0, float %kv.s0_5_k2.1, float %kv.s0_5_k2.2, float %kv.s0_5_k2.3)
  %kv.s0_5_k3.0 = extractvalue {float, float, float, float} %kv.s0_5_k3.r, 0
  %kv.s0_5_k3.1 = extractvalue {float, float, float, float} %kv.s0_5_k3.r, 1
  %kv.s0_5_k3.2 = extractvalue {float, float, float, float} %kv.s0_5_k3.r, 2
  %kv.s0_5_k3.3 = extractvalue {float, float, float, float} %kv.s0_5_k3.r, 3
%kv.s1_5_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_2.0, i32 %qf1_2.1, i32 %qf1_2.2, i32 %qf1_2.3, i32 %kv.kf5_1.0, i32 %kv.kf5_1.1, float %kv.s1_5_k1.0, float %kv.s1_5_k1.1, float %kv.s1_5_k1.2, float %kv.s1_5_k1.3)
  %kv.s1_5_k2.0 = extractvalue {float, float, float, float} %kv.s1_5_k2.r, 0
  %kv.s1_5_k2.1 = extractvalue {float, float, float, float} %kv.s1_5_k2.r, 1
  %kv.s1_5_k2.2 = extractvalue {float, float, float, float} %kv.s1_5_k2.r, 2
  %kv.s1_5_k2.3 = extractvalue {float, float, float, float} %kv.s1_5_k2.r, 3
%kv.s1_5_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_3.0, i32 %qf1_3.1, i32 %qf1_3.2, i32 %qf1_3.3, i32 %kv.kf5_1.2, i32 %kv.kf5_1.3, float %kv.s1_5_k2.0, float %kv.s1_5_k2.1, float %kv.s1_5_k2.2, float %kv.s1_5_k2.3)
  %kv.s1_5_k3.0 = extractvalue {float, float, float, float} %kv.s1_5_k3.r, 0
  %kv.s1_5_k3.1 = extractvalue {float, float, float, float} %kv.s1_5_k3.r, 1
  %kv.s1_5_k3.2 = extractvalue {float, float, float, float} %kv.s1_5_k3.r, 2
  %kv.s1_5_k3.3 = extractvalue {float, float, float, float} %kv.s1_5_k3.r, 3
  %kv.ka6_1 = getelementptr i8, ptr addrspace(3) %kv.kt, i32 6144
  %kv.kaddr6_1 = getelementptr i8, ptr addrspace(3) %kv.ka6_1, i32 %k_lane_off1
%kv.kf6_1.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %kv.kaddr6_1)
  %kv.kf6_1.0 = extractvalue {i32, i32, i32, i32} %kv.kf6_1.r, 0
  %kv.kf6_1.1 = extractvalue {i32, i32, i32, i32} %kv.kf6_1.r, 1
  %kv.kf6_1.2 = extractvalue {i32, i32, i32, i32} %kv.kf6_1.r, 2
  %kv.kf6_1.3 = extractvalue {i32, i32, i32, i32} %kv.kf6_1.r, 3
%kv.s0_6_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_2.0, i32 %qf0_2.1, i32 %qf0_2.2, i32 %qf0_2.3, i32 %kv.kf6_1.0, i32 %kv.kf6_1.1, float %kv.s0_6_k1.0, float %kv.s0_6_k1.1, float %kv.s0_6_k1.2, float %kv.s0_6_k1.3)
  %kv.s0_6_k2.0 = extractvalue {float, float, float, float} %kv.s0_6_k2.r, 0
  %kv.s0_6_k2.1 = extractvalue {float, float, float, float} %kv.s0_6_k2.r, 1
  %kv.s0_6_k2.2 = extractvalue {float, float, float, float} %kv.s0_6_k2.r, 2
  %kv.s0_6_k2.3 = extractvalue {float, float, float, float} %kv.s0_6_k2.r, 3
%kv.s0_6_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_3.0, i32 %qf0_3.1, i32 %qf0_3.2, i32 %qf0_3.3, i32 %kv.kf6_1.2, i32 %kv.kf6_1.3, float %kv.s0_6_k2.0, float %kv.s0_6_k2.1, float %kv.s0_6_k2.2, float %kv.s0_6_k2.3)
  %kv.s0_6_k3.0 = extractvalue {float, float, float, float} %kv.s0_6_k3.r, 0
  %kv.s0_6_k3.1 = extractvalue {float, float, float, float} %kv.s0_6_k3.r, 1
  %kv.s0_6_k3.2 = extractvalue {float, float, float, float} %kv.s0_6_k3.r, 2
  %kv.s0_6_k3.3 = extractvalue {float, float, float, float} %kv.s0_6_k3.r, 3
%kv.s1_6_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_2.0, i32 %qf1_2.1, i32 %qf1_2.2, i32 %qf1_2.3, i32 %kv.kf6_1.0, i32 %kv.kf6_1.1, float %kv.s1_6_k1.0, float %kv.s1_6_k1.1, float %kv.s1_6_k1.2, float %kv.s1_6_k1.3)
  %kv.s1_6_k2.0 = extractvalue {float, float, float, float} %kv.s1_6_k2.r, 0
  %kv.s1_6_k2.1 = extractvalue {float, float, float, float} %kv.s1_6_k2.r, 1
  %kv.s1_6_k2.2 = extractvalue {float, float, float, float} %kv.s1_6_k2.r, 2
  %kv.s1_6_k2.3 = extractvalue {float, float, float, float} %kv.s1_6_k2.r, 3
%kv.s1_6_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_3.0, i32 %qf1_3.1, i32 %qf1_3.2, i32 %qf1_3.3, i32 %kv.kf6_1.2, i32 %kv.kf6_1.3, float %kv.s1_6_k2.0, float %kv.s1_6_k2.1, float %kv.s1_6_k2.2, float %kv.s1_6_k2.3)
  %kv.s1_6_k3.0 = extractvalue {float, float, float, float} %kv.s1_6_k3.r, 0
  %kv.s1_6_k3.1 = extractvalue {float, float, float, float} %kv.s1_6_k3.r, 1
  %kv.s1_6_k3.2 = extractvalue {float, float, float, float} %kv.s1_6_k3.r, 2
  %kv.s1_6_k3.3 = extractvalue {float, float, float, float} %kv.s1_6_k3.r, 3
  %kv.ka7_1 = getelementptr i8, ptr addrspace(3) %kv.kt, i32 7168
  %kv.kaddr7_1 = getelementptr i8, ptr addrspace(3) %kv.ka7_1, i32 %k_lane_off1
%kv.kf7_1.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %kv.kaddr7_1)
  %kv.kf7_1.0 = extractvalue {i32, i32, i32, i32} %kv.kf7_1.r, 0
  %kv.kf7_1.1 = extractvalue {i32, i32, i32, i32} %kv.kf7_1.r, 1
  %kv.kf7_1.2 = extractvalue {i32, i32, i32, i32} %kv.kf7_1.r, 2
  %kv.kf7_1.3 = extractvalue {i32, i32, i32, i32} %kv.kf7_1.r, 3
%kv.s0_7_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_2.0, i32 %qf0_2.1, i32 %qf0_2.2, i32 %qf0_2.3, i32 %kv.kf7_1.0, i32 %kv.kf7_1.1, float %kv.s0_7_k1.0, float %kv.s0_7_k1.1, float %kv.s0_7_k1.2, float %kv.s0_7_k1.3)
  %kv.s0_7_k2.0 = extractvalue {float, float, float, float} %kv.s0_7_k2.r, 0
  %kv.s0_7_k2.1 = extractvalue {float, float, float, float} %kv.s0_7_k2.r, 1
  %kv.s0_7_k2.2 = extractvalue {float, float, float, float} %kv.s0_7_k2.r, 2
  %kv.s0_7_k2.3 = extractvalue {float, float, float, float} %kv.s0_7_k2.r, 3
%kv.s0_7_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf0_3.0, i32 %qf0_3.1, i32 %qf0_3.2, i32 %qf0_3.3, i32 %kv.kf7_1.2, i32 %kv.kf7_1.3, float %kv.s0_7_k2.0, float %kv.s0_7_k2.1, float %kv.s0_7_k2.2, float %kv.s0_7_k2.3)
  %kv.s0_7_k3.0 = extractvalue {float, float, float, float} %kv.s0_7_k3.r, 0
  %kv.s0_7_k3.1 = extractvalue {float, float, float, float} %kv.s0_7_k3.r, 1
  %kv.s0_7_k3.2 = extractvalue {float, float, float, float} %kv.s0_7_k3.r, 2
  %kv.s0_7_k3.3 = extractvalue {float, float, float, float} %kv.s0_7_k3.r, 3
%kv.s1_7_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_2.0, i32 %qf1_2.1, i32 %qf1_2.2, i32 %qf1_2.3, i32 %kv.kf7_1.0, i32 %kv.kf7_1.1, float %kv.s1_7_k1.0, float %kv.s1_7_k1.1, float %kv.s1_7_k1.2, float %kv.s1_7_k1.3)
  %kv.s1_7_k2.0 = extractvalue {float, float, float, float} %kv.s1_7_k2.r, 0
  %kv.s1_7_k2.1 = extractvalue {float, float, float, float} %kv.s1_7_k2.r, 1
  %kv.s1_7_k2.2 = extractvalue {float, float, float, float} %kv.s1_7_k2.r, 2
  %kv.s1_7_k2.3 = extractvalue {float, float, float, float} %kv.s1_7_k2.r, 3
%kv.s1_7_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %qf1_3.0, i32 %qf1_3.1, i32 %qf1_3.2, i32 %qf1_3.3, i32 %kv.kf7_1.2, i32 %kv.kf7_1.3, float %kv.s1_7_k2.0, float %kv.s1_7_k2.1, float %kv.s1_7_k2.2, float %kv.s1_7_k2.3)
  %kv.s1_7_k3.0 = extractvalue {float, float, float, float} %kv.s1_7_k3.r, 0
  %kv.s1_7_k3.1 = extractvalue {float, float, float, float} %kv.s1_7_k3.r, 1
  %kv.s1_7_k3.2 = extractvalue {float, float, float, float} %kv.s1_7_k3.r, 2
  %kv.s1_7_k3.3 = extractvalue {float, float, float, float} %kv.s1_7_k3.r, 3

  %kv.needs_mask = icmp uge i32 %kv.j, %n_full
  br i1 %kv.needs_mask, label %kv.mask, label %kv.softmax

kv.mask:
  ; ---- mask (edge, blocks j >= n_full only): col < kv_len; masked scores become -inf ----
  %kv.col0 = mul i32 %kv.j, 64
  %kv.colt = add i32 %kv.col0, %t2
  ; column colt + c is kept iff c <= the row's limit: kv_len - 1 - colt (signed: a
  ; negative limit masks the whole row); one compare with a constant per element
%kv.nctx1 = sub i32 %kv_len, 1
  %kv.nlim = sub i32 %kv.nctx1, %kv.colt

  %kv.lim0_0 = add i32 %kv.nlim, 0

  %kv.ok0_0_0_0 = icmp sle i32 0, %kv.lim0_0
  %kv.sk0_0.0 = select i1 %kv.ok0_0_0_0, float %kv.s0_0_k3.0, float 0xFFF0000000000000
  %kv.ok0_0_0_1 = icmp sle i32 1, %kv.lim0_0
  %kv.sk0_0.1 = select i1 %kv.ok0_0_0_1, float %kv.s0_0_k3.1, float 0xFFF0000000000000
  %kv.ok0_0_1_0 = icmp sle i32 8, %kv.lim0_0
  %kv.sk0_1.0 = select i1 %kv.ok0_0_1_0, float %kv.s0_1_k3.0, float 0xFFF0000000000000
  %kv.ok0_0_1_1 = icmp sle i32 9, %kv.lim0_0
  %kv.sk0_1.1 = select i1 %kv.ok0_0_1_1, float %kv.s0_1_k3.1, float 0xFFF0000000000000
  %kv.ok0_0_2_0 = icmp sle i32 16, %kv.lim0_0
  %kv.sk0_2.0 = select i1 %kv.ok0_0_2_0, float %kv.s0_2_k3.0, float 0xFFF0000000000000
  %kv.ok0_0_2_1 = icmp sle i32 17, %kv.lim0_0
  %kv.sk0_2.1 = select i1 %kv.ok0_0_2_1, float %kv.s0_2_k3.1, float 0xFFF0000000000000
  %kv.ok0_0_3_0 = icmp sle i32 24, %kv.lim0_0
  %kv.sk0_3.0 = select i1 %kv.ok0_0_3_0, float %kv.s0_3_k3.0, float 0xFFF0000000000000
  %kv.ok0_0_3_1 = icmp sle i32 25, %kv.lim0_0
  %kv.sk0_3.1 = select i1 %kv.ok0_0_3_1, float %kv.s0_3_k3.1, float 0xFFF0000000000000
  %kv.ok0_0_4_0 = icmp sle i32 32, %kv.lim0_0
  %kv.sk0_4.0 = select i1 %kv.ok0_0_4_0, float %kv.s0_4_k3.0, float 0xFFF0000000000000
  %kv.ok0_0_4_1 = icmp sle i32 33, %kv.lim0_0
  %kv.sk0_4.1 = select i1 %kv.ok0_0_4_1, float %kv.s0_4_k3.1, float 0xFFF0000000000000
  %kv.ok0_0_5_0 = icmp sle i32 40, %kv.lim0_0
  %kv.sk0_5.0 = select i1 %kv.ok0_0_5_0, float %kv.s0_5_k3.0, float 0xFFF0000000000000
  %kv.ok0_0_5_1 = icmp sle i32 41, %kv.lim0_0
  %kv.sk0_5.1 = select i1 %kv.ok0_0_5_1, float %kv.s0_5_k3.1, float 0xFFF0000000000000
  %kv.ok0_0_6_0 = icmp sle i32 48, %kv.lim0_0
  %kv.sk0_6.0 = select i1 %kv.ok0_0_6_0, float %kv.s0_6_k3.0, float 0xFFF0000000000000
  %kv.ok0_0_6_1 = icmp sle i32 49, %kv.lim0_0
  %kv.sk0_6.1 = select i1 %kv.ok0_0_6_1, float %kv.s0_6_k3.1, float 0xFFF0000000000000
  %kv.ok0_0_7_0 = icmp sle i32 56, %kv.lim0_0
  %kv.sk0_7.0 = select i1 %kv.ok0_0_7_0, float %kv.s0_7_k3.0, float 0xFFF0000000000000
  %kv.ok0_0_7_1 = icmp sle i32 57, %kv.lim0_0
  %kv.sk0_7.1 = select i1 %kv.ok0_0_7_1, float %kv.s0_7_k3.1, float 0xFFF0000000000000

  %kv.lim0_1 = add i32 %kv.nlim, 0

  %kv.ok0_1_0_0 = icmp sle i32 0, %kv.lim0_1
  %kv.sk0_0.2 = select i1 %kv.ok0_1_0_0, float %kv.s0_0_k3.2, float 0xFFF0000000000000
  %kv.ok0_1_0_1 = icmp sle i32 1, %kv.lim0_1
  %kv.sk0_0.3 = select i1 %kv.ok0_1_0_1, float %kv.s0_0_k3.3, float 0xFFF0000000000000
  %kv.ok0_1_1_0 = icmp sle i32 8, %kv.lim0_1
  %kv.sk0_1.2 = select i1 %kv.ok0_1_1_0, float %kv.s0_1_k3.2, float 0xFFF0000000000000
  %kv.ok0_1_1_1 = icmp sle i32 9, %kv.lim0_1
  %kv.sk0_1.3 = select i1 %kv.ok0_1_1_1, float %kv.s0_1_k3.3, float 0xFFF0000000000000
  %kv.ok0_1_2_0 = icmp sle i32 16, %kv.lim0_1
  %kv.sk0_2.2 = select i1 %kv.ok0_1_2_0, float %kv.s0_2_k3.2, float 0xFFF0000000000000
  %kv.ok0_1_2_1 = icmp sle i32 17, %kv.lim0_1
  %kv.sk0_2.3 = select i1 %kv.ok0_1_2_1, float %kv.s0_2_k3.3, float 0xFFF0000000000000
  %kv.ok0_1_3_0 = icmp sle i32 24, %kv.lim0_1
  %kv.sk0_3.2 = select i1 %kv.ok0_1_3_0, float %kv.s0_3_k3.2, float 0xFFF0000000000000
  %kv.ok0_1_3_1 = icmp sle i32 25, %kv.lim0_1
  %kv.sk0_3.3 = select i1 %kv.ok0_1_3_1, float %kv.s0_3_k3.3, float 0xFFF0000000000000
  %kv.ok0_1_4_0 = icmp sle i32 32, %kv.lim0_1
  %kv.sk0_4.2 = select i1 %kv.ok0_1_4_0, float %kv.s0_4_k3.2, float 0xFFF0000000000000
  %kv.ok0_1_4_1 = icmp sle i32 33, %kv.lim0_1
  %kv.sk0_4.3 = select i1 %kv.ok0_1_4_1, float %kv.s0_4_k3.3, float 0xFFF0000000000000
  %kv.ok0_1_5_0 = icmp sle i32 40, %kv.lim0_1
  %kv.sk0_5.2 = select i1 %kv.ok0_1_5_0, float %kv.s0_5_k3.2, float 0xFFF0000000000000
  %kv.ok0_1_5_1 = icmp sle i32 41, %kv.lim0_1
  %kv.sk0_5.3 = select i1 %kv.ok0_1_5_1, float %kv.s0_5_k3.3, float 0xFFF0000000000000
  %kv.ok0_1_6_0 = icmp sle i32 48, %kv.lim0_1
  %kv.sk0_6.2 = select i1 %kv.ok0_1_6_0, float %kv.s0_6_k3.2, float 0xFFF0000000000000
  %kv.ok0_1_6_1 = icmp sle i32 49, %kv.lim0_1
  %kv.sk0_6.3 = select i1 %kv.ok0_1_6_1, float %kv.s0_6_k3.3, float 0xFFF0000000000000
  %kv.ok0_1_7_0 = icmp sle i32 56, %kv.lim0_1
  %kv.sk0_7.2 = select i1 %kv.ok0_1_7_0, float %kv.s0_7_k3.2, float 0xFFF0000000000000
  %kv.ok0_1_7_1 = icmp sle i32 57, %kv.lim0_1
  %kv.sk0_7.3 = select i1 %kv.ok0_1_7_1, float %kv.s0_7_k3.3, float 0xFFF0000000000000

  %kv.lim1_0 = add i32 %kv.nlim, 0

  %kv.ok1_0_0_0 = icmp sle i32 0, %kv.lim1_0
  %kv.sk1_0.0 = select i1 %kv.ok1_0_0_0, float %kv.s1_0_k3.0, float 0xFFF0000000000000
  %kv.ok1_0_0_1 = icmp sle i32 1, %kv.lim1_0
  %kv.sk1_0.1 = select i1 %kv.ok1_0_0_1, float %kv.s1_0_k3.1, float 0xFFF0000000000000
  %kv.ok1_0_1_0 = icmp sle i32 8, %kv.lim1_0
  %kv.sk1_1.0 = select i1 %kv.ok1_0_1_0, float %kv.s1_1_k3.0, float 0xFFF0000000000000
  %kv.ok1_0_1_1 = icmp sle i32 9, %kv.lim1_0
  %kv.sk1_1.1 = select i1 %kv.ok1_0_1_1, float %kv.s1_1_k3.1, float 0xFFF0000000000000
  %kv.ok1_0_2_0 = icmp sle i32 16, %kv.lim1_0
  %kv.sk1_2.0 = select i1 %kv.ok1_0_2_0, float %kv.s1_2_k3.0, float 0xFFF0000000000000
  %kv.ok1_0_2_1 = icmp sle i32 17, %kv.lim1_0
  %kv.sk1_2.1 = select i1 %kv.ok1_0_2_1, float %kv.s1_2_k3.1, float 0xFFF0000000000000
  %kv.ok1_0_3_0 = icmp sle i32 24, %kv.lim1_0
  %kv.sk1_3.0 = select i1 %kv.ok1_0_3_0, float %kv.s1_3_k3.0, float 0xFFF0000000000000
  %kv.ok1_0_3_1 = icmp sle i32 25, %kv.lim1_0
  %kv.sk1_3.1 = select i1 %kv.ok1_0_3_1, float %kv.s1_3_k3.1, float 0xFFF0000000000000
  %kv.ok1_0_4_0 = icmp sle i32 32, %kv.lim1_0
  %kv.sk1_4.0 = select i1 %kv.ok1_0_4_0, float %kv.s1_4_k3.0, float 0xFFF0000000000000
  %kv.ok1_0_4_1 = icmp sle i32 33, %kv.lim1_0
  %kv.sk1_4.1 = select i1 %kv.ok1_0_4_1, float %kv.s1_4_k3.1, float 0xFFF0000000000000
  %kv.ok1_0_5_0 = icmp sle i32 40, %kv.lim1_0
  %kv.sk1_5.0 = select i1 %kv.ok1_0_5_0, float %kv.s1_5_k3.0, float 0xFFF0000000000000
  %kv.ok1_0_5_1 = icmp sle i32 41, %kv.lim1_0
  %kv.sk1_5.1 = select i1 %kv.ok1_0_5_1, float %kv.s1_5_k3.1, float 0xFFF0000000000000
  %kv.ok1_0_6_0 = icmp sle i32 48, %kv.lim1_0
  %kv.sk1_6.0 = select i1 %kv.ok1_0_6_0, float %kv.s1_6_k3.0, float 0xFFF0000000000000
  %kv.ok1_0_6_1 = icmp sle i32 49, %kv.lim1_0
  %kv.sk1_6.1 = select i1 %kv.ok1_0_6_1, float %kv.s1_6_k3.1, float 0xFFF0000000000000
  %kv.ok1_0_7_0 = icmp sle i32 56, %kv.lim1_0
  %kv.sk1_7.0 = select i1 %kv.ok1_0_7_0, float %kv.s1_7_k3.0, float 0xFFF0000000000000
  %kv.ok1_0_7_1 = icmp sle i32 57, %kv.lim1_0
  %kv.sk1_7.1 = select i1 %kv.ok1_0_7_1, float %kv.s1_7_k3.1, float 0xFFF0000000000000

  %kv.lim1_1 = add i32 %kv.nlim, 0

  %kv.ok1_1_0_0 = icmp sle i32 0, %kv.lim1_1
  %kv.sk1_0.2 = select i1 %kv.ok1_1_0_0, float %kv.s1_0_k3.2, float 0xFFF0000000000000
  %kv.ok1_1_0_1 = icmp sle i32 1, %kv.lim1_1
  %kv.sk1_0.3 = select i1 %kv.ok1_1_0_1, float %kv.s1_0_k3.3, float 0xFFF0000000000000
  %kv.ok1_1_1_0 = icmp sle i32 8, %kv.lim1_1
  %kv.sk1_1.2 = select i1 %kv.ok1_1_1_0, float %kv.s1_1_k3.2, float 0xFFF0000000000000
  %kv.ok1_1_1_1 = icmp sle i32 9, %kv.lim1_1
  %kv.sk1_1.3 = select i1 %kv.ok1_1_1_1, float %kv.s1_1_k3.3, float 0xFFF0000000000000
  %kv.ok1_1_2_0 = icmp sle i32 16, %kv.lim1_1
  %kv.sk1_2.2 = select i1 %kv.ok1_1_2_0, float %kv.s1_2_k3.2, float 0xFFF0000000000000
  %kv.ok1_1_2_1 = icmp sle i32 17, %kv.lim1_1
  %kv.sk1_2.3 = select i1 %kv.ok1_1_2_1, float %kv.s1_2_k3.3, float 0xFFF0000000000000
  %kv.ok1_1_3_0 = icmp sle i32 24, %kv.lim1_1
  %kv.sk1_3.2 = select i1 %kv.ok1_1_3_0, float %kv.s1_3_k3.2, float 0xFFF0000000000000
  %kv.ok1_1_3_1 = icmp sle i32 25, %kv.lim1_1
  %kv.sk1_3.3 = select i1 %kv.ok1_1_3_1, float %kv.s1_3_k3.3, float 0xFFF0000000000000
  %kv.ok1_1_4_0 = icmp sle i32 32, %kv.lim1_1
  %kv.sk1_4.2 = select i1 %kv.ok1_1_4_0, float %kv.s1_4_k3.2, float 0xFFF0000000000000
  %kv.ok1_1_4_1 = icmp sle i32 33, %kv.lim1_1
  %kv.sk1_4.3 = select i1 %kv.ok1_1_4_1, float %kv.s1_4_k3.3, float 0xFFF0000000000000
  %kv.ok1_1_5_0 = icmp sle i32 40, %kv.lim1_1
  %kv.sk1_5.2 = select i1 %kv.ok1_1_5_0, float %kv.s1_5_k3.2, float 0xFFF0000000000000
  %kv.ok1_1_5_1 = icmp sle i32 41, %kv.lim1_1
  %kv.sk1_5.3 = select i1 %kv.ok1_1_5_1, float %kv.s1_5_k3.3, float 0xFFF0000000000000
  %kv.ok1_1_6_0 = icmp sle i32 48, %kv.lim1_1
  %kv.sk1_6.2 = select i1 %kv.ok1_1_6_0, float %kv.s1_6_k3.2, float 0xFFF0000000000000
  %kv.ok1_1_6_1 = icmp sle i32 49, %kv.lim1_1
  %kv.sk1_6.3 = select i1 %kv.ok1_1_6_1, float %kv.s1_6_k3.3, float 0xFFF0000000000000
  %kv.ok1_1_7_0 = icmp sle i32 56, %kv.lim1_1
  %kv.sk1_7.2 = select i1 %kv.ok1_1_7_0, float %kv.s1_7_k3.2, float 0xFFF0000000000000
  %kv.ok1_1_7_1 = icmp sle i32 57, %kv.lim1_1
  %kv.sk1_7.3 = select i1 %kv.ok1_1_7_1, float %kv.s1_7_k3.3, float 0xFFF0000000000000
  br label %kv.softmax

kv.softmax:
  %kv.sm0_0.0 = phi float [ %kv.s0_0_k3.0, %kv.compute ], [ %kv.sk0_0.0, %kv.mask ]
  %kv.sm0_0.1 = phi float [ %kv.s0_0_k3.1, %kv.compute ], [ %kv.sk0_0.1, %kv.mask ]
  %kv.sm0_0.2 = phi float [ %kv.s0_0_k3.2, %kv.compute ], [ %kv.sk0_0.2, %kv.mask ]
  %kv.sm0_0.3 = phi float [ %kv.s0_0_k3.3, %kv.compute ], [ %kv.sk0_0.3, %kv.mask ]
  %kv.sm0_1.0 = phi float [ %kv.s0_1_k3.0, %kv.compute ], [ %kv.sk0_1.0, %kv.mask ]
  %kv.sm0_1.1 = phi float [ %kv.s0_1_k3.1, %kv.compute ], [ %kv.sk0_1.1, %kv.mask ]
  %kv.sm0_1.2 = phi float [ %kv.s0_1_k3.2, %kv.compute ], [ %kv.sk0_1.2, %kv.mask ]
  %kv.sm0_1.3 = phi float [ %kv.s0_1_k3.3, %kv.compute ], [ %kv.sk0_1.3, %kv.mask ]
  %kv.sm0_2.0 = phi float [ %kv.s0_2_k3.0, %kv.compute ], [ %kv.sk0_2.0, %kv.mask ]
  %kv.sm0_2.1 = phi float [ %kv.s0_2_k3.1, %kv.compute ], [ %kv.sk0_2.1, %kv.mask ]
  %kv.sm0_2.2 = phi float [ %kv.s0_2_k3.2, %kv.compute ], [ %kv.sk0_2.2, %kv.mask ]
  %kv.sm0_2.3 = phi float [ %kv.s0_2_k3.3, %kv.compute ], [ %kv.sk0_2.3, %kv.mask ]
  %kv.sm0_3.0 = phi float [ %kv.s0_3_k3.0, %kv.compute ], [ %kv.sk0_3.0, %kv.mask ]
  %kv.sm0_3.1 = phi float [ %kv.s0_3_k3.1, %kv.compute ], [ %kv.sk0_3.1, %kv.mask ]
  %kv.sm0_3.2 = phi float [ %kv.s0_3_k3.2, %kv.compute ], [ %kv.sk0_3.2, %kv.mask ]
  %kv.sm0_3.3 = phi float [ %kv.s0_3_k3.3, %kv.compute ], [ %kv.sk0_3.3, %kv.mask ]
  %kv.sm0_4.0 = phi float [ %kv.s0_4_k3.0, %kv.compute ], [ %kv.sk0_4.0, %kv.mask ]
  %kv.sm0_4.1 = phi float [ %kv.s0_4_k3.1, %kv.compute ], [ %kv.sk0_4.1, %kv.mask ]
  %kv.sm0_4.2 = phi float [ %kv.s0_4_k3.2, %kv.compute ], [ %kv.sk0_4.2, %kv.mask ]
  %kv.sm0_4.3 = phi float [ %kv.s0_4_k3.3, %kv.compute ], [ %kv.sk0_4.3, %kv.mask ]
  %kv.sm0_5.0 = phi float [ %kv.s0_5_k3.0, %kv.compute ], [ %kv.sk0_5.0, %kv.mask ]
  %kv.sm0_5.1 = phi float [ %kv.s0_5_k3.1, %kv.compute ], [ %kv.sk0_5.1, %kv.mask ]
  %kv.sm0_5.2 = phi float [ %kv.s0_5_k3.2, %kv.compute ], [ %kv.sk0_5.2, %kv.mask ]
  %kv.sm0_5.3 = phi float [ %kv.s0_5_k3.3, %kv.compute ], [ %kv.sk0_5.3, %kv.mask ]
  %kv.sm0_6.0 = phi float [ %kv.s0_6_k3.0, %kv.compute ], [ %kv.sk0_6.0, %kv.mask ]
  %kv.sm0_6.1 = phi float [ %kv.s0_6_k3.1, %kv.compute ], [ %kv.sk0_6.1, %kv.mask ]
  %kv.sm0_6.2 = phi float [ %kv.s0_6_k3.2, %kv.compute ], [ %kv.sk0_6.2, %kv.mask ]
  %kv.sm0_6.3 = phi float [ %kv.s0_6_k3.3, %kv.compute ], [ %kv.sk0_6.3, %kv.mask ]
  %kv.sm0_7.0 = phi float [ %kv.s0_7_k3.0, %kv.compute ], [ %kv.sk0_7.0, %kv.mask ]
  %kv.sm0_7.1 = phi float [ %kv.s0_7_k3.1, %kv.compute ], [ %kv.sk0_7.1, %kv.mask ]
  %kv.sm0_7.2 = phi float [ %kv.s0_7_k3.2, %kv.compute ], [ %kv.sk0_7.2, %kv.mask ]
  %kv.sm0_7.3 = phi float [ %kv.s0_7_k3.3, %kv.compute ], [ %kv.sk0_7.3, %kv.mask ]
  %kv.sm1_0.0 = phi float [ %kv.s1_0_k3.0, %kv.compute ], [ %kv.sk1_0.0, %kv.mask ]
  %kv.sm1_0.1 = phi float [ %kv.s1_0_k3.1, %kv.compute ], [ %kv.sk1_0.1, %kv.mask ]
  %kv.sm1_0.2 = phi float [ %kv.s1_0_k3.2, %kv.compute ], [ %kv.sk1_0.2, %kv.mask ]
  %kv.sm1_0.3 = phi float [ %kv.s1_0_k3.3, %kv.compute ], [ %kv.sk1_0.3, %kv.mask ]
  %kv.sm1_1.0 = phi float [ %kv.s1_1_k3.0, %kv.compute ], [ %kv.sk1_1.0, %kv.mask ]
  %kv.sm1_1.1 = phi float [ %kv.s1_1_k3.1, %kv.compute ], [ %kv.sk1_1.1, %kv.mask ]
  %kv.sm1_1.2 = phi float [ %kv.s1_1_k3.2, %kv.compute ], [ %kv.sk1_1.2, %kv.mask ]
  %kv.sm1_1.3 = phi float [ %kv.s1_1_k3.3, %kv.compute ], [ %kv.sk1_1.3, %kv.mask ]
  %kv.sm1_2.0 = phi float [ %kv.s1_2_k3.0, %kv.compute ], [ %kv.sk1_2.0, %kv.mask ]
  %kv.sm1_2.1 = phi float [ %kv.s1_2_k3.1, %kv.compute ], [ %kv.sk1_2.1, %kv.mask ]
  %kv.sm1_2.2 = phi float [ %kv.s1_2_k3.2, %kv.compute ], [ %kv.sk1_2.2, %kv.mask ]
  %kv.sm1_2.3 = phi float [ %kv.s1_2_k3.3, %kv.compute ], [ %kv.sk1_2.3, %kv.mask ]
  %kv.sm1_3.0 = phi float [ %kv.s1_3_k3.0, %kv.compute ], [ %kv.sk1_3.0, %kv.mask ]
  %kv.sm1_3.1 = phi float [ %kv.s1_3_k3.1, %kv.compute ], [ %kv.sk1_3.1, %kv.mask ]
  %kv.sm1_3.2 = phi float [ %kv.s1_3_k3.2, %kv.compute ], [ %kv.sk1_3.2, %kv.mask ]
  %kv.sm1_3.3 = phi float [ %kv.s1_3_k3.3, %kv.compute ], [ %kv.sk1_3.3, %kv.mask ]
  %kv.sm1_4.0 = phi float [ %kv.s1_4_k3.0, %kv.compute ], [ %kv.sk1_4.0, %kv.mask ]
  %kv.sm1_4.1 = phi float [ %kv.s1_4_k3.1, %kv.compute ], [ %kv.sk1_4.1, %kv.mask ]
  %kv.sm1_4.2 = phi float [ %kv.s1_4_k3.2, %kv.compute ], [ %kv.sk1_4.2, %kv.mask ]
  %kv.sm1_4.3 = phi float [ %kv.s1_4_k3.3, %kv.compute ], [ %kv.sk1_4.3, %kv.mask ]
  %kv.sm1_5.0 = phi float [ %kv.s1_5_k3.0, %kv.compute ], [ %kv.sk1_5.0, %kv.mask ]
  %kv.sm1_5.1 = phi float [ %kv.s1_5_k3.1, %kv.compute ], [ %kv.sk1_5.1, %kv.mask ]
  %kv.sm1_5.2 = phi float [ %kv.s1_5_k3.2, %kv.compute ], [ %kv.sk1_5.2, %kv.mask ]
  %kv.sm1_5.3 = phi float [ %kv.s1_5_k3.3, %kv.compute ], [ %kv.sk1_5.3, %kv.mask ]
  %kv.sm1_6.0 = phi float [ %kv.s1_6_k3.0, %kv.compute ], [ %kv.sk1_6.0, %kv.mask ]
  %kv.sm1_6.1 = phi float [ %kv.s1_6_k3.1, %kv.compute ], [ %kv.sk1_6.1, %kv.mask ]
  %kv.sm1_6.2 = phi float [ %kv.s1_6_k3.2, %kv.compute ], [ %kv.sk1_6.2, %kv.mask ]
  %kv.sm1_6.3 = phi float [ %kv.s1_6_k3.3, %kv.compute ], [ %kv.sk1_6.3, %kv.mask ]
  %kv.sm1_7.0 = phi float [ %kv.s1_7_k3.0, %kv.compute ], [ %kv.sk1_7.0, %kv.mask ]
  %kv.sm1_7.1 = phi float [ %kv.s1_7_k3.1, %kv.compute ], [ %kv.sk1_7.1, %kv.mask ]
  %kv.sm1_7.2 = phi float [ %kv.s1_7_k3.2, %kv.compute ], [ %kv.sk1_7.2, %kv.mask ]
  %kv.sm1_7.3 = phi float [ %kv.s1_7_k3.3, %kv.compute ], [ %kv.sk1_7.3, %kv.mask ]
  ; ---- online softmax in base 2: m_ij = max(m_i, rowmax(S)·qk_scale); p = exp2(S·qk_scale - m_ij);
  ;      alpha = exp2(m_i - m_ij); l_i = l_i·alpha + rowsum(p); acc = acc·alpha ----


  %kv.rm0_0_0 = call float @llvm.maxnum.f32(float %kv.sm0_0.0, float %kv.sm0_0.1)
  %kv.pm0_0_1 = call float @llvm.maxnum.f32(float %kv.sm0_1.0, float %kv.sm0_1.1)
  %kv.rm0_0_1 = call float @llvm.maxnum.f32(float %kv.rm0_0_0, float %kv.pm0_0_1)
  %kv.pm0_0_2 = call float @llvm.maxnum.f32(float %kv.sm0_2.0, float %kv.sm0_2.1)
  %kv.rm0_0_2 = call float @llvm.maxnum.f32(float %kv.rm0_0_1, float %kv.pm0_0_2)
  %kv.pm0_0_3 = call float @llvm.maxnum.f32(float %kv.sm0_3.0, float %kv.sm0_3.1)
  %kv.rm0_0_3 = call float @llvm.maxnum.f32(float %kv.rm0_0_2, float %kv.pm0_0_3)
  %kv.pm0_0_4 = call float @llvm.maxnum.f32(float %kv.sm0_4.0, float %kv.sm0_4.1)
  %kv.rm0_0_4 = call float @llvm.maxnum.f32(float %kv.rm0_0_3, float %kv.pm0_0_4)
  %kv.pm0_0_5 = call float @llvm.maxnum.f32(float %kv.sm0_5.0, float %kv.sm0_5.1)
  %kv.rm0_0_5 = call float @llvm.maxnum.f32(float %kv.rm0_0_4, float %kv.pm0_0_5)
  %kv.pm0_0_6 = call float @llvm.maxnum.f32(float %kv.sm0_6.0, float %kv.sm0_6.1)
  %kv.rm0_0_6 = call float @llvm.maxnum.f32(float %kv.rm0_0_5, float %kv.pm0_0_6)
  %kv.pm0_0_7 = call float @llvm.maxnum.f32(float %kv.sm0_7.0, float %kv.sm0_7.1)
  %kv.rm0_0_7 = call float @llvm.maxnum.f32(float %kv.rm0_0_6, float %kv.pm0_0_7)
%kv.rowmax0_0.x1 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %kv.rm0_0_7, i32 1, i32 31)
  %kv.rowmax0_0.m1 = call float @llvm.maxnum.f32(float %kv.rm0_0_7, float %kv.rowmax0_0.x1)
  %kv.rowmax0_0.x2 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %kv.rowmax0_0.m1, i32 2, i32 31)
  %kv.rowmax0_0 = call float @llvm.maxnum.f32(float %kv.rowmax0_0.m1, float %kv.rowmax0_0.x2)
  %kv.rms0_0 = fmul float %kv.rowmax0_0, %qk_scale
  %kv.mij0_0 = call float @llvm.maxnum.f32(float %kv.in.m0_0, float %kv.rms0_0)

  %kv.negm0_0 = fneg float %kv.mij0_0
  %kv.ad0_0 = fsub float %kv.in.m0_0, %kv.mij0_0
%kv.alpha0_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.ad0_0)
  %kv.z0_0_0_0 = call float @llvm.fma.f32(float %kv.sm0_0.0, float %qk_scale, float %kv.negm0_0)
%kv.p0_0_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_0_0_0)
  %kv.z0_0_0_1 = call float @llvm.fma.f32(float %kv.sm0_0.1, float %qk_scale, float %kv.negm0_0)
%kv.p0_0_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_0_0_1)
  %kv.z0_0_1_0 = call float @llvm.fma.f32(float %kv.sm0_1.0, float %qk_scale, float %kv.negm0_0)
%kv.p0_1_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_0_1_0)
  %kv.z0_0_1_1 = call float @llvm.fma.f32(float %kv.sm0_1.1, float %qk_scale, float %kv.negm0_0)
%kv.p0_1_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_0_1_1)
  %kv.z0_0_2_0 = call float @llvm.fma.f32(float %kv.sm0_2.0, float %qk_scale, float %kv.negm0_0)
%kv.p0_2_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_0_2_0)
  %kv.z0_0_2_1 = call float @llvm.fma.f32(float %kv.sm0_2.1, float %qk_scale, float %kv.negm0_0)
%kv.p0_2_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_0_2_1)
  %kv.z0_0_3_0 = call float @llvm.fma.f32(float %kv.sm0_3.0, float %qk_scale, float %kv.negm0_0)
%kv.p0_3_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_0_3_0)
  %kv.z0_0_3_1 = call float @llvm.fma.f32(float %kv.sm0_3.1, float %qk_scale, float %kv.negm0_0)
%kv.p0_3_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_0_3_1)
  %kv.z0_0_4_0 = call float @llvm.fma.f32(float %kv.sm0_4.0, float %qk_scale, float %kv.negm0_0)
%kv.p0_4_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_0_4_0)
  %kv.z0_0_4_1 = call float @llvm.fma.f32(float %kv.sm0_4.1, float %qk_scale, float %kv.negm0_0)
%kv.p0_4_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_0_4_1)
  %kv.z0_0_5_0 = call float @llvm.fma.f32(float %kv.sm0_5.0, float %qk_scale, float %kv.negm0_0)
%kv.p0_5_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_0_5_0)
  %kv.z0_0_5_1 = call float @llvm.fma.f32(float %kv.sm0_5.1, float %qk_scale, float %kv.negm0_0)
%kv.p0_5_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_0_5_1)
  %kv.z0_0_6_0 = call float @llvm.fma.f32(float %kv.sm0_6.0, float %qk_scale, float %kv.negm0_0)
%kv.p0_6_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_0_6_0)
  %kv.z0_0_6_1 = call float @llvm.fma.f32(float %kv.sm0_6.1, float %qk_scale, float %kv.negm0_0)
%kv.p0_6_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_0_6_1)
  %kv.z0_0_7_0 = call float @llvm.fma.f32(float %kv.sm0_7.0, float %qk_scale, float %kv.negm0_0)
%kv.p0_7_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_0_7_0)
  %kv.z0_0_7_1 = call float @llvm.fma.f32(float %kv.sm0_7.1, float %qk_scale, float %kv.negm0_0)
%kv.p0_7_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_0_7_1)
  %kv.ls0_0_0 = fmul float %kv.in.l0_0, %kv.alpha0_0
  %kv.ls0_0_0a = fadd float %kv.ls0_0_0, %kv.p0_0_0
  %kv.ls0_0_1 = fadd float %kv.ls0_0_0a, %kv.p0_0_1
  %kv.ls0_0_1a = fadd float %kv.ls0_0_1, %kv.p0_1_0
  %kv.ls0_0_2 = fadd float %kv.ls0_0_1a, %kv.p0_1_1
  %kv.ls0_0_2a = fadd float %kv.ls0_0_2, %kv.p0_2_0
  %kv.ls0_0_3 = fadd float %kv.ls0_0_2a, %kv.p0_2_1
  %kv.ls0_0_3a = fadd float %kv.ls0_0_3, %kv.p0_3_0
  %kv.ls0_0_4 = fadd float %kv.ls0_0_3a, %kv.p0_3_1
  %kv.ls0_0_4a = fadd float %kv.ls0_0_4, %kv.p0_4_0
  %kv.ls0_0_5 = fadd float %kv.ls0_0_4a, %kv.p0_4_1
  %kv.ls0_0_5a = fadd float %kv.ls0_0_5, %kv.p0_5_0
  %kv.ls0_0_6 = fadd float %kv.ls0_0_5a, %kv.p0_5_1
  %kv.ls0_0_6a = fadd float %kv.ls0_0_6, %kv.p0_6_0
  %kv.ls0_0_7 = fadd float %kv.ls0_0_6a, %kv.p0_6_1
  %kv.ls0_0_7a = fadd float %kv.ls0_0_7, %kv.p0_7_0
  %kv.ls0_0_8 = fadd float %kv.ls0_0_7a, %kv.p0_7_1

  %kv.rm0_1_0 = call float @llvm.maxnum.f32(float %kv.sm0_0.2, float %kv.sm0_0.3)
  %kv.pm0_1_1 = call float @llvm.maxnum.f32(float %kv.sm0_1.2, float %kv.sm0_1.3)
  %kv.rm0_1_1 = call float @llvm.maxnum.f32(float %kv.rm0_1_0, float %kv.pm0_1_1)
  %kv.pm0_1_2 = call float @llvm.maxnum.f32(float %kv.sm0_2.2, float %kv.sm0_2.3)
  %kv.rm0_1_2 = call float @llvm.maxnum.f32(float %kv.rm0_1_1, float %kv.pm0_1_2)
  %kv.pm0_1_3 = call float @llvm.maxnum.f32(float %kv.sm0_3.2, float %kv.sm0_3.3)
  %kv.rm0_1_3 = call float @llvm.maxnum.f32(float %kv.rm0_1_2, float %kv.pm0_1_3)
  %kv.pm0_1_4 = call float @llvm.maxnum.f32(float %kv.sm0_4.2, float %kv.sm0_4.3)
  %kv.rm0_1_4 = call float @llvm.maxnum.f32(float %kv.rm0_1_3, float %kv.pm0_1_4)
  %kv.pm0_1_5 = call float @llvm.maxnum.f32(float %kv.sm0_5.2, float %kv.sm0_5.3)
  %kv.rm0_1_5 = call float @llvm.maxnum.f32(float %kv.rm0_1_4, float %kv.pm0_1_5)
  %kv.pm0_1_6 = call float @llvm.maxnum.f32(float %kv.sm0_6.2, float %kv.sm0_6.3)
  %kv.rm0_1_6 = call float @llvm.maxnum.f32(float %kv.rm0_1_5, float %kv.pm0_1_6)
  %kv.pm0_1_7 = call float @llvm.maxnum.f32(float %kv.sm0_7.2, float %kv.sm0_7.3)
  %kv.rm0_1_7 = call float @llvm.maxnum.f32(float %kv.rm0_1_6, float %kv.pm0_1_7)
%kv.rowmax0_1.x1 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %kv.rm0_1_7, i32 1, i32 31)
  %kv.rowmax0_1.m1 = call float @llvm.maxnum.f32(float %kv.rm0_1_7, float %kv.rowmax0_1.x1)
  %kv.rowmax0_1.x2 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %kv.rowmax0_1.m1, i32 2, i32 31)
  %kv.rowmax0_1 = call float @llvm.maxnum.f32(float %kv.rowmax0_1.m1, float %kv.rowmax0_1.x2)
  %kv.rms0_1 = fmul float %kv.rowmax0_1, %qk_scale
  %kv.mij0_1 = call float @llvm.maxnum.f32(float %kv.in.m0_1, float %kv.rms0_1)

  %kv.negm0_1 = fneg float %kv.mij0_1
  %kv.ad0_1 = fsub float %kv.in.m0_1, %kv.mij0_1
%kv.alpha0_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.ad0_1)
  %kv.z0_1_0_0 = call float @llvm.fma.f32(float %kv.sm0_0.2, float %qk_scale, float %kv.negm0_1)
%kv.p0_0_2 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_1_0_0)
  %kv.z0_1_0_1 = call float @llvm.fma.f32(float %kv.sm0_0.3, float %qk_scale, float %kv.negm0_1)
%kv.p0_0_3 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_1_0_1)
  %kv.z0_1_1_0 = call float @llvm.fma.f32(float %kv.sm0_1.2, float %qk_scale, float %kv.negm0_1)
%kv.p0_1_2 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_1_1_0)
  %kv.z0_1_1_1 = call float @llvm.fma.f32(float %kv.sm0_1.3, float %qk_scale, float %kv.negm0_1)
%kv.p0_1_3 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_1_1_1)
  %kv.z0_1_2_0 = call float @llvm.fma.f32(float %kv.sm0_2.2, float %qk_scale, float %kv.negm0_1)
%kv.p0_2_2 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_1_2_0)
  %kv.z0_1_2_1 = call float @llvm.fma.f32(float %kv.sm0_2.3, float %qk_scale, float %kv.negm0_1)
%kv.p0_2_3 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_1_2_1)
  %kv.z0_1_3_0 = call float @llvm.fma.f32(float %kv.sm0_3.2, float %qk_scale, float %kv.negm0_1)
%kv.p0_3_2 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_1_3_0)
  %kv.z0_1_3_1 = call float @llvm.fma.f32(float %kv.sm0_3.3, float %qk_scale, float %kv.negm0_1)
%kv.p0_3_3 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_1_3_1)
  %kv.z0_1_4_0 = call float @llvm.fma.f32(float %kv.sm0_4.2, float %qk_scale, float %kv.negm0_1)
%kv.p0_4_2 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_1_4_0)
  %kv.z0_1_4_1 = call float @llvm.fma.f32(float %kv.sm0_4.3, float %qk_scale, float %kv.negm0_1)
%kv.p0_4_3 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_1_4_1)
  %kv.z0_1_5_0 = call float @llvm.fma.f32(float %kv.sm0_5.2, float %qk_scale, float %kv.negm0_1)
%kv.p0_5_2 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_1_5_0)
  %kv.z0_1_5_1 = call float @llvm.fma.f32(float %kv.sm0_5.3, float %qk_scale, float %kv.negm0_1)
%kv.p0_5_3 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_1_5_1)
  %kv.z0_1_6_0 = call float @llvm.fma.f32(float %kv.sm0_6.2, float %qk_scale, float %kv.negm0_1)
%kv.p0_6_2 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_1_6_0)
  %kv.z0_1_6_1 = call float @llvm.fma.f32(float %kv.sm0_6.3, float %qk_scale, float %kv.negm0_1)
%kv.p0_6_3 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_1_6_1)
  %kv.z0_1_7_0 = call float @llvm.fma.f32(float %kv.sm0_7.2, float %qk_scale, float %kv.negm0_1)
%kv.p0_7_2 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_1_7_0)
  %kv.z0_1_7_1 = call float @llvm.fma.f32(float %kv.sm0_7.3, float %qk_scale, float %kv.negm0_1)
%kv.p0_7_3 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z0_1_7_1)
  %kv.ls0_1_0 = fmul float %kv.in.l0_1, %kv.alpha0_1
  %kv.ls0_1_0a = fadd float %kv.ls0_1_0, %kv.p0_0_2
  %kv.ls0_1_1 = fadd float %kv.ls0_1_0a, %kv.p0_0_3
  %kv.ls0_1_1a = fadd float %kv.ls0_1_1, %kv.p0_1_2
  %kv.ls0_1_2 = fadd float %kv.ls0_1_1a, %kv.p0_1_3
  %kv.ls0_1_2a = fadd float %kv.ls0_1_2, %kv.p0_2_2
  %kv.ls0_1_3 = fadd float %kv.ls0_1_2a, %kv.p0_2_3
  %kv.ls0_1_3a = fadd float %kv.ls0_1_3, %kv.p0_3_2
  %kv.ls0_1_4 = fadd float %kv.ls0_1_3a, %kv.p0_3_3
  %kv.ls0_1_4a = fadd float %kv.ls0_1_4, %kv.p0_4_2
  %kv.ls0_1_5 = fadd float %kv.ls0_1_4a, %kv.p0_4_3
  %kv.ls0_1_5a = fadd float %kv.ls0_1_5, %kv.p0_5_2
  %kv.ls0_1_6 = fadd float %kv.ls0_1_5a, %kv.p0_5_3
  %kv.ls0_1_6a = fadd float %kv.ls0_1_6, %kv.p0_6_2
  %kv.ls0_1_7 = fadd float %kv.ls0_1_6a, %kv.p0_6_3
  %kv.ls0_1_7a = fadd float %kv.ls0_1_7, %kv.p0_7_2
  %kv.ls0_1_8 = fadd float %kv.ls0_1_7a, %kv.p0_7_3

  %kv.rm1_0_0 = call float @llvm.maxnum.f32(float %kv.sm1_0.0, float %kv.sm1_0.1)
  %kv.pm1_0_1 = call float @llvm.maxnum.f32(float %kv.sm1_1.0, float %kv.sm1_1.1)
  %kv.rm1_0_1 = call float @llvm.maxnum.f32(float %kv.rm1_0_0, float %kv.pm1_0_1)
  %kv.pm1_0_2 = call float @llvm.maxnum.f32(float %kv.sm1_2.0, float %kv.sm1_2.1)
  %kv.rm1_0_2 = call float @llvm.maxnum.f32(float %kv.rm1_0_1, float %kv.pm1_0_2)
  %kv.pm1_0_3 = call float @llvm.maxnum.f32(float %kv.sm1_3.0, float %kv.sm1_3.1)
  %kv.rm1_0_3 = call float @llvm.maxnum.f32(float %kv.rm1_0_2, float %kv.pm1_0_3)
  %kv.pm1_0_4 = call float @llvm.maxnum.f32(float %kv.sm1_4.0, float %kv.sm1_4.1)
  %kv.rm1_0_4 = call float @llvm.maxnum.f32(float %kv.rm1_0_3, float %kv.pm1_0_4)
  %kv.pm1_0_5 = call float @llvm.maxnum.f32(float %kv.sm1_5.0, float %kv.sm1_5.1)
  %kv.rm1_0_5 = call float @llvm.maxnum.f32(float %kv.rm1_0_4, float %kv.pm1_0_5)
  %kv.pm1_0_6 = call float @llvm.maxnum.f32(float %kv.sm1_6.0, float %kv.sm1_6.1)
  %kv.rm1_0_6 = call float @llvm.maxnum.f32(float %kv.rm1_0_5, float %kv.pm1_0_6)
  %kv.pm1_0_7 = call float @llvm.maxnum.f32(float %kv.sm1_7.0, float %kv.sm1_7.1)
  %kv.rm1_0_7 = call float @llvm.maxnum.f32(float %kv.rm1_0_6, float %kv.pm1_0_7)
%kv.rowmax1_0.x1 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %kv.rm1_0_7, i32 1, i32 31)
  %kv.rowmax1_0.m1 = call float @llvm.maxnum.f32(float %kv.rm1_0_7, float %kv.rowmax1_0.x1)
  %kv.rowmax1_0.x2 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %kv.rowmax1_0.m1, i32 2, i32 31)
  %kv.rowmax1_0 = call float @llvm.maxnum.f32(float %kv.rowmax1_0.m1, float %kv.rowmax1_0.x2)
  %kv.rms1_0 = fmul float %kv.rowmax1_0, %qk_scale
  %kv.mij1_0 = call float @llvm.maxnum.f32(float %kv.in.m1_0, float %kv.rms1_0)

  %kv.negm1_0 = fneg float %kv.mij1_0
  %kv.ad1_0 = fsub float %kv.in.m1_0, %kv.mij1_0
%kv.alpha1_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.ad1_0)
  %kv.z1_0_0_0 = call float @llvm.fma.f32(float %kv.sm1_0.0, float %qk_scale, float %kv.negm1_0)
%kv.p1_0_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_0_0_0)
  %kv.z1_0_0_1 = call float @llvm.fma.f32(float %kv.sm1_0.1, float %qk_scale, float %kv.negm1_0)
%kv.p1_0_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_0_0_1)
  %kv.z1_0_1_0 = call float @llvm.fma.f32(float %kv.sm1_1.0, float %qk_scale, float %kv.negm1_0)
%kv.p1_1_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_0_1_0)
  %kv.z1_0_1_1 = call float @llvm.fma.f32(float %kv.sm1_1.1, float %qk_scale, float %kv.negm1_0)
%kv.p1_1_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_0_1_1)
  %kv.z1_0_2_0 = call float @llvm.fma.f32(float %kv.sm1_2.0, float %qk_scale, float %kv.negm1_0)
%kv.p1_2_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_0_2_0)
  %kv.z1_0_2_1 = call float @llvm.fma.f32(float %kv.sm1_2.1, float %qk_scale, float %kv.negm1_0)
%kv.p1_2_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_0_2_1)
  %kv.z1_0_3_0 = call float @llvm.fma.f32(float %kv.sm1_3.0, float %qk_scale, float %kv.negm1_0)
%kv.p1_3_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_0_3_0)
  %kv.z1_0_3_1 = call float @llvm.fma.f32(float %kv.sm1_3.1, float %qk_scale, float %kv.negm1_0)
%kv.p1_3_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_0_3_1)
  %kv.z1_0_4_0 = call float @llvm.fma.f32(float %kv.sm1_4.0, float %qk_scale, float %kv.negm1_0)
%kv.p1_4_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_0_4_0)
  %kv.z1_0_4_1 = call float @llvm.fma.f32(float %kv.sm1_4.1, float %qk_scale, float %kv.negm1_0)
%kv.p1_4_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_0_4_1)
  %kv.z1_0_5_0 = call float @llvm.fma.f32(float %kv.sm1_5.0, float %qk_scale, float %kv.negm1_0)
%kv.p1_5_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_0_5_0)
  %kv.z1_0_5_1 = call float @llvm.fma.f32(float %kv.sm1_5.1, float %qk_scale, float %kv.negm1_0)
%kv.p1_5_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_0_5_1)
  %kv.z1_0_6_0 = call float @llvm.fma.f32(float %kv.sm1_6.0, float %qk_scale, float %kv.negm1_0)
%kv.p1_6_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_0_6_0)
  %kv.z1_0_6_1 = call float @llvm.fma.f32(float %kv.sm1_6.1, float %qk_scale, float %kv.negm1_0)
%kv.p1_6_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_0_6_1)
  %kv.z1_0_7_0 = call float @llvm.fma.f32(float %kv.sm1_7.0, float %qk_scale, float %kv.negm1_0)
%kv.p1_7_0 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_0_7_0)
  %kv.z1_0_7_1 = call float @llvm.fma.f32(float %kv.sm1_7.1, float %qk_scale, float %kv.negm1_0)
%kv.p1_7_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_0_7_1)
  %kv.ls1_0_0 = fmul float %kv.in.l1_0, %kv.alpha1_0
  %kv.ls1_0_0a = fadd float %kv.ls1_0_0, %kv.p1_0_0
  %kv.ls1_0_1 = fadd float %kv.ls1_0_0a, %kv.p1_0_1
  %kv.ls1_0_1a = fadd float %kv.ls1_0_1, %kv.p1_1_0
  %kv.ls1_0_2 = fadd float %kv.ls1_0_1a, %kv.p1_1_1
  %kv.ls1_0_2a = fadd float %kv.ls1_0_2, %kv.p1_2_0
  %kv.ls1_0_3 = fadd float %kv.ls1_0_2a, %kv.p1_2_1
  %kv.ls1_0_3a = fadd float %kv.ls1_0_3, %kv.p1_3_0
  %kv.ls1_0_4 = fadd float %kv.ls1_0_3a, %kv.p1_3_1
  %kv.ls1_0_4a = fadd float %kv.ls1_0_4, %kv.p1_4_0
  %kv.ls1_0_5 = fadd float %kv.ls1_0_4a, %kv.p1_4_1
  %kv.ls1_0_5a = fadd float %kv.ls1_0_5, %kv.p1_5_0
  %kv.ls1_0_6 = fadd float %kv.ls1_0_5a, %kv.p1_5_1
  %kv.ls1_0_6a = fadd float %kv.ls1_0_6, %kv.p1_6_0
  %kv.ls1_0_7 = fadd float %kv.ls1_0_6a, %kv.p1_6_1
  %kv.ls1_0_7a = fadd float %kv.ls1_0_7, %kv.p1_7_0
  %kv.ls1_0_8 = fadd float %kv.ls1_0_7a, %kv.p1_7_1

  %kv.rm1_1_0 = call float @llvm.maxnum.f32(float %kv.sm1_0.2, float %kv.sm1_0.3)
  %kv.pm1_1_1 = call float @llvm.maxnum.f32(float %kv.sm1_1.2, float %kv.sm1_1.3)
  %kv.rm1_1_1 = call float @llvm.maxnum.f32(float %kv.rm1_1_0, float %kv.pm1_1_1)
  %kv.pm1_1_2 = call float @llvm.maxnum.f32(float %kv.sm1_2.2, float %kv.sm1_2.3)
  %kv.rm1_1_2 = call float @llvm.maxnum.f32(float %kv.rm1_1_1, float %kv.pm1_1_2)
  %kv.pm1_1_3 = call float @llvm.maxnum.f32(float %kv.sm1_3.2, float %kv.sm1_3.3)
  %kv.rm1_1_3 = call float @llvm.maxnum.f32(float %kv.rm1_1_2, float %kv.pm1_1_3)
  %kv.pm1_1_4 = call float @llvm.maxnum.f32(float %kv.sm1_4.2, float %kv.sm1_4.3)
  %kv.rm1_1_4 = call float @llvm.maxnum.f32(float %kv.rm1_1_3, float %kv.pm1_1_4)
  %kv.pm1_1_5 = call float @llvm.maxnum.f32(float %kv.sm1_5.2, float %kv.sm1_5.3)
  %kv.rm1_1_5 = call float @llvm.maxnum.f32(float %kv.rm1_1_4, float %kv.pm1_1_5)
  %kv.pm1_1_6 = call float @llvm.maxnum.f32(float %kv.sm1_6.2, float %kv.sm1_6.3)
  %kv.rm1_1_6 = call float @llvm.maxnum.f32(float %kv.rm1_1_5, float %kv.pm1_1_6)
  %kv.pm1_1_7 = call float @llvm.maxnum.f32(float %kv.sm1_7.2, float %kv.sm1_7.3)
  %kv.rm1_1_7 = call float @llvm.maxnum.f32(float %kv.rm1_1_6, float %kv.pm1_1_7)
%kv.rowmax1_1.x1 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %kv.rm1_1_7, i32 1, i32 31)
  %kv.rowmax1_1.m1 = call float @llvm.maxnum.f32(float %kv.rm1_1_7, float %kv.rowmax1_1.x1)
  %kv.rowmax1_1.x2 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %kv.rowmax1_1.m1, i32 2, i32 31)
  %kv.rowmax1_1 = call float @llvm.maxnum.f32(float %kv.rowmax1_1.m1, float %kv.rowmax1_1.x2)
  %kv.rms1_1 = fmul float %kv.rowmax1_1, %qk_scale
  %kv.mij1_1 = call float @llvm.maxnum.f32(float %kv.in.m1_1, float %kv.rms1_1)

  %kv.negm1_1 = fneg float %kv.mij1_1
  %kv.ad1_1 = fsub float %kv.in.m1_1, %kv.mij1_1
%kv.alpha1_1 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.ad1_1)
  %kv.z1_1_0_0 = call float @llvm.fma.f32(float %kv.sm1_0.2, float %qk_scale, float %kv.negm1_1)
%kv.p1_0_2 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_1_0_0)
  %kv.z1_1_0_1 = call float @llvm.fma.f32(float %kv.sm1_0.3, float %qk_scale, float %kv.negm1_1)
%kv.p1_0_3 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_1_0_1)
  %kv.z1_1_1_0 = call float @llvm.fma.f32(float %kv.sm1_1.2, float %qk_scale, float %kv.negm1_1)
%kv.p1_1_2 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_1_1_0)
  %kv.z1_1_1_1 = call float @llvm.fma.f32(float %kv.sm1_1.3, float %qk_scale, float %kv.negm1_1)
%kv.p1_1_3 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_1_1_1)
  %kv.z1_1_2_0 = call float @llvm.fma.f32(float %kv.sm1_2.2, float %qk_scale, float %kv.negm1_1)
%kv.p1_2_2 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_1_2_0)
  %kv.z1_1_2_1 = call float @llvm.fma.f32(float %kv.sm1_2.3, float %qk_scale, float %kv.negm1_1)
%kv.p1_2_3 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_1_2_1)
  %kv.z1_1_3_0 = call float @llvm.fma.f32(float %kv.sm1_3.2, float %qk_scale, float %kv.negm1_1)
%kv.p1_3_2 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_1_3_0)
  %kv.z1_1_3_1 = call float @llvm.fma.f32(float %kv.sm1_3.3, float %qk_scale, float %kv.negm1_1)
%kv.p1_3_3 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_1_3_1)
  %kv.z1_1_4_0 = call float @llvm.fma.f32(float %kv.sm1_4.2, float %qk_scale, float %kv.negm1_1)
%kv.p1_4_2 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_1_4_0)
  %kv.z1_1_4_1 = call float @llvm.fma.f32(float %kv.sm1_4.3, float %qk_scale, float %kv.negm1_1)
%kv.p1_4_3 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_1_4_1)
  %kv.z1_1_5_0 = call float @llvm.fma.f32(float %kv.sm1_5.2, float %qk_scale, float %kv.negm1_1)
%kv.p1_5_2 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_1_5_0)
  %kv.z1_1_5_1 = call float @llvm.fma.f32(float %kv.sm1_5.3, float %qk_scale, float %kv.negm1_1)
%kv.p1_5_3 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_1_5_1)
  %kv.z1_1_6_0 = call float @llvm.fma.f32(float %kv.sm1_6.2, float %qk_scale, float %kv.negm1_1)
%kv.p1_6_2 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_1_6_0)
  %kv.z1_1_6_1 = call float @llvm.fma.f32(float %kv.sm1_6.3, float %qk_scale, float %kv.negm1_1)
%kv.p1_6_3 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_1_6_1)
  %kv.z1_1_7_0 = call float @llvm.fma.f32(float %kv.sm1_7.2, float %qk_scale, float %kv.negm1_1)
%kv.p1_7_2 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_1_7_0)
  %kv.z1_1_7_1 = call float @llvm.fma.f32(float %kv.sm1_7.3, float %qk_scale, float %kv.negm1_1)
%kv.p1_7_3 = call float @llvm.nvvm.ex2.approx.ftz.f(float %kv.z1_1_7_1)
  %kv.ls1_1_0 = fmul float %kv.in.l1_1, %kv.alpha1_1
  %kv.ls1_1_0a = fadd float %kv.ls1_1_0, %kv.p1_0_2
  %kv.ls1_1_1 = fadd float %kv.ls1_1_0a, %kv.p1_0_3
  %kv.ls1_1_1a = fadd float %kv.ls1_1_1, %kv.p1_1_2
  %kv.ls1_1_2 = fadd float %kv.ls1_1_1a, %kv.p1_1_3
  %kv.ls1_1_2a = fadd float %kv.ls1_1_2, %kv.p1_2_2
  %kv.ls1_1_3 = fadd float %kv.ls1_1_2a, %kv.p1_2_3
  %kv.ls1_1_3a = fadd float %kv.ls1_1_3, %kv.p1_3_2
  %kv.ls1_1_4 = fadd float %kv.ls1_1_3a, %kv.p1_3_3
  %kv.ls1_1_4a = fadd float %kv.ls1_1_4, %kv.p1_4_2
  %kv.ls1_1_5 = fadd float %kv.ls1_1_4a, %kv.p1_4_3
  %kv.ls1_1_5a = fadd float %kv.ls1_1_5, %kv.p1_5_2
  %kv.ls1_1_6 = fadd float %kv.ls1_1_5a, %kv.p1_5_3
  %kv.ls1_1_6a = fadd float %kv.ls1_1_6, %kv.p1_6_2
  %kv.ls1_1_7 = fadd float %kv.ls1_1_6a, %kv.p1_6_3
  %kv.ls1_1_7a = fadd float %kv.ls1_1_7, %kv.p1_7_2
  %kv.ls1_1_8 = fadd float %kv.ls1_1_7a, %kv.p1_7_3
; ---- acc = acc·alpha + P·V (P packed to bfloat straight from the S fragments) ----
  %kv.acc0_0_km1.0 = fmul float %kv.in.acc0_0.0, %kv.alpha0_0
  %kv.acc0_0_km1.1 = fmul float %kv.in.acc0_0.1, %kv.alpha0_0
  %kv.acc0_0_km1.2 = fmul float %kv.in.acc0_0.2, %kv.alpha0_1
  %kv.acc0_0_km1.3 = fmul float %kv.in.acc0_0.3, %kv.alpha0_1
  %kv.acc0_1_km1.0 = fmul float %kv.in.acc0_1.0, %kv.alpha0_0
  %kv.acc0_1_km1.1 = fmul float %kv.in.acc0_1.1, %kv.alpha0_0
  %kv.acc0_1_km1.2 = fmul float %kv.in.acc0_1.2, %kv.alpha0_1
  %kv.acc0_1_km1.3 = fmul float %kv.in.acc0_1.3, %kv.alpha0_1
  %kv.acc0_2_km1.0 = fmul float %kv.in.acc0_2.0, %kv.alpha0_0
  %kv.acc0_2_km1.1 = fmul float %kv.in.acc0_2.1, %kv.alpha0_0
  %kv.acc0_2_km1.2 = fmul float %kv.in.acc0_2.2, %kv.alpha0_1
  %kv.acc0_2_km1.3 = fmul float %kv.in.acc0_2.3, %kv.alpha0_1
  %kv.acc0_3_km1.0 = fmul float %kv.in.acc0_3.0, %kv.alpha0_0
  %kv.acc0_3_km1.1 = fmul float %kv.in.acc0_3.1, %kv.alpha0_0
  %kv.acc0_3_km1.2 = fmul float %kv.in.acc0_3.2, %kv.alpha0_1
  %kv.acc0_3_km1.3 = fmul float %kv.in.acc0_3.3, %kv.alpha0_1
  %kv.acc0_4_km1.0 = fmul float %kv.in.acc0_4.0, %kv.alpha0_0
  %kv.acc0_4_km1.1 = fmul float %kv.in.acc0_4.1, %kv.alpha0_0
  %kv.acc0_4_km1.2 = fmul float %kv.in.acc0_4.2, %kv.alpha0_1
  %kv.acc0_4_km1.3 = fmul float %kv.in.acc0_4.3, %kv.alpha0_1
  %kv.acc0_5_km1.0 = fmul float %kv.in.acc0_5.0, %kv.alpha0_0
  %kv.acc0_5_km1.1 = fmul float %kv.in.acc0_5.1, %kv.alpha0_0
  %kv.acc0_5_km1.2 = fmul float %kv.in.acc0_5.2, %kv.alpha0_1
  %kv.acc0_5_km1.3 = fmul float %kv.in.acc0_5.3, %kv.alpha0_1
  %kv.acc0_6_km1.0 = fmul float %kv.in.acc0_6.0, %kv.alpha0_0
  %kv.acc0_6_km1.1 = fmul float %kv.in.acc0_6.1, %kv.alpha0_0
  %kv.acc0_6_km1.2 = fmul float %kv.in.acc0_6.2, %kv.alpha0_1
  %kv.acc0_6_km1.3 = fmul float %kv.in.acc0_6.3, %kv.alpha0_1
  %kv.acc0_7_km1.0 = fmul float %kv.in.acc0_7.0, %kv.alpha0_0
  %kv.acc0_7_km1.1 = fmul float %kv.in.acc0_7.1, %kv.alpha0_0
  %kv.acc0_7_km1.2 = fmul float %kv.in.acc0_7.2, %kv.alpha0_1
  %kv.acc0_7_km1.3 = fmul float %kv.in.acc0_7.3, %kv.alpha0_1

  %kv.pa0_0.0.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p0_0_1, float %kv.p0_0_0)
  %kv.pa0_0.0 = bitcast <2 x bfloat> %kv.pa0_0.0.h to i32

  %kv.pa0_0.1.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p0_0_3, float %kv.p0_0_2)
  %kv.pa0_0.1 = bitcast <2 x bfloat> %kv.pa0_0.1.h to i32

  %kv.pa0_0.2.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p0_1_1, float %kv.p0_1_0)
  %kv.pa0_0.2 = bitcast <2 x bfloat> %kv.pa0_0.2.h to i32

  %kv.pa0_0.3.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p0_1_3, float %kv.p0_1_2)
  %kv.pa0_0.3 = bitcast <2 x bfloat> %kv.pa0_0.3.h to i32

  %kv.pa0_1.0.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p0_2_1, float %kv.p0_2_0)
  %kv.pa0_1.0 = bitcast <2 x bfloat> %kv.pa0_1.0.h to i32

  %kv.pa0_1.1.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p0_2_3, float %kv.p0_2_2)
  %kv.pa0_1.1 = bitcast <2 x bfloat> %kv.pa0_1.1.h to i32

  %kv.pa0_1.2.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p0_3_1, float %kv.p0_3_0)
  %kv.pa0_1.2 = bitcast <2 x bfloat> %kv.pa0_1.2.h to i32

  %kv.pa0_1.3.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p0_3_3, float %kv.p0_3_2)
  %kv.pa0_1.3 = bitcast <2 x bfloat> %kv.pa0_1.3.h to i32

  %kv.pa0_2.0.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p0_4_1, float %kv.p0_4_0)
  %kv.pa0_2.0 = bitcast <2 x bfloat> %kv.pa0_2.0.h to i32

  %kv.pa0_2.1.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p0_4_3, float %kv.p0_4_2)
  %kv.pa0_2.1 = bitcast <2 x bfloat> %kv.pa0_2.1.h to i32

  %kv.pa0_2.2.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p0_5_1, float %kv.p0_5_0)
  %kv.pa0_2.2 = bitcast <2 x bfloat> %kv.pa0_2.2.h to i32

  %kv.pa0_2.3.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p0_5_3, float %kv.p0_5_2)
  %kv.pa0_2.3 = bitcast <2 x bfloat> %kv.pa0_2.3.h to i32

  %kv.pa0_3.0.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p0_6_1, float %kv.p0_6_0)
  %kv.pa0_3.0 = bitcast <2 x bfloat> %kv.pa0_3.0.h to i32

  %kv.pa0_3.1.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p0_6_3, float %kv.p0_6_2)
  %kv.pa0_3.1 = bitcast <2 x bfloat> %kv.pa0_3.1.h to i32

  %kv.pa0_3.2.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p0_7_1, float %kv.p0_7_0)
  %kv.pa0_3.2 = bitcast <2 x bfloat> %kv.pa0_3.2.h to i32

  %kv.pa0_3.3.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p0_7_3, float %kv.p0_7_2)
  %kv.pa0_3.3 = bitcast <2 x bfloat> %kv.pa0_3.3.h to i32
  %kv.acc1_0_km1.0 = fmul float %kv.in.acc1_0.0, %kv.alpha1_0
  %kv.acc1_0_km1.1 = fmul float %kv.in.acc1_0.1, %kv.alpha1_0
  %kv.acc1_0_km1.2 = fmul float %kv.in.acc1_0.2, %kv.alpha1_1
  %kv.acc1_0_km1.3 = fmul float %kv.in.acc1_0.3, %kv.alpha1_1
  %kv.acc1_1_km1.0 = fmul float %kv.in.acc1_1.0, %kv.alpha1_0
  %kv.acc1_1_km1.1 = fmul float %kv.in.acc1_1.1, %kv.alpha1_0
  %kv.acc1_1_km1.2 = fmul float %kv.in.acc1_1.2, %kv.alpha1_1
  %kv.acc1_1_km1.3 = fmul float %kv.in.acc1_1.3, %kv.alpha1_1
  %kv.acc1_2_km1.0 = fmul float %kv.in.acc1_2.0, %kv.alpha1_0
  %kv.acc1_2_km1.1 = fmul float %kv.in.acc1_2.1, %kv.alpha1_0
  %kv.acc1_2_km1.2 = fmul float %kv.in.acc1_2.2, %kv.alpha1_1
  %kv.acc1_2_km1.3 = fmul float %kv.in.acc1_2.3, %kv.alpha1_1
  %kv.acc1_3_km1.0 = fmul float %kv.in.acc1_3.0, %kv.alpha1_0
  %kv.acc1_3_km1.1 = fmul float %kv.in.acc1_3.1, %kv.alpha1_0
  %kv.acc1_3_km1.2 = fmul float %kv.in.acc1_3.2, %kv.alpha1_1
  %kv.acc1_3_km1.3 = fmul float %kv.in.acc1_3.3, %kv.alpha1_1
  %kv.acc1_4_km1.0 = fmul float %kv.in.acc1_4.0, %kv.alpha1_0
  %kv.acc1_4_km1.1 = fmul float %kv.in.acc1_4.1, %kv.alpha1_0
  %kv.acc1_4_km1.2 = fmul float %kv.in.acc1_4.2, %kv.alpha1_1
  %kv.acc1_4_km1.3 = fmul float %kv.in.acc1_4.3, %kv.alpha1_1
  %kv.acc1_5_km1.0 = fmul float %kv.in.acc1_5.0, %kv.alpha1_0
  %kv.acc1_5_km1.1 = fmul float %kv.in.acc1_5.1, %kv.alpha1_0
  %kv.acc1_5_km1.2 = fmul float %kv.in.acc1_5.2, %kv.alpha1_1
  %kv.acc1_5_km1.3 = fmul float %kv.in.acc1_5.3, %kv.alpha1_1
  %kv.acc1_6_km1.0 = fmul float %kv.in.acc1_6.0, %kv.alpha1_0
  %kv.acc1_6_km1.1 = fmul float %kv.in.acc1_6.1, %kv.alpha1_0
  %kv.acc1_6_km1.2 = fmul float %kv.in.acc1_6.2, %kv.alpha1_1
  %kv.acc1_6_km1.3 = fmul float %kv.in.acc1_6.3, %kv.alpha1_1
  %kv.acc1_7_km1.0 = fmul float %kv.in.acc1_7.0, %kv.alpha1_0
  %kv.acc1_7_km1.1 = fmul float %kv.in.acc1_7.1, %kv.alpha1_0
  %kv.acc1_7_km1.2 = fmul float %kv.in.acc1_7.2, %kv.alpha1_1
  %kv.acc1_7_km1.3 = fmul float %kv.in.acc1_7.3, %kv.alpha1_1

  %kv.pa1_0.0.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p1_0_1, float %kv.p1_0_0)
  %kv.pa1_0.0 = bitcast <2 x bfloat> %kv.pa1_0.0.h to i32

  %kv.pa1_0.1.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p1_0_3, float %kv.p1_0_2)
  %kv.pa1_0.1 = bitcast <2 x bfloat> %kv.pa1_0.1.h to i32

  %kv.pa1_0.2.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p1_1_1, float %kv.p1_1_0)
  %kv.pa1_0.2 = bitcast <2 x bfloat> %kv.pa1_0.2.h to i32

  %kv.pa1_0.3.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p1_1_3, float %kv.p1_1_2)
  %kv.pa1_0.3 = bitcast <2 x bfloat> %kv.pa1_0.3.h to i32

  %kv.pa1_1.0.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p1_2_1, float %kv.p1_2_0)
  %kv.pa1_1.0 = bitcast <2 x bfloat> %kv.pa1_1.0.h to i32

  %kv.pa1_1.1.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p1_2_3, float %kv.p1_2_2)
  %kv.pa1_1.1 = bitcast <2 x bfloat> %kv.pa1_1.1.h to i32

  %kv.pa1_1.2.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p1_3_1, float %kv.p1_3_0)
  %kv.pa1_1.2 = bitcast <2 x bfloat> %kv.pa1_1.2.h to i32

  %kv.pa1_1.3.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p1_3_3, float %kv.p1_3_2)
  %kv.pa1_1.3 = bitcast <2 x bfloat> %kv.pa1_1.3.h to i32

  %kv.pa1_2.0.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p1_4_1, float %kv.p1_4_0)
  %kv.pa1_2.0 = bitcast <2 x bfloat> %kv.pa1_2.0.h to i32

  %kv.pa1_2.1.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p1_4_3, float %kv.p1_4_2)
  %kv.pa1_2.1 = bitcast <2 x bfloat> %kv.pa1_2.1.h to i32

  %kv.pa1_2.2.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p1_5_1, float %kv.p1_5_0)
  %kv.pa1_2.2 = bitcast <2 x bfloat> %kv.pa1_2.2.h to i32

  %kv.pa1_2.3.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p1_5_3, float %kv.p1_5_2)
  %kv.pa1_2.3 = bitcast <2 x bfloat> %kv.pa1_2.3.h to i32

  %kv.pa1_3.0.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p1_6_1, float %kv.p1_6_0)
  %kv.pa1_3.0 = bitcast <2 x bfloat> %kv.pa1_3.0.h to i32

  %kv.pa1_3.1.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p1_6_3, float %kv.p1_6_2)
  %kv.pa1_3.1 = bitcast <2 x bfloat> %kv.pa1_3.1.h to i32

  %kv.pa1_3.2.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p1_7_1, float %kv.p1_7_0)
  %kv.pa1_3.2 = bitcast <2 x bfloat> %kv.pa1_3.2.h to i32

  %kv.pa1_3.3.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %kv.p1_7_3, float %kv.p1_7_2)
  %kv.pa1_3.3 = bitcast <2 x bfloat> %kv.pa1_3.3.h to i32

  %kv.va0_0 = getelementptr i8, ptr addrspace(3) %kv.vt, i32 0
  %kv.vaddr0_0 = getelementptr i8, ptr addrspace(3) %kv.va0_0, i32 %v_lane_off0
%kv.vf0_0.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %kv.vaddr0_0)
  %kv.vf0_0.0 = extractvalue {i32, i32, i32, i32} %kv.vf0_0.r, 0
  %kv.vf0_0.1 = extractvalue {i32, i32, i32, i32} %kv.vf0_0.r, 1
  %kv.vf0_0.2 = extractvalue {i32, i32, i32, i32} %kv.vf0_0.r, 2
  %kv.vf0_0.3 = extractvalue {i32, i32, i32, i32} %kv.vf0_0.r, 3
%kv.acc0_0_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_0.0, i32 %kv.pa0_0.1, i32 %kv.pa0_0.2, i32 %kv.pa0_0.3, i32 %kv.vf0_0.0, i32 %kv.vf0_0.1, float %kv.acc0_0_km1.0, float %kv.acc0_0_km1.1, float %kv.acc0_0_km1.2, float %kv.acc0_0_km1.3)
  %kv.acc0_0_k0.0 = extractvalue {float, float, float, float} %kv.acc0_0_k0.r, 0
  %kv.acc0_0_k0.1 = extractvalue {float, float, float, float} %kv.acc0_0_k0.r, 1
  %kv.acc0_0_k0.2 = extractvalue {float, float, float, float} %kv.acc0_0_k0.r, 2
  %kv.acc0_0_k0.3 = extractvalue {float, float, float, float} %kv.acc0_0_k0.r, 3
%kv.acc0_1_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_0.0, i32 %kv.pa0_0.1, i32 %kv.pa0_0.2, i32 %kv.pa0_0.3, i32 %kv.vf0_0.2, i32 %kv.vf0_0.3, float %kv.acc0_1_km1.0, float %kv.acc0_1_km1.1, float %kv.acc0_1_km1.2, float %kv.acc0_1_km1.3)
  %kv.acc0_1_k0.0 = extractvalue {float, float, float, float} %kv.acc0_1_k0.r, 0
  %kv.acc0_1_k0.1 = extractvalue {float, float, float, float} %kv.acc0_1_k0.r, 1
  %kv.acc0_1_k0.2 = extractvalue {float, float, float, float} %kv.acc0_1_k0.r, 2
  %kv.acc0_1_k0.3 = extractvalue {float, float, float, float} %kv.acc0_1_k0.r, 3
%kv.acc1_0_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_0.0, i32 %kv.pa1_0.1, i32 %kv.pa1_0.2, i32 %kv.pa1_0.3, i32 %kv.vf0_0.0, i32 %kv.vf0_0.1, float %kv.acc1_0_km1.0, float %kv.acc1_0_km1.1, float %kv.acc1_0_km1.2, float %kv.acc1_0_km1.3)
  %kv.acc1_0_k0.0 = extractvalue {float, float, float, float} %kv.acc1_0_k0.r, 0
  %kv.acc1_0_k0.1 = extractvalue {float, float, float, float} %kv.acc1_0_k0.r, 1
  %kv.acc1_0_k0.2 = extractvalue {float, float, float, float} %kv.acc1_0_k0.r, 2
  %kv.acc1_0_k0.3 = extractvalue {float, float, float, float} %kv.acc1_0_k0.r, 3
%kv.acc1_1_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_0.0, i32 %kv.pa1_0.1, i32 %kv.pa1_0.2, i32 %kv.pa1_0.3, i32 %kv.vf0_0.2, i32 %kv.vf0_0.3, float %kv.acc1_1_km1.0, float %kv.acc1_1_km1.1, float %kv.acc1_1_km1.2, float %kv.acc1_1_km1.3)
  %kv.acc1_1_k0.0 = extractvalue {float, float, float, float} %kv.acc1_1_k0.r, 0
  %kv.acc1_1_k0.1 = extractvalue {float, float, float, float} %kv.acc1_1_k0.r, 1
  %kv.acc1_1_k0.2 = extractvalue {float, float, float, float} %kv.acc1_1_k0.r, 2
  %kv.acc1_1_k0.3 = extractvalue {float, float, float, float} %kv.acc1_1_k0.r, 3
  %kv.va0_1 = getelementptr i8, ptr addrspace(3) %kv.vt, i32 0
  %kv.vaddr0_1 = getelementptr i8, ptr addrspace(3) %kv.va0_1, i32 %v_lane_off1
%kv.vf0_1.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %kv.vaddr0_1)
  %kv.vf0_1.0 = extractvalue {i32, i32, i32, i32} %kv.vf0_1.r, 0
  %kv.vf0_1.1 = extractvalue {i32, i32, i32, i32} %kv.vf0_1.r, 1
  %kv.vf0_1.2 = extractvalue {i32, i32, i32, i32} %kv.vf0_1.r, 2
  %kv.vf0_1.3 = extractvalue {i32, i32, i32, i32} %kv.vf0_1.r, 3
%kv.acc0_2_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_0.0, i32 %kv.pa0_0.1, i32 %kv.pa0_0.2, i32 %kv.pa0_0.3, i32 %kv.vf0_1.0, i32 %kv.vf0_1.1, float %kv.acc0_2_km1.0, float %kv.acc0_2_km1.1, float %kv.acc0_2_km1.2, float %kv.acc0_2_km1.3)
  %kv.acc0_2_k0.0 = extractvalue {float, float, float, float} %kv.acc0_2_k0.r, 0
  %kv.acc0_2_k0.1 = extractvalue {float, float, float, float} %kv.acc0_2_k0.r, 1
  %kv.acc0_2_k0.2 = extractvalue {float, float, float, float} %kv.acc0_2_k0.r, 2
  %kv.acc0_2_k0.3 = extractvalue {float, float, float, float} %kv.acc0_2_k0.r, 3
%kv.acc0_3_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_0.0, i32 %kv.pa0_0.1, i32 %kv.pa0_0.2, i32 %kv.pa0_0.3, i32 %kv.vf0_1.2, i32 %kv.vf0_1.3, float %kv.acc0_3_km1.0, float %kv.acc0_3_km1.1, float %kv.acc0_3_km1.2, float %kv.acc0_3_km1.3)
  %kv.acc0_3_k0.0 = extractvalue {float, float, float, float} %kv.acc0_3_k0.r, 0
  %kv.acc0_3_k0.1 = extractvalue {float, float, float, float} %kv.acc0_3_k0.r, 1
  %kv.acc0_3_k0.2 = extractvalue {float, float, float, float} %kv.acc0_3_k0.r, 2
  %kv.acc0_3_k0.3 = extractvalue {float, float, float, float} %kv.acc0_3_k0.r, 3
%kv.acc1_2_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_0.0, i32 %kv.pa1_0.1, i32 %kv.pa1_0.2, i32 %kv.pa1_0.3, i32 %kv.vf0_1.0, i32 %kv.vf0_1.1, float %kv.acc1_2_km1.0, float %kv.acc1_2_km1.1, float %kv.acc1_2_km1.2, float %kv.acc1_2_km1.3)
  %kv.acc1_2_k0.0 = extractvalue {float, float, float, float} %kv.acc1_2_k0.r, 0
  %kv.acc1_2_k0.1 = extractvalue {float, float, float, float} %kv.acc1_2_k0.r, 1
  %kv.acc1_2_k0.2 = extractvalue {float, float, float, float} %kv.acc1_2_k0.r, 2
  %kv.acc1_2_k0.3 = extractvalue {float, float, float, float} %kv.acc1_2_k0.r, 3
%kv.acc1_3_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_0.0, i32 %kv.pa1_0.1, i32 %kv.pa1_0.2, i32 %kv.pa1_0.3, i32 %kv.vf0_1.2, i32 %kv.vf0_1.3, float %kv.acc1_3_km1.0, float %kv.acc1_3_km1.1, float %kv.acc1_3_km1.2, float %kv.acc1_3_km1.3)
  %kv.acc1_3_k0.0 = extractvalue {float, float, float, float} %kv.acc1_3_k0.r, 0
  %kv.acc1_3_k0.1 = extractvalue {float, float, float, float} %kv.acc1_3_k0.r, 1
  %kv.acc1_3_k0.2 = extractvalue {float, float, float, float} %kv.acc1_3_k0.r, 2
  %kv.acc1_3_k0.3 = extractvalue {float, float, float, float} %kv.acc1_3_k0.r, 3
  %kv.va0_2 = getelementptr i8, ptr addrspace(3) %kv.vt, i32 0
  %kv.vaddr0_2 = getelementptr i8, ptr addrspace(3) %kv.va0_2, i32 %v_lane_off2
%kv.vf0_2.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %kv.vaddr0_2)
  %kv.vf0_2.0 = extractvalue {i32, i32, i32, i32} %kv.vf0_2.r, 0
  %kv.vf0_2.1 = extractvalue {i32, i32, i32, i32} %kv.vf0_2.r, 1
  %kv.vf0_2.2 = extractvalue {i32, i32, i32, i32} %kv.vf0_2.r, 2
  %kv.vf0_2.3 = extractvalue {i32, i32, i32, i32} %kv.vf0_2.r, 3
%kv.acc0_4_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_0.0, i32 %kv.pa0_0.1, i32 %kv.pa0_0.2, i32 %kv.pa0_0.3, i32 %kv.vf0_2.0, i32 %kv.vf0_2.1, float %kv.acc0_4_km1.0, float %kv.acc0_4_km1.1, float %kv.acc0_4_km1.2, float %kv.acc0_4_km1.3)
  %kv.acc0_4_k0.0 = extractvalue {float, float, float, float} %kv.acc0_4_k0.r, 0
  %kv.acc0_4_k0.1 = extractvalue {float, float, float, float} %kv.acc0_4_k0.r, 1
  %kv.acc0_4_k0.2 = extractvalue {float, float, float, float} %kv.acc0_4_k0.r, 2
  %kv.acc0_4_k0.3 = extractvalue {float, float, float, float} %kv.acc0_4_k0.r, 3
%kv.acc0_5_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_0.0, i32 %kv.pa0_0.1, i32 %kv.pa0_0.2, i32 %kv.pa0_0.3, i32 %kv.vf0_2.2, i32 %kv.vf0_2.3, float %kv.acc0_5_km1.0, float %kv.acc0_5_km1.1, float %kv.acc0_5_km1.2, float %kv.acc0_5_km1.3)
  %kv.acc0_5_k0.0 = extractvalue {float, float, float, float} %kv.acc0_5_k0.r, 0
  %kv.acc0_5_k0.1 = extractvalue {float, float, float, float} %kv.acc0_5_k0.r, 1
  %kv.acc0_5_k0.2 = extractvalue {float, float, float, float} %kv.acc0_5_k0.r, 2
  %kv.acc0_5_k0.3 = extractvalue {float, float, float, float} %kv.acc0_5_k0.r, 3
%kv.acc1_4_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_0.0, i32 %kv.pa1_0.1, i32 %kv.pa1_0.2, i32 %kv.pa1_0.3, i32 %kv.vf0_2.0, i32 %kv.vf0_2.1, float %kv.acc1_4_km1.0, float %kv.acc1_4_km1.1, float %kv.acc1_4_km1.2, float %kv.acc1_4_km1.3)
  %kv.acc1_4_k0.0 = extractvalue {float, float, float, float} %kv.acc1_4_k0.r, 0
  %kv.acc1_4_k0.1 = extractvalue {float, float, float, float} %kv.acc1_4_k0.r, 1
  %kv.acc1_4_k0.2 = extractvalue {float, float, float, float} %kv.acc1_4_k0.r, 2
  %kv.acc1_4_k0.3 = extractvalue {float, float, float, float} %kv.acc1_4_k0.r, 3
%kv.acc1_5_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_0.0, i32 %kv.pa1_0.1, i32 %kv.pa1_0.2, i32 %kv.pa1_0.3, i32 %kv.vf0_2.2, i32 %kv.vf0_2.3, float %kv.acc1_5_km1.0, float %kv.acc1_5_km1.1, float %kv.acc1_5_km1.2, float %kv.acc1_5_km1.3)
  %kv.acc1_5_k0.0 = extractvalue {float, float, float, float} %kv.acc1_5_k0.r, 0
  %kv.acc1_5_k0.1 = extractvalue {float, float, float, float} %kv.acc1_5_k0.r, 1
  %kv.acc1_5_k0.2 = extractvalue {float, float, float, float} %kv.acc1_5_k0.r, 2
  %kv.acc1_5_k0.3 = extractvalue {float, float, float, float} %kv.acc1_5_k0.r, 3
  %kv.va0_3 = getelementptr i8, ptr addrspace(3) %kv.vt, i32 0
  %kv.vaddr0_3 = getelementptr i8, ptr addrspace(3) %kv.va0_3, i32 %v_lane_off3
%kv.vf0_3.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %kv.vaddr0_3)
  %kv.vf0_3.0 = extractvalue {i32, i32, i32, i32} %kv.vf0_3.r, 0
  %kv.vf0_3.1 = extractvalue {i32, i32, i32, i32} %kv.vf0_3.r, 1
  %kv.vf0_3.2 = extractvalue {i32, i32, i32, i32} %kv.vf0_3.r, 2
  %kv.vf0_3.3 = extractvalue {i32, i32, i32, i32} %kv.vf0_3.r, 3
%kv.acc0_6_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_0.0, i32 %kv.pa0_0.1, i32 %kv.pa0_0.2, i32 %kv.pa0_0.3, i32 %kv.vf0_3.0, i32 %kv.vf0_3.1, float %kv.acc0_6_km1.0, float %kv.acc0_6_km1.1, float %kv.acc0_6_km1.2, float %kv.acc0_6_km1.3)
  %kv.acc0_6_k0.0 = extractvalue {float, float, float, float} %kv.acc0_6_k0.r, 0
  %kv.acc0_6_k0.1 = extractvalue {float, float, float, float} %kv.acc0_6_k0.r, 1
  %kv.acc0_6_k0.2 = extractvalue {float, float, float, float} %kv.acc0_6_k0.r, 2
  %kv.acc0_6_k0.3 = extractvalue {float, float, float, float} %kv.acc0_6_k0.r, 3
%kv.acc0_7_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_0.0, i32 %kv.pa0_0.1, i32 %kv.pa0_0.2, i32 %kv.pa0_0.3, i32 %kv.vf0_3.2, i32 %kv.vf0_3.3, float %kv.acc0_7_km1.0, float %kv.acc0_7_km1.1, float %kv.acc0_7_km1.2, float %kv.acc0_7_km1.3)
  %kv.acc0_7_k0.0 = extractvalue {float, float, float, float} %kv.acc0_7_k0.r, 0
  %kv.acc0_7_k0.1 = extractvalue {float, float, float, float} %kv.acc0_7_k0.r, 1
  %kv.acc0_7_k0.2 = extractvalue {float, float, float, float} %kv.acc0_7_k0.r, 2
  %kv.acc0_7_k0.3 = extractvalue {float, float, float, float} %kv.acc0_7_k0.r, 3
%kv.acc1_6_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_0.0, i32 %kv.pa1_0.1, i32 %kv.pa1_0.2, i32 %kv.pa1_0.3, i32 %kv.vf0_3.0, i32 %kv.vf0_3.1, float %kv.acc1_6_km1.0, float %kv.acc1_6_km1.1, float %kv.acc1_6_km1.2, float %kv.acc1_6_km1.3)
  %kv.acc1_6_k0.0 = extractvalue {float, float, float, float} %kv.acc1_6_k0.r, 0
  %kv.acc1_6_k0.1 = extractvalue {float, float, float, float} %kv.acc1_6_k0.r, 1
  %kv.acc1_6_k0.2 = extractvalue {float, float, float, float} %kv.acc1_6_k0.r, 2
  %kv.acc1_6_k0.3 = extractvalue {float, float, float, float} %kv.acc1_6_k0.r, 3
%kv.acc1_7_k0.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_0.0, i32 %kv.pa1_0.1, i32 %kv.pa1_0.2, i32 %kv.pa1_0.3, i32 %kv.vf0_3.2, i32 %kv.vf0_3.3, float %kv.acc1_7_km1.0, float %kv.acc1_7_km1.1, float %kv.acc1_7_km1.2, float %kv.acc1_7_km1.3)
  %kv.acc1_7_k0.0 = extractvalue {float, float, float, float} %kv.acc1_7_k0.r, 0
  %kv.acc1_7_k0.1 = extractvalue {float, float, float, float} %kv.acc1_7_k0.r, 1
  %kv.acc1_7_k0.2 = extractvalue {float, float, float, float} %kv.acc1_7_k0.r, 2
  %kv.acc1_7_k0.3 = extractvalue {float, float, float, float} %kv.acc1_7_k0.r, 3
  %kv.va1_0 = getelementptr i8, ptr addrspace(3) %kv.vt, i32 2048
  %kv.vaddr1_0 = getelementptr i8, ptr addrspace(3) %kv.va1_0, i32 %v_lane_off0
%kv.vf1_0.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %kv.vaddr1_0)
  %kv.vf1_0.0 = extractvalue {i32, i32, i32, i32} %kv.vf1_0.r, 0
  %kv.vf1_0.1 = extractvalue {i32, i32, i32, i32} %kv.vf1_0.r, 1
  %kv.vf1_0.2 = extractvalue {i32, i32, i32, i32} %kv.vf1_0.r, 2
  %kv.vf1_0.3 = extractvalue {i32, i32, i32, i32} %kv.vf1_0.r, 3
%kv.acc0_0_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_1.0, i32 %kv.pa0_1.1, i32 %kv.pa0_1.2, i32 %kv.pa0_1.3, i32 %kv.vf1_0.0, i32 %kv.vf1_0.1, float %kv.acc0_0_k0.0, float %kv.acc0_0_k0.1, float %kv.acc0_0_k0.2, float %kv.acc0_0_k0.3)
  %kv.acc0_0_k1.0 = extractvalue {float, float, float, float} %kv.acc0_0_k1.r, 0
  %kv.acc0_0_k1.1 = extractvalue {float, float, float, float} %kv.acc0_0_k1.r, 1
  %kv.acc0_0_k1.2 = extractvalue {float, float, float, float} %kv.acc0_0_k1.r, 2
  %kv.acc0_0_k1.3 = extractvalue {float, float, float, float} %kv.acc0_0_k1.r, 3
%kv.acc0_1_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_1.0, i32 %kv.pa0_1.1, i32 %kv.pa0_1.2, i32 %kv.pa0_1.3, i32 %kv.vf1_0.2, i32 %kv.vf1_0.3, float %kv.acc0_1_k0.0, float %kv.acc0_1_k0.1, float %kv.acc0_1_k0.2, float %kv.acc0_1_k0.3)
  %kv.acc0_1_k1.0 = extractvalue {float, float, float, float} %kv.acc0_1_k1.r, 0
  %kv.acc0_1_k1.1 = extractvalue {float, float, float, float} %kv.acc0_1_k1.r, 1
  %kv.acc0_1_k1.2 = extractvalue {float, float, float, float} %kv.acc0_1_k1.r, 2
  %kv.acc0_1_k1.3 = extractvalue {float, float, float, float} %kv.acc0_1_k1.r, 3
%kv.acc1_0_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_1.0, i32 %kv.pa1_1.1, i32 %kv.pa1_1.2, i32 %kv.pa1_1.3, i32 %kv.vf1_0.0, i32 %kv.vf1_0.1, float %kv.acc1_0_k0.0, float %kv.acc1_0_k0.1, float %kv.acc1_0_k0.2, float %kv.acc1_0_k0.3)
  %kv.acc1_0_k1.0 = extractvalue {float, float, float, float} %kv.acc1_0_k1.r, 0
  %kv.acc1_0_k1.1 = extractvalue {float, float, float, float} %kv.acc1_0_k1.r, 1
  %kv.acc1_0_k1.2 = extractvalue {float, float, float, float} %kv.acc1_0_k1.r, 2
  %kv.acc1_0_k1.3 = extractvalue {float, float, float, float} %kv.acc1_0_k1.r, 3
%kv.acc1_1_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_1.0, i32 %kv.pa1_1.1, i32 %kv.pa1_1.2, i32 %kv.pa1_1.3, i32 %kv.vf1_0.2, i32 %kv.vf1_0.3, float %kv.acc1_1_k0.0, float %kv.acc1_1_k0.1, float %kv.acc1_1_k0.2, float %kv.acc1_1_k0.3)
  %kv.acc1_1_k1.0 = extractvalue {float, float, float, float} %kv.acc1_1_k1.r, 0
  %kv.acc1_1_k1.1 = extractvalue {float, float, float, float} %kv.acc1_1_k1.r, 1
  %kv.acc1_1_k1.2 = extractvalue {float, float, float, float} %kv.acc1_1_k1.r, 2
  %kv.acc1_1_k1.3 = extractvalue {float, float, float, float} %kv.acc1_1_k1.r, 3
  %kv.va1_1 = getelementptr i8, ptr addrspace(3) %kv.vt, i32 2048
  %kv.vaddr1_1 = getelementptr i8, ptr addrspace(3) %kv.va1_1, i32 %v_lane_off1
%kv.vf1_1.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %kv.vaddr1_1)
  %kv.vf1_1.0 = extractvalue {i32, i32, i32, i32} %kv.vf1_1.r, 0
  %kv.vf1_1.1 = extractvalue {i32, i32, i32, i32} %kv.vf1_1.r, 1
  %kv.vf1_1.2 = extractvalue {i32, i32, i32, i32} %kv.vf1_1.r, 2
  %kv.vf1_1.3 = extractvalue {i32, i32, i32, i32} %kv.vf1_1.r, 3
%kv.acc0_2_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_1.0, i32 %kv.pa0_1.1, i32 %kv.pa0_1.2, i32 %kv.pa0_1.3, i32 %kv.vf1_1.0, i32 %kv.vf1_1.1, float %kv.acc0_2_k0.0, float %kv.acc0_2_k0.1, float %kv.acc0_2_k0.2, float %kv.acc0_2_k0.3)
  %kv.acc0_2_k1.0 = extractvalue {float, float, float, float} %kv.acc0_2_k1.r, 0
  %kv.acc0_2_k1.1 = extractvalue {float, float, float, float} %kv.acc0_2_k1.r, 1
  %kv.acc0_2_k1.2 = extractvalue {float, float, float, float} %kv.acc0_2_k1.r, 2
  %kv.acc0_2_k1.3 = extractvalue {float, float, float, float} %kv.acc0_2_k1.r, 3
%kv.acc0_3_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_1.0, i32 %kv.pa0_1.1, i32 %kv.pa0_1.2, i32 %kv.pa0_1.3, i32 %kv.vf1_1.2, i32 %kv.vf1_1.3, float %kv.acc0_3_k0.0, float %kv.acc0_3_k0.1, float %kv.acc0_3_k0.2, float %kv.acc0_3_k0.3)
  %kv.acc0_3_k1.0 = extractvalue {float, float, float, float} %kv.acc0_3_k1.r, 0
  %kv.acc0_3_k1.1 = extractvalue {float, float, float, float} %kv.acc0_3_k1.r, 1
  %kv.acc0_3_k1.2 = extractvalue {float, float, float, float} %kv.acc0_3_k1.r, 2
  %kv.acc0_3_k1.3 = extractvalue {float, float, float, float} %kv.acc0_3_k1.r, 3
%kv.acc1_2_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_1.0, i32 %kv.pa1_1.1, i32 %kv.pa1_1.2, i32 %kv.pa1_1.3, i32 %kv.vf1_1.0, i32 %kv.vf1_1.1, float %kv.acc1_2_k0.0, float %kv.acc1_2_k0.1, float %kv.acc1_2_k0.2, float %kv.acc1_2_k0.3)
  %kv.acc1_2_k1.0 = extractvalue {float, float, float, float} %kv.acc1_2_k1.r, 0
  %kv.acc1_2_k1.1 = extractvalue {float, float, float, float} %kv.acc1_2_k1.r, 1
  %kv.acc1_2_k1.2 = extractvalue {float, float, float, float} %kv.acc1_2_k1.r, 2
  %kv.acc1_2_k1.3 = extractvalue {float, float, float, float} %kv.acc1_2_k1.r, 3
%kv.acc1_3_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_1.0, i32 %kv.pa1_1.1, i32 %kv.pa1_1.2, i32 %kv.pa1_1.3, i32 %kv.vf1_1.2, i32 %kv.vf1_1.3, float %kv.acc1_3_k0.0, float %kv.acc1_3_k0.1, float %kv.acc1_3_k0.2, float %kv.acc1_3_k0.3)
  %kv.acc1_3_k1.0 = extractvalue {float, float, float, float} %kv.acc1_3_k1.r, 0
  %kv.acc1_3_k1.1 = extractvalue {float, float, float, float} %kv.acc1_3_k1.r, 1
  %kv.acc1_3_k1.2 = extractvalue {float, float, float, float} %kv.acc1_3_k1.r, 2
  %kv.acc1_3_k1.3 = extractvalue {float, float, float, float} %kv.acc1_3_k1.r, 3
  %kv.va1_2 = getelementptr i8, ptr addrspace(3) %kv.vt, i32 2048
  %kv.vaddr1_2 = getelementptr i8, ptr addrspace(3) %kv.va1_2, i32 %v_lane_off2
%kv.vf1_2.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %kv.vaddr1_2)
  %kv.vf1_2.0 = extractvalue {i32, i32, i32, i32} %kv.vf1_2.r, 0
  %kv.vf1_2.1 = extractvalue {i32, i32, i32, i32} %kv.vf1_2.r, 1
  %kv.vf1_2.2 = extractvalue {i32, i32, i32, i32} %kv.vf1_2.r, 2
  %kv.vf1_2.3 = extractvalue {i32, i32, i32, i32} %kv.vf1_2.r, 3
%kv.acc0_4_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_1.0, i32 %kv.pa0_1.1, i32 %kv.pa0_1.2, i32 %kv.pa0_1.3, i32 %kv.vf1_2.0, i32 %kv.vf1_2.1, float %kv.acc0_4_k0.0, float %kv.acc0_4_k0.1, float %kv.acc0_4_k0.2, float %kv.acc0_4_k0.3)
  %kv.acc0_4_k1.0 = extractvalue {float, float, float, float} %kv.acc0_4_k1.r, 0
  %kv.acc0_4_k1.1 = extractvalue {float, float, float, float} %kv.acc0_4_k1.r, 1
  %kv.acc0_4_k1.2 = extractvalue {float, float, float, float} %kv.acc0_4_k1.r, 2
  %kv.acc0_4_k1.3 = extractvalue {float, float, float, float} %kv.acc0_4_k1.r, 3
%kv.acc0_5_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_1.0, i32 %kv.pa0_1.1, i32 %kv.pa0_1.2, i32 %kv.pa0_1.3, i32 %kv.vf1_2.2, i32 %kv.vf1_2.3, float %kv.acc0_5_k0.0, float %kv.acc0_5_k0.1, float %kv.acc0_5_k0.2, float %kv.acc0_5_k0.3)
  %kv.acc0_5_k1.0 = extractvalue {float, float, float, float} %kv.acc0_5_k1.r, 0
  %kv.acc0_5_k1.1 = extractvalue {float, float, float, float} %kv.acc0_5_k1.r, 1
  %kv.acc0_5_k1.2 = extractvalue {float, float, float, float} %kv.acc0_5_k1.r, 2
  %kv.acc0_5_k1.3 = extractvalue {float, float, float, float} %kv.acc0_5_k1.r, 3
%kv.acc1_4_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_1.0, i32 %kv.pa1_1.1, i32 %kv.pa1_1.2, i32 %kv.pa1_1.3, i32 %kv.vf1_2.0, i32 %kv.vf1_2.1, float %kv.acc1_4_k0.0, float %kv.acc1_4_k0.1, float %kv.acc1_4_k0.2, float %kv.acc1_4_k0.3)
  %kv.acc1_4_k1.0 = extractvalue {float, float, float, float} %kv.acc1_4_k1.r, 0
  %kv.acc1_4_k1.1 = extractvalue {float, float, float, float} %kv.acc1_4_k1.r, 1
  %kv.acc1_4_k1.2 = extractvalue {float, float, float, float} %kv.acc1_4_k1.r, 2
  %kv.acc1_4_k1.3 = extractvalue {float, float, float, float} %kv.acc1_4_k1.r, 3
%kv.acc1_5_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_1.0, i32 %kv.pa1_1.1, i32 %kv.pa1_1.2, i32 %kv.pa1_1.3, i32 %kv.vf1_2.2, i32 %kv.vf1_2.3, float %kv.acc1_5_k0.0, float %kv.acc1_5_k0.1, float %kv.acc1_5_k0.2, float %kv.acc1_5_k0.3)
  %kv.acc1_5_k1.0 = extractvalue {float, float, float, float} %kv.acc1_5_k1.r, 0
  %kv.acc1_5_k1.1 = extractvalue {float, float, float, float} %kv.acc1_5_k1.r, 1
  %kv.acc1_5_k1.2 = extractvalue {float, float, float, float} %kv.acc1_5_k1.r, 2
  %kv.acc1_5_k1.3 = extractvalue {float, float, float, float} %kv.acc1_5_k1.r, 3
  %kv.va1_3 = getelementptr i8, ptr addrspace(3) %kv.vt, i32 2048
  %kv.vaddr1_3 = getelementptr i8, ptr addrspace(3) %kv.va1_3, i32 %v_lane_off3
%kv.vf1_3.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %kv.vaddr1_3)
  %kv.vf1_3.0 = extractvalue {i32, i32, i32, i32} %kv.vf1_3.r, 0
  %kv.vf1_3.1 = extractvalue {i32, i32, i32, i32} %kv.vf1_3.r, 1
  %kv.vf1_3.2 = extractvalue {i32, i32, i32, i32} %kv.vf1_3.r, 2
  %kv.vf1_3.3 = extractvalue {i32, i32, i32, i32} %kv.vf1_3.r, 3
%kv.acc0_6_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_1.0, i32 %kv.pa0_1.1, i32 %kv.pa0_1.2, i32 %kv.pa0_1.3, i32 %kv.vf1_3.0, i32 %kv.vf1_3.1, float %kv.acc0_6_k0.0, float %kv.acc0_6_k0.1, float %kv.acc0_6_k0.2, float %kv.acc0_6_k0.3)
  %kv.acc0_6_k1.0 = extractvalue {float, float, float, float} %kv.acc0_6_k1.r, 0
  %kv.acc0_6_k1.1 = extractvalue {float, float, float, float} %kv.acc0_6_k1.r, 1
  %kv.acc0_6_k1.2 = extractvalue {float, float, float, float} %kv.acc0_6_k1.r, 2
  %kv.acc0_6_k1.3 = extractvalue {float, float, float, float} %kv.acc0_6_k1.r, 3
%kv.acc0_7_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_1.0, i32 %kv.pa0_1.1, i32 %kv.pa0_1.2, i32 %kv.pa0_1.3, i32 %kv.vf1_3.2, i32 %kv.vf1_3.3, float %kv.acc0_7_k0.0, float %kv.acc0_7_k0.1, float %kv.acc0_7_k0.2, float %kv.acc0_7_k0.3)
  %kv.acc0_7_k1.0 = extractvalue {float, float, float, float} %kv.acc0_7_k1.r, 0
  %kv.acc0_7_k1.1 = extractvalue {float, float, float, float} %kv.acc0_7_k1.r, 1
  %kv.acc0_7_k1.2 = extractvalue {float, float, float, float} %kv.acc0_7_k1.r, 2
  %kv.acc0_7_k1.3 = extractvalue {float, float, float, float} %kv.acc0_7_k1.r, 3
%kv.acc1_6_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_1.0, i32 %kv.pa1_1.1, i32 %kv.pa1_1.2, i32 %kv.pa1_1.3, i32 %kv.vf1_3.0, i32 %kv.vf1_3.1, float %kv.acc1_6_k0.0, float %kv.acc1_6_k0.1, float %kv.acc1_6_k0.2, float %kv.acc1_6_k0.3)
  %kv.acc1_6_k1.0 = extractvalue {float, float, float, float} %kv.acc1_6_k1.r, 0
  %kv.acc1_6_k1.1 = extractvalue {float, float, float, float} %kv.acc1_6_k1.r, 1
  %kv.acc1_6_k1.2 = extractvalue {float, float, float, float} %kv.acc1_6_k1.r, 2
  %kv.acc1_6_k1.3 = extractvalue {float, float, float, float} %kv.acc1_6_k1.r, 3
%kv.acc1_7_k1.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_1.0, i32 %kv.pa1_1.1, i32 %kv.pa1_1.2, i32 %kv.pa1_1.3, i32 %kv.vf1_3.2, i32 %kv.vf1_3.3, float %kv.acc1_7_k0.0, float %kv.acc1_7_k0.1, float %kv.acc1_7_k0.2, float %kv.acc1_7_k0.3)
  %kv.acc1_7_k1.0 = extractvalue {float, float, float, float} %kv.acc1_7_k1.r, 0
  %kv.acc1_7_k1.1 = extractvalue {float, float, float, float} %kv.acc1_7_k1.r, 1
  %kv.acc1_7_k1.2 = extractvalue {float, float, float, float} %kv.acc1_7_k1.r, 2
  %kv.acc1_7_k1.3 = extractvalue {float, float, float, float} %kv.acc1_7_k1.r, 3
  %kv.va2_0 = getelementptr i8, ptr addrspace(3) %kv.vt, i32 4096
  %kv.vaddr2_0 = getelementptr i8, ptr addrspace(3) %kv.va2_0, i32 %v_lane_off0
%kv.vf2_0.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %kv.vaddr2_0)
  %kv.vf2_0.0 = extractvalue {i32, i32, i32, i32} %kv.vf2_0.r, 0
  %kv.vf2_0.1 = extractvalue {i32, i32, i32, i32} %kv.vf2_0.r, 1
  %kv.vf2_0.2 = extractvalue {i32, i32, i32, i32} %kv.vf2_0.r, 2
  %kv.vf2_0.3 = extractvalue {i32, i32, i32, i32} %kv.vf2_0.r, 3
%kv.acc0_0_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_2.0, i32 %kv.pa0_2.1, i32 %kv.pa0_2.2, i32 %kv.pa0_2.3, i32 %kv.vf2_0.0, i32 %kv.vf2_0.1, float %kv.acc0_0_k1.0, float %kv.acc0_0_k1.1, float %kv.acc0_0_k1.2, float %kv.acc0_0_k1.3)
  %kv.acc0_0_k2.0 = extractvalue {float, float, float, float} %kv.acc0_0_k2.r, 0
  %kv.acc0_0_k2.1 = extractvalue {float, float, float, float} %kv.acc0_0_k2.r, 1
  %kv.acc0_0_k2.2 = extractvalue {float, float, float, float} %kv.acc0_0_k2.r, 2
  %kv.acc0_0_k2.3 = extractvalue {float, float, float, float} %kv.acc0_0_k2.r, 3
%kv.acc0_1_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_2.0, i32 %kv.pa0_2.1, i32 %kv.pa0_2.2, i32 %kv.pa0_2.3, i32 %kv.vf2_0.2, i32 %kv.vf2_0.3, float %kv.acc0_1_k1.0, float %kv.acc0_1_k1.1, float %kv.acc0_1_k1.2, float %kv.acc0_1_k1.3)
  %kv.acc0_1_k2.0 = extractvalue {float, float, float, float} %kv.acc0_1_k2.r, 0
  %kv.acc0_1_k2.1 = extractvalue {float, float, float, float} %kv.acc0_1_k2.r, 1
  %kv.acc0_1_k2.2 = extractvalue {float, float, float, float} %kv.acc0_1_k2.r, 2
  %kv.acc0_1_k2.3 = extractvalue {float, float, float, float} %kv.acc0_1_k2.r, 3
%kv.acc1_0_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_2.0, i32 %kv.pa1_2.1, i32 %kv.pa1_2.2, i32 %kv.pa1_2.3, i32 %kv.vf2_0.0, i32 %kv.vf2_0.1, float %kv.acc1_0_k1.0, float %kv.acc1_0_k1.1, float %kv.acc1_0_k1.2, float %kv.acc1_0_k1.3)
  %kv.acc1_0_k2.0 = extractvalue {float, float, float, float} %kv.acc1_0_k2.r, 0
  %kv.acc1_0_k2.1 = extractvalue {float, float, float, float} %kv.acc1_0_k2.r, 1
  %kv.acc1_0_k2.2 = extractvalue {float, float, float, float} %kv.acc1_0_k2.r, 2
  %kv.acc1_0_k2.3 = extractvalue {float, float, float, float} %kv.acc1_0_k2.r, 3
%kv.acc1_1_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_2.0, i32 %kv.pa1_2.1, i32 %kv.pa1_2.2, i32 %kv.pa1_2.3, i32 %kv.vf2_0.2, i32 %kv.vf2_0.3, float %kv.acc1_1_k1.0, float %kv.acc1_1_k1.1, float %kv.acc1_1_k1.2, float %kv.acc1_1_k1.3)
  %kv.acc1_1_k2.0 = extractvalue {float, float, float, float} %kv.acc1_1_k2.r, 0
  %kv.acc1_1_k2.1 = extractvalue {float, float, float, float} %kv.acc1_1_k2.r, 1
  %kv.acc1_1_k2.2 = extractvalue {float, float, float, float} %kv.acc1_1_k2.r, 2
  %kv.acc1_1_k2.3 = extractvalue {float, float, float, float} %kv.acc1_1_k2.r, 3
  %kv.va2_1 = getelementptr i8, ptr addrspace(3) %kv.vt, i32 4096
  %kv.vaddr2_1 = getelementptr i8, ptr addrspace(3) %kv.va2_1, i32 %v_lane_off1
%kv.vf2_1.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %kv.vaddr2_1)
  %kv.vf2_1.0 = extractvalue {i32, i32, i32, i32} %kv.vf2_1.r, 0
  %kv.vf2_1.1 = extractvalue {i32, i32, i32, i32} %kv.vf2_1.r, 1
  %kv.vf2_1.2 = extractvalue {i32, i32, i32, i32} %kv.vf2_1.r, 2
  %kv.vf2_1.3 = extractvalue {i32, i32, i32, i32} %kv.vf2_1.r, 3
%kv.acc0_2_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_2.0, i32 %kv.pa0_2.1, i32 %kv.pa0_2.2, i32 %kv.pa0_2.3, i32 %kv.vf2_1.0, i32 %kv.vf2_1.1, float %kv.acc0_2_k1.0, float %kv.acc0_2_k1.1, float %kv.acc0_2_k1.2, float %kv.acc0_2_k1.3)
  %kv.acc0_2_k2.0 = extractvalue {float, float, float, float} %kv.acc0_2_k2.r, 0
  %kv.acc0_2_k2.1 = extractvalue {float, float, float, float} %kv.acc0_2_k2.r, 1
  %kv.acc0_2_k2.2 = extractvalue {float, float, float, float} %kv.acc0_2_k2.r, 2
  %kv.acc0_2_k2.3 = extractvalue {float, float, float, float} %kv.acc0_2_k2.r, 3
%kv.acc0_3_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_2.0, i32 %kv.pa0_2.1, i32 %kv.pa0_2.2, i32 %kv.pa0_2.3, i32 %kv.vf2_1.2, i32 %kv.vf2_1.3, float %kv.acc0_3_k1.0, float %kv.acc0_3_k1.1, float %kv.acc0_3_k1.2, float %kv.acc0_3_k1.3)
  %kv.acc0_3_k2.0 = extractvalue {float, float, float, float} %kv.acc0_3_k2.r, 0
  %kv.acc0_3_k2.1 = extractvalue {float, float, float, float} %kv.acc0_3_k2.r, 1
  %kv.acc0_3_k2.2 = extractvalue {float, float, float, float} %kv.acc0_3_k2.r, 2
  %kv.acc0_3_k2.3 = extractvalue {float, float, float, float} %kv.acc0_3_k2.r, 3
%kv.acc1_2_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_2.0, i32 %kv.pa1_2.1, i32 %kv.pa1_2.2, i32 %kv.pa1_2.3, i32 %kv.vf2_1.0, i32 %kv.vf2_1.1, float %kv.acc1_2_k1.0, float %kv.acc1_2_k1.1, float %kv.acc1_2_k1.2, float %kv.acc1_2_k1.3)
  %kv.acc1_2_k2.0 = extractvalue {float, float, float, float} %kv.acc1_2_k2.r, 0
  %kv.acc1_2_k2.1 = extractvalue {float, float, float, float} %kv.acc1_2_k2.r, 1
  %kv.acc1_2_k2.2 = extractvalue {float, float, float, float} %kv.acc1_2_k2.r, 2
  %kv.acc1_2_k2.3 = extractvalue {float, float, float, float} %kv.acc1_2_k2.r, 3
%kv.acc1_3_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_2.0, i32 %kv.pa1_2.1, i32 %kv.pa1_2.2, i32 %kv.pa1_2.3, i32 %kv.vf2_1.2, i32 %kv.vf2_1.3, float %kv.acc1_3_k1.0, float %kv.acc1_3_k1.1, float %kv.acc1_3_k1.2, float %kv.acc1_3_k1.3)
  %kv.acc1_3_k2.0 = extractvalue {float, float, float, float} %kv.acc1_3_k2.r, 0
  %kv.acc1_3_k2.1 = extractvalue {float, float, float, float} %kv.acc1_3_k2.r, 1
  %kv.acc1_3_k2.2 = extractvalue {float, float, float, float} %kv.acc1_3_k2.r, 2
  %kv.acc1_3_k2.3 = extractvalue {float, float, float, float} %kv.acc1_3_k2.r, 3
  %kv.va2_2 = getelementptr i8, ptr addrspace(3) %kv.vt, i32 4096
  %kv.vaddr2_2 = getelementptr i8, ptr addrspace(3) %kv.va2_2, i32 %v_lane_off2
%kv.vf2_2.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %kv.vaddr2_2)
  %kv.vf2_2.0 = extractvalue {i32, i32, i32, i32} %kv.vf2_2.r, 0
  %kv.vf2_2.1 = extractvalue {i32, i32, i32, i32} %kv.vf2_2.r, 1
  %kv.vf2_2.2 = extractvalue {i32, i32, i32, i32} %kv.vf2_2.r, 2
  %kv.vf2_2.3 = extractvalue {i32, i32, i32, i32} %kv.vf2_2.r, 3
%kv.acc0_4_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_2.0, i32 %kv.pa0_2.1, i32 %kv.pa0_2.2, i32 %kv.pa0_2.3, i32 %kv.vf2_2.0, i32 %kv.vf2_2.1, float %kv.acc0_4_k1.0, float %kv.acc0_4_k1.1, float %kv.acc0_4_k1.2, float %kv.acc0_4_k1.3)
  %kv.acc0_4_k2.0 = extractvalue {float, float, float, float} %kv.acc0_4_k2.r, 0
  %kv.acc0_4_k2.1 = extractvalue {float, float, float, float} %kv.acc0_4_k2.r, 1
  %kv.acc0_4_k2.2 = extractvalue {float, float, float, float} %kv.acc0_4_k2.r, 2
  %kv.acc0_4_k2.3 = extractvalue {float, float, float, float} %kv.acc0_4_k2.r, 3
%kv.acc0_5_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_2.0, i32 %kv.pa0_2.1, i32 %kv.pa0_2.2, i32 %kv.pa0_2.3, i32 %kv.vf2_2.2, i32 %kv.vf2_2.3, float %kv.acc0_5_k1.0, float %kv.acc0_5_k1.1, float %kv.acc0_5_k1.2, float %kv.acc0_5_k1.3)
  %kv.acc0_5_k2.0 = extractvalue {float, float, float, float} %kv.acc0_5_k2.r, 0
  %kv.acc0_5_k2.1 = extractvalue {float, float, float, float} %kv.acc0_5_k2.r, 1
  %kv.acc0_5_k2.2 = extractvalue {float, float, float, float} %kv.acc0_5_k2.r, 2
  %kv.acc0_5_k2.3 = extractvalue {float, float, float, float} %kv.acc0_5_k2.r, 3
%kv.acc1_4_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_2.0, i32 %kv.pa1_2.1, i32 %kv.pa1_2.2, i32 %kv.pa1_2.3, i32 %kv.vf2_2.0, i32 %kv.vf2_2.1, float %kv.acc1_4_k1.0, float %kv.acc1_4_k1.1, float %kv.acc1_4_k1.2, float %kv.acc1_4_k1.3)
  %kv.acc1_4_k2.0 = extractvalue {float, float, float, float} %kv.acc1_4_k2.r, 0
  %kv.acc1_4_k2.1 = extractvalue {float, float, float, float} %kv.acc1_4_k2.r, 1
  %kv.acc1_4_k2.2 = extractvalue {float, float, float, float} %kv.acc1_4_k2.r, 2
  %kv.acc1_4_k2.3 = extractvalue {float, float, float, float} %kv.acc1_4_k2.r, 3
%kv.acc1_5_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_2.0, i32 %kv.pa1_2.1, i32 %kv.pa1_2.2, i32 %kv.pa1_2.3, i32 %kv.vf2_2.2, i32 %kv.vf2_2.3, float %kv.acc1_5_k1.0, float %kv.acc1_5_k1.1, float %kv.acc1_5_k1.2, float %kv.acc1_5_k1.3)
  %kv.acc1_5_k2.0 = extractvalue {float, float, float, float} %kv.acc1_5_k2.r, 0
  %kv.acc1_5_k2.1 = extractvalue {float, float, float, float} %kv.acc1_5_k2.r, 1
  %kv.acc1_5_k2.2 = extractvalue {float, float, float, float} %kv.acc1_5_k2.r, 2
  %kv.acc1_5_k2.3 = extractvalue {float, float, float, float} %kv.acc1_5_k2.r, 3
  %kv.va2_3 = getelementptr i8, ptr addrspace(3) %kv.vt, i32 4096
  %kv.vaddr2_3 = getelementptr i8, ptr addrspace(3) %kv.va2_3, i32 %v_lane_off3
%kv.vf2_3.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %kv.vaddr2_3)
  %kv.vf2_3.0 = extractvalue {i32, i32, i32, i32} %kv.vf2_3.r, 0
  %kv.vf2_3.1 = extractvalue {i32, i32, i32, i32} %kv.vf2_3.r, 1
  %kv.vf2_3.2 = extractvalue {i32, i32, i32, i32} %kv.vf2_3.r, 2
  %kv.vf2_3.3 = extractvalue {i32, i32, i32, i32} %kv.vf2_3.r, 3
%kv.acc0_6_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_2.0, i32 %kv.pa0_2.1, i32 %kv.pa0_2.2, i32 %kv.pa0_2.3, i32 %kv.vf2_3.0, i32 %kv.vf2_3.1, float %kv.acc0_6_k1.0, float %kv.acc0_6_k1.1, float %kv.acc0_6_k1.2, float %kv.acc0_6_k1.3)
  %kv.acc0_6_k2.0 = extractvalue {float, float, float, float} %kv.acc0_6_k2.r, 0
  %kv.acc0_6_k2.1 = extractvalue {float, float, float, float} %kv.acc0_6_k2.r, 1
  %kv.acc0_6_k2.2 = extractvalue {float, float, float, float} %kv.acc0_6_k2.r, 2
  %kv.acc0_6_k2.3 = extractvalue {float, float, float, float} %kv.acc0_6_k2.r, 3
%kv.acc0_7_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_2.0, i32 %kv.pa0_2.1, i32 %kv.pa0_2.2, i32 %kv.pa0_2.3, i32 %kv.vf2_3.2, i32 %kv.vf2_3.3, float %kv.acc0_7_k1.0, float %kv.acc0_7_k1.1, float %kv.acc0_7_k1.2, float %kv.acc0_7_k1.3)
  %kv.acc0_7_k2.0 = extractvalue {float, float, float, float} %kv.acc0_7_k2.r, 0
  %kv.acc0_7_k2.1 = extractvalue {float, float, float, float} %kv.acc0_7_k2.r, 1
  %kv.acc0_7_k2.2 = extractvalue {float, float, float, float} %kv.acc0_7_k2.r, 2
  %kv.acc0_7_k2.3 = extractvalue {float, float, float, float} %kv.acc0_7_k2.r, 3
%kv.acc1_6_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_2.0, i32 %kv.pa1_2.1, i32 %kv.pa1_2.2, i32 %kv.pa1_2.3, i32 %kv.vf2_3.0, i32 %kv.vf2_3.1, float %kv.acc1_6_k1.0, float %kv.acc1_6_k1.1, float %kv.acc1_6_k1.2, float %kv.acc1_6_k1.3)
  %kv.acc1_6_k2.0 = extractvalue {float, float, float, float} %kv.acc1_6_k2.r, 0
  %kv.acc1_6_k2.1 = extractvalue {float, float, float, float} %kv.acc1_6_k2.r, 1
  %kv.acc1_6_k2.2 = extractvalue {float, float, float, float} %kv.acc1_6_k2.r, 2
  %kv.acc1_6_k2.3 = extractvalue {float, float, float, float} %kv.acc1_6_k2.r, 3
%kv.acc1_7_k2.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_2.0, i32 %kv.pa1_2.1, i32 %kv.pa1_2.2, i32 %kv.pa1_2.3, i32 %kv.vf2_3.2, i32 %kv.vf2_3.3, float %kv.acc1_7_k1.0, float %kv.acc1_7_k1.1, float %kv.acc1_7_k1.2, float %kv.acc1_7_k1.3)
  %kv.acc1_7_k2.0 = extractvalue {float, float, float, float} %kv.acc1_7_k2.r, 0
  %kv.acc1_7_k2.1 = extractvalue {float, float, float, float} %kv.acc1_7_k2.r, 1
  %kv.acc1_7_k2.2 = extractvalue {float, float, float, float} %kv.acc1_7_k2.r, 2
  %kv.acc1_7_k2.3 = extractvalue {float, float, float, float} %kv.acc1_7_k2.r, 3
  %kv.va3_0 = getelementptr i8, ptr addrspace(3) %kv.vt, i32 6144
  %kv.vaddr3_0 = getelementptr i8, ptr addrspace(3) %kv.va3_0, i32 %v_lane_off0
%kv.vf3_0.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %kv.vaddr3_0)
  %kv.vf3_0.0 = extractvalue {i32, i32, i32, i32} %kv.vf3_0.r, 0
  %kv.vf3_0.1 = extractvalue {i32, i32, i32, i32} %kv.vf3_0.r, 1
  %kv.vf3_0.2 = extractvalue {i32, i32, i32, i32} %kv.vf3_0.r, 2
  %kv.vf3_0.3 = extractvalue {i32, i32, i32, i32} %kv.vf3_0.r, 3
%kv.acc0_0_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_3.0, i32 %kv.pa0_3.1, i32 %kv.pa0_3.2, i32 %kv.pa0_3.3, i32 %kv.vf3_0.0, i32 %kv.vf3_0.1, float %kv.acc0_0_k2.0, float %kv.acc0_0_k2.1, float %kv.acc0_0_k2.2, float %kv.acc0_0_k2.3)
  %kv.acc0_0_k3.0 = extractvalue {float, float, float, float} %kv.acc0_0_k3.r, 0
  %kv.acc0_0_k3.1 = extractvalue {float, float, float, float} %kv.acc0_0_k3.r, 1
  %kv.acc0_0_k3.2 = extractvalue {float, float, float, float} %kv.acc0_0_k3.r, 2
  %kv.acc0_0_k3.3 = extractvalue {float, float, float, float} %kv.acc0_0_k3.r, 3
%kv.acc0_1_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_3.0, i32 %kv.pa0_3.1, i32 %kv.pa0_3.2, i32 %kv.pa0_3.3, i32 %kv.vf3_0.2, i32 %kv.vf3_0.3, float %kv.acc0_1_k2.0, float %kv.acc0_1_k2.1, float %kv.acc0_1_k2.2, float %kv.acc0_1_k2.3)
  %kv.acc0_1_k3.0 = extractvalue {float, float, float, float} %kv.acc0_1_k3.r, 0
  %kv.acc0_1_k3.1 = extractvalue {float, float, float, float} %kv.acc0_1_k3.r, 1
  %kv.acc0_1_k3.2 = extractvalue {float, float, float, float} %kv.acc0_1_k3.r, 2
  %kv.acc0_1_k3.3 = extractvalue {float, float, float, float} %kv.acc0_1_k3.r, 3
%kv.acc1_0_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_3.0, i32 %kv.pa1_3.1, i32 %kv.pa1_3.2, i32 %kv.pa1_3.3, i32 %kv.vf3_0.0, i32 %kv.vf3_0.1, float %kv.acc1_0_k2.0, float %kv.acc1_0_k2.1, float %kv.acc1_0_k2.2, float %kv.acc1_0_k2.3)
  %kv.acc1_0_k3.0 = extractvalue {float, float, float, float} %kv.acc1_0_k3.r, 0
  %kv.acc1_0_k3.1 = extractvalue {float, float, float, float} %kv.acc1_0_k3.r, 1
  %kv.acc1_0_k3.2 = extractvalue {float, float, float, float} %kv.acc1_0_k3.r, 2
  %kv.acc1_0_k3.3 = extractvalue {float, float, float, float} %kv.acc1_0_k3.r, 3
%kv.acc1_1_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_3.0, i32 %kv.pa1_3.1, i32 %kv.pa1_3.2, i32 %kv.pa1_3.3, i32 %kv.vf3_0.2, i32 %kv.vf3_0.3, float %kv.acc1_1_k2.0, float %kv.acc1_1_k2.1, float %kv.acc1_1_k2.2, float %kv.acc1_1_k2.3)
  %kv.acc1_1_k3.0 = extractvalue {float, float, float, float} %kv.acc1_1_k3.r, 0
  %kv.acc1_1_k3.1 = extractvalue {float, float, float, float} %kv.acc1_1_k3.r, 1
  %kv.acc1_1_k3.2 = extractvalue {float, float, float, float} %kv.acc1_1_k3.r, 2
  %kv.acc1_1_k3.3 = extractvalue {float, float, float, float} %kv.acc1_1_k3.r, 3
  %kv.va3_1 = getelementptr i8, ptr addrspace(3) %kv.vt, i32 6144
  %kv.vaddr3_1 = getelementptr i8, ptr addrspace(3) %kv.va3_1, i32 %v_lane_off1
%kv.vf3_1.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %kv.vaddr3_1)
  %kv.vf3_1.0 = extractvalue {i32, i32, i32, i32} %kv.vf3_1.r, 0
  %kv.vf3_1.1 = extractvalue {i32, i32, i32, i32} %kv.vf3_1.r, 1
  %kv.vf3_1.2 = extractvalue {i32, i32, i32, i32} %kv.vf3_1.r, 2
  %kv.vf3_1.3 = extractvalue {i32, i32, i32, i32} %kv.vf3_1.r, 3
%kv.acc0_2_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_3.0, i32 %kv.pa0_3.1, i32 %kv.pa0_3.2, i32 %kv.pa0_3.3, i32 %kv.vf3_1.0, i32 %kv.vf3_1.1, float %kv.acc0_2_k2.0, float %kv.acc0_2_k2.1, float %kv.acc0_2_k2.2, float %kv.acc0_2_k2.3)
  %kv.acc0_2_k3.0 = extractvalue {float, float, float, float} %kv.acc0_2_k3.r, 0
  %kv.acc0_2_k3.1 = extractvalue {float, float, float, float} %kv.acc0_2_k3.r, 1
  %kv.acc0_2_k3.2 = extractvalue {float, float, float, float} %kv.acc0_2_k3.r, 2
  %kv.acc0_2_k3.3 = extractvalue {float, float, float, float} %kv.acc0_2_k3.r, 3
%kv.acc0_3_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_3.0, i32 %kv.pa0_3.1, i32 %kv.pa0_3.2, i32 %kv.pa0_3.3, i32 %kv.vf3_1.2, i32 %kv.vf3_1.3, float %kv.acc0_3_k2.0, float %kv.acc0_3_k2.1, float %kv.acc0_3_k2.2, float %kv.acc0_3_k2.3)
  %kv.acc0_3_k3.0 = extractvalue {float, float, float, float} %kv.acc0_3_k3.r, 0
  %kv.acc0_3_k3.1 = extractvalue {float, float, float, float} %kv.acc0_3_k3.r, 1
  %kv.acc0_3_k3.2 = extractvalue {float, float, float, float} %kv.acc0_3_k3.r, 2
  %kv.acc0_3_k3.3 = extractvalue {float, float, float, float} %kv.acc0_3_k3.r, 3
%kv.acc1_2_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_3.0, i32 %kv.pa1_3.1, i32 %kv.pa1_3.2, i32 %kv.pa1_3.3, i32 %kv.vf3_1.0, i32 %kv.vf3_1.1, float %kv.acc1_2_k2.0, float %kv.acc1_2_k2.1, float %kv.acc1_2_k2.2, float %kv.acc1_2_k2.3)
  %kv.acc1_2_k3.0 = extractvalue {float, float, float, float} %kv.acc1_2_k3.r, 0
  %kv.acc1_2_k3.1 = extractvalue {float, float, float, float} %kv.acc1_2_k3.r, 1
  %kv.acc1_2_k3.2 = extractvalue {float, float, float, float} %kv.acc1_2_k3.r, 2
  %kv.acc1_2_k3.3 = extractvalue {float, float, float, float} %kv.acc1_2_k3.r, 3
%kv.acc1_3_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_3.0, i32 %kv.pa1_3.1, i32 %kv.pa1_3.2, i32 %kv.pa1_3.3, i32 %kv.vf3_1.2, i32 %kv.vf3_1.3, float %kv.acc1_3_k2.0, float %kv.acc1_3_k2.1, float %kv.acc1_3_k2.2, float %kv.acc1_3_k2.3)
  %kv.acc1_3_k3.0 = extractvalue {float, float, float, float} %kv.acc1_3_k3.r, 0
  %kv.acc1_3_k3.1 = extractvalue {float, float, float, float} %kv.acc1_3_k3.r, 1
  %kv.acc1_3_k3.2 = extractvalue {float, float, float, float} %kv.acc1_3_k3.r, 2
  %kv.acc1_3_k3.3 = extractvalue {float, float, float, float} %kv.acc1_3_k3.r, 3
  %kv.va3_2 = getelementptr i8, ptr addrspace(3) %kv.vt, i32 6144
  %kv.vaddr3_2 = getelementptr i8, ptr addrspace(3) %kv.va3_2, i32 %v_lane_off2
%kv.vf3_2.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %kv.vaddr3_2)
  %kv.vf3_2.0 = extractvalue {i32, i32, i32, i32} %kv.vf3_2.r, 0
  %kv.vf3_2.1 = extractvalue {i32, i32, i32, i32} %kv.vf3_2.r, 1
  %kv.vf3_2.2 = extractvalue {i32, i32, i32, i32} %kv.vf3_2.r, 2
  %kv.vf3_2.3 = extractvalue {i32, i32, i32, i32} %kv.vf3_2.r, 3
%kv.acc0_4_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_3.0, i32 %kv.pa0_3.1, i32 %kv.pa0_3.2, i32 %kv.pa0_3.3, i32 %kv.vf3_2.0, i32 %kv.vf3_2.1, float %kv.acc0_4_k2.0, float %kv.acc0_4_k2.1, float %kv.acc0_4_k2.2, float %kv.acc0_4_k2.3)
  %kv.acc0_4_k3.0 = extractvalue {float, float, float, float} %kv.acc0_4_k3.r, 0
  %kv.acc0_4_k3.1 = extractvalue {float, float, float, float} %kv.acc0_4_k3.r, 1
  %kv.acc0_4_k3.2 = extractvalue {float, float, float, float} %kv.acc0_4_k3.r, 2
  %kv.acc0_4_k3.3 = extractvalue {float, float, float, float} %kv.acc0_4_k3.r, 3
%kv.acc0_5_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_3.0, i32 %kv.pa0_3.1, i32 %kv.pa0_3.2, i32 %kv.pa0_3.3, i32 %kv.vf3_2.2, i32 %kv.vf3_2.3, float %kv.acc0_5_k2.0, float %kv.acc0_5_k2.1, float %kv.acc0_5_k2.2, float %kv.acc0_5_k2.3)
  %kv.acc0_5_k3.0 = extractvalue {float, float, float, float} %kv.acc0_5_k3.r, 0
  %kv.acc0_5_k3.1 = extractvalue {float, float, float, float} %kv.acc0_5_k3.r, 1
  %kv.acc0_5_k3.2 = extractvalue {float, float, float, float} %kv.acc0_5_k3.r, 2
  %kv.acc0_5_k3.3 = extractvalue {float, float, float, float} %kv.acc0_5_k3.r, 3
%kv.acc1_4_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_3.0, i32 %kv.pa1_3.1, i32 %kv.pa1_3.2, i32 %kv.pa1_3.3, i32 %kv.vf3_2.0, i32 %kv.vf3_2.1, float %kv.acc1_4_k2.0, float %kv.acc1_4_k2.1, float %kv.acc1_4_k2.2, float %kv.acc1_4_k2.3)
  %kv.acc1_4_k3.0 = extractvalue {float, float, float, float} %kv.acc1_4_k3.r, 0
  %kv.acc1_4_k3.1 = extractvalue {float, float, float, float} %kv.acc1_4_k3.r, 1
  %kv.acc1_4_k3.2 = extractvalue {float, float, float, float} %kv.acc1_4_k3.r, 2
  %kv.acc1_4_k3.3 = extractvalue {float, float, float, float} %kv.acc1_4_k3.r, 3
%kv.acc1_5_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_3.0, i32 %kv.pa1_3.1, i32 %kv.pa1_3.2, i32 %kv.pa1_3.3, i32 %kv.vf3_2.2, i32 %kv.vf3_2.3, float %kv.acc1_5_k2.0, float %kv.acc1_5_k2.1, float %kv.acc1_5_k2.2, float %kv.acc1_5_k2.3)
  %kv.acc1_5_k3.0 = extractvalue {float, float, float, float} %kv.acc1_5_k3.r, 0
  %kv.acc1_5_k3.1 = extractvalue {float, float, float, float} %kv.acc1_5_k3.r, 1
  %kv.acc1_5_k3.2 = extractvalue {float, float, float, float} %kv.acc1_5_k3.r, 2
  %kv.acc1_5_k3.3 = extractvalue {float, float, float, float} %kv.acc1_5_k3.r, 3
  %kv.va3_3 = getelementptr i8, ptr addrspace(3) %kv.vt, i32 6144
  %kv.vaddr3_3 = getelementptr i8, ptr addrspace(3) %kv.va3_3, i32 %v_lane_off3
%kv.vf3_3.r = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %kv.vaddr3_3)
  %kv.vf3_3.0 = extractvalue {i32, i32, i32, i32} %kv.vf3_3.r, 0
  %kv.vf3_3.1 = extractvalue {i32, i32, i32, i32} %kv.vf3_3.r, 1
  %kv.vf3_3.2 = extractvalue {i32, i32, i32, i32} %kv.vf3_3.r, 2
  %kv.vf3_3.3 = extractvalue {i32, i32, i32, i32} %kv.vf3_3.r, 3
%kv.acc0_6_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_3.0, i32 %kv.pa0_3.1, i32 %kv.pa0_3.2, i32 %kv.pa0_3.3, i32 %kv.vf3_3.0, i32 %kv.vf3_3.1, float %kv.acc0_6_k2.0, float %kv.acc0_6_k2.1, float %kv.acc0_6_k2.2, float %kv.acc0_6_k2.3)
  %kv.acc0_6_k3.0 = extractvalue {float, float, float, float} %kv.acc0_6_k3.r, 0
  %kv.acc0_6_k3.1 = extractvalue {float, float, float, float} %kv.acc0_6_k3.r, 1
  %kv.acc0_6_k3.2 = extractvalue {float, float, float, float} %kv.acc0_6_k3.r, 2
  %kv.acc0_6_k3.3 = extractvalue {float, float, float, float} %kv.acc0_6_k3.r, 3
%kv.acc0_7_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa0_3.0, i32 %kv.pa0_3.1, i32 %kv.pa0_3.2, i32 %kv.pa0_3.3, i32 %kv.vf3_3.2, i32 %kv.vf3_3.3, float %kv.acc0_7_k2.0, float %kv.acc0_7_k2.1, float %kv.acc0_7_k2.2, float %kv.acc0_7_k2.3)
  %kv.acc0_7_k3.0 = extractvalue {float, float, float, float} %kv.acc0_7_k3.r, 0
  %kv.acc0_7_k3.1 = extractvalue {float, float, float, float} %kv.acc0_7_k3.r, 1
  %kv.acc0_7_k3.2 = extractvalue {float, float, float, float} %kv.acc0_7_k3.r, 2
  %kv.acc0_7_k3.3 = extractvalue {float, float, float, float} %kv.acc0_7_k3.r, 3
%kv.acc1_6_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_3.0, i32 %kv.pa1_3.1, i32 %kv.pa1_3.2, i32 %kv.pa1_3.3, i32 %kv.vf3_3.0, i32 %kv.vf3_3.1, float %kv.acc1_6_k2.0, float %kv.acc1_6_k2.1, float %kv.acc1_6_k2.2, float %kv.acc1_6_k2.3)
  %kv.acc1_6_k3.0 = extractvalue {float, float, float, float} %kv.acc1_6_k3.r, 0
  %kv.acc1_6_k3.1 = extractvalue {float, float, float, float} %kv.acc1_6_k3.r, 1
  %kv.acc1_6_k3.2 = extractvalue {float, float, float, float} %kv.acc1_6_k3.r, 2
  %kv.acc1_6_k3.3 = extractvalue {float, float, float, float} %kv.acc1_6_k3.r, 3
%kv.acc1_7_k3.r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %kv.pa1_3.0, i32 %kv.pa1_3.1, i32 %kv.pa1_3.2, i32 %kv.pa1_3.3, i32 %kv.vf3_3.2, i32 %kv.vf3_3.3, float %kv.acc1_7_k2.0, float %kv.acc1_7_k2.1, float %kv.acc1_7_k2.2, float %kv.acc1_7_k2.3)
  %kv.acc1_7_k3.0 = extractvalue {float, float, float, float} %kv.acc1_7_k3.r, 0
  %kv.acc1_7_k3.1 = extractvalue {float, float, float, float} %kv.acc1_7_k3.r, 1
  %kv.acc1_7_k3.2 = extractvalue {float, float, float, float} %kv.acc1_7_k3.r, 2
  %kv.acc1_7_k3.3 = extractvalue {float, float, float, float} %kv.acc1_7_k3.r, 3
  %kv.next = add i32 %kv.j, 1
  br label %kv.latch
kv.latch:
  br label %kv.head

; ======== epilogue: one division by l_i per row; M = m_i + log2(l_i) (base-2 log-sum-exp) ========
epilogue:
%ep0_0.l.x1 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %kv.in.l0_0, i32 1, i32 31)
  %ep0_0.l.s1 = fadd float %kv.in.l0_0, %ep0_0.l.x1
  %ep0_0.l.x2 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %ep0_0.l.s1, i32 2, i32 31)
  %ep0_0.l = fadd float %ep0_0.l.s1, %ep0_0.l.x2
  %ep0_0.inv = fdiv float 1.0, %ep0_0.l
  %ep0_0.lg = call float @llvm.nvvm.lg2.approx.f(float %ep0_0.l)
  %ep0_0.lse = fadd float %kv.in.m0_0, %ep0_0.lg
  %ep0_0.row = add i32 %row_g, 0
  %ep0_0.in = icmp ult i32 %ep0_0.row, %q_len
  br i1 %ep0_0.in, label %ep0_0.store, label %ep0_0.done
ep0_0.store:
  %ep0_0.t0 = icmp eq i32 %t, 0
  br i1 %ep0_0.t0, label %ep0_0.store_m, label %ep0_0.store_o
ep0_0.store_m:
  %ep0_0.mi = add i32 %stat_row0, %ep0_0.row
  %ep0_0.mi64 = zext i32 %ep0_0.mi to i64
  %ep0_0.mp = getelementptr float, ptr addrspace(1) %M, i64 %ep0_0.mi64
  store float %ep0_0.lse, ptr addrspace(1) %ep0_0.mp, align 4
  br label %ep0_0.store_o
ep0_0.store_o:
  %ep0_0.row64 = zext i32 %ep0_0.row to i64
  %ep0_0.ro = mul i64 %ep0_0.row64, %stride_om
  %ep0_0.t64 = zext i32 %t2 to i64
  %ep0_0.ro2 = add i64 %ep0_0.ro, %ep0_0.t64
  %ep0_0.op = getelementptr bfloat, ptr addrspace(1) %o_base, i64 %ep0_0.ro2
  %ep0_0.o0.x = fmul float %kv.in.acc0_0.0, %ep0_0.inv
  %ep0_0.o0.y = fmul float %kv.in.acc0_0.1, %ep0_0.inv

  %ep0_0.o0.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep0_0.o0.y, float %ep0_0.o0.x)
  %ep0_0.o0 = bitcast <2 x bfloat> %ep0_0.o0.h to i32
  %ep0_0.op0 = getelementptr bfloat, ptr addrspace(1) %ep0_0.op, i64 0
  store i32 %ep0_0.o0, ptr addrspace(1) %ep0_0.op0, align 4
  %ep0_0.o1.x = fmul float %kv.in.acc0_1.0, %ep0_0.inv
  %ep0_0.o1.y = fmul float %kv.in.acc0_1.1, %ep0_0.inv

  %ep0_0.o1.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep0_0.o1.y, float %ep0_0.o1.x)
  %ep0_0.o1 = bitcast <2 x bfloat> %ep0_0.o1.h to i32
  %ep0_0.op1 = getelementptr bfloat, ptr addrspace(1) %ep0_0.op, i64 8
  store i32 %ep0_0.o1, ptr addrspace(1) %ep0_0.op1, align 4
  %ep0_0.o2.x = fmul float %kv.in.acc0_2.0, %ep0_0.inv
  %ep0_0.o2.y = fmul float %kv.in.acc0_2.1, %ep0_0.inv

  %ep0_0.o2.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep0_0.o2.y, float %ep0_0.o2.x)
  %ep0_0.o2 = bitcast <2 x bfloat> %ep0_0.o2.h to i32
  %ep0_0.op2 = getelementptr bfloat, ptr addrspace(1) %ep0_0.op, i64 16
  store i32 %ep0_0.o2, ptr addrspace(1) %ep0_0.op2, align 4
  %ep0_0.o3.x = fmul float %kv.in.acc0_3.0, %ep0_0.inv
  %ep0_0.o3.y = fmul float %kv.in.acc0_3.1, %ep0_0.inv

  %ep0_0.o3.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep0_0.o3.y, float %ep0_0.o3.x)
  %ep0_0.o3 = bitcast <2 x bfloat> %ep0_0.o3.h to i32
  %ep0_0.op3 = getelementptr bfloat, ptr addrspace(1) %ep0_0.op, i64 24
  store i32 %ep0_0.o3, ptr addrspace(1) %ep0_0.op3, align 4
  %ep0_0.o4.x = fmul float %kv.in.acc0_4.0, %ep0_0.inv
  %ep0_0.o4.y = fmul float %kv.in.acc0_4.1, %ep0_0.inv

  %ep0_0.o4.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep0_0.o4.y, float %ep0_0.o4.x)
  %ep0_0.o4 = bitcast <2 x bfloat> %ep0_0.o4.h to i32
  %ep0_0.op4 = getelementptr bfloat, ptr addrspace(1) %ep0_0.op, i64 32
  store i32 %ep0_0.o4, ptr addrspace(1) %ep0_0.op4, align 4
  %ep0_0.o5.x = fmul float %kv.in.acc0_5.0, %ep0_0.inv
  %ep0_0.o5.y = fmul float %kv.in.acc0_5.1, %ep0_0.inv

  %ep0_0.o5.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep0_0.o5.y, float %ep0_0.o5.x)
  %ep0_0.o5 = bitcast <2 x bfloat> %ep0_0.o5.h to i32
  %ep0_0.op5 = getelementptr bfloat, ptr addrspace(1) %ep0_0.op, i64 40
  store i32 %ep0_0.o5, ptr addrspace(1) %ep0_0.op5, align 4
  %ep0_0.o6.x = fmul float %kv.in.acc0_6.0, %ep0_0.inv
  %ep0_0.o6.y = fmul float %kv.in.acc0_6.1, %ep0_0.inv

  %ep0_0.o6.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep0_0.o6.y, float %ep0_0.o6.x)
  %ep0_0.o6 = bitcast <2 x bfloat> %ep0_0.o6.h to i32
  %ep0_0.op6 = getelementptr bfloat, ptr addrspace(1) %ep0_0.op, i64 48
  store i32 %ep0_0.o6, ptr addrspace(1) %ep0_0.op6, align 4
  %ep0_0.o7.x = fmul float %kv.in.acc0_7.0, %ep0_0.inv
  %ep0_0.o7.y = fmul float %kv.in.acc0_7.1, %ep0_0.inv

  %ep0_0.o7.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep0_0.o7.y, float %ep0_0.o7.x)
  %ep0_0.o7 = bitcast <2 x bfloat> %ep0_0.o7.h to i32
  %ep0_0.op7 = getelementptr bfloat, ptr addrspace(1) %ep0_0.op, i64 56
  store i32 %ep0_0.o7, ptr addrspace(1) %ep0_0.op7, align 4
  br label %ep0_0.done
ep0_0.done:
%ep0_1.l.x1 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %kv.in.l0_1, i32 1, i32 31)
  %ep0_1.l.s1 = fadd float %kv.in.l0_1, %ep0_1.l.x1
  %ep0_1.l.x2 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %ep0_1.l.s1, i32 2, i32 31)
  %ep0_1.l = fadd float %ep0_1.l.s1, %ep0_1.l.x2
  %ep0_1.inv = fdiv float 1.0, %ep0_1.l
  %ep0_1.lg = call float @llvm.nvvm.lg2.approx.f(float %ep0_1.l)
  %ep0_1.lse = fadd float %kv.in.m0_1, %ep0_1.lg
  %ep0_1.row = add i32 %row_g, 8
  %ep0_1.in = icmp ult i32 %ep0_1.row, %q_len
  br i1 %ep0_1.in, label %ep0_1.store, label %ep0_1.done
ep0_1.store:
  %ep0_1.t0 = icmp eq i32 %t, 0
  br i1 %ep0_1.t0, label %ep0_1.store_m, label %ep0_1.store_o
ep0_1.store_m:
  %ep0_1.mi = add i32 %stat_row0, %ep0_1.row
  %ep0_1.mi64 = zext i32 %ep0_1.mi to i64
  %ep0_1.mp = getelementptr float, ptr addrspace(1) %M, i64 %ep0_1.mi64
  store float %ep0_1.lse, ptr addrspace(1) %ep0_1.mp, align 4
  br label %ep0_1.store_o
ep0_1.store_o:
  %ep0_1.row64 = zext i32 %ep0_1.row to i64
  %ep0_1.ro = mul i64 %ep0_1.row64, %stride_om
  %ep0_1.t64 = zext i32 %t2 to i64
  %ep0_1.ro2 = add i64 %ep0_1.ro, %ep0_1.t64
  %ep0_1.op = getelementptr bfloat, ptr addrspace(1) %o_base, i64 %ep0_1.ro2
  %ep0_1.o0.x = fmul float %kv.in.acc0_0.2, %ep0_1.inv
  %ep0_1.o0.y = fmul float %kv.in.acc0_0.3, %ep0_1.inv

  %ep0_1.o0.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep0_1.o0.y, float %ep0_1.o0.x)
  %ep0_1.o0 = bitcast <2 x bfloat> %ep0_1.o0.h to i32
  %ep0_1.op0 = getelementptr bfloat, ptr addrspace(1) %ep0_1.op, i64 0
  store i32 %ep0_1.o0, ptr addrspace(1) %ep0_1.op0, align 4
  %ep0_1.o1.x = fmul float %kv.in.acc0_1.2, %ep0_1.inv
  %ep0_1.o1.y = fmul float %kv.in.acc0_1.3, %ep0_1.inv

  %ep0_1.o1.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep0_1.o1.y, float %ep0_1.o1.x)
  %ep0_1.o1 = bitcast <2 x bfloat> %ep0_1.o1.h to i32
  %ep0_1.op1 = getelementptr bfloat, ptr addrspace(1) %ep0_1.op, i64 8
  store i32 %ep0_1.o1, ptr addrspace(1) %ep0_1.op1, align 4
  %ep0_1.o2.x = fmul float %kv.in.acc0_2.2, %ep0_1.inv
  %ep0_1.o2.y = fmul float %kv.in.acc0_2.3, %ep0_1.inv

  %ep0_1.o2.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep0_1.o2.y, float %ep0_1.o2.x)
  %ep0_1.o2 = bitcast <2 x bfloat> %ep0_1.o2.h to i32
  %ep0_1.op2 = getelementptr bfloat, ptr addrspace(1) %ep0_1.op, i64 16
  store i32 %ep0_1.o2, ptr addrspace(1) %ep0_1.op2, align 4
  %ep0_1.o3.x = fmul float %kv.in.acc0_3.2, %ep0_1.inv
  %ep0_1.o3.y = fmul float %kv.in.acc0_3.3, %ep0_1.inv

  %ep0_1.o3.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep0_1.o3.y, float %ep0_1.o3.x)
  %ep0_1.o3 = bitcast <2 x bfloat> %ep0_1.o3.h to i32
  %ep0_1.op3 = getelementptr bfloat, ptr addrspace(1) %ep0_1.op, i64 24
  store i32 %ep0_1.o3, ptr addrspace(1) %ep0_1.op3, align 4
  %ep0_1.o4.x = fmul float %kv.in.acc0_4.2, %ep0_1.inv
  %ep0_1.o4.y = fmul float %kv.in.acc0_4.3, %ep0_1.inv

  %ep0_1.o4.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep0_1.o4.y, float %ep0_1.o4.x)
  %ep0_1.o4 = bitcast <2 x bfloat> %ep0_1.o4.h to i32
  %ep0_1.op4 = getelementptr bfloat, ptr addrspace(1) %ep0_1.op, i64 32
  store i32 %ep0_1.o4, ptr addrspace(1) %ep0_1.op4, align 4
  %ep0_1.o5.x = fmul float %kv.in.acc0_5.2, %ep0_1.inv
  %ep0_1.o5.y = fmul float %kv.in.acc0_5.3, %ep0_1.inv

  %ep0_1.o5.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep0_1.o5.y, float %ep0_1.o5.x)
  %ep0_1.o5 = bitcast <2 x bfloat> %ep0_1.o5.h to i32
  %ep0_1.op5 = getelementptr bfloat, ptr addrspace(1) %ep0_1.op, i64 40
  store i32 %ep0_1.o5, ptr addrspace(1) %ep0_1.op5, align 4
  %ep0_1.o6.x = fmul float %kv.in.acc0_6.2, %ep0_1.inv
  %ep0_1.o6.y = fmul float %kv.in.acc0_6.3, %ep0_1.inv

  %ep0_1.o6.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep0_1.o6.y, float %ep0_1.o6.x)
  %ep0_1.o6 = bitcast <2 x bfloat> %ep0_1.o6.h to i32
  %ep0_1.op6 = getelementptr bfloat, ptr addrspace(1) %ep0_1.op, i64 48
  store i32 %ep0_1.o6, ptr addrspace(1) %ep0_1.op6, align 4
  %ep0_1.o7.x = fmul float %kv.in.acc0_7.2, %ep0_1.inv
  %ep0_1.o7.y = fmul float %kv.in.acc0_7.3, %ep0_1.inv

  %ep0_1.o7.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep0_1.o7.y, float %ep0_1.o7.x)
  %ep0_1.o7 = bitcast <2 x bfloat> %ep0_1.o7.h to i32
  %ep0_1.op7 = getelementptr bfloat, ptr addrspace(1) %ep0_1.op, i64 56
  store i32 %ep0_1.o7, ptr addrspace(1) %ep0_1.op7, align 4
  br label %ep0_1.done
ep0_1.done:
%ep1_0.l.x1 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %kv.in.l1_0, i32 1, i32 31)
  %ep1_0.l.s1 = fadd float %kv.in.l1_0, %ep1_0.l.x1
  %ep1_0.l.x2 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %ep1_0.l.s1, i32 2, i32 31)
  %ep1_0.l = fadd float %ep1_0.l.s1, %ep1_0.l.x2
  %ep1_0.inv = fdiv float 1.0, %ep1_0.l
  %ep1_0.lg = call float @llvm.nvvm.lg2.approx.f(float %ep1_0.l)
  %ep1_0.lse = fadd float %kv.in.m1_0, %ep1_0.lg
  %ep1_0.row = add i32 %row_g, 16
  %ep1_0.in = icmp ult i32 %ep1_0.row, %q_len
  br i1 %ep1_0.in, label %ep1_0.store, label %ep1_0.done
ep1_0.store:
  %ep1_0.t0 = icmp eq i32 %t, 0
  br i1 %ep1_0.t0, label %ep1_0.store_m, label %ep1_0.store_o
ep1_0.store_m:
  %ep1_0.mi = add i32 %stat_row0, %ep1_0.row
  %ep1_0.mi64 = zext i32 %ep1_0.mi to i64
  %ep1_0.mp = getelementptr float, ptr addrspace(1) %M, i64 %ep1_0.mi64
  store float %ep1_0.lse, ptr addrspace(1) %ep1_0.mp, align 4
  br label %ep1_0.store_o
ep1_0.store_o:
  %ep1_0.row64 = zext i32 %ep1_0.row to i64
  %ep1_0.ro = mul i64 %ep1_0.row64, %stride_om
  %ep1_0.t64 = zext i32 %t2 to i64
  %ep1_0.ro2 = add i64 %ep1_0.ro, %ep1_0.t64
  %ep1_0.op = getelementptr bfloat, ptr addrspace(1) %o_base, i64 %ep1_0.ro2
  %ep1_0.o0.x = fmul float %kv.in.acc1_0.0, %ep1_0.inv
  %ep1_0.o0.y = fmul float %kv.in.acc1_0.1, %ep1_0.inv

  %ep1_0.o0.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep1_0.o0.y, float %ep1_0.o0.x)
  %ep1_0.o0 = bitcast <2 x bfloat> %ep1_0.o0.h to i32
  %ep1_0.op0 = getelementptr bfloat, ptr addrspace(1) %ep1_0.op, i64 0
  store i32 %ep1_0.o0, ptr addrspace(1) %ep1_0.op0, align 4
  %ep1_0.o1.x = fmul float %kv.in.acc1_1.0, %ep1_0.inv
  %ep1_0.o1.y = fmul float %kv.in.acc1_1.1, %ep1_0.inv

  %ep1_0.o1.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep1_0.o1.y, float %ep1_0.o1.x)
  %ep1_0.o1 = bitcast <2 x bfloat> %ep1_0.o1.h to i32
  %ep1_0.op1 = getelementptr bfloat, ptr addrspace(1) %ep1_0.op, i64 8
  store i32 %ep1_0.o1, ptr addrspace(1) %ep1_0.op1, align 4
  %ep1_0.o2.x = fmul float %kv.in.acc1_2.0, %ep1_0.inv
  %ep1_0.o2.y = fmul float %kv.in.acc1_2.1, %ep1_0.inv

  %ep1_0.o2.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep1_0.o2.y, float %ep1_0.o2.x)
  %ep1_0.o2 = bitcast <2 x bfloat> %ep1_0.o2.h to i32
  %ep1_0.op2 = getelementptr bfloat, ptr addrspace(1) %ep1_0.op, i64 16
  store i32 %ep1_0.o2, ptr addrspace(1) %ep1_0.op2, align 4
  %ep1_0.o3.x = fmul float %kv.in.acc1_3.0, %ep1_0.inv
  %ep1_0.o3.y = fmul float %kv.in.acc1_3.1, %ep1_0.inv

  %ep1_0.o3.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep1_0.o3.y, float %ep1_0.o3.x)
  %ep1_0.o3 = bitcast <2 x bfloat> %ep1_0.o3.h to i32
  %ep1_0.op3 = getelementptr bfloat, ptr addrspace(1) %ep1_0.op, i64 24
  store i32 %ep1_0.o3, ptr addrspace(1) %ep1_0.op3, align 4
  %ep1_0.o4.x = fmul float %kv.in.acc1_4.0, %ep1_0.inv
  %ep1_0.o4.y = fmul float %kv.in.acc1_4.1, %ep1_0.inv

  %ep1_0.o4.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep1_0.o4.y, float %ep1_0.o4.x)
  %ep1_0.o4 = bitcast <2 x bfloat> %ep1_0.o4.h to i32
  %ep1_0.op4 = getelementptr bfloat, ptr addrspace(1) %ep1_0.op, i64 32
  store i32 %ep1_0.o4, ptr addrspace(1) %ep1_0.op4, align 4
  %ep1_0.o5.x = fmul float %kv.in.acc1_5.0, %ep1_0.inv
  %ep1_0.o5.y = fmul float %kv.in.acc1_5.1, %ep1_0.inv

  %ep1_0.o5.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep1_0.o5.y, float %ep1_0.o5.x)
  %ep1_0.o5 = bitcast <2 x bfloat> %ep1_0.o5.h to i32
  %ep1_0.op5 = getelementptr bfloat, ptr addrspace(1) %ep1_0.op, i64 40
  store i32 %ep1_0.o5, ptr addrspace(1) %ep1_0.op5, align 4
  %ep1_0.o6.x = fmul float %kv.in.acc1_6.0, %ep1_0.inv
  %ep1_0.o6.y = fmul float %kv.in.acc1_6.1, %ep1_0.inv

  %ep1_0.o6.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep1_0.o6.y, float %ep1_0.o6.x)
  %ep1_0.o6 = bitcast <2 x bfloat> %ep1_0.o6.h to i32
  %ep1_0.op6 = getelementptr bfloat, ptr addrspace(1) %ep1_0.op, i64 48
  store i32 %ep1_0.o6, ptr addrspace(1) %ep1_0.op6, align 4
  %ep1_0.o7.x = fmul float %kv.in.acc1_7.0, %ep1_0.inv
  %ep1_0.o7.y = fmul float %kv.in.acc1_7.1, %ep1_0.inv

  %ep1_0.o7.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep1_0.o7.y, float %ep1_0.o7.x)
  %ep1_0.o7 = bitcast <2 x bfloat> %ep1_0.o7.h to i32
  %ep1_0.op7 = getelementptr bfloat, ptr addrspace(1) %ep1_0.op, i64 56
  store i32 %ep1_0.o7, ptr addrspace(1) %ep1_0.op7, align 4
  br label %ep1_0.done
ep1_0.done:
%ep1_1.l.x1 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %kv.in.l1_1, i32 1, i32 31)
  %ep1_1.l.s1 = fadd float %kv.in.l1_1, %ep1_1.l.x1
  %ep1_1.l.x2 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %ep1_1.l.s1, i32 2, i32 31)
  %ep1_1.l = fadd float %ep1_1.l.s1, %ep1_1.l.x2
  %ep1_1.inv = fdiv float 1.0, %ep1_1.l
  %ep1_1.lg = call float @llvm.nvvm.lg2.approx.f(float %ep1_1.l)
  %ep1_1.lse = fadd float %kv.in.m1_1, %ep1_1.lg
  %ep1_1.row = add i32 %row_g, 24
  %ep1_1.in = icmp ult i32 %ep1_1.row, %q_len
  br i1 %ep1_1.in, label %ep1_1.store, label %ep1_1.done
ep1_1.store:
  %ep1_1.t0 = icmp eq i32 %t, 0
  br i1 %ep1_1.t0, label %ep1_1.store_m, label %ep1_1.store_o
ep1_1.store_m:
  %ep1_1.mi = add i32 %stat_row0, %ep1_1.row
  %ep1_1.mi64 = zext i32 %ep1_1.mi to i64
  %ep1_1.mp = getelementptr float, ptr addrspace(1) %M, i64 %ep1_1.mi64
  store float %ep1_1.lse, ptr addrspace(1) %ep1_1.mp, align 4
  br label %ep1_1.store_o
ep1_1.store_o:
  %ep1_1.row64 = zext i32 %ep1_1.row to i64
  %ep1_1.ro = mul i64 %ep1_1.row64, %stride_om
  %ep1_1.t64 = zext i32 %t2 to i64
  %ep1_1.ro2 = add i64 %ep1_1.ro, %ep1_1.t64
  %ep1_1.op = getelementptr bfloat, ptr addrspace(1) %o_base, i64 %ep1_1.ro2
  %ep1_1.o0.x = fmul float %kv.in.acc1_0.2, %ep1_1.inv
  %ep1_1.o0.y = fmul float %kv.in.acc1_0.3, %ep1_1.inv

  %ep1_1.o0.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep1_1.o0.y, float %ep1_1.o0.x)
  %ep1_1.o0 = bitcast <2 x bfloat> %ep1_1.o0.h to i32
  %ep1_1.op0 = getelementptr bfloat, ptr addrspace(1) %ep1_1.op, i64 0
  store i32 %ep1_1.o0, ptr addrspace(1) %ep1_1.op0, align 4
  %ep1_1.o1.x = fmul float %kv.in.acc1_1.2, %ep1_1.inv
  %ep1_1.o1.y = fmul float %kv.in.acc1_1.3, %ep1_1.inv

  %ep1_1.o1.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep1_1.o1.y, float %ep1_1.o1.x)
  %ep1_1.o1 = bitcast <2 x bfloat> %ep1_1.o1.h to i32
  %ep1_1.op1 = getelementptr bfloat, ptr addrspace(1) %ep1_1.op, i64 8
  store i32 %ep1_1.o1, ptr addrspace(1) %ep1_1.op1, align 4
  %ep1_1.o2.x = fmul float %kv.in.acc1_2.2, %ep1_1.inv
  %ep1_1.o2.y = fmul float %kv.in.acc1_2.3, %ep1_1.inv

  %ep1_1.o2.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep1_1.o2.y, float %ep1_1.o2.x)
  %ep1_1.o2 = bitcast <2 x bfloat> %ep1_1.o2.h to i32
  %ep1_1.op2 = getelementptr bfloat, ptr addrspace(1) %ep1_1.op, i64 16
  store i32 %ep1_1.o2, ptr addrspace(1) %ep1_1.op2, align 4
  %ep1_1.o3.x = fmul float %kv.in.acc1_3.2, %ep1_1.inv
  %ep1_1.o3.y = fmul float %kv.in.acc1_3.3, %ep1_1.inv

  %ep1_1.o3.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep1_1.o3.y, float %ep1_1.o3.x)
  %ep1_1.o3 = bitcast <2 x bfloat> %ep1_1.o3.h to i32
  %ep1_1.op3 = getelementptr bfloat, ptr addrspace(1) %ep1_1.op, i64 24
  store i32 %ep1_1.o3, ptr addrspace(1) %ep1_1.op3, align 4
  %ep1_1.o4.x = fmul float %kv.in.acc1_4.2, %ep1_1.inv
  %ep1_1.o4.y = fmul float %kv.in.acc1_4.3, %ep1_1.inv

  %ep1_1.o4.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep1_1.o4.y, float %ep1_1.o4.x)
  %ep1_1.o4 = bitcast <2 x bfloat> %ep1_1.o4.h to i32
  %ep1_1.op4 = getelementptr bfloat, ptr addrspace(1) %ep1_1.op, i64 32
  store i32 %ep1_1.o4, ptr addrspace(1) %ep1_1.op4, align 4
  %ep1_1.o5.x = fmul float %kv.in.acc1_5.2, %ep1_1.inv
  %ep1_1.o5.y = fmul float %kv.in.acc1_5.3, %ep1_1.inv

  %ep1_1.o5.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep1_1.o5.y, float %ep1_1.o5.x)
  %ep1_1.o5 = bitcast <2 x bfloat> %ep1_1.o5.h to i32
  %ep1_1.op5 = getelementptr bfloat, ptr addrspace(1) %ep1_1.op, i64 40
  store i32 %ep1_1.o5, ptr addrspace(1) %ep1_1.op5, align 4
  %ep1_1.o6.x = fmul float %kv.in.acc1_6.2, %ep1_1.inv
  %ep1_1.o6.y = fmul float %kv.in.acc1_6.3, %ep1_1.inv

  %ep1_1.o6.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep1_1.o6.y, float %ep1_1.o6.x)
  %ep1_1.o6 = bitcast <2 x bfloat> %ep1_1.o6.h to i32
  %ep1_1.op6 = getelementptr bfloat, ptr addrspace(1) %ep1_1.op, i64 48
  store i32 %ep1_1.o6, ptr addrspace(1) %ep1_1.op6, align 4
  %ep1_1.o7.x = fmul float %kv.in.acc1_7.2, %ep1_1.inv
  %ep1_1.o7.y = fmul float %kv.in.acc1_7.3, %ep1_1.inv

  %ep1_1.o7.h = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ep1_1.o7.y, float %ep1_1.o7.x)
  %ep1_1.o7 = bitcast <2 x bfloat> %ep1_1.o7.h to i32
  %ep1_1.op7 = getelementptr bfloat, ptr addrspace(1) %ep1_1.op, i64 56
  store i32 %ep1_1.o7, ptr addrspace(1) %ep1_1.op7, align 4
  br label %ep1_1.done
ep1_1.done:
  ret void
}

; minctasm 1 (.minnctapersm 1): without it ptxas caps the small tiles' registers for occupancy (80-96 at
; HEAD_DIM 64 on 64-row tiles with BLOCK_N 16-32) and spills; the larger tiles are unaffected
!nvvm.annotations = !{!0, !1, !2}
!0 = !{ptr @fa2_fwd_bf16_d64_st1_bm128_bn64_w4_ns3_sm90a, !"kernel", i32 1}
!1 = !{ptr @fa2_fwd_bf16_d64_st1_bm128_bn64_w4_ns3_sm90a, !"maxntidx", i32 128}
!2 = !{ptr @fa2_fwd_bf16_d64_st1_bm128_bn64_w4_ns3_sm90a, !"minctasm", i32 1}
