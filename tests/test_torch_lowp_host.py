"""CPU torch tensors of bfloat16 and float8 as kernel inputs and outputs on the simulator (issue 44
item 3). NumPy has no such dtypes and refuses them through DLPack, so tilejit views their storage
as integers of the same width and reinterprets it with ml_dtypes: inputs are read and outputs
written back through that view, in the tensor's own memory. Expected values come from NumPy and
ml_dtypes arithmetic, compared bit for bit."""
import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the CPU torch tensor tests need PyTorch "
                                            "(pip install torch --index-url "
                                            "https://download.pytorch.org/whl/cpu)")

import tilejit as tile  # noqa: E402
import tilejit.cutile as ct  # noqa: E402
from tilejit.runtime.dlpack import _host_array  # noqa: E402
from tilejit.runtime.hostarrays import host_view, lowp_view  # noqa: E402

pytestmark = pytest.mark.usefixtures("simulator_backend")

# torch dtype -> (ml_dtypes type, integer type of the same width)
LOWP = {
    torch.bfloat16: (ml_dtypes.bfloat16, np.int16),
    torch.float8_e4m3fn: (ml_dtypes.float8_e4m3fn, np.uint8),
    torch.float8_e5m2: (ml_dtypes.float8_e5m2, np.uint8),
}
DTYPES = list(LOWP)
IDS = [str(d).split(".")[-1] for d in DTYPES]


def lowp_tensor(values, tdt):
    """A CPU torch tensor of ``tdt`` holding ``values`` rounded by ml_dtypes (the reference)."""
    mdt, idt = LOWP[tdt]
    bits = np.ascontiguousarray(np.asarray(values, np.float32).astype(mdt)).view(idt)
    return torch.from_numpy(bits.copy()).view(tdt)


def as_ml(t):
    """The ml_dtypes array of a torch tensor's bits (independent of tilejit)."""
    mdt, idt = LOWP[t.dtype]
    itype = torch.int16 if idt is np.int16 else torch.uint8
    return t.contiguous().view(itype).numpy().view(mdt)


def assert_bits_equal(t, want):
    mdt, idt = LOWP[t.dtype]
    got = as_ml(t)
    want = np.asarray(want).astype(mdt)
    np.testing.assert_array_equal(got.view(idt), want.view(idt),
                                  err_msg=f"{t.dtype}: got {got}, want {want}")


def sample(n, seed=0, scale=100.0):
    return np.random.default_rng(seed).uniform(-scale, scale, n).astype(np.float32)


@tile.entry
def axpb(z, x, y):
    """z = x * y + 1, computed in float32, stored in z's dtype."""
    a = tile.load_tile_like(x, z).astype(tile.float32)
    b = tile.load_tile_like(y, z).astype(tile.float32)
    z.store((a * b + 1.0).astype(z.dtype))


@tile.entry
def twice(z, x):
    z.store((tile.load_tile_like(x, z).astype(tile.float32) * 2.0).astype(z.dtype))


@tile.entry
def scale_in_place(w, B: tile.Constant[int]):
    i = tile.bid(0)
    t = tile.load(w, (i,), (B,)).astype(tile.float32)
    tile.store(w, (i,), (t * 0.5).astype(w.dtype))


@tile.entry
def histogram(z, w, x, B: tile.Constant[int]):
    t = tile.load_tile_like(x, z)
    tile.atomic_add(w, t, tile.full((B,), 1.0, tile.bfloat16))
    z.store(t)


# --- the NumPy view ------------------------------------------------------------------------------
@pytest.mark.parametrize("tdt", DTYPES, ids=IDS)
def test_the_numpy_view_shares_the_tensors_memory(tdt):
    t = lowp_tensor(sample(16, scale=10), tdt)
    v = host_view(t)
    assert v.dtype == np.dtype(LOWP[tdt][0]) and v.shape == (16,)
    assert v.ctypes.data == t.data_ptr()                        # a view, not a copy
    v[3] = 2.0
    assert float(t[3]) == 2.0                                   # writes land in the tensor
    s = t.view(-1)[::2]                                         # strided views keep strides
    assert host_view(s).ctypes.data == s.data_ptr() and host_view(s).strides == (2 * v.itemsize,)
    assert lowp_view(torch.zeros(2)) is None and lowp_view(np.zeros(2)) is None
    assert _host_array(t).ctypes.data == t.data_ptr()           # inputs: one copy, to the device


