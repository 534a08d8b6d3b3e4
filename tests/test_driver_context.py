"""runtime.driver.context: tilejit switches the thread's CUDA context only for the work it does
and gives the caller its previous context back (checked against a fake driver)."""
import pytest

from tilejit.runtime import driver


class FakeCtx:
    def __init__(self, n):
        self.n = n

    def __int__(self):
        return self.n


class FakeDrv:
    def __init__(self, current):
        self.current = current
        self.sets = []

    def cuCtxGetCurrent(self):
        return driver.SUCCESS, self.current

    def cuCtxSetCurrent(self, ctx):
        self.current = ctx
        self.sets.append(int(ctx))
        return (driver.SUCCESS,)


@pytest.fixture
def fake(monkeypatch):
    d = FakeDrv(FakeCtx(0))
    monkeypatch.setattr(driver, "drv", d)
    return d


def test_switches_and_restores(fake):
    mine = FakeCtx(1)
    with driver.context(mine):
        assert fake.current is mine
    assert int(fake.current) == 0 and fake.sets == [1, 0]


def test_no_switch_when_already_current(fake):
    with driver.context(FakeCtx(0)):
        pass
    assert fake.sets == []


def test_restores_on_error_and_nests(fake):
    with pytest.raises(RuntimeError):
        with driver.context(FakeCtx(1)):
            with driver.context(FakeCtx(2)):
                assert int(fake.current) == 2
            assert int(fake.current) == 1
            raise RuntimeError("boom")
    assert int(fake.current) == 0


def test_simulator_devices_have_no_context(fake):
    with driver.context(None):
        pass
    assert fake.sets == []


# --- streams and events from any thread (issue 27) -------------------------------------------------
class StreamDrv(FakeDrv):
    """A driver whose stream/event calls need the right current context: a default stream handle
    (0, 1, 2) names the current context's stream, so with no context current the call fails as the
    real driver does (CUDA_ERROR_INVALID_CONTEXT), and with another context it would act on the
    wrong device; any other handle works only with some context current."""

    def __init__(self, current, owner):
        super().__init__(current)
        self.owner = owner                # the context the stream / event belongs to
        self.calls = []

    def _call(self, name, handle):
        cur = int(self.current)
        self.calls.append((name, handle, cur))
        if cur == 0:
            return (self.CUresult.CUDA_ERROR_INVALID_CONTEXT,)
        if handle in (0, 1, 2) and cur != int(self.owner):
            raise AssertionError(f"{name} on default stream {handle} with another device current")
        return (driver.SUCCESS,)

    class CUresult:
        CUDA_ERROR_INVALID_CONTEXT = 201
        CUDA_ERROR_NOT_READY = 600

    def cuStreamSynchronize(self, s):
        return self._call("sync", int(s))

    def cuStreamQuery(self, s):
        return self._call("query", int(s))

    def cuStreamWaitEvent(self, s, ev, flags):
        return self._call("wait", int(s))

    def cuEventRecord(self, ev, s):
        return self._call("record", int(s))

    def cuEventSynchronize(self, ev):
        return self._call("event_sync", -1)

    def CUstream(self, h):
        return h


class FakeDevice:
    def __init__(self, ctx):
        self._ctx = ctx

    def current(self):
        return driver.context(self._ctx)


@pytest.mark.parametrize("handle", [0, 1, 2, 0x7f00])
@pytest.mark.parametrize("thread_ctx", [0, 1, 2])
def test_stream_calls_work_from_any_thread_and_leave_its_context(monkeypatch, handle, thread_ctx):
    """A thread with no current context (a new thread), with the stream's own, or with another
    device's: synchronize/query/wait/record succeed on the right device and the thread's context
    is left as it was."""
    from tilejit.runtime import stream as _stream

    mine = FakeCtx(1)
    d = StreamDrv(FakeCtx(thread_ctx), owner=mine)
    monkeypatch.setattr(driver, "drv", d)
    monkeypatch.setattr(driver, "SUCCESS", 0)
    dev = FakeDevice(mine)
    for fn, name in ((d.cuStreamSynchronize, "sync"), (d.cuStreamQuery, "query")):
        ret = _stream._on_device(dev, handle, fn, handle)
        assert ret[0] == driver.SUCCESS, name
        assert int(d.current) == thread_ctx
    # every call that reached a default stream ran with the stream's own device current
    assert all(cur == 1 for _, h, cur in d.calls if h in (0, 1, 2))


def test_event_calls_retry_in_the_device_context(monkeypatch):
    from tilejit.runtime import stream as _stream

    mine = FakeCtx(1)
    d = StreamDrv(FakeCtx(0), owner=mine)
    monkeypatch.setattr(driver, "drv", d)
    monkeypatch.setattr(driver, "SUCCESS", 0)
    ret = _stream._on_device(FakeDevice(mine), -1, d.cuEventSynchronize, object())
    assert ret[0] == 0 and int(d.current) == 0
    assert [c[2] for c in d.calls] == [0, 1]        # failed without a context, then retried
