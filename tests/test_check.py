from __future__ import annotations

import re
from pathlib import Path

import pytest

from runner import check, pipeline
from runner.errors import SpecError
from runner.spec import locate
from tests.test_model import MINIMAL, VALID


def problems_of(write, text: str) -> list[str]:
    write("valid.yaml", VALID)
    return [str(p) for p in check.run(pipeline.cell(write("spec.yaml", "extends: valid.yaml\n" + text)))]


def test_shipped_specs_have_no_problems():
    for spec in ("nv/glm5-colocate.yaml", "rocm/glm5-async.yaml"):
        assert list(check.run(pipeline.cell(locate.BUNDLED_MATRICES / spec))) == []


def test_a_flag_in_two_groups_names_both_places(write):
    assert problems_of(write, "args:\n  perf:\n    colocate: true\n") == [
        # headlined where the user wrote last: the overlay's args.perf, then the base's args.misc
        "spec.yaml:4: error [G1] args.perf.colocate: --colocate is set in two groups, args.perf and args.misc\n"
        "  ==> also at valid.yaml:6 (args.misc.colocate)\n"
        "  ==> keep it in one group (delete the other with `colocate: !delete`)."
    ]


def test_checked_raises_on_errors(write):
    with pytest.raises(SpecError, match=r"\[G1\]"):
        pipeline.checked(
            write("spec.yaml", MINIMAL + "args:\n  perf: {a: 1}\n  misc: {colocate: true, a: 1}\n")
        )


def test_contradicting_model_args_is_a_warning(write):
    assert problems_of(write, "args:\n  misc:\n    num-layers: 8\n") == [
        "spec.yaml:4: warning [G2] args.misc.num-layers: --num-layers 8 contradicts MODEL_ARGS of"
        " glm5-744B-A40B_4layer (--num-layers 4); argparse keeps the last\n"
        f"  ==> also at {locate.PRESETS}/2026-08-21-31f1ca96/glm5-744B-A40B_4layer.yaml:27"
        " (model_args.num-layers)"
    ]


def test_repeating_model_args_is_fine(write):
    assert problems_of(write, "args:\n  misc:\n    moe-grouped-gemm: true\n") == []


def test_secrets_must_be_references(write):
    assert problems_of(write, "env:\n  WANDB_API_KEY: abc123\n") == [
        "spec.yaml:3: error [G3] env.WANDB_API_KEY: env.WANDB_API_KEY holds a literal secret; it would be"
        " printed and stored in reports\n"
        "  ==> write $${WANDB_API_KEY} and set WANDB_API_KEY in the environment that runs run-matrix."
    ]
    assert problems_of(write, "env:\n  WANDB_API_KEY: $${WANDB_API_KEY}\n") == []


@pytest.mark.parametrize("flag", ["wandb-key", "hf-token"])
def test_secret_flags_must_be_references(write, flag: str):
    variable = {"wandb-key": "WANDB_API_KEY", "hf-token": "HF_TOKEN"}[flag]
    for literal in ("literalkey123", "abc"):  # never printed, however short
        # G3 alone: --hf-token is no flag of the pinned miles versions (F1 says so), a secret all the same
        found = [p for p in problems_of(write, f"args:\n  misc:\n    {flag}: {literal}\n") if "[G3]" in p]
        assert found == [
            f"spec.yaml:4: error [G3] args.misc.{flag}: --{flag} holds a literal secret; it would be printed and"
            " stored in reports\n"
            f"  ==> write $${{{variable}}} and set {variable} where run-matrix runs."
        ]
    assert [
        p for p in problems_of(write, f"args:\n  misc:\n    {flag}: $${{{variable}}}\n") if "[G3]" in p
    ] == []
    assert problems_of(write, "args:\n  misc:\n    input-key: prompt\n") == []  # a data field, not a secret


RULES_PAGE = Path(__file__).parents[1] / "docs" / "validation.md"


def _readme_rule_ids() -> set[str]:
    """Every id the rule table of docs/validation.md names: ``G1–G7`` is a range, ``S2–S14, S16`` a list of them."""
    text = RULES_PAGE.read_text(encoding="utf-8").split("# Validation rules", 1)[1].split("\n## ", 1)[0]
    ids: set[str] = set()
    for row in re.findall(r"^\| ([A-Z][0-9][^|]*) \|", text, re.MULTILINE):
        for part in row.split(","):
            first, _, last = part.strip().partition("–")
            last = last or first
            assert first[0] == last[0], row
            ids.update(f"{first[0]}{n}" for n in range(int(first[1:]), int(last[1:]) + 1))
    return ids


def test_readme_lists_every_rule_and_no_other():
    assert _readme_rule_ids() == set(check.RULES) | {row.id for row in check.OUTSIDE_REGISTRY}
