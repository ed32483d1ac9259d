"""Test-session hooks."""

from __future__ import annotations

import logging

import pytest


def pytest_unconfigure(config: pytest.Config) -> None:
    # Prefect stops its temporary API server at interpreter exit and logs that
    # through a rich handler whose stream pytest has already closed; without
    # this the log line becomes a "Logging error" traceback after the summary.
    logging.raiseExceptions = False
