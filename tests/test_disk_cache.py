"""The on-disk cubin cache: keys, hits, corruption, size bound, disabling."""
import os

import pytest

from tilejit.tileir import write_bytecode
from tilejit.toolchain import cache, compile_cubin, tileiras

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
    for off in ("0", "off", "None", ""):
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
    cubin, hit = compile_cubin(bc, "sm_90")
    assert not hit and cubin[:4] == b"\x7fELF"
    again, hit = compile_cubin(bc, "sm_90")
    assert hit and again == cubin
    _, hit = compile_cubin(bc, "sm_80")
    assert not hit
