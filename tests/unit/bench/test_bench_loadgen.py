"""The pure parts of `bench.common.loadgen`: Poisson schedules, percentiles, request encoding, response
parsing (fed from memory, no socket)."""

from __future__ import annotations

import asyncio
import math
import statistics

import numpy as np
import pytest

from bench.common import loadgen as lg


# ------------------------------------------------------------------------------------------- schedules
def test_schedule_is_reproducible_sorted_and_inside_the_duration() -> None:
    a = lg.poisson_schedule(500, 4.0, seed=3)
    assert a == lg.poisson_schedule(500, 4.0, seed=3)
    assert a != lg.poisson_schedule(500, 4.0, seed=4)
    assert a == sorted(a)
    assert all(0 < t < 4.0 for t in a)


def test_schedule_has_the_rate_and_exponential_gaps() -> None:
    rate, duration = 1000.0, 20.0
    times = lg.poisson_schedule(rate, duration, seed=11)
    # Poisson count: mean rate × duration, standard deviation sqrt of that (20,000 ± 141)
    assert abs(len(times) - rate * duration) < 5 * math.sqrt(rate * duration)
    gaps = np.diff(times)
    assert statistics.fmean(gaps) == pytest.approx(1 / rate, rel=0.03)
    # exponential: standard deviation equals the mean (a fixed-interval schedule would have 0)
    assert float(np.std(gaps)) == pytest.approx(1 / rate, rel=0.05)


def test_schedule_limits_and_empty_cases() -> None:
    assert len(lg.poisson_schedule(1000, 10, seed=1, max_requests=250)) == 250
    assert lg.poisson_schedule(0, 10, seed=1) == []
    assert lg.poisson_schedule(100, 0, seed=1) == []


# ------------------------------------------------------------------------------------------ percentiles
@pytest.mark.parametrize("q", [0, 1, 50, 90, 99, 99.9, 100])
def test_percentile_matches_numpy(q: float) -> None:
    values = list(np.random.default_rng(5).lognormal(0, 1, size=1001))
    assert lg.percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_percentile_small_and_unsorted_inputs() -> None:
    assert lg.percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert lg.percentile([1.0, 2.0], 50) == 1.5
    assert lg.percentile([7.0], 99.9) == 7.0
    assert math.isnan(lg.percentile([], 50))
    with pytest.raises(ValueError):
        lg.percentile([1.0], 101)


# --------------------------------------------------------------------------------------------- requests
def test_encode_request_has_host_headers_and_length() -> None:
    raw = lg.encode_request(
        "POST", "127.0.0.1:8080", "/v1/models/m/infer", b'{"inputs": [[1]]}', {"Authorization": "Bearer k"}
    )
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /v1/models/m/infer HTTP/1.1"
    assert b"Host: 127.0.0.1:8080" in lines
    assert b"Authorization: Bearer k" in lines
    assert b"Content-Length: 17" in lines
    assert body == b'{"inputs": [[1]]}'
    assert b"Content-Length" not in lg.encode_request("GET", "h", "/x")
    with pytest.raises(ValueError):
        lg.encode_request("GET", "h", "/x", headers={"X": "a\r\nInjected: 1"})


def test_target_parses_plain_http_urls_only() -> None:
    t = lg.Target.parse("http://127.0.0.1:19080")
    assert (t.host, t.port, t.authority) == ("127.0.0.1", 19080, "127.0.0.1:19080")
    assert lg.Target.parse("http://localhost/").port == 80
    with pytest.raises(ValueError):
        lg.Target.parse("https://127.0.0.1:443")


# -------------------------------------------------------------------------------------------- responses
def test_parse_head_reads_status_and_framing() -> None:
    head = lg.parse_head(
        b"HTTP/1.1 200 OK\r\ndate: x\r\nContent-Length: 42\r\ncontent-type: application/json\r\n\r\n"
    )
    assert (head.status, head.content_length, head.chunked, head.close) == (200, 42, False, False)
    chunked = lg.parse_head(b"HTTP/1.1 422 Unprocessable Entity\r\nTransfer-Encoding: chunked\r\n\r\n")
    assert (chunked.status, chunked.content_length, chunked.chunked) == (422, None, True)
    assert lg.parse_head(b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n").close
    assert lg.parse_head(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").close
    assert not lg.parse_head(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n").close
    assert not lg.parse_head(b"HTTP/1.1 204 No Content\r\n\r\n").has_body


@pytest.mark.parametrize(
    "head",
    [
        b"garbage\r\n\r\n",
        b"HTTP/1.1 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
    ],  # fmt: skip
)
def test_parse_head_refuses_malformed_heads(head: bytes) -> None:
    with pytest.raises(ValueError):
        lg.parse_head(head)


def _reader(data: bytes) -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    return reader


async def test_read_response_takes_back_to_back_answers_off_one_connection() -> None:
    reader = _reader(
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
        b"HTTP/1.1 422 Unprocessable Entity\r\ntransfer-encoding: chunked\r\n\r\n"
        b"4\r\nabcd\r\n3;ext=1\r\nefg\r\n0\r\nx-trailer: 1\r\n\r\n"
        b"HTTP/1.1 204 No Content\r\n\r\n"
        b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\n\r\n{}"
    )
    answers = [await lg.read_response(reader) for _ in range(4)]
    assert [(h.status, body) for h, body in answers] == [
        (200, b"hello"),
        (422, b"abcdefg"),
        (204, b""),
        (500, b"{}"),
    ]


async def test_read_response_reports_a_connection_closed_mid_answer() -> None:
    with pytest.raises(asyncio.IncompleteReadError):
        await lg.read_response(_reader(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"))
    with pytest.raises(asyncio.IncompleteReadError):
        await lg.read_response(_reader(b""))


def test_run_result_counts_outcomes() -> None:
    result = lg.RunResult(offered_rate=100.0, duration_s=1.0, elapsed_s=2.0)
    result.outcomes.update({200: 150, 422: 3, lg.TIMEOUT: 2, lg.NOT_SENT: 5})
    assert result.ok == 150
    assert result.sent == 155
    assert result.achieved_rate == 75.0
    assert result.errors() == {"422": 3, "not sent": 5, "timeout": 2}


def test_unique_values_have_one_width_and_stay_distinct_as_float32() -> None:
    samples = [0, 1, 2, 9_999_998, 9_999_999, 5_000_000, 1234567]
    assert {len(lg.unique_value(i)) for i in samples} == {9}
    as_float32 = np.array(
        [float(lg.unique_value(i)) for i in range(0, lg.UNIQUE_VALUES, 997)], dtype=np.float32
    )
    assert len(np.unique(as_float32)) == len(as_float32)
    neighbours = np.array([float(lg.unique_value(i)) for i in range(9_999_000, 10_000_000)], dtype=np.float32)
    assert len(np.unique(neighbours)) == len(neighbours)  # spacing 1e-7 > float32's just below 1.0
    assert lg.unique_value(lg.UNIQUE_VALUES + 5) == lg.unique_value(5)
