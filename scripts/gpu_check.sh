#!/usr/bin/env bash
# The GPU check (issue 13): on a machine with one or more NVIDIA GPUs, in under
# 8 minutes, build the project, run the GPU-marked tests, a short paper-size
# training quantum on the GPU(s), publish and gate an artifact with each GPU
# backend available, and measure self-play searches/s against pure inference
# throughput of the same model and batch, also with 1, 2 and 4 actors sharing
# cuda:0 (the GPU-marked tests check that two actors on one GPU play side by
# side what each plays alone); one JSON file of results.
#
#   scripts/gpu_check.sh [--rehearse] [--no-targets] [OUT.json]
#   (default reports/gpu/gpu_check.json; gpu_check_rehearsal.json with --rehearse)
#
# Two environments:
# - venv: the project's .venv exists (`make build` on a GPU machine with an index);
# - image: no .venv, or GPU_CHECK_PYTHON names an interpreter: a Python image that
#   already holds torch (with CUDA), onnx, onnxruntime, pybind11, scikit-build-core,
#   cmake and pytest, and cannot reach an index (the lent H200). The packages it
#   lacks come as wheels in .whl/ (scripts/gpu_wheels.sh, run where pip reaches an
#   index; carry .whl along), installed with --no-index into a separate folder on
#   PYTHONPATH; the project is installed editable with --no-build-isolation.
#
# --rehearse runs every step on a machine without a GPU, with CPU-sized
# arguments (2x32 network, tiny batches): the GPU tests skip, the training runs
# on the CPU, bench_gpu gates and times the torch backend on the CPU. It checks
# the script, the image install and the imports before a GPU machine's minutes
# are spent; its numbers are no GPU measurement (the JSON says "rehearsal").
#
# It cannot pass without running on the GPU (tests/gpu_check_support.py, the
# verdict; tested in tests/test_gpu_check.py):
# - before the GPU tests it records what this machine lacks ("lacking": cuda,
#   ort-gpu, tensorrt, two-gpus, each null or the reason); a GPU test's skip
#   must name a requirement it lacks ("tensorrt: ..."), and a listed GPU that
#   torch cannot use explains nothing: any other skip fails the check;
# - the rehearsal (CUDA_VISIBLE_DEVICES empty) fails if any GPU test ran;
# - every bench_gpu measurement this machine can make (a gate and self-play per
#   backend it has, actors per GPU, INT8 vs FP16 when an INT8 path is here)
#   must be there, and each target row is re-checked: a MISSED target fails the
#   check (exit 3) unless --no-targets (report only; the rehearsal never enforces
#   them: CPU numbers).
# The JSON lists each GPU test that ran and each skip with its reason and what
# explains it, every target with met / MISSED / not measured (and why), and
# "problems": why the check failed.
#
# UNVERIFIED on a GPU: written on machines without one; rehearsed on the CPU in
# an image-like environment. Each step has its own time limit and exit status
# in the JSON. Exit: 0 passed; 1 a step, a GPU test, the skip accounting or a
# measurement failed; 3 only targets MISSED; 2 no NVIDIA GPU visible (without
# --rehearse); 64 bad arguments.
set -uo pipefail
cd "$(dirname "$0")/.."
REHEARSE=0 TARGETS=1
while [ $# -gt 0 ]; do
  case $1 in
    --rehearse) REHEARSE=1; shift ;;
    --no-targets) TARGETS=0; shift ;;
    *) break ;;
  esac
