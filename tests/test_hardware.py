"""Hardware profiles: families by extends:, facts per software stack, the runner's share of a node."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner import check, pipeline
from runner.cells import hardware
from runner.cells.cell import Cell
from runner.errors import SpecError
from runner.spec import locate
from tests.conftest import DATA, known_elided

MATRICES = locate.BUNDLED_MATRICES
HW = MATRICES / "hardware"
ROCM = MATRICES / "rocm" / "glm5-async.yaml"
NV = MATRICES / "nv" / "glm5-colocate.yaml"
UPSTREAM = sorted((DATA / "upstream-amd").glob("*.yaml"))


def errors(cell: Cell) -> list[str]:
    return [str(p) for p in check.run(cell) if p.severity == "error"]


# --- upstream: no false alarm ------------------------------------------------------------------


@pytest.mark.parametrize("spec", UPSTREAM, ids=lambda p: p.stem)
def test_what_miles_main_runs_on_amd_validates(spec: Path) -> None:
    # tools/check_amd_upstream.py records these from the real checkout; here they are fixtures
    assert [errors(cell) for cell in pipeline.cells(spec)] == [[]]


def test_the_same_launch_on_pr1124s_stack_needs_its_workarounds(write) -> None:
    spec = write(
        "spec.yaml", f"extends: {DATA / 'upstream-amd' / 'run-qwen3-4b.yaml'}\nmiles_version: dc8b499b\n"
    )
    found = [p for p in check.run(pipeline.cell(spec)) if p.rule in ("P3", "P4")]
    assert [p.message for p in found] == [
        "--attention-backend flash is not available on mi350x with the miles-dc8b499b stack"
        " (lmsysorg/sglang:v0.5.10-rocm720-mi35x + sglang-miles (docker/Dockerfile.rocm_MI350-5);"
        " ROCm/TransformerEngine v2.8_rocm, NVTE_FUSED_ATTN=0 baked into the image)"
        " (Transformer Engine there supports fused, unfused, local, auto)",
        "SGLang's custom all-reduce must be disabled on mi350x with the miles-dc8b499b stack"
        " (lmsysorg/sglang:v0.5.10-rocm720-mi35x + sglang-miles (docker/Dockerfile.rocm_MI350-5);"
        " ROCm/TransformerEngine v2.8_rocm, NVTE_FUSED_ATTN=0 baked into the image)",
    ]


@pytest.mark.parametrize("spec", [NV, ROCM])
def test_the_pr1124_pair_targets_its_own_stack(spec: Path) -> None:
    cell = pipeline.cell(spec)
    assert cell.profile.stack == "miles-dc8b499b"
    assert errors(cell) == []


# --- stacks ------------------------------------------------------------------------------------


def test_a_cell_gets_the_stack_of_its_miles_version() -> None:
    mi355x = hardware.load(HW / "mi355x.yaml")
    assert hardware.stack_for(mi355x, "dc8b499b") == "miles-dc8b499b"
    assert hardware.stack_for(mi355x, "31f1ca96e") == "miles-31f1ca96"  # a longer prefix names it too
    assert hardware.stack_for(mi355x, None) == "miles-31f1ca96"  # none: the newest shipped version
    assert hardware.stack_for(mi355x, "0123abcd") == "miles-31f1ca96"  # a version nothing dates: the newest
    on_pr = hardware.on_stack(mi355x, "dc8b499b")
    assert (on_pr.supports.megatron_attention_backends[0], on_pr.supports.custom_all_reduce) == (
        "fused",
        False,
    )
    assert on_pr.supports.deepep is False  # a fact of every stack
    assert on_pr.sources["custom_all_reduce"].startswith("miles dc8b499b tests/e2e/megatron/")
    on_main = hardware.on_stack(mi355x, "31f1ca96")
    assert (on_main.supports.megatron_attention_backends[0], on_main.supports.custom_all_reduce) == (
        "flash",
        True,
    )


def test_a_version_between_stacks_gets_the_newest_older_one(write) -> None:
    write(
        "hardware/mi999x.yaml",
        f"extends: {HW / 'mi355x.yaml'}\nname: mi999x\nstacks:\n  miles-31f1ca96: !delete\n",
    )
    profile = hardware.load(Path("hardware/mi999x.yaml").resolve())
    assert list(profile.stacks) == ["miles-dc8b499b"]
    assert hardware.stack_for(profile, "31f1ca96") == "miles-dc8b499b"


def test_a_stack_without_a_fact_or_a_fact_without_a_source_is_refused(write) -> None:
    base = f"extends: {HW / 'mi355x.yaml'}\nname: mi999x\n"
    write(
        "hardware/mi999x.yaml",
        base + "stacks:\n  miles-dc8b499b:\n    supports:\n      custom_all_reduce: !delete\n",
    )
    with pytest.raises(SpecError) as caught:
        hardware.load(Path("hardware/mi999x.yaml").resolve())
    assert [(p.key, p.message) for p in caught.value.problems] == [
        (
            "stacks.miles-dc8b499b.supports",
            "custom_all_reduce not stated, for every stack or for this one",
        )
    ]
    base = base.replace("mi999x", "mi998x")  # profiles are read once per file
    write(
        "hardware/mi998x.yaml",
        base + "stacks:\n  miles-dc8b499b:\n    sources:\n      custom_all_reduce: !delete\n",
    )
    with pytest.raises(SpecError) as caught:
        hardware.load(Path("hardware/mi998x.yaml").resolve())
    assert "sources: no source for custom_all_reduce; say where each fact comes from" in str(caught.value)


def test_profiles_of_a_family_extend_it() -> None:
    h100, h200 = hardware.load(HW / "h100.yaml"), hardware.load(HW / "h200.yaml")
    assert (h100.memory_gb, h200.memory_gb) == (80, 141)
    assert h100.supports == h200.supports and h100.stacks == h200.stacks
    assert "families" not in {path.parent.name for path in HW.glob("*.yaml")}
    assert "mi350x" in hardware.profiles() and "amd-instinct" not in hardware.profiles()


def test_one_error_for_an_unknown_profile(cli, write) -> None:
    expected = "no hardware profile named 'mi35x' (known: ...)"
    shown = cli("hardware", "mi35x")
    assert shown.code == 2 and expected in known_elided(shown.err) and "did you mean 'mi355x'?" in shown.err
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", f"extends: {ROCM}\nhardware: mi35x\n"))
    assert known_elided(caught.value.problems[0].message) == expected


# --- the runner's share of a node --------------------------------------------------------------


def test_a_mask_the_runner_set_wins_over_a_rendered_one(write, monkeypatch) -> None:
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "4,5,6,7")
    overlay = "cluster:\n  gpus_per_node: ${runner.gpus_per_node}\nenv:\n  HIP_VISIBLE_DEVICES: ${visible_devices}\n"
    cell = pipeline.cell(
        write("spec.yaml", f"extends: {DATA / 'upstream-amd' / 'test-amd-mtp1-spec-v2-r3.yaml'}\n{overlay}")
    )
    assert cell.share == hardware.Share(4, "HIP_VISIBLE_DEVICES", ("4", "5", "6", "7"))
    assert (cell.spec.cluster.gpus_per_node, cell.spec.env["HIP_VISIBLE_DEVICES"]) == (4, "4,5,6,7")
    assert errors(cell) == []


def test_without_a_mask_the_share_is_the_whole_node(write) -> None:
    cell = pipeline.cell(
        write("spec.yaml", f"extends: {ROCM}\nenv:\n  HIP_VISIBLE_DEVICES: ${{visible_devices}}\n")
    )
    assert cell.share == hardware.Share(8)
    assert cell.spec.env["HIP_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"


def test_l3_a_cell_needs_no_more_than_the_runners_share(write, monkeypatch) -> None:
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "4,5,6,7")
    found = [p for p in check.run(pipeline.cell(ROCM)) if p.rule == "L3"]
    assert [(p.key, p.message, p.hint) for p in found] == [
        (
            "cluster.gpus_per_node",
            "cluster.gpus_per_node 8 is more than this runner's share of the node: HIP_VISIBLE_DEVICES=4,5,6,7 (4 GPUs)",
            "set cluster.gpus_per_node: ${runner.gpus_per_node}, or run it where the mask gives enough GPUs",
        )
    ]
    assert found[0].locations[0].file.name == "glm5-744b-a40b-4layer.yaml"


def test_l3_a_node_holds_no_more_than_the_profile(write) -> None:
    spec = write("spec.yaml", f"extends: {ROCM}\ncluster:\n  gpus_per_node: 16\n")
    found = [p for p in check.run(pipeline.cell(spec)) if p.rule == "L3" and p.key == "cluster.gpus_per_node"]
    assert [p.message for p in found] == ["cluster.gpus_per_node 16 is more than a mi355x node has (8)"]


@pytest.mark.parametrize(
    ("overlay", "verdict"),
    [
        # miles' default 8 on one 4-GPU runner: engine GPUs (offset + rank x n) % 8 never wrap
        ("cluster:\n  gpus_per_node: 4\n", []),
        # 2 of a 4-GPU node: (2 + 0) % 2 puts the engine on the actor's GPU 0
        (
            "cluster:\n  gpus_per_node: 4\nargs:\n  misc:\n    num-gpus-per-node: 2\n",
            ["engine GPUs wrap around at 2 onto GPUs the actor or another engine holds"],
        ),
        # two nodes: miles maps engine ranks to nodes by its own count
        (
            "cluster:\n  nodes: 2\n  gpus_per_node: 4\nargs:\n  misc:\n    actor-num-nodes: 2\n",
            ["miles counts 8 GPUs per node when it maps engine ranks to the 2 nodes"],
        ),
    ],
)
def test_l3_miles_gpus_per_node(write, overlay: str, verdict: list[str]) -> None:
    spec = write(
        "spec.yaml", f"extends: {DATA / 'upstream-amd' / 'test-amd-mtp1-spec-v2-r3.yaml'}\n{overlay}"
    )
    found = [
        p.message
        for p in check.run(pipeline.cell(spec))
        if p.rule == "L3" and p.key.endswith("num-gpus-per-node")
    ]
    assert [m.partition("gets): ")[2] for m in found] == verdict


def test_the_mask_variables_follow_the_platform() -> None:
    mi350x, h200 = hardware.target(HW / "mi350x.yaml", None), hardware.target(HW / "h200.yaml", None)
    assert hardware.share(mi350x, {"CUDA_VISIBLE_DEVICES": "2,3"}) == hardware.Share(
        2, "CUDA_VISIBLE_DEVICES", ("2", "3")
    )
    assert hardware.share(mi350x, {"HIP_VISIBLE_DEVICES": "4, 5", "CUDA_VISIBLE_DEVICES": "0"}).devices == (
        "4",
        "5",
    )
    assert hardware.share(h200, {"HIP_VISIBLE_DEVICES": "4,5"}) == hardware.Share(
        8
    )  # HIP's mask means nothing here
    assert hardware.share(h200, {"CUDA_VISIBLE_DEVICES": " , "}) == hardware.Share(8)  # an empty mask is none


def test_explain_says_which_stack_decided(cli, write) -> None:
    spec = write(
        "spec.yaml", f"extends: {DATA / 'upstream-amd' / 'run-qwen3-4b.yaml'}\nmiles_version: !delete\n"
    )
    shown = cli("explain", str(spec), "hardware", "--format", "json").out
    assert json.loads(shown)["hardware"] == {
        "profile": "mi350x",
        "stack": "miles-31f1ca96",
        "why": "mi350x on its miles-31f1ca96 stack (the container of miles 31f1ca96): the newest shipped miles"
        " version, as the spec names none",
    }


def test_a_profile_without_a_source_for_its_machine_facts_is_refused(write) -> None:
    write(
        "hardware/mi997x.yaml", f"extends: {HW / 'mi355x.yaml'}\nname: mi997x\nsources:\n  machine: !delete\n"
    )
    with pytest.raises(SpecError) as caught:
        hardware.load(Path("hardware/mi997x.yaml").resolve())
    assert str(caught.value) == (
        "hardware/mi997x.yaml:3: error [missing-key] sources: no source for the machine facts (memory_gb, arch,"
        " interconnect, ...): add sources: {machine: <the product page>}"
    )


def test_a_profile_folder_or_file_named_alone_is_checked_as_profiles(cli, write) -> None:
    write("hardware/families/mine.yaml", f"extends: {HW / 'mi355x.yaml'}\n")
    write("hardware/good.yaml", "extends: families/mine.yaml\nname: good\n")
    write("hardware/bad.yaml", "extends: families/mine.yaml\nname: bad\nmemory_gb: lots\n")
    bad = (
        "hardware/bad.yaml:3: error [type] memory_gb: Input should be a valid integer, unable to parse string as"
        " an integer, got 'lots'"
    )
    for named in ("hardware", "hardware/", "hardware/bad.yaml"):
        result = cli("validate", named)
        assert result.code == 2
        assert result.out.splitlines()[0] == bad
        assert "'hardware' is required" not in result.out
    folder = cli("validate", "hardware/").out.splitlines()[-1]
    assert folder.startswith("0 cells, 3 supporting files checked in ") and folder.endswith(
        ": 1 error, 0 warnings"
    )
    assert cli("validate", "hardware/good.yaml").code == 0
    refused = cli("render", "hardware/good.yaml")
    assert (refused.code, refused.err) == (
        2,
        "run-matrix: hardware/good.yaml is a hardware profile, not a spec: `run-matrix validate hardware/good.yaml`"
        " checks it, `run-matrix hardware good` shows it\n",
    )


BLACKWELL = HW / "families" / "nvidia-blackwell.yaml"


def _refused(path: str) -> str:
    with pytest.raises(SpecError) as caught:
        hardware.load(Path(path).resolve())
    return str(caught.value)


def test_a_profile_without_sources_is_blamed_on_its_own_file_not_its_family(write) -> None:
    write(
        "hardware/b290.yaml", f"extends: {BLACKWELL}\nname: b290\ndescription: no sources\nmemory_gb: 180\n"
    )
    assert _refused("hardware/b290.yaml") == (
        "hardware/b290.yaml:2: error [missing-key] sources: no source for the machine facts (memory_gb, arch,"
        " interconnect, ...): add sources: {machine: <the product page>}"
    )


def test_a_fact_without_a_source_is_blamed_where_it_is_stated(write) -> None:
    write(
        "hardware/b291.yaml",
        f"extends: {BLACKWELL}\nname: b291\nmemory_gb: 180\nsources:\n  machine: a product page\nsupports:\n"
        "  moe_dense_tp_full: true\n",
    )
    assert _refused("hardware/b291.yaml") == (
        "hardware/b291.yaml:7: error [missing-key] sources: no source for moe_dense_tp_full; say where each fact"
        " comes from"
    )


@pytest.mark.parametrize(
    ("arch", "capability"),
    [
        ("sm80", (8, 0)),
        ("sm89", (8, 9)),
        ("sm90", (9, 0)),
        ("sm90a", (9, 0)),
        ("sm100", (10, 0)),
        ("sm103", (10, 3)),
        ("sm120", (12, 0)),
        ("gfx942", (9, 4)),
        ("gfx950", (9, 5)),
        ("gfx90a", (9, 0)),
    ],
)
def test_an_arch_agrees_with_its_compute_capability(arch: str, capability: tuple[int, int]) -> None:
    vendor = "amd" if arch.startswith("gfx") else "nvidia"
    machine = hardware.load(HW / ("mi355x.yaml" if vendor == "amd" else "b200.yaml"))
    assert machine.model_copy(update={"arch": arch, "compute_capability": capability}).arch_mismatch() is None
    other = (capability[0], capability[1] + 1)
    assert machine.model_copy(update={"arch": arch, "compute_capability": other}).arch_mismatch() is not None


def test_sm100_with_compute_capability_10_3_is_refused_at_the_profiles_line(write) -> None:
    write(
        "hardware/b300.yaml",
        f"extends: {BLACKWELL}\nname: b300\ncompute_capability: [10, 3]\nmemory_gb: 288\nsources:\n  machine: a product page\n",
    )
    assert _refused("hardware/b300.yaml") == (
        "hardware/b300.yaml:3: error [arch] compute_capability: sm100 is compute capability 10.0, not 10.3 as"
        " compute_capability says\n"
        f"  ==> also at {BLACKWELL}:4 (arch)\n"
        "  ==> set compute_capability: [10, 0], or the arch whose compute capability is 10.3"
    )
    write(
        "hardware/b301.yaml",
        f"extends: {BLACKWELL}\nname: b301\narch: sm103\ncompute_capability: [10, 3]\nmemory_gb: 288\n"
        "sources:\n  machine: a product page\n",
    )
    assert hardware.load(Path("hardware/b301.yaml").resolve()).arch == "sm103"


def test_an_amd_profile_s_arch_is_checked_against_its_capability_and_vendor(write) -> None:
    write(
        "hardware/mi356x.yaml", f"extends: {HW / 'mi355x.yaml'}\nname: mi356x\ncompute_capability: [9, 4]\n"
    )
    assert _refused("hardware/mi356x.yaml").splitlines()[0] == (
        "hardware/mi356x.yaml:3: error [arch] compute_capability: gfx950 is compute capability 9.5, not 9.4 as"
        " compute_capability says"
    )
    write("hardware/mi357x.yaml", f"extends: {HW / 'mi355x.yaml'}\nname: mi357x\narch: sm90\n")
    assert _refused("hardware/mi357x.yaml").splitlines()[::2] == [
        "hardware/mi357x.yaml:3: error [arch] arch: 'sm90' is not an AMD architecture name",
        "  ==> write it as gfx<major><minor><stepping>: gfx942, gfx950, or set the vendor whose name it is",
    ]
