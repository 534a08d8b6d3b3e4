"""Generalized Jensen-Shannon divergence, Liger-Kernel's ``LigerJSDFunction``, in tilejit.

    python examples/liger/jsd.py

JSD_beta(P || Q) = beta KL(P || M) + (1 - beta) KL(Q || M), M = beta P + (1 - beta) Q, with
X = log Q the student's log-probabilities (the input) and Y = log P the teacher's; beta 0 is the
forward KL(P || Q), beta 1 the reverse. As in Liger's kernel the gradient dX is computed in
forward, in one pass with the loss, divided by the number of counted rows (rows whose
``shift_labels`` entry is ``ignore_index`` count zero). Liger writes every element's loss
(float32, BT x V) for torch to sum; here each block sums its rows' losses and writes one float32
per row. The counted rows are counted on the device and read by the kernel, where Liger reads
the count on the host; backward returns dX as it is for an upstream gradient of 1 (Liger's test,
one host read), else scales it in place.
"""
import sys

try:
    import torch
except ImportError as e:            # the gallery protocol: a script without torch skips
    if __name__ == "__main__":
        print(f"jsd: skipped: PyTorch is not installed ({e})")
        sys.exit(0)
    raise

import tilejit as tile

try:
    from . import _losses_common as common
except ImportError:                 # run as a script, or examples/liger on sys.path
    import _losses_common as common

F32 = tile.float32


@tile.entry
def jsd_kernel(dx, row_loss, x, y, labels, count, beta, ignore_index,
               CHUNK: tile.Constant[int], HAS_LABEL: tile.Constant[bool],
               MODE: tile.Constant[int]):
    """Rows ``bid * ROWS ...`` of X (``x``) and Y (``y``), in chunks: dX into the writable ``dx``
    and the rows' summed losses into the partition ``row_loss`` (ROWS,). ``count``: one element,
    the number of counted rows (HAS_LABEL); MODE 0: beta == 0, 1: beta == 1, 2: otherwise.
    Zero padding past the row gives losses of exactly 0 in every mode."""
    (ROWS,) = row_loss.shape
    i = row_loss.block[0]
    if HAS_LABEL:
        lab = labels.load((i,), (ROWS,))
        keep = (lab != ignore_index)[:, None]
        scale = 1.0 / count.load((0,), ()).astype(F32)
    else:
        scale = 1.0 / x.shape[0]
    acc = tile.zeros((ROWS, CHUNK), F32)
    for j in range(tile.cdiv(x.shape[1], CHUNK)):
        X = x.load((i, j), (ROWS, CHUNK)).astype(F32)
        Y = y.load((i, j), (ROWS, CHUNK)).astype(F32)
        if MODE == 0:                    # forward KL(P || Q)
            P = tile.exp(Y)
            loss = P * (Y - X)
            g = -P
        elif MODE == 1:                  # reverse KL(Q || P)
            Q = tile.exp(X)
            loss = Q * (X - Y)
            g = loss + Q
        else:
            bP = beta * tile.exp(Y)
            cQ = (1.0 - beta) * tile.exp(X)
            M = bP + cQ
            logM = tile.log(M)
            loss = bP * Y + cQ * X - M * logM
            g = cQ * (X - logM)
        g = g * scale
        loss = loss * scale
        if HAS_LABEL:
            g = tile.where(keep, g, 0.0)
            loss = tile.where(keep, loss, 0.0)
        tile.store(dx, (i, j), g.astype(dx.dtype))
        acc += loss
    row_loss.store(tile.sum(acc, axis=1))


def jsd_forward(_input, target, shift_labels, beta, ignore_index, has_label):
    BT, V = _input.shape
    rows, chunk = common.row_block(V)
    dev = _input.device
    dx = torch.empty_like(_input)
    row_loss = torch.empty(BT, dtype=torch.float32, device=dev)
    if has_label:
        labels = shift_labels
        count = (shift_labels != ignore_index).sum().reshape(1)
    else:
        labels = count = common.dummy(dev)      # unused (HAS_LABEL False)
    mode = 0 if beta == 0.0 else 1 if beta == 1.0 else 2
    if BT:
        op = jsd_kernel(tile.atomic(dx), tile.partition(row_loss, (rows,)), _input, target,
                        labels, count, float(beta), int(ignore_index), chunk, bool(has_label),
                        mode)
        common.launch(op, _input)
    return torch.sum(row_loss).to(_input.dtype), dx


def jsd_backward(dx, grad_output):
    if not common.grad_is_one(grad_output):
        common.scale_(dx, grad_output.to(dx.device))
    return dx


