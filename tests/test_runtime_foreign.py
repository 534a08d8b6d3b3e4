"""Foreign arrays read from their metadata (runtime.foreign) and classified for launches.

The readers are exercised here with stand-in objects (a __cuda_array_interface__ class, a fake
stream recording the ordering it is asked for); tests/gpu/test_foreign_gpu.py runs the real
torch and CuPy paths on a GPU."""
import numpy as np
import pytest

import tilejit as tile
from tilejit.runtime import argspec, foreign


class CAI:
    """A minimal __cuda_array_interface__ producer."""

    def __init__(self, ptr, shape, typestr="<f4", strides=None, stream=None, readonly=False):
        self._cai = {"shape": shape, "typestr": typestr, "data": (ptr, readonly),
                     "strides": strides, "version": 3, "stream": stream}

    @property
    def __cuda_array_interface__(self):
        return self._cai


class FakeDevice:
    ordinal = 0


class FakeStream:
    """Enough of a tile.Stream for argspec.foreign_info: a handle, a device and wait_raw."""

    _cu = object()
    device = FakeDevice()

    def __init__(self, handle):
        self.handle = handle
        self.waited = []

    def wait_raw(self, handle):
        if handle != self.handle:
            self.waited.append(handle)


def test_cai_view_in_elements_with_producer_stream():
    v = foreign.view_of_cai(CAI(0x1000, (4, 6), strides=(48, 4), stream=7).__cuda_array_interface__,
                            device=0)
    assert v.ptr == 0x1000 and v.shape == (4, 6) and v.strides == (12, 1)
    assert v.dtype is tile.float32 and v.stream == 7 and not v.readonly
    assert foreign.view_of_cai(CAI(0x1000, (3,)).__cuda_array_interface__, device=0).strides == (1,)


def test_cai_rejects_masks_and_odd_strides():
    cai = CAI(0x1000, (4,)).__cuda_array_interface__
    with pytest.raises(tile.TensorError, match="masked"):
        foreign.view_of_cai(dict(cai, mask=object()), device=0)
    with pytest.raises(tile.TensorError, match="not multiples of the element size 4"):
        foreign.view_of_cai(dict(cai, strides=(6,)), device=0)


def test_readers_are_found_by_type_and_cached():
    assert foreign.reader_for(CAI) is foreign.reader_for(CAI) is not None
    assert foreign.reader_for(np.ndarray) is None          # NumPy arrays are copied, not read
    assert foreign.reader_for(int) is None


def test_foreign_info_keys_params_and_ordering():
    s = FakeStream(handle=5)
    view = foreign.View(0x2000, (8, 4), (4, 1), tile.float16, 0, False, 9)
    info = argspec.foreign_info(view, False, "value", s)
    # fp16: 8 rows are one 16-byte vector of elements (keyed ÷8), 4 columns are not
    assert info.key == ("tensor", "float16", 2, (32, 16, (8, 1), (1, 1), (False, True)), False)
    assert info.params == (0x2000, 8, 4, 4, 1) and info.slots == ("u64",) + ("i32",) * 4
    assert info.extent == (0x2000, 0x2000 + 32 * 2) and info.storage is None
    assert s.waited == [9]                                 # ordered after the producer's stream
    same = FakeStream(handle=9)
    argspec.foreign_info(view, False, "value", same)
    assert same.waited == []                               # on the producer's stream: free
    # a reallocated producer (new pointer, new shape) is read as it is now
    moved = view._replace(ptr=0x2008, shape=(16, 4))
    info2 = argspec.foreign_info(moved, False, "value", same)
    assert info2.key.facts.base_div == 1 and info2.params[:3] == (0x2008, 16, 4)
    assert info2.key.facts.shape_div == (16, 1)


def test_foreign_info_errors_name_the_problem():
    s = FakeStream(handle=0)
    with pytest.raises(tile.TensorError, match="on cuda:1 was passed to a launch on cuda:0"):
        argspec.foreign_info(foreign.View(0x100, (4,), (1,), tile.float32, 1, False, None),
                             False, "x", s)
    with pytest.raises(tile.TensorError, match="negative strides"):
        argspec.foreign_info(foreign.View(0x100, (4,), (-1,), tile.float32, 0, False, None),
                             False, "x", s)
    with pytest.raises(tile.TensorError, match="read-only"):
        argspec.foreign_info(foreign.View(0x100, (4,), (1,), tile.float32, 0, True, None),
                             True, "x", s)


