"""The web server: one page, the model, its golden file and two API calls.

Routes (Starlette):

- ``GET /``: the page (``static/index.html``); ``/static/dist/...`` its
  bundle and ONNX Runtime Web's WebAssembly (built by ``make web``);
- ``GET /model.onnx``, ``GET /golden.json``: the served artifact and its
  golden file, byte for byte (the page checks one against the other);
- ``GET /api/info``: which model (``ServedModel.to_info``) and the defaults;
- ``POST /api/think`` ``{"start_fen", "moves": [uci...], "visits"}``: a
  server search (``thinking.ServerThinker``);
- ``POST /api/opponent`` ``{"rung", "start_fen", "moves"}``: a ladder rung's
  move (``opponents.Opponents``), for watching the model play it.

A bad request gets status 400 and ``{"error": ...}`` naming the bad field,
value, rung, FEN or move.

``serve`` runs it with uvicorn on 127.0.0.1 (the page is for the person at
this machine; ``--host`` opens it wider).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from chesszero.core import STARTING_FEN
from chesszero.web.model import ServedModel
from chesszero.web.opponents import Opponents
from chesszero.web.thinking import ServerThinker

STATIC = Path(__file__).resolve().parent / "static"
BUNDLE = STATIC / "dist" / "app.js"
DEFAULT_VISITS = 64


def check_bundle() -> None:
    """ValueError when the page's bundle was never built (a source checkout without `make web`)."""
    if not BUNDLE.is_file():
        raise ValueError(f"the page is not built: {BUNDLE} is missing (run `make web`, which needs Node.js and npm)")


def _request_fields(body: Any) -> tuple[str, list[str], int]:
    if not isinstance(body, dict):
        raise ValueError("the request body must be a JSON object")
    start_fen = body.get("start_fen", STARTING_FEN)
    moves = body.get("moves", [])
    visits = body.get("visits", DEFAULT_VISITS)
    if not isinstance(start_fen, str):
        raise ValueError(f"start_fen must be a FEN string, got {start_fen!r}")
    if not isinstance(moves, list) or not all(isinstance(m, str) for m in moves):
        raise ValueError(f"moves must be a list of UCI strings, got {moves!r}")
    if not isinstance(visits, int) or isinstance(visits, bool):
        raise ValueError(f"visits must be an integer, got {visits!r}")
    return start_fen, moves, visits


def create_app(model: ServedModel, *, thinker: ServerThinker | None = None,
               opponents: Opponents | None = None, default_visits: int = DEFAULT_VISITS) -> Starlette:
    """The app serving `model` (module docstring); `thinker` defaults to one over
    its artifact, `opponents` to the project's ladder rungs."""
    thinker = thinker or ServerThinker(model.path)
    opponents = opponents or Opponents.from_table()

    async def page(_: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-store"})

    async def onnx(_: Request) -> Response:
        return FileResponse(model.path, media_type="application/octet-stream", headers={"cache-control": "no-store"})

    async def golden(_: Request) -> Response:
        return FileResponse(model.golden, media_type="application/json", headers={"cache-control": "no-store"})

    async def info(_: Request) -> Response:
        return JSONResponse({**model.to_info(), "default_visits": default_visits,
                             "opponents": opponents.describe()})

    async def think(request: Request) -> Response:
        try:
            start_fen, moves, visits = _request_fields(await request.json())
            thought = await asyncio.to_thread(thinker.think, start_fen, moves, visits)
        except ValueError as error:  # includes malformed JSON
            return JSONResponse({"error": str(error)}, status_code=400)
        except RuntimeError as error:
            return JSONResponse({"error": str(error)}, status_code=500)
        return JSONResponse(thought.to_dict())

    async def opponent(request: Request) -> Response:
        try:
            body = await request.json()
            start_fen, moves, _ = _request_fields(body)
            rung = body.get("rung")
            if not isinstance(rung, str):
                raise ValueError(f"rung must be a rung name, got {rung!r}")
            move = await asyncio.to_thread(opponents.move, rung, start_fen, moves)
        except ValueError as error:
            return JSONResponse({"error": str(error)}, status_code=400)
        return JSONResponse({"move": move})

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        thinker.close()
        opponents.close()

    app = Starlette(routes=[
        Route("/", page),
        Route("/model.onnx", onnx),
        Route("/golden.json", golden),
        Route("/api/info", info),
        Route("/api/think", think, methods=["POST"]),
        Route("/api/opponent", opponent, methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ], lifespan=lifespan)
    return app


def serve(model: ServedModel, *, host: str = "127.0.0.1", port: int = 8080, threads: int = 1) -> None:
    """Serves the page until interrupted."""
    import uvicorn

    check_bundle()
    app = create_app(model, thinker=ServerThinker(model.path, threads=threads))
    uvicorn.run(app, host=host, port=port, log_level="warning")
