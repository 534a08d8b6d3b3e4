"""Cold start: ``import tilejit`` loads only errors, dtypes and the kernel language (the rest on
first use, PEP 562), and the first kernel typed in a process skips work that only costs time."""
import json
import subprocess
import sys
import textwrap

import pytest

import tilejit as tile
from tilejit.typing.reject import source_lines


def _fresh(code: str) -> dict:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=300, env=None)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


LAZY_MODULES = ("numpy", "ml_dtypes", "numba", "cuda.bindings", "cuda.bindings.driver", "cffi",
                "tilejit.runtime", "tilejit.deviceops", "tilejit.dispatcher", "tilejit.compiler",
                "tilejit.autotune", "tilejit.toolchain", "tilejit.simulator", "tilejit.typing",
                "tilejit.api")


def test_import_loads_no_numpy_numba_bindings_or_compiler():
    out = _fresh(f"""
        import json, sys
        import tilejit
        print(json.dumps([m for m in {LAZY_MODULES!r} if m in sys.modules]))
    """)
    assert out == []


DEFINITION_FREE = ("numpy", "cuda.bindings", "numba", "tilejit.runtime", "tilejit.kernel_launch",
                   "tilejit.deviceops", "tilejit.native")


def test_defining_a_kernel_loads_no_numpy_numba_bindings_or_runtime():
    # the launch side loads at the first launch (dispatcher._runtime): cuTile Python's
    # definitions load none of these either
    out = _fresh(f"""
        import json, sys
        import tilejit as tile

        @tile.entry
        def k(z, x):
            z.store(tile.load_tile_like(x, z))

        @tile.entry(occupancy=2)
        def k2(z, x, n: int, BK: tile.Constant[int] = 4):
            z.store(tile.load_tile_like(x, z))
        try:
            tile.entry(lambda *a: None)
        except TypeError as e:
            err = str(e)
        info = [type(k).__name__, k.__name__, k.param_names, k2.constant_names, repr(k2),
                k.signatures, k2.options.occupancy, err]
        print(json.dumps({{"loaded": [m for m in {DEFINITION_FREE!r} if m in sys.modules],
                          "info": info}}))
    """)
    assert out["loaded"] == []
    kind, name, params, consts, rep, sigs, occ, err = out["info"]
    assert (kind, name, params, consts, sigs, occ) == ("Kernel", "k", ["z", "x"], ["BK"], [], 2)
    assert rep == "<tile.entry k2(z, x, n: int, BK: typing.Annotated[int, tile.Constant] = 4): 0 " \
                  "compiled specializations, 0 launches>"
    assert "must be a plain positional parameter" in err


# (tilejit.native is loaded, without NumPy: ct.launch's C entry comes from it)
CT_DEFINITION_FREE = tuple(m for m in DEFINITION_FREE if m != "tilejit.native") + (
    "tilejit.autotune", "ml_dtypes", "tilejit.typing")


def test_importing_cutile_and_defining_a_ct_kernel_loads_no_numpy_numba_bindings_or_runtime():
    # as cuTile Python's: ct.launch is its C entry from the import on (whatever names were bound
    # to it), and the launch side loads at the first launch, which replays in C from the next
    out = _fresh(f"""
        import json, sys
        import tilejit.cutile as ct
        from tilejit.cutile import launch

        @ct.kernel
        def scale(x, y, SCALE: ct.Constant[float], TILE: ct.Constant[int]):
            t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
            ct.store(y, index=(ct.bid(0),), tile=t * SCALE)

        @ct.kernel(occupancy=ct.ByTarget(sm_100=2, default=1))
        def hinted(x: ct.ScalarInt64, y: tuple[int, float]):
            pass
        loaded = [m for m in {CT_DEFINITION_FREE!r} if m in sys.modules]
        info = [scale.param_names, scale.constant_names, hinted.param_names,
                launch is ct.launch, type(ct.launch).__name__]
        from tilejit import api, native
        import tilejit as tile
        x = api.arange(64, dtype=ct.float32).sync()
        y = api.zeros((64,)).sync()
        s = tile.Device(0).new_stream()
        for _ in range(2):
            launch(s, (2,), scale, (x, y, 2.0, 32))
        s.synchronize()
        native.reset_stats()
        ct.launch(s, (2,), scale, (x, y, 3.0, 32))
        ct.launch(s, (2,), scale, (x, y, 3.0, 32))
        s.synchronize()
        print(json.dumps({{"loaded": loaded, "info": info, "y": y.to_numpy()[:3].tolist(),
                          "native": native.enabled(), "stats": native.stats()}}))
    """)
    assert out["loaded"] == []
    params, consts, hinted, same, kind = out["info"]
    assert (params, consts, hinted, same) == (["x", "y", "SCALE", "TILE"], ["SCALE", "TILE"],
                                              ["x", "y"], True)
    assert kind == ("builtin_function_or_method" if out["native"] else "function")
    assert out["y"] == [0.0, 3.0, 6.0]
    if out["native"]:       # the launch with new constants binds them in Python, the next replays
        assert out["stats"]["launches"] == 1


