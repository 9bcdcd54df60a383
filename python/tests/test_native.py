"""Tests that need neither a GPU nor torch (CI runs them on the built wheel in a fresh virtual environment):
the package imports, its version, and every check the native calls make before they reach a device, through
the same DLPack path torch's tensors take (capsules made with ctypes: fake_dlpack.py)."""

import importlib.metadata
import pathlib
import re

import pytest

import flashgen
from flashgen import _native
from fake_dlpack import (BF16, DL_CPU, DL_CUDA, DL_FLOAT, DL_INT, F16, F32, I32, FakeTensor, bnhd, forward_args, lse_for,
                         varlen_args)

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _driver_present():
    try:
        _native.device_info(0)
        return True
    except RuntimeError:
        return False


DRIVER = _driver_present()
# a call that passes every check goes on to the GPU: with fake addresses that must only happen where there is none
requires_no_driver = pytest.mark.skipif(DRIVER, reason="a CUDA device is present: fake addresses must not reach it")


def fwd(q, k, v, out, lse, **kw):
    return _native.forward(q, k, v, out, lse, **kw)


def bwd_args(b=2, n=128, h=4, d=64, dtype=BF16):
    q, k, v, out, lse = forward_args(b, n, h, d, dtype)
    size = b * n * h * d * 2
    dout, dq, dk, dv = (bnhd(b, n, h, d, dtype=dtype, addr=0x7E0000000000 + i * size) for i in range(4))
    return dict(dout=dout, q=q, k=k, v=v, out=out, lse=lse, dq=dq, dk=dk, dv=dv)


# --- the package -----------------------------------------------------------------------------------------------

def test_version_is_the_workspace_version():
    cargo = (ROOT / "Cargo.toml").read_text()
    workspace_version = re.search(r'^version\s*=\s*"([^"]+)"', cargo, re.M).group(1)
    assert flashgen.__version__ == workspace_version
    assert importlib.metadata.version("flashgen") == workspace_version


def test_import_needs_no_torch_and_torch_names_say_so():
    try:
        import torch  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs PyTorch"):
            flashgen.flash_attn_func
    else:
        assert callable(flashgen.flash_attn_func)
    with pytest.raises(AttributeError):
        flashgen.no_such_name


@pytest.mark.skipif(DRIVER, reason="a CUDA driver is present")
def test_without_a_driver_the_device_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="CUDA driver|libcuda"):
        flashgen.device_info(0)


# --- flash-attn's variant arguments ------------------------------------------------------------------------------

@pytest.mark.parametrize("kw, exc, text", [
    (dict(dropout_p=0.1), NotImplementedError, "no attention dropout"),
    (dict(dropout_p=1.5), ValueError, "probability"),
    (dict(dropout_p=float("nan")), ValueError, "probability"),
    (dict(window_size_left=-2), ValueError, "unbounded"),
    (dict(softcap=-1.0), ValueError, "softcap"),
    (dict(softcap=float("inf")), ValueError, "softcap"),
    (dict(softmax_scale=0.0), ValueError, "softmax_scale"),
    (dict(softmax_scale=-0.1), ValueError, "softmax_scale"),
    (dict(softmax_scale=float("inf")), ValueError, "softmax_scale"),
])
def test_variant_arguments_are_checked(kw, exc, text):
    with pytest.raises(exc, match=text):
        _native.check_arguments(**kw)
    # the forward itself refuses them first, before reading any tensor
    args = [object()] * 5
    with pytest.raises(exc, match=text):
        fwd(*args, **kw)


def test_defaults_and_causal_window_are_plain_attention():
    _native.check_arguments()
    _native.check_arguments(causal=True, window_size_left=-1, window_size_right=0)
    _native.check_arguments(softmax_scale=0.125)


@pytest.mark.parametrize("kw", [dict(window_size_left=128, window_size_right=0), dict(window_size_left=-1, window_size_right=0),
                                dict(window_size_left=64, window_size_right=64, causal=True), dict(softcap=30.0)])
def test_windows_and_softcap_are_taken(kw):
    # (their kernels are sm_90a's: the GPU tests run them)
    _native.check_arguments(**kw)