# --- tile.entry kernels: inputs, partitions, tile.atomic ---------------------------------------------
@pytest.mark.parametrize("tdt", DTYPES, ids=IDS)
def test_lowp_tensors_as_inputs_and_output_partition(tdt):
    x, y = lowp_tensor(sample(256, 1, 12), tdt), lowp_tensor(sample(256, 2, 12), tdt)
    z = torch.zeros(256, dtype=tdt)
    ptr = z.data_ptr()
    axpb(tile.partition(z, (64,)), x, y).sync()
    f32 = np.float32
    want = as_ml(x).astype(f32) * as_ml(y).astype(f32) + f32(1)
    assert z.data_ptr() == ptr
    assert_bits_equal(z, want)


@pytest.mark.parametrize("tdt", DTYPES, ids=IDS)
def test_conversions_between_lowp_and_float32_tensors(tdt):
    x32 = torch.from_numpy(sample(128, 3))
    lo = torch.zeros(128, dtype=tdt)
    twice(tile.partition(lo, (32,)), x32).sync()                 # float32 in, low precision out
    assert_bits_equal(lo, x32.numpy() * np.float32(2))
    back = torch.zeros(128, dtype=torch.float32)
    twice(tile.partition(back, (32,)), lo).sync()                # low precision in, float32 out
    np.testing.assert_array_equal(back.numpy(), as_ml(lo).astype(np.float32) * np.float32(2))


@pytest.mark.parametrize("tdt", DTYPES, ids=IDS)
def test_a_strided_lowp_output_is_written_through(tdt):
    base = torch.zeros((8, 32), dtype=tdt)
    view = base[:, ::2]                                          # non-contiguous
    x = lowp_tensor(sample(8 * 16, 4, 50).reshape(8, 16), tdt)
    twice(tile.partition(view, (4, 8)), x).sync()
    assert_bits_equal(view, as_ml(x).astype(np.float32) * np.float32(2))
    assert not base[:, 1::2].any()                               # the gaps stay untouched


@pytest.mark.parametrize("tdt", DTYPES, ids=IDS)
def test_atomic_lowp_tensor_is_read_and_written_back(tdt):
    w = lowp_tensor(sample(128, 5), tdt)
    before = as_ml(w).copy()
    scale_in_place(tile.atomic(w), 32).grid((4, 1, 1)).sync()
    assert_bits_equal(w, before.astype(np.float32) * np.float32(0.5))


def test_bf16_atomic_add_into_a_torch_tensor():
    x = torch.from_numpy(np.random.default_rng(6).integers(0, 16, 512).astype(np.int32))
    w = torch.zeros(16, dtype=torch.bfloat16)
    z = torch.zeros(512, dtype=torch.int32)
    histogram(tile.partition(z, (128,)), tile.atomic(w), x, 128).sync()
    assert torch.equal(z, x)
    assert_bits_equal(w, np.bincount(x.numpy(), minlength=16))   # counts <= 256: exact


def test_a_tensor_that_requires_grad_is_refused_as_for_float32():
    for tdt in (torch.float32, torch.bfloat16):
        t = torch.zeros(8, dtype=tdt, requires_grad=True)
        with pytest.raises(tile.TensorError, match=r"tile.partition\(\): this Tensor is in "
                                                   r"host memory and NumPy cannot view it "
                                                   r"\(BufferError: .*require gradient"):
            tile.partition(t, (4,))
        tile.partition(t.detach(), (4,))


def test_tilejit_torch_launch_writes_a_bf16_cpu_output():
    import tilejit.torch as tt
    x = lowp_tensor(sample(64, 8), torch.bfloat16)
    out = torch.empty(64, dtype=torch.bfloat16)
    assert tt.launch(twice, out, (32,), x) is out
    assert_bits_equal(out, as_ml(x).astype(np.float32) * np.float32(2))


# --- tilejit.cutile --------------------------------------------------------------------------------
@ct.kernel
def ct_scale(x, y, SCALE: ct.Constant[float], TILE: ct.Constant[int]):
    t = ct.astype(ct.load(x, index=(ct.bid(0),), shape=(TILE,)), ct.float32) * SCALE
    ct.store(y, index=(ct.bid(0),), tile=ct.astype(t, y.dtype))


@pytest.mark.parametrize("tdt", DTYPES, ids=IDS)
def test_cutile_launch_reads_and_writes_lowp_cpu_tensors(tdt):
    x = lowp_tensor(sample(64, 7, 50), tdt)
    y = torch.zeros(64, dtype=tdt)
    for scale in (2.0, -0.5, 2.0):                  # repeated launches write back every time
        y.zero_()
        ct.launch(0, (2,), ct_scale, (x, y, scale, 32))      # host outputs: written back
        assert_bits_equal(y, as_ml(x).astype(np.float32) * np.float32(scale))
