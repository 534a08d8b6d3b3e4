"""tools/cutile_suite (issue 44 item 4): the classifier of cuTile Python's test failures on
tilejit, on synthetic junit entries (no cuTile checkout needed)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))

from cutile_suite import report  # noqa: E402
from cutile_suite.classify import Case, classify, read_junit, write_junit  # noqa: E402


def failed(text, message="", outcome="failed"):
    return Case("test_x.py", "test_y[f16]", outcome, message, text)


TILEJIT_FRAME = ("/work/main/tilejit/lowering/lower.py:623: in element_pointers\n"
                 "    ptrs = f(o.value)\n")
CASES = [
    # (report text, bucket, key)
    ("test_x.py:10: in test_y\n    assert_equal(x, ref)\nutil.py:84: in assert_close\n"
     "    torch.testing.assert_close(a, b)\nE   AssertionError: Tensor-likes are not equal!\n"
     "E   \nE   Mismatched elements: 3 / 256 (1.2%)",
     "wrong value", "AssertionError: Tensor-likes are not equal!"),
    ("test_x.py:10: in test_y\n    ct.launch(s, (1,), k, ())\n" + TILEJIT_FRAME +
     "E   AttributeError: 'NoneType' object has no attribute 'value'",
     "internal error", "AttributeError: 'NoneType' object has no attribute 'value'"),
    ("E   tilejit.errors.TypingError: a.py:3: internal error while typing tile.load: KeyError: 1",
     "internal error", "TypingError: internal error while typing tile.load: KeyError: 1"),
    ("E   tilejit.tileir.verify.VerifyError: invalid Tile IR in function 'k': op 'addi': types",
     "internal error", "VerifyError: invalid Tile IR in function 'k': op 'addi': types"),
    ("test_x.py:10: in test_y\n    ct.launch(s, (1,), k, ())\n"
     "E   tilejit.errors.TypingError: /t/test_x.py:5: in `tx.item()`: Tile has no attribute 'item'",
     "refused valid program", "TypingError: Tile has no attribute 'item'"),
    ("test_x.py:10: in test_y\n    ct.launch(s, (1,), k, ())\n"
     "/work/main/tilejit/cutile/_kernel.py:320: in _stream_of\n    raise TypeError(msg)\n"
     "E   TypeError: ct.launch() needs a stream",
     "refused valid program", "TypeError: ct.launch() needs a stream"),
    ("test_x.py:10: in test_y\n    with pytest.raises(TileTypeError):\n"
     "E   Failed: DID NOT RAISE <class 'tilejit.errors.TypingError'>",
     "accepted invalid program", "Failed: DID NOT RAISE <class 'tilejit.errors.TypingError'>"),
    ("E   tilejit.errors.TypingError: bad shape\n\nDuring handling of the above exception, another "
     "exception occurred:\nE   AssertionError: Regex pattern did not match.",
     "different error", "TypingError: bad shape"),
    ("E   tilejit.errors.UnsupportedError: no *args\nE   [cutile_suite] expected TileTypeError",
     "different error", "expected TileTypeError, got UnsupportedError: no *args"),
    ("E   cutile_suite.shim.MissingAPI: cuda.tile.tune.exhaustive_search: not in tilejit.cutile",
     "missing API", "tune.exhaustive_search"),
    ("E   cutile_suite.shim.MissingAPI: cuda.tile.float4_e2m1fn._numba_type_.is_precise: not in "
     "tilejit.cutile", "missing API", "float4_e2m1fn"),
    ("E   tilejit.errors.UnsupportedError: t.py:3: cannot call the kernel '<placeholder "
     "cuda.tile.divmod>' from a tile kernel", "missing API", "divmod"),
    ("test_cast.py:119: in <module>\n    ct.RoundingMode.RA,\n/usr/lib/enum.py:784: in "
     "__getattr__\n    raise AttributeError(name) from None\nE   AttributeError: RA",
     "missing API", "RoundingMode.RA"),
    ("E   ImportError: cannot import name '_tune' from 'tilejit.cutile.tune' (/x/tune.py)",
     "cuTile internals", "ImportError: cannot import name '_tune' from 'tilejit.cutile.tune' "
     "(/x/tune.py)"),
    ("E   cutile_suite.shim.CuTileInternal: cuda.tile._ir.ops.Loop: cuTile-internal",
     "cuTile internals", "CuTileInternal: cuda.tile._ir.ops.Loop: cuTile-internal"),
    ("test_x.py:10: in test_y\n    b = get_bytecode(k, args)\nutil.py:44: in get_bytecode\n"
     "    if not isinstance(kernel, ct.kernel):\nE   TypeError: isinstance() arg 2 must be a type",
     "cuTile internals", "TypeError: isinstance() arg 2 must be a type"),
    ("test_x.py:9: in test_y\n    assert mock.call_count == 1\nE   AssertionError: assert 0 == 1\n"
     "E    +  where 0 = <MagicMock name='compile_tile' id='1'>.call_count",
     "cuTile internals", "AssertionError: assert 0 == 1"),
    ("test_x.py:164: in test_y\n    assert sig.parameters[0].shape_constant == (None, 1)\n"
     "E   assert (None, None) == (None, 1)", "cuTile internals",
     "assert (None, None) == (None, 1)"),
    ("test_x.py:33: in test_y\n    ct.launch(s, (1,), k, (x, y))\n/w/tilejit/simulator/interp.py:"
     "111: in run\n    raise e.cls(e.message)\nE   tilejit.simulator.errors.TileIndexError: load: "
     "tile index (0,) is out of bounds: the array of shape (0,) has (0,) tiles of shape (8,)",
     "undefined behaviour refused", "TileIndexError: load: tile index (0,) is out of bounds: "
     "the array of shape (0,) has (0,) tiles of shape (8,)"),
    ("test_x.py:33: in test_y\n    ct.launch(s, (1,), k, (x, y))\n/w/tilejit/simulator/interp.py:"
     "111: in run\n    raise e.cls(e.message)\nE   tilejit.simulator.errors.TileIndexError: "
     "sub_x.load: tile index (0,) is out of bounds: array 'sub_x' of shape (0,) has (0,) tiles",
     "undefined behaviour refused", "TileIndexError: sub_x.load: tile index (0,) is out of "
     "bounds: array 'sub_x' of shape (0,) has (0,) tiles"),
    ("test_x.py:33: in test_y\n    ct.launch(s, (1,), k, (x, y))\n/w/tilejit/simulator/interp.py:"
     "111: in run\n    raise e.cls(e.message)\nE   tilejit.simulator.errors.TileIndexError: load: "
     "tile index (2,) is out of bounds: the array of shape (10,) has (2,) tiles of shape (8,)",
     "refused valid program", "TileIndexError: load: tile index (2,) is out of bounds: the "
     "array of shape (10,) has (2,) tiles of shape (8,)"),
    ("E   ModuleNotFoundError: No module named 'cuda.tile.compilation._signature'; "
     "'cuda.tile.compilation' is not a package", "cuTile internals",
     "ModuleNotFoundError: No module named 'cuda.tile.compilation._signature'; "
     "'cuda.tile.compilation' is not a package"),
    ("E   Failed: Timeout >120.0s", "simulator limit", "Failed: Timeout >120.0s"),
    ("pytest process died (exit -9) in this test", "simulator limit",
     "pytest process died (exit -9) in this test"),
    ("E   AssertionError: Torch not compiled with CUDA enabled",
     "simulator limit", "AssertionError: Torch not compiled with CUDA enabled"),
    ("test_x.py:10: in test_y\n    torch.zeros(4, device='cuda')\n"
     "/work/main/tools/cutile_suite/torch_cpu.py:40: in __torch_function__\n    return func(*a)\n"
     "E   TypeError: zeros() got an unexpected keyword argument 'copy'",
     "harness", "TypeError: zeros() got an unexpected keyword argument 'copy'"),
    ("test_x.py:10: in test_y\n    x = make()\nE   RuntimeError: something odd",
     "other", "RuntimeError: something odd"),
    ("E   AttributeError: module 'tilejit.cutile' has no attribute 'abracadabra'",   # not cuTile's
     "other", "AttributeError: module 'tilejit.cutile' has no attribute 'abracadabra'"),
]


@pytest.mark.parametrize("text,bucket,key", CASES, ids=[f"{b}-{i}" for i, (_, b, _) in
                                                         enumerate(CASES)])
def test_classify_buckets(text, bucket, key):
    assert classify(failed(text)) == (bucket, key)


def test_passed_and_skipped_are_not_classified_and_errors_are():
    assert classify(Case("f.py", "t", "passed")) is None
    assert classify(Case("f.py", "t", "skipped", "needs Blackwell")) is None
    assert classify(failed("E   Failed: DID NOT RAISE <class 'X'>", outcome="error"))[0] == \
        "accepted invalid program"


def test_cutile_internals_come_before_missing_api():
    text = ("E   cutile_suite.shim.CuTileInternal: cuda.tile._cext.cconv_v: cuTile-internal\n"
            "E   AttributeError: module 'tilejit.cutile' has no attribute 'insert'")
    assert classify(failed(text))[0] == "cuTile internals"


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="test_a" name="test_ok" file="test_a.py" time="0.1"/>
<testcase classname="test_a" name="test_skip" file="test_a.py"><skipped message="no GPU"/>
</testcase>
<testcase classname="test_a" name="test_bad[f16]" file="test_a.py">
<failure message="AssertionError">
test_a.py:3: in test_bad
    assert_equal(x, y)
E   AssertionError: Tensor-likes are not equal!</failure></testcase>
<testcase classname="test_b" name="test_b" file="test_b.py"><error message="collection failure">
E   cutile_suite.shim.CuTileInternal: cuda.tile._ir.ops.Loop: cuTile-internal</error></testcase>
</testsuite></testsuites>"""


