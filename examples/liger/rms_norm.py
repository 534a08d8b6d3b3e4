"""Liger-Kernel's RMSNorm in tilejit: ``y = x / sqrt(mean(x^2) + eps) * (offset + w)``, forward and
backward, as a ``torch.autograd.Function`` with the arguments of Liger's ``LigerRMSNormFunction``.

    python examples/liger/rms_norm.py

Forward: a block normalizes a (ROWS, WIDTH) tile of whole rows (WIDTH the row length rounded up
to a power of two, several rows a block when they are short) and saves each row's 1/rms.
Backward: a persistent kernel, a few blocks per multiprocessor, each looping over row tiles: dx
from the saved 1/rms (written over dy with ``in_place=True``, as Liger does), and its rows'
share of dw summed in float32 into one partial row per block; torch sums the partial rows
(Liger's algorithm). ``casting_mode`` follows Liger and HuggingFace: ``"llama"`` (1/rms in
float32, the normalized row rounded to x's dtype before the weight), ``"gemma"`` (everything in
float32) and ``"none"`` (x's dtype throughout; the sum of squares is still accumulated in
float32).
"""
import sys

try:
    import torch
except ImportError:                 # a script run says so; importing the module needs torch
    if __name__ == "__main__":
        print("rms_norm: skipped: PyTorch is not installed (pip install torch)")
        sys.exit(0)
    raise

import tilejit as tile

try:
    from . import _common as C
except ImportError:                 # run as a script: its folder is sys.path[0]
    import _common as C

ZERO = tile.PaddingMode.ZERO
F32 = tile.float32

#: Liger's casting modes and their numbers (its Function takes either)
LLAMA, GEMMA, NONE = 0, 1, -1
CASTING_MODES = {"llama": LLAMA, "gemma": GEMMA, "none": NONE}


@tile.entry
def rms_norm_fwd(y, x, w, rstd, eps, offset, MODE: tile.Constant[int],
                 AFFINE: tile.Constant[bool]):
    """``y``: a partition of whole rows; ``rstd``: writable (rows,); ``w`` unused without
    ``AFFINE``."""
    BM, BN = y.shape
    i = y.block[0]
    t = x.load((i, 0), (BM, BN), padding=ZERO)
    # zero padding adds nothing to the sum; one division a block rather than one a row
    inv_n = 1.0 / x.shape[1]
    if MODE == NONE:
        rs = tile.rsqrt(tile.sum((t * t).astype(F32), axis=1, keepdims=True) * inv_n + eps)
        rs = rs.astype(x.dtype)
        n = t * rs
        if AFFINE:
            n = n * (w.load((0,), (BN,), padding=ZERO) + offset)[None, :]
    else:
        tf = t.astype(F32)
        rs = tile.rsqrt(tile.sum(tf * tf, axis=1, keepdims=True) * inv_n + eps)
        n = tf * rs
        if MODE == LLAMA:
            n = n.astype(x.dtype).astype(F32)       # HuggingFace Llama: weight times x's dtype
        if AFFINE:
            n = n * (w.load((0,), (BN,), padding=ZERO).astype(F32) + offset)[None, :]
    tile.store(rstd.partition((BM,)), (i,), rs.reshape((BM,)).astype(rstd.dtype))
    y.store(n.astype(y.dtype))


@tile.entry
def rms_norm_bwd(dx, dy, x, w, rstd, dw_part, offset, ROWS: tile.Constant[int],
                 WIDTH: tile.Constant[int], MODE: tile.Constant[int],
                 AFFINE: tile.Constant[bool], IN_PLACE: tile.Constant[bool]):
    """``dx`` writable (rows, n) (dy itself with ``IN_PLACE``: ``dy`` is then not read);
    ``dw_part`` writable (blocks, n) float32, one row a block; grid: (blocks, 1, 1)."""
    inv_n = 1.0 / x.shape[1]
    b = tile.bid(0)
    out = dx.partition((ROWS, WIDTH))
    if AFFINE:
        wv = (w.load((0,), (WIDTH,), padding=ZERO).astype(F32) + offset)[None, :]
        acc = tile.zeros((1, WIDTH), F32)
    for r in range(b, tile.cdiv(x.shape[0], ROWS), tile.num_blocks(0)):
        if IN_PLACE:
            g = dx.load((r, 0), (ROWS, WIDTH), padding=ZERO).astype(F32)
        else:
            g = dy.load((r, 0), (ROWS, WIDTH), padding=ZERO).astype(F32)
        t = x.load((r, 0), (ROWS, WIDTH), padding=ZERO).astype(F32)
        rs = rstd.load((r,), (ROWS,), padding=ZERO).astype(F32)[:, None]  # 0 past the last row
        m = g * wv if AFFINE else g
        dot = tile.sum(m * t, axis=1, keepdims=True) * inv_n
        tile.store(out, (r, 0), (rs * (m - dot * rs * rs * t)).astype(dx.dtype))
        if AFFINE:
            n = t * rs
            if MODE == LLAMA:
                n = n.astype(x.dtype).astype(F32)
            acc += tile.sum(g * n, axis=0, keepdims=True)
    if AFFINE:
        tile.store(dw_part.partition((1, WIDTH)), (b, 0), acc)


