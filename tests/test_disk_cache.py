"""The on-disk cubin cache: keys, hits, corruption, size bound, disabling."""
import os

import pytest

from tilejit.tileir import write_bytecode
from tilejit.toolchain import cache, compile_cubin, layout, tileiras

from tileir_cases import vector_add_module


def test_key_depends_on_every_input():
    k = cache.make_key(b"bc", "sm_90", "-O3", "13.4.92")
    assert k != cache.make_key(b"bc2", "sm_90", "-O3", "13.4.92")
    assert k != cache.make_key(b"bc", "sm_100", "-O3", "13.4.92")
    assert k != cache.make_key(b"bc", "sm_90", "-O2", "13.4.92")
    assert k != cache.make_key(b"bc", "sm_90", "-O3", "13.4.93")
    assert k == cache.make_key(b"bc", "sm_90", "-O3", "13.4.92")


def test_put_get_and_corruption(tmp_path):
    d = cache.DiskCache(str(tmp_path))
    key = "ab" + "0" * 62
    assert d.get(key) is None
    d.put(key, b"\x7fELF-cubin")
    assert d.get(key) == b"\x7fELF-cubin"
    path = tmp_path / "ab" / f"{key}.cubin"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF                                   # flip a payload byte
    path.write_bytes(bytes(data))
    assert d.get(key) is None and not path.exists()   # ignored and removed
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"garbage")                       # truncated header
    assert d.get(key) is None


def test_size_bound_evicts_least_recently_used(tmp_path):
    d = cache.DiskCache(str(tmp_path), limit=2500)
    keys = [f"{i:02d}" + "f" * 62 for i in range(4)]
    for i, k in enumerate(keys):
        d.put(k, bytes([i]) * 1000)
        os.utime(d._path(k), (1000 + i, 1000 + i))
    assert d.size() <= 2500
    assert d.get(keys[-1]) is not None and d.get(keys[0]) is None


def test_cache_dir_env(monkeypatch, tmp_path):
    for off in ("0", "off", "None", "false", ""):
        monkeypatch.setenv("TILEJIT_CACHE_DIR", off)
        assert cache.cache_dir() is None and cache.current() is None
    monkeypatch.setenv("TILEJIT_CACHE_DIR", str(tmp_path))
    assert cache.cache_dir() == str(tmp_path)
    monkeypatch.delenv("TILEJIT_CACHE_DIR")
    assert cache.cache_dir() == cache.default_dir()


@pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")
def test_compile_cubin_hits_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEJIT_CACHE_DIR", str(tmp_path))
    bc = write_bytecode(vector_add_module(256))
    cubin, hit, key = compile_cubin(bc, "sm_90")
    assert not hit and cubin[:4] == b"\x7fELF" and (tmp_path / key[:2] / f"{key}.cubin").exists()
    again, hit, _ = compile_cubin(bc, "sm_90")
    assert hit and again == cubin
    assert not compile_cubin(bc, "sm_80").hit


# --- what `clear` may delete (issue 21 item 14) ---------------------------------------------------------
K1, K2 = "ab" + "1" * 62, "cd" + "2" * 62


def _user_files(root):
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "data.csv").write_text("a,b\n1,2\n")
    (root / "src" / "model.py").write_text("import torch\n")
    (root / "ab").mkdir(exist_ok=True)
    (root / "ab" / "notes.txt").write_text("mine")       # inside a folder named like tilejit's


def _tilejit_files(root):
    d = cache.DiskCache(str(root))
    d.put(K1, b"\x7fELF one")
    d.put(K2, b"\x7fELF two")
    from tilejit.toolchain.index import Index
    Index(str(root)).put("ef" + "3" * 62, "k", ["i32"], K1, kernel="k")
    auto = root / "autotune"
    auto.mkdir()
    (auto / "matmul-0123456789abcdef0123.json").write_text("{}")


