"""Kill -9 anywhere: a seeded schedule of SIGKILLs delivered to a campaign run
through the Prefect flow (the path `make run` takes), with the campaign's
invariants checked after every kill and at the end.

The schedule picks, per generation, stages in the order they run (a stage is
found in the campaign's phase log, ``runs/<name>/phases.jsonl``) and a
fraction of the stage's length; the harness waits for the stage's start line
from the running process, sleeps that fraction of the stage's shortest finished
length in the log (or of ``EXPECTED_S``) and kills the whole process group (the
campaign, its Prefect task threads, a torchrun or ``dvc`` child). Where the
kill landed is read back from the phase log (the innermost stage the process
started and never ended). A failure prints the seed and the schedule; rerun
with ``KILLTEST_SEED=<seed>`` to replay the same schedule.

A real ``prefect server start`` (``campaign_support.prefect_server``) serves
the flow runs, so each restart skips the ephemeral API's start-up.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from campaign_support import campaign_env

STAGES = ("bootstrap", "self-play", "materialize", "snapshot", "train quantum", "publish", "resignation",
          "evaluate")
"""The stages a campaign runs, in order (snapshot runs inside materialize)."""
FIRST_GENERATION_ONLY = ("bootstrap", "self-play")
"""Targets only in generation 0: bootstrap has work only at the very start, and
later generations' self-play was mostly played beside the trainer (overlap)."""

# A stage's expected length (seconds): about its shortest on an idle 2-core
# machine, or the shortest finished one in the phase log when shorter; the kill
# comes at a seeded fraction of it. A kill that comes after its stage ended
# anyway (the stage was shorter this time) is retargeted at the same stage
# of the next generation, at half the fraction. Generation 0's self-play has
# no next generation to retry in, so its length is taken well under the
# shortest seen (0.58 s on an idle machine; a kill at 0.78 s of 1.0 s once
# came too late in CI).
EXPECTED_S = {"bootstrap": 4.0, "self-play": 0.3, "materialize": 0.1, "snapshot": 2.0, "train quantum": 2.5,
              "publish": 3.0, "resignation": 0.2, "evaluate": 1.5}
MAX_FRACTION = 0.9


@dataclass(frozen=True)
class Kill:
    """A SIGKILL `fraction` of the way through `stage` of `generation` (by the
    stage's shortest finished length in the phase log, else ``EXPECTED_S``)."""

    generation: int
    stage: str
    fraction: float

    def describe(self) -> str:
        return f"gen {self.generation} {self.stage} at {self.fraction:.2f}"


@dataclass
class Landing:
    kill: Kill
    where: str  # innermost stage open at the kill, "between stages" or "missed" (never reached)
    generation: int | None = None


@dataclass
class KillRun:
    seed: int
    schedule: list[Kill]
    landings: list[Landing] = field(default_factory=list)
    retargeted: list[Kill] = field(default_factory=list)  # kills added for a stage a kill came too late for
    launches: int = 0

    def describe(self) -> str:
        lines = [f"kill schedule (seed {self.seed}, {len(self.schedule)} kills):"]
        lines += [f"  {k.describe()}" for k in self.schedule]
        lines += [f"  {k.describe()} (retargeted)" for k in self.retargeted]
        if self.landings:
            lines.append("landed:")
            lines += [f"  {x.kill.describe()} -> {x.where}" + (f" (gen {x.generation})" if x.generation is not None
                                                                else "") for x in self.landings]
        return "\n".join(lines)

    def landed_in(self) -> set[str]:
        return {x.where for x in self.landings}


