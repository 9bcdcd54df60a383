"""Tests that need neither a GPU nor torch (CI runs them on the built wheel in a fresh virtual environment):
the package imports, its version, and every check the native calls make before they reach a device, through
the same DLPack path torch's tensors take (capsules made with ctypes: fake_dlpack.py)."""

import importlib.metadata
import pathlib
import re

import pytest

import flashgen
from flashgen import _native
from fake_dlpack import BF16, DL_CPU, DL_CUDA, DL_FLOAT, DL_INT, F16, F32, FakeTensor, bnhd, forward_args, lse_for

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
    (dict(window_size_left=128, window_size_right=0), NotImplementedError, "sliding-window"),
    (dict(window_size_left=-1, window_size_right=0), NotImplementedError, "sliding-window"),  # not causal: a window
    (dict(window_size_left=-2), ValueError, "unbounded"),
    (dict(softcap=30.0), NotImplementedError, "soft-capping"),
    (dict(softcap=-1.0), ValueError, "softcap"),
    (dict(alibi_slopes=object()), NotImplementedError, "ALiBi"),
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


def test_features_not_built_yet_are_not_implemented_errors():
    q, k, v, out, lse = forward_args()
    with pytest.raises(NotImplementedError, match="GQA/MQA"):
        fwd(bnhd(2, 128, 8, 64), k, v, bnhd(2, 128, 8, 64), lse_for(2, 128, 8))
    with pytest.raises(NotImplementedError, match="unequal lengths"):
        fwd(q, bnhd(2, 256, 4, 64), bnhd(2, 256, 4, 64), out, lse)
    with pytest.raises(NotImplementedError, match="v's head dim 128 differs"):
        fwd(q, k, bnhd(2, 128, 4, 128), out, lse)


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