# --- tensors -----------------------------------------------------------------------------------------------------

def test_non_tensors_are_refused():
    q, k, v, out, lse = forward_args()
    with pytest.raises(ValueError, match="q: a list is not a tensor"):
        fwd([1.0], k, v, out, lse)


def test_cpu_tensors_are_refused():
    q, k, v, out, lse = forward_args(device=(DL_CPU, 0))
    with pytest.raises(ValueError, match=r"tensor q is on cpu: flashgen runs on CUDA tensors"):
        fwd(q, k, v, out, lse)
    q, k, v, out, lse = forward_args()
    k_cpu = bnhd(2, 128, 4, 64, device=(DL_CPU, 0), addr=0x7F1000000000)
    with pytest.raises(ValueError, match=r"tensor k is on cpu"):
        fwd(q, k_cpu, v, out, lse)


def test_tensors_on_two_gpus_are_refused():
    q, k, v, out, lse = forward_args()
    v1 = bnhd(2, 128, 4, 64, device=(DL_CUDA, 1), addr=0x7F2000000000)
    with pytest.raises(ValueError, match=r"tensor v is on cuda:1 but q is on cuda:0"):
        fwd(q, k, v1, out, lse)


@pytest.mark.parametrize("dtype, name", [(F32, "float32"), ((DL_FLOAT, 64), "float64"), ((DL_INT, 16), "int16")])
def test_wrong_dtypes_are_refused(dtype, name):
    q, k, v, out, lse = forward_args()
    bad = bnhd(2, 128, 4, 64, dtype=dtype, addr=0x7F3000000000)
    with pytest.raises(ValueError, match=f"tensor q is {name}: flashgen takes bfloat16 or float16"):
        fwd(bad, k, v, out, lse)
    with pytest.raises(ValueError, match=f"tensor k is {name} but q is bfloat16"):
        fwd(q, bad, v, out, lse)


def test_mixed_half_types_are_refused():
    q, k, v, out, lse = forward_args()
    v16 = bnhd(2, 128, 4, 64, dtype=F16, addr=0x7F3000000000)
    with pytest.raises(ValueError, match="tensor v is float16 but q is bfloat16"):
        fwd(q, k, v16, out, lse)


def test_vector_lanes_are_refused():
    q, k, v, out, lse = forward_args()
    bad = FakeTensor((2, 128, 4, 64), lanes=2)
    with pytest.raises(ValueError, match="bfloat16x2"):
        fwd(bad, k, v, out, lse)


def test_rank_is_checked():
    q, k, v, out, lse = forward_args()
    with pytest.raises(ValueError, match=r"tensor q has 3 dimensions.*expected 4"):
        fwd(FakeTensor((128, 4, 64)), k, v, out, lse)


def test_a_non_contiguous_head_dim_is_refused():
    q, k, v, out, lse = forward_args()
    # a (B, N, H, D) view whose head dim strides by 2, as x[..., ::2] of a D=128 tensor
    strided = bnhd(2, 128, 4, 64, strides=(128 * 4 * 128, 4 * 128, 128, 2))
    with pytest.raises(ValueError, match="tensor q: head-dim stride is 2: the head dim must be contiguous"):
        fwd(strided, k, v, out, lse)


def test_strides_must_be_whole_16_byte_chunks():
    q, k, v, out, lse = forward_args()
    odd = bnhd(2, 128, 4, 64, strides=(128 * 4 * 65, 4 * 65, 65, 1))
    with pytest.raises(ValueError, match="not a multiple of 8 elements"):
        fwd(odd, k, v, out, lse)


def test_negative_strides_are_refused():
    q, k, v, out, lse = forward_args()
    flipped = bnhd(2, 128, 4, 64, strides=(128 * 4 * 64, -4 * 64, 64, 1), addr=0x7F4000000000)
    with pytest.raises(ValueError, match="negative stride"):
        fwd(flipped, k, v, out, lse)


