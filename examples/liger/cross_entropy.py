"""Cross entropy with its gradient computed in forward, Liger-Kernel's
``LigerCrossEntropyFunction``, in tilejit.

    python examples/liger/cross_entropy.py

Liger's algorithm: one block per row of the (BT, V) logits, two passes over the row in chunks.

1. An online softmax (Milakov and Gimelshein's algorithm 3), kept per lane of the chunk: each
   lane's running maximum and its sum of exp(x - max), rescaled when the maximum grows, merged
   across the lanes once after the loop (no reduction across the block per chunk); also each
   lane's argmax (token accuracy, predicted tokens) and, for label smoothing, its sum of logits
   (times the class weights).
2. The gradient, written over the logits in place (the forward keeps no logits for backward):
   softmax(x) / N, minus (1 - label_smoothing) / N at the target, with the label-smoothing,
   class-weight, z-loss and softcap terms; the target column's correction is made in float32
   before rounding (a select on the column), so (p_y - 1) / N keeps its bits in bf16.

Then the row's loss (lse - x_y, smoothed, weighted, normalized, plus the z-loss
lse_square_scale * lse^2). Rows whose target is ``ignore_index`` get a zero gradient and loss.
With ``reduction="mean"`` the gradient is already divided by the number of counted rows (or the
sum of their class weights); backward returns the stored gradient as it is for the usual
``loss.backward()`` (a gradient of 1, Liger's test), else scales it in place.

Host work: Liger reads the counted rows, and checks the targets, with three host syncs (four
more with class weights); here one ``.tolist()`` reads all of them.
"""
import math
import sys

try:
    import torch
except ImportError as e:            # the gallery protocol: a script without torch skips
    if __name__ == "__main__":
        print(f"cross_entropy: skipped: PyTorch is not installed ({e})")
        sys.exit(0)
    raise

import tilejit as tile

try:
    from . import _losses_common as common
except ImportError:                 # run as a script, or examples/liger on sys.path
    import _losses_common as common

F32 = tile.float32
LOG2E = 1.4426950408889634
NEG_INF = tile.PaddingMode.NEG_INF
REDUCTIONS = ("mean", "sum", "none")
NEVER = -3.0e38             # below every logit; unlike -inf, x - NEVER is never NaN
#: columns of a row a block loads at once (the row's length rounded up to a power of two when
#: shorter), halved when each lane also tracks its argmax or its smoothing sum (more registers)
CHUNK = 8192


