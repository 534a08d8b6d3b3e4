"""The launch side of ``@tile.entry``: :class:`KernelLaunch` (the lazy op ``kernel(...)`` returns)
and :class:`PreparedLaunch` (``op.prepare(stream)``).

A launch classifies its arguments (``runtime.argspec``), takes the partitions' leases, checks
devices, aliasing and the grid, finds the executable through the kernel (``Kernel.executable_for``:
the compile side, ``dispatcher.py``) and launches it (``runtime.cuda_executable``). With the C extension a
plain launch (no constants, no launch options) runs in C (``tilejit/native.py``), and so does a
call passing its constants (as arguments or with ``.generics``, or compile options) whose bound
kernel is in the kernel's memo; these methods are its fallback and the pure-Python build.
"""
from __future__ import annotations

import types
from typing import Optional

from . import native
from .compiler import CompileOptions
from .errors import CompileError, LaunchError
from .memo import BoundedMemo
from .deviceops.deviceop import (DeviceFuture, DeviceOp, _as_stream, _sync_quietly, account_for,
                           execute_input)
from .deviceops.execution import ExecutionContext
from .deviceops.scheduling import default_stream, has_user_policy, policy_epoch
from .runtime import argspec
from .runtime.hostarrays import float64_hint
from .runtime import foreign as _foreign
from .runtime import submission as _submission
from .runtime.argspec import (acquire_partitions, check_launch_aliasing, check_launch_devices,
                              classify, grid_from_partitions, grid_ones, release_partitions)
from .runtime.device import Device
from .runtime.cuda_executable import check_scalars, launch_infos
from .runtime.memory import use_all
from .runtime.partition import Partition
from .runtime.stream import Stream
from .runtime.tensor import Tensor

from .keys import MISSING  # noqa: E402  (a Constant left for .generics(...) to bind)
_NO_GENERICS = types.MappingProxyType({})       # shared by every launch without generics

# (device ordinal, torch's current stream there) -> (policy epoch, the Stream sync() runs on)
_torch_streams = BoundedMemo("kernel_launch.torch_streams", 64)


