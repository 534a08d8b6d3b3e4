"""Run a corpus case through ``@tile.entry`` on the current backend and compare with NumPy."""
from __future__ import annotations

import numpy as np

import tilejit as tile
from tilejit import api

from corpus import Atomic, In, Out

_KERNELS = {}


def kernel_of(case):
    k = _KERNELS.get(case.name)
    if k is None:
        k = _KERNELS[case.name] = tile.entry(case.kernel)
    return k


def device_args(case, args):
    """Launch arguments for ``args`` (tensors on the current backend) and the tensors to read."""
    launch, outputs = [], {}
    for name in case.params():
        a = args[name]
        if isinstance(a, Out):
            t = api.from_numpy(a.initial).sync()
            outputs[name] = t
            launch.append(t.partition(a.tile))
        elif isinstance(a, Atomic):
            t = api.from_numpy(a.value).sync()
            outputs[name] = t
            launch.append(tile.atomic(t))
        elif isinstance(a, In):
            launch.append(api.from_numpy(a.value).sync())
        else:
            launch.append(a.value)
    return launch, outputs


def run_case(case, seed=0):
    rng = np.random.default_rng(seed)
    args = case.make(rng)
    expected = case.expected(args)
    launch, outputs = device_args(case, args)
    op = kernel_of(case)(*launch).generics(**case.constants)
    if case.grid is not None:
        op = op.grid(case.grid(args))
    op.sync()
    results = {n: t.to_numpy() for n, t in outputs.items()}
    for n, exp in expected.items():
        got = results[n]
        exp = np.asarray(exp)
        if exp.dtype.kind in "fc" or str(exp.dtype) in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64),
                                       rtol=case.rtol, atol=case.atol,
                                       err_msg=f"{case.name}: output '{n}'")
        else:
            np.testing.assert_array_equal(got, exp, err_msg=f"{case.name}: output '{n}'")
    return results


def compile_case(case, arch):
    rng = np.random.default_rng(0)
    args = case.make(rng)
    launch, _ = device_args(case, args)
    return kernel_of(case).compile(*launch, arch=arch, **case.constants)
