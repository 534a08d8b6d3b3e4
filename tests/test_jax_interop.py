"""JAX arrays through DLPack on the simulator: kernels take JAX arrays as inputs, and tilejit
tensors come back to JAX with ``jax.numpy.from_dlpack``. (JAX arrays are immutable, so outputs
are tilejit tensors; on a GPU, tests/gpu/test_foreign_gpu.py covers CUDA JAX arrays.)"""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import tilejit as tile  # noqa: E402
from tilejit import api  # noqa: E402

pytestmark = pytest.mark.usefixtures("simulator_backend")


@tile.entry
def axpy(z, x, y, a):
    z.store(a * tile.load_tile_like(x, z) + tile.load_tile_like(y, z))


def test_kernel_with_jax_inputs_result_back_in_jax():
    x = jnp.arange(1000, dtype=jnp.float32)
    y = jnp.ones((1000,), dtype=jnp.float32)
    z = api.empty((1000,)).sync()
    axpy(z.partition((256,)), x, y, 2.0).sync()
    back = jnp.from_dlpack(z)
    assert isinstance(back, jax.Array) and back.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(back), 2 * np.arange(1000) + 1)


def test_from_dlpack_keeps_dtype_shape_and_values():
    for dt in (jnp.float16, jnp.bfloat16, jnp.int32, jnp.float32):
        a = jnp.arange(24, dtype=dt).reshape(2, 3, 4)
        t = tile.from_dlpack(a)
        assert t.shape == (2, 3, 4) and t.dtype.name == jnp.dtype(dt).name
        np.testing.assert_array_equal(t.to_numpy().astype(np.float32),
                                      np.asarray(a).astype(np.float32))


def test_jax_computation_on_a_kernel_result():
    z = api.empty((64,)).sync()
    axpy(z.partition((64,)), jnp.ones(64, jnp.float32), jnp.zeros(64, jnp.float32), 3.0).sync()
    assert float(jnp.sum(jnp.from_dlpack(z))) == 192.0


def test_mixed_jax_dtypes_promote_like_numpy():
    z = api.empty((64,)).sync()
    axpy(z.partition((64,)), jnp.arange(64, dtype=jnp.int32), jnp.full(64, 0.5, jnp.float32),
         3.0).sync()
    np.testing.assert_allclose(z.to_numpy(), 3 * np.arange(64) + 0.5)


def test_unsupported_jax_dtype_is_named():
    with pytest.raises(TypeError, match="complex64 has no tilejit equivalent"):
        tile.from_dlpack(jnp.ones(4, jnp.complex64))
