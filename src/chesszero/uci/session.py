"""What every UCI engine of the project shares: line output and the command loop.

``UciSession`` writes lines thread-safely (a search thread and the command
loop both write; a closed pipe is ignored), reads commands until ``quit`` or
end of input (which counts as ``quit``), and turns any error into an ``info
string error ...`` line so nothing a GUI sends can crash the engine. Engines
(``engine.UciEngine``, ``alphabeta.AlphaBetaUci``) implement ``_dispatch``.
"""

from __future__ import annotations

import threading
from typing import TextIO

from chesszero.uci.protocol import Command, UciError, format_info_string, parse_command


class UciSession:
    """Line I/O and the command loop of one UCI session over ``out`` (module docstring)."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._write_lock = threading.Lock()

    def emit(self, line: str) -> None:
        """Writes one line to the GUI (thread-safe; a closed pipe is ignored)."""
        with self._write_lock:
            try:
                self._out.write(line + "\n")
                self._out.flush()
            except (BrokenPipeError, ValueError):  # GUI gone or stream closed
                pass

    def error(self, message: str) -> None:
        self.emit(format_info_string(f"error {message}"))

    def run(self, stdin: TextIO) -> int:
        """Reads commands until ``quit`` or end of input; returns the exit status."""
        while True:
            line = stdin.readline()
            if not line:
                self.handle("quit")
                return 0
            if not self.handle(line):
                return 0

    def handle(self, line: str) -> bool:
        """Acts on one input line; False once the engine should exit."""
        try:
            command = parse_command(line)
            if command is None:
                return True
            return self._dispatch(command)
        except UciError as error:
            self.error(str(error))
        except Exception as error:  # a GUI must never be able to crash the engine
            self.error(f"internal {type(error).__name__}: {error} (command {line.strip()!r})")
        return True

    def _dispatch(self, command: Command) -> bool:
        """Acts on one parsed command; False once the engine should exit."""
        raise NotImplementedError


__all__ = ["UciSession"]
