"""Load ``params.yaml`` into a typed :class:`~chesszero.config.schema.Config`.

``params.yaml`` has two top-level keys: ``defaults`` (the full paper recipe)
and ``presets`` (named partial overrides: ``smoke``, ``cpu``, ``paper``).
A config is ``defaults`` deep-merged with one preset, then with caller
overrides; validation errors are re-raised as :class:`ConfigError` whose one-line
message names each offending key as a dotted path (``train.global_batch: ...``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from chesszero.config.schema import Config

__all__ = [
    "REPO_PARAMS",
    "REPO_ROOT",
    "ConfigError",
    "deep_merge",
    "load_config",
    "parse_overrides",
    "preset_names",
]

REPO_ROOT = Path(__file__).resolve().parents[3]
"""The source checkout this package lives in (holds ``params.yaml``, ``benchmarks/``)."""

REPO_PARAMS = REPO_ROOT / "params.yaml"
"""``params.yaml`` at the repository root (used when a relative path is not found)."""


class ConfigError(ValueError):
    """A recipe that does not validate; the message names the keys at fault."""


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``base`` updated by ``override``, merging nested mappings key by key."""
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _expand_dotted(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Turn ``{"train.seed": 3}`` into ``{"train": {"seed": 3}}`` (nested keys pass through)."""
    out: dict[str, Any] = {}
    for key, value in overrides.items():
        parts = key.split(".")
        nested: Any = _expand_dotted(value) if isinstance(value, Mapping) else value
        for part in reversed(parts[1:]):
            nested = {part: nested}
        out = deep_merge(out, {parts[0]: nested})
    return out


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """``["train.seed=3", "search.visit_cap=[[0, 16]]"]`` -> ``{"train.seed": 3, ...}``.

    Each value is parsed as YAML (numbers, booleans, lists, ``null``); the
    dotted keys are checked when the result is passed to :func:`load_config`.
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override must look like KEY=VALUE (e.g. train.seed=3), got {item!r}")
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            first = str(exc).splitlines()[0]
            raise ConfigError(f"override {item!r}: value is not valid YAML ({first})") from None
    return out


TOP_LEVEL_KEYS = {"defaults", "presets", "reports"}
"""params.yaml's top level: the recipe (``defaults``, ``presets``) and ``reports``,
the report stages' parameters (dvc.yaml reads them; the recipe ignores them)."""


def _resolve(path: str | Path) -> Path:
    p = Path(path)
    if not p.is_absolute() and not p.exists() and REPO_PARAMS.name == p.name and REPO_PARAMS.exists():
        return REPO_PARAMS
    return p


def _read(path: str | Path) -> dict[str, Any]:
    p = _resolve(path)
    try:
        data = yaml.safe_load(p.read_text())
    except FileNotFoundError as exc:
        raise ConfigError(f"params file not found: {p}") from exc
    if not isinstance(data, dict) or not {"defaults", "presets"} <= set(data) <= TOP_LEVEL_KEYS:
        raise ConfigError(f"{p}: top level must have the keys 'defaults' and 'presets' "
                          f"(and optionally 'reports', read by dvc.yaml, not the recipe)")
    return data


def preset_names(path: str | Path = "params.yaml") -> list[str]:
    """Names of the presets defined in a params file."""
    return list(_read(path)["presets"])


def _format(error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        loc = ".".join(str(part) for part in item["loc"]) or "<root>"
        lines.append(f"{loc}: {item['msg']} (got {item.get('input')!r})")
    return "invalid config: " + "; ".join(lines)  # one line: the CLI prints it as is


def load_config(
    path: str | Path = "params.yaml",
    preset: str = "cpu",
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Load and validate one preset of the recipe.

    ``overrides`` is a nested mapping or uses dotted keys
    (``{"train.global_batch": 64}``); it is merged after the preset.
    Raises :class:`ConfigError` naming the offending keys.
    """
    data = _read(path)
    presets = data["presets"] or {}
    if preset not in presets:
        raise ConfigError(f"preset: unknown preset {preset!r} (known: {', '.join(presets)})")
    merged = deep_merge(data["defaults"] or {}, presets[preset] or {})
    if overrides:
        merged = deep_merge(merged, _expand_dotted(overrides))
    merged["preset"] = preset
    try:
        return Config.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_format(exc)) from None
