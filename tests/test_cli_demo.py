"""The README's main command path: the demo and the CLI's error handling."""

from __future__ import annotations

import io
import subprocess
import sys

from rich.console import Console

from chesszero.cli import main
from chesszero.demo import run_demo


def test_demo_plays_games_to_an_end() -> None:
    stats = run_demo(games=5, seed=1, console=Console(file=io.StringIO()))
    assert sum(stats["terminations"].values()) == 5
    assert stats["mean_plies"] > 0


def test_cli_perft_and_bad_fen(capsys) -> None:
    assert main(["perft", "3"]) == 0
    assert capsys.readouterr().out.strip() == "8902"
    assert main(["perft", "2", "--fen", "not a fen"]) == 2
    assert "invalid FEN 'not a fen'" in capsys.readouterr().err


def test_module_entry_point() -> None:
    out = subprocess.run([sys.executable, "-m", "chesszero", "perft", "1"], capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "20"
