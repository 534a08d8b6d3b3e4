"""tilejit kernels as PyTorch custom operators (``torch.library``), traceable by ``torch.compile``.

    import torch, tilejit as tile, tilejit.torch

    @tilejit.torch.kernel_op("mylib::silu", kernel=silu_fwd, tile=(32, 128))
    def silu(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)          # allocate the output: its shape, dtype, device

    y = silu(x)                             # runs silu_fwd(tile.partition(y, (32, 128)), x)
    torch.compile(model, fullgraph=True)    # traces through silu without a graph break

The decorated function only allocates the output. tilejit registers an operator whose real
implementation allocates with it and launches ``kernel(output_partition, *arguments)`` on
torch's current stream (no copies, no host wait), and whose fake implementation (for
``torch.compile`` and meta tensors) is the allocation alone. ``backward=``/``setup_context=``
pair it with a backward (``torch.library.register_autograd``), which may itself call other
tilejit operators. Arguments are passed to the kernel in order: tensors, and Python numbers as
runtime scalars.

CPU tensors work too (the kernel then runs on tilejit's simulator: inputs are copied in and the
result copied into the output), so the same code is testable without a GPU.

This module imports torch; ``import tilejit`` does not import it.
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable, Optional, Sequence, Union

import torch

from .runtime.device import Device
from .runtime.partition import partition
from .runtime.stream import Stream

__all__ = ["kernel_op", "launch"]


def launch(kernel, out: torch.Tensor, tile: Sequence[int], *args) -> torch.Tensor:
    """Run ``kernel(partition of out, *args)`` on torch's current stream and return ``out``.

    CUDA tensors are used in place, without waiting for the GPU; CPU tensors (tilejit's
    simulator) are copied in, and the result is copied into ``out``.
    """
    if out.is_cuda:
        dev = out.device.index if out.device.index is not None else torch.cuda.current_device()
        stream = Stream.of_producer(torch.cuda.current_stream(dev).cuda_stream, Device(dev))
        kernel(partition(out, tuple(tile)), *args).submit_on(stream)
        return out
    # a host output: copied in, and back into out once the kernel has run (runtime.hostarrays)
    inputs = [a.detach() if isinstance(a, torch.Tensor) else a for a in args]
    kernel(partition(out.detach(), tuple(tile)), *inputs).sync()
    return out


def kernel_op(name: str, *, kernel, tile: Union[Sequence[int], Callable],
              backward: Optional[Callable] = None, setup_context: Optional[Callable] = None,
              device_types=("cuda", "cpu")):
    """Decorator: register the output-allocating function as the torch operator ``name``
    (``"namespace::op"``) that runs ``kernel`` (see the module docstring).

    ``tile``: the output partition's tile shape, or a callable ``(*args) -> tile shape``.
    ``backward(ctx, grad)`` / ``setup_context(ctx, inputs, output)``: as for
    ``torch.library.register_autograd``.
    """
    if "::" not in name:
        raise ValueError(f"kernel_op name must be 'namespace::name', got {name!r}")

    def wrap(alloc):
        sig = inspect.signature(alloc)

        @functools.wraps(alloc)
        def real(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            values = list(bound.arguments.values())
            out = alloc(*values)
            if not isinstance(out, torch.Tensor):
                raise TypeError(f"{name}: the kernel_op function must return the output tensor it "
                                f"allocated (one torch.Tensor), got {type(out).__name__}")
            shape = tile(*values) if callable(tile) else tile
            return launch(kernel, out, shape, *values)

        op = torch.library.custom_op(name, mutates_args=(), device_types=device_types)(real)
        op.register_fake(alloc)
        if backward is not None:
            op.register_autograd(backward, setup_context=setup_context)
        return op

    return wrap
