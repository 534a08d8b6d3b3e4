"""tilejit.cutile's ``ct.compilation`` (signatures as tilejit's specialization facts, AOT export),
``ct.ArrayAnnotation``/``ct.ListAnnotation`` and lists of arrays as kernel arguments."""
from io import BytesIO
from typing import Annotated

import numpy as np
import pytest

import tilejit
import tilejit.cutile as ct
from tilejit.cutile import _annotations
from tilejit.cutile import compilation as C

V2 = C.CallingConvention.cutile_python_v2()


@ct.kernel
def _copy(x, out, n, T: ct.Constant[int]):
    ct.store(out, (0, 0), ct.load(x, (0, 0), (T, T)))


def _array(**kw):
    base = dict(index_dtype=ct.int32, stride_lower_bound_incl=0, alias_groups=(),
                may_alias_internally=False)
    return C.ArrayConstraint(ct.float16, 2, **{**base, **kw})


def test_array_constraint_checks_and_drops_redundant_facts():
    with pytest.raises(ValueError, match=r"stride_constant\[1\].*not divisible by 4"):
        _array(stride_constant=(None, 1), stride_divisible_by=(1, 4))
    with pytest.raises(ValueError, match="doesn't match ndim=2"):
        _array(shape_divisible_by=(1, 2, 4))
    with pytest.raises(TypeError, match="must be strictly positive"):
        _array(stride_divisible_by=0)
    c = _array(stride_constant=(None, 1), stride_divisible_by=(8, 1), shape_constant=(64, None),
               shape_divisible_by=(16, 4))
    assert c.stride_lower_bound_incl == (0, None)      # a constant stride needs no bound
    assert c.shape_divisible_by == (1, 4)              # nor a constant extent a divisor
    with pytest.raises(ValueError, match="version >= 2"):
        C.KernelSignature([c], C.CallingConvention.cutile_python_v1())
    with pytest.raises(ValueError, match="mentioned only once"):
        C.KernelSignature([_array(alias_groups=("g",))], V2)
    assert C.ConstantConstraint(1) != C.ConstantConstraint(True)
    assert C.ConstantConstraint(float("nan")) == C.ConstantConstraint(float("nan"))
    assert C.CallingConvention.from_code("t2") == V2 and V2.name == "cutile_python_v2"


def test_from_kernel_args_reports_the_facts_tilejit_specializes_on():
    x = np.zeros((48, 32), np.float16)
    out = np.zeros((16, 16), np.float16)
    sig = C.KernelSignature.from_kernel_args(_copy, (x, out, 3, 16), V2)
    a, o, n, t = sig.parameters
    assert (a.dtype, a.ndim, a.index_dtype) == (ct.float16, 2, ct.int32)
    assert a.stride_constant == (None, 1) and a.stride_divisible_by == (8, 1)
    assert a.shape_divisible_by == (16, 32) and a.shape_constant == (None, None)
    assert a.base_addr_divisible_by == 16 and a.may_alias_internally is False
    assert n == C.ScalarConstraint(ct.int32) and t == C.ConstantConstraint(16)
    ragged = np.zeros((50, 36), np.float16)                     # rows of 72 bytes
    b = C.KernelSignature.from_kernel_args(_copy, (ragged, out, 3, 16), V2).parameters[0]
    assert b.shape_divisible_by == (1, 1) and b.stride_divisible_by == (1, 1)


def test_export_from_constraints_is_the_jit_specialization():
    x = np.zeros((48, 32), np.float16)
    out = np.zeros((16, 16), np.float16)
    jit = C.KernelSignature.from_kernel_args(_copy, (x, out, 3, 16), V2)
    by_hand = C.KernelSignature(jit.parameters, V2)       # constraints only, no example arrays
    a, b = BytesIO(), BytesIO()
    C.export_kernel(_copy, [jit], a, output_format="tileir_bytecode")
    C.export_kernel(_copy, [by_hand], b, output_format="tileir_bytecode")
    assert a.getvalue() and a.getvalue() == b.getvalue()
    weaker = C.KernelSignature([_array(), jit.parameters[1], jit.parameters[2], 16], V2)
    c = BytesIO()
    C.export_kernel(_copy, [weaker], c, output_format="tileir_bytecode")
    assert c.getvalue() != a.getvalue()           # no unit stride, no alignment: other code
    with pytest.raises(NotImplementedError, match="one kernel per file"):
        C.export_kernel(_copy, [jit, jit], BytesIO(), output_format="tileir_bytecode")


