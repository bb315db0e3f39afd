"""Ports for the processes a launcher starts: free, below the ephemeral range, never handed out twice."""

from __future__ import annotations

import socket

from infaas.processes.suite import _ephemeral_low, free_port


def test_ports_are_free_distinct_and_outside_the_ephemeral_range() -> None:
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    assert all(p < _ephemeral_low() for p in ports)
    for p in ports[:5]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))  # raises if something holds it


def test_consecutive_ports_are_all_free_and_reserved() -> None:
    first = free_port(consecutive=3)
    for p in range(first, first + 3):
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))
    later = {free_port() for _ in range(200)}
    assert not later & {first, first + 1, first + 2}


def test_a_port_someone_listens_on_is_never_handed_out() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        assert taken not in {free_port() for _ in range(200)}