def make_schedule(seed: int, generations: int, kills: int) -> list[Kill]:
    """`kills` kills over `generations` generations, every stage at least once
    (when kills >= len(STAGES)), each generation's kills in stage order."""
    rng = random.Random(seed)
    per_gen: list[list[str]] = [[] for _ in range(generations)]
    picks = list(STAGES) * (kills // len(STAGES)) + rng.sample(STAGES, kills % len(STAGES))
    rng.shuffle(picks)
    for stage in picks:  # the generation with room for this stage, fewest kills first
        if stage in FIRST_GENERATION_ONLY:
            per_gen[0].append(stage)
            continue
        first = not any(stage in stages for stages in per_gen)
        # A stage's first kill goes where a next generation can take its retry
        # (a stage can run shorter than its last length and end before the kill).
        room = range(generations - 1) if first and generations > 1 else range(generations)
        options = [g for g in room if stage not in per_gen[g]]
        g = min(options, key=lambda g: (len(per_gen[g]), rng.random())) if options else rng.randrange(generations)
        per_gen[g].append(stage)
    schedule = []
    for g, stages in enumerate(per_gen):
        for stage in sorted(stages, key=STAGES.index):
            schedule.append(Kill(g, stage, round(rng.uniform(0.0, MAX_FRACTION), 2)))
    return schedule


class CampaignProcess:
    """`chesszero campaign run` (Prefect flow) as its own process group."""

    def __init__(self, root: Path, name: str, generations: int, api_url: str, logs: Path) -> None:
        self.root, self.name, self.generations = root, name, generations
        self.env = campaign_env(root)
        self.env.update(PREFECT_API_URL=api_url, PREFECT_SERVER_ANALYTICS_ENABLED="false", OMP_NUM_THREADS="1")
        self.logs = logs
        self.proc: subprocess.Popen | None = None
        self.count = 0

    @property
    def phase_log(self) -> Path:
        return self.root / "runs" / self.name / "phases.jsonl"

    def start(self) -> None:
        self.count += 1
        cmd = [sys.executable, "-m", "chesszero", "campaign", "run", "--preset", "smoke", "--name", self.name,
               "--root", str(self.root), "--generations", str(self.generations), "--quiet"]
        with open(self.logs / f"launch_{self.count:02d}.log", "wb") as out:
            self.proc = subprocess.Popen(cmd, env=self.env, cwd=self.root, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def kill(self) -> None:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def log_tail(self) -> str:
        return (self.logs / f"launch_{self.count:02d}.log").read_text(errors="replace")[-4000:]


def wait_for_start(camp: CampaignProcess, kill: Kill, timeout: float) -> bool:
    """Waits until the running process logs the start of the kill's stage in
    its generation: True; False when the campaign moved past it or exited."""
    from chesszero.campaign import phaselog

    order = {s: i for i, s in enumerate(STAGES)}
    deadline = time.monotonic() + timeout
    assert camp.proc is not None
    while time.monotonic() < deadline:
        for e in phaselog.read(camp.phase_log):
            if e.pid != camp.proc.pid or e.event != "start" or e.stage not in order:
                continue
            if (e.generation, e.stage) == (kill.generation, kill.stage):
                return True
            if (e.generation, order[e.stage]) > (kill.generation, order[kill.stage]):
                return False
        if camp.proc.poll() is not None:
            return False
        time.sleep(0.005)
    raise AssertionError(f"no progress towards {kill.describe()} in {timeout:.0f} s:\n{camp.log_tail()}")


def expected_length(camp: CampaignProcess, stage: str) -> float:
    """The shortest of ``EXPECTED_S`` and every finished `stage`'s length in the phase log."""
    from chesszero.campaign import phaselog

    started: dict[tuple[int, int, str], float] = {}
    length = EXPECTED_S[stage]
    for e in phaselog.read(camp.phase_log):
        key = (e.pid, e.generation, e.stage)
        if e.event == "start":
            started[key] = e.t
        elif e.stage == stage and key in started and (stage != "bootstrap" or e.t - started[key] > 1.0):
            length = min(length, e.t - started[key])  # a bootstrap with nothing to do does not count
    return length


def landing(camp: CampaignProcess) -> tuple[str, int | None]:
    from chesszero.campaign import phaselog

    assert camp.proc is not None
    stack = phaselog.open_stages(phaselog.read(camp.phase_log), camp.proc.pid)
    if not stack:
        return "between stages", None
    inner = stack[-1]
    return inner.stage, inner.generation


def run_with_kills(root: Path, name: str, generations: int, run: KillRun, api_url: str,
                   check_at_rest, timeout: float = 300.0) -> CampaignProcess:
    """Runs the campaign through the schedule's kills (checking the invariants
    after each), then once more to its end."""
    logs = root / "launch-logs"
    logs.mkdir(exist_ok=True)
    camp = CampaignProcess(root, name, generations, api_url, logs)
    camp.start()
    try:
        queue = list(run.schedule)
        while queue:
            kill = queue.pop(0)
            reached = wait_for_start(camp, kill, timeout)
            if reached:
                time.sleep(kill.fraction * expected_length(camp, kill.stage))
            if not reached or camp.proc.poll() is not None:
                run.landings.append(Landing(kill, "missed"))
                if camp.proc.poll() is not None:
                    break
                continue
            camp.kill()
            where, gen = landing(camp)
            run.landings.append(Landing(kill, where, gen))
            if kill.stage not in run.landed_in() and kill.generation + 1 < generations \
                    and kill.stage not in FIRST_GENERATION_ONLY:  # the stage was over: aim at the next one
                retry = Kill(kill.generation + 1, kill.stage, round(kill.fraction / 2, 2))
                run.retargeted.append(retry)
                queue.append(retry)
                queue.sort(key=lambda k: (k.generation, STAGES.index(k.stage)))
            check_at_rest()
            camp.start()
        assert camp.proc is not None
        try:
            camp.proc.wait(timeout=timeout * 2)
        except subprocess.TimeoutExpired:
            camp.kill()
            raise AssertionError(f"the resumed campaign did not finish:\n{camp.log_tail()}") from None
        if camp.proc.returncode != 0:
            raise AssertionError(f"the resumed campaign failed ({camp.proc.returncode}):\n{camp.log_tail()}")
    except BaseException:
        if camp.proc is not None and camp.proc.poll() is None:  # leave no campaign running behind a failure
            camp.kill()
        raise
    run.launches = camp.count
    return camp


__all__ = ["EXPECTED_S", "FIRST_GENERATION_ONLY", "STAGES", "CampaignProcess", "Kill", "KillRun", "Landing", "make_schedule", "run_with_kills"]
