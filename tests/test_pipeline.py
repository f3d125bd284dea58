from __future__ import annotations

from runner import pipeline
from tests.test_model import VALID

MATRICES = pipeline.locate.BUNDLED_MATRICES


def test_content_hash_is_stable_and_follows_the_resolved_spec(write):
    a = pipeline.cell(write("a.yaml", VALID))
    b = pipeline.cell(write("b.yaml", VALID))
    c = pipeline.cell(write("c.yaml", VALID.replace("gpus_per_node: 8", "gpus_per_node: 4")))
    assert a.content_hash == b.content_hash != c.content_hash
    assert len(a.content_hash) == 12


def test_spec_files_skip_bases_and_profiles():
    found = [p.relative_to(MATRICES).as_posix() for p in pipeline.spec_files([MATRICES])]
    cases = ("deepep_fp8", "deepep_fp8_bridge", "disagg_broadcast", "fully_async")
    assert found == [
        "nv/glm5-colocate.yaml",
        "nv/glm5-main-ci.yaml",
        *(f"qwen3-30b-a3b/{case}.yaml" for case in cases),
        "rocm/glm5-async.yaml",
    ]
