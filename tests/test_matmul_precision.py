"""float32 x float32 ``mma`` / ``@`` multiply in float32; TF32 only when asked for
(``input_precision="tf32"`` or ``.astype(tile.tfloat32)``), issue 21 item 3; mixed-dtype
``mma`` operands. The device side is tests/gpu/test_numerics_gpu.py."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from numerics_kernels import matmul_error, matmul_f32

pytestmark = pytest.mark.usefixtures("simulator_backend")


@pytest.mark.parametrize("precision", [None, "ieee", "float32"])
def test_float32_matmul_is_float32(precision):
    err, ir = matmul_error(precision)
    assert err < 1e-5
    assert "tf32" not in ir and "mmaf" in ir


@pytest.mark.parametrize("precision", ["tf32", "astype"])
def test_tf32_only_when_asked(precision):
    err, ir = matmul_error(precision)
    assert 5e-5 < err < 3e-3             # tf32 keeps 10 mantissa bits: ~1e-3 of each input
    assert "-> tile<64x32xtf32>" in ir and "mmaf" in ir


def test_tf32x3_recovers_float32_accuracy_with_three_products():
    err, ir = matmul_error("tf32x3")
    assert err < 1e-5
    assert ir.count("mmaf") == 3 and "tf32" in ir


def test_matmul_operator_and_function_stay_float32():
    @tile.entry
    def k(c, a, b):
        ta, tb = a.load((0, 0), (64, 64)), b.load((0, 0), (64, 64))
        c.store(ta @ tb + tile.matmul(ta, tb) - tile.matmul(ta, tb, input_precision="tf32"))

    rng = np.random.default_rng(3)
    an, bn = (rng.standard_normal((64, 64)).astype(np.float32) for _ in range(2))
    a, b = api.from_numpy(an).sync(), api.from_numpy(bn).sync()
    c = api.zeros((64, 64), tile.float32).sync()
    k(c.partition((64, 64)), a, b).sync()
    ref = an.astype(np.float64) @ bn.astype(np.float64)
    # ieee + ieee - tf32 = ref + (tf32 error): only the tf32 term is off
    diff = np.abs(c.to_numpy() - ref).max() / np.abs(ref).max()
    assert 1e-5 < diff < 3e-3
    ir = k.inspect_tileir(c.partition((64, 64)), a, b)
    assert ir.count("mmaf") == 3 and ir.count("xtf32>") == 2 * 2   # one pair of ftof results


@pytest.mark.parametrize("precision", ["ieee", "tf32x3"])
def test_float32_mma_compiles_for_hopper_and_blackwell(precision):
    rng = np.random.default_rng(0)
    a = api.from_numpy(rng.standard_normal((128, 64)).astype(np.float32)).sync()
    b = api.from_numpy(rng.standard_normal((64, 128)).astype(np.float32)).sync()
    c = api.zeros((128, 128), tile.float32).sync()
    P = ("ieee", "tf32x3").index(precision) * 3 + 1      # PRECISIONS index: ieee 1, tf32x3 4
    for arch in ("sm_90", "sm_100"):
        cubin = matmul_f32.compile(c.partition((64, 64)), a, b, P, 32, arch=arch)
        assert cubin[:4] == b"\x7fELF"


def _mma_kernel(expr):
    src = ("import tilejit as tile\n@tile.entry\ndef k(z, a, b):\n"
           "    ta, tb = a.load((0, 0), (16, 32)), b.load((0, 0), (32, 16))\n"
           f"    z.store({expr})\n")
    ns = {}
    exec(compile(src, f"<mma {expr}>", "exec"), ns)
    return ns["k"]


def _refused(expr, a_dtype, b_dtype, match):
    """``expr`` (of tiles ta (16, 32) and tb (32, 16)) is a typing error at the kernel's line 5."""
    k = _mma_kernel(expr)
    a, b = api.zeros((16, 32), a_dtype).sync(), api.zeros((32, 16), b_dtype).sync()
    z = api.zeros((16, 16), tile.float32).sync()
    with pytest.raises(tile.TypingError, match=match) as e:
        k(z.partition((16, 16)), a, b).sync()
    assert "line 5" in str(e.value)


@pytest.mark.parametrize("value", ["'bf16x3'", "'TF32'", "1", "True"])
def test_unknown_input_precision_is_refused(value):
    _refused(f"tile.mma(ta, tb, tile.zeros((16, 16), tile.float32), input_precision={value})",
             tile.float32, tile.float32,
             r"input_precision must be None or one of 'ieee', 'float32', 'tf32', 'tf32x3'")


