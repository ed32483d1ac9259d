"""What the GPU check imports, for tests/test_gpu_check.py.

Run as a script (in a fresh interpreter, from the repository root) it imports
the GPU check's entry modules and prints, as JSON, each third-party top-level
name that the project's own loaded modules import anywhere in their source
(function-level imports too) with the modules that import it.
"""

from __future__ import annotations

import ast
import importlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCAL_DIRS = (ROOT / "benchmarks", ROOT / "tests")
# what scripts/gpu_check.sh runs: bench_gpu.py, bench_train.py, pytest on test_gpu.py
ENTRY_MODULES = ("bench_gpu", "bench_train", "conftest", "test_gpu")


def _own_modules() -> dict[str, Path]:
    own: dict[str, Path] = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not file or not file.endswith(".py") or not Path(file).is_absolute():
            continue
        path = Path(file).resolve()
        if path.is_relative_to(ROOT / "src") or any(path.is_relative_to(d) for d in LOCAL_DIRS):
            own[name] = path
    return own


def _is_local(top: str) -> bool:
    return top == "chesszero" or any((d / f"{top}.py").exists() for d in LOCAL_DIRS)


def imported_third_party() -> dict[str, list[str]]:
    sys.path[:0] = [str(d) for d in LOCAL_DIRS]
    for name in ENTRY_MODULES:
        importlib.import_module(name)
    found: dict[str, set[str]] = {}
    for name, path in _own_modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for top in {n.split(".")[0] for n in names}:
                if top in sys.stdlib_module_names or top == "__future__" or _is_local(top):
                    continue
                found.setdefault(top, set()).add(name)
    return {top: sorted(users) for top, users in sorted(found.items())}


if __name__ == "__main__":
    print(json.dumps(imported_third_party()))
