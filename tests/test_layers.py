"""The Python packages form layers with one direction of dependencies (issue 14).

Read from the import statements of every module under ``src/chesszero``,
including imports inside functions and ``TYPE_CHECKING`` blocks: a module may
import its own package and packages of lower layers, never a higher layer or
a package beside it in the same layer, and nothing imports ``flows``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "chesszero"

LAYERS: list[set[str]] = [
    {"_core", "fsio", "config"},  # the native module, durable files, the typed recipe (a leaf)
    {"core"},  # the Python face of the native core
    {"material", "search", "model"},
    {"selfplay"},
    {"replay"},
    {"train"},
    {"publish"},
    {"evaluate"},
    {"campaign"},
    {"studies", "nnue"},  # failure studies; the NNUE student's distillation from a teacher campaign
    {"cli", "uci", "web", "demo", "__main__"},  # entry points
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}
RANK[""] = -1  # chesszero/__init__.py: below everything, so it imports nothing of the package
ENTRY = LAYERS[-1]


def unit_of(module: str) -> str | None:
    """The layer unit (top-level package or module) of a dotted chesszero module name."""
    parts = module.split(".")
    if parts[0] == "flows":
        return "flows"
    if parts[0] != "chesszero" or len(parts) < 2:
        return None
    return parts[1]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, name: str | None = None) -> list[tuple[int, str]]:
    """(line, dotted name) of everything `path` (module `name`) imports, relative imports resolved."""
    name = name or module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            if base == "chesszero":  # `from chesszero import core`: the names are modules
                found += [(node.lineno, f"chesszero.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, base))
    return found


def violations() -> list[str]:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        unit = unit_of(module_name(path)) or ""
        if unit not in RANK:
            bad.append(f"{path.relative_to(SRC)}: module {unit!r} is in no layer (add it to LAYERS)")
            continue
        for line, target in imported_modules(path):
            other = unit_of(target)
            if other is None or other == unit:
                continue
            where = f"{path.relative_to(SRC)}:{line} imports {target}"
            if other == "flows":
                bad.append(f"{where}: nothing in the package imports flows/")
            elif other not in RANK:
                bad.append(f"{where}: {other!r} is in no layer")
            elif RANK[other] > RANK[unit]:
                bad.append(f"{where}: upward ({unit} is below {other})")
            elif RANK[other] == RANK[unit] and unit not in ENTRY:
                bad.append(f"{where}: sideways ({unit} and {other} share a layer)")
    return bad


def test_every_import_points_down() -> None:
    assert violations() == []


def test_the_checker_sees_function_level_and_relative_imports(tmp_path: Path) -> None:
    found = [name for _, name in imported_modules(PACKAGE / "config" / "loader.py")]
    assert "chesszero.config.schema" in found  # the checker reads this module's real imports
    probe = tmp_path / "probe.py"
    probe.write_text("import os\n\ndef f():\n    from chesszero.evaluate import ladder\n"
                     "    from chesszero import core\n    from ..model import network\n"
                     "    from . import schema\n")
    names = [name for _, name in imported_modules(probe, "chesszero.config.probe")]
    assert names == ["os", "chesszero.evaluate", "chesszero.core", "chesszero.model", "chesszero.config"]


def test_no_sys_path_edits_in_the_package() -> None:
    edits = [str(p.relative_to(SRC)) for p in PACKAGE.rglob("*.py") if "sys.path" in p.read_text()]
    assert edits == []


@pytest.mark.parametrize("entry", ["from chesszero.config import load_config; "
                                   "load_config('params.yaml', preset='cpu')"])
def test_loading_the_recipe_imports_no_torch_and_no_evaluation(entry: str) -> None:
    code = (f"import sys, time; t = time.perf_counter(); {entry}; "
            "print(time.perf_counter() - t); "
            "print(sorted(m for m in ('torch', 'chess', 'onnxruntime', 'chesszero.evaluate', 'chesszero.model') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=SRC.parent, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    seconds, loaded = done.stdout.splitlines()
    assert loaded == "[]"
    print(f"params.yaml loads in {float(seconds) * 1000:.0f} ms")
