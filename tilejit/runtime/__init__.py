"""Host runtime: driver wrapper, devices/streams, memory, tensors, DLPack, argument
classification and launch packing. It never imports ``tilejit.deviceops`` (DeviceOps sit one floor up);
this package only re-exports the public classes."""
from .backend import current as current_backend
from .device import Device, current_device, default_arch
from .stream import Stream, Event
from .tensor import Tensor
from .partition import ForeignPartition, Partition, partition
from .argspec import atomic
from .dlpack import from_dlpack
from .module import Module, Function, load_module_from_ptx, load_module_from_file

__all__ = ["current_backend", "Device", "current_device", "default_arch", "Stream", "Event", "Tensor", "Partition",
           "ForeignPartition", "partition", "atomic", "from_dlpack", "Module", "Function", "load_module_from_ptx",
           "load_module_from_file"]
