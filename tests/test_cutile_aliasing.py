"""``ct.launch`` with arguments that share memory (issue 47): cuTile code passes one dummy array
for the outputs a call does not request (Liger's cross entropy: ``z_loss`` and ``token_accuracy``
under ``RETURN_Z_LOSS=0``, ``RETURN_TOKEN_ACCURACY=0``) and updates arrays in place (Liger's GRPO
backward writes the gradient over the logits it reads). As cuTile, tilejit accepts aliases of
which at most one is stored into, judged on the kernel specialized for the launch's constants
(its typed IR, dead ``if CONST:`` arms removed: ``_writes.specialized_accesses``); host arrays
also may not alias a stored-into one when they are copied back. Two aliases both stored into
keep the clear "share memory" error, now with the reason."""
import numpy as np
import pytest

try:
    import torch
except ImportError:         # the torch cases skip; the NumPy and device ones still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

import tilejit.cutile as ct
from tilejit import api
from tilejit.cutile import _writes
from tilejit.errors import TensorError
from tilejit.typing.pipeline import type_kernel

pytestmark = pytest.mark.usefixtures("simulator_backend")


@ct.kernel
def optional_outputs(x, loss, z, acc, RET_Z: ct.Constant[int], RET_ACC: ct.Constant[int],
                     TILE: ct.Constant[int]):
    """Liger's pattern: scatters into ``z``/``acc`` only under their flags, one of them inside a
    dynamic branch with an early return, one under ``a or b``."""
    i = ct.bid(0)
    t = ct.load(x, index=(i,), shape=(TILE,))
    s = ct.sum(t, 0, keepdims=False)
    if s < -1e30:                                   # never true here: a dynamic early exit
        if RET_ACC:
            ct.scatter(acc, i, ct.astype(0.0, acc.dtype))
        return
    ct.scatter(loss, i, s)
    if RET_Z:
        ct.scatter(z, i, s * s)
    if RET_ACC or RET_Z > 5:
        ct.scatter(acc, i, ct.astype(s > 0.0, ct.float32))


def _store_twice(arr, i, t):
    ct.store(arr, index=(i,), tile=t)


@ct.kernel
def via_helper(x, a, b, A: ct.Constant[bool], B: ct.Constant[bool], TILE: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, index=(i,), shape=(TILE,))
    if A:
        _store_twice(a, i, t)                       # a plain helper, inlined
    if B:
        _store_twice(b, i, t + 1)


@ct.kernel
def in_or_out(x, y, READ: ct.Constant[bool], TILE: ct.Constant[int]):
    i = ct.bid(0)
    if READ:
        t = ct.load(x, index=(i,), shape=(TILE,)) * 2
    else:
        t = ct.full((TILE,), 3.0, dtype=ct.float32)
    ct.store(y, index=(i,), tile=t)


def _x(n=4, tile=8):
    return np.arange(n * tile, dtype=np.float32).reshape(n, tile) - 10.0


def _expected(x):
    s = x.sum(1)
    return s, s * s, (s > 0).astype(np.float32)


# --- accepted ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["numpy", pytest.param("torch", marks=needs_torch)])
def test_one_dummy_for_two_outputs_never_written(kind):
    x = _x()
    mk = np.zeros if kind == "numpy" else (lambda n, dtype: torch.zeros(n, dtype=torch.float32))
    loss, dummy = mk(4, dtype=np.float32), mk(1, dtype=np.float32)
    for _ in range(3):                          # the first launch, then replays (C path too)
        ct.launch(0, (4,), optional_outputs, (x.reshape(-1), loss, dummy, dummy, 0, 0, 8))
    np.testing.assert_allclose(np.asarray(loss), _expected(x)[0], rtol=1e-6)
    assert not np.asarray(dummy).any()


def test_dummy_shared_with_a_real_output_when_only_one_is_written():
    """Device arrays: the stored-into output may share memory with an argument the kernel never
    touches under these constants."""
    x = _x()
    xd = api.from_numpy(x.reshape(-1)).sync()
    loss = api.zeros((4,)).sync()
    shared = api.zeros((4,)).sync()
    ct.launch(0, (4,), optional_outputs, (xd, loss, shared, shared, 1, 0, 8))   # z written
    s, z, acc = _expected(x)
    np.testing.assert_allclose(api.to_numpy(shared).sync(), z, rtol=1e-6)
    ct.launch(0, (4,), optional_outputs, (xd, loss, shared, shared, 0, 1, 8))   # acc written
    np.testing.assert_array_equal(api.to_numpy(shared).sync(), acc)


def test_helper_stores_under_a_false_constant_do_not_count():
    x = _x().reshape(-1)
    d = api.zeros((32,)).sync()
    xd = api.from_numpy(x).sync()
    ct.launch(0, (4,), via_helper, (xd, d, d, False, False, 8))
    ct.launch(0, (4,), via_helper, (xd, d, d, True, False, 8))
    np.testing.assert_array_equal(api.to_numpy(d).sync(), x)
    ct.launch(0, (4,), via_helper, (xd, d, d, False, True, 8))
    np.testing.assert_array_equal(api.to_numpy(d).sync(), x + 1)


def test_an_input_the_kernel_does_not_read_may_alias_the_output():
    y = api.zeros((16,)).sync()
    ct.launch(0, (2,), in_or_out, (y, y, False, 8))
    np.testing.assert_array_equal(api.to_numpy(y).sync(), np.full(16, 3.0, np.float32))


def test_no_analysis_without_aliases():
    k = ct.kernel(optional_outputs.py_func)
    x = _x().reshape(-1)
    z, acc = np.zeros(4, np.float32), np.zeros(4, np.float32)
    ct.launch(0, (4,), k, (x, np.zeros(4, np.float32), z, acc, 1, 1, 8))
    assert all(not getattr(b, "_accesses", None) for b in k._bound_by_key.values())


