"""Random test arrays of any tilejit dtype, shared by the CPU and GPU tensor tests."""
import numpy as np


def rand(shape, dtype=np.float32, seed=0):
    """Reproducible values that every dtype can hold exactly: booleans, integers in [-1000, 1000)
    clipped to the type's range, and normals * 3 rounded through float32 (so ml_dtypes narrow
    floats convert from a value NumPy can produce)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape).astype(dt)
    return (rng.standard_normal(shape) * 3).astype(np.float32).astype(dt)


def rand_tensor(shape, dtype=np.float32, seed=0):
    """``rand(shape, dtype, seed)`` as a tilejit tensor on the current backend (synchronized)."""
    from tilejit.deviceops import transfer
    return transfer.from_numpy(rand(shape, dtype, seed)).sync()