def _mode(casting_mode) -> int:
    if isinstance(casting_mode, str):
        if casting_mode not in CASTING_MODES:
            raise ValueError(f"casting_mode must be one of {sorted(CASTING_MODES)} (or "
                             f"{sorted(CASTING_MODES.values())}), got {casting_mode!r}")
        return CASTING_MODES[casting_mode]
    if casting_mode not in CASTING_MODES.values():
        raise ValueError(f"casting_mode must be one of {sorted(CASTING_MODES)} (or "
                         f"{sorted(CASTING_MODES.values())}), got {casting_mode!r}")
    return int(casting_mode)


def rms_norm_forward(X, W, eps, offset, casting_mode):
    """(Y in X's shape, X as rows, RSTD, mode): RSTD float32 for "llama"/"gemma", X's dtype for
    "none" (as Liger keeps it)."""
    mode = _mode(casting_mode)
    shape = X.shape
    X = C.rows2d(X)
    n_rows, n_cols = X.shape
    if W is not None and W.shape != (n_cols,):
        raise ValueError(f"W must have shape ({n_cols},) to match X's last dimension, got "
                         f"{tuple(W.shape)}")
    w = C.width(n_cols)
    Y = torch.empty_like(X)
    RSTD = torch.empty(n_rows, dtype=X.dtype if mode == NONE else torch.float32,
                       device=X.device)
    C.run(rms_norm_fwd(tile.partition(Y, (C.rows_per_block(w, C.NORM_ROW_TILE), w)), X,
                       W if W is not None else X, tile.atomic(RSTD), float(eps), float(offset),
                       mode, W is not None), X)
    return Y.view(shape), X, RSTD, mode


def rms_norm_backward(dY, X, W, RSTD, offset, mode, in_place):
    shape = dY.shape
    dY = C.rows2d(dY)
    n_rows, n_cols = dY.shape
    w = C.width(n_cols)
    rows = C.rows_per_block(w, C.BWD_ROW_TILE)
    grid = C.persistent_grid(tile.cdiv(n_rows, rows), X)
    dX = dY if in_place else torch.empty_like(dY)
    dw_part = torch.empty((grid, n_cols), dtype=torch.float32, device=X.device) \
        if W is not None else X
    C.run(rms_norm_bwd(tile.atomic(dX), X if in_place else dY, X,
                       W if W is not None else X, RSTD,
                       tile.atomic(dw_part) if W is not None else X, float(offset), rows, w,
                       mode, W is not None, bool(in_place)).grid((grid, 1, 1)), X)
    dW = dw_part.sum(dim=0).to(W.dtype) if W is not None else None
    return dX.view(shape), dW


class LigerRMSNormFunction(torch.autograd.Function):
    """RMSNorm with Liger's arguments: ``apply(X, W, eps, offset=0.0, casting_mode="llama",
    in_place=True, row_mode=None)``. ``W`` may be None (no elementwise affine). ``in_place``
    writes dX over dY (saves memory; not when dY is needed again). ``row_mode`` picks Liger's
    Triton kernel variant; here every size takes the same kernels, so it is accepted and
    ignored."""

    @staticmethod
    def forward(ctx, X, W, eps, offset=0.0, casting_mode="llama", in_place=True, row_mode=None):
        Y, X2, RSTD, mode = rms_norm_forward(X, W, eps, offset, casting_mode)
        ctx.offset, ctx.mode, ctx.in_place = offset, mode, in_place
        ctx.affine = W is not None
        if W is not None:
            ctx.save_for_backward(X2, W, RSTD)
        else:
            ctx.save_for_backward(X2, RSTD)
        return Y

    @staticmethod
    def backward(ctx, dY):
        if ctx.affine:
            X, W, RSTD = ctx.saved_tensors
        else:
            (X, RSTD), W = ctx.saved_tensors, None
        dX, dW = rms_norm_backward(dY, X, W, RSTD, ctx.offset, ctx.mode, ctx.in_place)
        return dX, dW, None, None, None, None, None


def rms_norm(X, W, eps=1e-6, offset=0.0, casting_mode="llama", in_place=True):
    """Functional form: RMSNorm over the last dimension of ``X``."""
    return LigerRMSNormFunction.apply(X, W, eps, offset, casting_mode, in_place)


