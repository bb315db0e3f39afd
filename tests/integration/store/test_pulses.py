"""The executor's pulse sender against a real Redis and real UDP sockets: pulses reach every advertised
listener at their interval, signed and in sequence; a listener advertised later is found; a Redis that
comes back empty (or goes away) does not silence a sender that knew where to send; a stop says
`leaving`; and the planner's inbox refuses what is unsigned, signed under another key, or replayed."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import redis

from infaas.data.pulses import (
    PULSE_LISTENERS,
    SEALED_AHEAD,
    Pulse,
    PulseSeal,
    PulseSender,
    listener_address,
)
from services.planner.pulse_inbox import EXPECTED_AHEAD, PulseInbox, open_inbox
from tests.polling import wait_for

KEY = "int_pulse_test_key"


class Listener:
    """A UDP socket advertised in Redis as a failure watch would be, collecting what it verifies."""

    def __init__(self, client: redis.Redis, key: str = KEY) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.01)
        self.address = listener_address("127.0.0.1", self.sock.getsockname()[1])
        self.seal = PulseSeal(key)
        self.client = client
        self.pulses: list[Pulse] = []
        self.advertise()

    def advertise(self) -> None:
        self.client.zadd(PULSE_LISTENERS, {self.address: time.time() + 5})

    def poll(self) -> list[Pulse]:
        while True:
            try:
                raw = self.sock.recv(2048)
            except TimeoutError:
                return self.pulses
            self.pulses.append(self.seal.open(raw))

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    c.delete(PULSE_LISTENERS)
    yield c
    c.delete(PULSE_LISTENERS)
    c.close()


class Waits:
    """The lock the pulse thread sleeps on until the sender stops, recording each wait it asks for and
    how many pulses were sent by then: the pace is checked by what the sender does, not by a clock on a
    shared machine."""

    def __init__(self, sender: PulseSender) -> None:
        self.sender = sender
        self.waits: list[tuple[float, int]] = []
        self.lock = threading.Lock()
        self.lock.acquire()  # held until `stop`, as the sender's own

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        self.waits.append((timeout, self.sender.sent))
        return self.lock.acquire(blocking, timeout)

    def release(self) -> None:
        self.lock.release()


def test_pulses_reach_every_listener_at_their_interval_signed_and_in_sequence(
    redis_url: str, client: redis.Redis
) -> None:
    first, second = Listener(client), Listener(client)
    sender = PulseSender(redis_url, Pulse("pulse-test-worker", "inc-1"), interval_s=0.02, key=KEY)
    waits = Waits(sender)
    sender._halt = waits  # type: ignore[assignment]
    sender.start()
    try:
        wait_for(lambda: len(first.poll()) >= 20 and len(second.poll()) >= 20, what="20 pulses each")
    finally:
        sender.stop()
    for heard in (first.pulses, second.pulses):
        assert {(p.worker, p.incarnation, p.state) for p in heard[:20]} == {
            ("pulse-test-worker", "inc-1", "alive")
        }
        seqs = [p.seq for p in heard]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    # One per interval, not faster: after each pulse, and only after one, a wait of the whole interval.
    assert len(waits.waits) >= 20
    assert [timeout for timeout, _ in waits.waits] == [0.02] * len(waits.waits)
    assert [sent for _, sent in waits.waits] == list(range(1, len(waits.waits) + 1))
    wait_for(lambda: first.poll()[-1].state == "leaving", what="the leaving pulse", timeout_s=2)
    assert second.poll()[-1].state == "leaving"
    first.close()
    second.close()


def test_pulses_signed_ahead_go_out_one_per_turn_in_sequence_and_leaving_comes_after_them(
    redis_url: str, client: redis.Redis
) -> None:
    listener = Listener(client)
    sender = PulseSender(redis_url, Pulse("pulse-test-worker", "inc-1"), interval_s=0.02, key=KEY)
    sender.refresh()  # where to send, without the threads: each turn below is one pulse
    try:
        turns = 2 * SEALED_AHEAD + 3
        for _ in range(turns):
            sender._send("alive")
        sender._send("leaving")
        wait_for(lambda: len(listener.poll()) == turns + 1, what="every pulse")
    finally:
        sender.stop(leaving=False)
        listener.close()
    assert [p.seq for p in listener.pulses] == list(range(1, turns + 2))
    assert [p.state for p in listener.pulses] == ["alive"] * turns + ["leaving"]


def test_a_listener_advertised_later_is_found_and_an_emptied_redis_silences_no_one(
    redis_url: str, client: redis.Redis
) -> None:
    sender = PulseSender(
        redis_url, Pulse("pulse-test-worker", "inc-2"), interval_s=0.01, key=KEY, renew_s=0.05
    )
    sender.start()
    try:
        time.sleep(0.1)  # pulsing to no one yet
        late = Listener(client)
        wait_for(lambda: len(late.poll()) >= 3, what="pulses to the listener advertised later")
        # Redis restarted empty: the sender keeps the address for its TTL (5 s), by its own clock.
        client.delete(PULSE_LISTENERS)
        before = len(late.poll())
        wait_for(lambda: len(late.poll()) >= before + 20, what="pulses while Redis lists nobody")
        assert sender.targets and sender.failed == 0
    finally:
        sender.stop()
        late.close()


def test_a_sender_without_redis_keeps_trying_and_stops_cleanly() -> None:
    sender = PulseSender("redis://127.0.0.1:1", Pulse("pulse-test-worker", "inc-3"), interval_s=0.01, key=KEY)
    sender.start()
    time.sleep(0.1)
    sender.stop()  # nowhere to send the leaving pulse: nothing raised
    sender.stop()  # nor the second time (a lifespan and a signal handler may both stop it)
    assert sender.sent >= 1 and sender.targets == ()


def test_a_sender_without_a_key_sends_nothing(redis_url: str, client: redis.Redis) -> None:
    listener = Listener(client)
    sender = PulseSender(redis_url, Pulse("pulse-test-worker", "inc-4"), interval_s=0.01, key="")
    sender.start()
    time.sleep(0.1)
    sender.stop()
    assert listener.poll() == [] and sender.sent == 0
    listener.close()


async def test_the_inbox_takes_signed_pulses_in_sequence_and_refuses_the_rest() -> None:
    heard: list[Pulse] = []
    transport, inbox = await open_inbox("127.0.0.1", 0, PulseSeal(KEY), lambda p, _now: heard.append(p))
    port = transport.get_extra_info("sockname")[1]
    out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    seal, other = PulseSeal(KEY), PulseSeal("int_someone_elses_key")
    datagrams = [
        seal.seal(Pulse("w1", "a", seq=1)),
        seal.seal(Pulse("w1", "a", seq=2)),
        seal.seal(Pulse("w1", "a", seq=2)),  # replayed
        seal.seal(Pulse("w1", "a", seq=1)),  # replayed, older
        other.seal(Pulse("w1", "a", seq=3)),  # another key
        b"w1|a|alive|4",  # unsigned
        b"w1|a|alive|4|" + b"0" * 32,  # a made-up signature
        b"\xff" * 40,
        b"x" * 4096,  # oversized
        seal.seal(Pulse("w1", "b", seq=1)),  # a new incarnation starts its own sequence
        seal.seal(Pulse("w1", "b", "leaving", seq=2)),
    ]
    try:
        for d in datagrams:
            out.sendto(d, ("127.0.0.1", port))
        deadline = time.monotonic() + 5
        while len(heard) < 4 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)  # anything else that would arrive has arrived
    finally:
        out.close()
        transport.close()
    assert [(p.incarnation, p.state, p.seq) for p in heard] == [
        ("a", "alive", 1),
        ("a", "alive", 2),
        ("b", "alive", 1),
        ("b", "leaving", 2),
    ]
    assert inbox.rejected == 7


def test_a_seal_refuses_fields_that_would_change_its_meaning() -> None:
    with pytest.raises(ValueError):
        PulseSeal(KEY).seal(Pulse("w|1", "a"))
    with pytest.raises(ValueError):
        PulseSeal("").seal(Pulse("w1", "a"))


def test_the_inbox_checks_an_incarnation_once_per_batch_and_still_refuses_replays_and_forgeries() -> None:
    heard: list[Pulse] = []
    inbox = PulseInbox(PulseSeal(KEY), lambda p, _now: heard.append(p))
    seal, addr = PulseSeal(KEY), ("127.0.0.1", 1)

    def send(pulse: Pulse) -> None:
        inbox.datagram_received(seal.seal(pulse), addr)

    count = EXPECTED_AHEAD + 5
    for seq in range(1, count + 1):
        send(Pulse("w1", "a", seq=seq))
    assert [p.seq for p in heard] == list(range(1, count + 1))
    # Only the first (a new incarnation) and the second (then its next ones are signed ahead) were
    # checked; the rest were taken as signed ahead, the next batch signed when the last one came.
    assert inbox.checked == 2 and inbox.rejected == 0
    send(Pulse("w1", "a", seq=10))  # a replay of one taken from the batch
    inbox.datagram_received(b"w1|a|alive|46|" + b"0" * 32, addr)  # the next one, forged
    send(Pulse("w1", "a", seq=count + 3))  # two lost on the way: still in the batch
    send(Pulse("w1", "a", seq=count + 2))  # one of them arriving late: a replay all the same
    assert inbox.rejected == 3 and heard[-1].seq == count + 3
    send(Pulse("w1", "a", seq=count + 3 + 2 * EXPECTED_AHEAD))  # past the batch (a long gap): checked
    assert inbox.checked == 5 and heard[-1].seq == count + 3 + 2 * EXPECTED_AHEAD
    # Echoes (one pulse per incarnation) are never signed ahead; a worker that leaves is forgotten.
    for at in ("1.5", "1.6", "1.7"):
        send(Pulse("detector-x", at, seq=1))
    send(Pulse("w1", "a", "leaving", seq=count + 4 + 2 * EXPECTED_AHEAD))
    assert inbox.expected == {} and heard[-1].state == "leaving"
