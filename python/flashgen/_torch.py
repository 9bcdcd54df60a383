"""flash_attn_func for torch tensors: flash-attn 2's arguments and (batch, seqlen, heads, head_dim) layout.

Two ways into the same native calls (flashgen._native.forward / backward):
- eager: FlashAttnFunc, a torch.autograd.Function. Its overhead is what a small call pays on the host;
  measured on a 2-core CI machine (CPU tensors, no launch): about 5 us for the Function, against about
  40 us for a torch.library.custom_op with autograd, which is above the 20 us budget of a small call;
- torch.compile: the custom ops torch.ops.flashgen.fwd / bwd (register_fake gives the shapes, and
  register_autograd joins them), chosen when torch.compiler.is_compiling(), so that dynamo traces through
  the call instead of breaking the graph at an opaque extension function.

Tensors go to Rust as DLPack capsules (torch._C._to_dlpack, the function behind torch.utils.dlpack.to_dlpack:
one C call per tensor, about 0.3 us, no copy and no stream handshake) and the work is queued on torch's
current stream of the tensors' device. Outputs (out, the log-sum-exp, dq, dk, dv) are allocated by torch's
caching allocator and written by the kernels. Between the forward and the backward the row statistics stay
in the kernels' base 2 (M = m + log2 l, Triton's convention): the backward takes them as they are, which saves
a conversion kernel's launch in each; return_lse=True converts to the natural log, LN2 · M, in torch.
"""

import math
from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _native

__all__ = ["flash_attn_func", "flash_attn_varlen_func", "FlashAttnFunc"]

LN2 = math.log(2.0)
_to_dlpack = getattr(torch._C, "_to_dlpack", None) or torch.utils.dlpack.to_dlpack
# the raw cudaStream_t of the current stream (what inductor's generated code uses); the public way builds a
# torch.cuda.Stream object per call, a few microseconds more
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _stream(t: Tensor) -> int:
    if not t.is_cuda:
        return 0  # the native call refuses a tensor that is not on a GPU before it uses any stream
    index = t.get_device()
    if _raw_stream is not None:
        return _raw_stream(index)
    return torch.cuda.current_stream(index).cuda_stream


def _check_tensors(q: Tensor, k: Tensor, v: Tensor) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} is a {type(t).__name__}: flash_attn_func takes torch.Tensor (batch, seqlen, heads, head_dim)")
        if t.dim() != 4:
            raise ValueError(f"{name} has shape {tuple(t.shape)}: expected 4 dimensions (batch, seqlen, heads, head_dim)")


def _kernel_ready(t: Tensor) -> Tensor:
    """`t` if the kernels can read it as it is, else a contiguous copy (for dout, which autograd hands over
    in any layout: expanded from a sum, transposed, a slice)."""
    strides_ok = t.stride(-1) == 1 and all(s % 8 == 0 or n == 1 for s, n in zip(t.stride()[:-1], t.shape[:-1]))
    if strides_ok and t.data_ptr() % 16 == 0:
        return t
    return t.clone(memory_format=torch.contiguous_format)


def _forward(q: Tensor, k: Tensor, v: Tensor, softmax_scale: float, causal: bool, window_size: Tuple[int, int], softcap: float,
             alibi_slopes: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
    b, n, h, _ = q.shape
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty((b, h, n), dtype=torch.float32, device=q.device)
    _native.forward(_to_dlpack(q), _to_dlpack(k), _to_dlpack(v), _to_dlpack(out), _to_dlpack(lse), softmax_scale, causal,
                    window_size[0], window_size[1], softcap, alibi_slopes, 0.0, _stream(q), True)
    return out, lse  # lse: base-2 M


def _backward(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, softmax_scale: float, causal: bool,
              window_size: Tuple[int, int], softcap: float, alibi_slopes: Optional[Tensor], deterministic: bool) -> Tuple[Tensor, Tensor, Tensor]:
    dout = _kernel_ready(dout)
    dq = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    dk = torch.empty(k.shape, dtype=k.dtype, device=k.device)
    dv = torch.empty(v.shape, dtype=v.dtype, device=v.device)
    _native.backward(_to_dlpack(dout), _to_dlpack(q), _to_dlpack(k), _to_dlpack(v), _to_dlpack(out), _to_dlpack(lse),
                     _to_dlpack(dq), _to_dlpack(dk), _to_dlpack(dv), softmax_scale, causal, window_size[0], window_size[1],
                     softcap, alibi_slopes, deterministic, _stream(q), True)
    return dq, dk, dv


class FlashAttnFunc(torch.autograd.Function):
    """(out, m) = attention(q, k, v); m: the rows' base-2 log-sum-exp (B, H, N) f32, which the backward takes."""

    @staticmethod
    def forward(ctx, q, k, v, softmax_scale, causal, window_size, softcap, alibi_slopes, deterministic):
        out, lse = _forward(q, k, v, softmax_scale, causal, window_size, softcap, alibi_slopes)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.args = (softmax_scale, causal, window_size, softcap, alibi_slopes, deterministic)
        ctx.mark_non_differentiable(lse)
        return out, lse

    @staticmethod
    def backward(ctx, dout, _dlse):
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = _backward(dout, q, k, v, out, lse, *ctx.args)
        return dq, dk, dv, None, None, None, None, None, None


# --- torch.compile: the same calls as custom ops -------------------------------------------------------------

@torch.library.custom_op("flashgen::fwd", mutates_args=())
def _fwd_op(q: Tensor, k: Tensor, v: Tensor, softmax_scale: float, causal: bool, window_left: int, window_right: int,
            softcap: float, alibi_slopes: Optional[Tensor], deterministic: bool) -> Tuple[Tensor, Tensor]:
    return _forward(q, k, v, softmax_scale, causal, (window_left, window_right), softcap, alibi_slopes)


@_fwd_op.register_fake
def _fwd_fake(q, k, v, softmax_scale, causal, window_left, window_right, softcap, alibi_slopes, deterministic):
    b, n, h, _ = q.shape
    return q.new_empty(q.shape), q.new_empty((b, h, n), dtype=torch.float32)


@torch.library.custom_op("flashgen::bwd", mutates_args=())
def _bwd_op(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, softmax_scale: float, causal: bool,
            window_left: int, window_right: int, softcap: float, alibi_slopes: Optional[Tensor],
            deterministic: bool) -> Tuple[Tensor, Tensor, Tensor]:
    return _backward(dout, q, k, v, out, lse, softmax_scale, causal, (window_left, window_right), softcap, alibi_slopes, deterministic)


@_bwd_op.register_fake
def _bwd_fake(dout, q, k, v, out, lse, softmax_scale, causal, window_left, window_right, softcap, alibi_slopes, deterministic):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _fwd_setup_context(ctx, inputs, output):
    q, k, v, softmax_scale, causal, window_left, window_right, softcap, alibi_slopes, deterministic = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse)
    ctx.args = (softmax_scale, causal, window_left, window_right, softcap, alibi_slopes, deterministic)
    ctx.mark_non_differentiable(lse)