def test_a_kernel_defined_before_the_runtime_gets_its_c_launcher():
    # kernels made before the first launch get their C launcher (and the globals it watches)
    # when the runtime loads; both launch and give the right answer
    out = _fresh("""
        import json, sys
        import tilejit as tile
        SCALE = 3.0

        @tile.entry
        def scale(z, x):
            z.store(tile.load_tile_like(x, z) * SCALE)

        @tile.entry
        def add(z, x, BK: tile.Constant[int]):
            z.store(tile.load_tile_like(x, z) + BK)
        from tilejit import api, native
        x = api.arange(64, dtype=tile.float32).sync()
        z = api.empty((64,), dtype=tile.float32).sync()
        for _ in range(3):          # the later launches are the C launcher's, where it is built
            scale(z.partition((16,)), x).sync()
        a = z.to_numpy().tolist()
        before = native.stats()["launches"]
        for _ in range(3):
            add(z.partition((16,)), x, 2).sync()
        b = z.to_numpy().tolist()
        c_launches = native.stats()["launches"] - before
        print(json.dumps({"a": a[:3], "b": b[:3], "native": native.enabled(),
                          "launchers": [scale._native is not None, add._native is not None],
                          "c_launches": c_launches,
                          "watch": scale._reads != ()}))
    """)
    assert out["a"] == [0.0, 3.0, 6.0] and out["b"] == [2.0, 3.0, 4.0] and out["watch"]
    assert out["launchers"] == [out["native"]] * 2
    assert (out["c_launches"] > 0) == out["native"]


def test_typing_a_kernel_does_not_import_cffi():
    # Numba's generic typeof imports cffi and pycparser (~30 ms) to rule out cffi objects; the
    # module global `tile` is typed before it gets there
    out = _fresh("""
        import json, sys
        import tilejit as tile
        from tilejit import api

        @tile.entry
        def k(z, x):
            z.store(tile.load_tile_like(x, z) * 2)
        x = api.empty((64,), dtype=tile.float32).sync()
        k.inspect_tileir(x.partition((16,)), x)
        print(json.dumps({"numba": "numba" in sys.modules, "cffi": "cffi" in sys.modules}))
    """)
    assert out == {"numba": True, "cffi": False}


def test_autotune_is_the_decorator_even_after_its_module_is_imported():
    out = _fresh("""
        import importlib, json
        import tilejit as tile
        mod = importlib.import_module("tilejit.autotune")    # binds it on the package first
        import tilejit.autotune as by_import
        print(json.dumps([tile.autotune is mod.autotune, by_import is mod.autotune,
                          callable(tile.autotune), "autotune" in dir(tile)]))
    """)
    assert out == [True, True, True, True]


def test_lazy_names_dir_and_star_import():
    for name in ("entry", "Kernel", "Tensor", "partition", "DeviceOp", "zip", "CompileOptions",
                 "Config", "Autotuned", "CudaGraph", "Remark", "writable", "api", "runtime"):
        assert name in dir(tile), name
        assert getattr(tile, name) is not None
    assert tile.writable is tile.atomic
    assert tile.entry.__module__ == "tilejit.dispatcher"
    ns = {}
    exec("from tilejit import *", ns)
    assert ns["entry"] is tile.entry and ns["float16"] is tile.float16 and "Tensor" in ns
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        tile.no_such_name  # noqa: B018


