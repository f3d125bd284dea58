"""family_base: what the cases of a folder share goes to the base only where it validates."""

from __future__ import annotations

from pathlib import Path

from runner import pipeline
from runner.importer import family_base


def case(repo: str, local_dir: str) -> dict:
    return {
        "description": f"a case of {repo}",
        "hardware": "h100",
        "cluster": {"gpus_per_node": 8},
        "launch": {"script": "train.py"},
        "prepare": {
            "dirs": {"kind": "mkdir", "paths": ["/root/models"]},
            "model": {"kind": "hf-download", "repo": repo, "local_dir": local_dir},
            "clean": {"kind": "remove", "paths": [f"{local_dir}_ckpt"]},
        },
        "args": {"rollout": {"num-rollout": 3}},
    }


def test_a_step_goes_to_the_base_only_with_every_key_its_schema_requires(tmp_path: Path):
    path = tmp_path / "base" / "family.yaml"
    path.parent.mkdir()
    shared = family_base.extract(
        [case("Qwen/Qwen3-4B", "/root/models/Qwen3-4B"), case("zai/GLM", "/root/models/GLM")], "d", path
    )
    assert shared is not None
    # the cases share each step's kind, not its repo, local_dir or paths: no half a step in the base
    assert shared["prepare"] == {"dirs": {"kind": "mkdir", "paths": ["/root/models"]}}
    assert shared["args"] == {"rollout": {"num-rollout": 3}}
    path.write_text(family_base.text(shared, ["a header"]))
    assert [cell.id for cell in pipeline.cells(path)] == ["family"]  # builds: no schema error


def test_cases_that_share_nothing_valid_give_no_base(tmp_path: Path):
    path = tmp_path / "base" / "family.yaml"
    path.parent.mkdir()
    one, other = case("a/a", "/a"), case("b/b", "/b")
    for spec in (one, other):
        del spec["prepare"]["dirs"], spec["args"], spec["launch"], spec["cluster"]
    other["hardware"] = "mi300x"
    assert family_base.extract([one, other], "d", path) is None
