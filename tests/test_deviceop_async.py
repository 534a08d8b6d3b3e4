"""``await op`` with asyncio: results, concurrency with other coroutines, errors."""
import asyncio

import numpy as np
import pytest

import tilejit as tile
from tilejit.deviceops import DeviceOp
from tilejit.deviceops import transfer as T


pytestmark = pytest.mark.usefixtures("simulator_backend")


def test_await_returns_the_output():
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)

    async def main():
        t = await T.from_numpy(a)
        host = await t.to_host()
        pair = await tile.zip(tile.value(1), tile.value(2))
        return host, pair

    host, pair = asyncio.run(main())
    assert np.array_equal(host, a) and pair == (1, 2)


def test_await_is_lazy_until_awaited():
    log = []

    class Probe(DeviceOp):
        def _execute(self, ctx):
            log.append("ran")
            return 7

    async def main():
        op = Probe()
        await asyncio.sleep(0)
        assert log == []
        return await op

    assert asyncio.run(main()) == 7 and log == ["ran"]


def test_many_awaits_interleave_with_other_coroutines():
    async def worker(i):
        out = 0
        for k in range(5):
            out += await tile.value(i * k)
            await asyncio.sleep(0)
        return out

    async def ticker(stamps):
        for _ in range(5):
            stamps.append(1)
            await asyncio.sleep(0)

    async def main():
        stamps = []
        results = await asyncio.gather(*(worker(i) for i in range(8)), ticker(stamps))
        return results[:-1], stamps

    results, stamps = asyncio.run(main())
    assert results == [i * 10 for i in range(8)] and len(stamps) == 5


def test_errors_raise_at_await():
    class Boom(DeviceOp):
        def _execute(self, ctx):
            raise tile.LaunchError("kaput")

    async def main():
        with pytest.raises(tile.LaunchError, match="kaput"):
            await Boom()
        return await tile.value("ok")

    assert asyncio.run(main()) == "ok"


def test_await_inside_a_running_op_is_refused():
    async def main():
        async def inner():
            return await tile.value(1)

        def cb(x):
            coro = inner()
            try:
                coro.send(None)
            finally:
                coro.close()
            return tile.value(x)

        with pytest.raises(tile.SchedulingError, match="non-reentrant"):
            await tile.value(1).then(cb)

    asyncio.run(main())


def test_future_awaitable():
    async def main():
        fut = tile.value(3).schedule()
        return await fut

    assert asyncio.run(main()) == 3