def _fwd_op_backward(ctx, dout, _dlse):
    q, k, v, out, lse = ctx.saved_tensors
    dq, dk, dv = torch.ops.flashgen.bwd(dout, q, k, v, out, lse, *ctx.args)
    return dq, dk, dv, None, None, None, None, None, None, None


_fwd_op.register_autograd(_fwd_op_backward, setup_context=_fwd_setup_context)


# --- the public functions ------------------------------------------------------------------------------------

def flash_attn_func(q: Tensor, k: Tensor, v: Tensor, dropout_p: float = 0.0, softmax_scale: Optional[float] = None,
                    causal: bool = False, window_size: Tuple[int, int] = (-1, -1), softcap: float = 0.0,
                    alibi_slopes: Optional[Tensor] = None, deterministic: bool = False, return_attn_probs: bool = False,
                    *, return_lse: bool = False):
    """softmax(q kᵀ · softmax_scale [causal]) v, as flash_attn.flash_attn_func.

    q: (batch, seqlen, heads, head_dim); k, v: (batch, seqlen, heads, head_dim); bfloat16 or float16, on one
    GPU, head dim contiguous (stride 1), other strides multiples of 8 elements and the base 16-byte aligned
    (views into a packed QKV tensor qualify). softmax_scale defaults to 1/sqrt(head_dim).
    Returns out (batch, seqlen, heads, head_dim), contiguous; with return_lse=True (out, softmax_lse), the
    natural-log log-sum-exp of each row, (batch, heads, seqlen) float32.

    Not (yet) in flashgen's runtime, each a NotImplementedError: dropout_p > 0, window_size other than (-1, -1),
    softcap > 0, alibi_slopes, fewer K/V heads than query heads (GQA), unequal query and key lengths,
    return_attn_probs. The backward is deterministic (deterministic=True is accepted; it only conflicts with
    FLASHGEN_BACKWARD=fused-atomic).
    """
    if return_attn_probs:
        raise NotImplementedError("return_attn_probs=True: flashgen's kernels never form the attention matrix; "
                                  "use return_lse=True for the log-sum-exp, or torch's SDPA for the probabilities")
    window_size = (int(window_size[0]), int(window_size[1]))
    compiling = torch.compiler.is_compiling()
    if not compiling:
        # (under torch.compile the op's own native call makes these checks when it runs: dynamo cannot trace
        # into an extension function, and a call here would break the graph)
        _native.check_arguments(causal, window_size[0], window_size[1], softcap, alibi_slopes, dropout_p, softmax_scale)
    _check_tensors(q, k, v)
    scale = float(softmax_scale) if softmax_scale is not None else q.shape[-1] ** -0.5
    if compiling:
        out, lse = torch.ops.flashgen.fwd(q, k, v, scale, bool(causal), window_size[0], window_size[1], float(softcap),
                                          alibi_slopes, bool(deterministic))
    elif torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        out, lse = FlashAttnFunc.apply(q, k, v, scale, bool(causal), window_size, float(softcap), alibi_slopes, bool(deterministic))
    else:
        # nothing to differentiate (inference, torch.no_grad): the autograd.Function's few microseconds are skipped
        out, lse = _forward(q, k, v, scale, bool(causal), window_size, float(softcap), alibi_slopes)
    return (out, lse * LN2) if return_lse else out


def flash_attn_varlen_func(q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Tensor, cu_seqlens_k: Tensor, max_seqlen_q: int,
                           max_seqlen_k: int, dropout_p: float = 0.0, softmax_scale: Optional[float] = None, causal: bool = False,
                           window_size: Tuple[int, int] = (-1, -1), softcap: float = 0.0, alibi_slopes: Optional[Tensor] = None,
                           deterministic: bool = False, return_attn_probs: bool = False, block_table: Optional[Tensor] = None,
                           *, return_lse: bool = False):
    """flash_attn.flash_attn_varlen_func's signature: packed sequences (total_tokens, heads, head_dim) with
    cumulative lengths. The runtime has no varlen kernels yet: NotImplementedError (after the argument checks
    every flashgen call makes), so that code written against it keeps working when they land."""
    _native.check_arguments(causal, int(window_size[0]), int(window_size[1]), softcap, alibi_slopes, dropout_p, softmax_scale)
    raise NotImplementedError("flash_attn_varlen_func: variable-length (packed) sequences are not in flashgen's runtime yet; "
                              "pad to (batch, seqlen, heads, head_dim) and use flash_attn_func")
