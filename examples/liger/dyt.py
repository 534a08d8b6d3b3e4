"""Liger-Kernel's DyT (Dynamic Tanh, a normalization-free LayerNorm replacement) in tilejit:
``y = gamma * tanh(alpha * x) + beta``, forward and backward, as a ``torch.autograd.Function``
with the arguments of Liger's ``LigerDyTFunction``.

    python examples/liger/dyt.py

Forward: element-wise over (ROWS, COLS) tiles. Backward (Liger's algorithm): a grid of column
blocks by a few row groups; each block loops over the row tiles of its group, writes dx, and sums
its share of dgamma, dbeta (float32 rows) and dalpha (one float32 number) into partial buffers
that torch sums. ``beta`` may be None.
"""
import sys

try:
    import torch
except ImportError:                 # a script run says so; importing the module needs torch
    if __name__ == "__main__":
        print("dyt: skipped: PyTorch is not installed (pip install torch)")
        sys.exit(0)
    raise

import tilejit as tile

try:
    from . import _common as C
except ImportError:                 # run as a script: its folder is sys.path[0]
    import _common as C

ZERO = tile.PaddingMode.ZERO
F32 = tile.float32

#: the widest column tile; rows fill the tile up to ``_common.ROW_TILE`` elements
MAX_COLS = 2048


@tile.entry
def dyt_fwd(y, x, alpha, gamma, beta, HAVE_BETA: tile.Constant[bool]):
    """``y``: a partition of (ROWS, COLS) tiles; ``beta`` unused without ``HAVE_BETA``."""
    BM, BN = y.shape
    j = y.block[1]
    a = alpha.load((0,), ()).astype(F32)
    t = tile.tanh(tile.load_tile_like(x, y).astype(F32) * a)
    out = t * gamma.load((j,), (BN,), padding=ZERO).astype(F32)[None, :]
    if HAVE_BETA:
        out = out + beta.load((j,), (BN,), padding=ZERO).astype(F32)[None, :]
    y.store(out.astype(y.dtype))


@tile.entry
def dyt_bwd(dx, dy, x, alpha, gamma, dg_part, db_part, da_part, ROWS: tile.Constant[int],
            COLS: tile.Constant[int], HAVE_BETA: tile.Constant[bool]):
    """Grid (column blocks, row groups, 1). ``dx`` writable (rows, n); ``dg_part``, ``db_part``
    writable float32 (groups, n); ``da_part`` writable float32 (groups, column blocks)."""
    j = tile.bid(0)
    grp = tile.bid(1)
    a = alpha.load((0,), ()).astype(F32)
    gv = gamma.load((j,), (COLS,), padding=ZERO).astype(F32)[None, :]
    out = dx.partition((ROWS, COLS))
    dg = tile.zeros((1, COLS), F32)
    db = tile.zeros((1, COLS), F32)
    da = tile.zeros((1, 1), F32)
    for r in range(grp, tile.cdiv(x.shape[0], ROWS), tile.num_blocks(1)):
        t = x.load((r, j), (ROWS, COLS), padding=ZERO).astype(F32)
        g = dy.load((r, j), (ROWS, COLS), padding=ZERO).astype(F32)
        th = tile.tanh(a * t)
        if HAVE_BETA:
            db += tile.sum(g, axis=0, keepdims=True)
        dg += tile.sum(g * th, axis=0, keepdims=True)
        tmp = (1.0 - th * th) * g * gv
        da += tile.sum(t * tmp, keepdims=True)
        tile.store(out, (r, j), (a * tmp).astype(dx.dtype))
    tile.store(dg_part.partition((1, COLS)), (grp, j), dg)
    if HAVE_BETA:
        tile.store(db_part.partition((1, COLS)), (grp, j), db)
    tile.store(da_part.partition((1, 1)), (grp, j), da)


def _tile_of(n_cols: int):
    cols = min(C.width(n_cols), MAX_COLS)
    return C.rows_per_block(cols), cols


def dyt_forward(x, alpha, gamma, beta):
    x2 = C.rows2d(x)
    if gamma.shape != (x2.shape[1],) or (beta is not None and beta.shape != gamma.shape):
        raise ValueError(f"gamma (and beta) must have shape ({x2.shape[1]},) to match x's last "
                         f"dimension, got {tuple(gamma.shape)}"
                         f"{'' if beta is None else f' and {tuple(beta.shape)}'}")
    y = torch.empty_like(x2)
    C.run(dyt_fwd(tile.partition(y, _tile_of(x2.shape[1])), x2, alpha, gamma,
                  beta if beta is not None else gamma, beta is not None), x2)
    return y.view(x.shape)


