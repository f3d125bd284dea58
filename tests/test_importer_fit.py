"""fit.grow: every edit a pass can take at once, and the very files that one edit per pass makes.

The oracle is the one-edit pass itself: ``_differences`` cut to its first edit is how ``grow`` worked
before it took more than one, and the files that both write must be the same, byte for byte, on a real
miles test whose cells reach each other (``few_gpu=true, eval_mode=fleet`` is reached by the edits of
``few_gpu=true`` and of ``eval_mode=fleet``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.importer import fit

pytestmark = pytest.mark.allow_subprocess  # the import records the test in a sandbox interpreter

TEST = Path("tests/e2e/megatron/test_qwen3_4b_fully_async_eval.py")  # 3 axes, 12 cells, 6 components


def imported(cli, root: Path, out: Path) -> tuple[dict[str, str], int]:
    """The files the import of TEST writes under ``out``, and how many times it built the cells."""
    built, builds = fit.built, []

    def counted(*args, **kwargs):
        builds.append(args)
        return built(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fit, "built", counted)
        result = cli("import", str(root / TEST), "--miles-root", str(root), "-o", str(out / "spec.yaml"))
    assert result.code == 0, result.err
    files = {str(path.relative_to(out)): path.read_text() for path in sorted(out.rglob("*.yaml"))}
    return files, len(builds)


def test_one_pass_takes_the_edits_no_earlier_one_reaches_and_writes_what_one_edit_per_pass_writes(
    cli, upstream_miles, tmp_path, monkeypatch
):
    root = upstream_miles("31f1ca96")
    monkeypatch.setenv("RUN_MATRIX_CACHE_DIR", str(tmp_path / "cache"))  # the second import records nothing
    files, builds = imported(cli, root, tmp_path / "together")
    differences = fit._differences
    monkeypatch.setattr(fit, "_differences", lambda *args: differences(*args)[:1])
    one_by_one, passes = imported(cli, root, tmp_path / "one-by-one")
    assert len(files) == 7  # the spec and its 6 components
    assert files == one_by_one
    # one edit per pass: the spec's edit (on the skeleton), one pass per component, the pass that
    # finds none. Taken together: the spec's edit; the 4 cells off their default on one axis; the 2
    # that the edits of few_gpu=true and of eval_mode=fleet or external reach; none.
    assert passes == 1 + 6 + 1
    assert builds == 4
