"""GEGLU, Liger-Kernel's ``LigerGELUMulFunction``, in tilejit: c = gelu_tanh(a) * b.

    python examples/liger/geglu.py

gelu_tanh(a) = 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3))), torch's
``gelu(approximate="tanh")``, computed as a * sigmoid(2 sqrt(2/pi) (a + 0.044715 a^3)) (the same
function: (1 + tanh z) / 2 = sigmoid(2 z)), one exp and one reciprocal an element. Forward reads
a and b once and writes c; backward reads dc, a and b once and writes da into a's storage and db
into b's, as Liger's kernel does; the activation is recomputed, not saved. The activation is rounded to the inputs' dtype before it multiplies b
(forward) and dc (db), as in Liger's kernel and torch's separate ops.

The kernels see the tensors flattened (element-wise), tiles of up to 4096 elements.
"""
import sys

try:
    import torch
except ImportError as e:            # the gallery protocol: a script without torch skips
    if __name__ == "__main__":
        print(f"geglu: skipped: PyTorch is not installed ({e})")
        sys.exit(0)
    raise

import tilejit as tile

try:
    from . import _losses_common as common
except ImportError:                 # run as a script, or examples/liger on sys.path
    import _losses_common as common

F32 = tile.float32
SQRT_2_OVER_PI = 0.7978845608028654
CUBIC = 0.044715


@tile.function
def _half_tanh(a):
    """(1 + tanh(z)) / 2 = sigmoid(2 z), z = sqrt(2/pi) (a + 0.044715 a^3): gelu_tanh(a) is a times
    it, and 1 - tanh(z)^2 = 4 s (1 - s); one exp and one reciprocal an element."""
    return common.sigmoid((2.0 * SQRT_2_OVER_PI) * (a + CUBIC * a * a * a))


@tile.entry
def gelu_mul_forward(c, a, b):
    """c = gelu_tanh(a) * b; ``c`` a partition of the flat output."""
    ta = tile.load_tile_like(a, c).astype(F32)
    tb = tile.load_tile_like(b, c).astype(F32)
    act = (ta * _half_tanh(ta)).astype(b.dtype).astype(F32)
    c.store((act * tb).astype(c.dtype))


@tile.entry
def gelu_mul_backward(a, b, dc):
    """``a`` and ``b``: partitions of the saved inputs, overwritten with da and db."""
    g = tile.load_tile_like(dc, a).astype(F32)
    ta = a.load().astype(F32)
    tb = b.load().astype(F32)
    s = _half_tanh(ta)
    act = (ta * s).astype(dc.dtype).astype(F32)
    # d/da [a s(a)] = s + a * 2 s (1 - s) * sqrt(2/pi) (1 + 3 * 0.044715 a^2)
    dact = s + (2.0 * SQRT_2_OVER_PI) * ta * s * (1.0 - s) * (1.0 + (3.0 * CUBIC) * ta * ta)
    b.store((g * act).astype(b.dtype))
    a.store((g * tb * dact).astype(a.dtype))


def geglu_forward(a, b):
    c = torch.empty_like(a)
    n = c.numel()
    if n:
        common.launch(gelu_mul_forward(tile.partition(c.view(-1), (common.flat_tile(n),)),
                                       a.view(-1), b.view(-1)), c)
    return c


def geglu_backward(a, b, dc):
    """da, db written into ``a`` and ``b``; returns them."""
    n = a.numel()
    if n:
        tile_n = (common.flat_tile(n),)
        common.launch(gelu_mul_backward(tile.partition(a.view(-1), tile_n),
                                        tile.partition(b.view(-1), tile_n), dc.view(-1)), dc)
    return a, b


class LigerGELUMulFunction(torch.autograd.Function):
    """gelu_tanh(a) * b, with Liger's in-place backward."""

    @staticmethod
    def forward(ctx, a, b):
        if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
            raise ValueError(f"geglu: a and b must have one shape, dtype and device, got "
                             f"{tuple(a.shape)} {a.dtype} {a.device} and {tuple(b.shape)} "
                             f"{b.dtype} {b.device}")
        # detached: backward writes the gradients into their storage
        a, b = a.detach().contiguous(), b.detach().contiguous()
        c = geglu_forward(a, b)
        ctx.save_for_backward(a, b)
        return c

    @staticmethod
    def backward(ctx, dc):
        a, b = ctx.saved_tensors
        return geglu_backward(a, b, dc.contiguous())


def geglu(a, b):
    """gelu_tanh(a) * b (autograd: LigerGELUMulFunction)."""
    return LigerGELUMulFunction.apply(a, b)


def reference(a, b):
    """Plain torch: HF's ``gelu_pytorch_tanh`` times b."""
    return torch.nn.functional.gelu(a, approximate="tanh") * b


#: Liger's test_geglu.py test_correctness_functional tolerances (atol, rtol)
TOLERANCES = {"float32": (1e-5, 1e-5), "bfloat16": (1e-2, 1e-2)}


def check(shape, dtype, device="cpu", seed=0) -> bool:
    """Forward and backward against :func:`reference` with Liger's tolerances."""
    atol, rtol = TOLERANCES[str(dtype).split(".")[-1]]
    gen = torch.Generator().manual_seed(seed)
    a0, b0, dc = (torch.randn(shape, generator=gen).to(device=device, dtype=dtype)
                  for _ in range(3))
    a1, b1 = a0.clone().requires_grad_(), b0.clone().requires_grad_()
    a2, b2 = a0.clone().requires_grad_(), b0.clone().requires_grad_()
    want = reference(a1, b1)
    got = geglu(a2, b2)
    want.backward(dc)
    got.backward(dc)
    return all([common.close(got, want, atol, rtol),
                common.close(a2.grad, a1.grad, atol, rtol),
                common.close(b2.grad, b1.grad, atol, rtol)])


def main() -> int:
    gpu = torch.cuda.is_available() and not tile.Device(0).is_simulated
    device = "cuda" if gpu else "cpu"
    shapes = [(9, 7, 41)] + ([(2, 2, 8), (2, 512, 4096), (9, 41, 4231)] if gpu else [])
    ok = True
    for dtype in (torch.float32, torch.bfloat16):
        for shape in shapes:
            good = check(shape, dtype, device)
            if not good:
                print(f"  {dtype} {shape}: MISMATCH")
            ok &= good
    return common.report("geglu", f"forward and backward, {len(shapes)} shapes, float32 and "
                         f"bfloat16, {device}", ok)


if __name__ == "__main__":
    sys.exit(main())
