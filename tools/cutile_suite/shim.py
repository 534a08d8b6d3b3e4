"""``import cuda.tile as ct`` gives ``tilejit.cutile``, for cuTile Python's own tests.

``install`` (run by ``site/cuda/tile/__init__.py``, which run.py puts on the ``PYTHONPATH`` of
the test processes and of every process they start) makes ``sys.modules["cuda.tile"]``
``tilejit.cutile`` itself: what a user gets by changing the import. A name of cuTile's
``cuda.tile.__all__`` (read from the checkout's sources) that tilejit.cutile lacks is a
placeholder of kind ``MissingAPI`` (a module ``__getattr__``), so a test file that names one still
imports and only the tests that use it fail. Submodules ``cuda.tile.X`` come from a meta-path
finder:

* ``_infra()``: the few private names cuTile's ``test/conftest.py`` and ``test/util.py`` import at
  module level to set tests up (bytecode versions, compute capability, sm arch, ``to_dtype``).
  They are test infrastructure, answered from tilejit; without them no test file would import.
* re-export modules (``_exception``, ``_datatype``, ``_numeric_semantics``, ``_memory_model``):
  a public name is looked up on ``tilejit.cutile`` (as above), the others are placeholders of
  kind ``CuTileInternal``.
* ``compilation`` is tilejit.cutile's own; on a machine without tileiras its ``export_kernel``
  writes Tile IR bytecode when a cubin is asked for, so cuTile's compile-only tests
  (test_typeinfer, test_constfold...) still test tilejit's front end there.
* a submodule ``tilejit.cutile`` has (``tilejit/cutile/X.py``): that module.
* any other ``cuda.tile._X`` (cuTile's private API): a module of ``Placeholder`` values of kind
  ``CuTileInternal``; a public submodule ``tilejit.cutile`` lacks (``jax``; ``tune`` until
  tilejit has one): placeholders of kind ``MissingAPI``.

A placeholder imports fine and hands out placeholders for its attributes (and, while pytest
collects, for calls and subscripts: module-level code such as ``TuningResult[Any]``). Using one
in a test (calling it, ``bool``, iterating, ``isinstance``, arithmetic, a dunder attribute)
raises its kind, whose message the classifier reads; its repr ``<placeholder cuda.tile.X>``
names it in a kernel's typing error.

With ``simulator=True``, ``install`` maps torch's CUDA device to the CPU too (torch_cpu.py).
"""
import ast
import enum
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

import tilejit
import tilejit.cutile as _ct
from tilejit.cutile import compilation as _compilation
from tilejit import dtypes as _dtypes


class CuTileInternal(AttributeError):
    """A test used cuTile Python's private API (``cuda.tile._*``)."""


class MissingAPI(AttributeError):
    """A test used a public ``cuda.tile`` name that ``tilejit.cutile`` does not have."""


RUNNING = True    # False while pytest collects (plugin.py)


class Placeholder:
    def __init__(self, name: str, kind: type):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_kind", kind)

    def _fail(self, *args, **kwargs):
        what = "cuTile-internal" if self._kind is CuTileInternal else "not in tilejit.cutile"
        raise self._kind(f"cuda.tile.{self._name}: {what}")

    def __getattr__(self, attr):
        if attr.startswith("__"):          # an AttributeError: hasattr and probes answer False
            Placeholder(f"{self._name}.{attr}", self._kind)._fail()
        return Placeholder(f"{self._name}.{attr}", self._kind)

    def __call__(self, *args, **kwargs):
        if not RUNNING:
            return Placeholder(f"{self._name}()", self._kind)
        self._fail()

    def __getitem__(self, key):               # TuningResult[Any] in a module-level annotation
        if not RUNNING:
            return Placeholder(f"{self._name}[]", self._kind)
        self._fail()

    def __repr__(self):
        return f"<placeholder cuda.tile.{self._name}>"

    def __eq__(self, other):             # to_dtype(torch.float8_e8m0fnu) == float8_e8m0fnu
        if not RUNNING:
            return self is other
        self._fail()

    __hash__ = object.__hash__

    __bool__ = __iter__ = __len__ = __contains__ = __enter__ = __mro_entries__ = _fail
    __instancecheck__ = __subclasscheck__ = __index__ = __int__ = __float__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __add__ = __sub__ = __mul__ = __or__ = _fail


class PlaceholderModule(types.ModuleType):
    """``cuda.tile.<name>``: ``attrs`` as given, any other attribute a placeholder of ``kind``
    (with ``public`` names: a public name is tilejit.cutile's, or a MissingAPI placeholder)."""

    def __init__(self, name, kind, attrs=None, public=None):
        super().__init__(f"cuda.tile.{name}")
        self.__path__ = []           # a package: cuda.tile._ir.ops imports below cuda.tile._ir
        self.__dict__.update(attrs or {})
        self._kind, self._public, self._short = kind, public, name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        if self._public is not None and attr in self._public:
            return getattr(_ct, attr)                  # tilejit's, or a MissingAPI placeholder
        return Placeholder(f"{self._short}.{attr}", self._kind)


