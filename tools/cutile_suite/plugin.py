"""The pytest plugin ``run.py`` loads (``-p cutile_suite.plugin``) into cuTile's test session.

At load, before cuTile's ``conftest.py``: ``import cuda.tile`` (``site/cuda/tile``: the mapping,
shim.py), and placeholders stay lenient (``shim.RUNNING = False``) until the tests run.
``pytest.raises`` is wrapped: a placeholder exception (a cuTile exception tilejit lacks) raises
its kind at once, and another exception leaving the block gets a note naming the expected one.
Each test's id is appended to ``CUTILE_SUITE_PROGRESS`` as it starts.
"""
import os

import pytest

import cuda.tile  # noqa: F401  (the mapping)
from cutile_suite import shim

shim.RUNNING = False
_PROGRESS = os.environ.get("CUTILE_SUITE_PROGRESS")


def pytest_runtest_logstart(nodeid, location):
    if _PROGRESS:               # the test a dying process was running: run.py deselects it
        with open(_PROGRESS, "a") as f:
            f.write(nodeid + "\n")


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    shim.RUNNING = True          # from now on, calling a placeholder raises


class _Raises:
    """``pytest.raises(X)`` as a context manager that notes, on another exception leaving it,
    which one the test expected (``[cutile_suite] expected X``: bucket ``different error``)."""

    def __init__(self, cm, expected):
        self.cm, self.expected = cm, expected

    def __enter__(self):
        return self.cm.__enter__()

    def __exit__(self, typ, value, tb):
        __tracebackhide__ = True
        handled = self.cm.__exit__(typ, value, tb)
        if not handled and isinstance(value, Exception):
            names = [getattr(e, "__name__", repr(e)) for e in
                     (self.expected if isinstance(self.expected, tuple) else (self.expected,))]
            value.add_note(f"[cutile_suite] expected {'|'.join(names)}")
        return handled


_pytest_raises = pytest.raises


def _raises(expected, *args, **kwargs):
    for e in expected if isinstance(expected, tuple) else (expected,):
        if isinstance(e, shim.Placeholder):     # pytest.raises(TileValueError): tilejit lacks it
            e._fail()
    if args:                                    # pytest.raises(X, func, *args): as it is
        return _pytest_raises(expected, *args, **kwargs)
    return _Raises(_pytest_raises(expected, **kwargs), expected)


pytest.raises = _raises
