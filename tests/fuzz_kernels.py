"""Random elementwise / reduction kernels with their NumPy meaning (shared by the fuzz tests).

``make_case(rng)`` draws a kernel: an expression tree over one or two input tiles (unary math,
binary arithmetic, min/max, where, casts), optionally reduced along an axis, a tile shape of
powers of two, ragged tensor extents (so edge blocks are masked) and a dtype. ``case.source`` is
the kernel's Python text (printed when a check fails), ``case.reference`` computes it in NumPy.
"""
import textwrap
from dataclasses import dataclass

import numpy as np

import tilejit as tile

DTYPES = {"float32": (np.float32, 1e-5), "float16": (np.float16, 2e-2),
          "int32": (np.int32, 0)}
UNARY_FLOAT = [("tile.exp({})", lambda a: np.exp(a)), ("tile.sqrt(tile.abs({}))", lambda a: np.sqrt(np.abs(a))),
               ("tile.tanh({})", np.tanh), ("tile.abs({})", np.abs), ("-{}", np.negative)]
UNARY_INT = [("tile.abs({})", np.abs), ("-{}", np.negative), ("({} * 3)", lambda a: a * 3)]
BINARY = [("({} + {})", np.add), ("({} - {})", np.subtract), ("({} * {})", np.multiply),
          ("tile.maximum({}, {})", np.maximum), ("tile.minimum({}, {})", np.minimum),
          ("tile.where({0} > {1}, {0}, {1})", lambda a, b: np.where(a > b, a, b))]
REDUCE = [("tile.sum", np.sum), ("tile.max", np.max), ("tile.min", np.min)]


@dataclass
class Case:
    source: str
    reference: object
    dtype: str
    shape: tuple
    tile_shape: tuple
    reduce_axis: object
    tolerance: float

    def kernel(self):
        ns = {}
        exec(compile(self.source, "<fuzz kernel>", "exec"), ns)
        return ns["fuzz"]


def _expr(rng, depth, dtype, root=False):
    if depth == 0 or (not root and rng.random() < 0.25):
        return ("a", lambda a, b: a) if rng.random() < 0.5 else ("b", lambda a, b: b)
    if rng.random() < 0.4:
        table = UNARY_INT if dtype == "int32" else UNARY_FLOAT
        fmt, fn = table[rng.integers(len(table))]
        sub, ref = _expr(rng, depth - 1, dtype)
        return fmt.format(sub), (lambda a, b, fn=fn, ref=ref: fn(ref(a, b)))
    fmt, fn = BINARY[rng.integers(len(BINARY))]
    l_src, l_ref = _expr(rng, depth - 1, dtype)
    r_src, r_ref = _expr(rng, depth - 1, dtype)
    return fmt.format(l_src, r_src), (lambda a, b, fn=fn, lr=l_ref, rr=r_ref: fn(lr(a, b),
                                                                                rr(a, b)))


def make_case(rng) -> Case:
    dtype = list(DTYPES)[rng.integers(len(DTYPES))]
    ndim = int(rng.integers(1, 3))
    tile_shape = tuple(int(2 ** rng.integers(1, 5 if ndim == 2 else 7)) for _ in range(ndim))
    shape = tuple(int(t * rng.integers(1, 4) - rng.integers(0, t)) for t in tile_shape)
    src_expr, ref = _expr(rng, int(rng.integers(1, 4)), dtype, root=True)
    reduce_axis = None
    body = f"r = {src_expr}\n"
    if ndim == 2 and rng.random() < 0.4:
        reduce_axis = int(rng.integers(2))
        name, rfn = REDUCE[rng.integers(len(REDUCE))]
        body += f"r = {name}(r, axis={reduce_axis}, keepdims=True)\n"
        body += "r = tile.broadcast_to(r, z.shape)\n"
        full_ref = ref
        ref = (lambda a, b, rfn=rfn, ax=reduce_axis, f=full_ref: np.broadcast_to(
            rfn(f(a, b), axis=ax, keepdims=True), f(a, b).shape))
    pad = "tile.PaddingMode.ZERO"
    body_k = (f"a = x.load(z.block, z.shape, padding={pad})\n"
              f"b = y.load(z.block, z.shape, padding={pad})\n" + body +
              "z.store(r.astype(z.dtype))\n")
    source = "import tilejit as tile\n@tile.entry\ndef fuzz(z, x, y):\n" + \
        textwrap.indent(body_k, "    ")
    return Case(source, ref, dtype, shape, tile_shape, reduce_axis, DTYPES[dtype][1])


def inputs(case: Case, rng):
    npdt = DTYPES[case.dtype][0]
    if case.dtype == "int32":
        a = rng.integers(-50, 50, case.shape).astype(npdt)
        b = rng.integers(-50, 50, case.shape).astype(npdt)
    else:
        a = rng.uniform(-2, 2, case.shape).astype(npdt)
        b = rng.uniform(-2, 2, case.shape).astype(npdt)
    return a, b


def expected(case: Case, a, b):
    """The NumPy result, computed per block like the kernel (reductions see zero padding)."""
    npdt = DTYPES[case.dtype][0]
    if case.reduce_axis is None:
        return np.asarray(case.reference(a.astype(np.float64) if case.dtype != "int32" else a,
                                         b.astype(np.float64) if case.dtype != "int32" else b)
                          ).astype(npdt)
    grid = [-(-n // t) for n, t in zip(case.shape, case.tile_shape)]
    out = np.zeros(case.shape, npdt)
    for bi in np.ndindex(*grid):
        sl = tuple(slice(i * t, (i + 1) * t) for i, t in zip(bi, case.tile_shape))
        pa = np.zeros(case.tile_shape, a.dtype)
        pb = np.zeros(case.tile_shape, b.dtype)
        region = a[sl]
        pa[tuple(slice(0, n) for n in region.shape)] = region
        pb[tuple(slice(0, n) for n in region.shape)] = b[sl]
        conv = (lambda v: v.astype(np.float64)) if case.dtype != "int32" else (lambda v: v)
        blk = np.asarray(case.reference(conv(pa), conv(pb))).astype(npdt)
        out[sl] = blk[tuple(slice(0, n) for n in region.shape)]
    return out


def check(case: Case, got, want) -> None:
    if case.dtype == "int32":
        np.testing.assert_array_equal(got, want, err_msg=case.source)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=case.tolerance, atol=case.tolerance,
                                   err_msg=case.source)


def run(case: Case, a, b, stream=None):
    """The kernel's output for inputs ``a``, ``b`` (NumPy), on the active backend."""
    from tilejit import api
    x = api.from_numpy(a).sync()
    y = api.from_numpy(b).sync()
    z = api.zeros(case.shape, getattr(tile, case.dtype)).sync()
    case.kernel()(z.partition(case.tile_shape), x, y).sync()
    return z.to_numpy()