@pytest.mark.parametrize("offset", [2, 8, 14])
def test_a_misaligned_view_is_refused(offset):
    q, k, v, out, lse = forward_args()
    # a view one to seven elements into an allocation (x.view(-1)[1:].view(...)), as DLPack's byte_offset or a moved base
    for bad in (bnhd(2, 128, 4, 64, byte_offset=offset, addr=0x7F5000000000), bnhd(2, 128, 4, 64, addr=0x7F5000000000 + offset)):
        with pytest.raises(ValueError, match=f"tensor q: base address .* is not 16-byte aligned \\({offset} bytes past"):
            fwd(bad, k, v, out, lse)


def test_shapes_are_checked():
    q, k, v, out, lse = forward_args()
    with pytest.raises(ValueError, match="batch sizes differ"):
        fwd(q, bnhd(3, 128, 4, 64), v, out, lse)
    with pytest.raises(ValueError, match="q's head dim is 64 but k's is 128"):
        fwd(q, bnhd(2, 128, 4, 128), bnhd(2, 128, 4, 128), out, lse)
    with pytest.raises(ValueError, match="k and v share seqlen and heads"):
        fwd(q, k, bnhd(2, 64, 4, 64), out, lse)
    with pytest.raises(ValueError, match="tensor out has shape"):
        fwd(q, k, v, bnhd(2, 128, 8, 64), lse)
    with pytest.raises(ValueError, match="query heads must be a multiple"):
        fwd(bnhd(2, 128, 6, 64), bnhd(2, 128, 4, 64), bnhd(2, 128, 4, 64), out, lse)


def test_the_lse_is_checked():
    q, k, v, out, _ = forward_args()
    with pytest.raises(ValueError, match="softmax_lse is bfloat16: the log-sum-exp is float32"):
        fwd(q, k, v, out, lse_for(2, 128, 4, dtype=BF16))
    with pytest.raises(ValueError, match=r"softmax_lse has shape \[2, 128, 4\]: expected \(batch, heads, seqlen\)"):
        fwd(q, k, v, out, FakeTensor((2, 128, 4), dtype=F32))
    with pytest.raises(ValueError, match="must be contiguous"):
        fwd(q, k, v, out, lse_for(2, 128, 4, strides=(4 * 256, 256, 2)))


def test_a_value_head_dim_wider_than_qs_or_not_whole_chunks_is_refused():
    q, k, v, out, lse = forward_args()
    with pytest.raises(ValueError, match="v's head dim is 128 and q's 64: v's is q's, or narrower and a multiple of 8"):
        fwd(q, k, bnhd(2, 128, 4, 128), out, lse)
    with pytest.raises(ValueError, match="v's head dim is 36 and q's 64"):
        fwd(q, k, bnhd(2, 128, 4, 36), out, lse)


@requires_no_driver
def test_a_narrower_value_head_dim_passes_the_checks():
    # DeepSeek's 192/128: v, out, dout, dv 128 wide, q, k, dq, dk 192; the device is reached
    b, n, h = 2, 128, 4
    q, k = bnhd(b, n, h, 192, addr=0x7F0000000000), bnhd(b, n, h, 192, addr=0x7F2000000000)
    v, out = bnhd(b, n, h, 128, addr=0x7F3000000000), bnhd(b, n, h, 128, addr=0x7F1000000000)
    with pytest.raises(RuntimeError, match="libcuda"):
        fwd(q, k, v, out, lse_for(b, n, h, addr=0x7F4000000000), causal=True)
    grads = dict(dout=bnhd(b, n, h, 128, addr=0x7E0000000000), dq=bnhd(b, n, h, 192, addr=0x7E1000000000),
                 dk=bnhd(b, n, h, 192, addr=0x7E2000000000), dv=bnhd(b, n, h, 128, addr=0x7E3000000000))
    with pytest.raises(RuntimeError, match="libcuda"):
        _native.backward(q=q, k=k, v=v, out=out, lse=lse_for(b, n, h, addr=0x7F4000000000), causal=True, **grads)