done
if [ $# -gt 1 ] || [[ "${1:-}" == -* ]]; then
  echo "usage: scripts/gpu_check.sh [--rehearse] [--no-targets] [OUT.json]   (got: $*)" >&2
  exit 64
fi
OUT=${1:-reports/gpu/gpu_check.json}
[ "$REHEARSE" = 1 ] && OUT=${1:-reports/gpu/gpu_check_rehearsal.json}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
START=$(date +%s)

if [ -n "${GPU_CHECK_PYTHON:-}" ] || [ ! -x .venv/bin/python ]; then
  MODE=image
  PY=${GPU_CHECK_PYTHON:-python3}
  SITE=${GPU_CHECK_SITE:-/tmp/chesszero-gpu-site}
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
else
  MODE=venv
  PY=.venv/bin/python
fi
echo "gpu_check: $MODE environment, $("$PY" --version 2>&1) ($PY)"

if [ "$REHEARSE" = 1 ]; then
  export CUDA_VISIBLE_DEVICES=""  # every step on the CPU, even where a GPU is
  echo "rehearsal on the CPU: no GPU measurement" >"$WORK/gpus.txt"
elif ! nvidia-smi -L >"$WORK/gpus.txt" 2>&1; then
  echo "gpu_check: no NVIDIA GPU visible (nvidia-smi -L failed); --rehearse runs the steps on the CPU" >&2
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

image_install() {  # the carried wheels into $SITE, then the project (native core built here)
  local wheels=(.whl/*.whl)
  if [ ! -e "${wheels[0]}" ]; then
    echo "no wheels in .whl/: run scripts/gpu_wheels.sh where pip reaches an index, and carry .whl" >&2
    return 1
  fi
  rm -rf "$SITE" && mkdir -p "$SITE" || return 1
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "${wheels[@]}" \
    || return 1
  # its own build folder: a venv on the same machine keeps build/{wheel_tag}
  "$PY" -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir \
    --config-settings=build-dir=build/gpu-check-{wheel_tag} -e . || return 1
  "$PY" -c "import chesszero._core, chess, polars, pandera, pydantic, torch; \
print('chesszero', chesszero.__file__, '| torch', torch.__version__, '| CUDA', torch.cuda.is_available())"
}

# 1. build (the native core and the editable install)
if [ "$MODE" = image ]; then
  export PY SITE
  export -f image_install
  step build 150 bash -c image_install
else
  step build 110 make build
  # onnxruntime-gpu in place of onnxruntime when an index is reachable (fetched before
  # onnxruntime is removed; this step's failure does not fail the check)
  [ "$REHEARSE" = 1 ] || step gpu-extra 60 bash -c "
    .venv/bin/pip show -q onnxruntime-gpu 2>/dev/null && exit 0
    .venv/bin/pip download -q --no-deps -d '$WORK/ort-gpu' onnxruntime-gpu &&
    .venv/bin/pip uninstall -y -q onnxruntime && .venv/bin/pip install -q --no-deps '$WORK'/ort-gpu/*.whl"
fi
if [ "$REHEARSE" = 1 ]; then
  TRAIN=(--device cpu --bf16 --size 2x32 --global-batch 64 --steps 2 --warmup 1 --threads 2)
  BACKENDS=(--size 2x32 --batch 32 --seconds 0.5 --actors-per-gpu 1,2)
else
  TRAIN=(--device cuda --bf16 --size 14x160 --global-batch 2048 --steps 10 --warmup 2 --threads 4)
  BACKENDS=(--seconds 2 --actors-per-gpu 1,2,4)
fi
# 2. what this machine lacks (requirements.json), then the GPU-marked tests (their skips are
# accounted for against it in the summary)
step tests 110 bash -c '"$0" tests/gpu_check_support.py requirements "$1/requirements.json"
  "$0" -m pytest -q -m gpu tests/test_gpu.py -rs -p no:cacheprovider --junitxml="$1/tests.xml"' "$PY" "$WORK"
# 3. a paper-size quantum (14x160, global batch 2048, bf16) on the GPU(s); DDP x2 with two GPUs
step train 80 "$PY" benchmarks/bench_train.py "${TRAIN[@]}" --json "$WORK/train.json"
# 4. publication + gate per GPU backend, self-play vs inference, 1/2/4 actors per GPU, INT8 vs FP16
step backends 140 "$PY" benchmarks/bench_gpu.py "${BACKENDS[@]}" --json "$WORK/backends.json"

# 5. the verdict: steps, skip accounting, measurements and targets -> $OUT, the exit status
"$PY" tests/gpu_check_support.py summary "$WORK" "$OUT" "$START" "$MODE" "$REHEARSE" "$TARGETS"