class KernelLaunch(DeviceOp):
    """A lazy kernel launch. Its output is the tuple of the arguments you passed."""

    # slots: the C launcher (tilejit/csrc, set_layout) makes plain launches as clones of a
    # prototype made by __init__, and reads them by offset
    __slots__ = ("kernel", "args", "arity", "_simple", "_grid", "_const_grid", "_options",
                 "_generics", "_values", "__dict__", "__weakref__")

    def __init__(self, kernel, args, grid=None, const_grid=None, generics=None,
                 options: Optional[CompileOptions] = None):
        """The one constructor (``kernel(...)`` in C clones a launch made here)."""
        self.kernel = kernel
        self.args = tuple(args)
        self.arity = len(self.args)
        self._grid = grid
        self._const_grid = const_grid
        self._generics = dict(generics) if generics else _NO_GENERICS
        # with generics: every parameter's value (the constants bound in place), what the
        # bound kernel's memo keys on, computed once here rather than at each launch (C's
        # submit_bound reads it too); None without generics or where the general path decides
        values = kernel._with_generics(self.args, self._generics) if self._generics else None
        self._values = tuple(values) if values is not None else None
        self._options = options
        # no constants, generics, options or const_grid: the hot path keys on argument keys only
        self._simple = kernel is not None and kernel._simple and not self._generics and \
            options is None and const_grid is None and self.arity == len(kernel.runtime_names)

    @property
    def graph_safe(self) -> bool:  # type: ignore[override]
        """A launch is graph-safe when its lazy inputs are (NumPy arguments are copied in, which
        allocates, and are caught by the allocation guard)."""
        return all(a.graph_safe for a in self.args if isinstance(a, DeviceOp))

    # With the C extension, submit_on and sync_on are replaced by C methods (_install_native)
    # that launch plain calls themselves and fall back to these.
    def submit_on(self, stream) -> DeviceFuture:
        """Queue the launch on ``stream`` without waiting (the hot path of a kernel call)."""
        self._ran = True        # no "never run" warning (the C methods set it too: RAN_SLOT)
        if type(stream) is not Stream:
            stream = _as_stream(stream)
        if not self._simple:
            if self._launch_bound(stream, wait=False):
                return DeviceFuture(self.args, stream)
            native.not_plain()
            return DeviceOp.submit_on(self, stream)
        return self._submit_plain(stream, True)

    def sync_on(self, stream):
        """Run on ``stream`` and wait for completion; return the output."""
        self._ran = True
        if type(stream) is not Stream:
            stream = _as_stream(stream)
        if not self._simple:
            if self._launch_bound(stream, wait=True):
                stream.synchronize()
                return self.args
            native.not_plain()
            return DeviceOp.sync_on(self, stream)
        return self._sync_plain(stream, True)

    def _launch_bound(self, stream, wait: bool) -> bool:
        """A call that passed its kernel's constants (as arguments or through ``.generics``), or
        compile options (no const_grid), launched as a plain launch of the kernel bound to them
        (the C path, or its Python fallback). False when it must take the general path: lazy
        arguments, values that cannot key the memo. With the extension, C makes a memo hit
        itself (csrc/prepared.c submit_bound, the same steps): this runs for a miss and what C
        gives back."""
        k = self.kernel
        if k is None or k._bindings is None or self._const_grid is not None:
            return False
        args = self.args
        for a in args:
            if isinstance(a, DeviceOp):
                return False
        if self._generics:
            values = self._values           # Kernel._with_generics's, made by __init__
            if values is None:
                return False
        elif self.arity == len(k.param_names):
            values = args
        else:
            return False
        b = k._bound_for(values, self._options)
        if b is None:
            return False
        rt = tuple([values[i] for i in k._runtime_pos])
        _submission.enter("sync()/sync_on()" if wait else "submit_on()/schedule()/await")
        try:
            if b._native is None or not b._native.launch(rt, stream, self._grid):
                inner = KernelLaunch(b, rt, grid=self._grid)
                inner._ran = True
                with stream.device.current():   # a miss: compiles, and records what C replays
                    inner._execute(ExecutionContext(stream))
        except BaseException:
            _submission.leave()
            if wait:
                _sync_quietly(stream)
            raise
        _submission.leave()
        return True

    def _submit_plain(self, stream, try_native=False) -> DeviceFuture:
        self._ran = True
        _submission.enter("submit_on()/schedule()/await")
        try:
            out = self._launch_plain(stream, try_native)
        finally:
            _submission.leave()
        return DeviceFuture(out, stream)

    def _sync_plain(self, stream, try_native=False):
        self._ran = True
        _submission.enter("sync()/sync_on()")
        try:
            out = self._launch_plain(stream, try_native)
        except BaseException:
            _submission.leave()
            _sync_quietly(stream)
            raise
        _submission.leave()
        stream.synchronize()
        return out

    def _default_stream(self):
        # The device of the arguments, and there: DLPack producers order their consumers after
        # their pending work, so when torch made the tensors, running on torch's current stream
        # needs no ordering at all.
        prod = _foreign.torch_stream_of(self.args)
        if prod is not None:
            epoch = policy_epoch()
            hit = _torch_streams.get(prod)
            if hit is not None and hit[0] == epoch:
                return hit[1]
            if not has_user_policy(prod[0]):
                s = Stream.of_producer(prod[1], Device(prod[0]))
                if not s._owned and s._owner is not None:
                    _torch_streams.put(prod, (epoch, s))   # a producer wrapper: never destroyed
                return s
            return default_stream(prod[0])
        for a in self.args:
            t = a._tensor if type(a) is Partition else a
            if type(t) is Tensor:
                return default_stream(t._storage.device)
        dev = _foreign.device_of(self.args)       # CuPy / __cuda_array_interface__ arrays
        return default_stream(dev)                # None (host arguments only): the current device

    def _launch_plain(self, stream, try_native=True):
        """Launch a kernel without constants or launch options (on its partitions' grid or an
        explicit ``.grid()``): the native launcher when it knows the arguments, else the general
        path (which compiles on a miss)."""
        native_launcher = self.kernel._native
        if try_native and native_launcher is not None and \
                native_launcher.launch(self.args, stream, self._grid):
            return self.args
        with stream.device.current():
            return self._execute(ExecutionContext(stream))

    def describe(self, depth: int = 0) -> str:
        from .deviceops.describe import value
        k = self.kernel
        names = k.param_names if len(self.args) == len(k.param_names) else k.runtime_names
        parts = [f"{n}={value(a, depth)}" for n, a in zip(names, self.args)
                 if a is not MISSING]
        parts += [f"{n}={v!r}" for n, v in self._generics.items()]
        grid = f"grid {self._grid}" if self._grid is not None else "grid from the partitions"
        return f"launch {k.__name__}({', '.join(parts)}), {grid}"

    def _copy(self, **kw):
        d = dict(grid=self._grid, const_grid=self._const_grid, generics=self._generics,
                 options=self._options)
        d.update(kw)
        return KernelLaunch(self.kernel, self.args, **d)

    def grid(self, grid) -> "KernelLaunch":
        """Launch on an explicit runtime grid ``(gx, gy, gz)`` instead of the partitions' grid."""
        account_for(self)   # the copy (or the error) replaces it: only the copy warns if never run
        # (a call's hot path: the copy made directly, not through _copy; with the extension,
        # csrc/prepared.c klaunch_grid copies for a tuple of three ints and falls back to this)
        return KernelLaunch(self.kernel, self.args, argspec.normalize_grid(grid),
                            self._const_grid, self._generics, self._options)

    def const_grid(self, grid) -> "KernelLaunch":
        """Like ``grid`` but baked into the kernel (part of the specialization key)."""
        account_for(self)
        g = argspec.normalize_grid(grid)
        return self._copy(grid=g, const_grid=g)

    def generics(self, *values, **named) -> "KernelLaunch":
        """Bind ``tile.Constant`` parameters: ``.generics([64, 32])`` (in parameter order) or
        ``.generics(BM=64, BK=32)``."""
        account_for(self)
        k = self.kernel
        g = dict(self._generics)
        if values:
            vals = values[0] if len(values) == 1 and isinstance(values[0], (list, tuple)) else values
            if len(vals) > len(k.constant_names):
                raise LaunchError(f"{k.__name__} has {len(k.constant_names)} "
                                  f"constant parameter(s), {len(vals)} values given")
            g.update(zip(k.constant_names, vals))
        for name, v in named.items():
            if name not in k.constant_names:
                raise LaunchError(f"{k.__name__} has no tile.Constant parameter '{name}' "
                                  f"(constant parameters: {', '.join(k.constant_names) or 'none'})")
            g[name] = v
        # (the copy made directly, not through _copy: a generics call's hot path; with the
        # extension, csrc/prepared.c klaunch_generics makes it for keywords that all name
        # constants, _values by Kernel._with_generics's rule, and falls back to this)
        return KernelLaunch(k, self.args, self._grid, self._const_grid, g, self._options)

    def compile_options(self, options: CompileOptions) -> "KernelLaunch":
        account_for(self)
        if not isinstance(options, CompileOptions):
            raise TypeError(f"compile_options() takes a tile.CompileOptions, got {type(options).__name__}")
        return self._copy(options=options)

    def prepare(self, stream=None) -> "PreparedLaunch":
        """Validate, specialize and pack this launch once, for a hot loop of identical launches:
        ``p = kernel(z.partition(t), x).prepare(stream); for ...: p.launch()``.

        The arguments are classified, checked (ownership, aliasing, grid, scalar ranges) and
        compiled now; each ``launch()`` then costs one kernel launch plus stream bookkeeping.
        Partitions stay leased until ``close()`` (or until the prepared launch is
        garbage-collected). Arguments must be tensors, partitions, scalars or tuples of these
        (not DeviceOps or NumPy arrays, whose copies are per launch): a tuple's elements are
        flattened into the packed parameters once. Globals the kernel reads are checked now, not
        per launch. Without ``stream``: the default policy's next stream on the arguments'
        device (the current device when no argument has one).
        """
        if stream is None:
            prod = _foreign.torch_stream_of(self.args)
            stream = default_stream(prod[0]) if prod is not None else self._default_stream()
        return PreparedLaunch(self, _as_stream(stream))

    def _execute(self, ctx):
        if native.missing:              # once: the C launch path is not built
            native.warn_missing()
        k = self.kernel
        values = tuple([execute_input(a, ctx) if isinstance(a, DeviceOp) else a
                        for a in self.args])
        simple = self._simple
        if simple:
            rt, consts = values, None
        else:
            rt, consts = k._split(values, self._generics)
            values = tuple([v for v in values if v is not MISSING])
        stream = ctx.stream
        acquire_partitions(rt)
        infos = None
        try:
            infos = [classify(v, a, stream) for v, a in zip(rt, k._anns)]
            grid, exe = self._specialize_for(infos, consts, stream, simple)
        except BaseException as e:
            release_partitions(rt)
            if isinstance(e, CompileError) and infos is not None:  # float64 NumPy args
                e._add_hint(float64_hint(e.message, infos, k.runtime_names))
            raise
        launch_infos(exe, infos, grid, stream, rt)
        k.stats.launches += 1
        return values

    def _specialize_for(self, infos, consts, stream, simple: bool):
        """Check the classified arguments (aliasing, grid) and find their specialization loaded
        on the stream's device: ``(grid, executable)``. The caller releases the partitions on
        error."""
        k = self.kernel
        device = stream.device
        check_launch_devices(infos, device, k.runtime_names)
        accepted = check_launch_aliasing(infos, k.runtime_names, k, consts)
        grid = grid_from_partitions(infos, self._grid, k.runtime_names)
        exe = k.executable_for(tuple([i.key for i in infos]), device, grid_ones(grid), consts,
                               self._options, self._const_grid, simple)
        if accepted and not accepted <= getattr(exe, "alias_ok", accepted):
            exe.alias_ok = exe.alias_ok | accepted     # the C launcher's answer next time
        return grid, exe