def test_out_and_dout_take_vs_head_dim():
    b, n, h = 2, 128, 4
    q, k = bnhd(b, n, h, 192, addr=0x7F0000000000), bnhd(b, n, h, 192, addr=0x7F2000000000)
    v, lse = bnhd(b, n, h, 128, addr=0x7F3000000000), lse_for(b, n, h, addr=0x7F4000000000)
    with pytest.raises(ValueError, match="tensor out has shape .* v's head_dim is 128: out is shaped like q with v's head_dim"):
        fwd(q, k, v, bnhd(b, n, h, 192, addr=0x7F1000000000), lse)
    grads = dict(dout=bnhd(b, n, h, 192, addr=0x7E0000000000), dq=bnhd(b, n, h, 192, addr=0x7E1000000000),
                 dk=bnhd(b, n, h, 192, addr=0x7E2000000000), dv=bnhd(b, n, h, 128, addr=0x7E3000000000))
    with pytest.raises(ValueError, match="tensor dout has shape .*: dout is shaped like q with v's head_dim"):
        _native.backward(q=q, k=k, v=v, out=bnhd(b, n, h, 128, addr=0x7F1000000000), lse=lse, **grads)


@requires_no_driver
@pytest.mark.parametrize("h, h_kv, n_kv", [(8, 2, 128), (8, 1, 128), (4, 4, 300), (4, 4, 50), (8, 2, 77)],
                         ids=["gqa", "mqa", "longer-keys", "shorter-keys", "gqa-other-lengths"])
def test_grouped_heads_and_unequal_lengths_pass_the_checks(h, h_kv, n_kv):
    # GQA/MQA (fewer K/V heads) and N_q != N_kv are the runtime's now: no NotImplementedError, the device is reached
    b, n, d = 2, 128, 64
    q, out = bnhd(b, n, h, d, addr=0x7F0000000000), bnhd(b, n, h, d, addr=0x7F1000000000)
    k, v = bnhd(b, n_kv, h_kv, d, addr=0x7F2000000000), bnhd(b, n_kv, h_kv, d, addr=0x7F3000000000)
    with pytest.raises(RuntimeError, match="libcuda"):
        fwd(q, k, v, out, lse_for(b, n, h, addr=0x7F4000000000), causal=True)
    grads = dict(dout=bnhd(b, n, h, d, addr=0x7E0000000000), dq=bnhd(b, n, h, d, addr=0x7E1000000000),
                 dk=bnhd(b, n_kv, h_kv, d, addr=0x7E2000000000), dv=bnhd(b, n_kv, h_kv, d, addr=0x7E3000000000))
    with pytest.raises(RuntimeError, match="libcuda"):
        _native.backward(q=q, k=k, v=v, out=out, lse=lse_for(b, n, h, addr=0x7F4000000000), causal=True, **grads)


def test_grouped_heads_keep_their_shape_rules():
    b, n, d = 2, 128, 64
    q, out, lse = bnhd(b, n, 8, d), bnhd(b, n, 8, d, addr=0x7F1000000000), lse_for(b, n, 8, addr=0x7F2000000000)
    with pytest.raises(ValueError, match="q has 8 heads, k and v 3: the query heads must be a multiple"):
        fwd(q, bnhd(b, n, 3, d), bnhd(b, n, 3, d), out, lse)
    with pytest.raises(ValueError, match="k and v share seqlen and heads"):
        fwd(q, bnhd(b, n, 2, d), bnhd(b, n, 4, d), out, lse)
    with pytest.raises(ValueError, match="k and v share seqlen and heads"):
        fwd(q, bnhd(b, 300, 2, d), bnhd(b, 200, 2, d), out, lse)
    # out and the lse follow q (H heads, N_q rows); dk and dv follow k and v
    with pytest.raises(ValueError, match="tensor out has shape"):
        fwd(q, bnhd(b, 300, 2, d), bnhd(b, 300, 2, d), bnhd(b, 300, 8, d), lse)
    with pytest.raises(ValueError, match=r"softmax_lse has shape \[2, 2, 128\]"):
        fwd(q, bnhd(b, n, 2, d), bnhd(b, n, 2, d), out, lse_for(b, n, 2))
    a = bwd_args(b, n, 8, d)
    k2, v2 = bnhd(b, n, 2, d, addr=0x7D0000000000), bnhd(b, n, 2, d, addr=0x7D1000000000)
    with pytest.raises(ValueError, match="tensor dk has shape"):
        _native.backward(**{**a, "k": k2, "v": v2})  # dk still has 8 heads


