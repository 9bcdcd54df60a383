"""flash_attn_func and flash_attn_varlen_func for torch tensors: flash-attn 2's arguments and layouts,
(batch, seqlen, heads, head_dim) and packed sequences (total_tokens, heads, head_dim) with cumulative lengths;
K/V may have fewer heads (GQA/MQA) and other lengths than the queries.

Both public functions go through one path (_attention), and two ways into the same native calls
(flashgen._native.forward / backward, which take packed sequences as their cu_seqlens_* arguments):
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
from typing import Optional, Tuple, List

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


# the native calls' packed-sequence arguments: (cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k), or None
VarLen = Optional[Tuple[Tensor, Tensor, int, int]]


def _check_tensors(q: Tensor, k: Tensor, v: Tensor, varlen: VarLen = None) -> None:
    func, rank, layout = ("flash_attn_varlen_func", 3, "(total_tokens, heads, head_dim)") if varlen is not None else \
        ("flash_attn_func", 4, "(batch, seqlen, heads, head_dim)")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} is a {type(t).__name__}: {func} takes torch.Tensor {layout}")
        if t.dim() != rank:
            raise ValueError(f"{name} has shape {tuple(t.shape)}: expected {rank} dimensions {layout}")
    if varlen is not None:
        for name, t in (("cu_seqlens_q", varlen[0]), ("cu_seqlens_k", varlen[1])):
            if not isinstance(t, Tensor):
                raise TypeError(f"{name} is a {type(t).__name__}: the cumulative sequence lengths are an int32 torch.Tensor (batch + 1,)")


def _native_varlen(varlen: VarLen) -> dict:
    if varlen is None:
        return {}
    cu_q, cu_k, max_q, max_k = varlen
    return dict(cu_seqlens_q=_to_dlpack(cu_q), cu_seqlens_k=_to_dlpack(cu_k), max_seqlen_q=max_q, max_seqlen_k=max_k)


def _lse_shape(q: Tensor, varlen: VarLen) -> Tuple[int, ...]:
    if varlen is not None:
        total, h, _ = q.shape
        return (h, total)
    b, n, h, _ = q.shape
    return (b, h, n)


def _kernel_ready(t: Tensor) -> Tensor:
    """`t` if the kernels can read it as it is, else a contiguous copy (for dout, which autograd hands over
    in any layout: expanded from a sum, transposed, a slice)."""
    strides_ok = t.stride(-1) == 1 and all(s % 8 == 0 or n == 1 for s, n in zip(t.stride()[:-1], t.shape[:-1]))
    if strides_ok and t.data_ptr() % 16 == 0:
        return t
    return t.clone(memory_format=torch.contiguous_format)


# Outputs come from the tensor's own methods (empty_like, new_empty): on the H200 host they cost about half of
# torch.empty(shape, dtype=, device=) each (python-v2: 9.8 against 17.7 us for out and lse)

# score_mod, mask_mod, the names of the tensors they read and the tensors (None: no modifiers)
Mods = Optional[Tuple[Optional[str], Optional[str], Optional[List[str]], Optional[List[Tensor]]]]


def _mods_of(score_mod: Optional[str], mask_mod: Optional[str], names: Optional[List[str]], tensors: Optional[List[Tensor]]) -> Mods:
    if score_mod is None and mask_mod is None and not names:
        return None
    return (score_mod, mask_mod, names, tensors)


def _split_mod_tensors(mod_tensors: Optional[dict]) -> Tuple[Optional[List[str]], Optional[List[Tensor]]]:
    if not mod_tensors:
        return None, None
    if not isinstance(mod_tensors, dict):
        raise TypeError(f"mod_tensors is a {type(mod_tensors).__name__}: pass a dict of name -> tensor")
    return [str(n) for n in mod_tensors], list(mod_tensors.values())


def _joined(names: Optional[List[str]]) -> Optional[str]:
    # (the custom ops' schemas take no list of strings: the names travel joined by commas; they are identifiers)
    return None if names is None else ",".join(names)


def _names_of(joined: Optional[str]) -> Optional[List[str]]:
    return None if not joined else joined.split(",")


def _four(tensors: Optional[List[Tensor]]) -> List[Optional[Tensor]]:
    # (nor a list of tensors that may be None: the ops take the kernels' four slots, mod_t0 .. mod_t3)
    tensors = list(tensors or [])
    if len(tensors) > 4:
        raise ValueError(f"mod_tensors holds {len(tensors)} tensors: the kernels take at most 4")
    return tensors + [None] * (4 - len(tensors))


def _present(*tensors: Optional[Tensor]) -> Optional[List[Tensor]]:
    found = [t for t in tensors if t is not None]
    return found or None


def _alibi(alibi_slopes: Optional[Tensor]):
    return None if alibi_slopes is None else _to_dlpack(alibi_slopes)


def _native_mods(mods: Mods) -> dict:
    if mods is None:
        return {}
    score_mod, mask_mod, names, tensors = mods
    return dict(score_mod=score_mod, mask_mod=mask_mod, mod_names=names, mod_tensors=None if tensors is None else [_to_dlpack(t) for t in tensors])


def _out_shape(q: Tensor, v: Tensor) -> Tuple[int, ...]:
    """out's shape: q's, as wide as v."""
    return tuple(q.shape[:-1]) + (v.shape[-1],)


def _forward(q: Tensor, k: Tensor, v: Tensor, softmax_scale: float, causal: bool, window_size: Tuple[int, int], softcap: float,
             alibi_slopes: Optional[Tensor], varlen: VarLen = None, want_lse: bool = True, mods: Mods = None,
             dropout_p: float = 0.0) -> Tuple[Tensor, Optional[Tensor]]:
    """(out, M): M the rows' base-2 statistics, or None without want_lse (the runtime's scratch takes them).
    dropout_p goes to the native call, which refuses any but 0 (it checks every argument)."""
    # out as wide as v (its head dim may be narrower than q's: DeepSeek's 192/128)
    out = torch.empty_like(q, memory_format=torch.contiguous_format) if v.shape[-1] == q.shape[-1] else q.new_empty(_out_shape(q, v))
    lse = q.new_empty(_lse_shape(q, varlen), dtype=torch.float32) if want_lse else None
    args = (_to_dlpack(q), _to_dlpack(k), _to_dlpack(v), _to_dlpack(out), None if lse is None else _to_dlpack(lse),
            softmax_scale, causal, window_size[0], window_size[1], softcap, _alibi(alibi_slopes), dropout_p, _stream(q), True)
    if varlen is None and mods is None:
        _native.forward(*args)  # (no keyword arguments to merge: a small call's common case)
    else:
        _native.forward(*args, **_native_varlen(varlen), **_native_mods(mods))
    return out, lse  # lse: base-2 M


def _backward(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, softmax_scale: float, causal: bool,
              window_size: Tuple[int, int], softcap: float, alibi_slopes: Optional[Tensor], deterministic: bool,
              varlen: VarLen = None, mods: Mods = None) -> Tuple[Tensor, Tensor, Tensor]:
    dout = _kernel_ready(dout)
    dq = torch.empty_like(q, memory_format=torch.contiguous_format)
    # dk, dv like k, v (GQA: each K/V head's gradient summed over its query heads). Without a query row the runtime
    # launches nothing, so they are zeros from the start then (keys no query sees: the kernels write the zeros)
    if q.numel() == 0:
        dk, dv = k.new_zeros(k.shape), v.new_zeros(v.shape)
    else:
        dk, dv = k.new_empty(k.shape), v.new_empty(v.shape)
    _native.backward(_to_dlpack(dout), _to_dlpack(q), _to_dlpack(k), _to_dlpack(v), _to_dlpack(out), _to_dlpack(lse),
                     _to_dlpack(dq), _to_dlpack(dk), _to_dlpack(dv), softmax_scale, causal, window_size[0], window_size[1],
                     softcap, _alibi(alibi_slopes), deterministic, _stream(q), True, **_native_varlen(varlen), **_native_mods(mods))
    return dq, dk, dv


class _Call:
    """What FlashAttnFunc takes besides q, k, v, as one argument (Function.apply inspects each of its arguments:
    one object rather than eight), and the row statistics it hands back beside its one output."""
    __slots__ = ("scale", "causal", "window_size", "softcap", "alibi_slopes", "deterministic", "varlen", "mods", "dropout_p", "lse")

    def __init__(self, scale, causal, window_size, softcap, alibi_slopes, deterministic, varlen, mods, dropout_p=0.0):
        self.scale, self.causal, self.window_size, self.softcap = scale, causal, window_size, softcap
        self.alibi_slopes, self.deterministic, self.varlen, self.mods = alibi_slopes, deterministic, varlen, mods
        self.dropout_p, self.lse = dropout_p, None


class FlashAttnFunc(torch.autograd.Function):
    """out = attention(q, k, v) under autograd; `call` (_Call) holds the other arguments, and after the forward
    call.lse, the rows' base-2 log-sum-exp, (B, H, N_q) or packed (H, total_q) f32, which the backward takes.
    The statistics are saved, not returned: an output autograd marks non-differentiable costs the host more
    than the attribute (a small call's host time, python/tools/timing.py overhead). They stay in `call`, not
    among the saved tensors: autograd neither differentiates nor version-checks them (no caller sees them
    before the backward but through return_lse, which converts a copy), and each saved tensor costs the host."""

    @staticmethod
    def forward(ctx, q, k, v, call):
        out, lse = _forward(q, k, v, call.scale, call.causal, call.window_size, call.softcap, call.alibi_slopes, call.varlen,
                            mods=call.mods, dropout_p=call.dropout_p)
        ctx.save_for_backward(q, k, v, out)
        ctx.call = call
        call.lse = lse
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out = ctx.saved_tensors
        c = ctx.call
        dq, dk, dv = _backward(dout, q, k, v, out, c.lse, c.scale, c.causal, c.window_size, c.softcap, c.alibi_slopes,
                               c.deterministic, c.varlen, mods=c.mods)
        return dq, dk, dv, None


def _c_apply_of(function):
    """`function.apply` without its Python wrapper (torch/autograd/function.py), or None where this torch lacks
    the C entry: outside functorch's transforms the wrapper only checks for them and unwraps dead wrappers (a
    no-op there) before calling the C apply, 1-2 us of a small call's host time."""
    base = getattr(torch._C, "_FunctionBase", None)
    entry = None if base is None else base.__dict__.get("apply")
    if entry is None or not hasattr(torch._C, "_are_functorch_transforms_active"):
        return None
    return entry.__get__(None, function)


