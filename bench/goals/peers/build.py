"""Builds each peer's virtualenv under var/peers/<peer>/venv from its pinned requirements file
(bench/goals/peers/<peer>.txt) with the ordinary pip client, and writes what was installed to
var/peers/<peer>/freeze.txt. A peer whose install fails is reported with pip's last lines, and the others
go on.

    .venv/bin/python -m bench.goals.peers.build                 # every peer
    .venv/bin/python -m bench.goals.peers.build mlserver ray    # some
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from bench.common.paths import ROOT

HERE = Path(__file__).resolve().parent
PEERS = ("fastapi", "litserve", "mlserver", "bentoml", "ray")


def build(peer: str, fresh: bool) -> tuple[bool, str]:
    home = ROOT / "var" / "peers" / peer
    venv = home / "venv"
    if fresh and venv.exists():
        subprocess.run(["rm", "-rf", str(venv)], check=True)
    home.mkdir(parents=True, exist_ok=True)
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip"]
    done = subprocess.run(
        [*pip, "install", "-q", "-r", str(HERE / f"{peer}.txt")], capture_output=True, text=True
    )
    log = "\n".join(
        line for line in (done.stdout + done.stderr).splitlines() if not line.startswith("WARNING:")
    )
    (home / "install.log").write_text(log)
    if done.returncode != 0:
        return False, "\n".join(log.splitlines()[-5:])
    freeze = subprocess.run([*pip, "freeze"], capture_output=True, text=True, check=True).stdout
    (home / "freeze.txt").write_text(freeze)
    return True, f"{len(freeze.splitlines())} packages (var/peers/{peer}/freeze.txt)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("peers", nargs="*", default=list(PEERS), help=f"some of {', '.join(PEERS)}")
    parser.add_argument("--fresh", action="store_true", help="remove an existing virtualenv first")
    args = parser.parse_args()
    unknown = set(args.peers) - set(PEERS)
    if unknown:
        parser.error(f"unknown peers: {', '.join(sorted(unknown))}")
    failed = []
    for peer in args.peers:
        start = time.monotonic()
        ok, what = build(peer, args.fresh)
        print(f"{peer}: {'ok' if ok else 'FAILED'} in {time.monotonic() - start:.0f} s: {what}", flush=True)
        if not ok:
            failed.append(peer)
    if failed:
        sys.exit(f"not built: {', '.join(failed)} (run.py skips them and says why)")


if __name__ == "__main__":
    main()
