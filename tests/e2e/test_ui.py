"""The admin web UI in a real headless Chromium (Debian's `chromium`, driven by Playwright), against the
whole suite as processes: sign-in, every main page showing the system's real data, and screenshots
that are not blank."""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson
import pytest
from PIL import Image
from playwright.sync_api import Browser, BrowserContext, Locator, Page, sync_playwright

from gateway.ui.timeline import MAX_VARIANT_SERIES
from infaas_cli.demo_models import DemoModel
from tests.e2e.conftest import RunningSuite
from tests.polling import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.parametrize("running", ["postgres"], indirect=True)]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not shutil.which(CHROMIUM):
        # .ci/run installs Debian's chromium: in CI its absence is a failure, elsewhere a skip.
        message = f"{CHROMIUM} is missing: apt-get install -y chromium"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture
def context(browser: Browser, running: RunningSuite) -> Iterator[BrowserContext]:
    ctx = browser.new_context(base_url=running.url, viewport={"width": 1280, "height": 900})
    # Nothing outside the suite may be fetched: every other request fails the test.
    outside: list[str] = []

    def guard(route: Any) -> None:
        if route.request.url.startswith(running.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    ctx.route("**/*", guard)
    yield ctx
    ctx.close()
    assert not outside, f"the UI fetched outside the gateway: {outside}"


def sign_in(page: Page, key: str) -> None:
    page.goto("/ui/login")
    page.fill("input[name=key]", key)
    with page.expect_navigation():
        page.click("button[type=submit]")


def blankness(png: bytes) -> tuple[float, float]:
    """(share of pixels that differ from the most common colour, pixel standard deviation)."""
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).reshape(-1, 3)
    colours, counts = np.unique(pixels, axis=0, return_counts=True)
    background = colours[counts.argmax()]
    off_background = float(np.any(pixels != background, axis=1).mean())
    return off_background, float(pixels.std())


def assert_rendered(page: Page, name: str, tmp_path: Any) -> None:
    png = page.screenshot(full_page=True)
    (tmp_path / f"{name}.png").write_bytes(png)
    share, spread = blankness(png)
    assert share > 0.03 and spread > 10, f"{name} looks blank: {share:.3f} non-background, std {spread:.1f}"


def send_queries(running: RunningSuite, key: str, model: DemoModel, n: int) -> list[dict[str, Any]]:
    """Distinct rows (so the prediction cache does not answer them) through the public API."""
    x = np.load(model.validation_path)["x"]
    answers = []
    with running.client(key) as client:
        for i in range(n):
            response = client.post(
                "/v1/apps/shop/infer", json={"inputs": x[i : i + 1].tolist(), "latency_ms": 50}
            )
            assert response.status_code == 200, response.text
            answers.append(response.json())
    return answers


def load_window(page: Page) -> Locator:
    """The load page's cards over a window (none while it only has "since start" to show), freshly loaded."""
    page.goto("/ui/load")
    return page.locator("[data-window=window]")


def is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def api_instances(running: RunningSuite) -> set[tuple[str, str, str]]:
    """(worker, variant, state) of every instance, as the API says now."""
    return {
        (w["id"], vid, state)
        for w in running.admin.get("/v1/workers").json()
        for vid, state in w["instances"].items()
    }


def test_sign_in_is_required_and_only_the_admin_key_opens_the_ui(
    context: BrowserContext, running: RunningSuite, shop: dict[str, str]
) -> None:
    page = context.new_page()
    page.goto("/ui/models")
    assert page.url.endswith("/ui/login")
    sign_in(page, "not-a-key")
    assert "unknown API key" in page.inner_text(".error")
    sign_in(page, shop["key"])
    assert "app key" in page.inner_text(".error")
    assert not context.cookies()

    sign_in(page, running.settings.admin_key)
    assert page.url.endswith("/ui/")
    (cookie,) = context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/ui"
    # The cookie holds a random session id, never the key.
    assert cookie["name"] == "infaas_session" and running.settings.admin_key not in cookie["value"]
    assert running.settings.admin_key not in page.url
    # Script cannot read the key (HttpOnly), and the page says it may not run any.
    assert page.evaluate("document.cookie") == ""
    response = page.goto("/ui/apps")
    assert response is not None and "script-src" not in response.headers["content-security-policy"]
    assert "default-src 'none'" in response.headers["content-security-policy"]
    # Apps and their keys: listed by prefix, never the key itself.
    apps_text = page.inner_text("main")
    assert shop["key"][:8] in apps_text and shop["key"] not in apps_text

    with page.expect_navigation():
        page.click("text=Sign out")
    assert page.url.endswith("/ui/login") and not context.cookies()
    page.goto("/ui/workers")
    assert page.url.endswith("/ui/login")
    # The signed-out session is revoked on the server: its cookie put back opens nothing.
    context.add_cookies([cookie])
    page.goto("/ui/workers")
    assert page.url.endswith("/ui/login")


