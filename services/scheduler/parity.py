"""Serving with parity models (ParM) in the dispatcher: for a model whose app has parity redundancy and
whose parity model is published (`SnapshotCache.parity`), consecutive queries form coding groups of k
(`infaas.policy.parity.GroupFormer`, open at most `GROUP_BOUND_S`); each member is dispatched as usual,
and once a group is full its parity query (the sum of the members' inputs) goes to the parity model's
instance. A member is answered by whichever comes first: its own answer, or its reconstruction
F_P(P) − Σ others once the parity output and the other k−1 answers are in.

The dispatcher calls `ParityCoder.serve` only for such models (one dict look-up per query otherwise). A
reconstructed answer says `reconstructed: true`, is counted (`infaas_scheduler_parity_total`), and is
never put in the prediction cache (only a member's own answer is, inside the dispatcher's `_run`). The
member's own dispatch goes on as it would without parity (re-sends after a lost worker included) and is
cancelled when the reconstruction wins: a lost instance's queries are reconstructed when that is faster.

The parity instances are the planner's (services/planner/loops/parity.py: ⌈m/k⌉ for m instances of the
model, on workers without the model); until one is active the model's queries are not coded.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np

from infaas.clients.envelope import Answer, Query
from infaas.policy.parity import Array, CodingGroup, GroupFormer, encode
from infaas.policy.selection import Decision
from infaas.schemas.variants import VariantProfile
from services.scheduler import metrics
from services.scheduler.answers import answer
from services.scheduler.sending import SPREAD, Sender
from services.scheduler.snapshot import SnapshotCache

log = logging.getLogger("infaas.scheduler")

GROUP_BOUND_S = 0.05
"""A coding group is open at most this long from its first member: a query arriving later starts a new
group and leaves the open one not coded (no parity query; its members get their own answers only). At
20 queries/s and more a group of k ≤ 4 fills within it; below that, stragglers cost little."""

CODED, UNCODED, RECONSTRUCTED = (metrics.PARITY.labels(o) for o in ("coded", "uncoded", "reconstructed"))


@dataclass(eq=False)
class _Member:
    """One query of a coding group: its own output once answered, its reconstruction's future."""

    inputs: Array
    recon: asyncio.Future[Array]
    own: Array | None = None
    group: _Group | None = None
    index: int = 0


@dataclass(eq=False)
class _Group:
    coding: CodingGroup
    members: list[_Member]
    parity_vid: str
    sent_at: float = field(default_factory=time.perf_counter)

    def settle(self, decoded: list[tuple[int, Array]]) -> None:
        for j, output in decoded:
            future = self.members[j].recon
            if not future.done():
                future.set_result(output)


