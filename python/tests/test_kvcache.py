"""flash_attn_with_kvcache on torch tensors. The `torch_only` tests need torch but no GPU; the `gpu` tests run on
the H200. Reference: attention by its definition (test_torch.attention_ref: K/V heads repeated, the causal mask
bottom-right) over each sequence's cached tokens followed by its new ones, in float64, with flash-attn's rule for
the tolerance (our error <= 2 × the same reference's in the half type + 2e-3)."""

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

from flashgen import flash_attn_with_kvcache  # noqa: E402
from test_torch import attention_ref, max_err  # noqa: E402


def decode_case(device, dtype, b=3, h=8, h_kv=2, d=128, capacity=512, nq=2, n_new=2, lengths=(0, 100, 301), seed=0):
    g = torch.Generator(device=device).manual_seed(seed)
    rnd = lambda *shape: torch.randn(*shape, dtype=dtype, device=device, generator=g)
    return dict(q=rnd(b, nq, h, d), k_cache=rnd(b, capacity, h_kv, d), v_cache=rnd(b, capacity, h_kv, d),
                k=rnd(b, n_new, h_kv, d) if n_new else None, v=rnd(b, n_new, h_kv, d) if n_new else None,
                lengths=list(lengths))


def paged_from(cache, page, generator_seed=1):
    """The page pool and block table holding `cache` (B, capacity, H_kv, D), pages in a shuffled order."""
    b, capacity, h_kv, d = cache.shape
    per = capacity // page
    order = torch.randperm(b * per, generator=torch.Generator().manual_seed(generator_seed)).to(cache.device)
    table = order.view(b, per).to(torch.int32)
    pool = torch.empty(b * per, page, h_kv, d, dtype=cache.dtype, device=cache.device)
    pool[table.long().flatten()] = cache.view(b * per, page, h_kv, d)
    return pool, table


def gathered(pool, table, page):
    """The contiguous caches a pool and block table hold."""
    b, per = table.shape
    return pool[table.long().flatten()].view(b, per * page, *pool.shape[2:])


def check_decode(c, out, lse, causal, scale, **modifiers):
    for i, n in enumerate(c["lengths"]):
        keys = [c["k_cache"][i:i + 1, :n]] + ([c["k"][i:i + 1]] if c["k"] is not None else [])
        values = [c["v_cache"][i:i + 1, :n]] + ([c["v"][i:i + 1]] if c["v"] is not None else [])
        k, v, q = torch.cat(keys, dim=1), torch.cat(values, dim=1), c["q"][i:i + 1]
        ref, ref_lse = attention_ref(q, k, v, causal, scale, torch.float64, **modifiers)
        base, _ = attention_ref(q, k, v, causal, scale, q.dtype, **modifiers)
        e_ours, e_base = max_err(out[i:i + 1], ref), max_err(base, ref)
        assert e_ours <= 2 * e_base + 2e-3, f"sequence {i} (length {n}): error {e_ours:.2e}, reference in {q.dtype} {e_base:.2e}"
        visible = torch.isfinite(ref_lse)
        assert torch.equal(torch.isfinite(lse[i:i + 1]), visible)
        assert max_err(lse[i:i + 1][visible], ref_lse[visible]) < 2e-3


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("paged", [False, True], ids=["contiguous", "paged"])
def test_decode_matches_the_reference_and_appends(gpu, dtype, causal, paged):
    c = decode_case(gpu, dtype)
    before = c["k_cache"].clone()
    scale = 128 ** -0.5
    lengths = torch.tensor(c["lengths"], dtype=torch.int32, device=gpu)
    if paged:
        (kp, table), (vp, _) = paged_from(c["k_cache"], 64), paged_from(c["v_cache"], 64)
        out, lse = flash_attn_with_kvcache(c["q"], kp, vp, k=c["k"], v=c["v"], cache_seqlens=lengths, block_table=table,
                                           causal=causal, return_softmax_lse=True)
        k_after = gathered(kp, table, 64)
    else:
        out, lse = flash_attn_with_kvcache(c["q"], c["k_cache"], c["v_cache"], k=c["k"], v=c["v"], cache_seqlens=lengths,
                                           causal=causal, return_softmax_lse=True)
        k_after = c["k_cache"]
    assert out.shape == c["q"].shape and out.is_contiguous() and lse.shape == (3, 8, 2)
    check_decode(c, out, lse, causal, scale)
    # the new tokens were written at each sequence's length, and nothing else of the cache changed
    for i, n in enumerate(c["lengths"]):
        assert torch.equal(k_after[i, n:n + 2], c["k"][i])
        assert torch.equal(k_after[i, :n], before[i, :n]) and torch.equal(k_after[i, n + 2:], before[i, n + 2:])