class LigerJSDFunction(torch.autograd.Function):
    """Generalized JSD of the student's log-probabilities ``_input`` (BT, V) against the
    teacher's ``target``, optionally masked by ``shift_labels`` (BT,)."""

    @staticmethod
    def forward(ctx, _input, target, shift_labels=None, beta: float = 0.5,
                ignore_index: int = -100):
        if _input.dim() != 2 or target.shape != _input.shape:
            raise ValueError(f"jsd: _input and target must be (BT, V) of one shape, got "
                             f"{tuple(_input.shape)} and {tuple(target.shape)}")
        if not 0.0 <= beta <= 1.0:
            raise ValueError(f"jsd: beta must be in [0, 1], got {beta!r}")
        has_label = shift_labels is not None
        if has_label:
            if shift_labels.shape != (_input.shape[0],):
                raise ValueError(f"jsd: the shape of shift_labels must be (BT,) = "
                                 f"({_input.shape[0]},), got {tuple(shift_labels.shape)}")
            shift_labels = shift_labels.contiguous()
        loss, dx = jsd_forward(_input.detach().contiguous(), target.detach().contiguous(),
                               shift_labels, beta, ignore_index, has_label)
        ctx.save_for_backward(dx)
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        (dx,) = ctx.saved_tensors
        return jsd_backward(dx, grad_output), None, None, None, None


def jsd(_input, target, shift_labels=None, beta=0.5, ignore_index=-100):
    """Generalized JSD loss (autograd: LigerJSDFunction)."""
    return LigerJSDFunction.apply(_input, target, shift_labels, beta, ignore_index)


def reference(log_q, log_p, label=None, beta=0.5, ignore_index=-100):
    """Liger's test reference (its ``JSD`` module, through torch's ``KLDivLoss``), computed in
    float32 for every beta (torch's bfloat16 CPU ops round each step, off by more than Liger's
    tolerance where the gradient cancels) and cast back."""
    kl = torch.nn.KLDivLoss(reduction="none", log_target=True)
    dtype = log_q.dtype
    log_p, log_q = log_p.float(), log_q.float()
    if beta == 0.0:
        loss = kl(log_q, log_p).sum(dim=-1)
    elif beta == 1.0:
        loss = kl(log_p, log_q).sum(dim=-1)
    else:
        m = torch.lerp(torch.exp(log_q), torch.exp(log_p), beta)
        loss = beta * kl(torch.log(m), log_p).sum(dim=-1) + \
            (1 - beta) * kl(torch.log(m), log_q).sum(dim=-1)
    if label is not None:
        loss = torch.where(label != ignore_index, loss, 0.0)
        n = (label != ignore_index).sum().item()
        loss = (loss / n).sum() if n else torch.tensor(0.0, device=loss.device)
    else:
        loss = (loss / log_q.shape[0]).sum()
    return loss.to(dtype)


#: Liger's test_jsd.py tolerances (atol, rtol)
TOLERANCES = {"float32": (1e-7, 1e-6), "bfloat16": (1e-7, 5e-2), "float16": (1e-3, 1e-3)}


def check(BT, V, dtype, beta=0.5, labels=False, device="cpu", grad=1.0, seed=0,
          ignore_index=-100) -> bool:
    """Forward and backward against :func:`reference` with Liger's tolerances."""
    atol, rtol = TOLERANCES[str(dtype).split(".")[-1]]
    gen = torch.Generator().manual_seed(seed)
    x0 = torch.randn(BT, V, generator=gen).to(device, dtype).log_softmax(dim=-1)
    target = torch.randn(BT, V, generator=gen).to(device, dtype).log_softmax(dim=-1)
    label = None
    if labels:
        label = torch.randint(0, V, (BT,), generator=gen)
        label[torch.randperm(BT, generator=gen)[:BT // 3]] = ignore_index
        label = label.to(device)
    x1, x2 = x0.clone().requires_grad_(), x0.clone().requires_grad_()
    want = reference(x1, target, label, beta, ignore_index)
    got = jsd(x2, target, label, beta, ignore_index)
    (want * grad).backward()
    (got * grad).backward()
    return common.close(got, want, atol, rtol) and \
        common.close(x2.grad, x1.grad, atol, rtol)


def main() -> int:
    gpu = torch.cuda.is_available() and not tile.Device(0).is_simulated
    device = "cuda" if gpu else "cpu"
    sizes = [(9, 300)] + ([(9, 5000), (2048, 3200), (41 * 401, 1271)] if gpu else [])
    ok = True
    n = 0
    for dtype in (torch.float32, torch.bfloat16):
        for BT, V in sizes:
            for beta in (0.0, 0.5, 1.0, 0.3):
                for labels in (False, True):
                    good = check(BT, V, dtype, beta, labels, device, grad=2.0 if n % 3 else 1.0)
                    n += 1
                    if not good:
                        print(f"  {dtype} ({BT}, {V}) beta={beta} labels={labels}: MISMATCH")
                    ok &= good
    return common.report("jsd", f"forward and backward, {len(sizes)} sizes, beta 0/0.3/0.5/1, "
                         f"with and without labels, float32 and bfloat16, {device}", ok)


if __name__ == "__main__":
    sys.exit(main())