class LigerRMSNorm(torch.nn.Module):
    """A drop-in RMSNorm layer (Liger's ``LigerRMSNorm`` arguments)."""

    def __init__(self, hidden_size, eps=1e-6, offset=0.0, casting_mode="llama",
                 init_fn="ones", in_place=True, elementwise_affine=True):
        super().__init__()
        if init_fn not in ("ones", "zeros"):
            raise ValueError(f"init_fn must be 'ones' or 'zeros', got {init_fn!r}")
        if elementwise_affine:
            self.weight = torch.nn.Parameter((torch.ones if init_fn == "ones" else torch.zeros)(
                hidden_size))
        else:
            self.register_parameter("weight", None)
        self.variance_epsilon, self.offset = eps, offset
        self.casting_mode, self.in_place = casting_mode, in_place

    def forward(self, hidden_states):
        return LigerRMSNormFunction.apply(hidden_states, self.weight, self.variance_epsilon,
                                          self.offset, self.casting_mode, self.in_place)


# --- the self-check -------------------------------------------------------------------------------
def reference(x, w, eps, offset, mode, dtype=None):
    """HuggingFace's RMSNorm of each casting mode (Liger's test references); ``dtype``: the
    inputs' dtype where ``x`` and ``w`` are their float32 copies (Llama's normalized row is
    still rounded to it)."""
    if mode == "llama":
        xf = x.float()
        h = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(dtype or x.dtype)
        h = h.to(x.dtype)
        return h if w is None else (offset + w) * h
    if mode == "gemma":
        xf = x.float()
        h = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        return (h if w is None else h * (offset + w.float())).to(x.dtype)
    h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return (h if w is None else (offset + w) * h).to(x.dtype)


#: Liger's test tolerances (test/transformers/test_rms_norm.py): (atol, rtol)
TOLERANCE = {torch.float32: (1e-4, 1e-6), torch.bfloat16: (2e-1, 2e-2)}


def check(shape, dtype, mode="llama", offset=0.0, in_place=True, affine=True, device="cpu",
          eps=1e-6, float32_reference=False):
    """Forward and backward against :func:`reference`: a list of what differs (empty: ok).
    ``float32_reference``: the reference computes in float32 from the same inputs (for many
    rows, where a reference in bfloat16 drifts from both past Liger's tolerance)."""
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(*shape, generator=g).to(device, dtype)
    w0 = torch.randn(shape[-1], generator=g).to(device, dtype) if affine else None
    dy = torch.randn(*shape, generator=g).to(device, dtype)
    atol, rtol = TOLERANCE[dtype]
    leaves = [x0.clone().requires_grad_(True)] + ([w0.clone().requires_grad_(True)] if affine
                                                  else [])
    y = LigerRMSNormFunction.apply(leaves[0], leaves[1] if affine else None, eps, offset, mode,
                                   in_place)
    y.backward(dy.clone())           # in_place writes dx over the gradient it is given
    rdt = torch.float32 if float32_reference else dtype
    refs = [x0.to(rdt).requires_grad_(True)] + ([w0.to(rdt).requires_grad_(True)] if affine
                                                else [])
    yr = reference(refs[0], refs[1] if affine else None, eps, offset, mode, dtype)
    yr.backward(dy.to(rdt))
    yr = yr.to(dtype)
    tag = f"{tuple(shape)} {str(dtype)[6:]} {mode}"
    out = [C.check_close(f"{tag} y", y, yr, atol, rtol),
           C.check_close(f"{tag} dx", leaves[0].grad, refs[0].grad.to(dtype), atol, rtol)]
    if affine:
        out.append(C.check_close(f"{tag} dw", leaves[1].grad, refs[1].grad.to(dtype), atol,
                                 rtol))
    return [p for p in out if p]


def main() -> int:
    dev = C.device_for_check()
    shapes = [(2, 128, 512), (5, 123, 123)] if dev == "cuda" else [(2, 8, 64), (3, 5, 41)]
    problems = []
    for shape in shapes:
        for dtype in (torch.float32, torch.bfloat16):
            for mode, offset in (("llama", 0.0), ("gemma", 1.0), ("none", 0.0)):
                problems += check(shape, dtype, mode, offset, in_place=mode != "gemma",
                                  device=dev)
        problems += check(shape, torch.float32, affine=False, device=dev)
    return C.report("rms_norm", f"{len(shapes)} shapes x float32/bfloat16 x llama/gemma/none "
                    f"(in place and not, with and without w) on {dev}, forward and backward",
                    problems)


if __name__ == "__main__":
    sys.exit(main())
