"""Shared pieces of the gallery's activation, RoPE and loss modules (swiglu, geglu, rope,
cross_entropy, fused_linear_cross_entropy, kl_div, jsd).

* :func:`launch` runs a kernel call on torch's current stream: asynchronously for CUDA tensors
  (ordered with torch's work on that stream, no host wait), on tilejit's CPU simulator (which
  copies CPU tensors in and back) otherwise.
* :func:`pow2`, :func:`row_block` pick tile sizes on the host, as Liger's ``calculate_settings``
  picks its BLOCK_SIZE.
* :func:`scale_` multiplies a contiguous tensor in place by a scalar or per-row factor held in a
  device tensor (the backward of the losses that compute their gradient in forward).
* :func:`sigmoid`, the fast logistic function of the gated activations (a kernel helper).
* :func:`close` / :func:`report`: the scripts' self-checks.
"""
import torch

import tilejit as tile

#: elements a block loads at once in the flat element-wise kernels (swiglu, geglu, the scaling
#: of stored gradients): 8 KB of bf16, 16 KB of float32 per operand
FLAT_TILE = 4096
#: columns a block loads at once in the row kernels that loop over long rows (the losses)
ROW_CHUNK = 4096


def pow2(n: int) -> int:
    """The smallest power of two >= n (>= 1)."""
    return 1 << max(int(n) - 1, 0).bit_length()


def row_block(n_cols: int, budget: int = 0):
    """(ROWS, CHUNK) for a kernel reducing rows of ``n_cols``: a chunk of the row length rounded
    up to a power of two, at most ``budget`` (ROW_CHUNK by default); short rows share a block
    (ROWS * CHUNK <= budget)."""
    budget = budget or ROW_CHUNK
    chunk = min(pow2(n_cols), budget)
    return max(1, budget // chunk), chunk


def flat_tile(n: int) -> int:
    """The element-wise kernels' tile for a tensor of ``n`` elements."""
    return min(FLAT_TILE, pow2(n))


LOG2E = 1.4426950408889634


@tile.function
def sigmoid(x):
    """1 / (1 + exp(-x)) in float32 the fast way: exp as exp2 of a scaled argument, the reciprocal
    approximate (about 1 ulp, where an IEEE division checks every element for its slow path),
    subnormals flushed (they would only round the result to 0 or 1 differently)."""
    e = tile.exp2(x * -LOG2E, flush_to_zero=True)
    return tile.truediv(1.0, 1.0 + e, rounding_mode=tile.RoundingMode.APPROX, flush_to_zero=True)


def launch(op, like) -> None:
    """Run the kernel call ``op`` on torch's current stream: queued without a host wait when
    ``like`` (a torch tensor among its arguments) is a CUDA tensor; on the simulator (CPU tensors)
    run to completion, the outputs copied back into the CPU tensors."""
    if like.is_cuda:
        op.schedule()       # the default stream of a launch with torch tensors: torch's current
    else:
        op.sync()


_dummies = {}


def dummy(device):
    """A one-element float32 tensor on ``device`` for kernel parameters that the launch's
    constants leave unused (made once per device)."""
    t = _dummies.get(device)
    if t is None:
        t = _dummies[device] = torch.zeros(1, device=device)
    return t


@tile.entry
def _scale_rows(x, g, PER_ROW: tile.Constant[bool]):
    """x[i, :] *= g[i] (PER_ROW) or g[0]; ``x`` a partition (ROWS, CHUNK) updated in place."""
    BM, BN = x.shape
    if PER_ROW:
        s = g.load((x.block[0],), (BM,)).astype(tile.float32)[:, None]
    else:
        s = g.load((0,), ()).astype(tile.float32)
    x.store((x.load().astype(tile.float32) * s).astype(x.dtype))


def scale_(x, g) -> None:
    """Multiply the contiguous tensor ``x`` in place by ``g``: a tensor of one element, or (for
    2-D ``x``) one per row. ``g`` stays on the device (no host sync)."""
    if g.numel() > 1:
        rows, chunk = row_block(x.shape[1])
        launch(_scale_rows(tile.partition(x, (rows, chunk)), g.reshape(-1), True), x)
    else:
        flat = x.view(1, -1)
        launch(_scale_rows(tile.partition(flat, (1, flat_tile(flat.shape[1]))), g.reshape(-1),
                           False), x)


def grad_is_one(grad_output) -> bool:
    """Liger's test for the common last-layer case (``loss.backward()``): the stored gradient is
    then already the answer. It reads the value on the host, as Liger's ``torch.equal`` does."""
    return grad_output.dim() == 0 and torch.equal(grad_output, torch.ones_like(grad_output))


def close(got, want, atol, rtol):
    """Liger's check (``torch.allclose``), reporting the largest difference when it fails."""
    ok = got.shape == want.shape and torch.allclose(got.float(), want.float(), atol=atol,
                                                    rtol=rtol)
    if not ok:
        diff = (got.float() - want.float()).abs().max().item() if got.shape == want.shape else \
            f"shape {tuple(got.shape)} against {tuple(want.shape)}"
        print(f"  mismatch: max |difference| {diff} (atol {atol}, rtol {rtol})")
    return ok


def report(name: str, what: str, ok: bool) -> int:
    print(f"{name}: {what} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1
