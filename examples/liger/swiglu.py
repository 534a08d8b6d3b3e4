"""SwiGLU, Liger-Kernel's ``LigerSiLUMulFunction``, in tilejit: c = silu(a * gate) * b * down.

    python examples/liger/swiglu.py

Forward reads a and b once and writes c; backward reads dc, a and b once and writes da into a's
storage and db into b's, as Liger's kernel does (the saved activations are not needed after
their gradient is known). silu is recomputed from a in backward rather than saved. Liger
multiplies c and dc by ``down_multiplier`` with separate torch ops when it is not 1; here it is
one more factor inside the kernels.

The kernels see a and b flattened (they are element-wise), tiles of up to 4096 elements; the
last tile is clipped at the end of the data.
"""
import sys

try:
    import torch
except ImportError as e:            # the gallery protocol: a script without torch skips
    if __name__ == "__main__":
        print(f"swiglu: skipped: PyTorch is not installed ({e})")
        sys.exit(0)
    raise

import tilejit as tile

try:
    from . import _losses_common as common
except ImportError:                 # run as a script, or examples/liger on sys.path
    import _losses_common as common

F32 = tile.float32


@tile.entry
def silu_mul_forward(c, a, b, gate, down):
    """c = silu(a * gate) * b * down; ``c`` a partition of the flat output."""
    ta = tile.load_tile_like(a, c).astype(F32) * gate
    tb = tile.load_tile_like(b, c).astype(F32)
    # silu rounded to the inputs' dtype before the product, as Liger (and torch) round it
    silu = (ta * common.sigmoid(ta)).astype(b.dtype).astype(F32)
    c.store((silu * tb * down).astype(c.dtype))


@tile.entry
def silu_mul_backward(a, b, dc, gate, down):
    """``a`` and ``b``: partitions of the saved inputs, overwritten with da and db."""
    g = tile.load_tile_like(dc, a).astype(F32) * down
    ta = a.load().astype(F32) * gate
    tb = b.load().astype(F32)
    s = common.sigmoid(ta)
    silu = ta * s
    b.store((g * silu).astype(b.dtype))
    a.store((g * (silu * (1.0 - s) + s) * tb * gate).astype(a.dtype))


def _flat(t):
    return t.view(-1)


def swiglu_forward(a, b, gate_multiplier=1.0, down_multiplier=1.0):
    c = torch.empty_like(a)
    n = c.numel()
    if n:
        part = tile.partition(_flat(c), (common.flat_tile(n),))
        common.launch(silu_mul_forward(part, _flat(a), _flat(b), float(gate_multiplier),
                                       float(down_multiplier)), c)
    return c


def swiglu_backward(a, b, dc, gate_multiplier=1.0, down_multiplier=1.0):
    """da, db written into ``a`` and ``b``; returns them."""
    n = a.numel()
    if n:
        tile_n = (common.flat_tile(n),)
        common.launch(silu_mul_backward(tile.partition(_flat(a), tile_n),
                                        tile.partition(_flat(b), tile_n), _flat(dc),
                                        float(gate_multiplier), float(down_multiplier)), dc)
    return a, b


def _check_inputs(a, b):
    if type(a).__name__ == "DTensor" or type(b).__name__ == "DTensor":
        raise NotImplementedError("LigerSiLUMulFunction (tilejit gallery): DTensor inputs are not "
                                  "supported; pass the local tensors (t.to_local())")
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        raise ValueError(f"swiglu: a and b must have one shape, dtype and device, got "
                         f"{tuple(a.shape)} {a.dtype} {a.device} and {tuple(b.shape)} {b.dtype} "
                         f"{b.device}")


class LigerSiLUMulFunction(torch.autograd.Function):
    """silu(a * gate_multiplier) * b * down_multiplier, with Liger's in-place backward."""

    @staticmethod
    def forward(ctx, a, b, gate_multiplier: float = 1.0, down_multiplier: float = 1.0):
        _check_inputs(a, b)
        # detached: backward writes the gradients into their storage
        a, b = a.detach().contiguous(), b.detach().contiguous()
        ctx.gate_multiplier = float(gate_multiplier)
        ctx.down_multiplier = float(down_multiplier)
        c = swiglu_forward(a, b, ctx.gate_multiplier, ctx.down_multiplier)
        ctx.save_for_backward(a, b)
        return c

    @staticmethod
    def backward(ctx, dc):
        a, b = ctx.saved_tensors
        da, db = swiglu_backward(a, b, dc.contiguous(), ctx.gate_multiplier, ctx.down_multiplier)
        return da, db, None, None


def swiglu(a, b, gate_multiplier: float = 1.0, down_multiplier: float = 1.0):
    """silu(a * gate_multiplier) * b * down_multiplier (autograd: LigerSiLUMulFunction)."""
    return LigerSiLUMulFunction.apply(a, b, gate_multiplier, down_multiplier)


def reference(a, b, gate_multiplier=1.0, down_multiplier=1.0):
    """Liger's test reference: plain torch."""
    return torch.nn.functional.silu(a * gate_multiplier) * b * down_multiplier


#: Liger's test_swiglu.py test_correctness_silumul_with_multipliers tolerances (atol, rtol)
TOLERANCES = {"float32": (1e-3, 1e-5), "bfloat16": (1e-1, 1e-2)}


def check(shape, dtype, gate=1.0, down=1.0, device="cpu", seed=0) -> bool:
    """Forward and backward against :func:`reference` with Liger's tolerances."""
    atol, rtol = TOLERANCES[str(dtype).split(".")[-1]]
    gen = torch.Generator().manual_seed(seed)
    a0 = torch.randn(shape, generator=gen).to(device=device, dtype=dtype)
    b0 = torch.randn(shape, generator=gen).to(device=device, dtype=dtype)
    dc = torch.randn(shape, generator=gen).to(device=device, dtype=dtype)
    a1, b1 = a0.clone().requires_grad_(), b0.clone().requires_grad_()
    a2, b2 = a0.clone().requires_grad_(), b0.clone().requires_grad_()
    want = reference(a1, b1, gate, down)
    got = swiglu(a2, b2, gate, down)
    want.backward(dc)
    got.backward(dc)
    return all([common.close(got, want, atol, rtol),
                common.close(a2.grad, a1.grad, atol, rtol),
                common.close(b2.grad, b1.grad, atol, rtol)])


def main() -> int:
    gpu = torch.cuda.is_available() and not tile.Device(0).is_simulated
    device = "cuda" if gpu else "cpu"
    shapes = [(9, 7, 41)] + ([(2, 8, 8), (2, 256, 4096), (6, 42, 431)] if gpu else [])
    ok = True
    for dtype in (torch.float32, torch.bfloat16):
        for shape in shapes:
            for gate, down in ((1.0, 1.0), (0.7, 1.3)):
                good = check(shape, dtype, gate, down, device)
                if not good:
                    print(f"  {dtype} {shape} gate={gate} down={down}: MISMATCH")
                ok &= good
    return common.report("swiglu", f"forward and backward, {len(shapes)} shapes, float32 and "
                         f"bfloat16, with and without multipliers, {device}", ok)


if __name__ == "__main__":
    sys.exit(main())