@pytest.mark.parametrize("d", [96, 32, 256])
def test_other_head_dims_decode(gpu, d):
    # Phi-3's 96 and 32 run on the tiles of 128 and 64, Gemma's 256 in two column groups; paged (pages of 32),
    # appended, causal
    c = decode_case(gpu, torch.bfloat16, d=d, capacity=256, lengths=(0, 77, 200))
    lengths = torch.tensor(c["lengths"], dtype=torch.int32, device=gpu)
    (kp, table), (vp, _) = paged_from(c["k_cache"], 32), paged_from(c["v_cache"], 32)
    out, lse = flash_attn_with_kvcache(c["q"], kp, vp, k=c["k"], v=c["v"], cache_seqlens=lengths, block_table=table,
                                       causal=True, return_softmax_lse=True)
    assert out.shape == c["q"].shape
    check_decode(c, out, lse, True, d ** -0.5)
    for i, n in enumerate(c["lengths"]):
        assert torch.equal(gathered(kp, table, 32)[i, n:n + 2], c["k"][i])


@pytest.mark.parametrize("d, window_size, softcap", [(128, (64, 0), 0.0), (256, (100, -1), 50.0), (64, (-1, -1), 30.0), (96, (40, 8), 0.0)],
                         ids=["mistral-window", "gemma2-window-softcap", "softcap", "window-both-sides"])
def test_decode_windows_and_softcap(gpu, d, window_size, softcap):
    c = decode_case(gpu, torch.bfloat16, d=d, capacity=320, lengths=(0, 33, 300))
    lengths = torch.tensor(c["lengths"], dtype=torch.int32, device=gpu)
    causal = window_size[1] == 0
    out, lse = flash_attn_with_kvcache(c["q"], c["k_cache"], c["v_cache"], k=c["k"], v=c["v"], cache_seqlens=lengths,
                                       causal=causal, window_size=window_size, softcap=softcap, return_softmax_lse=True)
    check_decode(c, out, lse, causal, d ** -0.5, window_size=window_size, softcap=softcap)


def test_decode_without_new_tokens_an_int_length_and_one_split(gpu):
    c = decode_case(gpu, torch.bfloat16, nq=1, n_new=0, lengths=(200, 200, 200))
    out = flash_attn_with_kvcache(c["q"], c["k_cache"], c["v_cache"], cache_seqlens=200, num_splits=1)
    out_split, lse = flash_attn_with_kvcache(c["q"], c["k_cache"], c["v_cache"], cache_seqlens=200, return_softmax_lse=True)
    check_decode(c, out_split, lse, False, 128 ** -0.5)
    assert max_err(out, out_split) < 1e-2  # one split or the heuristic's: the same attention, other rounding
    # an int length is checked on the host: past the capacity is an error before anything runs
    with pytest.raises(ValueError, match="cache_seqlens"):
        flash_attn_with_kvcache(c["q"], c["k_cache"], c["v_cache"], cache_seqlens=600)


def test_decode_arguments(torch_only):
    q = torch.zeros(1, 1, 8, 128, dtype=torch.bfloat16)
    kc = torch.zeros(1, 64, 2, 128, dtype=torch.bfloat16)
    with pytest.raises(NotImplementedError, match="rotary_cos"):
        flash_attn_with_kvcache(q, kc, kc, rotary_cos=q, cache_seqlens=1)
    with pytest.raises(ValueError, match="cache_seqlens: give"):
        flash_attn_with_kvcache(q, kc, kc)
    with pytest.raises(TypeError, match="cache_seqlens is a list"):
        flash_attn_with_kvcache(q, kc, kc, cache_seqlens=[1])
    with pytest.raises(ValueError, match="expected 4 dimensions"):
        flash_attn_with_kvcache(q[0], kc, kc, cache_seqlens=1)
    with pytest.raises(ValueError, match="is on cpu"):
        flash_attn_with_kvcache(q, kc, kc, cache_seqlens=1)
