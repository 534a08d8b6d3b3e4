"""The two device-side error kinds that only tilejit's own failures raise: InternalError (a bug in
tilejit while compiling) and KernelCacheError (a cached cubin the driver refuses)."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.backends.cuda import CudaBackend
from tilejit.compiler import Compiled


@tile.entry
def double(z, x):
    z.store(x.load(z.block, z.shape) * 2)


def test_an_unexpected_exception_in_the_compiler_is_an_internal_error(monkeypatch):
    z, x = api.zeros((8,)).sync(), api.from_numpy(np.ones(8, np.float32)).sync()
    import importlib
    S = importlib.import_module("tilejit.lowering.structurize")   # the module, not the function

    def broken(typed):
        raise KeyError("no such region")
    monkeypatch.setattr(S, "structurize", broken)
    with pytest.raises(tile.InternalError, match="bug in tilejit, not in your kernel") as ei:
        double(z.partition((8,)), x).sync()
    assert "double" in str(ei.value) and "KeyError" in str(ei.value)
    assert isinstance(ei.value.__cause__, KeyError)
    assert isinstance(ei.value, tile.DeviceError)           # API.md's hierarchy


def test_user_errors_stay_what_they_are():
    @tile.entry
    def bad(z, x):
        z.store(x.load(z.block, z.shape) + "text")
    z = api.zeros((8,)).sync()
    with pytest.raises(tile.TypingError):
        bad(z.partition((8,)), api.from_numpy(np.ones(8, np.float32)).sync()).sync()


@pytest.mark.parametrize("disk_hit, error", [(True, tile.KernelCacheError),
                                             (False, tile.DriverError)])
def test_a_cached_cubin_the_driver_refuses_is_a_kernel_cache_error(monkeypatch, disk_hit, error):
    import tilejit.backends.cuda as cuda

    def refuse(image, device, name):
        raise tile.DriverError(f"cannot load {name}: CUDA_ERROR_INVALID_IMAGE", code=200)
    monkeypatch.setattr(cuda, "load_module_from_data", refuse)
    c = Compiled(key=None, name="k", target="sm_90", slots=(), cubin=b"\x7fELF", disk_hit=disk_hit)
    with pytest.raises(error) as ei:
        CudaBackend.load(c, device=None)
    if disk_hit:
        assert "python -m tilejit cache clear" in str(ei.value)
        assert "CUDA_ERROR_INVALID_IMAGE" in str(ei.value)
