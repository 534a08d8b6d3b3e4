"""The warm-start index (toolchain.index): a new process finds a compiled kernel without the front
end (no Numba import), and anything that changes the code (the kernel, a helper, a global it
reads, the tileiras binary) misses. Each scenario runs real processes on a private cache dir."""
import os
import re
import stat
import subprocess
import sys
import textwrap

import pytest

from tilejit.toolchain import tileiras

pytestmark = pytest.mark.skipif(not tileiras.available(), reason="needs tileiras")

SCRIPT = textwrap.dedent('''
    import os, sys, json
    import tilejit as tile
    from tilejit import api

    SCALE = float(os.environ.get("SCALE", "2.0"))

    @tile.function
    def scaled(t):
        return t * SCALE{helper_extra}

    @tile.entry
    def add(z, x, y):
        z.store(scaled(tile.load_tile_like(x, z)) + tile.load_tile_like(y, z))

    x = api.empty((64,)).sync()
    cubin = add.compile(x.partition((16,)), x, x, arch="sm_90")
    st = add.stats
    print(json.dumps({{"numba": "numba" in sys.modules, "index_hits": st.index_hits,
                      "compiles": st.compiles, "cubin": len(cubin)}}))
''')


def run(tmp_path, env=None, helper_extra=""):
    script = tmp_path / "kernel_script.py"
    script.write_text(SCRIPT.format(helper_extra=helper_extra))
    e = dict(os.environ, TILEJIT_CACHE_DIR=str(tmp_path / "cache"), TILEJIT_SIMULATE="1")
    e.update(env or {})
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=e,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    import json
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_second_process_skips_the_front_end(tmp_path):
    cold = run(tmp_path)
    assert cold["compiles"] == 1 and cold["index_hits"] == 0 and cold["numba"]
    warm = run(tmp_path)
    assert warm == {"numba": False, "index_hits": 1, "compiles": 0, "cubin": cold["cubin"]}


def test_changed_global_helper_or_tileiras_misses(tmp_path):
    run(tmp_path)
    assert run(tmp_path)["index_hits"] == 1
    assert run(tmp_path, env={"SCALE": "3.0"})["compiles"] == 1           # a global it reads
    assert run(tmp_path, helper_extra=" + 1.0")["compiles"] == 1           # a helper's code
    wrapper = tmp_path / "tileiras"
    wrapper.write_text(f"#!/bin/sh\nexec {tileiras.find_toolchain().tileiras} \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    env = {"TILEJIT_TILEIRAS": str(wrapper)}
    assert run(tmp_path, env=env)["compiles"] == 1                          # another tileiras
    assert run(tmp_path, env=env)["index_hits"] == 1


def test_corrupted_entries_are_rebuilt(tmp_path):
    run(tmp_path)
    entries = list((tmp_path / "cache" / "index").glob("*/*.tjx"))
    assert len(entries) == 1
    data = bytearray(entries[0].read_bytes())
    data[-10] ^= 0xFF
    entries[0].write_bytes(bytes(data))
    again = run(tmp_path)
    assert again["index_hits"] == 0 and again["compiles"] == 1
    assert run(tmp_path)["index_hits"] == 1


def test_concurrent_writers(tmp_path):
    script = tmp_path / "kernel_script.py"
    script.write_text(SCRIPT.format(helper_extra=""))
    e = dict(os.environ, TILEJIT_CACHE_DIR=str(tmp_path / "cache"), TILEJIT_SIMULATE="1")
    procs = [subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=e) for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    assert not list((tmp_path / "cache" / "index").glob("*/.tmp-*"))
    assert run(tmp_path)["index_hits"] == 1


def test_disabled_cache_writes_nothing(tmp_path):
    out = run(tmp_path, env={"TILEJIT_CACHE_DIR": "0"})
    assert out["compiles"] == 1
    out = run(tmp_path, env={"TILEJIT_CACHE_DIR": "0"})
    assert out["compiles"] == 1 and out["index_hits"] == 0
    assert not (tmp_path / "cache").exists()


def test_cache_command_lists_sizes_and_clears(tmp_path):
    run(tmp_path)
    env = dict(os.environ, TILEJIT_CACHE_DIR=str(tmp_path / "cache"))

    def cli(*a):
        r = subprocess.run([sys.executable, "-m", "tilejit", "cache", *a], capture_output=True,
                           text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout

    info = cli("info")
    assert "warm-start index: 1 entry," in info and "cubins: 1 entry," in info
    listing = cli("list")            # kernels by name, signature and source line, not by hash
    assert ("sm_90  add(z: partition float32 1-d tile (16,) [") in listing
    assert re.sub(r" \[[^\]]*indices\]", "", listing).count(
        "add(z: partition float32 1-d tile (16,), x: tensor float32 1-d, y: tensor float32 1-d)") == 1
    assert f"[{tmp_path / 'kernel_script.py'}:12]" in listing
    assert cli("dir").strip() == str(tmp_path / "cache")
    assert cli("size").strip().endswith("KiB")
    assert "removed 2 files" in cli("clear")
    assert "total: 0 entries" in cli("info")


def test_timings_are_reported_per_stage(tmp_path):
    script = tmp_path / "kernel_script.py"
    script.write_text(SCRIPT.format(helper_extra=""))
    e = dict(os.environ, TILEJIT_CACHE_DIR=str(tmp_path / "cache"), TILEJIT_SIMULATE="1",
             TILEJIT_DUMP="timings")
    cold = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=e,
                          timeout=300)
    line = [ln for ln in cold.stderr.splitlines() if "compiled add for sm_90" in ln]
    assert line and all(s in line[0] for s in ("typing", "lowering", "bytecode", "tileiras"))
    warm = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=e,
                          timeout=300)
    assert "warm-start index hit" in warm.stderr


@pytest.mark.skipif(not __import__("tilejit.native", fromlist=["x"]).enabled(),
                    reason="the C extension provides the DLPack deleters")
def test_dlpack_export_does_not_import_numba():
    code = ("import sys, numpy as np, tilejit as tile\n"
            "from tilejit import api\n"
            "t = api.empty((8,)).sync()\n"
            "a = np.from_dlpack(t)\n"
            "del a\n"
            "print('numba' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, TILEJIT_SIMULATE="1"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_import_tilejit_stays_light():
    # import time is part of every warm start: no compiler front end, no asyncio (~30 ms), no
    # torch, no autotune machinery until used
    heavy = ("numba", "asyncio", "concurrent.futures", "torch", "llvmlite")
    code = ("import sys, tilejit\n"
            f"print([m for m in {heavy!r} if m in sys.modules])\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