_flash_attn_apply = _c_apply_of(FlashAttnFunc)


def _apply_flash_attn(q: Tensor, k: Tensor, v: Tensor, call: _Call) -> Tensor:
    if _flash_attn_apply is not None and not torch._C._are_functorch_transforms_active():
        return _flash_attn_apply(q, k, v, call)
    return FlashAttnFunc.apply(q, k, v, call)


# --- torch.compile: the same calls as custom ops -------------------------------------------------------------
# Packed sequences are the ops' last four arguments (cu_seqlens_q, cu_seqlens_k: None for (B, N, H, D) tensors).

def _varlen_of(cu_seqlens_q: Optional[Tensor], cu_seqlens_k: Optional[Tensor], max_seqlen_q: int, max_seqlen_k: int) -> VarLen:
    if cu_seqlens_q is None and cu_seqlens_k is None:
        return None
    return (cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k)  # (one of them None: the native call says so)


@torch.library.custom_op("flashgen::fwd", mutates_args=())
def _fwd_op(q: Tensor, k: Tensor, v: Tensor, softmax_scale: float, causal: bool, window_left: int, window_right: int,
            softcap: float, alibi_slopes: Optional[Tensor], deterministic: bool, cu_seqlens_q: Optional[Tensor] = None,
            cu_seqlens_k: Optional[Tensor] = None, max_seqlen_q: int = 0, max_seqlen_k: int = 0, score_mod: Optional[str] = None,
            mask_mod: Optional[str] = None, mod_names: Optional[str] = None, mod_t0: Optional[Tensor] = None,
            mod_t1: Optional[Tensor] = None, mod_t2: Optional[Tensor] = None, mod_t3: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    return _forward(q, k, v, softmax_scale, causal, (window_left, window_right), softcap, alibi_slopes,
                    _varlen_of(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k),
                    mods=_mods_of(score_mod, mask_mod, _names_of(mod_names), _present(mod_t0, mod_t1, mod_t2, mod_t3)))


@_fwd_op.register_fake
def _fwd_fake(q, k, v, softmax_scale, causal, window_left, window_right, softcap, alibi_slopes, deterministic,
              cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=0, max_seqlen_k=0, score_mod=None, mask_mod=None,
              mod_names=None, mod_t0=None, mod_t1=None, mod_t2=None, mod_t3=None):
    varlen = _varlen_of(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k)
    return q.new_empty(_out_shape(q, v)), q.new_empty(_lse_shape(q, varlen), dtype=torch.float32)


@torch.library.custom_op("flashgen::bwd", mutates_args=())
def _bwd_op(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, softmax_scale: float, causal: bool,
            window_left: int, window_right: int, softcap: float, alibi_slopes: Optional[Tensor], deterministic: bool,
            cu_seqlens_q: Optional[Tensor] = None, cu_seqlens_k: Optional[Tensor] = None, max_seqlen_q: int = 0,
            max_seqlen_k: int = 0, score_mod: Optional[str] = None, mask_mod: Optional[str] = None,
            mod_names: Optional[str] = None, mod_t0: Optional[Tensor] = None, mod_t1: Optional[Tensor] = None,
            mod_t2: Optional[Tensor] = None, mod_t3: Optional[Tensor] = None) -> Tuple[Tensor, Tensor, Tensor]:
    return _backward(dout, q, k, v, out, lse, softmax_scale, causal, (window_left, window_right), softcap, alibi_slopes, deterministic,
                     _varlen_of(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k),
                     mods=_mods_of(score_mod, mask_mod, _names_of(mod_names), _present(mod_t0, mod_t1, mod_t2, mod_t3)))


@_bwd_op.register_fake
def _bwd_fake(dout, q, k, v, out, lse, softmax_scale, causal, window_left, window_right, softcap, alibi_slopes, deterministic,
              cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=0, max_seqlen_k=0, score_mod=None, mask_mod=None,
              mod_names=None, mod_t0=None, mod_t1=None, mod_t2=None, mod_t3=None):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _fwd_setup_context(ctx, inputs, output):
    q, k, v, *args = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse)
    ctx.args = tuple(args)  # softmax_scale .. deterministic, the packed sequences' four, the modifiers' four
    ctx.mark_non_differentiable(lse)