class PreparedLaunch:
    """A launch validated and packed once (see :meth:`KernelLaunch.prepare`)."""

    def __init__(self, op: KernelLaunch, stream):
        account_for(op)             # consumed: its launches (and inputs) are this object's
        k = op.kernel
        names = k.param_names if len(op.args) == len(k.param_names) else k.runtime_names
        for n, a in zip(names, op.args):
            if isinstance(a, DeviceOp):
                raise LaunchError(f"prepare(): argument `{n}` is a DeviceOp; arguments must be "
                                  f"tensors, partitions, scalars or tuples of tensors (run it "
                                  f"first with .sync())")
        rt, consts = k._split(op.args, op._generics)
        acquire_partitions(rt)
        try:
            infos = [classify(v, a, stream) for v, a in zip(rt, k._anns)]
            # once: a tuple's elements' values and storages (refusing NumPy copies, by name)
            params, storages = argspec.fixed_params(infos, k.runtime_names)
            self.grid, self.executable = op._specialize_for(infos, consts, stream, simple=False)
            self.params = params
            check_scalars(self.executable.checks, self.params)   # once: the values are fixed
        except BaseException:
            release_partitions(rt)
            raise
        self.kernel = k
        self.stream = stream
        self.args = op.args                 # keeps every argument alive (until close())
        self.infos = infos
        self._values = rt
        self._storages = storages
        self._nonempty = all(self.grid)
        self._closed = False
        self._c = _native_prepared(self)
        if self._c is not None:
            self.launch = self._c.launch        # the whole launch in C, no Python frame

    def launch(self) -> None:
        """Queue the kernel on the prepared stream (no wait)."""
        if self._closed:
            raise LaunchError("this prepared launch was closed")
        stream = self.stream
        use_all(self._storages, stream)
        if self._nonempty:
            self.executable.launch(self.grid, self.params, stream)

    def close(self) -> None:
        """Release the partitions' leases and the references to the arguments (later launches
        raise LaunchError)."""
        if not self._closed:
            self._closed = True
            if self._c is not None:
                self._c.close()
                self.__dict__.pop("launch", None)   # the C object holds the storages
                self._c = None
            release_partitions(self._values)
            self.args = self.infos = self._values = None
            self._storages = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _native_prepared(p: PreparedLaunch):
    """The C object that launches ``p`` (packed once), or None (pure Python, the simulator, or
    values only the Python packer converts)."""
    ext = native.ext()
    nat = getattr(p.executable, "_native", None)
    if ext is None or nat is None:
        return None
    try:
        return ext.Prepared(nat[0], nat[1], tuple(p.grid), p.stream, nat[2], tuple(p.params),
                            tuple(p._storages), LaunchError, p.executable)
    except (ValueError, OverflowError, TypeError):
        return None


__all__ = ["KernelLaunch", "PreparedLaunch", "MISSING"]
