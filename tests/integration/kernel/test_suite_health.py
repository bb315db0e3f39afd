"""Waiting for a suite's service to be up: a 200 to `/health` counts only from the service itself (each
answers with its name), not from another process that holds its port."""

from __future__ import annotations

import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from infaas.core.config import Settings
from infaas.processes.suite import Suite


def test_a_port_answered_by_another_service_is_not_the_service_being_up(tmp_path: Path) -> None:
    # What a planner sees whose port an executor took: the port answers 200 to /health, from the
    # executor. Waiting on the planner must not count that as the planner being up.
    class Executor(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"status":"ok","service":"executor"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Executor)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    suite = Suite(
        settings=Settings(var_dir=tmp_path, planner_port=server.server_address[1]), log_dir=tmp_path
    )
    suite.procs["planner"] = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(
            RuntimeError, match="planner did not become healthy; port .* answers as 'executor'"
        ):
            suite.wait_healthy(("planner",), timeout_s=1.0)
    finally:
        suite.procs["planner"].kill()
        suite.procs["planner"].wait()
        server.shutdown()
        server.server_close()
        thread.join()