def _fwd_op_backward(ctx, dout, _dlse):
    q, k, v, out, lse = ctx.saved_tensors
    dq, dk, dv = torch.ops.flashgen.bwd(dout, q, k, v, out, lse, *ctx.args)
    return (dq, dk, dv) + (None,) * len(ctx.args)


_fwd_op.register_autograd(_fwd_op_backward, setup_context=_fwd_setup_context)


# --- the public functions ------------------------------------------------------------------------------------

def _attention(q: Tensor, k: Tensor, v: Tensor, varlen: VarLen, dropout_p, softmax_scale, causal, window_size, softcap,
               alibi_slopes, deterministic, return_attn_probs, return_lse, score_mod=None, mask_mod=None, mod_tensors=None):
    """flash_attn_func and flash_attn_varlen_func: `varlen` None, or packed sequences'
    (cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k)."""
    if return_attn_probs:
        raise NotImplementedError("return_attn_probs=True: flashgen's kernels never form the attention matrix; "
                                  "use return_lse=True for the log-sum-exp, or torch's SDPA for the probabilities")
    window_size = (int(window_size[0]), int(window_size[1]))
    if torch.compiler.is_compiling():
        # (under torch.compile the op's own native call checks the arguments when it runs: dynamo cannot trace
        # into an extension function, and a call here would break the graph)
        _check_tensors(q, k, v, varlen)
        mods = _mods_from(score_mod, mask_mod, mod_tensors)
        packed = varlen if varlen is not None else (None, None, 0, 0)
        op_mods = (mods[0], mods[1], _joined(mods[2]), *_four(mods[3])) if mods is not None else (None,) * 7
        scale = float(softmax_scale) if softmax_scale is not None else q.shape[-1] ** -0.5
        out, lse = torch.ops.flashgen.fwd(q, k, v, scale, bool(causal), window_size[0], window_size[1], float(softcap),
                                          alibi_slopes, bool(deterministic), *packed, *op_mods)
        return (out, lse * LN2) if return_lse else out
    try:
        # eager: the native call checks every argument and tensor itself (the same rules)
        if varlen is not None:
            varlen = (varlen[0], varlen[1], int(varlen[2]), int(varlen[3]))
        scale = float(softmax_scale) if softmax_scale is not None else q.shape[-1] ** -0.5
        mods = None if score_mod is None and mask_mod is None and not mod_tensors else _mods_from(score_mod, mask_mod, mod_tensors)
        if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
            call = _Call(scale, bool(causal), window_size, float(softcap), alibi_slopes, bool(deterministic), varlen, mods,
                         float(dropout_p))
            out = _apply_flash_attn(q, k, v, call)
            lse = call.lse
        else:
            # nothing to differentiate (inference, torch.no_grad): the autograd.Function's few microseconds are
            # skipped, and without return_lse the statistics' allocation too
            out, lse = _forward(q, k, v, scale, bool(causal), window_size, float(softcap), alibi_slopes, varlen,
                                want_lse=return_lse, mods=mods, dropout_p=float(dropout_p))
    except Exception:
        # whatever failed, the Python-side checks run now, in their order, so that a bad argument or a tensor
        # that is not one is named as they name it; past them, the error as it came. (Run before every call,
        # they cost a small call ~0.7 us of host time: python/tools/timing.py overhead --parts.)
        _native.check_arguments(causal, window_size[0], window_size[1], softcap, alibi_slopes, dropout_p, softmax_scale)
        _check_tensors(q, k, v, varlen)
        raise
    return (out, lse * LN2) if return_lse else out


