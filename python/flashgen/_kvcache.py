"""flash_attn_with_kvcache for torch tensors: flash-attn's decoding call (one or a few new queries per sequence
against a KV cache, contiguous or paged, appending the new tokens), on flashgen's split-KV decode kernels
(the runtime's `Flash::attention_with_kvcache`). Inference only: there is no backward.
"""

from typing import Optional, Union

import torch
from torch import Tensor

from . import _native
from ._torch import _stream, _to_dlpack

__all__ = ["flash_attn_with_kvcache"]


def flash_attn_with_kvcache(q: Tensor, k_cache: Tensor, v_cache: Tensor, k: Optional[Tensor] = None, v: Optional[Tensor] = None,
                            rotary_cos: Optional[Tensor] = None, rotary_sin: Optional[Tensor] = None,
                            cache_seqlens: Optional[Union[int, Tensor]] = None, cache_batch_idx: Optional[Tensor] = None,
                            cache_leftpad: Optional[Tensor] = None, block_table: Optional[Tensor] = None,
                            softmax_scale: Optional[float] = None, causal: bool = False, window_size=(-1, -1), softcap: float = 0.0,
                            rotary_interleaved: bool = True, alibi_slopes: Optional[Tensor] = None, num_splits: int = 0,
                            return_softmax_lse: bool = False):
    """Attention of q's new queries against each sequence's cached keys and values, as flash_attn.flash_attn_with_kvcache.

    q: (batch, seqlen_q, heads, head_dim). k_cache, v_cache: (batch, capacity, heads_k, head_dim), or with
    block_table a page pool (num_pages, page_size, heads_k, head_dim), page_size a multiple of 16, and
    block_table int32 (batch, max_pages) listing each sequence's pages in order. heads a multiple of heads_k
    (GQA/MQA). cache_seqlens: the tokens each sequence's cache holds before the call, an int (every
    sequence) or int32 (batch,) on the GPU. k, v: (batch, seqlen_new, heads_k, head_dim) new tokens, written
    into the cache at cache_seqlens[b] (in place, as flash-attn does; cache_seqlens itself is not changed)
    and attended to after the cached ones. causal=True masks among the new queries, aligned bottom-right.
    num_splits: 0 lets flashgen split each sequence's keys over the GPU from the shape (batch 1 fills the
    chip), or a count. Returns out (batch, seqlen_q, heads, head_dim), and with return_softmax_lse=True
    (out, softmax_lse) (batch, heads, seqlen_q) float32, natural log.

    An int cache_seqlens is checked on the host against the capacity or the pages; a tensor stays on the GPU
    (no copy, no synchronization), where the kernels clamp each length and page index to the cache: lying
    values give wrong numbers for that sequence, never a read outside the cache or the pool.

    window_size (left, right) and softcap as flash-attn's (Mistral's and Gemma 2's): the splits cover only the
    keys a window lets the queries see.

    Not (yet) in flashgen's runtime, each a NotImplementedError: rotary embeddings (rotary_cos/rotary_sin),
    cache_batch_idx, cache_leftpad, alibi_slopes.
    """
    for name, value in (("rotary_cos", rotary_cos), ("rotary_sin", rotary_sin), ("cache_batch_idx", cache_batch_idx),
                        ("cache_leftpad", cache_leftpad)):
        if value is not None:
            raise NotImplementedError(f"{name}: not in flashgen's flash_attn_with_kvcache yet; pass {name}=None")
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} is a {type(t).__name__}: flash_attn_with_kvcache takes torch.Tensor")
        if t.dim() != 4:
            raise ValueError(f"{name} has shape {tuple(t.shape)}: expected 4 dimensions (q (batch, seqlen_q, heads, head_dim); "
                             "the caches (batch, capacity, heads_k, head_dim) or a page pool (num_pages, page_size, heads_k, head_dim))")
    if cache_seqlens is None:
        raise ValueError("cache_seqlens: give the tokens each sequence's cache holds (an int, or an int32 (batch,) tensor)")
    host_lengths = None
    if isinstance(cache_seqlens, int):
        # one length for every sequence: known on the host, so the native call checks it against the cache
        host_lengths = [int(cache_seqlens)] * q.shape[0]
        cache_seqlens = torch.full((q.shape[0],), int(cache_seqlens), dtype=torch.int32, device=q.device)
    elif not isinstance(cache_seqlens, Tensor):
        raise TypeError(f"cache_seqlens is a {type(cache_seqlens).__name__}: an int or an int32 torch.Tensor (batch,)")
    out = torch.empty_like(q, memory_format=torch.contiguous_format)
    lse = q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32) if return_softmax_lse else None
    optional = lambda t: None if t is None else _to_dlpack(t)
    _native.kvcache(_to_dlpack(q), _to_dlpack(k_cache), _to_dlpack(v_cache), _to_dlpack(cache_seqlens), _to_dlpack(out),
                    lse=optional(lse), k_new=optional(k), v_new=optional(v), block_table=optional(block_table),
                    host_cache_seqlens=host_lengths, softmax_scale=None if softmax_scale is None else float(softmax_scale),
                    causal=bool(causal), window_size_left=int(window_size[0]), window_size_right=int(window_size[1]),
                    softcap=float(softcap), alibi_slopes=alibi_slopes, num_splits=int(num_splits), stream=_stream(q))
    return (out, lse) if return_softmax_lse else out