def test_dtypes_make_their_numpy_dtype_on_first_use():
    out = _fresh("""
        import json, sys
        import tilejit as tile
        before = "numpy" in sys.modules
        import numpy as np, ml_dtypes
        print(json.dumps([before, tile.float16.np_dtype == np.float16,
                          tile.bfloat16.np_dtype == np.dtype(ml_dtypes.bfloat16),
                          tile.dtypes.from_numpy(np.int32) is tile.int32,
                          tile.dtypes.result_type(tile.float16, tile.int32) is tile.float64,
                          len(tile.dtypes._BY_NUMPY)]))
    """)
    assert out == [False, True, True, True, True, 17]


# --- source_lines: inspect.getsourcelines without the tokenizer ----------------------------------
def _plain(a, b):
    return a + b


def _one_liner(x): return x * 2  # noqa: E704


def _deco(*_a, **_k):
    return lambda f: f


@_deco(1,
       2)
def _decorated_over_lines(x):
    return x


def _signature_closed_at_def_indent(
    a, b,
):
    return a


def _string_at_column_zero(x):
    s = """
text at column zero
"""
    return s


class _Holder:
    @staticmethod
    def method(x):
        # a comment at the method's depth
        y = x + 1
# a comment at column zero inside the method's lines
        return y


@pytest.mark.parametrize("fn", [_plain, _one_liner, _decorated_over_lines,
                                _signature_closed_at_def_indent, _string_at_column_zero,
                                _Holder.method, lambda x: x + 1])
def test_source_lines_matches_inspect(fn):
    import inspect

    def code_lines(ls):         # (trailing blank and comment lines may differ)
        ls = list(ls)
        while ls and (not ls[-1].strip() or ls[-1].lstrip().startswith("#")):
            ls.pop()
        return ls
    lines, start = source_lines(fn)
    want, want_start = inspect.getsourcelines(fn)
    assert start == want_start
    assert code_lines(lines) == code_lines(want)


def test_static_imports_for_docs_and_checkers_match_the_lazy_table():
    import ast
    import inspect
    tree = ast.parse(inspect.getsource(tile))
    block = next(n for n in tree.body if isinstance(n, ast.If)
                 and ast.unparse(n.test) == "_typing.TYPE_CHECKING")
    names = {a.asname or a.name for n in block.body if isinstance(n, ast.ImportFrom)
             for a in n.names}
    names |= {t.id for n in block.body if isinstance(n, ast.Assign) for t in n.targets}
    assert names == set(tile._LAZY)


def test_typing_pauses_the_cyclic_gc_and_restores_it(monkeypatch):
    # typing runs with the cyclic GC off (its passes over Numba's IR free nothing); afterwards,
    # also after a typing error, the GC is as the caller left it
    import gc
    from tilejit.typing import pipeline

    during = []
    infer = pipeline._infer
    monkeypatch.setattr(pipeline, "_infer", lambda *a: (during.append(gc.isenabled()), infer(*a))[1])

    @tile.entry
    def k(z, x):
        z.store(tile.load_tile_like(x, z))

    @tile.entry
    def bad(z, x):
        z.store(tile.load_tile_like(x, z) + undefined_name)  # noqa: F821
    keys, consts, _ = k._keys_for((tile.api.empty((64,)).sync().partition((16,)),
                                   tile.api.empty((64,)).sync()))
    try:
        pipeline.type_kernel(k.py_func, keys, consts)
        assert gc.isenabled() and during == [False]
        with pytest.raises(tile.CompileError):
            pipeline.type_kernel(bad.py_func, keys, consts)
        assert gc.isenabled()
        gc.disable()
        pipeline.type_kernel(k.py_func, keys, consts)
        assert not gc.isenabled()
    finally:
        gc.enable()