def _mods_from(score_mod, mask_mod, mod_tensors) -> Mods:
    if score_mod is None and mask_mod is None and not mod_tensors:
        return None
    return _mods_of(score_mod, mask_mod, *_split_mod_tensors(mod_tensors))


def flash_attn_func(q: Tensor, k: Tensor, v: Tensor, dropout_p: float = 0.0, softmax_scale: Optional[float] = None,
                    causal: bool = False, window_size: Tuple[int, int] = (-1, -1), softcap: float = 0.0,
                    alibi_slopes: Optional[Tensor] = None, deterministic: bool = False, return_attn_probs: bool = False,
                    *, return_lse: bool = False, score_mod: Optional[str] = None, mask_mod: Optional[str] = None,
                    mod_tensors: Optional[dict] = None):
    """softmax(q kᵀ · softmax_scale [causal]) v, as flash_attn.flash_attn_func.

    q: (batch, seqlen_q, heads, head_dim); k, v: (batch, seqlen_k, heads_k, head_dim), heads a multiple of heads_k
    (GQA; MQA with heads_k = 1: query head h reads K/V head h // (heads // heads_k)); seqlen_q and seqlen_k may
    differ. bfloat16 or float16, on one GPU, head dim contiguous (stride 1), other strides multiples of 8 elements
    and the base 16-byte aligned (views into a packed QKV tensor qualify). softmax_scale defaults to
    1/sqrt(head_dim). causal=True aligns the mask to the bottom right, as flash-attn 2: query i sees key j iff
    j <= i + seqlen_k - seqlen_q (with seqlen_q > seqlen_k the first rows see no key: their output is 0).
    Returns out (batch, seqlen_q, heads, head_dim), contiguous; with return_lse=True (out, softmax_lse), the
    natural-log log-sum-exp of each row, (batch, heads, seqlen_q) float32 (-inf for a row that sees no key).
    The backward gives dk, dv shaped like k, v.

    window_size=(left, right) is a sliding window around that diagonal (query i sees keys i + d - left ..= i + d +
    right, -1 unbounded; causal=True ends it at the diagonal), softcap > 0 caps the scaled scores (cap · tanh(s /
    cap)), forward and backward, on every GPU (sm_80 and up). alibi_slopes (heads,) float32 adds flash-attn's
    -slope·|i + seqlen_k - seqlen_q - j| to the scores.

    score_mod and mask_mod are FlexAttention's modifiers as expressions, compiled into the kernels (every GPU):
    score_mod over score (the scaled score), b, h, q_idx, kv_idx, e.g. "score + slope[h] * (kv_idx - q_idx)";
    mask_mod a condition (True keeps the pair), e.g. "q_idx // 128 >= kv_idx // 128". The tensors they read come
    in mod_tensors={"slope": t}: float32 or int32, one value per query head (read as slope[h]) or per batch entry
    (doc_end[b]). causal, window_size and softcap join them. Forward and backward (no gradient for mod_tensors).

    Not (yet) in flashgen's runtime, each a NotImplementedError: dropout_p > 0, alibi_slopes with packed
    sequences or per batch entry, return_attn_probs. v's head dim may be narrower than q's (out takes it). The backward is deterministic
    (deterministic=True is accepted; it only conflicts with FLASHGEN_BACKWARD=fused-atomic).
    """
    return _attention(q, k, v, None, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes, deterministic,
                      return_attn_probs, return_lse, score_mod, mask_mod, mod_tensors)


