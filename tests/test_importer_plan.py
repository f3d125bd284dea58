"""plan and residual: which file says what, and what a file must still say."""

from __future__ import annotations

from runner.importer.plan import ImportPlan, merge
from runner.importer.residual import data_residual, same_data
from runner.spec.emit import Text
from runner.spec.load import DELETE


def test_a_default_cell_edits_the_spec_and_another_cell_its_component():
    plan = ImportPlan("nv-glm5", {}, taken={"fp8_rollout-true"})
    plan.add({"fp8_rollout": False}, {"fp8_rollout": False}, {"args": {"ckpt": {"load": "/a"}}})
    plan.add({"fp8_rollout": True}, {"fp8_rollout": False}, {"args": {"ckpt": {"load": "/b"}}})
    assert plan.spec == {"args": {"ckpt": {"load": "/a"}}}
    # the base already has an entry of that name: this one is prefixed
    assert plan.adjust == {"nv-glm5-fp8_rollout-true": {"fp8_rollout": True}}
    assert plan.component_file("nv-glm5-fp8_rollout-true") == "nv-glm5-fp8_rollout-true.yaml"


def test_deleting_a_key_this_file_sets_drops_it_and_a_base_key_gets_a_delete():
    data = {"a": 1, "b": {"c": 2}}
    merge(data, {"a": DELETE, "b": {"d": DELETE}})
    assert data == {"b": {"c": 2, "d": DELETE}}


def test_residuals_compare_as_rendered():
    assert same_data({"tp": 1, "x": [128, 128]}, {"tp": Text("1"), "x": [Text("128"), Text("128")]})
    assert not same_data(True, "true") and not same_data(0.7, Text("0.70"))
    current = {"kind": "convert-torch-dist", "nproc_per_node": 8, "parallel": {"tp": 1, "ep": 8}}
    wanted = {"kind": "convert-torch-dist", "nproc_per_node": 4, "parallel": {"tp": Text("1")}}
    assert data_residual(current, wanted) == {"nproc_per_node": 4, "parallel": {"ep": DELETE}}
