"""Putting query frames on variant streams, several per Redis round trip when they come together.

On these machines a Redis round trip costs far more than the command: each write wakes the Redis
process (and the reply wakes us), CPU on each side (docs/benchmarks.md). Queries that
reach the dispatcher in the same event-loop turn — common under load, when the loop has a backlog —
therefore leave as one pipeline. A lone query waits one loop turn for company, no timer.
"""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis


class StreamEnqueuer:
    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis
        self._pending: list[tuple[str, bytes, asyncio.Future[bytes]]] = []
        self._sending: set[asyncio.Task[None]] = set()
        self.closed = False
        self.round_trips = 0  # for tests and metrics: how many pipelines carried the XADDs
        self.frames = 0

    async def xadd(self, stream: str, frame: bytes) -> bytes:
        """Append `frame` to `stream`; returns its entry id once Redis has it (raises what Redis raised)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bytes] = loop.create_future()
        self._pending.append((stream, frame, future))
        if len(self._pending) == 1:
            loop.call_soon(self._flush)
        return await future

    async def aclose(self) -> None:
        """Stop the writes under way (their queries get no answer: the dispatcher is stopping), and any
        flush still scheduled from starting one."""
        self.closed = True
        for task in list(self._sending):
            task.cancel()
        await asyncio.gather(*self._sending, return_exceptions=True)

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        if self.closed:
            for _, _, future in batch:
                future.cancel()
            return
        task = asyncio.get_running_loop().create_task(self._send(batch))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, batch: list[tuple[str, bytes, asyncio.Future[bytes]]]) -> None:
        self.round_trips += 1
        self.frames += len(batch)
        try:
            if len(batch) == 1:
                ids = [await self.redis.xadd(batch[0][0], {"f": batch[0][1]})]
            else:
                pipe = self.redis.pipeline(transaction=False)
                for stream, frame, _ in batch:
                    pipe.xadd(stream, {"f": frame})
                ids = await pipe.execute()
        except asyncio.CancelledError:  # shutting down: nobody gets an answer
            for _, _, future in batch:
                future.cancel()
            raise
        except Exception as exc:
            for _, _, future in batch:
                if not future.done():  # a caller that gave up has a cancelled future
                    future.set_exception(exc)
            return
        for (_, _, future), entry_id in zip(batch, ids, strict=True):
            if not future.done():
                future.set_result(entry_id if isinstance(entry_id, bytes) else entry_id.encode())
