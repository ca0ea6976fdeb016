"""Hand-written PTX kernels that exercise the runtime (driver loading, module
load, argument packing, dynamic shared memory) independently of the
compiler. Used by test_runtime.py (ptxas, CPU) and test_gpu_runtime.py."""

_HEADER = """.version 8.0
.target {target}
.address_size 64
"""

# out[i] = alpha * a[i] + b[i] for i < n. Params: ptr, ptr, ptr, u32, f32.
AXPY = """
.visible .entry axpy(
	.param .u64 axpy_a,
	.param .u64 axpy_b,
	.param .u64 axpy_out,
	.param .u32 axpy_n,
	.param .f32 axpy_alpha
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .f32 	%f<5>;
	.reg .b64 	%rd<11>;

	ld.param.u64 	%rd1, [axpy_a];
	ld.param.u64 	%rd2, [axpy_b];
	ld.param.u64 	%rd3, [axpy_out];
	ld.param.u32 	%r1, [axpy_n];
	ld.param.f32 	%f1, [axpy_alpha];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	setp.ge.u32 	%p1, %r5, %r1;
	@%p1 bra 	$L_done;
	cvta.to.global.u64 	%rd4, %rd1;
	cvta.to.global.u64 	%rd5, %rd2;
	cvta.to.global.u64 	%rd6, %rd3;
	mul.wide.u32 	%rd7, %r5, 4;
	add.s64 	%rd8, %rd4, %rd7;
	add.s64 	%rd9, %rd5, %rd7;
	add.s64 	%rd10, %rd6, %rd7;
	ld.global.f32 	%f2, [%rd8];
	ld.global.f32 	%f3, [%rd9];
	fma.rn.f32 	%f4, %f1, %f2, %f3;
	st.global.f32 	[%rd10], %f4;
$L_done:
	ret;
}
"""
AXPY_PARAMS = [("ptr", "a"), ("ptr", "b"), ("ptr", "out"), ("u32", "n"), ("fp32", "alpha")]

# Writes each scalar parameter to out (bytes): i32 @0, i64 @8, u32 @16, u64 @24,
# f32 @32, f64 @40, i1 (as u32) @48.
PACK = """
.visible .entry pack(
	.param .u64 pack_out,
	.param .u32 pack_a,
	.param .u64 pack_b,
	.param .u32 pack_c,
	.param .u64 pack_d,
	.param .f32 pack_e,
	.param .f64 pack_f,
	.param .u8 pack_g
)
{
	.reg .b16 	%rs<2>;
	.reg .b32 	%r<4>;
	.reg .f32 	%f<2>;
	.reg .f64 	%fd<2>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [pack_out];
	cvta.to.global.u64 	%rd2, %rd1;
	ld.param.u32 	%r1, [pack_a];
	st.global.u32 	[%rd2], %r1;
	ld.param.u64 	%rd3, [pack_b];
	st.global.u64 	[%rd2+8], %rd3;
	ld.param.u32 	%r2, [pack_c];
	st.global.u32 	[%rd2+16], %r2;
	ld.param.u64 	%rd4, [pack_d];
	st.global.u64 	[%rd2+24], %rd4;
	ld.param.f32 	%f1, [pack_e];
	st.global.f32 	[%rd2+32], %f1;
	ld.param.f64 	%fd1, [pack_f];
	st.global.f64 	[%rd2+40], %fd1;
	ld.param.u8 	%rs1, [pack_g];
	cvt.u32.u16 	%r3, %rs1;
	st.global.u32 	[%rd2+48], %r3;
	ret;
}
"""
PACK_PARAMS = [("ptr", "out"), ("i32", "a"), ("i64", "b"), ("u32", "c"), ("u64", "d"),
               ("fp32", "e"), ("fp64", "f"), ("i1", "g")]

