#!/usr/bin/env bash
# The GPU check (issue 13): on a machine with one or more NVIDIA GPUs, in under
# 8 minutes, build the project, run the GPU-marked tests, a short paper-size
# training quantum on the GPU(s), publish and gate an artifact with each GPU
# backend available, and measure self-play searches/s against pure inference
# throughput of the same model and batch, also with 1, 2 and 4 actors sharing
# cuda:0 (the GPU-marked tests check that two actors on one GPU play side by
# side what each plays alone); one JSON file of results.
#
#   scripts/gpu_check.sh [OUT.json]        # default reports/gpu/gpu_check.json
#
# UNVERIFIED: written on machines without a GPU and never run. Each step has
# its own time limit and exit status in the JSON; the script exits 1 when any
# step failed, 2 when no NVIDIA GPU is visible.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-reports/gpu/gpu_check.json}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
START=$(date +%s)
PY=.venv/bin/python

if ! nvidia-smi -L >"$WORK/gpus.txt" 2>&1; then
  echo "gpu_check: no NVIDIA GPU visible (nvidia-smi -L failed)" >&2
  exit 2
fi
cat "$WORK/gpus.txt"

step() {  # step NAME SECONDS CMD... : run, keep the log and exit status
  local name=$1 limit=$2; shift 2
  echo "== $name (limit ${limit}s)"
  local t0; t0=$(date +%s)
  timeout "$limit" "$@" >"$WORK/$name.log" 2>&1
  local rc=$?
  echo "$rc $(( $(date +%s) - t0 ))" >"$WORK/$name.rc"
  tail -n 5 "$WORK/$name.log"
  echo "   exit $rc"
}

# 1. build (the native core and the editable install; the [gpu] extra when the index is reachable)
step build 110 make build
step gpu-extra 30 .venv/bin/pip install -q -e '.[gpu]'
# 2. the GPU-marked tests
step tests 110 "$PY" -m pytest -q -m gpu tests/test_gpu.py -rs --junitxml="$WORK/tests.xml"
# 3. a paper-size quantum (14x160, global batch 2048, bf16) on the GPU(s); DDP x2 with two GPUs
step train 80 "$PY" benchmarks/bench_train.py --device cuda --bf16 --size 14x160 \
  --global-batch 2048 --steps 10 --warmup 2 --threads 4 --json "$WORK/train.json"
# 4. publication + gate per GPU backend, self-play vs inference, 1/2/4 actors per GPU, INT8 vs FP16
step backends 140 "$PY" benchmarks/bench_gpu.py --seconds 2 --actors-per-gpu 1,2,4 --json "$WORK/backends.json"

mkdir -p "$(dirname "$OUT")"
python3 - "$WORK" "$OUT" "$START" <<'PY'
import json, pathlib, subprocess, sys, time
work, out, start = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3])
steps = {}
for rc in sorted(work.glob("*.rc")):
    code, seconds = rc.read_text().split()
    steps[rc.stem] = {"exit": int(code), "seconds": int(seconds),
                      "log_tail": rc.with_suffix(".log").read_text()[-2000:]}
def load(name):
    path = work / name
    return json.loads(path.read_text()) if path.exists() else None
commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
result = {"commit": commit, "gpus": (work / "gpus.txt").read_text().splitlines(),
          "seconds": int(time.time()) - start, "steps": steps,
          "training": load("train.json"), "backends": load("backends.json")}
out.write_text(json.dumps(result, indent=2) + "\n")
print(f"gpu_check: {out} ({result['seconds']} s)")
sys.exit(1 if any(s["exit"] for name, s in steps.items() if name != "gpu-extra") else 0)
PY
