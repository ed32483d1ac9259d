"""Time from opening the play page to the model's first move (in-browser thinking).

For each network size: a seeded random-weights network published by the real
pipeline (INT8, golden file), served by ``chesszero web --model``, opened in
fresh Chromium pages (Playwright, Debian's /usr/bin/chromium) with the model
playing White at 64 visits in the browser. Prints each load's time, the median
checked against issue 16's target (``targets.py``: ``web-first-move``, at most
2 s), and where the time goes:
the median of each of the page's milestones (``czState.marks``: seconds since
opening the page) and of the phases between them (ONNX Runtime's start from
the page script's start, the session over the model once both the runtime and
the model's bytes are there, the self-check's network pass, the search with
its share spent in the network, showing the move).

    .venv/bin/python benchmarks/bench_web.py [--sizes 2x16 4x48 6x64] [--loads 5] [--quick] [--json OUT]

``--quick``: the smallest network (2x16) and two loads, unless given.

Needs the front-end build (``make web``) and Chromium (``make system-deps``).
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import Row, report
from targets import target

ROOT = Path(__file__).resolve().parents[1]
QUICK = {"sizes": ["2x16"], "loads": 2}
FULL = {"sizes": ["2x16", "4x48", "6x64"], "loads": 5}


def _publish(size: str, out: Path) -> Path:
    import torch

    from chesszero.model import ChessNet
    from chesszero.publish import PublishSettings, load_calibration_set, publish
    from chesszero.publish.calibration import random_play_set
    from chesszero.publish.calibration_positions import DEFAULT_POSITIONS
    from chesszero.publish.quantize import QatSettings

    torch.manual_seed(0)
    net = ChessNet(size).eval()
    publish(net, out, load_calibration_set(ROOT / DEFAULT_POSITIONS, limit=64),
            settings=PublishSettings(qat=QatSettings(steps=0)), tune=random_play_set(64, seed=0))
    return out / "int8.onnx"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


MARKS = ("script", "fetched", "golden", "encoded", "runtime", "session", "checked", "searched", "shown")


def _phases(load: dict) -> dict[str, float]:
    """Durations (s) of one load's phases, from its milestones and its first move's search."""
    m = {k: v / 1000 for k, v in load["marks"].items()}
    move = load["move"]
    return {"runtime": m["runtime"] - m["script"], "session": m["session"] - max(m["runtime"], m["fetched"]),
            "check_net": m["checked"] - max(m["encoded"], m["session"]),
            "search": move["seconds"], "search_net": move["netSeconds"],
            "show": m["shown"] - m["searched"]}


def _summary(loads: list[dict]) -> dict:
    marks = {k: statistics.median(load["marks"][k] / 1000 for load in loads) for k in MARKS}
    phases = [_phases(load) for load in loads]
    return {"marks_s": {k: round(v, 3) for k, v in marks.items()},
            "phases_s": {k: round(statistics.median(p[k] for p in phases), 3) for k in phases[0]},
            "evaluations": loads[0]["move"]["evaluations"]}


def _print_summary(summary: dict) -> None:
    marks, phases = summary["marks_s"], summary["phases_s"]
    print("        milestones (median s since opening): " + " · ".join(f"{k} {v:.2f}" for k, v in marks.items()))
    print(f"        phases (median s): runtime start {phases['runtime']:.2f} · session {phases['session']:.2f} · "
          f"self-check's network pass {phases['check_net']:.2f} · search {phases['search']:.2f} "
          f"(network {phases['search_net']:.2f}, {summary['evaluations']} evaluations) · "
          f"showing the move {phases['show']:.2f}", flush=True)


def _first_moves(model: Path, loads: int, visits: int) -> list[dict]:
    from playwright.sync_api import sync_playwright

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "chesszero", "web", "--model", str(model), "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("chesszero web did not start") from None
                time.sleep(0.2)
        results = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            for _ in range(loads):
                page = browser.new_context().new_page()
                page.goto(f"http://127.0.0.1:{port}/?side=black&visits={visits}&mode=browser")
                page.wait_for_function("window.czState && (window.czState.modelMoves.length >= 1 "
                                       "|| window.czState.selfCheck === 'failed')", timeout=120_000)
                state = page.evaluate("window.czState")
                if state["selfCheck"] != "passed":
                    raise RuntimeError(f"self-check failed: {state.get('failures')}")
                page.wait_for_function("window.czState.marks.shown !== undefined", timeout=10_000)
                state = page.evaluate("window.czState")
                results.append({"at": state["modelMoves"][0]["at"] / 1000, "marks": state["marks"],
                                "move": state["modelMoves"][0]})
                page.context.close()
            browser.close()
        return results
    finally:
        server.terminate()
        server.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=None, help="network sizes (2x16 4x48 6x64)")
    ap.add_argument("--loads", type=int, default=None, help="page loads per size (5)")
    ap.add_argument("--visits", type=int, default=64)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--quick", action="store_true", help=f"reduced budgets {QUICK}")
    args = ap.parse_args()
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    goal = target("web-first-move")
    rows = []
    with tempfile.TemporaryDirectory(prefix="cz-bench-web-") as tmp:
        for size in args.sizes:
            loads = _first_moves(_publish(size, Path(tmp) / size), args.loads, args.visits)
            times = [load["at"] for load in loads]
            median = statistics.median(times)
            summary = _summary(loads)
            rows.append(Row(f"first model move, {size} (median of {len(times)} loads)", median, "s",
                            f"{args.visits} visits in the browser", None,
                            {"times_s": [round(t, 3) for t in times], **summary}, goal))
            print(f"{size:>6}: first model move {', '.join(f'{t:.2f}' for t in times)} s; median {median:.2f} s "
                  f"({'met' if goal.holds(median) else 'MISSED'}: target {goal.describe()})", flush=True)
            _print_summary(summary)
    report(f"play page: first model move at {args.visits} visits in the browser", rows, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