# --- test infrastructure (conftest.py, util.py) ---------------------------------------------------
class BytecodeVersion(enum.IntEnum):
    """cuTile's Tile IR bytecode versions, by the names the tests use (major*10000+minor*100)."""
    V_13_1 = 130100
    V_13_2 = 130200
    V_13_3 = 130300
    V_13_4 = 130400       # cuTile's "dev features" version

    def major(self):
        return self.value // 10000

    def minor(self):
        return self.value // 100 % 100

    def as_string(self):
        return f"{self.major()}.{self.minor()}"


_RELEASED = [BytecodeVersion.V_13_1, BytecodeVersion.V_13_2, BytecodeVersion.V_13_3]


def _export_kernel(kernel, signatures, output_file, gpu_code=None, output_format="cubin",
                   **options):
    """``compilation.export_kernel`` as a compile-only check where tileiras is missing (the
    simulator's machine): the Tile IR bytecode instead of a cubin (typing, lowering,
    verification all run)."""
    from tilejit.toolchain import tileiras
    if output_format == "cubin" and not tileiras.available():
        output_format = "tileir_bytecode"
    return _EXPORT(kernel, signatures, output_file, gpu_code=gpu_code,
                   output_format=output_format)


_EXPORT = _compilation.export_kernel


def _no_attribute(name):
    raise AttributeError(name)


def _implicit_cast_ok(src, dst):
    from tilejit.typing.templates.tiled_view import implicit_cast_ok
    return implicit_cast_ok(_dtypes.as_dtype(src), _dtypes.as_dtype(dst))


def _infra():
    dev = tilejit.current_device()
    arch = types.SimpleNamespace(path=f"tilejit ({dev.arch}, "
                                      f"{'simulator' if dev.is_simulated else 'tileiras'})")
    bytecode = {"BytecodeVersion": BytecodeVersion}
    return {
        "_bytecode": bytecode,
        "_bytecode.version": bytecode,
        "_compile": {"get_sm_arch": lambda: dev.arch,
                     "_SUPPORTED_VERSIONS": list(_RELEASED),
                     "_get_max_supported_bytecode_version": lambda *a, **k: _RELEASED[-1],
                     "_find_compiler_bin": lambda: arch},
        "_cext": {"dev_features_enabled": lambda: False,
                  "CallingConvention": _compilation.CallingConvention,
                  "get_compute_capability": lambda: dev.compute_capability},
        "_ir.typing_support": {"to_dtype": _dtypes.as_dtype},
        # the tests compute their expected results with cuTile's implicit-cast rule; tilejit's
        # (tiled_view.implicit_cast_ok) matches it on every dtype pair
        "_ir.cast_ops": {"_is_implicit_cast_ok": _implicit_cast_ok},
    }


REEXPORTS = {"_exception", "_datatype", "_numeric_semantics", "_memory_model"}


def public_names(checkout: str) -> set:
    """cuTile's ``cuda.tile.__all__``, read (not imported) from the checkout's sources."""
    path = os.path.join(checkout, "src", "cuda", "tile", "__init__.py")
    for node in ast.parse(open(path).read()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__":
            return set(ast.literal_eval(node.value))
    return set()


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, public):
        self.public, self.infra = public, None

    def find_spec(self, fullname, path=None, target=None):
        # ``from cuda.tile import _x`` imports ``tilejit.cutile._x`` (the module's own name)
        if fullname.startswith("tilejit.cutile.") and \
                importlib.machinery.PathFinder.find_spec(fullname, path) is None:
            return importlib.util.spec_from_loader(fullname, self)
        if fullname.startswith("cuda.tile."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        name = spec.name.split(".", 2)[2]
        real = f"tilejit.cutile.{name}"
        if "." not in name and importlib.machinery.PathFinder.find_spec(real, _ct.__path__):
            return importlib.import_module(real)              # tilejit.cutile has it
        if self.infra is None:
            self.infra = _infra()
        if name.startswith("_"):
            public = self.public if name in REEXPORTS else None
            return PlaceholderModule(name, CuTileInternal, self.infra.get(name), public)
        return PlaceholderModule(name, MissingAPI, self.infra.get(name))

    def exec_module(self, module):
        pass


def install(checkout: str, simulator: bool = False) -> None:
    """Map ``cuda.tile`` to ``tilejit.cutile`` in this process (and torch's CUDA device to the
    CPU with ``simulator``)."""
    import cuda                      # cuda-python's namespace package, or site/cuda
    public = public_names(checkout)
    submodules = {n for n in public if os.path.exists(os.path.join(checkout, "src", "cuda",
                                                                   "tile", n))}

    def missing(name):
        if name in submodules:
            return importlib.import_module(f"cuda.tile.{name}")
        if name in public:
            return Placeholder(name, MissingAPI)
        raise AttributeError(f"module 'tilejit.cutile' has no attribute '{name}'")

    sys.modules["cuda.tile"] = cuda.tile = _ct
    _compilation.export_kernel = _export_kernel
    # cuTile's compilation names tilejit lacks (name mangling): MissingAPI where used
    _compilation.__getattr__ = lambda name: Placeholder(f"compilation.{name}", MissingAPI) \
        if not name.startswith("__") else _no_attribute(name)
    _ct.__getattr__ = missing
    sys.meta_path.insert(0, _Finder(public))
    if simulator:
        from cutile_suite import torch_cpu
        torch_cpu.install(tilejit.current_device().compute_capability)
