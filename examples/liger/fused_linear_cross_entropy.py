"""The last linear layer fused with cross entropy, Liger-Kernel's
``LigerFusedLinearCrossEntropyFunction``, in tilejit.

    python examples/liger/fused_linear_cross_entropy.py

The (BT, V) logits are never held at once: the rows go in chunks (Liger's size: BT divided by
ceil(V / H), rounded up to a power of two, so a chunk's logits are about the size of the input).
For each chunk torch's matmul makes the logits (bias added in the product's epilogue), the
gallery's cross-entropy kernel (cross_entropy.py) turns them in place into their gradient and
writes the rows' losses, and torch's matmuls project that gradient back: into the chunk's rows of
grad_input (written directly, no copy) and accumulated into grad_weight (the first chunk's
product written into it rather than added to zeros, when no float32 accumulator is asked for).
The gradients are computed in forward and scaled in backward only when the upstream gradient
is not 1.

``reduction="none"`` needs the per-row upstream gradient before the rows are summed into
grad_weight, so (as in Liger) forward only computes the losses and backward recomputes the
chunks with that gradient folded into the kernel (``ROW_SCALE``). ``use_token_scaling``
multiplies each row's loss and gradient by the (detached) probability of its target, computed in
the kernel from the row's logsumexp (Liger computes a softmax of the chunk with torch).

Gradients: grad_input when the input requires grad, grad_weight (and grad_bias) when they do. Liger
gives the weight no gradient when the input does not require one; here it gets its gradient.
"""
import sys

try:
    import torch
except ImportError as e:            # the gallery protocol: a script without torch skips
    if __name__ == "__main__":
        print(f"fused_linear_cross_entropy: skipped: PyTorch is not installed ({e})")
        sys.exit(0)
    raise

import tilejit as tile

try:
    from . import _losses_common as common
    from . import cross_entropy as ce
except ImportError:                 # run as a script, or examples/liger on sys.path
    import _losses_common as common
    import cross_entropy as ce


