"""history recommend --write: the band into the cell's spec with a why:, the spec's comments kept,
the cell's identity (and so its history) kept; a link, a matrix and a spec it cannot edit refused."""

from __future__ import annotations

import json
import os

import pytest

from runner import pipeline
from runner.errors import EnvironmentProblem
from runner.results.history.gates import LAST, Reference
from runner.results.history.location import parse
from runner.results.history.recommend import recommend
from runner.results.history.store import Identity, Store
from runner.results.history.write import write
from schemas.run import Baseline
from tests.test_history_learn import STEP_TIME, _cell_and_store, _record
from tests.test_run_on_ray import specs

__all__ = ["specs"]
SPEC = "m/fake/async.yaml"
GATED = f"# the step time, learned from the history\nexpect:\n  {STEP_TIME}: {{band: {{rel_up: 0.5, rel_down: 0.5}}, steps: last}}  # by hand\n"
WHY = (
    "history recommend: 3 trusted runs, mean 26, spread (sd) 1; 99% prediction interval for the next run "
    "(Student t, 2 df, Bonferroni over 1 coordinate): a healthy run fails 0.96% of the time (Megatron's 1.5x "
    "largest variation: 32.35%); 24 more runs would firm it up"
)
QUOTED = WHY.replace("'", "''")  # in single quotes, as YAML writes a quote there


def _three_runs(specs, history_url: str, expect: str = GATED) -> Identity:
    identity, store = _cell_and_store(specs, history_url, expect)
    for value in (25.0, 26.0, 27.0):
        _record(store, identity, {STEP_TIME: [30.0, value]})
    store.close()
    return identity


def test_write_puts_the_band_and_its_why_in_the_spec_and_the_history_still_holds_its_baseline(
    cli, specs, history_url, tmp_path
):
    identity = _three_runs(specs, history_url)
    before = (tmp_path / SPEC).read_text()
    found = cli("history", "recommend", SPEC, "--history", history_url, "--write")
    assert found.code == 0, found.err
    assert f"wrote {SPEC}:8: expect.{STEP_TIME}.band of fake/async, with its why:\n" in found.out
    assert (tmp_path / SPEC).read_text() == before.replace(
        "{band: {rel_up: 0.5, rel_down: 0.5}, steps: last}  # by hand",
        "{band: {rel_up: 0.45, abs_floor_up: 0.0, rel_down: 0.45, abs_floor_down: 0.0}, steps: last}  # by hand",
    ).replace("# by hand\n", f"# by hand\nwhy:\n  expect.{STEP_TIME}.band: '{QUOTED}'\n")

    (cell,) = pipeline.select([SPEC])  # the why: names a key the file sets: the spec is valid
    assert cell.spec.expect[STEP_TIME].band.rel_up == 0.45
    assert cell.content_hash == identity.content_hash  # the same identity: the runs still count
    store = Store.open(parse(history_url, "--history", from_command_line=True))
    assert store.baseline(identity, Baseline(), {STEP_TIME: "last"}) == {
        (STEP_TIME, LAST): Reference(26.0, 3)
    }
    store.close()
    again = cli("history", "recommend", SPEC, "--history", history_url, "--format", "json", "--write")
    assert again.code == 0, again.err
    report = json.loads(again.out)
    assert report["cells"][0]["metrics"][0]["runs"] == 3
    assert report["written"] == [
        {"path": str(tmp_path / SPEC), "line": 8, "cell": "fake/async", "metric": STEP_TIME}
    ]
    assert (tmp_path / SPEC).read_text().count("why:") == 1  # its own reason replaced, not added twice


def test_write_of_an_ungated_metric_adds_a_gate_on_the_last_step(cli, specs, history_url, tmp_path):
    _three_runs(specs, history_url, expect="")
    found = cli("history", "recommend", SPEC, "--metric", STEP_TIME, "--history", history_url, "--write")
    assert found.code == 0, found.err
    (cell,) = pipeline.select([SPEC])
    assert cell.spec.expect[STEP_TIME].steps == "last"
    assert cell.spec.expect[STEP_TIME].band.rel_down == 0.45


def test_write_never_writes_through_a_link_put_where_the_spec_was(specs, history_url, tmp_path):
    """The spec is read where selection resolved it; a link put there since is refused, its target kept."""
    _three_runs(specs, history_url)
    (cell,) = pipeline.select([SPEC])
    real = tmp_path / "real.yaml"
    os.replace(cell.path, real)
    cell.path.symlink_to(real)
    text = real.read_text()
    recommended = recommend(STEP_TIME, {LAST: [25.0, 26.0, 27.0]})
    with pytest.raises(EnvironmentProblem) as found:
        write([(cell, [recommended])])
    assert str(found.value) == f"{SPEC} is a link (to {real}): run-matrix never writes through a link"
    assert real.read_text() == text


def test_write_refuses_a_spec_whose_cells_share_the_band(cli, specs, history_url, tmp_path):
    _three_runs(specs, history_url)
    path = tmp_path / SPEC
    text = path.read_text().replace("matrix: !delete", "matrix: {axes: {note: [a, b]}}")
    path.write_text(text)
    found = cli("history", "recommend", SPEC, "--history", history_url, "--write")
    assert found.code == 2
    assert found.err == (
        f"{SPEC}:3: error [edit] matrix: the spec expands into 4 cells, which share its expect:, and the band "
        "was learned from the runs of fake/async alone: not written\n"
        "  ==> put the band in an overlay that a matrix adjust: applies to this cell only\n"
    )
    assert path.read_text() == text


def test_write_is_for_recommend_alone(cli, history_url):
    found = cli("history", "--history", history_url, "--write")
    assert (found.code, found.err) == (
        2,
        "run-matrix: --write is for `history recommend`: it writes the bands it proposes\n",
    )


def test_write_without_a_band_writes_nothing_and_says_so(cli, specs, history_url, tmp_path):
    _cell_and_store(specs, history_url, GATED)[1].close()  # a gate, no run
    before = (tmp_path / SPEC).read_text()
    found = cli("history", "recommend", SPEC, "--history", history_url, "--write")
    assert found.code == 0, found.err
    assert found.out.endswith("--write: no band to write, nothing written\n")
    assert (tmp_path / SPEC).read_text() == before


def test_a_metric_whose_name_reads_as_several_why_keys_is_refused_and_nothing_written(
    cli, specs, history_url, tmp_path
):
    odd = "x, y"  # a why: entry "expect.x, y.band" names two keys, neither this band
    identity, store = _cell_and_store(
        specs, history_url, f"expect:\n  '{odd}': {{band: {{rel_up: 1, rel_down: 1}}}}\n"
    )
    for value in (1.0, 2.0, 3.0):
        _record(store, identity, {odd: [value]})
    store.close()
    before = (tmp_path / SPEC).read_text()
    found = cli("history", "recommend", SPEC, "--history", history_url, "--write")
    assert found.code == 2
    assert found.err.startswith(
        f"{SPEC}:7: error [edit] expect.x, y.band: its why: entry would not explain it (another why: does, or "
        "the name reads as several keys): not written\n  ==> write the band by hand: expect.x, y.band: {rel_up: "
    ), found.err
    assert (tmp_path / SPEC).read_text() == before
