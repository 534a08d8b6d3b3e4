"""``TILEJIT_SIM_DEVICES``: the simulator's devices follow the rules of several GPUs (memory that
knows its device, kernels loaded per device, launches that refuse other devices' arrays, host
arrays copied to the launch's device). The multi-GPU test bodies on two simulated devices are in
tests/test_multidevice_simulator.py."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tilejit as tile
from tilejit import api, envvars, native
from tilejit.runtime import backend
from tilejit.simulator.memory import SimulatedMemory, memory as sim

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def two():
    with backend.force("simulator", sim_devices=2):
        yield tile.Device(0), tile.Device(1)


@tile.entry
def scale(z, x, a):
    z.store(tile.load_tile_like(x, z) * a)


def _run(code, **env):
    env = dict(os.environ, PYTHONPATH=ROOT, TILEJIT_SIMULATE="1", **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.mark.parametrize("raw, n", [(None, 1), ("", 1), ("3", 3), (" 2 ", 2), ("16", 16)])
def test_the_variable_gives_the_count(monkeypatch, raw, n):
    if raw is None:
        monkeypatch.delenv("TILEJIT_SIM_DEVICES", raising=False)
    else:
        monkeypatch.setenv("TILEJIT_SIM_DEVICES", raw)
    assert envvars.sim_devices() == n


@pytest.mark.parametrize("raw", ["0", "-1", "two", "1.5", "2x", "+2"])
def test_bad_values_name_the_variable_and_the_fix(monkeypatch, raw):
    monkeypatch.setenv("TILEJIT_SIM_DEVICES", raw)
    with pytest.raises(envvars.EnvironmentVariableError,
                       match=re.escape(f"TILEJIT_SIM_DEVICES={raw!r}") + ".*whole number >= 1"):
        envvars.sim_devices()


def test_a_new_process_reads_the_variable():
    r = _run("import tilejit as t; print(t.Device.count(), t.Device(2).label)\n"
             "try:\n    t.Device(3)\nexcept t.ContextError as e:\n    print(e)",
             TILEJIT_SIM_DEVICES="3")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "3 sim:2"
    assert "simulated device 3 does not exist" in lines[1] and "TILEJIT_SIM_DEVICES=4" in lines[1]


def test_a_bad_value_stops_the_first_device_use_with_the_reason():
    r = _run("import tilejit as t; t.Device(0)", TILEJIT_SIM_DEVICES="many")
    assert r.returncode != 0
    assert "TILEJIT_SIM_DEVICES='many' is not a whole number" in r.stderr


def test_devices_beyond_the_count_are_refused(two):
    assert tile.Device.count() == 2 and tile.Device(1) is two[1]
    for bad, fix in ((2, "TILEJIT_SIM_DEVICES=3"), (-1, "ordinals start at 0")):
        with pytest.raises(tile.ContextError, match=rf"simulated device {bad} does not exist: "
                                                    rf"the simulator has 2 device.*{fix}"):
            tile.Device(bad)


def test_a_cached_device_is_refused_once_the_count_shrinks(two):
    with backend.force("simulator", sim_devices=1):
        assert tile.Device.count() == 1
        with pytest.raises(tile.ContextError, match="simulated device 1 does not exist"):
            tile.Device(1)
    assert tile.Device(1) is two[1]


def test_force_checks_its_device_count():
    with pytest.raises(ValueError, match="simulator's device count"):
        with backend.force("cuda", sim_devices=2):
            pass
    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match="sim_devices must be an int >= 1"):
            with backend.force("simulator", sim_devices=bad):
                pass


def test_simulated_memory_knows_the_device_of_each_allocation():
    mem = SimulatedMemory()
    a, b = mem.alloc(64), mem.alloc(64, device=1)
    assert (mem.device_of(a), mem.device_of(b + 60)) == (0, 1)
    mem.write(b, np.arange(16, dtype=np.float32))          # the host reaches every device
    on1 = mem.on_device(1)
    assert on1.load(np.array([b + 4]), np.float32)[0] == 1.0
    on1.store(np.array([b]), 7.0, np.float32)
    assert mem.read(b, 4).view(np.float32)[0] == 7.0
    with pytest.raises(tile.DeviceError, match=rf"a kernel on simulated device 0 accessed "
                                               rf"0x{b + 8:x}, memory of simulated device 1"):
        mem.on_device(0).load(np.array([a, b + 8]), np.float32)
    with pytest.raises(tile.DeviceError, match="kernel on simulated device 1 accessed"):
        on1.store(np.array([b, a]), 1.0, np.float32)
    assert mem.read(b, 4).view(np.float32)[0] == 7.0       # a faulting store writes nothing
    masked = on1.load(np.array([b, a]), np.float32, mask=np.array([True, False]))
    assert masked.tolist() == [7.0, 0.0]                   # masked-off lanes are not accessed
    mem.free(b)
    with pytest.raises(tile.DeviceError, match="use after free"):
        mem.device_of(b)
    with pytest.raises(tile.DeviceError, match="kernel on simulated device 1 accessed"):
        on1.load(np.array([a]), np.float32)                # only device 0 memory is left


def test_tensors_live_in_their_devices_memory(two):
    t = api.zeros((100,)).sync_on(two[1].new_stream())
    assert t.device is two[1] and sim.device_of(t.device_pointer) == 1
    assert sim.device_of(api.zeros((100,)).sync_on(two[0].new_stream()).device_pointer) == 0
    assert sim.device_of(t.to(0).sync().device_pointer) == 0


def test_a_kernel_is_compiled_once_and_loaded_per_device(two):
    @tile.entry
    def add1(z, x):
        z.store(tile.load_tile_like(x, z) + 1)

    outs = []
    for dev in two:
        s = dev.new_stream()
        z = api.zeros((256,)).sync_on(s)
        add1(z.partition((64,)), api.full((256,), float(dev.ordinal)).sync_on(s)).sync_on(s)
        outs.append(z.to_numpy())
    assert [o[0] for o in outs] == [1.0, 2.0]
    assert add1.stats.compiles == 1
    exes = {dev: exe for (_, dev, _), exe in add1._executables.items()}
    assert set(exes) == set(two)
    assert [exes[d].memory.device for d in two] == [0, 1]


def test_a_kernel_sees_only_its_devices_memory(two):
    """Behind the launch check, the loaded kernel itself faults on another device's memory, as a
    GPU kernel does without peer access."""
    exes = {}
    for dev in two:
        s = dev.new_stream()
        z = api.zeros((64,)).sync_on(s)
        scale(z.partition((64,)), api.ones((64,)).sync_on(s), 2.0).sync_on(s)
        exes[dev] = next(e for (_, d, _), e in scale._executables.items() if d is dev)
    s1 = two[1].new_stream()
    z1, x1 = api.zeros((64,)).sync_on(s1), api.ones((64,)).sync_on(s1)
    params = (z1.device_pointer, 64, 1, x1.device_pointer, 64, 1, 3.0)
    exes[two[1]].launch((1, 1, 1), params, s1)
    assert (z1.to_numpy() == 3.0).all()
    with pytest.raises(tile.DeviceError, match="kernel on simulated device 0 accessed"):
        exes[two[0]].launch((1, 1, 1), params, two[0].new_stream())
    assert (z1.to_numpy() == 3.0).all()


def test_the_c_launcher_runs_device_1_and_hands_mixed_devices_to_python(two):
    if not native.enabled():
        pytest.skip("the C launch path is off (TILEJIT_NATIVE=0 or no extension)")
    s1 = two[1].new_stream()
    z = api.zeros((128,)).sync_on(s1)
    x = api.full((128,), 2.0).sync_on(s1)
    scale(z.partition((64,)), x, 1.0).sync_on(s1)      # first call: compiled through Python
    before = scale._native.total
    scale(z.partition((64,)), x, 3.0).sync_on(s1)
    assert scale._native.total == before + 1 and (z.to_numpy() == 6.0).all()
    s0 = two[0].new_stream()
    with pytest.raises(tile.TensorError, match="argument 'x' is on sim:1 but the launch runs on "
                                               "sim:0"):
        scale(api.zeros((128,)).sync_on(s0).partition((64,)), x, 1.0).sync_on(s0)
    assert scale._native.total == before + 1


class HostArray:
    """A host array of another library (DLPack on the CPU, not a NumPy array)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**{k: v for k, v in kw.items() if k != "stream"})

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_host_arrays_are_copied_to_the_launchs_device(two):
    s1 = two[1].new_stream()
    z = api.zeros((256,)).sync_on(s1)
    scale(z.partition((64,)), HostArray(np.full(256, 4.0, np.float32)), 0.5).sync_on(s1)
    assert (z.to_numpy() == 2.0).all()
    assert tile.from_dlpack(HostArray(np.ones(4, np.float32)), device=1).device is two[1]
    assert tile.from_dlpack(np.ones(4, np.float32), stream=s1).device is two[1]
    assert tile.from_dlpack(np.ones(4, np.float32)).device is two[0]
