"""DLPack / CUDA Array Interface interop on the simulator backend (host memory: NumPy works)."""
import gc

import numpy as np
import pytest

import tilejit as tile
from tilejit.runtime import dlpack
from tilejit.deviceops import transfer as T
from sample_arrays import rand


pytestmark = pytest.mark.usefixtures("simulator_backend")


def test_numpy_from_dlpack_is_zero_copy():
    a = rand((5, 7))
    t = T.from_numpy(a).sync()
    assert t.__dlpack_device__() == (dlpack.kDLCPU, 0)
    n = np.from_dlpack(t)
    assert n.shape == (5, 7) and n.dtype == np.float32 and np.array_equal(n, a)
    n[2, 3] = 123.0                               # writes go to simulated device memory
    assert t.to_numpy()[2, 3] == 123.0
    T.copy_from_host(t, np.zeros((5, 7), np.float32)).sync()
    assert (n == 0).all()                         # and device writes are visible through n


def test_numpy_from_dlpack_of_a_strided_view():
    a = rand((6, 8), seed=1)
    t = T.from_numpy(a).sync()
    n = np.from_dlpack(t[1:5, 2:7])
    assert n.strides == (32, 4) and np.array_equal(n, a[1:5, 2:7])
    m = np.from_dlpack(t[:, ::2])
    assert np.array_equal(m, a[:, ::2])


@pytest.mark.parametrize("dt", [np.int8, np.uint16, np.int32, np.int64, np.float16, np.float64,
                                np.bool_])
def test_dlpack_dtypes(dt):
    a = rand((9,), dt, seed=2)
    assert np.array_equal(np.from_dlpack(T.from_numpy(a).sync()), a)


def test_capsule_keeps_the_tensor_alive():
    from tilejit.simulator.memory import memory as sim
    a = rand((64,), seed=3)
    t = T.from_numpy(a).sync()
    ptr = t.storage.ptr
    n = np.from_dlpack(t)
    del t
    gc.collect()
    assert sim.is_live(ptr) and np.array_equal(n, a)
    del n
    gc.collect()
    assert not sim.is_live(ptr)


def test_unconsumed_capsules_release_their_tensor():
    t = T.from_numpy(rand((4,))).sync()
    before = dlpack.live_exports()
    cap = t.__dlpack__()
    capv = t.__dlpack__(max_version=(1, 0))
    assert dlpack.live_exports() == before + 2
    assert "dltensor" in repr(cap) and "dltensor_versioned" in repr(capv)
    del cap, capv
    gc.collect()
    assert dlpack.live_exports() == before


def test_rejected_capsule_keeps_the_consumers_exception():
    # NumPy has no bfloat16 DLPack type: it raises while holding our capsule, whose destructor
    # then runs with the exception pending (it must neither lose it nor leak the export)
    t = T.from_numpy(rand((4,)), tile.bfloat16).sync()
    before = dlpack.live_exports()
    with pytest.raises(Exception) as ei:
        np.from_dlpack(t)
    assert not isinstance(ei.value, SystemError), ei.value
    assert "dtype" in str(ei.value).lower() or "type" in str(ei.value).lower()
    del ei
    gc.collect()
    assert dlpack.live_exports() == before


def test_deleter_runs_safely_while_an_exception_propagates():
    t = T.from_numpy(rand((4,))).sync()
    before = dlpack.live_exports()
    with pytest.raises(TypeError):
        np.from_dlpack(t) + "x"          # the array (and our export) dies with TypeError pending
    gc.collect()
    assert dlpack.live_exports() == before
    with pytest.raises(KeyError):
        {}[np.from_dlpack(t).shape]
    gc.collect()
    assert dlpack.live_exports() == before


def test_consumer_releasing_from_another_thread():
    import threading
    t = T.from_numpy(rand((16,))).sync()
    before = dlpack.live_exports()
    arrays = [np.from_dlpack(t) for _ in range(8)]
    assert dlpack.live_exports() == before + 8

    def drop():
        arrays.clear()

    th = threading.Thread(target=drop)
    th.start()
    th.join()
    gc.collect()
    assert dlpack.live_exports() == before