def test_write_junit_round_trips(tmp_path):
    died = [Case("test/test_a.py", "test_big", "error", "pytest process died (exit -9)", "out")]
    write_junit(died, str(tmp_path / "d.xml"))
    [case] = read_junit(str(tmp_path / "d.xml"))
    assert (case.file, case.name, case.outcome, case.message, case.text) == \
        ("test_a.py", "test_big", "error", "pytest process died (exit -9)", "out")


def test_read_junit_and_report(tmp_path):
    path = tmp_path / "junit.xml"
    path.write_text(JUNIT)
    cases = read_junit(str(path))
    assert [(c.file, c.name, c.outcome) for c in cases] == [
        ("test_a.py", "test_ok", "passed"), ("test_a.py", "test_skip", "skipped"),
        ("test_a.py", "test_bad[f16]", "failed"), ("test_b.py", "test_b", "error")]
    t = report.totals(cases)
    assert (t["collected"], t["concerning"], t["passed"], t["skipped"], t["failed"]) == \
        (4, 3, 1, 1, 2)
    assert t["buckets"]["wrong value"] == 1 and t["buckets"]["cuTile internals"] == 1
    md = report.markdown(cases)
    assert "* `test_a.py::test_bad[f16]`: AssertionError: Tensor-likes are not equal!" in md
    assert "| test_a.py | 3 | 1 | 1 | 1 | 0 |" in md
    report.write(cases, str(tmp_path / "out"))
    assert (tmp_path / "out" / "report.md").exists()
    assert (tmp_path / "out" / "failures.json").exists()


def test_rates_report_undefined_behaviour_apart():
    t = {"passed": 90, "concerning": 100, "buckets": {"undefined behaviour refused": 5}}
    assert report.rates(t) == ("90 of 100 concerning tilejit pass (90.0%); 90 of 95 (94.7%) "
                               "leaving out the 5 undefined-behaviour tests tilejit refuses")
    t["buckets"]["undefined behaviour refused"] = 0
    assert report.rates(t) == "90 of 100 concerning tilejit pass (90.0%)"