def test_pages_show_the_systems_real_data(
    context: BrowserContext,
    running: RunningSuite,
    shop: dict[str, str],
    demo_models: list[DemoModel],
    tmp_path: Any,
) -> None:
    answers = send_queries(running, shop["key"], demo_models[0], 12)
    served = {a["variant"] for a in answers}
    workers = running.admin.get("/v1/workers").json()
    variants = running.admin.get("/v1/models/small/variants").json()
    page = context.new_page()
    sign_in(page, running.settings.admin_key)

    # Overview: models, workers and load at a glance.
    text = page.inner_text("main")
    assert "small" in text and "cnn" in text
    assert all(w["id"] in text for w in workers)
    assert_rendered(page, "overview", tmp_path)

    page.goto("/ui/apps")
    rows = page.inner_text("table")
    assert "shop" in rows and "other" in rows and "best_effort" in rows

    page.goto("/ui/models")
    rows = page.inner_text("table")
    assert "small" in rows and "cnn" in rows and "ready" in rows

    # One model: every variant listed, and both charts drawn from the profiles.
    page.goto("/ui/models/small")
    table = page.inner_text("table.variants")
    assert all(v["id"] in table for v in variants)
    plotted = [v for v in variants if v["status"] == "ready"]
    assert len(plotted) >= 10
    marks = page.locator("#latency-accuracy circle.point")
    assert marks.count() == len(plotted)
    assert page.locator("#latency-accuracy circle.point.muted").count() == sum(
        v["dominated"] for v in plotted
    )
    titles = page.locator("#latency-accuracy circle.point title").all_text_contents()
    labels = {t.split(":")[0] for t in titles}
    assert labels == {v["id"].removeprefix("small.") for v in plotted}
    assert page.locator("#latency-batch polyline.series").count() >= 1
    assert page.locator("#latency-batch circle.point").count() >= 4
    assert_rendered(page, "model", tmp_path)

    # Workers and the instances the queries loaded, with their states.
    # The planner may load and unload instances meanwhile: compare with the API read around the page.
    for _ in range(10):
        before = api_instances(running)
        page.goto("/ui/workers")
        shown = {tuple(r.split("\t")[:3]) for r in page.inner_text("table.instances tbody").splitlines()}
        if before == api_instances(running):
            break
    assert before and shown == before
    # Each instance's concurrency (batches at once) as its heartbeat reports it: a number from 1 up.
    header = [h.strip() for h in page.locator("table.instances thead th").all_inner_texts()]
    column = header.index("concurrency") + 1
    cells = page.locator(f"table.instances tbody tr td:nth-child({column})").all_inner_texts()
    assert cells and all(c.strip().isdigit() and int(c) >= 1 for c in cells), cells
    assert all(w["id"] in page.inner_text("table.workers") for w in workers)
    assert_rendered(page, "workers", tmp_path)

    # Load: a second visit after more queries shows the window's throughput and latency.
    page.goto("/ui/load")
    since_start = page.locator("[data-window=since-start] [data-metric=queries]").first.inner_text()
    assert int(since_start.replace(",", "")) >= len(answers)
    more = send_queries(running, shop["key"], demo_models[0], 8)
    # The window differences this visit against a scrape at least 1 s older (ScrapeHistory.min_window_s):
    # revisit until one is.
    wait_for(lambda: load_window(page).count() == 1, what="the load page's window", timeout_s=30, every_s=0.2)
    window = page.locator("[data-window=window]")
    assert int(window.locator("[data-metric=queries]").inner_text().replace(",", "")) >= len(more)
    # numbers as the page writes them: 1,750.00 over a thousand
    assert float(window.locator("[data-metric=throughput]").inner_text().replace(",", "")) > 0
    assert float(window.locator("[data-metric=p99]").inner_text().replace(",", "")) > 0
    assert all(vid in page.inner_text("main") for vid in served | {a["variant"] for a in more})

    # Charts over the last minutes, from the gateway's sampler (a point every 5 s): once two samples
    # are in, queries/s, p50/p99, misses and shed, and instances per variant, drawn on the server.
    def charted() -> bool:
        page.goto("/ui/load")
        return page.locator("#load-throughput polyline.series").count() == 1

    wait_for(charted, what="the load charts' first point", timeout_s=60, every_s=1.0)
    assert page.locator("#load-latency svg.chart").count() == 1
    assert page.locator("#load-misses svg.chart").count() == 1
    legend = page.locator("#load-instances svg text").all_text_contents()
    lines = {
        t for t in legend if "." in t and not is_number(t)
    }  # variant ids; the rest name the axes or ticks
    # The variants that answered, each a line; the chart keeps the variants with the most instances, and
    # other tests of this shared suite may hold more of them.
    assert served & lines or len(lines) == MAX_VARIANT_SERIES, legend
    assert page.locator("#load-instances polyline.series").count() >= 1
    assert_rendered(page, "load", tmp_path)
    # The services run in Prometheus multiprocess mode: their values are in the launcher-made folders.
    assert list((running.settings.var_dir / "metrics" / "gateway").glob("*.db"))
    assert list((running.settings.var_dir / "metrics" / "executor").glob("*.db"))


