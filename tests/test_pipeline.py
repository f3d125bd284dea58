from __future__ import annotations

import hashlib
import json

from runner import pipeline
from runner.cells import build
from runner.spec import locate
from tests.conftest import QWEN3_CASES
from tests.test_model import MINIMAL, VALID

MATRICES = locate.BUNDLED_MATRICES


def test_content_hash_is_stable_and_follows_the_resolved_spec(write):
    a = pipeline.cell(write("a.yaml", VALID))
    b = pipeline.cell(write("b.yaml", VALID))
    c = pipeline.cell(write("c.yaml", VALID.replace("gpus_per_node: 8", "gpus_per_node: 4")))
    assert a.content_hash == b.content_hash != c.content_hash
    assert len(a.content_hash) == 12


def test_content_hash_leaves_out_the_gates_which_judge_a_launch_and_never_change_it(write):
    """A band written by `history recommend --write` keeps the cell's identity, and with it the runs the
    band was learned from; a cell without gates keeps the hash it had before gates left the hash."""
    plain = pipeline.cell(write("a.yaml", VALID))
    gated = pipeline.cell(write("b.yaml", VALID + "expect:\n  perf/step_time: {max: 30}\n"))
    banded = pipeline.cell(
        write("c.yaml", VALID + "expect:\n  perf/step_time: {band: {rel_up: 0.1, rel_down: 0.1}}\n")
    )
    assert plain.content_hash == gated.content_hash == banded.content_hash
    # an ungated cell's hash is what it was before gates left the hash: all it resolves to, hashed
    resolved = {name: getattr(plain, name).model_dump(mode="json") for name in ("spec", "profile", "preset")}
    before = hashlib.sha256(json.dumps(resolved, sort_keys=True, default=str).encode()).hexdigest()[:12]
    assert plain.spec.expect == {} and plain.content_hash == before


def test_spec_files_skip_bases_and_profiles():
    found = [p.relative_to(MATRICES).as_posix() for p in build.spec_files([MATRICES])]
    assert found == [
        "nv/glm5-colocate.yaml",
        "nv/glm5-main-ci.yaml",
        "nv/glm5-main.yaml",
        *(f"qwen3-30b-a3b/{case}.yaml" for case in QWEN3_CASES),
        "rocm/glm5-async.yaml",
    ]


def test_candidates_are_built_from_memory_and_never_cached(write, tmp_path):
    """port and import check texts they have not written: the spec and its component are documents,
    the base is read from disk, and a document shadows whatever the disk holds at its path."""
    base = write("base.yaml", VALID)
    spec, component = tmp_path / "new" / "spec.yaml", tmp_path / "new" / "part.yaml"
    text = (
        f"extends: {base}\nmatrix:\n  axes:\n    gpus: [8, 4]\n  adjust:\n    small:\n"
        "      match: {gpus: 4}\n      overlay: part.yaml\ncluster:\n  gpus_per_node: ${matrix.gpus}\n"
    )
    documents = {spec.resolve(): text, component.resolve(): "description: small\n"}
    built = pipeline.cells(spec, documents=documents)
    assert [(c.id, c.spec.cluster.gpus_per_node, c.spec.description) for c in built] == [
        ("new/spec", 8, ""),
        ("new/spec[gpus=4]", 4, "small"),
    ]
    assert not spec.parent.exists()  # nothing was written
    again = pipeline.cells(spec, documents={**documents, component.resolve(): "description: other\n"})
    assert again[1].spec.description == "other"  # a candidate is composed afresh each time


TYPO = """args:
  misc: {colocate: true}
  sglang:
    why:
      sglang-dp-size, sglang-ep-size: with DP-attention, DP=2 EP=2 split each 2-GPU engine
    sglang-dp-sise: 2
    sglang-ep-size: 2
"""


def test_a_misspelt_flag_that_keeps_its_why_is_named_first_with_did_you_mean(cli, write):
    path = write("spec.yaml", MINIMAL + TYPO)
    done = cli("validate", str(path))
    assert (done.code, done.out.split("1 cell, 0 supporting")[0]) == (
        2,
        "spec.yaml:10: error [F1] args.sglang.sglang-dp-sise: --sglang-dp-sise is not a flag of miles"
        " 31f1ca96 (nor of Megatron and the SGLang its container installs)\n"
        "  ==> did you mean 'sglang-dp-size'?\n"
        "spec.yaml:9: error [why] args.sglang.why.sglang-dp-size, sglang-ep-size: why: gives a reason for"
        " 'args.sglang.sglang-dp-size', which this file does not set\n"
        "  ==> did you mean 'args.sglang.sglang-dp-sise'?\n",
    )


def test_a_why_naming_an_unset_key_of_a_spec_whose_flags_are_known_stands_alone(cli, write):
    path = write("spec.yaml", VALID + "why: {args.misc.colocated: one node}\n")
    done = cli("validate", str(path))
    assert (done.code, done.out.split("1 cell, 0 supporting")[0]) == (
        2,
        "spec.yaml:7: error [why] why.args.misc.colocated: why: gives a reason for 'args.misc.colocated',"
        " which this file does not set\n"
        "  ==> did you mean 'args.misc.colocate'?\n",
    )
