"""KL divergence, Liger-Kernel's ``LigerKLDivLossFunction``, in tilejit.

    python examples/liger/kl_div.py

loss = y_true * (log(max(y_true, eps)) - y_pred), or exp(y_true) * (y_true - y_pred) with
``log_target``, y_pred in log space (torch's ``KLDivLoss``). Forward reads both (BT, V) inputs
once: with ``reduction="none"`` it writes the elements' losses (float32, as Liger), else each
row's sum (blocks of whole rows, or one row in chunks when rows are long), which torch reduces as
Liger does. The gradient is -y_true (-exp(y_true)) times the upstream gradient and the
reduction's normalizer: one kernel reads y_true and the upstream gradient from the device, where
Liger compares the gradient with 1 on the host, then multiplies and divides with torch ops.
"""
import sys
import warnings

try:
    import torch
except ImportError as e:            # the gallery protocol: a script without torch skips
    if __name__ == "__main__":
        print(f"kl_div: skipped: PyTorch is not installed ({e})")
        sys.exit(0)
    raise

import tilejit as tile

try:
    from . import _losses_common as common
except ImportError:                 # run as a script, or examples/liger on sys.path
    import _losses_common as common

F32 = tile.float32
REDUCTIONS = ("none", "sum", "mean", "batchmean")


@tile.function
def _kl(p, t, eps, LOG_TARGET):
    """The elements' losses of prediction ``p`` (log space) against target ``t``, float32."""
    if LOG_TARGET:
        return tile.exp(t) * (t - p)
    return t * (tile.log(tile.maximum(t, eps)) - p)


@tile.entry
def kl_div_elements(out, y_pred, y_true, eps, LOG_TARGET: tile.Constant[bool]):
    """``out``: a partition of the (BT, V) float32 losses (reduction "none")."""
    p = tile.load_tile_like(y_pred, out).astype(F32)
    t = tile.load_tile_like(y_true, out).astype(F32)
    out.store(_kl(p, t, eps, LOG_TARGET))


@tile.entry
def kl_div_rows(out, y_pred, y_true, eps, CHUNK: tile.Constant[int],
                LOG_TARGET: tile.Constant[bool]):
    """``out``: a partition (ROWS,) of the rows' sums; the rows in chunks of CHUNK columns (zero
    padding past the row: the loss of (0, 0) is 0)."""
    (ROWS,) = out.shape
    i = out.block[0]
    acc = tile.zeros((ROWS, CHUNK), F32)        # element-wise; one reduction after the loop
    for j in range(tile.cdiv(y_pred.shape[1], CHUNK)):
        p = y_pred.load((i, j), (ROWS, CHUNK)).astype(F32)
        t = y_true.load((i, j), (ROWS, CHUNK)).astype(F32)
        acc += _kl(p, t, eps, LOG_TARGET)
    out.store(tile.sum(acc, axis=1))


@tile.entry
def kl_div_grad(dx, y_true, g, scale, PER_ELEMENT: tile.Constant[bool],
                LOG_TARGET: tile.Constant[bool]):
    """dx = -y_true (-exp(y_true)) * g * scale; ``g`` one element, or (PER_ELEMENT) y_true's
    shape (the upstream gradient of "none"); ``dx`` a partition of the flat gradient."""
    t = tile.load_tile_like(y_true, dx).astype(F32)
    if PER_ELEMENT:
        gs = tile.load_tile_like(g, dx).astype(F32) * scale
    else:
        gs = g.load((0,), ()).astype(F32) * scale
    if LOG_TARGET:
        t = tile.exp(t)
    dx.store((-t * gs).astype(dx.dtype))


def kldiv_forward(y_pred, y_true, log_target, reduction, eps):
    BT, V = y_pred.shape
    rows, chunk = common.row_block(V)
    if reduction == "none":
        out = torch.empty(BT, V, dtype=torch.float32, device=y_pred.device)
        if out.numel():
            common.launch(kl_div_elements(tile.partition(out, (rows, chunk)), y_pred, y_true,
                                          float(eps), bool(log_target)), out)
        return out
    out = torch.empty(BT, dtype=torch.float32, device=y_pred.device)
    if BT:
        common.launch(kl_div_rows(tile.partition(out, (rows,)), y_pred, y_true, float(eps), chunk,
                                  bool(log_target)), out)
    if reduction == "batchmean":
        return out.sum() / BT
    if reduction == "sum":
        return out.sum(dim=0)
    return out.sum() / (BT * V)


def kldiv_backward(y_true, grad_output, log_target, reduction, dtype):
    BT, V = y_true.shape
    dx = torch.empty(y_true.shape, dtype=dtype, device=y_true.device)
    scale = {"batchmean": 1.0 / max(BT, 1), "mean": 1.0 / max(BT * V, 1)}.get(reduction, 1.0)
    per_element = grad_output.numel() > 1 or reduction == "none"
    g = grad_output.contiguous() if per_element else grad_output.reshape(1)
    if per_element:
        g = g.expand(BT, V).contiguous() if g.shape != (BT, V) else g
        g = g.view(-1)
    if dx.numel():
        common.launch(kl_div_grad(tile.partition(dx.view(-1), (common.flat_tile(dx.numel()),)),
                                  y_true.view(-1), g, scale, per_element, bool(log_target)), dx)
    return dx