def test_dlpack_versions_and_read_only_outputs():
    q, k, v, out, lse = forward_args()
    ro = FakeTensor((2, 128, 4, 64), versioned=True, read_only=True, addr=0x7F6000000000)
    with pytest.raises(ValueError, match="tensor out is read-only"):
        fwd(q, k, v, ro, lse)
    future = FakeTensor((2, 128, 4, 64), versioned=True, version=(2, 0))
    with pytest.raises(ValueError, match="DLPack version 2.0 is not understood"):
        fwd(future, k, v, out, lse)
    used = FakeTensor((2, 128, 4, 64), capsule_name="used_dltensor")
    with pytest.raises(ValueError, match="is not a DLPack tensor"):
        fwd(used, k, v, out, lse)


def test_backward_checks_its_tensors():
    a = bwd_args()
    with pytest.raises(ValueError, match="tensor dout is float32 but q is bfloat16"):
        _native.backward(**{**a, "dout": bnhd(2, 128, 4, 64, dtype=F32)})
    with pytest.raises(ValueError, match="tensor dk has shape"):
        _native.backward(**{**a, "dk": bnhd(2, 64, 4, 64)})
    with pytest.raises(ValueError, match="tensor dq is on cpu"):
        _native.backward(**{**a, "dq": bnhd(2, 128, 4, 64, device=(DL_CPU, 0), addr=0x7F7000000000)})
    with pytest.raises(ValueError, match="tensor dv: base address"):
        _native.backward(**{**a, "dv": bnhd(2, 128, 4, 64, addr=0x7F7000000002)})


# --- calls that pass every check (they stop at the device: none here) ---------------------------------------------

@requires_no_driver
@pytest.mark.parametrize("dtype", [BF16, F16])
def test_a_well_formed_forward_reaches_the_device(dtype):
    with pytest.raises(RuntimeError, match="libcuda"):
        fwd(*forward_args(dtype=dtype), causal=True, softmax_scale=0.1)


@requires_no_driver
def test_a_packed_qkv_view_passes_the_checks():
    # qkv: (B, N, 3, H, D) contiguous; q, k, v = qkv.unbind(2): strides (N*3*H*D, 3*H*D, D, 1), K one H*D later
    b, n, h, d = 2, 128, 4, 64
    strides = (n * 3 * h * d, 3 * h * d, d, 1)
    base = 0x7F0000000000
    q, k, v = (bnhd(b, n, h, d, strides=strides, addr=base + i * h * d * 2) for i in range(3))
    out = bnhd(b, n, h, d, addr=0x7F1000000000)
    with pytest.raises(RuntimeError, match="libcuda"):
        fwd(q, k, v, out, lse_for(b, n, h, addr=0x7F2000000000))


@requires_no_driver
def test_a_size_one_dimension_may_have_any_stride():
    # torch calls a (1, N, H, D) tensor contiguous whatever stride its batch dim reports
    b, n, h, d = 1, 128, 4, 64
    q, k, v, out, lse = forward_args(b, n, h, d)
    q1 = bnhd(b, n, h, d, strides=(1, h * d, d, 1))
    with pytest.raises(RuntimeError, match="libcuda"):
        fwd(q1, k, v, out, lse)


@requires_no_driver
def test_a_well_formed_backward_reaches_the_device():
    with pytest.raises(RuntimeError, match="libcuda"):
        _native.backward(**bwd_args(), causal=True, deterministic=True)


# --- packed variable-length sequences (flash_attn_varlen_func's native calls) --------------------------------------

def vfwd(a, **kw):
    return _native.forward(a["q"], a["k"], a["v"], a["out"], a["lse"], cu_seqlens_q=a["cu_q"], cu_seqlens_k=a["cu_k"],
                           max_seqlen_q=a["max_q"], max_seqlen_k=a["max_k"], **kw)


def vbwd(a, **kw):
    return _native.backward(a["dout"], a["q"], a["k"], a["v"], a["out"], a["lse"], a["dq"], a["dk"], a["dv"],
                            cu_seqlens_q=a["cu_q"], cu_seqlens_k=a["cu_k"], max_seqlen_q=a["max_q"], max_seqlen_k=a["max_k"], **kw)


