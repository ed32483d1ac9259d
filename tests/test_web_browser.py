"""The play page in a real browser: Debian's Chromium driven by Playwright.

Against a real ``chesszero web`` server (uvicorn, in a thread) and an artifact
published by the real pipeline: the page loads, its encoding self-check
passes, the model answers a move played by clicking the board with thinking
in the browser and on the server, the PGN export holds the game, a game
starts from a FEN (numbered from its move, Black first where it is Black's
move, a chosen underpromotion played) and a malformed FEN is refused, and a
corrupted golden file makes the page refuse to play. The time from opening
the page to the model's first move (in-browser search, 64 visits) is printed
and recorded as a test property (the issue's target is 2 s on this machine;
timings are reported, never asserted).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from web_support import STATIC_DIST, ServerThread, published, require_build

from chesszero.publish.golden import golden_path
from chesszero.web import choose_model

CHROMIUM = Path("/usr/bin/chromium")
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    playwright = pytest.importorskip("playwright.sync_api")
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing (`make system-deps` installs Debian's chromium)"
    require_build(STATIC_DIST / "app.js")
    with playwright.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread(choose_model(model=published() / "int8.onnx")) as running:
        yield running


def open_page(browser: object, url: str):  # -> playwright Page
    page = browser.new_page(viewport={"width": 1100, "height": 800})
    page.on("pageerror", lambda error: pytest.fail(f"page error: {error}"))
    page.goto(url)
    return page


def wait_for_model_moves(page: object, count: int) -> dict:
    page.wait_for_function(
        f"window.czState && (window.czState.modelMoves.length >= {count} || window.czState.errors.length > 0 "
        "|| window.czState.selfCheck === 'failed')", timeout=TIMEOUT_MS)
    state = page.evaluate("window.czState")
    assert state["selfCheck"] == "passed", state["failures"]
    assert state["errors"] == []
    return state


def click_move(page: object, uci: str, *, white_at_bottom: bool) -> None:
    """Clicks the origin square, then the destination (chessground's click-to-move)."""
    box = page.locator("#board cg-board").bounding_box()
    size = box["width"] / 8

    def center(square: str) -> tuple[float, float]:
        file, rank = ord(square[0]) - 97, int(square[1]) - 1
        col, row = (file, 7 - rank) if white_at_bottom else (7 - file, rank)
        return box["x"] + (col + 0.5) * size, box["y"] + (row + 0.5) * size

    for square in (uci[:2], uci[2:4]):
        page.mouse.click(*center(square))


def test_in_browser_thinking_answers_a_clicked_move(browser: object, server: ServerThread,
                                                   record_property: pytest.RecordProperty) -> None:
    page = open_page(browser, f"{server.url}?side=black&visits=64&mode=browser")
    state = wait_for_model_moves(page, 1)  # the model has White: it moves first
    first = state["modelMoves"][0]
    page.wait_for_function("window.czState.marks.shown !== undefined", timeout=TIMEOUT_MS)
    marks = page.evaluate("window.czState.marks")
    print(f"\nfirst model move {first['uci']} {first['at'] / 1000:.2f} s after opening the page "
          f"(runtime started {marks['runtime'] / 1000:.2f} s, model fetched {marks['fetched'] / 1000:.2f} s, "
          f"session {marks['session'] / 1000:.2f} s, self-check done {marks['checked'] / 1000:.2f} s, "
          f"search {first['seconds']:.2f} s of which network {first['netSeconds']:.2f} s; 64 visits in the browser)")
    # The milestones come in their order: the runtime and the model before the session, the golden
    # positions encoded and the session before the check, and the move found and shown only after it.
    assert marks["script"] <= marks["runtime"] <= marks["session"] and marks["fetched"] <= marks["session"]
    assert marks["golden"] <= marks["encoded"] <= marks["checked"] and marks["session"] <= marks["checked"]
    assert marks["checked"] <= marks["searched"] <= first["at"] <= marks["shown"]
    assert 0 < first["netSeconds"] <= first["seconds"] and first["evaluations"] <= 64
    record_property("first_model_move_s", round(first["at"] / 1000, 3))
    assert first["mode"] == "browser" and first["visits"] == 64
    assert state["check"]["checked"] == 32
    assert "Self-check passed: 32 positions" in page.inner_text("#check")
    assert page.locator("#top-moves tr").count() > 0 and "win" in page.inner_text("#wdl-text")
    # After its first move the page builds the optimised session and checks it on the golden positions;
    # once that passed, the next move is searched with it.
    assert first["optimized"] is False
    page.wait_for_function("window.czState.optimized !== undefined", timeout=TIMEOUT_MS)
    optimized = page.evaluate("window.czState.optimized")
    assert optimized == {"ok": True, "checked": 32, "failures": []}
    assert "optimised session passed it too" in page.inner_text("#check")
    reply = "e7e5" if first["uci"] != "e2e4" else "c7c5"
    click_move(page, reply, white_at_bottom=False)
    state = wait_for_model_moves(page, 2)
    assert state["modelMoves"][1]["optimized"] is True
    played = page.eval_on_selector_all("#moves .san", "spans => spans.map(s => s.dataset.uci)")
    assert played == [first["uci"], reply, state["modelMoves"][1]["uci"]]
    page.click("#export-pgn")
    pgn = page.input_value("#pgn")
    assert '[White "chesszero int8.onnx"]' in pgn and '[Black "Human"]' in pgn and "2. " in pgn
    page.close()


def test_server_thinking_answers_a_clicked_move(browser: object, server: ServerThread) -> None:
    page = open_page(browser, f"{server.url}?side=white&visits=32&mode=server")
    page.wait_for_function("window.czState.selfCheck === 'passed'", timeout=TIMEOUT_MS)
    click_move(page, "e2e4", white_at_bottom=True)
    state = wait_for_model_moves(page, 1)
    move = state["modelMoves"][0]
    assert move["mode"] == "server" and move["uci"][1] in "78"  # a Black move
    assert "Server search, 32 visits" in page.inner_text("#eval-side")
    page.close()


def test_a_corrupted_golden_file_makes_the_page_refuse_to_play(browser: object, tmp_path: Path) -> None:
    shutil.copy(published() / "int8.onnx", tmp_path / "int8.onnx")
    golden = json.loads(golden_path(published() / "int8.onnx").read_text())
    rows = golden["positions"]
    w = rows[7]["wdl"][0]
    rows[7]["wdl"][0] = w + 0.2 if w < 0.5 else w - 0.2  # a win probability off by 4x the tolerance
    rows[3]["planes_sha256"] = "0" * 64  # and planes the encoder cannot have produced
    golden_path(tmp_path / "int8.onnx").write_text(json.dumps(golden))
    with ServerThread(choose_model(model=tmp_path / "int8.onnx")) as corrupted:
        page = open_page(browser, f"{corrupted.url}?side=black&visits=16")
        page.wait_for_function("window.czState.selfCheck !== 'pending'", timeout=TIMEOUT_MS)
        state = page.evaluate("window.czState")
        assert state["selfCheck"] == "failed"
        assert f"{rows[3]['id']}: the input planes differ from the Python encoding" in state["failures"]
        assert any(f.startswith(f"{rows[7]['id']}: W is") for f in state["failures"])
        assert len(state["failures"]) == 2
        assert "self-check FAILED" in page.inner_text("#status")
        assert state["modelMoves"] == []  # the model (White) never moved
        click_move(page, "e7e5", white_at_bottom=False)  # and the board takes no move
        assert page.eval_on_selector_all("#moves .san", "spans => spans.length") == 0
        page.close()


def test_watching_the_model_play_a_ladder_rung(browser: object, server: ServerThread) -> None:
    page = open_page(browser, f"{server.url}?side=black&opponent=greedy&visits=8")
    page.wait_for_function("window.czState.modelMoves.length >= 2 && window.czState.opponentMoves.length >= 2"
                           " || window.czState.errors.length > 0", timeout=TIMEOUT_MS)
    model, rung, shown = page.evaluate(
        "[czState.modelMoves.map(m => m.uci), czState.opponentMoves.map(m => m.uci), "
        "[...document.querySelectorAll('#moves .san')].map(s => s.dataset.uci)]")
    assert page.evaluate("czState.errors") == []
    assert shown[0::2] == model[: len(shown[0::2])] and shown[1::2] == rung[: len(shown[1::2])]
    assert page.input_value("#opponent") == "greedy"
    assert page.evaluate("window.czState.modelMoves.length") >= len(model)  # it plays on by itself
    page.select_option("#opponent", "")  # back to a person: the new game waits for one
    before = page.evaluate("czState.modelMoves.length")
    page.click("#new-game")
    page.wait_for_function(f"czState.modelMoves.length > {before} && "
                           "document.querySelectorAll('#moves .san').length === 1", timeout=TIMEOUT_MS)
    assert page.inner_text("#status") == "Your move."
    page.close()


# White to move at move 40: a pawn on e7 to promote, Black's king on c3 and a pawn on h3 (not a draw after e8=N)
PROMOTION_FEN = "8/4P3/8/8/8/2k4p/8/4K3 w - - 0 40"


def test_a_start_position_with_an_underpromotion_chosen_by_the_person(browser: object,
                                                                      server: ServerThread) -> None:
    url = f"{server.url}?side=white&visits=8&mode=server&fen={quote(PROMOTION_FEN)}"
    page = open_page(browser, url)
    page.wait_for_function("window.czState.selfCheck === 'passed'", timeout=TIMEOUT_MS)
    assert page.evaluate("czState.startFen") == PROMOTION_FEN
    assert page.input_value("#start-fen") == PROMOTION_FEN
    assert page.inner_text("#status") == "Your move."
    page.select_option("#promotion", "n")  # a knight, not the queen the page offers first
    click_move(page, "e7e8", white_at_bottom=True)
    state = wait_for_model_moves(page, 1)
    reply = state["modelMoves"][0]["uci"]
    assert reply[:2] in {"c3", "h3"}  # Black's king or pawn
    numbers, played = page.evaluate("[[...document.querySelectorAll('#moves .number')].map(s => s.textContent), "
                                    "[...document.querySelectorAll('#moves .san')].map(s => s.dataset.uci)]")
    assert played == ["e7e8n", reply] and numbers == ["40."]
    page.click("#export-pgn")
    pgn = page.input_value("#pgn")
    assert '[SetUp "1"]' in pgn and f'[FEN "{PROMOTION_FEN}"]' in pgn and "40. e8=N" in pgn
    page.close()


def test_a_start_position_with_black_to_move_and_a_refused_one(browser: object, server: ServerThread) -> None:
    after_e4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1"
    page = open_page(browser, f"{server.url}?side=white&visits=8&mode=browser&fen={quote(after_e4)}")
    state = wait_for_model_moves(page, 1)  # the model has Black, to move in the start position: it moves first
    assert state["modelMoves"][0]["mode"] == "browser" and state["modelMoves"][0]["uci"][1] in "78"
    assert page.evaluate("[...document.querySelectorAll('#moves .number')].map(s => s.textContent)") == ["1..."]
    assert page.inner_text("#status") == "Your move."
    # A malformed FEN in the field: the new game is refused with the reason, and the board takes no move.
    page.fill("#start-fen", "8/8/8 w - - 0 1")
    page.click("#new-game")
    page.wait_for_function("czState.errors.length > 0", timeout=TIMEOUT_MS)
    assert page.evaluate("czState.startFen") is None
    assert page.evaluate("czState.errors")[0].startswith('Start position refused: "8/8/8 w - - 0 1" is not a valid FEN')
    assert "Start position refused" in page.inner_text("#status")
    click_move(page, "e2e4", white_at_bottom=True)
    assert page.eval_on_selector_all("#moves .san", "spans => spans.length") == 0
    # Emptied, the field means the initial position again.
    page.fill("#start-fen", "")
    page.click("#new-game")
    page.wait_for_function("czState.startFen !== null", timeout=TIMEOUT_MS)
    assert page.evaluate("czState.startFen") == "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
    assert page.inner_text("#status") == "Your move."
    page.close()
