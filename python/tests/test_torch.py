"""flash_attn_func and flash_attn_varlen_func on torch tensors. The `torch_only` tests need torch but no GPU; the
`gpu` tests run on the H200 (FLASHGEN_REQUIRE_GPU=1 makes a missing GPU a failure there). References: torch's
SDPA in float64, and for GQA, unequal lengths and packed sequences attention by its definition (attention_ref:
K/V heads repeated, the causal mask bottom-right) in float64; the tolerance is flash-attn's own rule,
error(ours) <= k * error(the same reference in the half type) + atol, both against the float64 result."""

import threading

import pytest

# (with FLASHGEN_REQUIRE_GPU=1, conftest.py fails the session first where torch is missing)
torch = pytest.importorskip("torch", reason="torch is not installed")
import torch.nn.functional as F  # noqa: E402

import flashgen  # noqa: E402
from flashgen import _torch as ft  # noqa: E402
from flashgen import flash_attn_func, flash_attn_varlen_func  # noqa: E402

DTYPES = [torch.bfloat16, torch.float16]


def sdpa(q, k, v, causal, scale, dtype):
    """torch's attention in `dtype`, in and out in (B, N, H, D)."""
    qt, kt, vt = (x.transpose(1, 2).to(dtype) for x in (q, k, v))
    return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, scale=scale).transpose(1, 2)