def test_zero_size_and_broadcast_views_classify():
    s = FakeStream(handle=0)
    empty = argspec.foreign_info(foreign.View(0, (0, 4), (4, 1), tile.float32, 0, False, None),
                                 False, "x", s)
    assert empty.extent == (0, 0)
    bcast = argspec.foreign_info(foreign.View(0x100, (3, 4), (0, 1), tile.float32, 0, False,
                                              None), False, "x", s)
    assert bcast.key.facts.stride_div == (4, 1)


def test_foreign_outputs_alias_checks():
    s = FakeStream(handle=0)
    a = argspec.foreign_info(foreign.View(0x1000, (64,), (1,), tile.float32, 0, False, None),
                             True, "a", s)
    b = argspec.foreign_info(foreign.View(0x1080, (64,), (1,), tile.float32, 0, False, None),
                             False, "b", s)
    c = argspec.foreign_info(foreign.View(0x1100, (64,), (1,), tile.float32, 0, False, None),
                             False, "c", s)
    argspec.check_launch_aliasing([a, c], ["a", "c"])      # disjoint: fine
    with pytest.raises(tile.TensorError, match="argument 'a'.*argument 'b' share memory"):
        argspec.check_launch_aliasing([a, b], ["a", "b"])


# --- tile.partition(array, tile): foreign outputs -------------------------------------------------
def test_partition_of_a_foreign_array_classifies_from_its_metadata():
    s = FakeStream(handle=5)
    fp = tile.partition(CAI(0x4000, (100, 64), stream=9), (32, 64))
    assert isinstance(fp, tile.ForeignPartition) and fp.tile_shape == (32, 64)
    assert fp.shape == (100, 64) and "tile=(32, 64)" in repr(fp)
    info = argspec.classify(fp, None, s)
    assert info.kind == "partition" and info.writable and info.storage is None
    assert info.grid == (4, 1, 1) and info.tile_shape == (32, 64)
    assert info.key == ("partition", "float32", 2, (32, 16, (4, 64), (4, 1), (False, True)),
                        (32, 64))
    assert info.params == (0x4000, 100, 64, 64, 1)
    assert s.waited == [9]                          # ordered after the producer, like inputs
    assert argspec.grid_from_partitions([info]) == (4, 1, 1)
    x = argspec.foreign_info(foreign.View(0x4000, (64,), (1,), tile.float32, 0, False, None),
                             False, "x", s)
    with pytest.raises(tile.TensorError, match="share memory"):
        argspec.check_launch_aliasing([info, x], ["z", "x"])
    argspec.release_partitions([fp])                # nothing leased: a no-op


def test_partition_of_a_foreign_array_checks_tiles_and_memory():
    with pytest.raises(tile.TensorError, match="not a power of two"):
        tile.partition(CAI(0x4000, (100, 64)), (24, 64))
    with pytest.raises(tile.TensorError, match="has rank 1 but the tensor has rank 2"):
        tile.partition(CAI(0x4000, (100, 64)), (32,))
    with pytest.raises(tile.TensorError, match="needs a tile.Tensor or a DLPack"):
        tile.partition([1, 2, 3], (4,))
    with pytest.raises(tile.TensorError, match="read-only"):
        argspec.classify(tile.partition(CAI(0x4000, (64,), readonly=True), (64,)), None,
                         FakeStream(handle=0))
    host = argspec.classify(tile.partition(np.zeros(64, np.float32), (64,)), None,
                            FakeStream(handle=0))       # NumPy: copied in and back
    assert host.kind == "partition" and host.prepare is not None and host.finish is not None


@pytest.mark.usefixtures("simulator_backend")
def test_partition_of_a_tile_tensor_is_its_partition():
    from tilejit import api
    t = api.zeros((64,)).sync()
    p = tile.partition(t, (16,))
    assert isinstance(p, tile.Partition) and p.tile_shape == (16,)