@tile.entry
def cross_entropy_kernel(X, Y, W, loss, zloss, acc, pred, rscale,
                         n_non_ignore, sum_weight, weight_sum, ignore_index, lse_square_scale,
                         label_smoothing, softcap,
                         CHUNK: tile.Constant[int], MEAN: tile.Constant[bool],
                         HAS_GRAD: tile.Constant[bool], HAS_WEIGHT: tile.Constant[bool],
                         HAS_SMOOTHING: tile.Constant[bool], HAS_SOFTCAP: tile.Constant[bool],
                         RETURN_Z: tile.Constant[bool], RETURN_ARGMAX: tile.Constant[bool],
                         ROW_SCALE: tile.Constant[bool], TOKEN_SCALE: tile.Constant[bool]):
    """Row ``bid`` of the logits ``X`` (writable when HAS_GRAD: its gradient goes there).

    ``Y`` (rows,) targets; ``W`` (V,) class weights (HAS_WEIGHT); ``loss`` (rows,) out;
    ``zloss`` (rows,) out (RETURN_Z); ``acc`` (rows,) float32 and ``pred`` (rows,) int64 out
    (RETURN_ARGMAX); ``rscale`` (rows,) a factor of the row's gradient (ROW_SCALE: the upstream
    gradient of an unreduced loss); TOKEN_SCALE multiplies the row's loss and gradient by the
    (detached) probability of its target. Parameters not used under the constants are dummies.
    """
    i = tile.bid(0)
    V = X.shape[1]
    nchunks = tile.cdiv(V, CHUNK)
    y = Y.load((i,), ())
    if y == ignore_index:
        if HAS_GRAD:
            zero = tile.zeros((1, CHUNK), X.dtype)
            for j in range(nchunks):
                tile.store(X, (i, j), zero)
        tile.store(loss, (i,), tile.zeros((), loss.dtype))
        if RETURN_Z:
            tile.store(zloss, (i,), tile.zeros((), zloss.dtype))
        if RETURN_ARGMAX:
            tile.store(acc, (i,), tile.zeros((), acc.dtype))
            tile.store(pred, (i,), tile.full((), -1, pred.dtype))
        return

    inv_cap = 1.0 / softcap
    xy = X.load((i, y), ()).astype(F32)
    if HAS_SOFTCAP:
        xy = softcap * tile.tanh(xy * inv_cap)

    # 1. online softmax, lane by lane (no reduction across the block until the loop ends): each
    # of the CHUNK lanes keeps the largest logit it has seen, mv, and dv, the sum of exp(x - mv)
    # over its columns, rescaled when mv grows; one exp per element, exp(-|x - mv|). Also each
    # lane's first column holding its maximum (argmax) and its sum of logits (smoothing).
    mv = tile.full((1, CHUNK), NEVER, F32)       # finite: a lane without a column adds exp(-inf)
    dv = tile.zeros((1, CHUNK), F32)
    iv = tile.zeros((1, CHUNK), tile.int32)
    sv = tile.zeros((1, CHUNK), F32)
    for j in range(nchunks):
        t = X.load((i, j), (1, CHUNK), padding=NEG_INF).astype(F32)
        cols = j * CHUNK + tile.arange(CHUNK)[None, :]
        if HAS_SOFTCAP:         # tanh(-inf) is -1: the padding is put back to -inf
            t = tile.where(cols < V, softcap * tile.tanh(t * inv_cap), -math.inf)
        e = tile.exp2(-tile.abs(t - mv) * LOG2E)
        up = t > mv
        dv = tile.where(up, dv * e + 1.0, dv + e)
        if RETURN_ARGMAX:
            iv = tile.where(up, cols, iv)
        mv = tile.where(up, t, mv)
        if HAS_SMOOTHING:
            if HAS_WEIGHT:
                sv += tile.where(cols < V, t * W.load((j,), (CHUNK,)).astype(F32)[None, :], 0.0)
            else:
                sv += tile.where(cols < V, t, 0.0)
    m = tile.max(mv)
    d = tile.sum(dv * tile.exp2((mv - m) * LOG2E))
    lse = m + tile.log(d)
    best = tile.min(tile.where(mv == m, iv, V))
    sx = tile.sum(sv)

    # the row's scalars: normalizers, class weight of the target, extra factors
    eps = label_smoothing / V
    keep = 1.0 - label_smoothing
    s_ce = 1.0
    s_z = 1.0
    if MEAN:
        s_z = 1.0 / n_non_ignore
        s_ce = 1.0 / sum_weight if HAS_WEIGHT else s_z
    wy = 1.0
    if HAS_WEIGHT:
        wy = W.load((y,), ()).astype(F32)
    factor = 1.0
    if TOKEN_SCALE:
        factor = tile.exp2((xy - lse) * LOG2E)
    gfactor = factor
    if ROW_SCALE:
        gfactor = factor * rscale.load((i,), ()).astype(F32)

    # 2. the gradient, over the logits: p * c1 + c0 (- eps * s_ce * w_col with class weights),
    # and at the target column + cy
    if HAS_GRAD:
        inv_d = 1.0 / d
        z_term = 2.0 * lse_square_scale * lse * s_z
        if HAS_WEIGHT:
            c1 = (keep * wy * s_ce + eps * weight_sum * s_ce + z_term) * gfactor
            c0 = -eps * s_ce * gfactor
        else:
            c1 = (s_ce + z_term) * gfactor
            c0 = -eps * s_ce * gfactor
        cy = -keep * wy * s_ce * gfactor
        for j in range(nchunks):
            t = X.load((i, j), (1, CHUNK), padding=NEG_INF).astype(F32)
            cols = j * CHUNK + tile.arange(CHUNK)[None, :]
            th = t
            if HAS_SOFTCAP:
                th = tile.tanh(t * inv_cap)
                t = softcap * th
            p = tile.exp2((t - m) * LOG2E) * inv_d
            if HAS_WEIGHT:
                g = p * c1 + c0 * W.load((j,), (CHUNK,)).astype(F32)[None, :]
            else:
                g = p * c1 + c0
            g = tile.where(cols == y, g + cy, g)
            if HAS_SOFTCAP:
                g = g * (1.0 - th * th)
            tile.store(X, (i, j), g.astype(X.dtype))

    # 3. the loss
    row_loss = lse - xy
    if HAS_WEIGHT:
        row_loss = row_loss * wy
    if HAS_SMOOTHING:
        if HAS_WEIGHT:
            smooth = eps * (lse * weight_sum - sx)
        else:
            smooth = label_smoothing * lse - eps * sx
        row_loss = row_loss * keep + smooth
    z = lse_square_scale * lse * lse * s_z
    row_loss = (row_loss * s_ce + z) * factor
    tile.store(loss, (i,), row_loss.astype(loss.dtype))
    if RETURN_Z:
        tile.store(zloss, (i,), (z * factor).astype(zloss.dtype))
    if RETURN_ARGMAX:
        tile.store(acc, (i,), tile.where(best == y, 1.0, 0.0).astype(acc.dtype))
        tile.store(pred, (i,), best.astype(pred.dtype))


