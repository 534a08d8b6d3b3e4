"""Liger-Kernel's softmax over the last dimension in tilejit, forward and backward, as a
``torch.autograd.Function`` with the arguments of Liger's ``LigerSoftmaxFunction``.

    python examples/liger/softmax.py

Each block takes a (ROWS, WIDTH) tile of whole rows (WIDTH the row length rounded up to a power
of two, several rows a block when they are short), read once. Forward: the padding past a row
reads -inf, the identity of the maximum, and exp(-inf) = 0 adds nothing to the sum; the
maximum in the input's dtype, everything after it in float32, exp as exp2 of a log2(e)-scaled
difference and one reciprocal a row (examples/softmax.py's spelling). Backward:
``dx = y * (dy - sum(y * dy))`` a row, from the saved output.
"""
import sys

try:
    import torch
except ImportError:                 # a script run says so; importing the module needs torch
    if __name__ == "__main__":
        print("softmax: skipped: PyTorch is not installed (pip install torch)")
        sys.exit(0)
    raise

import tilejit as tile

try:
    from . import _common as C
except ImportError:                 # run as a script: its folder is sys.path[0]
    import _common as C

F32 = tile.float32
LOG2E = 1.4426950408889634


@tile.entry
def softmax_fwd(y, x):
    """``y``: a partition of whole rows."""
    t = x.load(y.block, y.shape, padding=tile.PaddingMode.NEG_INF)
    m = tile.max(t, axis=1, keepdims=True).astype(F32)
    e = tile.exp2((t.astype(F32) - m) * LOG2E)
    y.store((e * (1.0 / tile.sum(e, axis=1, keepdims=True))).astype(y.dtype))


@tile.entry
def softmax_bwd(dx, y, dy):
    """``dx``: a partition of whole rows; padding reads 0 for both, adding nothing to the sum."""
    s = y.load(dx.block, dx.shape, padding=tile.PaddingMode.ZERO).astype(F32)
    g = dy.load(dx.block, dx.shape, padding=tile.PaddingMode.ZERO).astype(F32)
    dx.store((s * (g - tile.sum(s * g, axis=1, keepdims=True))).astype(dx.dtype))


def _tile_of(n_cols: int):
    w = C.width(n_cols)
    return (C.rows_per_block(w), w)


def softmax_forward(x):
    """softmax of ``x`` over its last dimension, in x's dtype and shape."""
    x2 = C.rows2d(x)
    y = torch.empty_like(x2)
    C.run(softmax_fwd(tile.partition(y, _tile_of(x2.shape[1])), x2), x2)
    return y.view(x.shape)


def softmax_backward(dy, y):
    dy2, y2 = C.rows2d(dy), C.rows2d(y)
    dx = torch.empty_like(dy2)
    C.run(softmax_bwd(tile.partition(dx, _tile_of(dy2.shape[1])), y2, dy2), dy2)
    return dx.view(dy.shape)


class LigerSoftmaxFunction(torch.autograd.Function):
    """Softmax over the last dimension with Liger's arguments: ``apply(input_)``."""

    @staticmethod
    def forward(ctx, input_):
        y = softmax_forward(input_)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return softmax_backward(grad_output, y)


def softmax(x):
    """Functional form: softmax over the last dimension of ``x``."""
    return LigerSoftmaxFunction.apply(x)


class LigerSoftmax(torch.nn.Module):
    """A drop-in softmax layer over the last dimension (Liger's ``LigerSoftmax``)."""

    def forward(self, x):
        return LigerSoftmaxFunction.apply(x)


# --- the self-check -------------------------------------------------------------------------------
#: Liger's test tolerances (test/transformers/test_softmax.py): (atol, rtol)
TOLERANCE = {torch.float32: (1e-5, 1e-5), torch.bfloat16: (5e-2, 5e-2)}


def check(shape, dtype, device="cpu"):
    """Forward and backward against ``torch.softmax``: what differs (empty: ok)."""
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(*shape, generator=g).to(device, dtype)
    dy = torch.randn(*shape, generator=g).to(device, dtype)
    x, xr = x0.clone().requires_grad_(True), x0.clone().requires_grad_(True)
    y = LigerSoftmaxFunction.apply(x)
    y.backward(dy)
    yr = torch.softmax(xr, dim=-1)
    yr.backward(dy)
    atol, rtol = TOLERANCE[dtype]
    tag = f"{tuple(shape)} {str(dtype)[6:]}"
    out = [C.check_close(f"{tag} y", y, yr, atol, rtol),
           C.check_close(f"{tag} dx", x.grad, xr.grad, atol, rtol)]
    return [p for p in out if p]


def main() -> int:
    dev = C.device_for_check()
    shapes = [(2, 8), (4, 16), (1, 1023), (3, 7, 256), (1, 4096), (1, 2, 4096)] \
        if dev == "cuda" else [(2, 8), (4, 16), (1, 1023), (3, 7, 100)]
    problems = []
    for shape in shapes:
        for dtype in (torch.float32, torch.bfloat16):
            problems += check(shape, dtype, dev)
    return C.report("softmax", f"{len(shapes)} shapes x float32/bfloat16 on {dev}, forward and "
                    f"backward", problems)


if __name__ == "__main__":
    sys.exit(main())
