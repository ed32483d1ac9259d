"""Argument parsing shared by the subcommands: one-line usage errors."""

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