def test_array_annotation_checks():
    assert ct.ArrayAnnotation is _annotations.ArrayAnnotation
    with pytest.raises(TypeError, match="must be int"):
        ct.ArrayAnnotation(static_shape_dims=(False,))
    with pytest.raises(TypeError, match="exactly one ArrayAnnotation"):
        ct.ListAnnotation(element=Annotated[ct.Array, "x"])
    assert ct.ListAnnotation(element=ct.IndexedWithInt64).element.index_dtype == ct.int64

    @ct.kernel
    def bad(x: Annotated[ct.Array, ct.ArrayAnnotation(static_stride_dims=(5,))], out):
        ct.store(out, (0,), ct.load(x, (0,), (4,)))

    x, out = np.zeros(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(ValueError, match="static_stride_dims contains axis 5 but array rank is 1"):
        ct.launch(0, (1,), bad, (x, out))

    @ct.kernel
    def static(x: Annotated[ct.Array, ct.ArrayAnnotation(static_shape_dims=(0,))], out):
        ct.store(out, (0,), ct.load(x, (0,), (4,)))

    with pytest.raises(tilejit.UnsupportedError, match="does not make extents or strides"):
        ct.launch(0, (1,), static, (x, out))

    @ct.kernel
    def wide(x: ct.IndexedWithInt64, out):
        ct.store(out, (0,), ct.load(x, (0,), (8,)) + 1)

    x = np.arange(8, dtype=np.float32)
    ct.launch(0, (1,), wide, (x, out))
    np.testing.assert_array_equal(out, x + 1)


@ct.kernel
def _sum_list(arrays, out):
    res = ct.zeros((4, 4), dtype=out.dtype)
    for i in range(len(arrays)):
        res += ct.load(arrays[i], (0, 0), (4, 4))
    ct.store(out, (0, 0), res)


@ct.kernel
def _fill_list(outs, base: ct.Constant[int]):
    for g in range(len(outs)):
        o = outs[g]
        ct.store(o, (0,), ct.full((8,), base + g, dtype=o.dtype))


def test_list_of_arrays_read_and_written():
    xs = [np.full((4, 4), i + 1, np.int32) for i in range(3)]
    out = np.zeros((4, 4), np.int32)
    ct.launch(0, (1,), _sum_list, (xs, out))
    np.testing.assert_array_equal(out, sum(xs))
    ct.launch(0, (1,), _sum_list, (xs[:2], out))       # another length: another compile
    np.testing.assert_array_equal(out, xs[0] + xs[1])
    outs = [np.zeros(8, np.float32) for _ in range(3)]
    ct.launch(0, (1,), _fill_list, (outs, 5))
    for g, o in enumerate(outs):
        np.testing.assert_array_equal(o, np.full(8, 5 + g))
    outs = tuple(np.zeros(8, np.float32) for _ in range(2))   # a tuple the kernel writes
    ct.launch(0, (1,), _fill_list, (outs, 1))
    np.testing.assert_array_equal(outs[1], np.full(8, 2))
    sig = C.KernelSignature.from_kernel_args(_sum_list, (xs, out), V2)
    assert isinstance(sig.parameters[0], C.ListConstraint)
    assert sig.parameters[0].element.dtype == ct.int32


def test_list_arguments_follow_cutiles_rules():
    out = np.zeros((4, 4), np.int32)
    with pytest.raises(TypeError, match="Empty lists are not supported"):
        ct.launch(0, (1,), _sum_list, ([], out))
    with pytest.raises(TypeError, match="vary in data type"):
        ct.launch(0, (1,), _sum_list, ([np.zeros((4, 4), np.int32),
                                        np.zeros((4, 4), np.float32)], out))
    with pytest.raises(TypeError, match="vary in rank"):
        ct.launch(0, (1,), _sum_list, ([np.zeros((4, 4), np.int32),
                                        np.zeros(16, np.int32)], out))
    with pytest.raises(TypeError, match="Expected list items to be arrays, got int"):
        ct.launch(0, (1,), _sum_list, ([1, 2], out))
