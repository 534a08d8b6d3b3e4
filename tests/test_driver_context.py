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