def test_the_marker_is_written_when_tilejit_creates_the_directory(tmp_path):
    root = tmp_path / "new" / "cache"
    assert cache.problem(str(root)) == ""
    assert layout.has_marker(root) and (root / "CACHEDIR.TAG").read_text().startswith(
        "Signature: 8a477f597d28d172789f06886806bc55")


def test_a_directory_with_other_files_gets_no_marker(tmp_path):
    _user_files(tmp_path)
    assert cache.problem(str(tmp_path)) == ""       # usable (as the user asked) ...
    assert not layout.has_marker(tmp_path)            # ... but not claimed as a cache


def test_clear_deletes_only_what_tilejit_wrote(tmp_path):
    root = tmp_path / "cache"
    cache.problem(str(root))                          # created by tilejit: marked
    _tilejit_files(root)
    _user_files(root)                                 # files that ended up there later
    n, size = cache.clear(str(root))
    assert n == 4 and size > 0
    assert (root / "data.csv").read_text() == "a,b\n1,2\n"
    assert (root / "src" / "model.py").read_text() == "import torch\n"
    assert (root / "ab" / "notes.txt").read_text() == "mine"
    assert layout.scan(root) == [] and layout.has_marker(root)
    assert not (root / "index").exists() and not (root / "autotune").exists()


def test_clear_refuses_a_directory_set_by_mistake(tmp_path, monkeypatch):
    _user_files(tmp_path)
    monkeypatch.setenv("TILEJIT_CACHE_DIR", str(tmp_path))
    cache.problem(str(tmp_path))
    _tilejit_files(tmp_path)                          # kernels compiled there by mistake
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(layout.NotACacheError) as ei:
        cache.clear(str(tmp_path))
    msg = str(ei.value)
    assert str(tmp_path) in msg and "TILEJIT_CACHE_DIR" in msg and "data.csv" in msg
    assert "nothing was deleted" in msg
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_cache_of_an_earlier_tilejit_is_recognized_and_adopted(tmp_path):
    _tilejit_files(tmp_path)                          # the old layout, no marker
    assert not layout.has_marker(tmp_path) and layout.is_cache(tmp_path)
    cache.problem(str(tmp_path))
    assert layout.has_marker(tmp_path)
    assert cache.clear(str(tmp_path))[0] == 4


def test_clear_of_an_unmarked_old_cache_works_without_adoption(tmp_path):
    _tilejit_files(tmp_path)
    assert cache.clear(str(tmp_path))[0] == 4 and layout.scan(tmp_path) == []


# --- one size bound for everything stored (issue 21 item 15) -------------------------------------------
def test_the_size_bound_covers_index_and_autotune_and_drops_orphaned_index_entries(tmp_path):
    from tilejit.toolchain.index import Index
    idx = Index(str(tmp_path))
    d = cache.DiskCache(str(tmp_path), limit=10_000)
    auto = tmp_path / "autotune" / "k-0123456789abcdef0123.json"
    auto.parent.mkdir()
    auto.write_bytes(b"x" * 3000)
    os.utime(auto, (1000, 1000))                      # the oldest thing stored
    for i in range(4):
        key = f"{i:02d}" + "c" * 62
        d.put(key, b"\x7fELF" + bytes([i]) * 2000)
        idx.put(f"{i:02d}" + "e" * 62, f"k{i}", ["i32"], key, kernel=f"k{i}")
        t = 2000 + i
        os.utime(d._path(key), (t, t))
        os.utime(idx._path(f"{i:02d}" + "e" * 62), (t + 0.5, t + 0.5))
    d.evict()
    stored = [e for e in layout.scan(tmp_path) if e.kind in layout.STORED]
    assert sum(e.size for e in stored) <= 10_000
    assert not auto.exists()                          # least recently used went first
    kinds = sorted(e.kind for e in stored)
    assert "index" in kinds and "cubin" in kinds
    # every index entry left points at a cubin that is still there
    for _, meta in idx.entries():
        assert d._path(meta["cubin"]).exists()
    assert len(idx.entries()) == kinds.count("cubin")


