//! M (base-2 log-sum-exp, what the kernel writes) -> LSE in natural log: one multiply by ln 2 per row.
//! A fixed, hand-written PTX kernel, so the prebuilt path needs no LLVM for it either.

/// `flashgen_scale_f32(src, dst, factor, n)`: dst[i] = src[i] · factor for i < n; 256 threads per block.
pub const SCALE_PTX: &str = r#"//
// flashgen: dst[i] = src[i] * factor (M base 2 -> LSE natural log)
//
.version 7.0
.target sm_80
.address_size 64

.visible .entry flashgen_scale_f32(
	.param .u64 src,
	.param .u64 dst,
	.param .f32 factor,
	.param .u32 n
)
.maxntid 256, 1, 1
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .f32 	%f<3>;
	.reg .b64 	%rd<7>;

	ld.param.u64 	%rd1, [src];
	ld.param.u64 	%rd2, [dst];
	ld.param.f32 	%f1, [factor];
	ld.param.u32 	%r1, [n];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	setp.ge.u32 	%p1, %r5, %r1;
	@%p1 bra 	$L_done;
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mul.wide.u32 	%rd5, %r5, 4;
	add.s64 	%rd6, %rd3, %rd5;
	ld.global.f32 	%f2, [%rd6];
	mul.rn.f32 	%f2, %f2, %f1;
	add.s64 	%rd6, %rd4, %rd5;
	st.global.f32 	[%rd6], %f2;
$L_done:
	ret;
}
"#;

pub const SCALE_ENTRY: &str = "flashgen_scale_f32";
pub const SCALE_THREADS: u32 = 256;
