"""Fill, arange, linspace, eye and dtype conversion kernels behind ``tile.api``."""
import tilejit as tile


@tile.entry
def fill(z, value):
    z.store(tile.full(z.shape, value, z.dtype))


@tile.entry
def arange(z):
    n = z.shape[0]
    i = tile.arange(n, tile.int64) + tile.bid(0) * n
    z.store(i.astype(z.dtype))


@tile.entry
def linspace(z, start, step, count, stop):
    n = z.shape[0]
    i = tile.arange(n, tile.int64) + tile.bid(0) * n
    v = start + i.astype(tile.float64) * step
    z.store(tile.where(i == count - 1, stop, v).astype(z.dtype))


@tile.entry
def eye(z):
    bm, bn = z.shape
    rows = tile.arange(bm, tile.int64)[:, None] + tile.bid(0) * bm
    cols = tile.arange(bn, tile.int64)[None, :] + tile.bid(1) * bn
    z.store(tile.where(rows == cols, 1, 0).astype(z.dtype))


@tile.entry
def convert(z, x):
    z.store(tile.load_tile_like(x, z).astype(z.dtype))
