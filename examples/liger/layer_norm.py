"""Liger-Kernel's LayerNorm in tilejit: ``y = (x - mean) / sqrt(var + eps) * w + b``, forward and
backward, as a ``torch.autograd.Function`` with the arguments of Liger's
``LigerLayerNormFunction``.

    python examples/liger/layer_norm.py

Forward: a block normalizes a (ROWS, WIDTH) tile of whole rows: the mean, then the variance of
the centred row (padding kept out of it), both in float32, and saves each row's mean and 1/std.
Backward: a persistent kernel, a few blocks per multiprocessor, each looping over row tiles: dx
from the saved statistics, and its rows' share of dw and db summed in float32 into one partial
row per block; torch sums the partial rows (Liger's algorithm). The statistics are kept in
float32 (Liger keeps them in x's dtype).
"""
import sys

try:
    import torch
except ImportError:                 # a script run says so; importing the module needs torch
    if __name__ == "__main__":
        print("layer_norm: skipped: PyTorch is not installed (pip install torch)")
        sys.exit(0)
    raise

import tilejit as tile

try:
    from . import _common as C
except ImportError:                 # run as a script: its folder is sys.path[0]
    import _common as C

ZERO = tile.PaddingMode.ZERO
F32 = tile.float32


@tile.entry
def layer_norm_fwd(y, x, w, b, mean, rstd, eps):
    """``y``: a partition of whole rows; ``mean``, ``rstd``: writable float32 (rows,)."""
    BM, BN = y.shape
    i = y.block[0]
    t = x.load((i, 0), (BM, BN), padding=ZERO).astype(F32)
    inv_n = 1.0 / x.shape[1]
    mu = tile.sum(t, axis=1, keepdims=True) * inv_n
    d = tile.where(tile.arange(BN)[None, :] < x.shape[1], t - mu, 0.0)   # padding: not data
    rs = tile.rsqrt(tile.sum(d * d, axis=1, keepdims=True) * inv_n + eps)
    tile.store(mean.partition((BM,)), (i,), mu.reshape((BM,)))
    tile.store(rstd.partition((BM,)), (i,), rs.reshape((BM,)))
    wv = w.load((0,), (BN,), padding=ZERO).astype(F32)[None, :]
    bv = b.load((0,), (BN,), padding=ZERO).astype(F32)[None, :]
    y.store((d * rs * wv + bv).astype(y.dtype))


@tile.entry
def layer_norm_bwd(dx, dy, x, w, mean, rstd, dw_part, db_part, ROWS: tile.Constant[int],
                   WIDTH: tile.Constant[int]):
    """``dx`` writable (rows, n); ``dw_part``, ``db_part`` writable (blocks, n) float32, one row
    a block; grid: (blocks, 1, 1)."""
    n = x.shape[1]
    inv_n = 1.0 / n
    b = tile.bid(0)
    out = dx.partition((ROWS, WIDTH))
    keep = tile.arange(WIDTH)[None, :] < n
    wv = w.load((0,), (WIDTH,), padding=ZERO).astype(F32)[None, :]
    dw = tile.zeros((1, WIDTH), F32)
    db = tile.zeros((1, WIDTH), F32)
    for r in range(b, tile.cdiv(x.shape[0], ROWS), tile.num_blocks(0)):
        t = x.load((r, 0), (ROWS, WIDTH), padding=ZERO).astype(F32)
        g = dy.load((r, 0), (ROWS, WIDTH), padding=ZERO).astype(F32)
        mu = mean.load((r,), (ROWS,), padding=ZERO)[:, None]
        rs = rstd.load((r,), (ROWS,), padding=ZERO)[:, None]     # 0 past the last row
        xhat = tile.where(keep, (t - mu) * rs, 0.0)
        wdy = wv * g
        c1 = tile.sum(xhat * wdy, axis=1, keepdims=True) * inv_n
        c2 = tile.sum(wdy, axis=1, keepdims=True) * inv_n
        tile.store(out, (r, 0), ((wdy - (xhat * c1 + c2)) * rs).astype(dx.dtype))
        dw += tile.sum(g * xhat, axis=0, keepdims=True)
        db += tile.sum(g, axis=0, keepdims=True)
    tile.store(dw_part.partition((1, WIDTH)), (b, 0), dw)
    tile.store(db_part.partition((1, WIDTH)), (b, 0), db)


def layer_norm_forward(X, W, B, eps):
    """(Y in X's shape, X as rows, Mean, RSTD), the statistics float32."""
    shape = X.shape
    X = C.rows2d(X)
    n_rows, n_cols = X.shape
    if W.shape != (n_cols,) or B.shape != (n_cols,):
        raise ValueError(f"W and B must have shape ({n_cols},) to match X's last dimension, got "
                         f"{tuple(W.shape)} and {tuple(B.shape)}")
    w = C.width(n_cols)
    Y = torch.empty_like(X)
    Mean = torch.empty(n_rows, dtype=torch.float32, device=X.device)
    RSTD = torch.empty(n_rows, dtype=torch.float32, device=X.device)
    C.run(layer_norm_fwd(tile.partition(Y, (C.rows_per_block(w, C.NORM_ROW_TILE), w)), X, W, B,
                         tile.atomic(Mean), tile.atomic(RSTD), float(eps)), X)
    return Y.view(shape), X, Mean, RSTD


