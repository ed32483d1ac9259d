"""``chesszero web`` without a browser: the golden files publication writes,
which model the server picks and how it describes it, the HTTP API (through
Starlette's test client), and that server thinking is the UCI engine's search."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from web_support import ServerThread, planes_sha256, published

from chesszero import core
from chesszero.campaign.context import CampaignPaths
from chesszero.campaign.state import CampaignState, StateStore
from chesszero.cli import main
from chesszero.config import REPO_ROOT
from chesszero.publish.calibration_positions import DEFAULT_POSITIONS, load_positions
from chesszero.publish.golden import GOLDEN_POSITIONS, TOLERANCE, TOP_K, golden_path
from chesszero.publish.loading import load_evaluator
from chesszero.uci import run_uci
from chesszero.web import choose_model


def replay(start_fen: str, moves: list[str] | tuple[str, ...]) -> core.Game:
    game = core.Game(start_fen)
    for uci in moves:
        game.push_uci(uci)
    return game


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_publication_writes_a_golden_file_beside_each_artifact(precision: str) -> None:
    artifact = published() / f"{precision}.onnx"
    golden = json.loads(golden_path(artifact).read_text())
    assert golden_path(artifact).name == f"{precision}.golden.json"
    assert golden["artifact_sha256"] == hashlib.sha256(artifact.read_bytes()).hexdigest()
    assert golden["precision"] == precision and golden["tolerance"] == TOLERANCE[precision].__dict__
    rows = golden["positions"]
    assert len(rows) == GOLDEN_POSITIONS
    by_id = {p.id: p for p in load_positions(REPO_ROOT / DEFAULT_POSITIONS)}
    evaluator = load_evaluator(artifact, plain_onnx=False)
    for row in rows:
        whole = replay(by_id[row["id"]].start_fen, by_id[row["id"]].moves)  # the whole game
        short = replay(row["start_fen"], row["moves"])  # what the golden file keeps of it
        assert len(row["moves"]) <= max(int(core.HISTORY_MOVES), whole.halfmove_clock)
        assert row["fen"] == whole.fen() == short.fen()
        assert row["planes_sha256"] == planes_sha256(whole.encode())
        assert row["legal"] == sorted(int(a) for a in whole.legal_actions())
        logits, wdl = evaluator.evaluate(whole.encode()[None])
        legal = np.asarray(row["legal"])
        p = np.exp(logits[0][legal] - logits[0][legal].max())
        p /= p.sum()
        top = [[int(legal[i]), float(p[i])] for i in np.argsort(-p, kind="stable")[:TOP_K]]
        assert [a for a, _ in row["top"]] == [a for a, _ in top]
        np.testing.assert_allclose([q for _, q in row["top"]], [q for _, q in top], atol=1e-5)
        np.testing.assert_allclose(row["wdl"], wdl[0], atol=1e-5)


def campaign_at(root: Path, artifact: Path, *, generation: int, rated: int | None) -> None:
    """A campaign `demo` under `root/runs` whose active artifact is `artifact`."""
    paths = CampaignPaths(root / "runs" / "demo")
    paths.dir.mkdir(parents=True)
    StateStore(paths.state).save(CampaignState(name="demo", preset="smoke", generation=generation + 1,
                                               active_artifact=str(artifact), active_generation=generation))
    if rated is not None:
        paths.evals(rated).mkdir(parents=True)
        (paths.evals(rated) / "summary.txt").write_text("searched: 1210 +/- 80 Elo (nearest rung sf-n1-r30)\n")


def test_the_campaigns_active_artifact_with_generation_and_rating(tmp_path: Path) -> None:
    art = tmp_path / "art"
    shutil.copytree(published(), art)
    golden_path(art / "int8.onnx").unlink()  # published before golden files existed
    campaign_at(tmp_path, art / "int8.onnx", generation=3, rated=4)
    model = choose_model(root=tmp_path)  # no option: the latest campaign with an active artifact
    assert model.path == art / "int8.onnx" and model.golden_written and model.golden.is_file()
    assert model.label == "demo, generation 3"
    assert "2x16 int8" in model.detail and "rated at generation 4: searched: 1210 +/- 80 Elo" in model.detail
    assert choose_model(root=tmp_path, campaign="demo").golden_written is False  # now it exists
    with pytest.raises(ValueError, match="no campaign 'other'"):
        choose_model(root=tmp_path, campaign="other")
    with pytest.raises(ValueError, match="no campaign with an active artifact"):
        choose_model(root=tmp_path / "empty")


def test_a_rating_from_before_the_artifact_is_not_its_rating(tmp_path: Path) -> None:
    campaign_at(tmp_path, published() / "int8.onnx", generation=5, rated=4)
    assert "not rated yet" in choose_model(root=tmp_path, campaign="demo").detail


def test_command_line_errors_name_the_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["web", "--model", str(tmp_path / "nope.onnx")]) == 2
    assert "nope.onnx" in capsys.readouterr().err
    assert main(["web", "--root", str(tmp_path), "--campaign", "ghost"]) == 2
    assert "no campaign 'ghost'" in capsys.readouterr().err
    assert main(["web", "--model", str(published() / "int8.onnx"), "--port", "0"]) == 2
    assert "--port" in capsys.readouterr().err


@dataclass(frozen=True)
class Reply:
    status_code: int
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode()

    def json(self) -> object:
        return json.loads(self.content)


class Client:
    """GET and POST (JSON) against a running server."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def _send(self, request: urllib.request.Request) -> Reply:
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return Reply(response.status, response.read())
        except urllib.error.HTTPError as error:
            return Reply(error.code, error.read())

    def get(self, path: str) -> Reply:
        return self._send(urllib.request.Request(self.url + path))

    def post(self, path: str, body: object) -> Reply:
        data = json.dumps(body).encode()
        return self._send(urllib.request.Request(self.url + path, data=data, method="POST",
                                                 headers={"content-type": "application/json"}))


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with ServerThread(choose_model(model=published() / "int8.onnx")) as server:
        yield Client(server.url)


