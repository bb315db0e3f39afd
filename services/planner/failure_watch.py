"""The planner's failure watch: detects failed workers from their pulses, and records every failure and
every recovery as an event.

Detection (`infaas.policy.failure_detection`): the watch hears every executor's pulse
(`infaas.data.pulses`: signed datagrams to the address it advertises, verified in
`services.planner.pulse_inbox`) and, every interval while some worker is late, sends its own to the same
socket with its send time as the incarnation; each echo heard back is a moment this watch was known to
hear (a loop stalled by a long garbage collection, a paused process, hears nothing meanwhile), so a
worker whose last pulse is older than `pulse_misses` intervals by then is silent. A silent worker is
probed (a TCP connect to its address, `2 × pulse_interval_s` at most): refused or unanswered, it is
declared failed (`infaas.data.failures`: out of the store at once, the notice published); accepted, it
is a suspect (a process paused on a loaded machine), declared only once silent for `pulse_hung_s` after
the first probe that found its port accepting.

Recording (`failure_records.py`): every notice heard, whoever detected it (this watch, a scheduler
whose push connection dropped, the local provider seeing a process exit), becomes one
`failure`/`declared` event, and every recovery a scheduler reports (`Recovery`: the first answer for one
of the failed worker's models from another worker) one `failure`/`recovered` event with the MTTR;
several planners record each once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from typing import Any

import redis.asyncio as aioredis

from infaas.data import store
from infaas.data.failures import (
    FAILURES_CHANNEL,
    RECOVERIES_CHANNEL,
    FailureNotice,
    Recovery,
    all_declared,
    claim_key,
    declare_failure,
    declared_notices,
)
from infaas.data.pulses import (
    LISTENER_RENEW_S,
    LISTENER_TTL_S,
    PULSE_LISTENERS,
    Pulse,
    PulseSeal,
    listener_address,
)
from infaas.data.subscription import keep_subscribed
from infaas.policy.failure_detection import Probe, late, late_after_s, silent, verdict
from services.planner import metrics
from services.planner.event_log import EventLog
from services.planner.failure_records import FailureRecords
from services.planner.probes import probe_port
from services.planner.pulse_inbox import PulseInbox, open_inbox

log = logging.getLogger("infaas.planner")


STOP_WAIT_S = 3.0
"""The longest a stopping watch waits for its tasks (more than `subscription.CLOSE_WAIT_S`)."""


class FailureWatch:
    def __init__(
        self,
        redis: aioredis.Redis,
        events: EventLog | None,
        *,
        interval_s: float,
        misses: int,
        hung_s: float = 0.5,
        key: str = "",
        host: str = "127.0.0.1",
        port: int = 0,
        advertise_host: str = "",
    ) -> None:
        """`key`: the internal key pulses are signed with; `host`/`port`: where the pulse socket binds
        (`port` taken: any free one); `advertise_host`: the host senders reach it by (default `host`)."""
        self.redis = redis
        self.interval_s = interval_s
        self.timeout_s = misses * interval_s
        self.late_s = late_after_s(interval_s, misses)
        self.misses = misses
        self.hung_s = max(hung_s, self.timeout_s)
        self.probe_timeout_s = max(2 * interval_s, 0.01)
        # worker -> (the last pulse heard, when a probe first found its port accepting in that silence)
        self.suspects: dict[str, tuple[float, float]] = {}
        self.me = f"detector-{uuid.uuid4().hex[:8]}"
        self.heard: dict[str, float] = {}  # worker -> monotonic time its latest pulse arrived
        self.incarnations: dict[str, str] = {}
        self.addresses: dict[str, str] = {}  # worker -> the url last read from the store for it
        self.declared: dict[str, str] = {}  # worker -> incarnation this watch declared failed
        self.notices: list[FailureNotice] = []  # every notice heard, newest last (bounded)
        self.echoes = 0  # echoes sent (only while a worker is late)
        self.seal = PulseSeal(key)
        self.bind = (host, port)
        self.advertise_host = advertise_host or host
        self.address = ""  # host:port senders send pulses to, once bound
        self.inbox: PulseInbox | None = None
        self._transport: asyncio.DatagramTransport | None = None
        self._echo_seq = 0
        self._timers: dict[str, asyncio.TimerHandle] = {}  # worker -> when it turns late
        self._someone_late = asyncio.Event()
        self._checking = False
        self._tasks: list[asyncio.Task[None]] = []
        self._side: set[asyncio.Task[None]] = set()  # checks and records started from a datagram
        self._subscribed = asyncio.Event()
        self.records = FailureRecords(redis, events, self.me)

    async def start(self) -> None:
        self._tasks.append(asyncio.create_task(self._listen(), name="failure-watch"))
        await asyncio.wait_for(self._subscribed.wait(), timeout=10)
        if self.interval_s <= 0:
            return
        if not self.seal.keyed:
            log.warning("no internal key: the failure watch cannot verify pulses and hears none")
            return
        self._transport, self.inbox = await open_inbox(*self.bind, self.seal, self.on_pulse)
        port = self._transport.get_extra_info("sockname")[1]
        self.address = listener_address(self.advertise_host, port)
        await self._advertise()  # senders read it within a second
        self._tasks.append(asyncio.create_task(self._keep_advertising(), name="failure-watch-advertise"))
        self._tasks.append(asyncio.create_task(self._echo(), name="failure-watch-echo"))

    async def stop(self) -> None:
        """Cancel the listener and the echo, waiting for them at most a few seconds: a subscription's
        close can hang on a connection Redis stopped answering, and stopping must not."""
        for task in self._tasks:
            task.cancel()
        for timer in self._timers.values():
            timer.cancel()
        self._timers = {}
        tasks = [*self._tasks, *self._side]
        for task in self._side:
            task.cancel()
        if tasks:
            _, stuck = await asyncio.wait(tasks, timeout=STOP_WAIT_S)
            for task in stuck:
                log.warning("failure watch task %s did not stop within %.0f s", task.get_name(), STOP_WAIT_S)
        self._tasks = []
        if self._transport is not None:
            self._transport.close()
            self._transport = None
            with contextlib.suppress(Exception):  # senders stop sending here within its TTL anyway
                await asyncio.wait_for(self.redis.zrem(PULSE_LISTENERS, self.address), timeout=STOP_WAIT_S)

    async def _advertise(self) -> None:
        now = time.time()
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.zadd(PULSE_LISTENERS, {self.address: now + LISTENER_TTL_S})
            pipe.zremrangebyscore(PULSE_LISTENERS, "-inf", now)  # watches that stopped without saying so
            await pipe.execute()

    async def _keep_advertising(self) -> None:
        while True:
            await asyncio.sleep(LISTENER_RENEW_S)
            try:
                await self._advertise()
            except Exception as exc:  # Redis away: senders keep the address for LISTENER_TTL_S
                log.debug("advertising the pulse address failed: %s", exc)

    def _spawn(self, work: Any, name: str) -> None:
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._side.add(task)
        task.add_done_callback(self._side_done)

    def _side_done(self, task: asyncio.Task[None]) -> None:
        """A check or record that failed (Redis away, a connection it closed) is retried by the next
        echo or pulse; say so rather than leave an exception nobody retrieves."""
        self._side.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.warning("failure watch %s failed: %r", task.get_name(), exc)

    def _arm(self, worker: str) -> None:
        """(Re)set `worker`'s lateness timer. The loop wakes for a worker only once it is late: a pulse
        moves its timer (no wake-up for that), where looking every interval would wake this process 40
        times a second on the cores that serve queries whether or not anyone is late."""
        timer = self._timers.get(worker)
        if timer is not None:
            timer.cancel()
        self._timers[worker] = asyncio.get_running_loop().call_later(self.late_s, self._late, worker)

    def _late(self, worker: str) -> None:
        heard = self.heard.get(worker)
        if heard is None:  # declared, or left
            self._timers.pop(worker, None)
            return
        # A loop's timers may fire a little early (uvloop: a millisecond clock, read once per turn),
        # and the echo loop judges lateness by `time.monotonic()`: not late by that yet, wait the rest.
        # Setting the event too early would have the echo loop clear it, and nothing would set it again.
        early_s = heard + self.late_s - time.monotonic()
        if early_s >= 0:
            self._timers[worker] = asyncio.get_running_loop().call_later(early_s + 0.001, self._late, worker)
            return
        self._timers.pop(worker, None)
        self._someone_late.set()

    async def _echo(self) -> None:
        while True:
            await self._someone_late.wait()
            # Only while a worker is late: the others' pulses prove the socket meanwhile, and an echo
            # is a send and a delivery on the cores that serve queries. Every interval, not more often:
            # checking at half intervals would find a silence at most half an interval sooner
            # (detection stays within 3 intervals + a probe).
            if not late(self.heard, now=time.monotonic(), after_s=self.late_s):
                self._someone_late.clear()  # it pulsed again, or it was declared
                continue
            if self._transport is not None:
                self.echoes += 1
                self._echo_seq += 1
                echo = Pulse(self.me, repr(time.monotonic()), seq=self._echo_seq)
                try:
                    self._transport.sendto(self.seal.seal(echo), self._transport.get_extra_info("sockname"))
                except OSError as exc:  # no echo: nobody is declared meanwhile
                    log.debug("failure watch echo failed: %s", exc)
            await asyncio.sleep(self.interval_s)

    async def _listen(self) -> None:
        await keep_subscribed(
            self.redis,
            [FAILURES_CHANNEL, RECOVERIES_CHANNEL],
            self._on_message,
            what="failure watch",
            on_subscribed=self._on_subscribed,
        )

    async def _on_subscribed(self, n: int) -> None:
        self._subscribed.set()  # first: `start` does not wait on the records below (the database's)
        if n == 1:  # declared while no planner was there to hear it (each is recorded once)
            try:
                for notice in await all_declared(self.redis):
                    await self.on_notice(notice)
            except Exception as exc:  # the next start looks again; detection goes on meanwhile
                log.warning("recording the failures declared before this watch started failed: %s", exc)
        if n > 1:  # the notices published while the subscription was away: recorded all the same
            for notice in await declared_notices(self.redis, dict(self.incarnations)):
                await self.on_notice(notice)

    async def _on_message(self, channel: bytes, data: bytes) -> None:
        try:
            if channel == FAILURES_CHANNEL.encode():
                await self.on_notice(FailureNotice.decode(data))
            else:
                await self.on_recovery(Recovery.decode(data))
        except (ValueError, TypeError, KeyError) as exc:
            log.warning("ignoring a malformed message on %s: %s", channel.decode(), exc)

    def on_pulse(self, pulse: Pulse, now: float) -> None:
        """A verified pulse (`PulseInbox`), at `now`: a few dictionary writes, on the loop, per datagram;
        what needs Redis or a probe runs as a task of its own."""
        if pulse.worker == self.me:
            if not self._checking:  # one check at a time: the next echo starts the next
                self._checking = True
                self._spawn(self._check(float(pulse.incarnation)), "failure-watch-check")
            return
        if pulse.worker.startswith("detector-"):
            return  # another watch's echo (it never comes here, but a sender may be misconfigured)
        if pulse.state == "leaving":
            self.heard.pop(pulse.worker, None)
            self.addresses.pop(pulse.worker, None)
            return
        if self.declared.get(pulse.worker) == pulse.incarnation:
            del self.declared[pulse.worker]
            self._spawn(self._revived(pulse), "failure-watch-revived")
        self.heard[pulse.worker] = now
        if self.incarnations.get(pulse.worker) != pulse.incarnation:  # a worker new to this watch
            self.incarnations[pulse.worker] = pulse.incarnation
            self._spawn(self._learn_address(pulse.worker), "failure-watch-address")
        self._arm(pulse.worker)

    async def _revived(self, pulse: Pulse) -> None:
        """Declared failed (by any detector), yet it pulses: a false alarm (a stall longer than the
        timeout, a push connection cut while the process lives). Its next heartbeat puts it back in the
        store; clearing the claim lets a later real failure of it be declared again."""
        await self.redis.delete(claim_key(pulse.worker, pulse.incarnation))
        log.warning("worker %s pulses again after being declared failed", pulse.worker)
        await self.records.revived(pulse.worker, pulse.incarnation)

    async def _check(self, echo_sent_at: float) -> None:
        try:
            await self._check_silent(echo_sent_at)
        finally:
            self._checking = False

    async def _check_silent(self, echo_sent_at: float) -> None:
        now = time.monotonic()
        due = [
            w
            for w in silent(self.heard, echo_sent_at=echo_sent_at, timeout_s=self.timeout_s)
            if (s := self.suspects.get(w)) is None or s[0] != self.heard[w] or now - s[1] >= self.hung_s
        ]
        if not due:
            return
        before = {w: self.heard[w] for w in due}
        probes = await asyncio.gather(*(self._probe(w) for w in due))
        for worker, probe in zip(due, probes, strict=True):
            last = self.heard.get(worker)
            if last != before[worker] or last is None:
                continue  # a notice or a pulse came while probing
            now = time.monotonic()
            quiet_s = now - last
            # Hung counts from the first probe that found its port accepting, not from its last pulse:
            # after a pause of the whole host (every process stopped, this one too), this watch's echo
            # can come back before a worker's first pulse, long after its last one.
            suspect = self.suspects.get(worker)
            since = suspect[1] if suspect is not None and suspect[0] == last else now
            why = verdict(now - since, probe, hung_s=self.hung_s)
            if why is None:
                if since == now:
                    self.suspects[worker] = (last, now)
                    metrics.FAILURES_SUSPECTED.inc()
                    log.info(
                        "worker %s silent for %.0f ms but its port accepts: stalled", worker, quiet_s * 1e3
                    )
                continue
            await self._declare(worker, last, quiet_s, why)

    async def _probe(self, worker: str) -> Probe | None:
        """Try a connection to the worker's port (None: no address known for it)."""
        url = await self._address(worker)
        return await probe_port(url, self.probe_timeout_s) if url else None

    async def _address(self, worker: str) -> str:
        """The worker's address from the store, else the one last read there. Its entry there lives
        `heartbeat_ttl_s`: after a pause of the whole host longer than that (every process stopped, Redis
        not) the entry is gone until its next heartbeat, and the echo can come back first. The address a
        worker had is still the one to probe: it accepts (paused) or refuses (dead)."""
        url = store.text(await self.redis.hget(store.worker_key(worker), "url") or b"")
        if url:
            self.addresses[worker] = url
        return url or self.addresses.get(worker, "")

    async def _learn_address(self, worker: str) -> None:
        with contextlib.suppress(Exception):  # read again when it is probed
            await self._address(worker)

    async def _declare(self, worker: str, last: float, quiet_s: float, why: str) -> None:
        self.heard.pop(worker, None)
        if self.inbox is not None:
            self.inbox.forget(worker)  # its pulses signed ahead: a later one is checked afresh
        self.suspects.pop(worker, None)
        incarnation = self.incarnations.pop(worker, "")
        self.addresses.pop(worker, None)
        notice = FailureNotice(
            worker=worker,
            reason=(
                f"no pulse for {quiet_s * 1000:.0f} ms ({self.misses} missed at "
                f"{self.interval_s * 1000:.0f} ms) while the channel carried others, and {why}"
            ),
            detected_at=time.time(),
            last_seen_at=time.time() - (time.monotonic() - last),
            detector="planner",
            incarnation=incarnation,
        )
        if await declare_failure(self.redis, notice) is not None:
            self.declared[worker] = incarnation
            log.warning("worker %s declared failed: %s", worker, notice.reason)

    async def on_notice(self, notice: FailureNotice) -> None:
        self.heard.pop(notice.worker, None)
        if notice.incarnation:  # its pulses after this notice would mean a false alarm
            self.declared[notice.worker] = notice.incarnation
        self.notices = [*self.notices[-99:], notice]
        await self.records.declared(notice)

    async def on_recovery(self, recovery: Recovery) -> None:
        await self.records.recovered(recovery)