# --- refused -------------------------------------------------------------------------------------
def test_both_aliases_written_is_a_clear_error():
    x = _x()
    loss, dummy = np.zeros(4, np.float32), np.zeros(4, np.float32)
    xd, shared = api.from_numpy(x.reshape(-1)).sync(), api.zeros((4,)).sync()
    with pytest.raises(TensorError, match=r"argument 'z' \(writable \(tile.atomic\) tensor\) and "
                                          r"argument 'acc' share memory \(under these constants "
                                          r"the kernel stores into both 'z' and 'acc'\)"):
        ct.launch(0, (4,), optional_outputs, (xd, api.zeros((4,)).sync(), shared, shared,
                                              1, 1, 8))
    with pytest.raises(TensorError, match="share memory"):        # host arrays alike
        ct.launch(0, (4,), optional_outputs, (x.reshape(-1), loss, dummy, dummy, 1, 1, 8))


def test_a_written_host_array_aliasing_one_copied_back_is_refused():
    """Host arrays are copied in and back one by one: the copy of the alias the kernel does not
    store into (passed writable: its source may) could overwrite the results."""
    x, d = _x().reshape(-1), np.zeros(32, np.float32)
    with pytest.raises(TensorError, match=r"stores into 'a', and 'b' is a host array copied "
                                          r"back too"):
        ct.launch(0, (4,), via_helper, (x, d, d, True, False, 8))


@pytest.mark.parametrize("kind", ["device", "numpy", pytest.param("torch", marks=needs_torch)])
def test_an_update_in_place_is_accepted(kind):
    """The output aliases the input it reads (each block reads its elements, then writes
    them): accepted as cuTile accepts it, on device arrays and host copies alike."""
    v = np.arange(16, dtype=np.float32)
    y = {"device": lambda: api.from_numpy(v).sync(), "numpy": lambda: v.copy(),
         "torch": lambda: torch.from_numpy(v.copy())}[kind]()
    for _ in range(2):
        ct.launch(0, (2,), in_or_out, (y, y, True, 8))
    got = api.to_numpy(y).sync() if kind == "device" else np.asarray(y)
    np.testing.assert_array_equal(got, v * 4)


def test_partial_overlap_of_written_outputs_is_refused():
    base = api.zeros((40,)).sync()
    x = api.from_numpy(np.arange(32, dtype=np.float32)).sync()
    with pytest.raises(TensorError, match="share memory"):
        ct.launch(0, (4,), via_helper, (x, base[:32], base[8:40], True, True, 8))


# --- the analysis itself -----------------------------------------------------------------------
def _typed(kernel, args, consts):
    b = kernel._bound_to(consts)
    keys, _, _ = b._keys_for(b._launch_values(args))
    return type_kernel(kernel.py_func, keys, b._consts, plain_helpers=True)


def test_specialized_accesses_follow_the_constants():
    x, o = np.zeros(32, np.float32), np.zeros(4, np.float32)
    args = (x, o, o.copy(), o.copy())
    stored, touched = _writes.specialized_accesses(_typed(optional_outputs, args, (0, 0, 8)))
    assert stored == {"loss"} and touched == {"x", "loss"}
    stored, touched = _writes.specialized_accesses(_typed(optional_outputs, args, (1, 0, 8)))
    assert stored == {"loss", "z"} and touched == {"x", "loss", "z"}
    stored, _ = _writes.specialized_accesses(_typed(optional_outputs, args, (0, 1, 8)))
    assert stored == {"loss", "acc"}                 # also inside the dynamic early exit
    stored, _ = _writes.specialized_accesses(_typed(optional_outputs, args, (6, 0, 8)))
    assert stored == {"loss", "z", "acc"}            # RET_Z > 5 folds too
    # the source-level analysis (before constants) keeps all three writable
    assert set(optional_outputs.written_parameters) == {"loss", "z", "acc"}


# --- other patterns of Liger's kernels: CPU tensors that require grad, 0-d gathers ----------
@ct.kernel
def grad_in_place(x, loss, TILE: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, index=(i,), shape=(TILE,))
    ct.store(loss, index=(i,), tile=ct.sum(t, 0, keepdims=True))
    ct.store(x, index=(i,), tile=t * 0.5)          # the gradient, into the input


@needs_torch
def test_a_cpu_tensor_that_requires_grad_is_read_and_written():
    """cuTile takes a tensor's memory whatever autograd says (and tilejit a CUDA tensor's, by
    ``data_ptr()``): ``ct.launch`` reads and writes a CPU one through its detached view."""
    x = torch.arange(16, dtype=torch.float32).requires_grad_(True)
    loss = torch.zeros(2, requires_grad=True)
    for _ in range(2):
        ct.launch(0, (2,), grad_in_place, (x, loss, 8))
    assert x.requires_grad and loss.requires_grad
    np.testing.assert_array_equal(x.detach().numpy(), np.arange(16, dtype=np.float32) / 4)
    np.testing.assert_array_equal(loss.detach().numpy(), [14.0, 46.0])


@ct.kernel
def scale_by_scalar(s, y, TILE: ct.Constant[int]):
    v = ct.gather(s, (), check_bounds=False)       # a 0-d array's one element (Liger's FLCE)
    ct.store(y, index=(ct.bid(0),), tile=ct.full((TILE,), 1.0, dtype=ct.float32) * v)


def test_gather_from_a_0d_array():
    y = np.zeros(8, np.float32)
    ct.launch(0, (2,), scale_by_scalar, (np.array(3.0, np.float32), y, 4))
    np.testing.assert_array_equal(y, np.full(8, 3.0, np.float32))
