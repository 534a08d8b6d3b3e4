"""Host helpers shared by the gallery's norms and softmax (examples/liger): tile sizes from the
problem size, the launch on torch's stream, and the self-check of a script run."""
import functools
from typing import Optional

import torch

#: the widest row a block holds in one tile (Liger's ``calculate_settings`` limit)
MAX_FUSED_SIZE = 65536

#: elements of a forward row tile: several short rows a block, one long row (examples/rmsnorm.py
#: and layernorm.py found 8 x 1K, 4 x 2K and 2 x 4K tiles the fast ones on an H200)
ROW_TILE = 8192
#: the same for the norms, whose blocks also read the weights (and bias): more rows a block read
#: them fewer times (H200, 8192 x 4096 bf16, 2026-11-29: LayerNorm's forward 0.11 ms with 4 rows a
#: block against 0.16-0.20 with 2; RMSNorm's 0.10 against 0.11-0.16)
NORM_ROW_TILE = 16384
#: elements of a backward row tile, which holds x, dy and their products at once
BWD_ROW_TILE = 4096
#: blocks of a persistent backward per multiprocessor: each block writes one float32 row of
#: partial weight gradients, so more blocks hide more latency but add partial rows to sum
BWD_BLOCKS_PER_SM = 2
#: multiprocessors the simulator stands for (few: its blocks run one after another)
SIMULATED_SMS = 4


def width(n: int) -> int:
    """The tile width for rows of ``n`` elements: the next power of two (``RuntimeError`` past
    Liger's limit, as Liger raises)."""
    w = 1 << max(n - 1, 0).bit_length()
    if w > MAX_FUSED_SIZE:
        raise RuntimeError(f"rows of {n} elements are longer than the {MAX_FUSED_SIZE} a block "
                           f"holds in one tile (Liger's limit too); split the last dimension")
    return w


def rows_per_block(w: int, elements: Optional[int] = None, cap: int = 16) -> int:
    """Whole rows of width ``w`` a block takes: about ``elements`` elements (``ROW_TILE``), 1 to
    ``cap``."""
    return max(1, min(cap, (elements or ROW_TILE) // w))


@functools.lru_cache(maxsize=None)
def _sms(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def sm_count(t: torch.Tensor) -> int:
    """Multiprocessors of ``t``'s GPU (cached), or the simulator's stand-in for CPU tensors."""
    if not t.is_cuda:
        return SIMULATED_SMS
    return _sms(t.device.index if t.device.index is not None else torch.cuda.current_device())


def persistent_grid(row_blocks: int, t: torch.Tensor) -> int:
    """Blocks of a persistent kernel over ``row_blocks`` row tiles on ``t``'s device."""
    return max(1, min(row_blocks, BWD_BLOCKS_PER_SM * sm_count(t)))


def run(op, t: torch.Tensor) -> None:
    """Launch ``op`` (a kernel call) for tensors on ``t``'s device. On a GPU it is queued on
    torch's current stream (a launch with torch CUDA tensors picks that stream), without waiting:
    torch's later work on that stream is ordered after it. CPU tensors run on the simulator,
    which copies the outputs back into them when the launch completes: wait for it."""
    if t.is_cuda:
        op.schedule()
    else:
        op.sync()


def rows2d(t: torch.Tensor) -> torch.Tensor:
    """``t`` as a contiguous (rows, last dimension) matrix (a view when it is contiguous)."""
    return t.contiguous().view(-1, t.shape[-1])


# --- a script's self-check -----------------------------------------------------------------------
def check_close(name: str, got, want, atol: float, rtol: float) -> str:
    """'' when ``got`` is close to ``want`` (torch.allclose with the tolerances), else what
    differs."""
    if got is None or want is None:
        return "" if got is None and want is None else f"{name}: one of them is None"
    if got.shape != want.shape:
        return f"{name}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    g, w = got.detach().double().cpu(), want.detach().double().cpu()
    if torch.allclose(g, w, atol=atol, rtol=rtol):
        return ""
    return f"{name}: max |diff| {float((g - w).abs().max()):.3g} (atol {atol:g}, rtol {rtol:g})"


def report(op: str, what: str, problems) -> int:
    """Print the script's last line (``op: what ok``, or the problems and ``MISMATCH``) and
    return its exit status."""
    problems = [p for p in problems if p]
    for p in problems:
        print(f"  {p}")
    print(f"{op}: {what} {'MISMATCH' if problems else 'ok'}")
    return 1 if problems else 0


def device_for_check() -> str:
    """'cuda' where tilejit runs on a GPU and torch sees one, else 'cpu' (the simulator)."""
    from tilejit.runtime import current_backend
    return "cuda" if current_backend() == "cuda" and torch.cuda.is_available() else "cpu"


__all__ = ["width", "rows_per_block", "sm_count", "persistent_grid", "run", "rows2d",
           "check_close", "report", "device_for_check", "MAX_FUSED_SIZE"]
