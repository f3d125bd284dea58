"""A suite import's looks ask every recording an import can name at once (``capture.each_of``).

An import lacks recordings in steps: its run with no switch set, then one run per combination of the
switches that run read and, beside those, the first run of each side it registers for (ROCm's CI
environment), then that side's combinations. Asked one at a time, each look of the suite found one
run per test, and the short rounds were left to recordings alone. The oracle for what the import
writes is the same import with every recording made alone, one after another.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner import sandbox
from runner.importer import capture, suite

pytestmark = pytest.mark.allow_subprocess  # the import records the tests in sandbox interpreters

FOLDER = Path("tests/e2e/short")  # 8 tests; 4 read MILES_TEST_FEW_GPU and register for both platforms


def test_each_of_makes_every_one_and_asks_what_they_lack_together():
    made: list[str] = []

    def lacking(*envs: dict[str, str]):
        def make():
            made.append("lacking")
            raise capture.NotKept(list(envs))

        return make

    def kept():
        made.append("kept")
        return 1

    a, b = {"A": "1"}, {"B": "1"}
    assert capture.each_of([kept, kept]) == [1, 1]
    with pytest.raises(capture.NotKept) as raised:
        capture.each_of([lacking(a), kept, lacking(b, a)])
    assert raised.value.envs == [a, b]  # each once, in the order asked
    assert made == ["kept", "kept", "lacking", "kept", "lacking"]  # none skipped after the first lack
    with pytest.raises(capture.NotKept) as raised:  # nested: the inner lacks join the outer's
        capture.both(lacking(a), lambda: capture.each_of([lacking(b)]))
    assert raised.value.envs == [a, b]


def imported(
    cli, root: Path, out: Path, folder: Path = FOLDER
) -> tuple[dict[str, str], list[str], list[str]]:
    """The files an import of ``folder`` writes, what it told, and the recordings it made alone."""
    real, alone = sandbox.run, []

    def counted(argv, *args, **kwargs):
        if str(capture.HARNESS) in argv and "--each" not in argv:  # a recording alone
            alone.append(Path(argv[4]).name)
        return real(argv, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sandbox, "run", counted)
        result = cli("import", str(root / folder), "--miles-root", str(root), "-o", str(out), "-j", "1")
    assert result.code == 0, result.err  # (short/: two tests never launch: left out, nothing to import)
    files = {str(path.relative_to(out)): path.read_text() for path in sorted(out.rglob("*.yaml"))}
    return files, result.err.splitlines(), alone


def compared(cli, root: Path, tmp_path: Path, monkeypatch, folder: Path = FOLDER):
    """The import of ``folder`` recording together, and again with every recording made alone: the
    first's files (asserted to be the second's), rounds told and recordings made alone, and the
    second's recordings."""
    monkeypatch.setenv("RUN_MATRIX_CACHE_DIR", str(tmp_path / "cache"))
    files, told, alone = imported(cli, root, tmp_path / "together" / "out", folder)
    monkeypatch.setenv("RUN_MATRIX_CACHE_DIR", str(tmp_path / "alone"))
    monkeypatch.setattr(suite, "_recorded_together", lambda *args: None)
    one_by_one, _, made_alone = imported(cli, root, tmp_path / "one-by-one" / "out", folder)
    assert files == one_by_one
    return files, [line for line in told if line.startswith("recording ")], alone, made_alone


def test_the_looks_record_each_side_and_every_switch_together_and_write_what_recordings_alone_write(
    cli, upstream_miles, tmp_path, monkeypatch
):
    files, rounds, alone, made_alone = compared(cli, upstream_miles("31f1ca96"), tmp_path, monkeypatch)
    # the unset runs; then, of the 4 tests with switches, both switch values and the ROCm side's first
    # run at once (one look each, not three), beside 2 tests' ROCm side; then the ROCm side's values
    assert rounds == [
        "recording 8 tests together",
        "recording 6 tests together (look 1: 14 runs)",
        "recording 4 tests together (look 2: 8 runs)",
    ]
    assert alone == []
    assert len(made_alone) > 8 * 3  # every run of every test
    assert len(files) > 8


def test_a_test_recorded_again_with_its_functions_as_calls_has_each_run_recorded_together(
    cli, upstream_miles, tmp_path, monkeypatch
):
    # 3 of ft/'s 14 tests run again with functions of their own recorded as calls (a prepare call
    # that lists what a download wrote), one of them twice: each run is a recording of its own
    # environment, looked up by the import after the one before; every round is made here, however
    # short (at -j 1 a round takes 4 runs: a tuning)
    monkeypatch.setattr(suite, "FEWEST_PER_SANDBOX", 0)
    root, ft = upstream_miles("31f1ca96"), Path("tests/e2e/ft")
    files, rounds, alone, made_alone = compared(cli, root, tmp_path, monkeypatch, ft)
    assert rounds == [
        "recording 14 tests together",
        "recording 3 tests together (look 1: 3 runs)",
        "recording 1 test together (look 2: 1 run)",
    ]
    assert alone == []
    assert len(made_alone) == 14 + 3 + 1  # every test once, the 3 again with their calls recorded, 1 twice
    assert "prepare:" in "".join(files.values())  # the calls recorded, as the spec's prepare steps