class LigerKLDivLossFunction(torch.autograd.Function):
    """KL(y_true || y_pred) with y_pred in log space (torch's ``KLDivLoss``), reduced by
    ``reduction`` ("batchmean", "sum", "mean" or "none")."""

    @staticmethod
    def forward(ctx, y_pred, y_true, reduction="batchmean", log_target: bool = False,
                eps: float = 1e-10):
        if reduction not in REDUCTIONS:
            raise ValueError(f"kl_div: reduction must be one of {REDUCTIONS}, got {reduction!r}")
        if y_pred.dim() != 2 or y_true.shape != y_pred.shape:
            raise ValueError(f"kl_div: y_pred and y_true must be (BT, V) of one shape, got "
                             f"{tuple(y_pred.shape)} and {tuple(y_true.shape)}")
        y_pred, y_true = y_pred.detach().contiguous(), y_true.detach().contiguous()
        ctx.save_for_backward(y_true)
        ctx.reduction, ctx.log_target, ctx.dtype = reduction, log_target, y_pred.dtype
        return kldiv_forward(y_pred, y_true, log_target, reduction, eps)

    @staticmethod
    def backward(ctx, grad_output):
        (y_true,) = ctx.saved_tensors
        dx = kldiv_backward(y_true, grad_output, ctx.log_target, ctx.reduction, ctx.dtype)
        return dx, None, None, None, None


def kl_div(y_pred, y_true, reduction="batchmean", log_target=False, eps=1e-10):
    """KL divergence loss (autograd: LigerKLDivLossFunction)."""
    return LigerKLDivLossFunction.apply(y_pred, y_true, reduction, log_target, eps)


class LigerKLDIVLoss(torch.nn.KLDivLoss):
    """``torch.nn.KLDivLoss`` computed by the gallery's kernels."""

    def __init__(self, eps: float = 1e-10, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.eps = eps

    def forward(self, y_pred, y_true):
        return kl_div(y_pred, y_true, self.reduction, self.log_target, self.eps)


#: Liger's test_kl_div.py tolerances (atol, rtol)
TOLERANCES = {"float32": (1e-8, 1e-6), "bfloat16": (1e-8, 5e-2), "float16": (1e-3, 1e-3)}


def check(BT, V, dtype, reduction, log_target, device="cpu", last_layer=True, seed=0) -> bool:
    """Forward and (except "none") backward against torch's ``KLDivLoss`` (Liger's test)."""
    atol, rtol = TOLERANCES[str(dtype).split(".")[-1]]
    gen = torch.Generator().manual_seed(seed)
    x0 = torch.randn(BT, V, generator=gen).to(device, dtype).log_softmax(dim=-1)
    target = torch.randn(BT, V, generator=gen).to(device).softmax(dim=-1)
    if log_target:
        target = target.log()
    x1, x2 = x0.clone().requires_grad_(), x0.clone().requires_grad_()
    with warnings.catch_warnings():     # torch's note that "mean" divides by BT * V
        warnings.simplefilter("ignore", UserWarning)
        want = torch.nn.KLDivLoss(reduction=reduction, log_target=log_target)(x1, target)
    got = kl_div(x2, target, reduction, log_target)
    ok = common.close(got, want, atol, rtol)
    if reduction == "none":
        g = torch.rand(want.shape, generator=gen).to(device, want.dtype)
        want.backward(g)
        got.backward(g)
    else:
        if not last_layer:
            want, got = want * 2.0, got * 2.0
        want.backward()
        got.backward()
    return ok and common.close(x2.grad, x1.grad, atol, rtol)


def main() -> int:
    gpu = torch.cuda.is_available() and not tile.Device(0).is_simulated
    device = "cuda" if gpu else "cpu"
    sizes = [(9, 300)] + ([(9, 5000), (4096, 32000), (41 * 401, 1271)] if gpu else [])
    ok = True
    n = 0
    for dtype in (torch.float32, torch.bfloat16):
        for BT, V in sizes:
            for reduction in REDUCTIONS:
                for log_target in (False, True):
                    good = check(BT, V, dtype, reduction, log_target, device,
                                 last_layer=n % 2 == 0)
                    n += 1
                    if not good:
                        print(f"  {dtype} ({BT}, {V}) {reduction} log_target={log_target}: "
                              f"MISMATCH")
                    ok &= good
    return common.report("kl_div", f"forward and backward, {len(sizes)} sizes, 4 reductions, "
                         f"log_target or not, float32 and bfloat16, {device}", ok)


if __name__ == "__main__":
    sys.exit(main())