def target_stats(target, weight, ignore_index, n_classes):
    """(rows counted, sum of their class weights, sum of all class weights), read from the device
    with one sync, after checking that every counted target is a class."""
    mask = target != ignore_index
    bad = mask & ((target < 0) | (target >= n_classes))
    parts = [mask.sum(), bad.sum()]
    if weight is not None:
        idx = torch.where(mask, target, 0)
        parts += [torch.where(mask, weight.float()[idx], 0.0).sum(), weight.float().sum()]
    vals = torch.stack([p.double() for p in parts]).tolist()
    if vals[1]:
        raise ValueError(f"cross_entropy: {int(vals[1])} target(s) out of bounds: expected "
                         f"ignore_index ({ignore_index}) or a class in [0, {n_classes})")
    n = vals[0]
    return (n, vals[2], vals[3]) if weight is not None else (n, n, 0.0)


def check_arguments(weight, n_classes, reduction, softcap, label_smoothing, flags):
    if reduction not in REDUCTIONS:
        raise ValueError(f"cross_entropy: reduction must be one of {REDUCTIONS}, got "
                         f"{reduction!r}")
    for name, v in flags.items():
        if not isinstance(v, bool):
            raise TypeError(f"cross_entropy: {name} must be True or False, got {v!r}")
    if weight is not None:
        if weight.shape != (n_classes,) or not torch.is_floating_point(weight):
            raise ValueError(f"cross_entropy: weight must be a floating-point tensor of shape "
                             f"({n_classes},), got {weight.dtype} {tuple(weight.shape)}")
    if softcap is not None and not softcap > 0:
        raise ValueError(f"cross_entropy: softcap must be None or > 0, got {softcap!r}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got "
                         f"{label_smoothing!r}")


