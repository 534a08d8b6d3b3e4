"""The kernels of ``api.rand`` / ``api.randn``: the kernel language's ``tile.rand`` and
``tile.randn`` (Philox-4x32-10, ``lowering/handlers/random.py``) over the flat element index,
so a kernel calling ``tile.rand(seed, offsets)`` draws exactly the numbers ``api.rand`` gives
for the same seed (element ``i`` is offset ``i``)."""
import tilejit as tile


@tile.function
def _offsets(n):
    return tile.arange(n, tile.uint64) + tile.astype(tile.bid(0), tile.uint64) * n


@tile.entry
def uniform(z, seed):
    z.store(tile.rand(seed, _offsets(z.shape[0])).astype(z.dtype))


@tile.entry
def normal(z, seed, mean, std):
    z.store((tile.randn(seed, _offsets(z.shape[0])) * std + mean).astype(z.dtype))