def lse_reference(q, k, causal, scale):
    s = torch.einsum("bnhd,bmhd->bhnm", q.double(), k.double()) * scale
    if causal:
        n, m = s.shape[-2:]
        s = s.masked_fill(torch.ones(n, m, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return torch.logsumexp(s, dim=-1)


def max_err(x, ref):
    return (x.double() - ref.double()).abs().max().item()


def inputs(b, n, h, d, dtype, device, grad=False, seed=0):
    g = torch.Generator(device=device).manual_seed(seed)
    q, k, v = (torch.randn(b, n, h, d, dtype=dtype, device=device, generator=g) for _ in range(3))
    if grad:
        for x in (q, k, v):
            x.requires_grad_()
    return q, k, v


def check_against_sdpa(q, k, v, out, causal, scale, dout=None, grads=None, fwd_k=2.0, bwd_k=2.5, atol=2e-3):
    """out (and grads = (dq, dk, dv) of out·dout) against SDPA in float64, with SDPA in q's dtype as the yardstick."""
    leaves64 = [x.detach().double().requires_grad_() for x in (q, k, v)]
    leaves_lp = [x.detach().clone().requires_grad_() for x in (q, k, v)]
    ref = sdpa(*leaves64, causal, scale, torch.float64)
    base = sdpa(*leaves_lp, causal, scale, q.dtype)
    e_ours, e_torch = max_err(out, ref), max_err(base, ref)
    assert e_ours <= fwd_k * e_torch + atol, f"out: error {e_ours:.2e}, SDPA {q.dtype}'s {e_torch:.2e}"
    if grads is None:
        return
    ref.backward(dout.double())
    base.backward(dout)
    for name, g, r, b_ in zip(("dq", "dk", "dv"), grads, leaves64, leaves_lp):
        e_ours, e_torch = max_err(g, r.grad), max_err(b_.grad, r.grad)
        assert e_ours <= bwd_k * e_torch + atol, f"{name}: error {e_ours:.2e}, SDPA {q.dtype}'s {e_torch:.2e}"


def attention_ref(q, k, v, causal, scale, dtype, window_size=(-1, -1), softcap=0.0, bias=None, keep=None):
    """Attention by its definition in `dtype`, (B, N_q, H, D) with k, v (B, N_kv, H_kv, D): K/V heads repeated for GQA
    (query head h reads K/V head h // (H // H_kv)), the causal mask aligned bottom-right (query i sees key j iff
    j <= i + N_kv - N_q), a row that sees no key giving 0. window_size (left, right): keys i + N_kv - N_q - left ..=
    i + N_kv - N_q + right (-1 unbounded); softcap > 0: s = cap · tanh(s / cap) on the scaled scores; then bias(i, j)
    added ((B|1, H, N_q, N_kv) in float64) and keep(i, j) (bool, broadcastable) ANDed with the mask. Returns out
    (B, N_q, H, D) and the natural-log LSE (B, H, N_q), -inf for rows without keys. In a half type it is
    flash-attn's own yardstick (attention_ref with upcast=False)."""
    group = q.shape[2] // k.shape[2]
    qd = q.to(dtype)
    kd, vd = (x.to(dtype).repeat_interleave(group, dim=2) for x in (k, v))
    s = torch.einsum("bnhd,bmhd->bhnm", qd, kd) * scale
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
    if bias is not None:
        s = s + bias.to(s.dtype)
    n, m = s.shape[-2:]
    i = torch.arange(n, device=s.device)[:, None]
    j = torch.arange(m, device=s.device)[None, :]
    visible = (j <= i + (m - n)) if causal else torch.ones(n, m, dtype=torch.bool, device=s.device)
    left, right = window_size
    if left >= 0:
        visible = visible & (j >= i + (m - n) - left)
    if right >= 0:
        visible = visible & (j <= i + (m - n) + right)
    if keep is not None:
        visible = visible & keep
    s = s.masked_fill(~visible, float("-inf"))
    lse = torch.logsumexp(s.double(), dim=-1)
    has_key = visible.any(-1)[:, None]
    p = torch.softmax(s.masked_fill(~has_key, 0.0), dim=-1) * has_key  # rows without keys: 0, and no NaN in the backward
    return torch.einsum("bhnm,bmhd->bnhd", p.to(dtype), vd), lse


def varlen_ref(q, k, v, cu_q, cu_k, causal, scale, dtype):
    """attention_ref of each packed sequence (cu_q, cu_k: host lists): out (total_q, H, D), LSE (H, total_q)."""
    outs, lses = [], []
    for b in range(len(cu_q) - 1):
        qs, ks, vs = q[cu_q[b]:cu_q[b + 1]], k[cu_k[b]:cu_k[b + 1]], v[cu_k[b]:cu_k[b + 1]]
        o, lse = attention_ref(qs[None], ks[None], vs[None], causal, scale, dtype)
        outs.append(o[0])
        lses.append(lse[0])
    return torch.cat(outs), torch.cat(lses, dim=1)


def check_against(ref, q, k, v, out, dout=None, grads=None, fwd_k=2.0, bwd_k=2.5, atol=2e-3):
    """out (and grads = (dq, dk, dv) of out·dout) against ref(q, k, v, dtype) in float64, with ref in q's dtype as
    the yardstick (flash-attn's rule), as check_against_sdpa."""
    leaves64 = [x.detach().double().requires_grad_() for x in (q, k, v)]
    leaves_lp = [x.detach().clone().requires_grad_() for x in (q, k, v)]
    r64, r_lp = ref(*leaves64, torch.float64), ref(*leaves_lp, q.dtype)
    e_ours, e_ref = max_err(out, r64), max_err(r_lp, r64)
    assert e_ours <= fwd_k * e_ref + atol, f"out: error {e_ours:.2e}, the {q.dtype} reference's {e_ref:.2e}"
    if grads is None:
        return
    r64.backward(dout.double())
    r_lp.backward(dout)
    for name, g, r, b_ in zip(("dq", "dk", "dv"), grads, leaves64, leaves_lp):
        assert g.shape == r.shape, f"{name}: shape {tuple(g.shape)}, expected {tuple(r.shape)}"
        e_ours, e_ref = max_err(g, r.grad), max_err(b_.grad, r.grad)
        assert e_ours <= bwd_k * e_ref + atol, f"{name}: error {e_ours:.2e}, the {q.dtype} reference's {e_ref:.2e}"


def check_lse(lse, ref):
    """The natural-log LSE against the float64 one: -inf exactly where a row sees no key, close elsewhere."""
    assert lse.shape == ref.shape and lse.dtype == torch.float32
    empty = torch.isinf(ref)
    assert torch.equal(torch.isneginf(lse), empty), "rows without keys: the LSE is -inf there and only there"
    assert max_err(lse[~empty], ref[~empty]) < 2e-3


# --- torch, no GPU needed ----------------------------------------------------------------------------------------

def test_cpu_tensors_are_a_value_error(torch_only):
    q = torch.randn(2, 128, 4, 64, dtype=torch.bfloat16, requires_grad=True)
    with pytest.raises(ValueError, match="tensor q is on cpu: flashgen runs on CUDA tensors"):
        flash_attn_func(q, q, q)


def test_flash_attn_arguments_are_checked_before_any_tensor(torch_only):
    q = torch.randn(2, 128, 4, 64, dtype=torch.bfloat16)
    with pytest.raises(NotImplementedError, match="no attention dropout"):
        flash_attn_func(q, q, q, dropout_p=0.1)
    with pytest.raises(NotImplementedError, match="return_attn_probs"):
        flash_attn_func(q, q, q, return_attn_probs=True)
    # windows and softcap are taken (sm_90a's kernels): a CPU tensor is then the error
    with pytest.raises(ValueError, match="tensor q is on cpu"):
        flash_attn_func(q, q, q, window_size=(64, 64), softcap=50.0)
    # ALiBi and the modifiers are taken too; bad expressions and tensors are value errors before the device check
    with pytest.raises(ValueError, match="tensor q is on cpu"):
        flash_attn_func(q, q, q, alibi_slopes=torch.ones(4))
    with pytest.raises(ValueError, match="tensor q is on cpu"):
        flash_attn_func(q, q, q, score_mod="score + slope[h]", mask_mod="kv_idx <= q_idx", mod_tensors={"slope": torch.ones(4)})
    with pytest.raises(ValueError, match="unknown"):
        flash_attn_func(q, q, q, score_mod="score + nope")
    with pytest.raises(ValueError, match="neither modifier reads it"):
        flash_attn_func(q, q, q, mask_mod="kv_idx <= q_idx", mod_tensors={"slope": torch.ones(4)})
    with pytest.raises(ValueError, match="float32 or torch.int32"):
        flash_attn_func(q, q, q, score_mod="score * w[h]", mod_tensors={"w": torch.ones(4, dtype=torch.float64)})
    with pytest.raises(ValueError, match="divisor"):
        flash_attn_func(q, q, q, score_mod="score / (kv_idx - q_idx)")
    with pytest.raises(TypeError, match="k is a list"):
        flash_attn_func(q, [1.0], q)
    with pytest.raises(ValueError, match=r"q has shape \(128, 4, 64\): expected 4 dimensions"):
        flash_attn_func(q[0], q, q)
    cu = torch.tensor([0, 128], dtype=torch.int32)
    with pytest.raises(NotImplementedError, match="no attention dropout"):
        flash_attn_varlen_func(q[0], q[0], q[0], cu, cu, 128, 128, dropout_p=0.5)
    with pytest.raises(NotImplementedError, match="return_attn_probs"):
        flash_attn_varlen_func(q[0], q[0], q[0], cu, cu, 128, 128, return_attn_probs=True)
    with pytest.raises(NotImplementedError, match="block_table"):
        flash_attn_varlen_func(q[0], q[0], q[0], cu, cu, 128, 128, block_table=cu)
    with pytest.raises(ValueError, match=r"q has shape \(2, 128, 4, 64\): expected 3 dimensions \(total_tokens"):
        flash_attn_varlen_func(q, q[0], q[0], cu, cu, 128, 128)
    with pytest.raises(TypeError, match="cu_seqlens_k is a list"):
        flash_attn_varlen_func(q[0], q[0], q[0], cu, [0, 128], 128, 128)


def test_varlen_arguments_on_cpu_tensors(torch_only):
    """Every check of the packed-sequence arguments runs on CPU tensors: the offsets' dtype and lengths first,
    the device last."""
    q = torch.randn(300, 4, 64, dtype=torch.bfloat16, requires_grad=True)
    kv = torch.randn(500, 2, 64, dtype=torch.bfloat16)
    cu_q, cu_k = torch.tensor([0, 100, 100, 300], dtype=torch.int32), torch.tensor([0, 200, 250, 500], dtype=torch.int32)
    with pytest.raises(ValueError, match="tensor cu_seqlens_q is int64: the cumulative sequence lengths are int32"):
        flash_attn_varlen_func(q, kv, kv, cu_q.long(), cu_k, 200, 250)
    with pytest.raises(ValueError, match="cu_seqlens_q has 4 offsets but cu_seqlens_k 3"):
        flash_attn_varlen_func(q, kv, kv, cu_q, cu_k[:3], 200, 250)
    with pytest.raises(ValueError, match="max_seqlen_k=0"):
        flash_attn_varlen_func(q, kv, kv, cu_q, cu_k, 200, 0)
    with pytest.raises(ValueError, match="query heads must be a multiple"):
        flash_attn_varlen_func(q, kv[:, :1].expand(500, 3, 64), kv[:, :1].expand(500, 3, 64), cu_q, cu_k, 200, 250)
    with pytest.raises(ValueError, match="tensor q is on cpu: flashgen runs on CUDA tensors"):
        flash_attn_varlen_func(q, kv, kv, cu_q, cu_k, 200, 250, causal=True)


def test_grouped_heads_and_other_lengths_are_not_refused(torch_only):
    """GQA/MQA and seqlen_q != seqlen_k pass every check now: only the CPU device stops them; heads that are not a
    multiple stay a ValueError."""
    q = torch.randn(2, 100, 8, 64, dtype=torch.bfloat16)
    for h_kv, n_kv in ((2, 100), (1, 100), (8, 300), (2, 37)):
        kv = torch.randn(2, n_kv, h_kv, 64, dtype=torch.bfloat16)
        with pytest.raises(ValueError, match="tensor q is on cpu"):
            flash_attn_func(q, kv, kv, causal=True)
    kv = torch.randn(2, 100, 3, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="q has 8 heads, k and v 3: the query heads must be a multiple"):
        flash_attn_func(q, kv, kv)


def test_the_custom_op_has_shapes_for_tracing(torch_only):
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        q = torch.empty(2, 100, 4, 64, dtype=torch.bfloat16)
        out, lse = torch.ops.flashgen.fwd(q, q, q, 0.125, True, -1, -1, 0.0, None, False)
        assert out.shape == q.shape and out.dtype == q.dtype and out.is_contiguous()
        assert lse.shape == (2, 4, 100) and lse.dtype == torch.float32
        dq, dk, dv = torch.ops.flashgen.bwd(out, q, q, q, out, lse, 0.125, True, -1, -1, 0.0, None, False)
        assert dq.shape == dk.shape == dv.shape == q.shape
        # GQA: dk, dv like k, v
        kv = torch.empty(2, 300, 2, 64, dtype=torch.bfloat16)
        out, lse = torch.ops.flashgen.fwd(q, kv, kv, 0.125, True, -1, -1, 0.0, None, False)
        assert out.shape == q.shape and lse.shape == (2, 4, 100)
        dq, dk, dv = torch.ops.flashgen.bwd(out, q, kv, kv, out, lse, 0.125, True, -1, -1, 0.0, None, False)
        assert dq.shape == q.shape and dk.shape == dv.shape == kv.shape
        # packed sequences: the lse is (heads, total_q)
        qp, kvp = torch.empty(700, 8, 64, dtype=torch.bfloat16), torch.empty(900, 2, 64, dtype=torch.bfloat16)
        cu = torch.empty(4, dtype=torch.int32)
        out, lse = torch.ops.flashgen.fwd(qp, kvp, kvp, 0.125, True, -1, -1, 0.0, None, False, cu, cu, 400, 500)
        assert out.shape == qp.shape and lse.shape == (8, 700) and lse.dtype == torch.float32
        dq, dk, dv = torch.ops.flashgen.bwd(out, qp, kvp, kvp, out, lse, 0.125, True, -1, -1, 0.0, None, False, cu, cu, 400, 500)
        assert dq.shape == qp.shape and dk.shape == dv.shape == kvp.shape


def test_torch_compile_traces_through_the_op(torch_only):
    """fullgraph=True fails at tracing on any graph break; running the traced graph then reaches the native
    call, which refuses the CPU tensors: the op, not a fallback, is what the graph calls."""
    torch._dynamo.reset()

    def attn(q, k, v):
        return flash_attn_func(q, k, v, causal=True) * 2

    compiled = torch.compile(attn, backend="aot_eager", fullgraph=True)
    q = torch.randn(1, 64, 2, 64, dtype=torch.bfloat16, requires_grad=True)
    with pytest.raises(ValueError, match="tensor q is on cpu"):
        compiled(q, q, q)


def test_torch_compile_traces_through_the_varlen_op(torch_only):
    torch._dynamo.reset()

    def attn(q, k, v, cu_q, cu_k):
        return flash_attn_varlen_func(q, k, v, cu_q, cu_k, 64, 64, causal=True) * 2

    compiled = torch.compile(attn, backend="aot_eager", fullgraph=True)
    q = torch.randn(100, 4, 64, dtype=torch.bfloat16, requires_grad=True)
    kv = torch.randn(100, 2, 64, dtype=torch.bfloat16, requires_grad=True)
    cu = torch.tensor([0, 64, 100], dtype=torch.int32)
    with pytest.raises(ValueError, match="tensor q is on cpu"):
        compiled(q, kv, kv, cu, cu)


# --- on the GPU ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("d", [32, 64, 96, 128, 192, 256])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("n", [128, 1000, 1536])
def test_forward_and_backward_match_sdpa(gpu, dtype, d, causal, n):
    b, h = 2, 3
    q, k, v = inputs(b, n, h, d, dtype, gpu, grad=True, seed=n + d)
    out = flash_attn_func(q, k, v, causal=causal)
    assert out.shape == q.shape and out.dtype == dtype and out.is_contiguous()
    dout = torch.randn_like(out)
    out.backward(dout)
    check_against_sdpa(q, k, v, out.detach(), causal, d ** -0.5, dout, (q.grad, k.grad, v.grad))


@pytest.mark.parametrize("dtype", DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_a_narrower_v_forward_and_backward_match_sdpa(gpu, dtype, causal):
    # DeepSeek's 192/128: out as wide as v, dv like v
    b, n, h = 2, 777, 3
    g = torch.Generator(device=gpu).manual_seed(192)
    q, k = (torch.randn(b, n, h, 192, dtype=dtype, device=gpu, generator=g, requires_grad=True) for _ in range(2))
    v = torch.randn(b, n, h, 128, dtype=dtype, device=gpu, generator=g, requires_grad=True)
    out = flash_attn_func(q, k, v, causal=causal)
    assert out.shape == (b, n, h, 128) and out.is_contiguous()
    dout = torch.randn_like(out)
    out.backward(dout)
    assert v.grad.shape == v.shape and q.grad.shape == q.shape
    check_against_sdpa(q, k, v, out.detach(), causal, 192 ** -0.5, dout, (q.grad, k.grad, v.grad))


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_lse_and_softmax_scale(gpu, causal):
    q, k, v = inputs(2, 333, 4, 64, torch.bfloat16, gpu)
    scale = 0.3
    out, lse = flash_attn_func(q, k, v, softmax_scale=scale, causal=causal, return_lse=True)
    assert lse.shape == (2, 4, 333) and lse.dtype == torch.float32
    assert max_err(lse, lse_reference(q, k, causal, scale)) < 2e-3
    check_against_sdpa(q, k, v, out, causal, scale)


@pytest.mark.parametrize("dtype", DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("h_kv", [2, 1], ids=["gqa", "mqa"])
def test_grouped_heads_forward_and_backward(gpu, dtype, causal, h_kv):
    b, n, h, d = 2, 333, 8, 64 if h_kv == 2 else 128
    g = torch.Generator(device=gpu).manual_seed(h_kv)
    q = torch.randn(b, n, h, d, dtype=dtype, device=gpu, generator=g, requires_grad=True)
    k, v = (torch.randn(b, n, h_kv, d, dtype=dtype, device=gpu, generator=g, requires_grad=True) for _ in range(2))
    out, lse = flash_attn_func(q, k, v, causal=causal, return_lse=True)
    assert out.shape == q.shape and lse.shape == (b, h, n)
    dout = torch.randn_like(out)
    out.backward(dout)
    assert k.grad.shape == k.shape and v.grad.shape == v.shape
    ref = lambda q_, k_, v_, t: attention_ref(q_, k_, v_, causal, d ** -0.5, t)[0]  # noqa: E731
    check_against(ref, q, k, v, out.detach(), dout, (q.grad, k.grad, v.grad))
    check_lse(lse, attention_ref(q.detach(), k.detach(), v.detach(), causal, d ** -0.5, torch.float64)[1])


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("n_q, n_kv, h_kv", [(128, 384, 4), (384, 128, 2), (1, 200, 1), (200, 37, 4)],
                         ids=["more-keys", "more-queries-gqa", "one-query-mqa", "few-keys"])
def test_unequal_lengths_forward_and_backward(gpu, causal, n_q, n_kv, h_kv):
    """causal: bottom-right, as flash-attn 2 (with more queries than keys the first rows see no key: out 0, LSE -inf)."""
    b, h, d = 2, 4, 64
    g = torch.Generator(device=gpu).manual_seed(n_q + n_kv)
    q = torch.randn(b, n_q, h, d, dtype=torch.bfloat16, device=gpu, generator=g, requires_grad=True)
    k, v = (torch.randn(b, n_kv, h_kv, d, dtype=torch.bfloat16, device=gpu, generator=g, requires_grad=True) for _ in range(2))
    out, lse = flash_attn_func(q, k, v, causal=causal, return_lse=True)
    assert out.shape == q.shape and lse.shape == (b, h, n_q)
    dout = torch.randn_like(out)
    out.backward(dout)
    ref = lambda q_, k_, v_, t: attention_ref(q_, k_, v_, causal, d ** -0.5, t)[0]  # noqa: E731
    check_against(ref, q, k, v, out.detach(), dout, (q.grad, k.grad, v.grad))
    check_lse(lse, attention_ref(q.detach(), k.detach(), v.detach(), causal, d ** -0.5, torch.float64)[1])
    if causal and n_q > n_kv:
        assert torch.all(out[:, :n_q - n_kv] == 0)


@pytest.mark.parametrize("window_size, causal", [((64, 0), True), ((100, -1), False), ((-1, 50), False), ((32, 32), False), ((-1, -1), True)],
                         ids=["left64-causal", "left100", "right50", "both32", "none-causal"])
@pytest.mark.parametrize("softcap", [0.0, 5.0], ids=["nocap", "cap5"])
@pytest.mark.parametrize("n_q, n_kv", [(1000, 1000), (300, 700), (700, 300)], ids=["equal", "more-keys", "more-queries"])
def test_windows_and_softcap_forward_and_backward(gpu, window_size, causal, softcap, n_q, n_kv):
    """Sliding windows and softcap (sm_90a's fwd_ws and wgmma backward, the mma.sync kernels elsewhere) against the
    definition in float64."""
    if window_size == (-1, -1) and softcap == 0.0:
        pytest.skip("plain causal attention: the other tests")
    b, h, h_kv, d = 2, 4, 2, 128
    g = torch.Generator(device=gpu).manual_seed(n_q * 7 + n_kv)
    q = torch.randn(b, n_q, h, d, dtype=torch.bfloat16, device=gpu, generator=g, requires_grad=True)
    k, v = (torch.randn(b, n_kv, h_kv, d, dtype=torch.bfloat16, device=gpu, generator=g, requires_grad=True) for _ in range(2))
    out, lse = flash_attn_func(q, k, v, causal=causal, window_size=window_size, softcap=softcap, return_lse=True)
    dout = torch.randn_like(out)
    out.backward(dout)
    ref = lambda q_, k_, v_, t: attention_ref(q_, k_, v_, causal, d ** -0.5, t, window_size, softcap)[0]  # noqa: E731
    check_against(ref, q, k, v, out.detach(), dout, (q.grad, k.grad, v.grad))
    x = (q.detach(), k.detach(), v.detach())
    check_lse(lse, attention_ref(*x, causal, d ** -0.5, torch.float64, window_size, softcap)[1])
    with torch.no_grad():
        assert torch.equal(flash_attn_func(*x, causal=causal, window_size=window_size, softcap=softcap), out.detach())


# sequence lengths of the packed batches: equal query and key lengths (self-attention), and other key lengths
# (cross-attention: longer, shorter, none); an empty sequence in each
VARLEN_BATCHES = {
    "self": ([130, 0, 77, 256, 1], [130, 0, 77, 256, 1]),
    "cross": ([130, 0, 77, 300, 64], [200, 40, 77, 128, 0]),
}


def packed_inputs(lens_q, lens_k, h, h_kv, d, dtype, device, seed=0):
    cu = lambda lens: [0] + torch.tensor(lens).cumsum(0).tolist()  # noqa: E731
    cu_q, cu_k = cu(lens_q), cu(lens_k)
    g = torch.Generator(device=device).manual_seed(seed)
    q = torch.randn(cu_q[-1], h, d, dtype=dtype, device=device, generator=g, requires_grad=True)
    k, v = (torch.randn(cu_k[-1], h_kv, d, dtype=dtype, device=device, generator=g, requires_grad=True) for _ in range(2))
    return q, k, v, cu_q, cu_k


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("h_kv", [4, 1], ids=["mha", "mqa"])
@pytest.mark.parametrize("batch", list(VARLEN_BATCHES))
def test_varlen_forward_and_backward(gpu, batch, h_kv, causal):
    lens_q, lens_k = VARLEN_BATCHES[batch]
    h, d = 4, 64 if h_kv == 4 else 128
    dtype = torch.bfloat16 if causal else torch.float16
    q, k, v, cu_q, cu_k = packed_inputs(lens_q, lens_k, h, h_kv, d, dtype, gpu, seed=len(batch) + h_kv)
    cu_q_dev, cu_k_dev = (torch.tensor(c, dtype=torch.int32, device=gpu) for c in (cu_q, cu_k))
    out, lse = flash_attn_varlen_func(q, k, v, cu_q_dev, cu_k_dev, max(lens_q), max(lens_k), causal=causal, return_lse=True)
    assert out.shape == q.shape and out.dtype == dtype and lse.shape == (h, q.shape[0])
    dout = torch.randn_like(out)
    out.backward(dout)
    assert k.grad.shape == k.shape and v.grad.shape == v.shape
    ref = lambda q_, k_, v_, t: varlen_ref(q_, k_, v_, cu_q, cu_k, causal, d ** -0.5, t)[0]  # noqa: E731
    check_against(ref, q, k, v, out.detach(), dout, (q.grad, k.grad, v.grad))
    check_lse(lse, varlen_ref(q.detach(), k.detach(), v.detach(), cu_q, cu_k, causal, d ** -0.5, torch.float64)[1])
    # each sequence alone through flash_attn_func (batch 1) gives the same numbers, but for rounding
    for b_ in range(len(lens_q)):
        if lens_q[b_] == 0:
            continue
        qs, ks, vs = (x.detach()[c[b_]:c[b_ + 1]][None] for x, c in ((q, cu_q), (k, cu_k), (v, cu_k)))
        if ks.shape[1] == 0:
            assert torch.all(out[cu_q[b_]:cu_q[b_ + 1]] == 0)
            continue
        alone = flash_attn_func(qs, ks, vs, causal=causal)[0]
        assert max_err(alone, out.detach()[cu_q[b_]:cu_q[b_ + 1]]) < 2e-2


def test_varlen_with_a_packed_qkv_view_and_softmax_scale(gpu):
    lens = [300, 17, 0, 512]
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32, device=gpu)
    total, h, d = sum(lens), 4, 128
    qkv = torch.randn(total, 3, h, d, dtype=torch.bfloat16, device=gpu, requires_grad=True)
    q, k, v = qkv.unbind(1)
    out = flash_attn_varlen_func(q, k, v, cu, cu, max(lens), max(lens), softmax_scale=0.07, causal=True)
    dout = torch.randn_like(out)
    out.backward(dout)
    ref = lambda q_, k_, v_, t: varlen_ref(q_, k_, v_, cu.tolist(), cu.tolist(), True, 0.07, t)[0]  # noqa: E731
    check_against(ref, q, k, v, out.detach(), dout, qkv.grad.unbind(1))


def test_opcheck_of_grouped_and_packed_calls(gpu):
    q, k, v, cu_q, cu_k = packed_inputs([64, 0, 100], [80, 10, 100], 4, 2, 64, torch.bfloat16, gpu)
    cu_q, cu_k = (torch.tensor(c, dtype=torch.int32, device=gpu) for c in (cu_q, cu_k))
    torch.library.opcheck(torch.ops.flashgen.fwd.default, (q, k, v, 0.125, True, -1, -1, 0.0, None, False, cu_q, cu_k, 100, 100))
    qb = torch.randn(2, 100, 4, 64, dtype=torch.bfloat16, device=gpu, requires_grad=True)
    kb = torch.randn(2, 150, 1, 64, dtype=torch.bfloat16, device=gpu, requires_grad=True)
    torch.library.opcheck(torch.ops.flashgen.fwd.default, (qb, kb, kb, 0.125, True, -1, -1, 0.0, None, False))


def test_packed_qkv_views_need_no_copies(gpu):
    b, n, h, d = 2, 512, 4, 128
    qkv = torch.randn(b, n, 3, h, d, dtype=torch.bfloat16, device=gpu, requires_grad=True)
    q, k, v = qkv.unbind(2)  # strides (n*3*h*d, 3*h*d, d, 1), k one head block after q
    assert q.stride() == (n * 3 * h * d, 3 * h * d, d, 1) and k.data_ptr() - q.data_ptr() == h * d * 2
    out = flash_attn_func(q, k, v, causal=True)
    dout = torch.randn_like(out)
    out.backward(dout)
    g = qkv.grad.unbind(2)
    check_against_sdpa(q, k, v, out.detach(), True, d ** -0.5, dout, g)
    # the numbers of contiguous copies (a layout TMA cannot describe runs the same tiles on cp.async loads:
    # equal but for rounding; a view read wrong would be off by O(1))
    qc, kc, vc = (x.detach().contiguous() for x in (q, k, v))
    assert max_err(flash_attn_func(qc, kc, vc, causal=True), out.detach()) < 1e-2


def test_bhnd_memory_seen_as_bnhd(gpu):
    # (B, H, N, D) memory, transposed to flash-attn's layout: N and H strides swapped
    q, k, v = (torch.randn(2, 4, 300, 64, dtype=torch.float16, device=gpu).transpose(1, 2) for _ in range(3))
    out = flash_attn_func(q, k, v)
    check_against_sdpa(q, k, v, out, False, 64 ** -0.5)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_inference_without_the_lse_gives_the_same_output(gpu, causal):
    # no grad and no return_lse: the statistics go to the runtime's scratch instead of a tensor of the call's
    # (B, H, N, D) memory, B 2, H 4, N 333, seen as (B, N, H, D): out must still come back contiguous
    q, k, v = (x.transpose(1, 2) for x in inputs(2, 4, 333, 64, torch.bfloat16, gpu, seed=3))
    with_lse, _ = flash_attn_func(q, k, v, causal=causal, return_lse=True)
    with torch.no_grad():
        small = flash_attn_func(q[:, :50], k[:, :50], v[:, :50], causal=causal)  # a smaller call first: the scratch grows
        out = flash_attn_func(q, k, v, causal=causal)
    assert out.is_contiguous() and small.is_contiguous()
    assert torch.equal(out, with_lse)
    check_against_sdpa(q[:, :50], k[:, :50], v[:, :50], small, causal, 64 ** -0.5)


def test_runs_on_the_current_stream(gpu):
    q, k, v = inputs(1, 1024, 8, 64, torch.bfloat16, gpu, seed=1)
    q2 = torch.randn_like(q)
    expected = flash_attn_func(q2, k, v)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)  # ~25 ms of GPU time on `side` before the copy
        q.copy_(q2)
        out = flash_attn_func(q, k, v)  # only right if queued after the copy, on `side`
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    assert torch.equal(out, expected)


def test_bad_inputs_are_exceptions_and_the_gpu_lives_on(gpu):
    b, n, h, d = 1, 256, 2, 64
    q, k, v = inputs(b, n, h, d, torch.bfloat16, gpu)
    flat = torch.randn(b * n * h * d + 8, dtype=torch.bfloat16, device=gpu)
    misaligned = flat[1:1 + b * n * h * d].view(b, n, h, d)
    with pytest.raises(ValueError, match="tensor q: base address .* is not 16-byte aligned"):
        flash_attn_func(misaligned, k, v)
    with pytest.raises(ValueError, match="tensor q is float32"):
        flash_attn_func(q.float(), k, v)
    with pytest.raises(ValueError, match="tensor k is float16 but q is bfloat16"):
        flash_attn_func(q, k.half(), v)
    with pytest.raises(ValueError, match="head-dim stride"):
        wide = torch.randn(b, n, h, 2 * d, dtype=torch.bfloat16, device=gpu)
        flash_attn_func(wide[..., ::2], k, v)
    with pytest.raises(ValueError, match="tensor v is on cpu"):
        flash_attn_func(q, k, v.cpu())
    with pytest.raises(ValueError, match="no kernels for head dim 80"):
        x = torch.randn(b, n, h, 80, dtype=torch.bfloat16, device=gpu)
        flash_attn_func(x, x, x)
    with pytest.raises(ValueError, match="query heads must be a multiple"):
        flash_attn_func(torch.randn(b, n, 3, d, dtype=torch.bfloat16, device=gpu), k, v)
    cu = torch.tensor([0, n], dtype=torch.int32, device=gpu)
    with pytest.raises(ValueError, match="tensor cu_seqlens_k is int64"):
        flash_attn_varlen_func(q[0], k[0], v[0], cu, cu.long(), n, n)
    with pytest.raises(ValueError, match="tensor cu_seqlens_q is on cpu"):
        flash_attn_varlen_func(q[0], k[0], v[0], cu.cpu(), cu, n, n)
    if torch.cuda.device_count() > 1:
        with pytest.raises(ValueError, match="on cuda:1 but q is on cuda:0"):
            flash_attn_func(q, k.to("cuda:1"), v)
    # nothing above reached a kernel: the context is healthy and the next call is right
    out = flash_attn_func(q, k, v)
    torch.cuda.synchronize()
    check_against_sdpa(q, k, v, out, False, d ** -0.5)


def test_empty_batch(gpu):
    q = torch.empty(0, 128, 4, 64, dtype=torch.bfloat16, device=gpu)
    out, lse = flash_attn_func(q, q, q, return_lse=True)
    assert out.shape == q.shape and lse.shape == (0, 4, 128)


def test_the_backward_is_deterministic(gpu):
    q, k, v = inputs(2, 2048, 4, 128, torch.bfloat16, gpu, grad=True)
    grads = []
    for _ in range(2):
        out = flash_attn_func(q, k, v, causal=True, deterministic=True)
        dq, dk, dv = torch.autograd.grad(out, (q, k, v), torch.ones_like(out))
        grads.append((dq, dk, dv))
    for a, b_ in zip(*grads):
        assert torch.equal(a, b_)


def test_threads_share_the_device(gpu):
    cases = [inputs(1, 512, 4, 64, torch.bfloat16, gpu, seed=s) for s in range(4)]
    expected = [flash_attn_func(*c) for c in cases]
    results, errors = [None] * 4, []

    def worker(i):
        try:
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                for _ in range(5):
                    results[i] = flash_attn_func(*cases[i])
            s.synchronize()
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not errors, errors
    for r, e in zip(results, expected):
        assert torch.equal(r, e)


def test_the_op_path_equals_the_eager_path(gpu):
    q, k, v = inputs(2, 256, 4, 64, torch.bfloat16, gpu)
    out_op, m_op = torch.ops.flashgen.fwd(q, k, v, 0.125, True, -1, -1, 0.0, None, False)  # m: base 2
    out, lse = flash_attn_func(q, k, v, causal=True, return_lse=True)  # no grad: the direct path
    assert torch.equal(out, out_op) and torch.equal(lse, m_op * ft.LN2)
    qg, kg, vg = (x.clone().requires_grad_() for x in (q, k, v))
    out_g, lse_g = flash_attn_func(qg, kg, vg, causal=True, return_lse=True)  # the autograd.Function
    assert torch.equal(out_g.detach(), out) and torch.equal(lse_g, lse) and out_g.requires_grad


def test_opcheck(gpu):
    q, k, v = inputs(1, 128, 2, 64, torch.bfloat16, gpu, grad=True)
    torch.library.opcheck(torch.ops.flashgen.fwd.default, (q, k, v, 0.125, True, -1, -1, 0.0, None, False))


class TinyAttention(torch.nn.Module):
    def __init__(self, dim, heads, attn):
        super().__init__()
        self.heads, self.attn = heads, attn
        self.qkv = torch.nn.Linear(dim, 3 * dim, bias=False)
        self.proj = torch.nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, n, dim = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, dim // self.heads).unbind(2)
        return x + self.proj(self.attn(q, k, v).reshape(b, n, dim))


def test_torch_compile_of_a_small_model(gpu):
    torch._dynamo.reset()
    torch.manual_seed(0)
    ours = TinyAttention(512, 8, lambda q, k, v: flash_attn_func(q, k, v, causal=True)).to(gpu, torch.bfloat16)
    ref = TinyAttention(512, 8, lambda q, k, v: sdpa(q, k, v, True, None, torch.float64).to(q.dtype)).to(gpu, torch.bfloat16)
    ref.load_state_dict(ours.state_dict())
    compiled = torch.compile(ours, fullgraph=True)  # fullgraph: a graph break is an error
    x = torch.randn(2, 256, 512, dtype=torch.bfloat16, device=gpu)
    y, y_ref = compiled(x), ref(x)
    assert max_err(y, y_ref) < 0.05
    y.float().square().mean().backward()
    y_ref.float().square().mean().backward()
    for (name, p), p_ref in zip(ours.named_parameters(), ref.parameters()):
        rel = max_err(p.grad, p_ref.grad) / p_ref.grad.abs().max().item()
        assert rel < 0.05, f"{name}: relative gradient error {rel:.3f}"


def test_device_info(gpu):
    info = flashgen.device_info(gpu.index)
    assert info["arch"].startswith("sm_") and info["sm_count"] > 0


def test_a_call_on_another_gpu_leaves_torchs_current_device(gpu):
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    q, k, v = inputs(1, 256, 2, 64, torch.bfloat16, torch.device("cuda", 1))
    with torch.cuda.device(0):
        out = flash_attn_func(q, k, v)
        assert torch.cuda.current_device() == 0 and out.device == q.device
        torch.cuda.synchronize(1)
    check_against_sdpa(q, k, v, out, False, 64 ** -0.5)


# --- ALiBi, score_mod and mask_mod (every GPU: fwd_ws and the wgmma pair on sm_90a, the mma.sync kernels elsewhere) ---


def _qkv(gpu, b, n_q, n_kv, h, h_kv, d, seed):
    g = torch.Generator(device=gpu).manual_seed(seed)
    q = torch.randn(b, n_q, h, d, dtype=torch.bfloat16, device=gpu, generator=g, requires_grad=True)
    k, v = (torch.randn(b, n_kv, h_kv, d, dtype=torch.bfloat16, device=gpu, generator=g, requires_grad=True) for _ in range(2))
    return q, k, v


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("n_q, n_kv", [(1000, 1000), (300, 700)], ids=["equal", "more-keys"])
def test_alibi_slopes_forward_and_backward(gpu, causal, n_q, n_kv):
    """flash-attn's alibi_slopes: -slope[h]·|i + N_kv - N_q - j| added to the scaled scores."""
    b, h, h_kv, d = 2, 8, 2, 128
    q, k, v = _qkv(gpu, b, n_q, n_kv, h, h_kv, d, n_q + n_kv)
    slopes = torch.tensor([2.0 ** (-8 * (i + 1) / h) for i in range(h)], dtype=torch.float32, device=gpu)
    out, lse = flash_attn_func(q, k, v, causal=causal, alibi_slopes=slopes, return_lse=True)
    dout = torch.randn_like(out)
    out.backward(dout)
    i = torch.arange(n_q, device=gpu)[:, None]
    j = torch.arange(n_kv, device=gpu)[None, :]
    bias = -slopes.double()[None, :, None, None] * (i + n_kv - n_q - j).abs().double()[None, None]
    ref = lambda q_, k_, v_, t: attention_ref(q_, k_, v_, causal, d ** -0.5, t, bias=bias)[0]  # noqa: E731
    check_against(ref, q, k, v, out.detach(), dout, (q.grad, k.grad, v.grad))
    check_lse(lse, attention_ref(q.detach(), k.detach(), v.detach(), causal, d ** -0.5, torch.float64, bias=bias)[1])


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_score_and_mask_mods_forward_and_backward(gpu, causal):
    """A score_mod with a per-head tensor, a mask_mod with a per-batch int tensor (block-causal documents of
    per-batch lengths), causal joining them, against the definition in float64; through torch.compile too."""
    b, n, h, h_kv, d = 2, 777, 4, 4, 64
    q, k, v = _qkv(gpu, b, n, n, h, h_kv, d, 11 + causal)
    slope = torch.tensor([0.5, 0.25, 0.125, 0.0625], dtype=torch.float32, device=gpu)
    doc_end = torch.tensor([500, 777], dtype=torch.int32, device=gpu)
    kw = dict(score_mod="score + slope[h] * (kv_idx - q_idx)", mask_mod="q_idx // 128 >= kv_idx // 128 && kv_idx < doc_end[b]",
              mod_tensors={"slope": slope, "doc_end": doc_end})
    out, lse = flash_attn_func(q, k, v, causal=causal, return_lse=True, **kw)
    dout = torch.randn_like(out)
    out.backward(dout)
    i = torch.arange(n, device=gpu)[:, None]
    j = torch.arange(n, device=gpu)[None, :]
    bias = slope.double()[None, :, None, None] * (j - i).double()[None, None]
    keep = ((i // 128 >= j // 128)[None, None]) & (j[None, None] < doc_end[:, None, None, None])
    ref = lambda q_, k_, v_, t: attention_ref(q_, k_, v_, causal, d ** -0.5, t, bias=bias, keep=keep)[0]  # noqa: E731
    check_against(ref, q, k, v, out.detach(), dout, (q.grad, k.grad, v.grad))
    check_lse(lse, attention_ref(q.detach(), k.detach(), v.detach(), causal, d ** -0.5, torch.float64, bias=bias, keep=keep)[1])
    compiled = torch.compile(lambda q_, k_, v_: flash_attn_func(q_, k_, v_, causal=causal, **kw), fullgraph=True)
    with torch.no_grad():
        assert torch.equal(compiled(q.detach(), k.detach(), v.detach()), out.detach())
