"""torch's ``device="cuda"`` on CPU tensors, so cuTile's tests run on tilejit's simulator.

* A ``TorchFunctionMode`` (``ToCPU``) rewrites every torch call: a ``device=`` of ``"cuda"``,
  ``"cuda:N"`` or ``torch.device("cuda")`` becomes ``"cpu"`` (factories, ``*_like``,
  ``torch.testing.make_tensor``, ``Tensor.new_*``); ``Tensor.cuda()`` and ``.to("cuda")`` copy, as
  they do from a CPU tensor on a GPU machine.
* ``torch.cuda``'s stream, event and device functions answer for one simulated device: streams
  are ``FakeStream`` objects with ``cuda_stream == 0`` (what ``ct.launch`` takes: tilejit's
  ``_stream_of`` reads ``.cuda_stream``), ``synchronize`` does nothing (simulated launches finish
  before ``ct.launch`` returns), events time with ``perf_counter``.
* Not mapped: CUDA graphs, ``torch.cuda.is_available()`` (stays False for tilejit's sake) and
  anything else, which fails with torch's "not compiled with CUDA" (bucket ``simulator limit``).
"""
import contextlib
import time
import types

import torch
from torch.overrides import TorchFunctionMode


def _is_cuda(d) -> bool:
    if isinstance(d, torch.device):
        return d.type == "cuda"
    return isinstance(d, str) and d.split(":")[0] == "cuda"


class ToCPU(TorchFunctionMode):
    def __torch_function__(self, func, types_, args=(), kwargs=None):
        __tracebackhide__ = True          # torch's own errors show as the test's
        kwargs = dict(kwargs or {})
        moved = _is_cuda(kwargs.get("device"))
        if moved:
            kwargs["device"] = "cpu"
        if func is torch.Tensor.cuda:
            return args[0].clone()
        if func is torch.Tensor.to and any(_is_cuda(a) for a in args[1:]):
            args = tuple("cpu" if _is_cuda(a) else a for a in args)
            moved = True
        if moved and func is torch.Tensor.to:
            kwargs["copy"] = True
        return func(*args, **kwargs)


class FakeStream:
    """Stands for a CUDA stream: ``ct.launch`` reads ``cuda_stream``/``device_index``."""
    cuda_stream = 0
    device_index = 0
    device = torch.device("cpu")

    def __init__(self, *args, **kwargs):
        pass

    def synchronize(self):
        pass

    def query(self):
        return True

    def wait_stream(self, other):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        return FakeEvent()


class FakeEvent:
    def __init__(self, *args, **kwargs):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def elapsed_time(self, end) -> float:
        return (end.t - self.t) * 1000.0

    def synchronize(self):
        pass

    def query(self):
        return True

    def wait(self, stream=None):
        pass


_DEFAULT = FakeStream()
_PROPS = types.SimpleNamespace(name="tilejit CPU simulator", major=9, minor=0,
                               multi_processor_count=132, L2_cache_size=50 << 20,
                               total_memory=64 << 30)


def install(capability=(9, 0)) -> None:
    """Enter ``ToCPU`` for the rest of the process and patch ``torch.cuda`` (one device of
    compute ``capability``: the simulator's)."""
    _PROPS.major, _PROPS.minor = capability
    ToCPU().__enter__()
    cuda = torch.cuda
    cuda.current_stream = cuda.default_stream = lambda device=None: _DEFAULT
    cuda.Stream, cuda.Event = FakeStream, FakeEvent
    cuda.stream = lambda s=None: contextlib.nullcontext(s)
    cuda.device = lambda d=None: contextlib.nullcontext()
    cuda.synchronize = lambda device=None: None
    cuda.set_device = lambda device: None
    cuda.current_device = lambda: 0
    cuda.device_count = lambda: 1
    cuda.get_device_properties = lambda device=None: _PROPS
    cuda.get_device_capability = lambda device=None: (_PROPS.major, _PROPS.minor)
    cuda.get_device_name = lambda device=None: _PROPS.name
    cuda.empty_cache = lambda: None
