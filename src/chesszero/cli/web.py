"""``chesszero web``: the play page for a campaign's active model or an artifact file."""

from __future__ import annotations

import argparse
from pathlib import Path


def _web(args: argparse.Namespace) -> int:
    from chesszero.web import choose_model, serve
    from chesszero.web.server import check_bundle

    check_bundle()
    if not 1 <= args.port <= 65535:
        raise ValueError(f"--port must be in 1..65535, got {args.port}")
    model = choose_model(root=args.root, campaign=args.campaign, model=args.model, registry=args.registry)
    if model.golden_written:
        print(f"wrote the missing golden file {model.golden}")
    print(f"chesszero web: {model.label}\n  {model.detail}\n  http://{args.host}:{args.port}/  (Ctrl-C stops)",
          flush=True)
    serve(model, host=args.host, port=args.port, threads=args.threads)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    web = sub.add_parser(
        "web", help="play the model in a browser (in-browser or server search)",
        description="Serves a page that plays the campaign's active model (default: the most recently "
        "updated campaign under runs/ with one), the MLflow registry's active version, or an artifact file, after checking its JavaScript "
        "encoding against the artifact's golden file.")
    which = web.add_mutually_exclusive_group()
    which.add_argument("--campaign", default=None, help="campaign name under runs/")
    which.add_argument("--model", type=Path, default=None, help="an ONNX artifact file")
    which.add_argument("--registry", default=None, metavar="NAME",
                       help="the MLflow registered model whose 'active' alias to serve, e.g. chesszero-cpu-main")
    web.add_argument("--root", type=Path, default=Path("."),
                     help="project root holding runs/ and mlruns/ (default: .)")
    web.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    web.add_argument("--port", type=int, default=8080)
    web.add_argument("--threads", type=int, default=1, help="inference threads of the server search")
    web.set_defaults(func=_web)