def test_events_and_jobs_pages_show_what_the_api_has(
    context: BrowserContext, running: RunningSuite, shop: dict[str, str], demo_models: list[DemoModel]
) -> None:
    del shop
    x = np.load(demo_models[0].validation_path)["x"][:200]
    buffer = io.BytesIO()
    np.save(buffer, x)
    submitted = running.admin.post(
        "/v1/jobs",
        files={"input": ("input.npy", buffer.getvalue(), "application/octet-stream")},
        data={"metadata": orjson.dumps({"model": "small", "chunk_rows": 50}).decode()},
    )
    assert submitted.status_code in (200, 201, 202), submitted.text
    job_id = submitted.json()["id"]
    # a finished job's row is stable while the page is compared
    wait_for(
        lambda: running.admin.get(f"/v1/jobs/{job_id}").json()["state"] in ("succeeded", "failed"),
        what="the job finished",
        timeout_s=120,
    )
    page = context.new_page()
    sign_in(page, running.settings.admin_key)
    for name in ("events", "jobs"):
        # The planner may add events meanwhile: compare with the API read on both sides of the page.
        for _ in range(10):
            api = running.admin.get(f"/v1/{name}")
            response = page.goto(f"/ui/{name}")
            if api.content == running.admin.get(f"/v1/{name}").content:
                break
        assert response is not None and response.status == 200
        if api.status_code != 200:
            assert str(api.status_code) in page.inner_text(f"[data-unavailable={name}]")
            continue
        body = api.json()
        items = body["events"] if isinstance(body, dict) else body
        table = page.inner_text(f"table.{name}")
        assert page.locator(f"table.{name} tbody tr").count() == max(1, len(items))
        for item in items[:20]:
            assert str(item["id"]) in table
            for key in ("action", "reason", "state"):
                if item.get(key):
                    assert str(item[key]) in table
    job = next(j for j in items if j["id"] == job_id)
    row = page.locator("table.jobs tbody tr", has_text=job_id)
    assert row.locator("progress").get_attribute("max") == str(job["rows_total"]) == "200"
    assert row.locator("progress").get_attribute("value") == str(job["rows_done"])
    assert f"{job['rows_done']} / 200 rows" in row.inner_text() and job["state"] in row.inner_text()