def layer_norm_backward(dY, X, W, B, Mean, RSTD):
    shape = dY.shape
    dY = C.rows2d(dY)
    n_rows, n_cols = dY.shape
    w = C.width(n_cols)
    rows = C.rows_per_block(w, C.BWD_ROW_TILE)
    grid = C.persistent_grid(tile.cdiv(n_rows, rows), X)
    DX = torch.empty_like(X)
    part = torch.empty((2, grid, n_cols), dtype=torch.float32, device=X.device)
    C.run(layer_norm_bwd(tile.atomic(DX), dY, X, W, Mean, RSTD, tile.atomic(part[0]),
                         tile.atomic(part[1]), rows, w).grid((grid, 1, 1)), X)
    sums = part.sum(dim=1)
    return DX.view(shape), sums[0].to(W.dtype), sums[1].to(B.dtype)


class LigerLayerNormFunction(torch.autograd.Function):
    """LayerNorm over the last dimension with Liger's arguments: ``apply(X, W, B, eps)``."""

    @staticmethod
    def forward(ctx, X, W, B, eps):
        Y, X2, Mean, RSTD = layer_norm_forward(X, W, B, eps)
        ctx.save_for_backward(X2, W, B, Mean, RSTD)
        return Y

    @staticmethod
    def backward(ctx, dY):
        X, W, B, Mean, RSTD = ctx.saved_tensors
        DX, DW, DB = layer_norm_backward(dY, X, W, B, Mean, RSTD)
        return DX, DW, DB, None


def layer_norm(X, W, B, eps=1e-6):
    """Functional form: LayerNorm over the last dimension of ``X``."""
    return LigerLayerNormFunction.apply(X, W, B, eps)


class LigerLayerNorm(torch.nn.Module):
    """A drop-in LayerNorm layer (Liger's ``LigerLayerNorm`` arguments)."""

    def __init__(self, hidden_size, eps=1e-6, bias=False, init_fn="ones"):
        super().__init__()
        if init_fn not in ("ones", "zeros"):
            raise ValueError(f"init_fn must be 'ones' or 'zeros', got {init_fn!r}")
        self.weight = torch.nn.Parameter((torch.ones if init_fn == "ones" else torch.zeros)(
            hidden_size))
        self.bias = torch.nn.Parameter(torch.randn(hidden_size) if bias else
                                       torch.zeros(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        return LigerLayerNormFunction.apply(hidden_states, self.weight, self.bias,
                                            self.variance_epsilon)


# --- the self-check -------------------------------------------------------------------------------
#: Liger's test tolerances (test/transformers/test_layer_norm.py): (atol, rtol)
TOLERANCE = {torch.float32: (1e-5, 1e-5), torch.bfloat16: (2e-2, 2e-2)}


def check(shape, dtype, device="cpu", eps=1e-6):
    """Forward and backward against ``torch.nn.functional.layer_norm``: what differs (empty:
    ok). bfloat16 compares with torch's float32 result rounded to bfloat16 (Liger's test
    compares two bfloat16 computations whose roundings differ by more than its tolerance)."""
    g = torch.Generator().manual_seed(0)
    h = shape[-1]
    x0 = torch.randn(*shape, generator=g).to(device, dtype)
    w0, b0 = (torch.randn(h, generator=g).to(device, dtype) for _ in range(2))
    dy = torch.randn(*shape, generator=g).to(device, dtype)
    x, w, b = (t.clone().requires_grad_(True) for t in (x0, w0, b0))
    y = LigerLayerNormFunction.apply(x, w, b, eps)
    y.backward(dy)
    xr, wr, br = (t.float().requires_grad_(True) for t in (x0, w0, b0))
    yr = torch.nn.functional.layer_norm(xr, (h,), wr, br, eps)
    yr.backward(dy.float())
    atol, rtol = TOLERANCE[dtype]
    tag = f"{tuple(shape)} {str(dtype)[6:]}"
    out = [C.check_close(f"{tag} {name}", got, want.to(dtype), atol, rtol)
           for name, got, want in (("y", y, yr), ("dx", x.grad, xr.grad), ("dw", w.grad, wr.grad),
                                   ("db", b.grad, br.grad))]
    return [p for p in out if p]


def main() -> int:
    dev = C.device_for_check()
    shapes = [(2, 8, 64), (4, 16, 128), (1, 1, 1023), (3, 7, 256), (1, 1, 1500)] \
        if dev == "cuda" else [(2, 8, 64), (3, 7, 100), (1, 1, 300)]
    problems = []
    for shape in shapes:
        for dtype in (torch.float32, torch.bfloat16):
            problems += check(shape, dtype, dev)
    return C.report("layer_norm", f"{len(shapes)} shapes x float32/bfloat16 on {dev}, forward "
                    f"and backward", problems)


if __name__ == "__main__":
    sys.exit(main())