@pytest.mark.parametrize("name", ["cu_q", "cu_k"])
@pytest.mark.parametrize("dtype, text", [((DL_INT, 64), "int64"), (F32, "float32"), ((DL_INT, 16), "int16")])
def test_varlen_offsets_are_int32(name, dtype, text):
    a = varlen_args()
    a[name] = FakeTensor(a[name].shape, dtype=dtype, addr=0x7C0000000000)
    tensor = "cu_seqlens_q" if name == "cu_q" else "cu_seqlens_k"
    with pytest.raises(ValueError, match=f"tensor {tensor} is {text}: the cumulative sequence lengths are int32"):
        vfwd(a)
    with pytest.raises(ValueError, match=f"tensor {tensor} is {text}"):
        vbwd(a)


def test_varlen_offsets_of_both_are_batch_plus_one():
    a = varlen_args()
    a["cu_k"] = FakeTensor((5,), dtype=I32, addr=0x7C0000000000)
    with pytest.raises(ValueError, match="cu_seqlens_q has 4 offsets but cu_seqlens_k 5: both hold batch \\+ 1"):
        vfwd(a)
    with pytest.raises(ValueError, match="cu_seqlens_q has 4 offsets but cu_seqlens_k 5"):
        vbwd(a)
    a = varlen_args()
    a["cu_q"] = FakeTensor((0,), dtype=I32, addr=0x7C0000000000)
    with pytest.raises(ValueError, match="tensor cu_seqlens_q is empty"):
        vfwd(a)
    a = varlen_args()
    a["cu_q"] = FakeTensor((2, 2), dtype=I32, addr=0x7C0000000000)
    with pytest.raises(ValueError, match=r"tensor cu_seqlens_q has 2 dimensions.*expected 1"):
        vfwd(a)
    a = varlen_args()
    a["cu_k"] = FakeTensor((4,), dtype=I32, strides=(2,), addr=0x7C0000000000)
    with pytest.raises(ValueError, match="tensor cu_seqlens_k has stride 2: the offsets must be contiguous"):
        vfwd(a)
    a = varlen_args()
    a["cu_k"] = FakeTensor((4,), dtype=I32, addr=0x7C0000000002)
    with pytest.raises(ValueError, match="tensor cu_seqlens_k: base address .* 4-byte aligned"):
        vfwd(a)


def test_varlen_offsets_come_in_pairs_and_the_longest_lengths_are_positive():
    a = varlen_args()
    with pytest.raises(ValueError, match="cu_seqlens_q and cu_seqlens_k come together"):
        _native.forward(a["q"], a["k"], a["v"], a["out"], a["lse"], cu_seqlens_q=a["cu_q"], max_seqlen_q=10, max_seqlen_k=10)
    for kw, text in [(dict(max_q=0), "max_seqlen_q=0"), (dict(max_k=-3), "max_seqlen_k=-3")]:
        with pytest.raises(ValueError, match=f"{text}: the longest sequence's length, a positive int"):
            vfwd({**a, **kw})


def test_varlen_tensors_are_packed():
    a = varlen_args()
    # a 2-D q (a missing head dimension), a (B, N, H, D) q: packed sequences are (total_tokens, heads, head_dim)
    with pytest.raises(ValueError, match=r"tensor q has 2 dimensions.*expected 3, \(total_tokens, heads, head_dim\)"):
        vfwd({**a, "q": FakeTensor((300, 256))})
    with pytest.raises(ValueError, match=r"tensor q has 4 dimensions.*expected 3"):
        vfwd({**a, "q": bnhd(1, 300, 4, 64)})
    with pytest.raises(ValueError, match=r"tensor k has 2 dimensions"):
        vbwd({**a, "k": FakeTensor((500, 128))})
    # the lse is (heads, total_q)
    with pytest.raises(ValueError, match=r"softmax_lse has 3 dimensions.*expected 2, \(heads, total_q\)"):
        vfwd({**a, "lse": lse_for(1, 300, 4)})
    with pytest.raises(ValueError, match=r"softmax_lse has shape \[300, 4\]: expected \(heads, total_q\)"):
        vfwd({**a, "lse": FakeTensor((300, 4), dtype=F32)})
    # shapes: out like q; k and v alike; heads a multiple
    with pytest.raises(ValueError, match="tensor out has shape"):
        vfwd({**a, "out": FakeTensor((299, 4, 64))})
    with pytest.raises(ValueError, match="k and v share seqlen and heads"):
        vfwd({**a, "v": FakeTensor((400, 2, 64))})
    with pytest.raises(ValueError, match="query heads must be a multiple"):
        vfwd({**a, "k": FakeTensor((500, 3, 64)), "v": FakeTensor((500, 3, 64))})
    with pytest.raises(ValueError, match="tensor dv has shape"):
        vbwd({**a, "dv": FakeTensor((500, 2, 64))})


