"""Tracebacks of user errors stop at the user's call: pytest (``__tracebackhide__``) and IPython
(``_render_traceback_``) leave out tilejit's own frames above the message, unless
TILEJIT_FULL_TRACEBACK=1. The notebook side runs in tests/test_notebook.py."""
import os
import subprocess
import sys
import textwrap

import pytest

import tilejit as tile
from tilejit import api
from tilejit.tracebacks import user_traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BAD = textwrap.dedent('''
    import tilejit as tile
    from tilejit import api

    @tile.entry
    def bad(z, x):
        t = tile.load_tile_like(x, z)
        z.store(t + 'oops')

    def test_user_code():
        x = api.zeros((8,)).sync()
        z = api.zeros((8,)).sync()
        bad(z.partition((4,)), x).sync()
''')


def _pytest(tmp_path, **env):
    (tmp_path / "test_bad.py").write_text(BAD)
    e = {k: v for k, v in os.environ.items() if k != "TILEJIT_FULL_TRACEBACK"}
    e.update(TILEJIT_SIMULATE="1", TILEJIT_CACHE_DIR=str(tmp_path / "c"),
             PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p),
             **env)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(tmp_path / "test_bad.py")], capture_output=True, text=True,
                       cwd=tmp_path, env=e, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    return r.stdout


def test_pytest_shows_the_users_frames_and_the_message_only(tmp_path):
    out = _pytest(tmp_path)
    assert "bad(z.partition((4,)), x).sync()" in out                      # the user's call
    assert "in `t + 'oops'`" in out and "z.store(t + 'oops')" in out      # the message
    assert "dispatcher.py" not in out and "deviceop.py" not in out, out


def test_full_traceback_keeps_tilejits_frames(tmp_path):
    out = _pytest(tmp_path, TILEJIT_FULL_TRACEBACK="1")
    assert "dispatcher.py" in out


@pytest.mark.usefixtures("simulator_backend")
def test_user_traceback_drops_tilejit_frames_only():
    @tile.entry
    def bad(z, x):
        z.store(tile.load_tile_like(x, z) + 'oops')

    def user_code():
        bad(api.zeros((8,)).sync().partition((4,)), api.zeros((8,)).sync()).sync()

    with pytest.raises(tile.TypingError) as e:
        user_code()
    full = e.value.__traceback__
    files = []
    tb = user_traceback(full)
    while tb is not None:
        files.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    assert files and all(f == __file__ for f in files)                    # this test and user_code
    assert len(files) == 2
    n = 0
    while full is not None:
        n += 1
        full = full.tb_next
    assert n > len(files)                                                 # the original is intact


SCRIPT = textwrap.dedent('''
    import tilejit as tile
    from tilejit import api

    @tile.entry
    def bad(z, x):
        t = tile.load_tile_like(x, z)
        z.store(t + 'oops')

    x = api.zeros((8,)).sync()
    z = api.zeros((8,)).sync()
    if KIND == "kernel":
        bad(z.partition((4,)), x).sync()
    raise ValueError("not tilejit's")
''')


def _script(tmp_path, kind, **env):
    path = tmp_path / "script.py"
    path.write_text(f"KIND = {kind!r}\n" + SCRIPT)
    e = {k: v for k, v in os.environ.items() if k != "TILEJIT_FULL_TRACEBACK"}
    e.update(TILEJIT_SIMULATE="1", TILEJIT_CACHE_DIR=str(tmp_path / "c"),
             PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p),
             **env)
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=tmp_path,
                       env=e, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    return r.stderr


def test_a_script_shows_the_users_frames_and_the_message_only(tmp_path):
    err = _script(tmp_path, "kernel")
    assert "bad(z.partition((4,)), x).sync()" in err                     # the user's call
    assert "in `t + 'oops'`" in err and "z.store(t + 'oops')" in err     # the message
    assert "dispatcher.py" not in err and "deviceop.py" not in err, err
    assert err.count('  File "') == 1, err                                # the call, nothing else


def test_a_script_keeps_every_frame_on_request_and_of_other_errors(tmp_path):
    assert "dispatcher.py" in _script(tmp_path, "kernel", TILEJIT_FULL_TRACEBACK="1")
    err = _script(tmp_path, "other")
    assert "ValueError: not tilejit's" in err and 'raise ValueError("not tilejit' in err
