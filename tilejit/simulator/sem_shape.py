"""Tile construction and shape ops: constant, iota, broadcast, reshape, permute, cat, extract,
select, offset, assume. Results may be read-only NumPy views (SSA values are never mutated)."""
from __future__ import annotations

import numpy as np

from .elements import F64, is_float, memory_dtype, storage, unsigned, wrap
from .errors import KernelFault
from .numerics import from_f64
from .registry import elem_of, impl, map1, map2, map3


def constant_array(value, ttype) -> np.ndarray:
    """A DenseConst's value as a read-only array of the tile type's storage."""
    elem = ttype.element
    v = np.asarray(value)
    if is_float(elem):
        with np.errstate(all="ignore"):
            arr = from_f64(v.astype(F64), elem)
    elif elem == "i1":
        arr = v.astype(np.bool_) if v.dtype == np.bool_ else wrap(v.astype(np.int64), elem)
    elif v.dtype.kind == "f":
        arr = wrap(v.astype(np.int64), elem)
    elif v.dtype.kind == "O":                       # Python ints beyond 64 bits
        arr = wrap(np.array([int(x) & 0xFFFFFFFFFFFFFFFF for x in v.reshape(-1)],
                            dtype=np.uint64).reshape(v.shape), elem)
    else:
        arr = wrap(v, elem)
    arr = np.array(np.broadcast_to(arr, ttype.shape), dtype=storage(elem))
    arr.setflags(write=False)
    return arr[()] if arr.ndim == 0 else arr


@impl("constant")
def _constant(op, c):
    c.fold(op.result, constant_array(op.attrs["value"].value, op.result.type))
    return None


@impl("iota")
def _iota(op, c):
    t = op.result.type
    arr = wrap(np.arange(t.shape[0], dtype=np.int64), t.element)
    arr.setflags(write=False)
    c.fold(op.result, arr)
    return None


@impl("broadcast")
def _broadcast(op, c):
    shape = op.result.type.shape
    return map1(op, c, lambda x: np.broadcast_to(x, shape))


@impl("reshape")
def _reshape(op, c):
    shape = op.result.type.shape
    return map1(op, c, lambda x: np.reshape(x, shape))


@impl("permute")
def _permute(op, c):
    perm = tuple(int(p) for p in op.attrs["permutation"])
    return map1(op, c, lambda x: np.transpose(x, perm))


@impl("cat")
def _cat(op, c):
    dim = int(op.attrs["dim"])
    return map2(op, c, lambda a, b: np.concatenate([a, b], axis=dim))


@impl("extract")
def _extract(op, c):
    src = c.slot(op.operand("source"))
    idx = [(c.slot(v), elem_of(v)) for v in op.group("indices")]
    o = c.slot(op.result)
    rshape = op.result.type.shape
    sshape = op.operand("source").type.shape
    counts = [s // r for s, r in zip(sshape, rshape)]

    def run(env):
        ks = [int(unsigned(env[s], e)) for s, e in idx]
        for k, n in zip(ks, counts):
            if k >= n:
                raise KernelFault(f"extract: slice index {tuple(ks)} is out of range; the source "
                                  f"{tuple(sshape)} has {tuple(counts)} slices of "
                                  f"{tuple(rshape)}")
        env[o] = env[src][tuple(slice(k * r, (k + 1) * r) for k, r in zip(ks, rshape))]
    return run


@impl("select")
def _select(op, c):
    return map3(op, c, np.where)


@impl("offset")
def _offset(op, c):
    size = np.int64(memory_dtype(op.result.type.element.pointee).itemsize)
    shape = op.result.type.shape
    return map2(op, c, lambda p, k: np.broadcast_to(
        np.asarray(p) + np.asarray(k).astype(np.int64) * size, shape))


@impl("assume")
def _assume(op, c):
    # predicates are promises to the compiler; the value passes through unchanged
    c.alias(op.result, op.operand("value"))
    return None
