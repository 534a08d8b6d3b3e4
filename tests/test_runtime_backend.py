"""Backend selection (contract C3), driver wrapper behaviour without a driver, device metadata."""

import pytest

import tilejit as tile
from tilejit.runtime import backend, driver
from tilejit.runtime.device import Device, default_arch, parse_arch


@pytest.mark.parametrize("env,driver_ok,count,expected", [
    (None, True, 1, "cuda"),
    ("0", True, 2, "cuda"),
    ("1", True, 1, "simulator"),
    ("true", True, 1, "simulator"),
    (None, False, 0, "simulator"),
    (None, True, 0, "simulator"),
    ("0", False, 0, "simulator"),
])
def test_choose(env, driver_ok, count, expected):
    chosen, reason = backend.choose(env, driver_ok, count)
    assert chosen == expected
    assert reason


def test_choose_reasons_name_the_cause():
    assert "TILEJIT_SIMULATE" in backend.choose("1", True, 4)[1]
    assert "driver" in backend.choose(None, False, 0)[1]
    assert "device" in backend.choose(None, True, 0)[1]


def test_current_is_cached_and_notice_printed_once(monkeypatch, capsys):
    monkeypatch.setenv("TILEJIT_SIMULATE", "1")
    backend._reset_for_tests()
    try:
        assert backend.current() == "simulator"
        assert backend.current() == "simulator"
        err = capsys.readouterr().err
        assert err.count("tilejit:") == 1 and "simulator" in err
        # changing the environment afterwards does not change the cached choice
        monkeypatch.setenv("TILEJIT_SIMULATE", "0")
        assert backend.current() == "simulator"
        assert capsys.readouterr().err == ""
    finally:
        backend._reset_for_tests()


def test_force_overrides_and_nests():
    with backend.force("simulator"):
        assert backend.current() == "simulator"
        assert backend.is_simulator()
        with backend.force("cuda"):
            assert backend.current() == "cuda"
        assert backend.current() == "simulator"
    with pytest.raises(ValueError, match="unknown backend"):
        with backend.force("tpu"):
            pass


@pytest.mark.skipif(driver.driver_available(), reason="a CUDA driver is installed here")
def test_no_driver_is_reported_not_raised():
    assert driver.driver_available() is False
    assert driver.device_count() == 0
    assert driver.driver_version() is None
    with pytest.raises(tile.ContextError, match="TILEJIT_SIMULATE=1"):
        driver.init()


def test_check_unpacks_and_raises_driver_error():
    drv = driver.drv
    ok = drv.CUresult.CUDA_SUCCESS
    assert driver.check((ok,)) is None
    assert driver.check((ok, 7)) == 7
    assert driver.check((ok, 1, 2)) == (1, 2)
    oom = drv.CUresult.CUDA_ERROR_OUT_OF_MEMORY
    with pytest.raises(tile.DriverError) as ei:
        driver.check((oom, None), "cuMemAlloc")
    msg = str(ei.value)
    assert "cuMemAlloc failed" in msg and "CUDA_ERROR_OUT_OF_MEMORY" in msg
    assert ei.value.code == int(oom)
    assert isinstance(ei.value, tile.DeviceError)


@pytest.mark.parametrize("name, says", [
    ("CUDA_ERROR_LAUNCH_FAILED", "a failed tile.assert_"),      # a device assert traps so
    ("CUDA_ERROR_ILLEGAL_ADDRESS", "accessed invalid memory"),
])
def test_a_dead_context_says_what_may_have_killed_it(name, says):
    err = getattr(driver.drv.CUresult, name)
    with pytest.raises(tile.DriverError, match=says) as ei:
        driver.check((err,), "cuStreamSynchronize")
    assert "restart the process" in str(ei.value)


def test_parse_arch():
    assert parse_arch("sm_90") == (9, 0)
    assert parse_arch("sm_90a") == (9, 0)
    assert parse_arch("sm_100a") == (10, 0)
    assert parse_arch("sm_120") == (12, 0)
    assert parse_arch("sm_86") == (8, 6)
    with pytest.raises(ValueError, match="sm_90"):
        parse_arch("hopper")