def test_the_api_serves_the_page_the_model_and_its_golden_file(client: Client) -> None:
    assert "chesszero" in client.get("/").text
    assert client.get("/model.onnx").content == (published() / "int8.onnx").read_bytes()
    assert client.get("/golden.json").json()["artifact"] == "int8.onnx"
    info = client.get("/api/info").json()
    assert info["label"] == "int8.onnx" and info["default_visits"] == 64
    table = json.loads((REPO_ROOT / "data" / "ladder.json").read_text())
    names = [o["name"] for o in info["opponents"]]
    assert names[: len(table["rungs"])] == [r["name"] for r in table["rungs"]]
    assert set(names[len(table["rungs"]):]) <= {"alphabeta-control", "alphabeta-student"}
    assert info["opponents"][0]["rating"] == table["rungs"][0]["rating"]
    assert client.get("/static/dist/app.js").status_code == 200


def test_server_thinking_is_the_uci_engines_search(client: Client) -> None:
    moves = ["e2e4", "e7e5", "g1f3"]
    answer = client.post("/api/think", {"moves": moves, "visits": 48}).json()
    out = io.StringIO()
    run_uci(str(published() / "int8.onnx"), 48, 1,
            io.StringIO(f"position startpos moves {' '.join(moves)}\ngo nodes 48\nquit\n"), out)
    assert f"bestmove {answer['bestmove']}" in out.getvalue()
    assert answer["visits"] == 48 and answer["pv"][0] == answer["bestmove"]
    assert sum(m["visits"] for m in answer["moves"]) == 47  # the root's first visit expands it
    assert answer["moves"][0]["uci"] == answer["bestmove"]
    assert {m["uci"] for m in answer["moves"]} == set(replay(core.STARTING_FEN, moves).legal_uci())
    assert abs(sum(answer["wdl"]) - 1) < 1e-9


def test_a_ladder_rung_answers_as_an_opponent(client: Client) -> None:
    moves = ["e2e4", "d7d5"]
    reply = client.post("/api/opponent", {"rung": "greedy", "moves": moves}).json()
    assert reply == {"move": "e4d5"}  # greed takes the pawn
    assert client.post("/api/opponent", {"rung": "random", "moves": moves}).json()["move"] in \
        replay(core.STARTING_FEN, moves).legal_uci()
    response = client.post("/api/opponent", {"rung": "grandmaster", "moves": moves})
    assert response.status_code == 400 and "no opponent 'grandmaster'" in response.json()["error"]


def test_the_alpha_beta_engine_answers_as_an_opponent(client: Client) -> None:
    names = [o["name"] for o in client.get("/api/info").json()["opponents"]]
    assert "alphabeta-control" in names
    # Scholar's mate is on the board for White: the alpha-beta finds Qxf7#.
    moves = ["e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6"]
    assert client.post("/api/opponent", {"rung": "alphabeta-control", "moves": moves}).json() == {"move": "h5f7"}


@pytest.mark.parametrize("body, error", [
    ({"moves": ["e2e5"]}, "moves[0]"),
    ({"moves": "e2e4"}, "moves must be a list"),
    ({"visits": 0}, "visits must be in 1..100000"),
    ({"visits": "many"}, "visits must be an integer"),
    ({"start_fen": "not a fen"}, "not a fen"),
    ({"start_fen": "7k/5QQ1/8/8/8/8/8/K7 b - - 0 1"}, "the game is over"),
])
def test_bad_requests_get_400_naming_the_field(client: Client, body: dict, error: str) -> None:
    response = client.post("/api/think", body)
    assert response.status_code == 400
    assert error in response.json()["error"]


def test_the_mlflow_registrys_active_version(tmp_path: Path) -> None:
    pytest.importorskip("mlflow")
    from chesszero.campaign import metrics as M
    from chesszero.campaign.tracking import Tracker

    tracker = Tracker(tmp_path, "demo")  # the campaign's own registration (MLflow is slow: one version)
    tracker.register_active(published() / "int8.onnx", "gen0005")
    tracker.log_metrics({M.joint_elo_key("searched"): 1111.0}, step=4)  # the earlier artifact's rating
    # a sweep at generation 6: the joint rating is a bound; the nearest rung's point is not the headline
    tracker.log_metrics({M.joint_elo_key("searched"): 1234.0, M.joint_elo_key("searched", "lo"): 1234.0,
                         M.joint_elo_key("searched", "bound"): 1.0, M.elo_key("searched"): 900.0}, step=6)
    model = choose_model(root=tmp_path, registry="chesszero-demo")
    assert model.label == "chesszero-demo v1, generation 5"
    assert "2x16 int8" in model.detail and "rated at generation 6: elo_joint/searched (joint) > 1234" in model.detail
    assert model.golden_written  # the registry holds no golden file: written from the downloaded model
    assert json.loads(model.golden.read_text())["artifact_sha256"] == hashlib.sha256(model.path.read_bytes()).hexdigest()
    with pytest.raises(ValueError, match="'chesszero-other' has no 'active' alias"):
        choose_model(root=tmp_path, registry="chesszero-other")
    with pytest.raises(ValueError, match="no MLflow store"):
        choose_model(root=tmp_path / "elsewhere", registry="chesszero-demo")
