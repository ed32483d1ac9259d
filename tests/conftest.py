"""Test-session hooks."""

from __future__ import annotations

import logging

import pytest


def pytest_unconfigure(config: pytest.Config) -> None:
    # Prefect stops its temporary API server at interpreter exit and logs that
    # through a rich handler whose stream pytest has already closed; without
    # this the log line becomes a "Logging error" traceback after the summary.
    logging.raiseExceptions = False


@pytest.fixture(scope="module")
def published_on_cpu(tmp_path_factory: pytest.TempPathFactory):  # -> PublishResult
    """A briefly trained tiny network published and gated on ONNX Runtime (CPU):
    the artifacts the inference-backend tests run in each backend."""
    from publish_support import publish_on_cpu, torch_threads

    with torch_threads(1):
        return publish_on_cpu(tmp_path_factory.mktemp("pub"))