def test_varlen_cpu_tensors_are_refused():
    a = varlen_args()
    a["cu_q"] = FakeTensor((4,), dtype=I32, device=(DL_CPU, 0), addr=0x7C0000000000)
    with pytest.raises(ValueError, match="tensor cu_seqlens_q is on cpu: flashgen runs on CUDA tensors"):
        vfwd(a)
    with pytest.raises(ValueError, match="tensor cu_seqlens_q is on cpu"):
        vbwd(a)
    a = varlen_args(device=(DL_CPU, 0))
    with pytest.raises(ValueError, match="tensor q is on cpu"):
        vfwd(a)
    a = varlen_args()
    a["cu_k"] = FakeTensor((4,), dtype=I32, device=(DL_CUDA, 1), addr=0x7C0000000000)
    with pytest.raises(ValueError, match="tensor cu_seqlens_k is on cuda:1 but q is on cuda:0"):
        vfwd(a)


@requires_no_driver
@pytest.mark.parametrize("h_kv", [4, 2, 1])
def test_a_well_formed_varlen_call_reaches_the_device(h_kv):
    a = varlen_args(h_kv=h_kv)
    with pytest.raises(RuntimeError, match="libcuda"):
        vfwd(a, causal=True)
    with pytest.raises(RuntimeError, match="libcuda"):
        vbwd(a, causal=True, deterministic=True)


@requires_no_driver
def test_a_packed_qkv_view_of_sequences_passes_the_checks():
    # qkv: (total, 3, H, D) contiguous; q, k, v = qkv.unbind(1): strides (3*H*D, D, 1); a single token is fine too
    for total in (300, 1):
        h, d = 4, 64
        q, k, v = (FakeTensor((total, h, d), strides=(3 * h * d, d, 1), addr=0x7F0000000000 + i * h * d * 2) for i in range(3))
        a = varlen_args()
        a.update(q=q, k=k, v=v, out=FakeTensor((total, h, d), addr=0x7F1000000000),
                 lse=FakeTensor((h, total), dtype=F32, addr=0x7F2000000000))
        with pytest.raises(RuntimeError, match="libcuda"):
            vfwd(a)


# --- decoding against a KV cache (_native.kvcache, flash_attn_with_kvcache) -----------------------------------

def kvcache_args(b=2, nq=1, h=8, h_kv=2, d=128, capacity=1024, n_new=1, paged=None, dtype=BF16, device=(DL_CUDA, 0)):
    """A well-formed decode call: q, out (B, N_q, H, D); k_cache, v_cache (B, capacity, H_kv, D) or with
    paged=(pages, page_size, max_pages) a pool (pages, page_size, H_kv, D) and a block table; k, v new tokens
    (B, N_new, H_kv, D); cache_seqlens int32 (B,); the lse (B, H, N_q)."""
    base, step = 0x7F0000000000, 1 << 32
    at = lambda i: base + i * step
    a = dict(q=bnhd(b, nq, h, d, dtype=dtype, device=device, addr=at(0)), out=bnhd(b, nq, h, d, dtype=dtype, device=device, addr=at(1)))
    if paged is None:
        cache = (b, capacity, h_kv, d)
    else:
        pages, page_size, max_pages = paged
        cache = (pages, page_size, h_kv, d)
        a["block_table"] = FakeTensor((b, max_pages), dtype=I32, device=device, addr=at(2))
    a["k_cache"], a["v_cache"] = (FakeTensor(cache, dtype=dtype, device=device, addr=at(3 + i)) for i in range(2))
    if n_new:
        a["k_new"], a["v_new"] = (bnhd(b, n_new, h_kv, d, dtype=dtype, device=device, addr=at(5 + i)) for i in range(2))
    a["cache_seqlens"] = FakeTensor((b,), dtype=I32, device=device, addr=at(7))
    a["lse"] = lse_for(b, nq, h, device=device, addr=at(8))
    return a