def dyt_backward(dy, x, alpha, gamma, beta):
    x2, dy2 = C.rows2d(x), C.rows2d(dy)
    m, n = x2.shape
    rows, cols = _tile_of(n)
    col_blocks = tile.cdiv(n, cols)
    groups = max(1, min(tile.cdiv(m, rows), C.persistent_grid(1 << 30, x2) // col_blocks))
    dx = torch.empty_like(dy2)
    f32 = dict(dtype=torch.float32, device=x2.device)
    part = torch.empty((2 if beta is not None else 1, groups, n), **f32)
    da = torch.empty((groups, col_blocks), **f32)
    C.run(dyt_bwd(tile.atomic(dx), dy2, x2, alpha, gamma, tile.atomic(part[0]),
                  tile.atomic(part[-1]) if beta is not None else x2, tile.atomic(da), rows, cols,
                  beta is not None).grid((col_blocks, groups, 1)), x2)
    sums = part.sum(dim=1)
    dbeta = sums[1].to(x.dtype) if beta is not None else None
    return dx.view(x.shape), da.sum().to(x.dtype).unsqueeze(0), sums[0].to(gamma.dtype), dbeta


class LigerDyTFunction(torch.autograd.Function):
    """DyT with Liger's arguments: ``apply(x, alpha, gamma, beta)``; ``alpha`` a (1,) tensor,
    ``gamma`` and ``beta`` (hidden,), ``beta`` may be None."""

    @staticmethod
    def forward(ctx, x, alpha, gamma, beta):
        y = dyt_forward(x, alpha, gamma, beta)
        ctx.save_for_backward(x, alpha, gamma, beta)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, alpha, gamma, beta = ctx.saved_tensors
        return dyt_backward(dy, x, alpha, gamma, beta)


def dyt(x, alpha, gamma, beta=None):
    """Functional form: ``gamma * tanh(alpha * x) + beta``."""
    return LigerDyTFunction.apply(x, alpha, gamma, beta)


class LigerDyT(torch.nn.Module):
    """A drop-in DyT layer (Liger's ``LigerDyT`` arguments)."""

    def __init__(self, hidden_size, beta=True, init_alpha=0.5):
        super().__init__()
        self.alpha = torch.nn.Parameter(torch.ones(1) * init_alpha)
        self.gamma = torch.nn.Parameter(torch.ones(hidden_size))
        self.beta = torch.nn.Parameter(torch.zeros(hidden_size)) if beta else None

    def forward(self, x):
        return LigerDyTFunction.apply(x, self.alpha, self.gamma, self.beta)


# --- the self-check -------------------------------------------------------------------------------
#: Liger's test tolerances (test/transformers/test_dyt.py): (atol, rtol) of the outputs and of
#: dalpha (a sum over every element: its float32 test allows rtol 1e-3)
TOLERANCE = {torch.float32: ((1e-5, 1e-5), (1e-5, 1e-3)),
             torch.bfloat16: ((1e-8, 5e-2), (1e-8, 5e-2))}


def check(shape, dtype, with_beta=True, device="cpu"):
    """Forward and backward against torch's formula: what differs (empty: ok). bfloat16 compares
    with the formula in float32 rounded to bfloat16 (Liger's functional test compares its
    Function with itself)."""
    g = torch.Generator().manual_seed(0)
    h = shape[-1]
    x0 = torch.randn(*shape, generator=g).to(device, dtype)
    a0, g0, b0 = (torch.randn(k, generator=g).to(device, dtype) for k in (1, h, h))
    dy = torch.randn(*shape, generator=g).to(device, dtype)
    ins = [x0, a0, g0] + ([b0] if with_beta else [])
    mine = [t.clone().requires_grad_(True) for t in ins]
    y = LigerDyTFunction.apply(*mine, *([] if with_beta else [None]))
    y.backward(dy)
    ref = [t.float().requires_grad_(True) for t in ins]
    yr = ref[2] * torch.tanh(ref[0] * ref[1]) + (ref[3] if with_beta else 0.0)
    yr.backward(dy.float())
    (atol, rtol), (aatol, artol) = TOLERANCE[dtype]
    tag = f"{tuple(shape)} {str(dtype)[6:]}{'' if with_beta else ' no beta'}"
    names = ["dx", "dalpha", "dgamma", "dbeta"]
    out = [C.check_close(f"{tag} y", y, yr.to(dtype), atol, rtol)]
    for name, got, want in zip(names, mine, ref):
        tol = (aatol, artol) if name == "dalpha" else (atol, rtol)
        out.append(C.check_close(f"{tag} {name}", got.grad, want.grad.to(dtype), *tol))
    return [p for p in out if p]


def main() -> int:
    dev = C.device_for_check()
    shapes = [(2, 8, 4096), (4, 16, 2048), (1, 1, 1023), (3, 7, 256)] if dev == "cuda" \
        else [(2, 8, 512), (1, 1, 1023), (3, 7, 100)]
    problems = []
    for shape in shapes:
        for dtype in (torch.float32, torch.bfloat16):
            for with_beta in (True, False):
                problems += check(shape, dtype, with_beta, dev)
    return C.report("dyt", f"{len(shapes)} shapes x float32/bfloat16, with and without beta, on "
                    f"{dev}, forward and backward", problems)


if __name__ == "__main__":
    sys.exit(main())
