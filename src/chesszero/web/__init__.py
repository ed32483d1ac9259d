"""``chesszero web``: play the trained model in a browser.

Modules:

- ``model``: which artifact the page shows (a campaign's active artifact, or
  a file) with its generation and rating, and its golden file
  (``publish.golden``), written when an older artifact has none.
- ``thinking``: the server's search, the ``chesszero uci`` engine driven by
  its own protocol lines.
- ``server``: the Starlette app (the page, the model, the golden file,
  ``/api/info`` and ``/api/think``) and ``serve`` (uvicorn).

The page itself is built from ``web/`` (npm, esbuild) into ``static/dist``
(``make web``); ``static/index.html`` is its shell.
"""

from chesszero.web.model import ServedModel, choose_model
from chesszero.web.server import create_app, serve

__all__ = ["ServedModel", "choose_model", "create_app", "serve"]