def test_simulated_device_metadata(monkeypatch):
    with backend.force("simulator"):
        monkeypatch.setenv("TILEJIT_ARCH", "sm_100a")
        Device._cache.pop(("simulator", 0), None)
        try:
            dev = Device(0)
            assert dev is Device(0)
            assert dev.compute_capability == (10, 0)
            assert dev.arch == "sm_100"
            assert default_arch() == "sm_100"
            assert dev.multiprocessor_count >= 1
            assert dev.properties["warp_size"] == 32
            assert Device.count() == 1
            assert "simulator" in dev.name
            with pytest.raises(tile.ContextError, match="has 1 device.*TILEJIT_SIM_DEVICES=2"):
                Device(1)
        finally:
            Device._cache.pop(("simulator", 0), None)
        monkeypatch.delenv("TILEJIT_ARCH")
        assert Device(0).arch == "sm_90"
        assert Device(0).compute_capability == (9, 0)


def test_simulated_streams_and_events():
    with backend.force("simulator"):
        dev = tile.Device(0)
        s = dev.new_stream()
        assert s.is_simulated and s.query()
        s.synchronize()
        ev = s.record_event()
        assert ev.query()
        ev.synchronize()
        b = tile.Stream.borrow_raw(1234)
        assert b.is_borrowed and b.handle == 1234
        assert tile.Stream.borrow_raw(s) is s
        with pytest.raises(TypeError, match="cannot use"):
            tile.Stream.borrow_raw("stream")
        with pytest.raises(TypeError, match="new_stream"):
            tile.Stream()


def test_stream_borrow_protocols():
    class TorchLike:
        cuda_stream = 0x1111

    class CupyLike:
        ptr = 0x2222

    class CoreLike:
        def __cuda_stream__(self):
            return (0, 0x3333)

    class NumbaLike:
        class handle:
            value = 0x4444

    with backend.force("simulator"):
        for obj, h in [(TorchLike(), 0x1111), (CupyLike(), 0x2222), (CoreLike(), 0x3333),
                       (NumbaLike(), 0x4444)]:
            s = tile.Stream.borrow_raw(obj)
            assert s.handle == h and s.is_borrowed


def test_query_results_map_to_ready_not_ready_or_errors():
    from tilejit.runtime.stream import _ready
    res = driver.drv.CUresult
    assert _ready(res.CUDA_SUCCESS, "cuStreamQuery") is True
    assert _ready(res.CUDA_ERROR_NOT_READY, "cuEventQuery") is False
    with pytest.raises(tile.DriverError, match="cuEventQuery failed: CUDA_ERROR_INVALID_HANDLE"):
        _ready(res.CUDA_ERROR_INVALID_HANDLE, "cuEventQuery")


def test_out_of_memory_retries_once_then_explains(monkeypatch):
    from types import SimpleNamespace
    from tilejit.runtime import memory
    real = driver.drv
    oom = real.CUresult.CUDA_ERROR_OUT_OF_MEMORY
    calls = []
    fake = SimpleNamespace(CUresult=real.CUresult, cuGetErrorString=real.cuGetErrorString,
                           cuMemAllocAsync=lambda n, s: calls.append(n) or (oom, 0),
                           cuMemGetInfo=lambda: (driver.SUCCESS, 3 << 30, 80 << 30))
    monkeypatch.setattr(driver, "drv", fake)
    syncs = []
    stream = SimpleNamespace(_cu=None, device=SimpleNamespace(name="Fake GPU"),
                             synchronize=lambda: syncs.append(1))
    with pytest.raises(tile.DeviceMemoryError) as ei:        # as on the simulator (issue 21.19)
        memory._cuda_alloc(1 << 40, stream)
    assert calls == [1 << 40, 1 << 40] and syncs == [1]     # collected, synchronized, retried
    msg = str(ei.value)
    assert f"1.0 TiB ({1 << 40} bytes) on Fake GPU: 3.0 GiB available" in msg
    assert "CUDA_ERROR_OUT_OF_MEMORY; the GPU has 80.0 GiB in all" in msg
    assert "del t" in msg and ei.value.code == int(oom) and isinstance(ei.value, MemoryError)


def test_every_driver_call_exists_in_cuda_bindings():
    # GPU-only code paths cannot run here; at least every driver entry point they name must exist
    # in the installed cuda-bindings (a wrong name fails only on a GPU machine otherwise).
    import pathlib
    import re
    from cuda.bindings import driver as cu
    root = pathlib.Path(tile.__file__).parent
    pattern = re.compile(r"\b(?:drv|d|_d\.drv|driver\.drv)\.(cu[A-Z]\w*)")
    names = {m for f in root.rglob("*.py") for m in pattern.findall(f.read_text())}
    assert "cuLaunchKernel" in names and "cuGraphInstantiate" in names
    missing = sorted(n for n in names if not hasattr(cu, n))
    assert not missing, f"not in cuda.bindings.driver: {missing}"