def _cdiv(a, b):
    return -(-a // b)


def _addmm_fp32(acc, a, b):
    """acc += a @ b, acc float32, a and b in a lower precision: the product accumulated into
    acc by cuBLAS where torch can (``out_dtype``), else through a float32 temporary."""
    if acc.is_cuda:
        try:
            torch.addmm(acc, a, b, out_dtype=torch.float32, out=acc)
            return
        except (TypeError, RuntimeError):
            pass
    acc += torch.mm(a, b).float()


def fused_linear_cross_entropy_forward(
        _input, weight, target, ce_weight=None, bias=None, ignore_index=-100,
        lse_square_scale=0.0, label_smoothing=0.0, reduction="mean", softcap=None,
        return_z_loss=False, accum_dtype=None, use_token_scaling=False,
        return_token_accuracy=False, return_predicted_tokens=False, token_grad_output=None,
        compute_gradients=None, input_needs_grad=None, weight_needs_grad=None,
        bias_needs_grad=None):
    """(loss, z_loss, token_accuracy, predicted_tokens, grad_input, grad_weight, grad_bias).

    ``compute_gradients`` False: the losses only. ``token_grad_output`` (BT,): each row's
    upstream gradient, folded into its logits' gradient before the projections (backward of
    ``reduction="none"``). The ``*_needs_grad`` flags override the tensors' own (backward passes
    detached tensors)."""
    if _input.dim() != 2 or weight.dim() != 2 or _input.shape[1] != weight.shape[1]:
        raise ValueError(f"fused_linear_cross_entropy: _input must be (BT, H) and weight (V, H), "
                         f"got {tuple(_input.shape)} and {tuple(weight.shape)}")
    BT, H = _input.shape
    V = weight.shape[0]
    if target.shape != (BT,):
        raise ValueError(f"fused_linear_cross_entropy: target must be ({BT},), got "
                         f"{tuple(target.shape)}")
    if bias is not None and bias.shape != (V,):
        raise ValueError(f"fused_linear_cross_entropy: bias must be ({V},), got "
                         f"{tuple(bias.shape)}")
    ce.check_arguments(ce_weight, V, reduction, softcap, label_smoothing,
                       {"return_z_loss": return_z_loss,
                        "return_token_accuracy": return_token_accuracy,
                        "return_predicted_tokens": return_predicted_tokens,
                        "use_token_scaling": use_token_scaling})
    in_grad = _input.requires_grad if input_needs_grad is None else input_needs_grad
    w_grad = weight.requires_grad if weight_needs_grad is None else weight_needs_grad
    b_grad = (bias is not None and (bias.requires_grad if bias_needs_grad is None
                                    else bias_needs_grad))
    grads = (in_grad or w_grad or b_grad) if compute_gradients is None else compute_gradients
    in_grad, w_grad, b_grad = in_grad and grads, w_grad and grads, b_grad and grads

    x, w = _input.detach(), weight.detach()
    b = bias.detach() if bias is not None else None
    target = target.contiguous()
    if ce_weight is not None:
        ce_weight = ce_weight.contiguous()
    dev = x.device
    stats = ce.target_stats(target, ce_weight, ignore_index, V)

    chunk = common.pow2(_cdiv(BT, _cdiv(V, H)))
    grad_input = torch.empty_like(x) if in_grad else None
    grad_weight = grad_bias = None
    acc_w = w_grad and accum_dtype is not None and accum_dtype != w.dtype
    if w_grad:
        grad_weight = (torch.zeros_like(w, dtype=accum_dtype) if acc_w
                       else torch.empty_like(w))
    if b_grad:
        grad_bias = torch.zeros_like(b, dtype=accum_dtype or b.dtype)
    loss_1d = torch.empty(BT, dtype=torch.float32, device=dev)
    z_1d = torch.empty(BT, dtype=x.dtype, device=dev) if return_z_loss else None
    acc_1d = torch.empty(BT, dtype=torch.float32, device=dev) if return_token_accuracy else None
    pred_1d = torch.empty(BT, dtype=torch.int64, device=dev) if return_predicted_tokens else None

    for start in range(0, BT, chunk):
        end = min(start + chunk, BT)
        xc = x[start:end]
        logits = torch.addmm(b, xc, w.t()) if b is not None else xc @ w.t()
        part = slice(start, end)
        ce.launch_rows(logits, target[part], ce_weight, loss_1d[part],
                       z_1d[part] if z_1d is not None else None,
                       acc_1d[part] if acc_1d is not None else None,
                       pred_1d[part] if pred_1d is not None else None,
                       stats, ignore_index, lse_square_scale, label_smoothing, reduction,
                       softcap, grads,
                       row_scale=(token_grad_output[part].contiguous()
                                  if token_grad_output is not None else None),
                       token_scaling=use_token_scaling)
        if not grads:
            continue
        if in_grad:
            torch.mm(logits, w, out=grad_input[part])
        if w_grad:
            if acc_w:
                _addmm_fp32(grad_weight, logits.t(), xc)
            elif start == 0:
                torch.mm(logits.t(), xc, out=grad_weight)
            else:
                torch.addmm(grad_weight, logits.t(), xc, out=grad_weight)
        if b_grad:
            grad_bias += logits.sum(dim=0)

    if reduction == "none":
        loss, z_loss, accuracy = loss_1d, z_1d, acc_1d
    else:
        loss = torch.sum(loss_1d)
        z_loss = torch.sum(z_1d) if return_z_loss else None
        accuracy = torch.sum(acc_1d) / stats[0] if return_token_accuracy else None
    if grad_weight is not None:
        grad_weight = grad_weight.to(weight.dtype)
    if grad_bias is not None:
        grad_bias = grad_bias.to(bias.dtype)
    return loss, z_loss, accuracy, pred_1d, grad_input, grad_weight, grad_bias


def fused_linear_cross_entropy_backward(grad_output, grad_input, grad_weight, grad_bias):
    """The stored gradients times the scalar ``grad_output``, in place (untouched for 1)."""
    if not common.grad_is_one(grad_output):
        for g in (grad_input, grad_weight, grad_bias):
            if g is not None:
                common.scale_(g, grad_output.to(g.device))
    return grad_input, grad_weight, grad_bias


def _amp(decorator):
    """torch.amp's custom_fwd/custom_bwd for CUDA autocast, as Liger decorates its Function."""
    amp = getattr(torch, "amp", None)
    deco = getattr(amp, decorator, None)
    return deco(device_type="cuda") if deco is not None else (lambda f: f)


class LigerFusedLinearCrossEntropyFunction(torch.autograd.Function):
    """Liger's fused linear cross entropy: (loss, z_loss, token_accuracy, predicted_tokens)."""

    @staticmethod
    @_amp("custom_fwd")
    def forward(ctx, _input, weight, target, bias=None, ce_weight=None, ignore_index=-100,
                lse_square_scale=0.0, label_smoothing=0.0, reduction="mean", softcap=None,
                return_z_loss: bool = False, accum_dtype=None, use_token_scaling: bool = False,
                return_token_accuracy: bool = False, return_predicted_tokens: bool = False):
        needs = (_input.requires_grad, weight.requires_grad,
                 bias is not None and bias.requires_grad)
        ctx.defer = reduction == "none" and any(needs)
        ctx.return_flags = (return_z_loss, return_token_accuracy, return_predicted_tokens)
        loss, z_loss, accuracy, predicted, g_in, g_w, g_b = fused_linear_cross_entropy_forward(
            _input, weight, target, ce_weight, bias, ignore_index, lse_square_scale,
            label_smoothing, reduction, softcap, return_z_loss, accum_dtype, use_token_scaling,
            return_token_accuracy, return_predicted_tokens,
            compute_gradients=False if ctx.defer else None)
        if ctx.defer:
            ctx.needs = needs
            ctx.save_for_backward(_input.detach(), weight.detach(), target,
                                  bias.detach() if bias is not None else None)
            ctx.kwargs = dict(ce_weight=ce_weight, ignore_index=ignore_index,
                              lse_square_scale=lse_square_scale, label_smoothing=label_smoothing,
                              reduction=reduction, softcap=softcap, accum_dtype=accum_dtype,
                              use_token_scaling=use_token_scaling)
        else:
            ctx.save_for_backward(g_in, g_w, g_b)
        return loss, z_loss, accuracy, predicted

    @staticmethod
    @_amp("custom_bwd")
    def backward(ctx, grad_output, grad_z, grad_accuracy, grad_predicted):
        if ctx.defer:
            _input, weight, target, bias = ctx.saved_tensors
            n_in, n_w, n_b = ctx.needs
            _, _, _, _, g_in, g_w, g_b = fused_linear_cross_entropy_forward(
                _input, weight, target, bias=bias, token_grad_output=grad_output,
                compute_gradients=True, input_needs_grad=n_in, weight_needs_grad=n_w,
                bias_needs_grad=n_b, **ctx.kwargs)
        else:
            g_in, g_w, g_b = fused_linear_cross_entropy_backward(grad_output, *ctx.saved_tensors)
        return (g_in, g_w, None, g_b) + (None,) * 11


def fused_linear_cross_entropy(input, weight, target, bias=None, ce_weight=None,
                               ignore_index=-100, lse_square_scale=0.0, label_smoothing=0.0,
                               reduction="mean", softcap=None, accum_dtype=None):
    """The loss of ``cross_entropy(input @ weight.T + bias, target)`` without the logits."""
    return LigerFusedLinearCrossEntropyFunction.apply(
        input, weight, target, bias, ce_weight, ignore_index, lse_square_scale, label_smoothing,
        reduction, softcap, False, accum_dtype)[0]


def reference(x, weight, target, bias=None, ce_weight=None, ignore_index=-100,
              lse_square_scale=0.0, label_smoothing=0.0, reduction="mean", softcap=None):
    """torch: the linear layer, then :func:`cross_entropy.reference`."""
    logits = x @ weight.t()
    if bias is not None:
        logits = logits + bias
    return ce.reference(logits, target, ce_weight, ignore_index, lse_square_scale,
                        label_smoothing, reduction, softcap)


#: Liger's test_fused_linear_cross_entropy.py tolerances (atol, rtol) by (reduction, dtype).
#: Liger tests "none" in float32 only; it takes "mean"'s there. In bfloat16 its per-row upstream
#: gradients of O(1) make each weight-gradient entry a sum of BT bf16 products, as under "sum":
#: at 1024x1024x4096 torch's own bf16 reference is 0.034 off a float32 one, so atol is 5e-2.
TOLERANCES = {("mean", "bfloat16"): (5e-3, 5e-2), ("mean", "float32"): (1e-5, 5e-4),
              ("sum", "bfloat16"): (5.0, 5e1), ("sum", "float32"): (1e-3, 5e-2),
              ("none", "bfloat16"): (5e-2, 5e-2), ("none", "float32"): (1e-5, 5e-4)}


def check(BT, H, V, dtype, device="cpu", reduction="mean", with_bias=True, options=False,
          seed=0) -> bool:
    """Forward and backward (input, weight, bias gradients) against :func:`reference`;
    ``options``: Liger's test's non-default set (class weights, label smoothing 0.1, ignore
    index 42, z-loss 1e-4, softcap 30, a float32 accumulator)."""
    atol, rtol = TOLERANCES[(reduction, str(dtype).split(".")[-1])]
    gen = torch.Generator().manual_seed(seed)
    x0 = torch.randn(BT, H, generator=gen).to(device, dtype)
    w0 = (torch.randn(V, H, generator=gen) / H ** 0.5).to(device, dtype)
    b0 = torch.randn(V, generator=gen).to(device, dtype) if with_bias else None
    target = torch.randint(0, V, (BT,), generator=gen)
    kw = dict(ignore_index=-100)
    if options:
        kw = dict(ce_weight=torch.rand(V, generator=gen).to(device), ignore_index=42,
                  lse_square_scale=1e-4, label_smoothing=0.1, softcap=30.0)
        target[torch.randperm(BT, generator=gen)[:BT // 4]] = 42
    target = target.to(device)
    leaves = [[t.clone().requires_grad_() if t is not None else None for t in (x0, w0, b0)]
              for _ in range(2)]
    (x1, w1, b1), (x2, w2, b2) = leaves
    want, want_z = reference(x1, w1, target, b1, reduction=reduction, **kw)
    got, got_z, _, _ = LigerFusedLinearCrossEntropyFunction.apply(
        x2, w2, target, b2, kw.get("ce_weight"), kw["ignore_index"],
        kw.get("lse_square_scale", 0.0), kw.get("label_smoothing", 0.0), reduction,
        kw.get("softcap"), True, torch.float32 if options else None)
    g = torch.rand(want.shape, generator=gen).to(device, want.dtype) + 0.5
    want.backward(g)
    got.backward(g)
    checks = [(got.float(), want.float()), (got_z.float(), want_z.float()),
              (x2.grad, x1.grad), (w2.grad, w1.grad)]
    if with_bias:
        checks.append((b2.grad, b1.grad))
    return all([common.close(a, b, atol, rtol) for a, b in checks])


def main() -> int:
    gpu = torch.cuda.is_available() and not tile.Device(0).is_simulated
    device = "cuda" if gpu else "cpu"
    sizes = [(4 * 7, 31, 123)] + ([(16, 8, 40), (8 * 128, 1024, 4096)] if gpu else [])
    # (reduction, bias, Liger's test's non-default options); the simulator runs two
    combos = [("mean", True, False), ("none", False, True)]
    if gpu:
        combos += [("sum", False, True), ("mean", True, True), ("none", True, False)]
    ok = True
    for dtype in (torch.float32, torch.bfloat16):
        for size in sizes:
            for reduction, bias, options in combos:
                good = check(*size, dtype, device, reduction, bias, options)
                if not good:
                    print(f"  {dtype} {size} {reduction} bias={bias} options={options}: MISMATCH")
                ok &= good
    return common.report("fused_linear_cross_entropy",
                         f"forward and backward, {len(sizes)} sizes x {len(combos)} reduction, bias "
                         f"and option sets, float32 and bfloat16, {device}", ok)


if __name__ == "__main__":
    sys.exit(main())
