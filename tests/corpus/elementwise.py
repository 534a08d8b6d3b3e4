"""Element-wise kernels: vector add, saxpy, 2-D add with broadcasting, transpose, math, where."""
import numpy as np

import tilejit as tile

from . import Case, In, Out, Scalar, rand


def vector_add(z, x, y):
    tx = tile.load_tile_like(x, z)
    ty = tile.load_tile_like(y, z)
    z.store(tx + ty)


def saxpy(z, x, y, alpha):
    # alpha is a float32 scalar: weak, so alpha * x keeps x's dtype
    z.store(alpha * tile.load_tile_like(x, z) + tile.load_tile_like(y, z))


def add_bias_2d(z, x, bias):
    """z = x + bias[None, :] with a (BM, BN) tile of x and a (1, BN) tile of the bias row."""
    BM, BN = z.shape
    i, j = z.block
    tx = x.load((i, j), (BM, BN))
    tb = bias.load((0, j), (1, BN))        # bias is (1, N)
    z.store(tx + tb)


def add_col_bias(z, x, col):
    """z = x + col[:, None] using t[:, None] on a 1-D tile."""
    BM, BN = z.shape
    i, j = z.block
    tc = col.load((i,), (BM,))
    z.store(x.load((i, j), (BM, BN)) + tc[:, None])


def transpose2d(z, x):
    """z = x.T: z's block (i, j) is x's tile (j, i), transposed."""
    BM, BN = z.shape
    i, j = z.block
    t = x.load((j, i), (BN, BM))
    z.store(t.T)


def gelu_tanh(z, x):
    t = tile.load_tile_like(x, z)
    c = 0.7978845608028654
    inner = c * (t + 0.044715 * t * t * t)
    z.store(0.5 * t * (1.0 + tile.tanh(inner)))


def relu_where_int(z, x):
    """Integer tiles, comparisons and where with a weak zero."""
    t = tile.load_tile_like(x, z)
    z.store(tile.where(t > 0, t, 0) * 2 - (t & 1))


def mixed_precision_scale(z, x, s):
    """float16 input, float32 math, float16 output; s is a float32 scalar."""
    t = tile.load_tile_like(x, z).astype(tile.float32)
    y = tile.exp(t * s) / (1.0 + abs(t))
    z.store(y.astype(z.dtype))


def _vec(rng, n=1000, dtype=np.float32):
    return rand(rng, (n,), dtype)


CASES = [
    Case("vector_add", vector_add,
         lambda r: dict(z=Out(np.zeros(1000, np.float32), (128,)), x=In(_vec(r)), y=In(_vec(r))),
         lambda z, x, y: {"z": x + y}),
    Case("saxpy", saxpy,
         lambda r: dict(z=Out(np.zeros(777, np.float32), (256,)), x=In(_vec(r, 777)),
                        y=In(_vec(r, 777)), alpha=Scalar(1.5)),
         lambda z, x, y, alpha: {"z": (np.float32(alpha) * x + y).astype(np.float32)}),
    Case("add_bias_2d", add_bias_2d,
         lambda r: dict(z=Out(np.zeros((100, 72), np.float32), (32, 64)),
                        x=In(rand(r, (100, 72))), bias=In(rand(r, (1, 72)))),
         lambda z, x, bias: {"z": x + bias}),
    Case("add_col_bias", add_col_bias,
         lambda r: dict(z=Out(np.zeros((90, 50), np.float32), (32, 32)),
                        x=In(rand(r, (90, 50))), col=In(rand(r, (90,)))),
         lambda z, x, col: {"z": x + col[:, None]}),
    Case("transpose2d", transpose2d,
         lambda r: dict(z=Out(np.zeros((70, 130), np.float32), (32, 64)),
                        x=In(rand(r, (130, 70)))),
         lambda z, x: {"z": np.ascontiguousarray(x.T)}),
    Case("gelu_tanh", gelu_tanh,
         lambda r: dict(z=Out(np.zeros(3000, np.float32), (512,)), x=In(rand(r, (3000,), lo=-4,
                                                                             hi=4))),
         lambda z, x: {"z": (0.5 * x * (1 + np.tanh(0.7978845608028654 *
                                                    (x + 0.044715 * x ** 3)))).astype(np.float32)},
         rtol=1e-5, atol=1e-5),
    Case("relu_where_int", relu_where_int,
         lambda r: dict(z=Out(np.zeros(500, np.int32), (64,)),
                        x=In(rand(r, (500,), np.int32, -100, 100))),
         lambda z, x: {"z": (np.where(x > 0, x, 0) * 2 - (x & 1)).astype(np.int32)}),
    Case("mixed_precision_scale", mixed_precision_scale,
         lambda r: dict(z=Out(np.zeros(300, np.float16), (128,)),
                        x=In(rand(r, (300,), np.float16)), s=Scalar(0.5)),
         lambda z, x, s: {"z": (np.exp(x.astype(np.float32) * np.float32(s)) /
                                (1 + np.abs(x.astype(np.float32)))).astype(np.float16)},
         rtol=2e-3, atol=2e-3),
]
