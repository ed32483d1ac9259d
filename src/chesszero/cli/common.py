"""Argument parsing shared by the subcommands: one-line usage errors, the recipe options."""

from __future__ import annotations

import argparse
from typing import NoReturn


class UsageError(ValueError):
    """An argument error, reported as one line (``prog: error: message``)."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (subparsers inherit the class)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.prog, f"{message} (see {self.prog} --help)")


BACKEND_HELP = "ort-cpu | torch | ort-gpu | tensorrt"


def add_backend_argument(p: argparse.ArgumentParser, *, default: str | None) -> None:
    """``--backend NAME``: the inference backend (checked by ``publish.backends`` when used;
    ``default=None``: the recipe's ``inference.backend``)."""
    where = f"default: {default}" if default else "default: the recipe's inference.backend"
    p.add_argument("--backend", default=default, metavar="NAME",
                   help=f"inference backend: {BACKEND_HELP} ({where})")


def _recipe_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", default="params.yaml", help="recipe file (default: params.yaml)")
    p.add_argument("--preset", default="cpu", help="recipe preset: smoke, cpu, paper (default: cpu)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=YAML",
                   help="recipe override, e.g. --set train.global_batch=64 (repeatable)")


def _load_recipe(args: argparse.Namespace):  # -> chesszero.config.Config
    from chesszero.config import load_config, parse_overrides

    return load_config(args.params, preset=args.preset, overrides=parse_overrides(args.set))
