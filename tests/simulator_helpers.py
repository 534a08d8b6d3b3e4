"""Shared helpers for the simulator tests (no tests here): device buffers and kernel builders.

The ``dev`` fixture (a :class:`Device`) is in conftest.py."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from tilejit.simulator import compile_function
from tilejit.simulator.memory import memory
from tilejit.tileir import I32, Module, ptr, tile
from tileir_cases import fn

NP = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
      "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "tf32": np.float32,
      "f64": np.float64, "f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2}
UNSIGNED = {"i8": np.uint8, "i16": np.uint16, "i32": np.uint32, "i64": np.uint64}


class Device:
    """Buffers in the simulated memory, freed at the end of the test."""

    def __init__(self):
        self.ptrs = []

    def put(self, a) -> int:
        a = np.ascontiguousarray(a)
        p = memory.alloc(max(a.nbytes, 1))
        memory.write(p, a)
        self.ptrs.append(p)
        return p

    def empty(self, shape, dtype) -> int:
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        p = memory.alloc(max(n, 1))
        self.ptrs.append(p)
        return p

    def get(self, p, shape, dtype) -> np.ndarray:
        dt = np.dtype(dtype)
        n = int(np.prod(shape))
        return memory.read(p, n * dt.itemsize).view(dt).reshape(shape)

    def free(self):
        for p in self.ptrs:
            memory.free(p)
        self.ptrs.clear()


def rng(seed=0):
    return np.random.default_rng(seed)


def random_tile(elem, shape, seed=0, low=-100, high=100):
    """Random, never all-zero data of ``elem``'s storage type."""
    r = rng(seed)
    if elem == "i1":
        return r.random(shape) < 0.5
    dt = np.dtype(NP[elem])
    if dt.kind == "i":
        info = np.iinfo(dt)
        return r.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)
    vals = r.uniform(low, high, size=shape)
    return vals.astype(np.float32).astype(dt) if elem != "f64" else vals


def run(module, grid, params, name=None):
    compile_function(module, name or module.functions[0].name)(grid, params)


def elementwise(dev, apply, inputs, in_elems, out_elem, tile_n=64):
    """Run ``out = apply(b, *tiles)`` over 1-D arrays through partition views of ``tile_n``
    (sizes that are not multiples of the tile exercise padding and masked stores)."""
    n = len(inputs[0])
    f, b = fn("ew", [ptr(out_elem), I32] + [ptr(e) for e in in_elems])
    bx = b.get_tile_block_id()[0]

    def view(p):
        tv = b.make_tensor_view(p, [f.args[1]], [1])
        return b.make_partition_view(tv, (tile_n,), padding="zero")
    xs = [b.load_view_tko(view(p), [bx])[0] for p in f.args[2:]]
    b.store_view_tko(apply(b, *xs), view(f.args[0]), [bx])
    b.return_()
    odt = np.uint8 if out_elem == "i1" else NP[out_elem]
    out = dev.empty((n,), odt)
    ins = [dev.put(np.asarray(a).astype(np.uint8) if e == "i1" else a)
           for a, e in zip(inputs, in_elems)]
    run(Module("ew", [f]), (-(-n // tile_n), 1, 1), [out, n] + ins)
    got = dev.get(out, (n,), odt)
    return got != 0 if out_elem == "i1" else got


def scalar_kernel(dev, apply, args, arg_types, out_elem, out_shape=()):
    """Run ``apply(b, *scalar_args)`` once and store its (tile) result densely; returns it."""
    f, b = fn("sk", [ptr(out_elem)] + list(arg_types))
    r = apply(b, *f.args[1:])
    shape = r.type.shape
    n = int(np.prod(shape)) if shape else 1
    offs = b.iota(tile("i32", (n,)))
    flat = b.reshape(r, (n,))
    base = b.broadcast(b.reshape(f.args[0], (1,)), (n,))
    b.store_ptr_tko(b.offset(base, offs), flat)
    b.return_()
    odt = np.uint8 if out_elem == "i1" else NP[out_elem]
    out = dev.empty((n,), odt)
    run(Module("sk", [f]), (1, 1, 1), [out] + list(args))
    got = dev.get(out, (n,), odt).reshape(shape)
    return got != 0 if out_elem == "i1" else got


def xchg_order_module() -> Module:
    """Every block exchanges its linear index (x fastest) into one counter and stores the old
    value at its index: the old values reveal the order in which the blocks ran."""
    f, b = fn("order", [ptr("i32"), ptr("i32")])
    bx, by, bz = b.get_tile_block_id()
    gx, gy, _ = b.get_num_tile_blocks()
    lin = b.binary("addi", bx, b.binary("muli", gx, b.binary("addi", by, b.binary("muli", gy, bz))))
    old, _ = b.atomic_rmw_tko(f.args[0], "xchg", lin)
    b.store_ptr_tko(b.offset(f.args[1], lin), old)
    b.return_()
    return Module("order", [f])