# Dynamic shared memory: thread t writes t at byte nbytes - 4(t+1) of the
# dynamic region, then reads the word of thread ntid-1-t: out[t] = ntid-1-t.
# Touches the top of a region of `nbytes` bytes, so a launch with less
# dynamic shared memory than that faults.
SMEM_REVERSE = """
.extern .shared .align 16 .b8 smem[];

.visible .entry smem_reverse(
	.param .u64 smem_reverse_out,
	.param .u32 smem_reverse_nbytes
)
{
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [smem_reverse_out];
	ld.param.u32 	%r1, [smem_reverse_nbytes];
	mov.u32 	%r2, %tid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, smem;
	add.u32 	%r5, %r2, 1;
	shl.b32 	%r6, %r5, 2;
	sub.u32 	%r7, %r1, %r6;
	add.u32 	%r8, %r4, %r7;
	st.shared.u32 	[%r8], %r2;
	bar.sync 	0;
	sub.u32 	%r9, %r3, %r2;
	shl.b32 	%r10, %r9, 2;
	sub.u32 	%r11, %r1, %r10;
	add.u32 	%r12, %r4, %r11;
	ld.shared.u32 	%r13, [%r12];
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.u32 	%rd3, %r2, 4;
	add.s64 	%rd4, %rd2, %rd3;
	st.global.u32 	[%rd4], %r13;
	ret;
}
"""
SMEM_REVERSE_PARAMS = [("ptr", "out"), ("u32", "nbytes")]


# One TMA copy (sm_90a): thread 0 loads the box at (x, y) (innermost first) of the tensor map
# that follows the kernel's own parameters into shared memory (nbytes: the box's bytes), all
# threads copy it to out[0 : nbytes/4] as it lies there (swizzled or not), and thread 0 writes
# the hidden parameter `marker` (after the map) as 8 bytes at out + nbytes. 128 threads.
# TMA_FILL is the module global the compiler declares beside a kernel with tensor maps (the
# element the launcher maps a tensor without elements onto); TMA_TILE has it, TMA_TILE_BODY not.
TMA_FILL = """
.visible .global .align 16 .b8 tritium_tma_fill[32] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255};
"""
TMA_TILE_BODY = """
.visible .entry tma_tile(
	.param .u64 p_a,
	.param .u32 p_m,
	.param .u32 p_k,
	.param .u32 p_stride,
	.param .u64 p_out,
	.param .u32 p_x,
	.param .u32 p_y,
	.param .u32 p_bytes,
	.param .align 64 .b8 p_map[128],
	.param .u64 p_marker
)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<16>;
	.reg .f32 	%f<2>;
	.shared .align 1024 .b8 tile[2048];
	.shared .align 8 .b64 bar;

	mov.u32 	%r1, %tid.x;
	ld.param.u32 	%r2, [p_x];
	ld.param.u32 	%r3, [p_y];
	ld.param.u32 	%r6, [p_bytes];
	mov.u32 	%r4, bar;
	mov.u32 	%r5, tile;
	setp.ne.u32 	%p1, %r1, 0;
	@%p1 bra 	$L_issued;
	mov.u64 	%rd1, p_map;
	cvta.param.u64 	%rd2, %rd1;
	mbarrier.init.shared::cta.b64 	[%r4], 1;
	fence.proxy.async.shared::cta;
	mbarrier.arrive.expect_tx.shared::cta.b64 	_, [%r4], %r6;
	cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r5], [%rd2, {%r2, %r3}], [%r4];
$L_issued:
	bar.sync 	0;
$L_wait:
	mbarrier.try_wait.parity.shared::cta.b64 	%p2, [%r4], 0;
	@!%p2 bra 	$L_wait;
	ld.param.u64 	%rd3, [p_out];
	cvta.to.global.u64 	%rd4, %rd3;
	shr.u32 	%r7, %r6, 2;
	mov.u32 	%r8, %r1;
$L_copy:
	setp.ge.u32 	%p3, %r8, %r7;
	@%p3 bra 	$L_copied;
	shl.b32 	%r9, %r8, 2;
	add.u32 	%r10, %r5, %r9;
	ld.shared.f32 	%f1, [%r10];
	mul.wide.u32 	%rd5, %r8, 4;
	add.s64 	%rd6, %rd4, %rd5;
	st.global.f32 	[%rd6], %f1;
	add.u32 	%r8, %r8, 128;
	bra 	$L_copy;
$L_copied:
	@%p1 bra 	$L_done;
	ld.param.u64 	%rd7, [p_marker];
	cvt.u64.u32 	%rd8, %r6;
	add.s64 	%rd9, %rd4, %rd8;
	st.global.u64 	[%rd9], %rd7;
$L_done:
	ret;
}
"""
TMA_TILE = TMA_FILL + TMA_TILE_BODY
TMA_TILE_PARAMS = [("ptr", "a"), ("i32", "M"), ("i32", "K"), ("i32", "stride_am"), ("ptr", "out"),
                   ("i32", "x"), ("i32", "y"), ("u32", "nbytes"), ("u64", "marker")]

def ptx(body, target="sm_90a"):
    return _HEADER.format(target=target) + body
