"""The executor's pulse sender against a real Redis: pulses reach a subscriber at their interval, fire and
forget (Redis sends nothing back on the pulse connection), through a connection Redis cut (replies stay
off after the reconnect), and a stop says `leaving`."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import redis

from infaas.data.pulses import PULSES_CHANNEL, Pulse, PulseSender
from tests.polling import wait_for


class Heard:
    def __init__(self, url: str, worker: str) -> None:
        self.client = redis.Redis.from_url(url)
        self.sub = self.client.pubsub(ignore_subscribe_messages=True)
        self.sub.subscribe(PULSES_CHANNEL)
        self.worker = worker
        self.pulses: list[Pulse] = []

    def poll(self) -> list[Pulse]:
        while (message := self.sub.get_message(timeout=0.01)) is not None:
            pulse = Pulse.decode(message["data"])
            if pulse.worker == self.worker:  # a planner of another test may echo on the same channel
                self.pulses.append(pulse)
        return self.pulses

    def close(self) -> None:
        self.sub.close()
        self.client.close()


@pytest.fixture
def heard(redis_url: str) -> Iterator[Heard]:
    h = Heard(redis_url, "pulse-test-worker")
    yield h
    h.close()


class Waits(threading.Event):
    """The sender's stop event, recording each wait it is asked for and how many pulses were sent by
    then: the pace is checked by what the sender does, not by a clock on a shared machine."""

    def __init__(self, sender: PulseSender) -> None:
        super().__init__()
        self.sender = sender
        self.waits: list[tuple[float | None, int]] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append((timeout, self.sender.sent))
        return super().wait(timeout)


def test_pulses_arrive_at_their_interval_and_nothing_comes_back(redis_url: str, heard: Heard) -> None:
    sender = PulseSender(redis_url, Pulse("pulse-test-worker", "inc-1"), interval_s=0.02)
    waits = sender._stop = Waits(sender)
    sender.start()
    try:
        wait_for(lambda: len(heard.poll()) >= 20, what="20 pulses", timeout_s=5)
        assert all(p == Pulse("pulse-test-worker", "inc-1") for p in heard.pulses)
    finally:
        sender.stop()
    # One per interval, not faster: after each pulse, and only after one, a wait of the whole interval.
    assert [timeout for timeout, _ in waits.waits] == [0.02] * len(waits.waits)
    assert [sent for _, sent in waits.waits] == list(range(1, len(waits.waits) + 1))
    assert len(waits.waits) >= 19
    # Fire and forget: the sender polled its connection after every publish, and Redis wrote nothing back.
    assert sender.sent >= 20 and sender.replies == 0
    wait_for(lambda: heard.poll()[-1].state == "leaving", what="the leaving pulse", timeout_s=2)


def test_pulses_go_on_through_a_connection_redis_cut(redis_url: str, heard: Heard) -> None:
    name = "pulse-test-conn"
    sender = PulseSender(
        f"{redis_url}?client_name={name}", Pulse("pulse-test-worker", "inc-2"), interval_s=0.02
    )
    sender.start()
    admin = redis.Redis.from_url(redis_url)
    try:
        wait_for(lambda: len(heard.poll()) >= 3, what="3 pulses", timeout_s=5)
        killed = sum(
            admin.client_kill_filter(_id=c["id"]) for c in admin.client_list() if c.get("name") == name
        )
        assert killed == 1
        before = len(heard.pulses)
        wait_for(lambda: len(heard.poll()) >= before + 10, what="pulses after the cut", timeout_s=5)
        # Reconnected under the same name, with replies off again.
        assert [c["name"] for c in admin.client_list() if c.get("name") == name] == [name]
    finally:
        sender.stop()
        admin.close()
    assert sender.replies == 0


def test_a_sender_without_redis_keeps_trying_and_stops_cleanly() -> None:
    sender = PulseSender("redis://127.0.0.1:1", Pulse("pulse-test-worker", "inc-3"), interval_s=0.01)
    sender.start()
    time.sleep(0.1)
    sender.stop()  # the leaving pulse fails too, logged, not raised
    assert sender.sent == 0