def test_input_precision_is_ignored_for_other_input_dtypes():
    """As in Triton: one kernel source may ask for tf32 and still take float16 inputs."""
    k = _mma_kernel("tile.mma(ta, tb, tile.zeros((16, 16), tile.float32), "
                    "input_precision='tf32')")
    rng = np.random.default_rng(5)
    an = rng.standard_normal((16, 32)).astype(np.float16)
    bn = rng.standard_normal((32, 16)).astype(np.float16)
    z = api.zeros((16, 16), tile.float32).sync()
    k(z.partition((16, 16)), api.from_numpy(an).sync(), api.from_numpy(bn).sync()).sync()
    ref = an.astype(np.float64) @ bn.astype(np.float64)
    assert np.abs(z.to_numpy() - ref).max() < 1e-5


def test_int8_times_uint8_multiplies_exactly():
    k = _mma_kernel("tile.mma(ta, tb, tile.zeros((16, 16), tile.int32))")
    rng = np.random.default_rng(2)
    an = rng.integers(-128, 128, (16, 32)).astype(np.int8)
    bn = rng.integers(0, 256, (32, 16)).astype(np.uint8)
    a, b = api.from_numpy(an).sync(), api.from_numpy(bn).sync()
    z = api.zeros((16, 16), tile.int32).sync()
    k(z.partition((16, 16)), a, b).sync()
    assert (z.to_numpy() == an.astype(np.int64) @ bn.astype(np.int64)).all()
    assert k.compile(z.partition((16, 16)), a, b, arch="sm_90")[:4] == b"\x7fELF"


def test_mixed_float8_formats_are_a_typing_error():
    _refused("tile.mma(ta, tb, tile.zeros((16, 16), tile.float32))", tile.float8_e4m3fn,
             tile.float8_e5m2,
             r"a is float8_e4m3fn and b is float8_e5m2.*b\.astype\(tile\.float8_e4m3fn\)")


# --------------------------------------------------------------------------------------------------
# fast_acc: float8 products summed in the tensor cores' own precision (Hopper), when asked
@tile.entry
def mma_fast_acc(c, a, b, FAST: tile.Constant[bool]):
    acc = tile.zeros(c.shape, tile.float32)
    c.store(tile.mma(a.load((0, 0), (32, 64)), b.load((0, 0), (64, 32)), acc, fast_acc=FAST))


def _fast_acc_case(np_dtype, fast):
    rng = np.random.default_rng(5)
    a_np = rng.integers(-4, 5, (32, 64)).astype(np_dtype)
    b_np = rng.integers(-4, 5, (64, 32)).astype(np_dtype)
    a, b = api.from_numpy(a_np).sync(), api.from_numpy(b_np).sync()
    c = api.zeros((32, 32), tile.float32).sync()
    args = (c.partition((32, 32)), a, b)
    ir = mma_fast_acc.inspect_tileir(*args, FAST=fast)
    mma_fast_acc(*args, fast).sync()
    np.testing.assert_array_equal(c.to_numpy(), a_np.astype(np.float32) @ b_np.astype(np.float32))
    return ir, args


def _mmaf_line(ir: str) -> str:
    (line,) = [ln for ln in ir.splitlines() if "= mmaf " in ln]
    return line


@pytest.mark.parametrize("fast", [False, True])
def test_fast_acc_marks_float8_mma_only_when_asked(fast):
    import ml_dtypes
    ir, args = _fast_acc_case(ml_dtypes.float8_e4m3fn, fast)
    assert ("fast_acc" in _mmaf_line(ir)) is fast
    assert mma_fast_acc.compile(*args, FAST=fast, arch="sm_90")[:4] == b"\x7fELF"


def test_fast_acc_is_ignored_for_float16():
    ir, _ = _fast_acc_case(np.float16, True)
    assert "fast_acc" not in _mmaf_line(ir)


def test_fast_acc_must_be_a_constant():
    @tile.entry
    def k(c, a, b, fast):
        acc = tile.zeros(c.shape, tile.float32)
        c.store(tile.mma(a.load((0, 0), (16, 16)), b.load((0, 0), (16, 16)), acc, fast_acc=fast))

    x = api.zeros((16, 16), tile.float16).sync()
    with pytest.raises(tile.TypingError, match="fast_acc must be a compile-time constant bool"):
        k(api.zeros((16, 16), tile.float32).sync().partition((16, 16)), x, x, True).sync()