def launch_rows(logits, target, weight, loss_1d, z_1d, acc_1d, pred_1d, stats, ignore_index,
                lse_square_scale, label_smoothing, reduction, softcap, has_grad,
                row_scale=None, token_scaling=False):
    """The kernel over the rows of ``logits`` (its gradient written in place when ``has_grad``),
    writing ``loss_1d`` (and ``z_1d``, ``acc_1d``/``pred_1d`` unless None); ``stats`` is
    :func:`target_stats`' triple for the whole batch."""
    rows, V = logits.shape
    if rows == 0:
        return
    n, sum_w, w_sum = stats
    dev = logits.device
    dmy = common.dummy(dev)
    argmax = acc_1d is not None or pred_1d is not None
    if argmax:      # the kernel writes both
        acc_1d = acc_1d if acc_1d is not None else torch.empty(rows, device=dev)
        pred_1d = pred_1d if pred_1d is not None else torch.empty(rows, dtype=torch.int64,
                                                                  device=dev)
    op = cross_entropy_kernel(
        tile.atomic(logits) if has_grad else logits, target,
        weight if weight is not None else dmy, tile.atomic(loss_1d),
        tile.atomic(z_1d) if z_1d is not None else dmy,
        tile.atomic(acc_1d) if argmax else dmy, tile.atomic(pred_1d) if argmax else dmy,
        row_scale if row_scale is not None else dmy,
        float(n) if n else 1.0, float(sum_w) if sum_w else 1.0, float(w_sum), int(ignore_index),
        float(lse_square_scale), float(label_smoothing),
        float(softcap) if softcap is not None else 1.0,
        common.pow2(min(V, CHUNK // 2 if argmax or label_smoothing > 0 else CHUNK)),
        reduction == "mean", bool(has_grad),
        weight is not None, label_smoothing > 0, softcap is not None, z_1d is not None,
        argmax, row_scale is not None, bool(token_scaling))
    common.launch(op.grid((rows, 1, 1)), logits)


def cross_entropy_forward(_input, target, weight, ignore_index, lse_square_scale, label_smoothing,
                          reduction, softcap, return_z_loss, return_token_accuracy=False,
                          return_predicted_tokens=False):
    """Liger's ``cross_entropy_forward``: (loss, z_loss, token_accuracy, predicted_tokens,
    _input), the gradient in ``_input`` when it requires grad."""
    if _input.dim() != 2 or target.shape != (_input.shape[0],):
        raise ValueError(f"cross_entropy: _input must be (BT, V) and target (BT,), got "
                         f"{tuple(_input.shape)} and {tuple(target.shape)}")
    BT, V = _input.shape
    check_arguments(weight, V, reduction, softcap, label_smoothing,
                    {"return_z_loss": return_z_loss,
                     "return_token_accuracy": return_token_accuracy,
                     "return_predicted_tokens": return_predicted_tokens})
    has_grad = _input.requires_grad
    x = _input.detach()
    if x.stride(-1) != 1:
        x = x.contiguous()
    target = target.contiguous()
    if weight is not None:
        weight = weight.contiguous()
    stats = target_stats(target, weight, ignore_index, V)
    dev = x.device
    loss_1d = torch.empty(BT, dtype=x.dtype, device=dev)
    z_1d = torch.empty(BT, dtype=x.dtype, device=dev) if return_z_loss else None
    acc_1d = torch.empty(BT, dtype=torch.float32, device=dev) if return_token_accuracy else None
    pred_1d = torch.empty(BT, dtype=torch.int64, device=dev) if return_predicted_tokens else None
    launch_rows(x, target, weight, loss_1d, z_1d, acc_1d, pred_1d, stats, ignore_index,
                lse_square_scale, label_smoothing, reduction, softcap, has_grad)
    if reduction == "none":
        loss, z_loss, accuracy = loss_1d, z_1d, acc_1d
    else:
        loss = torch.sum(loss_1d)
        z_loss = torch.sum(z_1d) if return_z_loss else None
        accuracy = torch.sum(acc_1d) / stats[0] if return_token_accuracy else None
    return loss, z_loss, accuracy, pred_1d, x


def cross_entropy_backward(grad_input, grad_output):
    """The stored gradient times ``grad_output`` (a scalar, or one per row for "none"), in place;
    untouched for a gradient of exactly 1 (Liger's test, one host read)."""
    if not common.grad_is_one(grad_output):
        common.scale_(grad_input, grad_output.to(grad_input.device))
    return grad_input


class LigerCrossEntropyFunction(torch.autograd.Function):
    """Liger's cross entropy: (loss, z_loss, token_accuracy, predicted_tokens), the gradient of
    the logits computed in forward and written over them."""

    @staticmethod
    def forward(ctx, _input, target, weight, ignore_index: int = -100,
                lse_square_scale: float = 0.0, label_smoothing: float = 0.0,
                reduction: str = "mean", softcap=None, return_z_loss: bool = False,
                return_token_accuracy: bool = False, return_predicted_tokens: bool = False):
        loss, z_loss, accuracy, predicted, grad = cross_entropy_forward(
            _input, target, weight, ignore_index, lse_square_scale, label_smoothing, reduction,
            softcap, return_z_loss, return_token_accuracy, return_predicted_tokens)
        if _input.requires_grad:
            ctx.save_for_backward(grad)
        return loss, z_loss, accuracy, predicted

    @staticmethod
    def backward(ctx, grad_output, grad_z, grad_accuracy, grad_predicted):
        (grad,) = ctx.saved_tensors
        return (cross_entropy_backward(grad, grad_output),) + (None,) * 10


def cross_entropy(input, target, weight=None, ignore_index=-100, lse_square_scale=0.0,
                  label_smoothing=0.0, reduction="mean", softcap=None):
    """The loss alone (autograd: LigerCrossEntropyFunction)."""
    return LigerCrossEntropyFunction.apply(input, target, weight, ignore_index, lse_square_scale,
                                           label_smoothing, reduction, softcap)[0]


def reference(logits, target, weight=None, ignore_index=-100, lse_square_scale=0.0,
              label_smoothing=0.0, reduction="mean", softcap=None):
    """Liger's test reference (``CrossEntropyWithZLoss``): torch's cross entropy in float32 plus
    the z-loss, cast back; (loss, z_loss)."""
    x = logits.float()
    if softcap is not None:
        x = softcap * torch.tanh(x / softcap)
    ce = torch.nn.functional.cross_entropy(x, target, weight=weight, reduction=reduction,
                                           label_smoothing=label_smoothing,
                                           ignore_index=ignore_index)
    mask = target != ignore_index
    z = torch.where(mask, lse_square_scale * torch.logsumexp(x, dim=-1) ** 2, 0.0)
    if reduction == "mean":
        z = z.sum() / mask.sum()
    elif reduction == "sum":
        z = z.sum()
    return (ce + z).to(logits.dtype), z.to(logits.dtype)


#: Liger's test_cross_entropy.py tolerances (atol, rtol)
TOLERANCES = {"float32": (1e-8, 1e-6), "bfloat16": (1e-8, 5e-2)}


def check(BT, V, dtype, device="cpu", reduction="mean", ignore_index=-100, n_ignored=0,
          weighted=False, label_smoothing=0.0, lse_square_scale=0.0, softcap=None,
          grad_scale=1.0, seed=0) -> bool:
    """Forward and backward against :func:`reference` with Liger's tolerances."""
    atol, rtol = TOLERANCES[str(dtype).split(".")[-1]]
    gen = torch.Generator().manual_seed(seed)
    x0 = torch.randn(BT, V, generator=gen).to(device, dtype)
    target = torch.randint(0, V, (BT,), generator=gen)
    target[torch.randperm(BT, generator=gen)[:n_ignored]] = ignore_index
    target = target.to(device)
    weight = torch.rand(V, generator=gen).to(device) if weighted else None
    x1, x2 = x0.clone().requires_grad_(), x0.clone().requires_grad_()
    want, want_z = reference(x1, target, weight, ignore_index, lse_square_scale, label_smoothing,
                             reduction, softcap)
    got, got_z, _, _ = LigerCrossEntropyFunction.apply(
        x2, target, weight, ignore_index, lse_square_scale, label_smoothing, reduction, softcap,
        True)
    g = torch.full_like(want, grad_scale)
    want.backward(g)
    got.backward(g)
    return all([common.close(got, want, atol, rtol),
                common.close(got_z, want_z, atol, rtol),
                common.close(x2.grad, x1.grad, atol, rtol)])


def main() -> int:
    gpu = torch.cuda.is_available() and not tile.Device(0).is_simulated
    device = "cuda" if gpu else "cpu"
    sizes = [(8, 300)] + ([(5, 37), (1269, 32000), (4096, 32000)] if gpu else [])
    options = [dict(reduction="mean"), dict(reduction="sum", grad_scale=2.0),
               dict(reduction="none", n_ignored=2, ignore_index=-100),
               dict(reduction="mean", n_ignored=2, ignore_index=3, label_smoothing=0.1,
                    lse_square_scale=1e-4, softcap=30.0, weighted=True)]
    ok = True
    for dtype in (torch.float32, torch.bfloat16):
        for BT, V in sizes:
            for opts in options:
                good = check(BT, V, dtype, device, **opts)
                if not good:
                    print(f"  {dtype} ({BT}, {V}) {opts}: MISMATCH")
                ok &= good
    return common.report("cross_entropy", f"forward and backward, {len(sizes)} sizes x "
                         f"{len(options)} option sets, float32 and bfloat16, {device}", ok)


if __name__ == "__main__":
    sys.exit(main())
