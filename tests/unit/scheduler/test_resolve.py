"""An answer frame resolves the future of its query decoded once, on arrival; an answer that cannot be
read fails its query as a lost worker (sent elsewhere) where its id can be read, and tells nobody where
it cannot; a late or repeated answer changes nothing."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from infaas.wire.frames import encode_frame
from infaas.wire.messages import Reply
from services.scheduler.push import Waiting, WorkerLost, resolve


async def test_an_answer_resolves_its_query_decoded() -> None:
    loop = asyncio.get_running_loop()
    waiting: Waiting = {"a": loop.create_future(), "b": loop.create_future()}
    logits = np.arange(6, dtype=np.float32).reshape(2, 3)
    sent = Reply("a", "w", "answered", "v1", 0.5, 1.25, 2)
    assert resolve(waiting, sent.encode({"logits": logits}), "w") == "a"
    reply, outputs = waiting["a"].result()
    assert reply == sent
    np.testing.assert_array_equal(outputs["logits"], logits)
    assert not waiting["b"].done()

    # A second answer to the same query (computed twice after a re-send) leaves the first one's result.
    assert resolve(waiting, Reply("a", "other").encode(), "other") == "a"
    assert waiting["a"].result()[0].worker == "w"
    assert resolve(waiting, Reply("gone", "w").encode(), "w") == "gone"  # nobody waits: dropped


async def test_an_unreadable_answer_fails_its_query_as_a_lost_worker() -> None:
    loop = asyncio.get_running_loop()
    waiting: Waiting = {"a": loop.create_future()}
    whole = encode_frame({"id": "a"}, {"logits": np.zeros((2, 3), dtype=np.float32)})
    assert resolve(waiting, whole[:-4], "w-1") == "a"  # its tensors cut short
    with pytest.raises(WorkerLost) as lost:
        waiting["a"].result()
    assert lost.value.worker == "w-1" and "could not be read" in lost.value.reason

    waiting = {"a": loop.create_future()}
    assert resolve(waiting, b"\x00\x00\x00\x09not json!", "w-1") is None  # not even an id
    assert not waiting["a"].done()  # its deadline covers it
