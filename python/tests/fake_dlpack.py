"""DLPack capsules made with ctypes, for the tests that need no GPU and no torch: a tensor of any dtype, shape,
strides, device and address, which the native calls read exactly as they read torch's capsules.

The addresses are never dereferenced by a check; a capsule that passes every check reaches the device step,
which on a machine without a CUDA driver fails cleanly. Tests that get that far must not run where a GPU
is present (the fake address would be launched on): they skip there (`requires_no_driver`).
"""

import ctypes

DL_CPU, DL_CUDA = 1, 2
DL_INT, DL_UINT, DL_FLOAT, DL_BFLOAT = 0, 1, 2, 4

BF16 = (DL_BFLOAT, 16)
F16 = (DL_FLOAT, 16)
F32 = (DL_FLOAT, 32)
I32 = (DL_INT, 32)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
# capsule names must outlive the capsules: module constants
_NAMES = {"dltensor": b"dltensor", "dltensor_versioned": b"dltensor_versioned", "used_dltensor": b"used_dltensor"}


def contiguous_strides(shape):
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


class FakeTensor:
    """Something with __dlpack__(): a DLPack description of memory that is not there (see the module doc)."""

    def __init__(self, shape, dtype=BF16, strides=None, device=(DL_CUDA, 0), addr=0x7F0000000000, byte_offset=0,
                 versioned=False, read_only=False, version=(1, 0), capsule_name=None, lanes=1):
        self.shape = tuple(shape)
        self.strides = tuple(strides) if strides is not None else contiguous_strides(self.shape)
        n = len(self.shape)
        self._shape = (ctypes.c_int64 * max(n, 1))(*self.shape)
        self._strides = (ctypes.c_int64 * max(n, 1))(*self.strides)
        t = DLTensor(ctypes.c_void_p(addr), DLDevice(*device), n, DLDataType(dtype[0], dtype[1], lanes),
                     ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64)),
                     ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64)), byte_offset)
        if versioned:
            self._managed = DLManagedTensorVersioned(DLPackVersion(*version), None, None, 1 if read_only else 0, t)
        else:
            self._managed = DLManagedTensor(t, None, None)
        self._name = capsule_name or ("dltensor_versioned" if versioned else "dltensor")

    def __dlpack__(self, *args, **kwargs):
        # no destructor: the struct lives as long as this object, which the test holds
        return _capsule_new(ctypes.addressof(self._managed), _NAMES[self._name], None)


def bnhd(b, n, h, d, **kw):
    """A (batch, seqlen, heads, head_dim) tensor."""
    return FakeTensor((b, n, h, d), **kw)


def lse_for(b, n, h, **kw):
    kw.setdefault("dtype", F32)
    return FakeTensor((b, h, n), **kw)


def forward_args(b=2, n=128, h=4, d=64, dtype=BF16, device=(DL_CUDA, 0)):
    """A well-formed forward: q, k, v, out (B, N, H, D) at distinct aligned addresses, and the lse."""
    size = b * n * h * d * 2
    base = 0x7F0000000000
    q, k, v, out = (bnhd(b, n, h, d, dtype=dtype, device=device, addr=base + i * size) for i in range(4))
    lse = lse_for(b, n, h, device=device, addr=base + 4 * size)
    return [q, k, v, out, lse]


def varlen_args(total_q=300, total_k=500, h=4, h_kv=4, d=64, batch=3, dtype=BF16, device=(DL_CUDA, 0)):
    """A well-formed packed-sequence call: q, out, dout, dq (total_q, H, D); k, v, dk, dv (total_k, H_kv, D); the lse
    (H, total_q); cu_q, cu_k int32 (batch + 1,); max_q, max_k. Keys of the backward's and the forward's arguments."""
    base = 0x7F0000000000
    step = max(total_q * h, total_k * h_kv) * d * 2 + 4096
    names_q, names_k = ("q", "out", "dout", "dq"), ("k", "v", "dk", "dv")
    a = {}
    for i, name in enumerate(names_q + names_k):
        shape = (total_q, h, d) if name in names_q else (total_k, h_kv, d)
        a[name] = FakeTensor(shape, dtype=dtype, device=device, addr=base + i * step)
    a["lse"] = FakeTensor((h, total_q), dtype=F32, device=device, addr=base + 8 * step)
    a["cu_q"] = FakeTensor((batch + 1,), dtype=I32, device=device, addr=base + 9 * step)
    a["cu_k"] = FakeTensor((batch + 1,), dtype=I32, device=device, addr=base + 9 * step + 256)
    a["max_q"], a["max_k"] = 200, 300
    return a