class ParityCoder:
    def __init__(self, *, snapshot: SnapshotCache, sender: Sender, timeout_s: float) -> None:
        self.snapshot = snapshot
        self.sender = sender
        self.timeout_s = timeout_s
        self._formers: dict[str, GroupFormer] = {}
        self._open: dict[str, list[_Member]] = {}  # model → members of its open group, in order
        self._spread: dict[str, set[str]] = {}  # model → where its open group's members were pushed
        self._tasks: set[asyncio.Task[None]] = set()

    async def serve(
        self,
        parity: VariantProfile,
        decision: Decision,
        query: Query,
        arrived: float,
        run: Callable[[], Awaitable[Answer]],
    ) -> Answer:
        """Answer one query of a model with a parity model: its own dispatch (`run`) raced against its
        reconstruction."""
        if len(query.tensors) != 1 or not self._active(parity):
            UNCODED.inc()
            return await run()
        member = _Member(next(iter(query.tensors.values())), asyncio.get_running_loop().create_future())
        spread = self._join(parity, member, time.perf_counter())
        token = SPREAD.set(spread)  # the task below copies this context: its target avoids the group's
        try:
            own = asyncio.ensure_future(run())
        finally:
            SPREAD.reset(token)
        try:
            await asyncio.wait((own, member.recon), return_when=asyncio.FIRST_COMPLETED)
            if own.done() and own.exception() is None:
                result = own.result()
                self._answered(member, result, decision)
                return result
            if not member.recon.done():  # its own dispatch failed: a reconstruction may still come
                deadline = arrived + (
                    query.requirements.slo_ms / 1000
                    if query.requirements.slo_ms is not None
                    else self.timeout_s
                )
                try:
                    left = max(0.0, deadline - time.perf_counter())
                    await asyncio.wait_for(asyncio.shield(member.recon), left)
                except TimeoutError:
                    return own.result()  # raises its error
            return self._reconstructed(member, parity, decision, query, arrived)
        finally:
            if not own.done():
                own.cancel()  # the reconstruction answered: its own dispatch is not waited for
            elif not own.cancelled():
                own.exception()  # retrieved: a lost race must not log "never retrieved"
            if not member.recon.done():
                member.recon.cancel()

    def _active(self, parity: VariantProfile) -> bool:
        """Whether an instance of the parity model is active (the planner loads them:
        services/planner/loops/parity.py)."""
        instances = self.snapshot.snapshot.instances
        return any(i.variant_id == parity.id and i.state == "active" for i in instances)

    def _join(self, parity: VariantProfile, member: _Member, now: float) -> set[str]:
        """Add the member to its model's open group; a group that fills sends its parity query. Returns
        the push addresses the group's members went to (`sending.SPREAD`), shared by the group."""
        model = parity.model
        former = self._formers.get(model)
        if former is None or former.k != parity.parity_k:
            former = self._formers[model] = GroupFormer(k=parity.parity_k, bound_s=GROUP_BOUND_S)
            self._open[model] = []
        uncoded = former.uncoded
        full = former.add(id(member), member.inputs, now)
        if former.uncoded > uncoded:  # the open group did not fill in time: its members are not coded
            UNCODED.inc(former.uncoded - uncoded)
            self._open[model] = []
        if not self._open[model]:
            self._spread[model] = set()
        spread = self._spread[model]
        if full is None:
            self._open[model].append(member)
            return spread
        members = [*self._open[model], member]
        self._open[model] = []
        group = _Group(CodingGroup(parity.parity_k), members, parity.id)
        CODED.inc(len(members))
        for index, m in enumerate(members):
            m.group, m.index = group, index
            if m.own is not None:
                group.settle(group.coding.arrive(index, m.own))
        task = asyncio.create_task(self._send_parity(parity, group), name="parity-query")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return spread

    async def _send_parity(self, parity: VariantProfile, group: _Group) -> None:
        decision = Decision(parity, "active", None, "parity query")
        try:
            inputs = encode([m.inputs for m in group.members])
            name = parity.input_names[0]
            reply, outputs = await self.sender.send(
                decision,
                self.sender.target(decision),
                {name: inputs},
                rows=int(inputs.shape[0]) if inputs.ndim else 1,
                request_id=f"parity-{id(group):x}",
                slo_ms=None,
                drop_after=None,
                give_up_at=time.perf_counter() + self.timeout_s,
            )
            if reply.outcome != "answered":
                raise RuntimeError(f"{reply.outcome}: {reply.error}")
            output = np.asarray(outputs[parity.output_names[0]], dtype=np.float32)
        except Exception as exc:  # the members are answered by their own outputs
            metrics.PARITY_QUERIES.labels("failed").inc()
            log.warning("a parity query to %s failed: %s", parity.id, exc)
            return
        metrics.PARITY_QUERIES.labels("answered").inc()
        group.settle(group.coding.arrive_parity(output))

    def _answered(self, member: _Member, result: Answer, decision: Decision) -> None:
        """A member's own answer: it may complete its group's decoding of another member."""
        if result.default or result.cached:
            return
        output = result.outputs.get(decision.variant.output_names[0])
        if output is None:
            return
        member.own = np.asarray(output, dtype=np.float32)
        if member.group is not None:
            member.group.settle(member.group.coding.arrive(member.index, member.own))

    def _reconstructed(
        self, member: _Member, parity: VariantProfile, decision: Decision, query: Query, arrived: float
    ) -> Answer:
        RECONSTRUCTED.inc()
        group = member.group
        k = group.coding.k if group is not None else parity.parity_k
        reason = (
            f"{decision.reason}; reconstructed from the parity model {parity.id} and the other {k - 1} "
            f"member(s) of its coding group of {k}: its own answer had not come "
            f"after {(time.perf_counter() - arrived) * 1000:.1f} ms"
        )
        out = answer(
            decision,
            {decision.variant.output_names[0]: member.recon.result()},
            query.request_id,
            arrived,
            query.requirements,
            queue_ms=0.0,
            compute_ms=0.0,
            worker="parity",
            cached=False,
            reason=reason,
        )
        return out._replace(reconstructed=True)

    async def aclose(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