def test_the_size_bound_takes_units(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILEJIT_CACHE_SIZE", "1MiB")
    assert cache.current().limit == 1 << 20
    monkeypatch.setenv("TILEJIT_CACHE_SIZE", "-1")
    with pytest.raises(ValueError, match="TILEJIT_CACHE_SIZE='-1' is negative"):
        cache.current()


def test_an_index_hit_whose_cubin_was_evicted_is_a_miss(tmp_path):
    from tilejit.toolchain.index import Index
    idx = Index(str(tmp_path))
    cache.DiskCache(str(tmp_path)).put(K1, b"\x7fELF one")
    idx.put(K2, "k", ["i32"], K1)
    assert idx.get(K2) == ("k", ("i32",), b"\x7fELF one")
    (tmp_path / "ab" / f"{K1}.cubin").unlink()
    assert idx.get(K2) is None and not idx._path(K2).exists()


# --- one compile for many processes (issue 24 item 4) ------------------------------------------------
HOLD = """
import sys, time
from tilejit.toolchain import cache
d = cache.DiskCache(sys.argv[1])
with d.compiling(sys.argv[2], wait=5) as held:
    print("held" if held else "not held", flush=True)
    time.sleep(300)
"""


def test_the_compile_lock_is_exclusive_times_out_and_dies_with_its_process(tmp_path):
    import subprocess
    import sys
    import time
    d = cache.DiskCache(str(tmp_path))
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path), K1],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        with d.compiling(K1, wait=0.3) as held:
            assert not held                           # gave up waiting: the caller compiles
        assert 0.3 <= time.monotonic() - t0 < 5
        with d.compiling(K2, wait=0.3) as held:      # other keys are not blocked
            assert held
    finally:
        holder.kill()                                 # killed while holding the lock
        holder.wait()
    with d.compiling(K1, wait=5) as held:             # a lock dies with its process
        assert held
    assert not (tmp_path / "ab" / f"{K1}.lock").exists()   # removed once released


CONCURRENT = """
import hashlib, json, os, pathlib, sys, time
import tilejit as tile
from tilejit import api
from tilejit.toolchain import tileiras

@tile.entry
def add(z, x, y):
    z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))

x = api.empty((256,)).sync()
add.inspect_tileir(x.partition((64,)), x, x)         # Numba imported, tileiras probed: only
tileiras.version_text()                               # the compile itself is left
barrier = pathlib.Path(os.environ["BARRIER"])
(barrier / str(os.getpid())).touch()
deadline = time.time() + 120
while len(list(barrier.iterdir())) < int(os.environ["N"]) and time.time() < deadline:
    time.sleep(0.005)
cubin = add.compile(x.partition((64,)), x, x, arch="sm_90")
print(json.dumps({"sha": hashlib.sha256(cubin).hexdigest(), "disk_hits": add.stats.disk_hits}))
"""


@pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")
def test_processes_compiling_the_same_kernel_at_once_run_tileiras_once(tmp_path):
    import json
    import subprocess
    import sys
    real = tileiras.find_toolchain()
    log = tmp_path / "runs.log"
    wrapper = tmp_path / "bin" / "tileiras"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexport CUDA_HOME={real.root}\n'
                       f'case "$1" in --*) exec {real.tileiras} "$@";; esac\n'
                       f'echo "$$" >> {log}\nsleep 2\nexec {real.tileiras} "$@"\n')
    wrapper.chmod(0o755)
    n = 4
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = dict(os.environ, TILEJIT_TILEIRAS=str(wrapper), TILEJIT_CACHE_DIR=str(tmp_path / "c"),
               TILEJIT_SIMULATE="1", BARRIER=str(barrier), N=str(n))
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(n)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert len(log.read_text().split()) == 1          # one tileiras run for four processes
    assert len({r["sha"] for r in results}) == 1
    assert sorted(r["disk_hits"] for r in results) == [0] + [1] * (n - 1)