def flash_attn_varlen_func(q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Tensor, cu_seqlens_k: Tensor, max_seqlen_q: int,
                           max_seqlen_k: int, dropout_p: float = 0.0, softmax_scale: Optional[float] = None, causal: bool = False,
                           window_size: Tuple[int, int] = (-1, -1), softcap: float = 0.0, alibi_slopes: Optional[Tensor] = None,
                           deterministic: bool = False, return_attn_probs: bool = False, block_table: Optional[Tensor] = None,
                           *, return_lse: bool = False, score_mod: Optional[str] = None, mask_mod: Optional[str] = None,
                           mod_tensors: Optional[dict] = None):
    """Attention over packed variable-length sequences, as flash_attn.flash_attn_varlen_func.

    q: (total_q, heads, head_dim), k, v: (total_k, heads_k, head_dim): the batch's sequences one after another,
    sequence b owning rows cu_seqlens_q[b] .. cu_seqlens_q[b + 1] of q and cu_seqlens_k[b] .. cu_seqlens_k[b + 1]
    of k and v. cu_seqlens_q, cu_seqlens_k: torch.int32, 1-D, contiguous, (batch + 1,) each, starting at 0, on
    the GPU of q. max_seqlen_q, max_seqlen_k: the longest sequences' lengths (positive ints). Everything else as
    flash_attn_func: GQA/MQA, per-sequence query and key lengths (empty sequences included), causal aligned to
    each sequence's bottom right, the dtypes and strides, the backward through autograd, torch.compile (the same
    custom ops, torch.ops.flashgen.fwd / bwd).
    Returns out (total_q, heads, head_dim); with return_lse=True (out, softmax_lse), softmax_lse (heads, total_q)
    float32, natural log.

    As flash-attn, the offsets are read on the GPU only (no copy to the host, no synchronization), so they are not
    checked against the tensors: offsets that do not increase, run past total_q / total_k, or a sequence longer
    than max_seqlen give wrong numbers for those sequences, never a read or write outside the tensors. Rows of q
    outside every sequence are left as they are in out (uninitialized).

    Not (yet) in flashgen's runtime, each a NotImplementedError: as flash_attn_func, and block_table (paged K/V).
    """
    if block_table is not None:
        raise NotImplementedError("block_table: paged K/V is not in flash_attn_varlen_func yet; pass block_table=None")
    return _attention(q, k, v, (cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k), dropout_p, softmax_scale, causal,
                      window_size, softcap, alibi_slopes, deterministic, return_attn_probs, return_lse, score_mod, mask_mod,
                      mod_tensors)
