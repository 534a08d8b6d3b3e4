"""A compile stopped while tileiras runs (Ctrl-C, SIGTERM) leaves no tileiras process and no
temporary folder behind, and the cache's pruning removes the folders it empties (issue 45)."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from tilejit.toolchain import cache, layout, tileiras

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _slow_tileiras(fake_tileiras, tmp_path):
    """A tileiras that starts a helper process (as tileiras starts ptxas), writes both pids and
    runs for five minutes."""
    pids = tmp_path / "pids"
    fake_tileiras(f"sleep 300 &\necho $$ $! > {pids}\nsleep 300\n")
    return pids


def _read_pids(pids, seconds: float = 30.0):
    deadline = time.time() + seconds
    while time.time() < deadline:
        text = pids.read_text().split() if pids.exists() else []
        if len(text) == 2:
            return [int(p) for p in text]
        time.sleep(0.02)
    raise AssertionError("the fake tileiras never started")


def test_ctrl_c_during_tileiras_leaves_no_process_and_no_folder(fake_tileiras, tmp_path,
                                                                 monkeypatch):
    pids = _slow_tileiras(fake_tileiras, tmp_path)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tileiras.tempfile, "tempdir", str(temp))

    def interrupt():                    # a real SIGINT, as a terminal's Ctrl-C sends Python
        _read_pids(pids)
        os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=interrupt)
    t.start()
    start = time.time()
    with pytest.raises(KeyboardInterrupt):
        tileiras.compile_bytecode(b"bytecode", "sm_90", name="k", keep_failed=False)
    t.join()
    assert time.time() - start < 60
    for pid in _read_pids(pids):
        assert _gone(pid), f"process {pid} outlived the interrupted compile"
    assert list(temp.iterdir()) == [], "the compile's temporary folder was left behind"


SIGTERM_SCRIPT = textwrap.dedent('''
    import sys, tempfile
    tempfile.tempdir = sys.argv[1]
    from tilejit.toolchain import tileiras
    tileiras.compile_bytecode(b"bytecode", "sm_90", name="k", keep_failed=False)
''')


def test_sigterm_during_tileiras_leaves_no_process_and_no_folder(fake_tileiras, tmp_path):
    pids = _slow_tileiras(fake_tileiras, tmp_path)
    temp = tmp_path / "tmp"
    temp.mkdir()
    script = tmp_path / "compile.py"
    script.write_text(SIGTERM_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    p = subprocess.Popen([sys.executable, str(script), str(temp)], env=env)
    try:
        tool, helper = _read_pids(pids)
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=60) == -signal.SIGTERM          # it still dies of SIGTERM
    finally:
        p.kill()
    for pid in (tool, helper):
        assert _gone(pid), f"process {pid} outlived the terminated compile"
    assert list(temp.iterdir()) == [], "the compile's temporary folder was left behind"


def test_pruning_removes_the_folders_it_empties(tmp_path):
    d = cache.DiskCache(str(tmp_path), limit=1500)
    keys = [f"{i:02d}" + "a" * 62 for i in range(3)]
    for i, k in enumerate(keys):
        d.put(k, bytes([i]) * 1000)
        os.utime(d._path(k), (1000 + i, 1000 + i))
    d.evict()
    assert not (tmp_path / "00").exists() and not (tmp_path / "01").exists()
    assert d.get(keys[2]) is not None
    foreign = tmp_path / "mine"
    foreign.mkdir()                                   # not tilejit's: left alone
    cache.trim(tmp_path, 0)
    assert not (tmp_path / "02").exists() and foreign.is_dir()
    assert [e for e in layout.scan(tmp_path) if e.kind == "cubin"] == []
    d.put(keys[0], b"again")                          # the folder is made again
    assert d.get(keys[0]) == b"again"


def test_a_writer_makes_its_folder_again_after_a_prune_removed_it(tmp_path, monkeypatch):
    path = tmp_path / "ab" / ("ab" + "0" * 62 + ".cubin")
    real = cache.tempfile.mkstemp
    calls = []

    def racing_mkstemp(*a, **kw):       # a trim removes the emptied folder right after mkdir
        calls.append(1)
        if len(calls) == 1:
            os.rmdir(path.parent)
        return real(*a, **kw)

    monkeypatch.setattr(cache.tempfile, "mkstemp", racing_mkstemp)
    assert cache.write_record(path, cache.MAGIC, b"payload")
    assert cache.read_record(path, cache.MAGIC) == b"payload" and len(calls) == 2