def test_versioned_capsule_layout():
    t = T.from_numpy(rand((2, 3))).sync()
    cap = t.__dlpack__(max_version=(1, 1))
    ptr = dlpack._PyCapsule_GetPointer(cap, dlpack._P_NAME_V)
    m = dlpack.DLManagedTensorVersioned.from_address(ptr)
    assert (m.version.major, m.version.minor) == (1, 0)
    dl = m.dl_tensor
    assert dl.ndim == 2 and [dl.shape[i] for i in range(2)] == [2, 3]
    assert [dl.strides[i] for i in range(2)] == [3, 1]
    assert (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes) == (2, 32, 1)
    assert dl.device.device_type == dlpack.kDLCPU


def test_dlpack_device_mismatch_and_copy():
    t = T.from_numpy(rand((3,))).sync()
    with pytest.raises(BufferError, match="DLPack device"):
        t.__dlpack__(dl_device=(2, 0))
    n = np.from_dlpack(t.__dlpack__(copy=True) and t)   # copy=True is accepted
    assert n.shape == (3,)


def test_from_dlpack_copies_host_arrays():
    a = rand((4, 4), seed=4)
    t = tile.from_dlpack(a)
    assert isinstance(t, tile.Tensor) and np.array_equal(t.to_numpy(), a)
    a[0, 0] = 99.0
    assert t.to_numpy()[0, 0] != 99.0               # a copy, not an alias


def test_from_dlpack_of_a_generic_host_producer():
    a = rand((3, 5), seed=5)

    class Producer:                                  # only the DLPack protocol, no ndarray type
        def __dlpack__(self, **kw):
            return a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return a.__dlpack_device__()

    t = tile.from_dlpack(Producer())
    assert np.array_equal(t.to_numpy(), a)


def test_from_dlpack_of_a_tile_tensor_is_identity():
    t = T.from_numpy(rand((3,))).sync()
    assert tile.from_dlpack(t) is t
    with pytest.raises(TypeError, match="neither"):
        tile.from_dlpack(object())


def test_cuda_array_interface_round_trip():
    a = rand((6, 4), seed=6)
    t = T.from_numpy(a).sync()
    v = t[1:5, 1:3]
    cai = v.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (4, 2) and cai["typestr"] == "<f4"
    assert cai["data"] == (v.device_pointer, False)
    assert cai["strides"] == (16, 4)
    assert t.__cuda_array_interface__["strides"] is None

    class Holder:
        __cuda_array_interface__ = cai

    w = tile.from_dlpack(Holder())
    assert w.device_pointer == v.device_pointer and w.strides == (4, 1)
    assert np.array_equal(w.to_numpy(), a[1:5, 1:3])


def test_cuda_array_interface_rejects_foreign_pointers_on_the_simulator():
    a = rand((4,))

    class Holder:
        __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4",
                                    "data": (a.ctypes.data, False), "version": 3}

    with pytest.raises(tile.TensorError, match="not simulated device memory"):
        tile.from_dlpack(Holder())


def test_torch_cpu_interop():
    torch = pytest.importorskip("torch")
    x = torch.randn(4, 5)
    t = tile.from_dlpack(x)
    assert np.array_equal(t.to_numpy(), x.numpy())
    y = torch.from_dlpack(t)
    assert y.shape == (4, 5) and torch.equal(y, x)
    y[0, 0] = 42.0
    assert t.to_numpy()[0, 0] == 42.0


@pytest.mark.parametrize("versioned", [False, True])
def test_native_deleters_drop_the_context_at_their_own_offset(versioned):
    # Each deleter must read manager_ctx at its own struct's offset (48 unversioned, 8 versioned).
    import ctypes
    import sys
    from tilejit.runtime import _dlpack_native as nat
    deleter, deleter_v, _ = nat.addresses()
    fn = ctypes.CFUNCTYPE(None, ctypes.c_int64)(deleter_v if versioned else deleter)
    off, other = ((nat.CTX_OFFSET_VERSIONED, nat.CTX_OFFSET) if versioned
                  else (nat.CTX_OFFSET, nat.CTX_OFFSET_VERSIONED))
    keep = object()
    block = (ctypes.c_int64 * 8)()                  # zeroed: other offsets hold a null ctx
    block[off // 8] = id(keep)
    assert block[other // 8] == 0
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(keep))
    refs = sys.getrefcount(keep)
    fn(ctypes.addressof(block))
    assert sys.getrefcount(keep) == refs - 1
    fn(0)                                           # a null managed pointer is ignored
    block[off // 8] = 0
    fn(ctypes.addressof(block))                     # and so is a null context
    assert sys.getrefcount(keep) == refs - 1