def kvc(a, **kw):
    a = dict(a)
    return _native.kvcache(a.pop("q"), a.pop("k_cache"), a.pop("v_cache"), a.pop("cache_seqlens"), a.pop("out"), **a, **kw)


@requires_no_driver
@pytest.mark.parametrize("paged", [None, (64, 256, 8)], ids=["contiguous", "paged"])
def test_a_well_formed_decode_reaches_the_device(paged):
    with pytest.raises(RuntimeError, match="libcuda"):
        kvc(kvcache_args(paged=paged), causal=True, num_splits=4, host_cache_seqlens=[5, 9])
    a = kvcache_args(paged=paged, n_new=0)
    del a["lse"]
    with pytest.raises(RuntimeError, match="libcuda"):
        kvc(a)


@pytest.mark.parametrize("change, message", [
    (dict(cache_seqlens=FakeTensor((2,), dtype=F32)), "cache_seqlens is float32: it must be int32"),
    (dict(cache_seqlens=FakeTensor((3,), dtype=I32)), "cache_seqlens holds 3 lengths but q has batch 2"),
    (dict(cache_seqlens=FakeTensor((4,), dtype=I32, strides=(2,))), "cache_seqlens has strides"),
    (dict(cache_seqlens=FakeTensor((2,), dtype=I32, addr=0x7F0000000002)), "not 4-byte aligned"),
    (dict(block_table=FakeTensor((3, 8), dtype=I32)), "block_table has 3 rows but q has batch 2"),
    (dict(block_table=FakeTensor((2, 8), dtype=F32)), "block_table is float32"),
    (dict(lse=FakeTensor((2, 8, 2), dtype=F32)), "softmax_lse has shape"),
    (dict(out=bnhd(2, 2, 8, 128)), "out has shape"),
    (dict(v_cache=FakeTensor((2, 1024, 2, 128), dtype=F16)), "all must share one dtype"),
    (dict(cache_seqlens=FakeTensor((2,), dtype=I32, device=(DL_CPU, 0))), "cache_seqlens is on cpu"),
    (dict(k_cache=FakeTensor((2, 1024, 2, 128), device=(DL_CUDA, 1))), "k_cache is on cuda:1"),
])
def test_decode_arguments_are_checked_before_the_device(change, message):
    a = kvcache_args()
    a.update(change)
    with pytest.raises(ValueError, match=re.escape(message)):
        kvc(a)


@requires_no_driver
def test_decode_windows_and_softcap_pass_the_checks():
    # Mistral's and Gemma 2's decode: a window and softcap reach the device; a bad cap does not
    a = kvcache_args()
    with pytest.raises(RuntimeError, match="libcuda"):
        kvc(a, window_size_left=128, window_size_right=0)
    with pytest.raises(RuntimeError, match="libcuda"):
        kvc(a, softcap=30.0, causal=True)
    with pytest.raises(ValueError, match="softcap"):
        kvc(a, softcap=float("nan"))


def test_decode_refuses_what_the_runtime_lacks_and_half_the_new_tokens():
    a = kvcache_args()
    with pytest.raises(NotImplementedError, match="alibi"):
        kvc(a, alibi_slopes=FakeTensor((8,), dtype=F32))
    with pytest.raises(ValueError, match="num_splits=-1"):
        kvc(a, num_splits=-1)
    with pytest.raises(ValueError, match="host_cache_seqlens holds 3 lengths"):
        kvc(a, host_cache_seqlens=[1, 2, 3])
    del a["v_new"]
    with pytest.raises(ValueError, match="k and v .* come together"):
        kvc(a)
