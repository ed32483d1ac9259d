#!/usr/bin/env bash
# Fetches the wheels the GPU check needs on a machine whose Python image lacks
# them and which cannot reach a package index (the lent H200: python3 3.12).
#
#   scripts/gpu_wheels.sh [PYTHON_VERSION]     # default 3.12; wheels land in .whl/
#
# Run it here (where pip reaches an index), then carry .whl to the GPU machine;
# scripts/gpu_check.sh installs .whl/*.whl there. A package published only as
# an sdist (python-chess 1.11) is built into a wheel here; the others must have
# a manylinux wheel for that Python. About 56 MB, under the 64 MiB a device
# call carries with the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
PYVER=${1:-3.12}
if ! [[ "$PYVER" =~ ^3\.[0-9]+$ ]]; then
  echo "usage: scripts/gpu_wheels.sh [PYTHON_VERSION like 3.12]   (got: $PYVER)" >&2
  exit 64
fi
DEST=.whl
rm -rf "$DEST"
mkdir -p "$DEST"
mapfile -t REQS < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' scripts/gpu_wheels.txt | grep -v '^\s*$')
binary=() source=()
for req in "${REQS[@]}"; do
  if python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PYVER" \
      --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 -d "$DEST" "$req" 2>/dev/null; then
    binary+=("$req")
  else
    source+=("$req")
  fi
done
for req in "${source[@]}"; do  # pure-Python sdists only: the built wheel must be py3-none-any
  python3 -m pip wheel -q --no-deps -w "$DEST" "$req"
done
if ls "$DEST"/*.whl | grep -v -e '-none-any.whl$' -e "cp${PYVER/./}" -e 'abi3' >/dev/null; then
  echo "gpu_wheels: a wheel here is for another Python than $PYVER:" >&2
  ls "$DEST" | grep -v -e '-none-any.whl$' -e "cp${PYVER/./}" -e 'abi3' >&2
  exit 1
fi
count=$(ls "$DEST"/*.whl | wc -l)
if [ "$count" -ne "${#REQS[@]}" ]; then
  echo "gpu_wheels: ${#REQS[@]} requirements but $count wheels in $DEST" >&2
  exit 1
fi
# a device call carries the working tree (tracked and untracked, not ignored) and .whl: 64 MiB
tree=$( (git ls-files -z; git ls-files -z -o --exclude-standard) | xargs -0 stat -c %s | awk '{s+=$1} END {print s}')
total=$(( tree + $(du -sb "$DEST" | cut -f1) ))
echo "gpu_wheels: working tree and wheels together $(( total / 1048576 )) MiB of the 64 MiB a device call carries"
if [ "$total" -gt $(( 64 * 1048576 )) ]; then
  echo "gpu_wheels: too large to carry" >&2
  exit 1
fi
echo "gpu_wheels: $count wheels for Python $PYVER in $DEST ($(du -sh "$DEST" | cut -f1));" \
  "${#source[@]} built from source: ${source[*]:-none}"
