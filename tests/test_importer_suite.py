"""run-matrix import on miles main's layout: CaseConfig families, CI registrations and metric gates,
a checked download, and whole folders with an AMD variant as an overlay of its CUDA sibling.

The checkout is ``fake-miles`` with ``main-layout`` laid over it (see its README).
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from runner.errors import ExitCode, SpecError
from runner.importer import Request, capture, import_test
from runner.spec.load import DELETE, load
from tests.conftest import DATA, fake_checkout

pytestmark = pytest.mark.allow_subprocess  # the import runs each script in a sandbox interpreter

TODAY = datetime.date(2026, 12, 1)
FAMILY = "tests/e2e/tiny_family"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return fake_checkout(tmp_path, "main-layout")


@pytest.fixture
def out(tmp_path: Path) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def imported(checkout: Path, out: Path, test: str, **options: object) -> tuple[dict, str]:
    spec = out / f"{Path(test).stem}.yaml"
    import_test(Request(checkout / FAMILY / test, spec, miles_root=checkout, today=TODAY, **options))  # type: ignore[arg-type]
    return load(spec).data, spec.read_text()


def test_registrations_become_the_ci_block_and_gates_become_bands(checkout, out):
    data, text = imported(checkout, out, "test_nv_case.py")
    assert data["hardware"] == "h200"  # the suite stage-c-8-gpu-h200 names it
    assert data["ci"] == {
        "backend": "cuda",
        "suite": "stage-c-8-gpu-h200",
        "est_time": 600,  # 599.5 s, rounded up
        "labels": ["megatron"],
        "nightly": True,
    }
    assert json.loads(json.dumps(data["expect"])) == {
        "train/grad_norm": {  # left to GATE_DEFAULTS, which the checkout's register.py fills
            "band": {"rel_up": 0.5, "abs_floor_up": 0.1, "rel_down": 0.8, "abs_floor_down": 0.1},
            "steps": "all",
            "enforce": False,  # miles' default: report only
        },
        "perf/step_time": {
            "band": {"rel_up": 0.2, "rel_down": 0.5, "abs_floor_down": 1e-06},
            "steps": [0, 2],
            "enforce": True,
        },
    }
    assert "    band: {rel_up: 0.2, rel_down: 0.5, abs_floor_down: 1.0e-06}\n" in text
    assert (
        "# note: the steps and band of train/grad_norm are miles' GATE_DEFAULTS"
        " (tests/ci/metric_history/register.py), which the script's register_ci_gate leaves out" in text
    )


def test_flags_keep_the_groups_of_the_builder_that_returned_them(checkout, out):
    data, _ = imported(checkout, out, "test_nv_case.py")
    assert data["args"]["perf"] == {"tensor-model-parallel-size": 4, "max-tokens-per-gpu": 4096}
    assert data["args"]["sglang"] == {"rollout-num-gpus-per-engine": 8, "sglang-moe-a2a-backend": "deepep"}
    assert sorted(data["args"]) == ["ckpt", "misc", "perf", "rollout", "sglang"]


def test_notes_name_the_tests_own_reads_not_miles_settings_nor_the_checkout_path(checkout, out):
    _, text = imported(checkout, out, "test_nv_case.py")
    notes = [line for line in text.splitlines() if line.startswith("# note: reads")]
    assert notes == [
        "# note: reads MILES_TEST_TINY_EVAL, which is no known switch; imported as the script runs with it"
        " unset (_common.py:11)"
    ]
    assert text.startswith(
        f"# imported by `run-matrix import` from ${{MILES_ROOT}}/{FAMILY}/test_nv_case.py;"
    )
    assert str(checkout) not in text


def test_a_test_miles_ci_disables_is_skipped_until_a_date_import_sets(cli, checkout, out):
    data, text = imported(checkout, out, "test_amd_nv_case.py")
    assert data["ci"]["backend"] == "rocm" and data["hardware"] == "mi355x"
    assert data["matrix"]["adjust"]["ci-disabled"] == {
        "skip": {
            "reason": "disabled in miles' CI: FIXME: mori hangs at step 2",
            "expires": datetime.date(2027, 3, 1),
        }
    }
    assert (
        "# note: miles' CI disables this test; the skip's expires: 2027-03-01 was set by import (90 days):"
        " confirm it, or re-enable the test (test_amd_nv_case.py:11)" in text
    )
    listed = json.loads(cli("list", str(out / "test_amd_nv_case.yaml"), "--format", "json").out)["cells"]
    assert listed[0]["status"] == "skipped"


def test_a_gate_left_to_miles_defaults_needs_the_checkout(tmp_path):
    with pytest.raises(SpecError) as error:
        import_test(
            Request(DATA / "import" / "gates_without_defaults.py", tmp_path / "x.yaml", hardware="h200")
        )
    assert str(error.value).endswith(
        "error [import]: gates_without_defaults.py cannot be imported: it registers a gate on train/grad_norm"
        " without a constraint, which miles fills from its GATE_DEFAULTS: only a checkout has them — import"
        " with --miles-root DIR\n  ==> nothing was written"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_checked_download_reads_what_import_knows_of_it_and_nothing_else():
    script = DATA / "import" / "reads_the_download.py"
    assert len(capture.record(script, {}, []).calls) == 1  # config.json of Pinaster/GLM-5_4layer is known
    with pytest.raises(SpecError) as error:
        capture.record(script, {"READ_OTHER": "1"}, [])
    assert str(error.value).endswith(
        "reads_the_download.py cannot be imported: it reads /root/models/GLM-5_4layer/tokenizer.json, which"
        " `hf download Pinaster/GLM-5_4layer` would have written: import does not know its content"
        " (miles/import.yaml checkpoints: has no tokenizer.json of Pinaster/GLM-5_4layer)\n"
        "  ==> nothing was written"
    )


def test_a_folder_becomes_a_base_overlays_and_an_amd_overlay_of_its_sibling(cli, checkout, out):
    result = cli("import", str(checkout / FAMILY), "-o", str(out / "tiny"), "--miles-root", str(checkout))
    assert result.code == 0, result.err
    assert result.out.splitlines()[0] == "test_amd_nv_case.py is an overlay of test_nv_case.py"
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*.yaml"))
    assert written == [
        "tiny/amd_nv_case.yaml",
        "tiny/base/tiny.yaml",
        "tiny/nv_case.yaml",
        "tiny/wide_case.yaml",
    ]
    base = load(out / "tiny" / "base" / "tiny.yaml").data
    assert base["args"]["misc"] == {"actor-num-nodes": 1, "actor-num-gpus-per-node": 8, "colocate": True}
    assert "tensor-model-parallel-size" not in base["args"].get("perf", {})  # the cases differ in it
    assert load(out / "tiny" / "nv_case.yaml").data["extends"] == "base/tiny.yaml"
    assert load(out / "tiny" / "amd_nv_case.yaml").data["extends"] == "nv_case.yaml"
    diff = json.loads(
        cli(
            "diff",
            str(out / "tiny" / "nv_case.yaml"),
            str(out / "tiny" / "amd_nv_case.yaml"),
            "--format",
            "json",
        ).out
    )
    assert {d["key"] for d in diff["differences"]} == {
        "hardware",
        "args.sglang.sglang-moe-a2a-backend",
        "args.misc.sglang-disable-custom-all-reduce",
        "env.SGLANG_MORI_NUM_MAX_DISPATCH_TOKENS_PER_RANK",
        "ci.backend",
        "ci.suite",
        "ci.est_time",
        "ci.labels",
        "ci.nightly",
    }
    assert cli("validate", str(out / "tiny")).code == 0


def test_a_refused_case_never_costs_its_folder_mates_their_specs(cli, checkout, out):
    broken = checkout / FAMILY / "test_broken_case.py"
    broken.write_text((checkout / FAMILY / "test_wide_case.py").read_text().replace("tp_size=8", "tp_size=3"))
    result = cli("import", str(checkout / FAMILY), "-o", str(out / "tiny"), "--miles-root", str(checkout))
    assert result.code == ExitCode.SOME_REFUSED == 4, result.err
    assert "\nleft out test_broken_case.py: launches what run-matrix's rules reject" in result.err
    assert "# left out: test_broken_case.py: " in (out / "tiny" / "base" / "tiny.yaml").read_text()
    assert (out / "tiny" / "nv_case.yaml").is_file() and (out / "tiny" / "wide_case.yaml").is_file()
    assert not (out / "tiny" / "broken_case.yaml").exists()
    assert cli("validate", str(out / "tiny")).code == 0


def test_a_folder_whose_every_test_is_refused_writes_nothing_and_says_each_why(cli, checkout, out):
    broken = (checkout / FAMILY / "test_wide_case.py").read_text().replace("tp_size=8", "tp_size=3")
    folder = checkout / "tests" / "e2e" / "alone"
    folder.mkdir()
    (folder / "test_broken_case.py").write_text(broken)
    result = cli("import", str(folder), "-o", str(out / "alone"), "--miles-root", str(checkout))
    assert result.code == 2, result.err
    assert "no test of" in result.err and "so nothing was written" in result.err
    assert "test_broken_case.py: launches what run-matrix's rules reject" in result.err
    assert not (out / "alone").exists() or list((out / "alone").rglob("*.yaml")) == []


def test_an_amd_variant_that_names_no_sibling_overlays_the_nearest_launch(cli, checkout, out):
    variant = checkout / FAMILY / "test_amd_nv_case.py"
    text = variant.read_text().replace(
        "AMD variant of test_nv_case.py (and not of test_wide_case.py, which", "An AMD"
    )
    (checkout / FAMILY / "test_amd_unnamed.py").write_text(text.replace("it only mentions)", "variant"))
    variant.unlink()
    result = cli("import", str(checkout / FAMILY), "-o", str(out / "tiny"), "--miles-root", str(checkout))
    assert result.code == 0, result.err
    assert (
        result.out.splitlines()[0] == "test_amd_unnamed.py is an overlay of test_nv_case.py"
    )  # tp 4, engines of 8


def at_main(checkout: Path) -> Path:
    """The checkout with execute_train's env as miles main sets it: its version is then main's, whose
    launch conventions name the checks (the stand-in's helpers are the PR head's)."""
    helpers = checkout / "miles/utils/external_utils/command_utils.py"
    old = 'env = {"PYTHONPATH": megatron_path, '
    assert old in helpers.read_text()
    new = 'env = {"PYTHONUNBUFFERED": "1", "PYTHONPATH": f"{repo_base_dir}:{megatron_path}", '
    helpers.write_text(helpers.read_text().replace(old, new))
    return checkout


def test_the_checks_a_test_calls_after_its_launches_become_verify_entries_of_their_cells(checkout, out):
    checkout = at_main(checkout)
    spec = out / "compared.yaml"
    import_test(
        Request(checkout / "tests/e2e/checked/test_compared.py", spec, miles_root=checkout, today=TODAY)
    )
    data = load(spec).data
    dumps = "/tmp/checked-dumps"
    assert data["matrix"]["axes"] == {"call": [1, 2]}
    assert data["verify"] == {
        "assert-session-verify-metrics": {
            "call": "miles.utils.test_utils.session_verify_runner.assert_session_verify_metrics",
            "args": {"metrics_path": f"{dumps}/baseline/session.jsonl", "assistant_text_threshold": 0.25},
        }
    }
    (component,) = (out.parent / "out" / "components").glob("*.yaml")
    second = load(component).data
    metrics = "miles.utils.test_utils.comparisons.metrics.compare_metrics"
    assert second["verify"] == {
        "assert-session-verify-metrics": DELETE,  # the baseline's check is not the target's
        "compare-metrics": {
            "call": metrics,
            "args": {
                "baseline_dir": f"{dumps}/baseline",
                "target_dir": f"{dumps}/target",
                "rtol": 0.01,
                "atol": 1e-08,
                "key_prefixes": ["train/"],
                "exclude_keys": [],
            },
        },
        "compare-metrics-2": {
            "call": metrics,
            "args": {
                "baseline_dir": f"{dumps}/baseline",
                "target_dir": f"{dumps}/target",
                "rtol": 0.0,
                "atol": 0.0,
                "key_prefixes": ["perf/"],
                "exclude_keys": [],
            },
        },
    }


def test_a_check_gets_back_a_path_and_models_by_its_annotations(checkout, out):
    spec = out / "reconfigured.yaml"
    script = at_main(checkout) / "tests/e2e/checked/test_reconfigured.py"
    import_test(Request(script, spec, hardware="h200", miles_root=checkout, today=TODAY))
    assert load(spec).data["verify"] == {
        "assert-reconfigure-events": {
            "call": "miles.utils.test_utils.reconfigure_assertions.assert_reconfigure_events",
            "args": {
                "event_dir": "/tmp/checked-dumps/target/events",
                "expected": [{"rollout_id": 2, "healed_cell_indices": [1]}],
            },
        }
    }


def test_a_comparison_handed_on_before_the_test_runs_is_recorded_whole(checkout, out):
    """The FT scenarios' shape: the runner keeps ``_compare`` from the module's import, and
    ``_compare`` asserts on the run's files in a line of its own. It is the check, its dataclass
    argument a mapping; had its body run here, its own assert would have refused the import."""
    spec = out / "scenario.yaml"
    script = at_main(checkout) / "tests/e2e/ft/test_scenario_tp2.py"
    import_test(Request(script, spec, hardware="h200", miles_root=checkout, today=TODAY))
    assert load(spec).data.get("verify") is None  # the baseline's cell checks nothing
    (component,) = (out / "components").glob("*.yaml")
    assert load(component).data["verify"] == {
        "compare": {
            "call": "tests.e2e.ft.conftest_ft.scenario_deterministic._compare",
            "args": {"dump_dir": "/tmp/checked-dumps", "mode": {"name": "tp2", "tp_size": 2}},
        }
    }


@pytest.mark.parametrize(
    ("test", "line", "reason"),
    [
        (
            "test_path_argument.py",
            9,
            "passes compare_metrics() baseline_dir=PosixPath('/tmp/checked-dumps/baseline'), which the check"
            " would get back from a spec's verify: as '/tmp/checked-dumps/baseline' (converted by its"
            " annotation str)",
        ),
        (
            "test_model_as_text.py",
            6,
            "passes assert_reconfigure_events() event_dir='/tmp/checked-dumps/target/events', which the check"
            " would get back from a spec's verify: as PosixPath('/tmp/checked-dumps/target/events') (converted"
            " by its annotation Path)",
        ),
        (
            "test_self_holding.py",
            8,
            "passes compare_metrics() key_prefixes=a list nested more than 32 deep (or holding itself), which a"
            " spec's verify: cannot hold (it gives a check JSON values: text, numbers, true/false, null, lists"
            " and mappings)",
        ),
        (
            "test_callable_argument.py",
            6,
            "passes compare_metrics() exclude_keys=function <lambda>, which a spec's verify: cannot hold (it"
            " gives a check JSON values: text, numbers, true/false, null, lists and mappings)",
        ),
        (
            "test_checked_first.py",
            5,
            "calls assert_session_verify_metrics() before any execute_train: no run to check yet",
        ),
    ],
)
def test_a_check_a_spec_cannot_hold_is_refused_with_its_line(checkout, out, test, line, reason):
    script = at_main(checkout) / "tests/e2e/checked" / test
    with pytest.raises(SpecError) as caught:
        import_test(Request(script, out / "x.yaml", miles_root=checkout, today=TODAY))
    (problem,) = caught.value.problems
    assert problem.message == f"{test} cannot be imported: it {reason}"
    assert (problem.locations[0].file, problem.locations[0].line) == (script, line)
    assert list(out.iterdir()) == []


def test_a_check_module_that_does_something_at_import_is_refused_like_the_tests_own_code(
    checkout, out, tmp_path
):
    checks = at_main(checkout) / "miles/utils/test_utils/comparisons/metrics.py"
    canary = tmp_path / "canary"
    text = checks.read_text() + f"\nimport os\n\nos.system('touch {canary}')\n"
    checks.write_text(text)
    with pytest.raises(SpecError) as caught:
        import_test(
            Request(checkout / "tests/e2e/checked/test_compared.py", out / "x.yaml", miles_root=checkout)
        )
    (problem,) = caught.value.problems
    assert problem.message == (
        f"test_compared.py cannot be imported: it starts a process or sends a signal: os.system (touch {canary}),"
        " outside miles' helpers: nothing may run here"
    )
    # the test's import of the check's module, the line that ran it (the module is never run otherwise)
    script = checkout / "tests/e2e/checked/test_compared.py"
    assert (problem.locations[0].file, problem.locations[0].line) == (script, 3)
    assert not canary.exists() and list(out.iterdir()) == []


CKPT = "tests/e2e/ckpt/test_tiny_ckpt.py"
LATEST = "/root/models/tiny_miles/latest_checkpointed_iteration.txt"


LEFT_OUT = (
    "prepare.clean removes /root/models/tiny_miles, which an earlier launch writes (--save"
    " /root/models/tiny_miles): the script removes it once, before that launch, so the cells after it leave"
    " it out (a cell selected alone with -k keeps what an earlier run left there)"
)


def test_the_step_a_save_wrote_becomes_a_value_the_load_cell_reads_at_launch(checkout, out):
    spec = out / "tiny_ckpt.yaml"
    imported = import_test(Request(checkout / CKPT, spec, miles_root=checkout, today=TODAY))
    # save, load, async save, load: the round trip held for each
    assert imported.cells == ["tiny_ckpt", "tiny_ckpt[call=2]", "tiny_ckpt[call=3]", "tiny_ckpt[call=4]"]
    assert load(spec).data["prepare"]["clean"] == {"kind": "remove", "paths": ["/root/models/tiny_miles"]}
    component = (out / "components" / "tiny_ckpt-call-2.yaml").read_text()
    assert (
        "    ckpt-step: $${read-integer:/root/models/tiny_miles/latest_checkpointed_iteration.txt}\n"
        in component
    )
    later = [load(out / "components" / f"tiny_ckpt-call-{n}.yaml").data for n in (2, 3, 4)]
    # the folder the loads read stays, and so does the first save, which the async save writes over
    assert [cell["prepare"] for cell in later] == [{"clean": DELETE}] * 3
    assert later[1]["args"] == {"ckpt": {"async-save": True}}
    assert [n.message for n in imported.notes if "removes" in n.message] == [LEFT_OUT]


def test_a_folder_the_script_removes_again_after_a_launch_wrote_it_is_removed_in_that_cell(checkout, out):
    script = checkout / CKPT
    again = '    U.exec_command(f"rm -rf {SAVED}")\n    execute("async_save")\n'
    script.write_text(script.read_text().replace('    execute("async_save")\n', again))
    imported = import_test(Request(script, out / "tiny_ckpt.yaml", miles_root=checkout, today=TODAY))
    assert len(imported.cells) == 4
    later = [load(out / "components" / f"tiny_ckpt-call-{n}.yaml").data for n in (2, 3, 4)]
    # the async save starts from an empty folder, as the script's does; the load after it keeps what it wrote
    assert [cell.get("prepare") for cell in later] == [{"clean": DELETE}, None, {"clean": DELETE}]
    assert [n.message for n in imported.notes if "removes" in n.message] == [LEFT_OUT]


HOSTILE = 'os.environ.get("MILES_TEST_CKPT_HOSTILE", "")'


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (HOSTILE, "'arithmetic'"),
        (HOSTILE, "'env'"),
        # the step the async save wrote is a value of its own: it must reach a flag as it was read
        ("ckpt_step=_latest())", "ckpt_step=_latest() + 1)"),
    ],
    ids=["arithmetic", "env", "arithmetic-after-the-async-save"],
)
def test_a_read_value_that_reaches_anything_but_a_later_launchs_flags_is_refused(checkout, out, old, new):
    script = checkout / CKPT
    assert old in script.read_text()
    script.write_text(script.read_text().replace(old, new))
    with pytest.raises(SpecError) as caught:
        import_test(Request(script, out / "tiny_ckpt.yaml", miles_root=checkout, today=TODAY))
    assert str(caught.value) == (
        f"{script}:18: error [import]: test_tiny_ckpt.py cannot be imported: it reads {LATEST}, which its launch"
        " at line 37 would write (--save /root/models/tiny_miles), in code of its own: a spec reads a launch's"
        " output only as a check's argument (verify:, a function of miles' or of the test's, called after its"
        " launch), as a later launch's flag ($${read-integer:PATH}), or in the lines after the launches of a"
        " function that launched through functions of its own (verify: launched_by)\n  ==> nothing was written"
    )
    assert not (out / "tiny_ckpt.yaml").exists()


def test_a_linked_test_is_left_out_and_never_read(cli, checkout, out, tmp_path):
    secret = tmp_path / "private"
    secret.mkdir(mode=0o700)
    (secret / "test_secret.py").write_text("print('never read')\n")
    (checkout / FAMILY / "test_linked_case.py").symlink_to(secret / "test_secret.py")
    kept = cli("import", str(checkout / FAMILY), "-o", str(out / "tiny"), "--miles-root", str(checkout))
    assert kept.code == 4 and "chmod" not in kept.err, kept.err
    assert (
        f"refused  test_linked_case.py: test_linked_case.py is a link (to {secret}/test_secret.py)"
        in kept.err
    ), kept.err
    assert not (out / "tiny" / "linked_case.yaml").exists() and (out / "tiny" / "nv_case.yaml").is_file()


def test_a_checkout_whose_path_holds_a_space_is_a_checkout(cli, checkout, out, tmp_path):
    spaced = tmp_path / "my miles"
    checkout.rename(spaced)
    test = spaced / FAMILY / "test_nv_case.py"
    result = cli("import", str(test), "-o", str(out / "nv_case.yaml"), "--miles-root", str(spaced))
    assert result.code == 0, result.err
    assert "not in the miles checkout" not in result.err
    assert cli("validate", str(out / "nv_case.yaml")).code == 0


ROOTED_CASE = """\
import miles.utils.external_utils.command_utils as U
from tests.ci.ci_register import register_cuda_ci
from tests.e2e.tiny_family._common import CaseConfig, execute

register_cuda_ci(est_time=300, suite="stage-c-8-gpu-h200", labels=["megatron"])
# the verifiers test's way: the checkout's own folders in the job's env (its PYTHONPATH)
ENV = {"CODE_PATH": f"/opt/venv/site-packages:{U.repo_base_dir}/examples/adapters:{U.repo_base_dir}"}
CASE = CaseConfig(num_gpus_per_node=8, tp_size=4, rollout_num_gpus_per_engine=8, extra_env_vars=ENV)

if __name__ == "__main__":
    execute(CASE)
"""


def test_no_written_spec_of_a_suite_holds_the_checkout_path_env_included(cli, checkout, out):
    (checkout / FAMILY / "test_rooted_case.py").write_text(ROOTED_CASE)
    result = cli("import", str(checkout / FAMILY), "-o", str(out / "tiny"), "--miles-root", str(checkout))
    assert result.code == 0, result.err
    written = sorted(out.rglob("*.yaml"))
    assert len(written) == 5
    assert [str(p) for p in written if str(checkout) in p.read_text()] == []
    rooted = load(out / "tiny" / "rooted_case.yaml").data
    assert rooted["env"]["CODE_PATH"] == (
        "/opt/venv/site-packages:$${MILES_ROOT}/examples/adapters:$${MILES_ROOT}"  # a shell reference
    )
    shown = cli(
        "render", str(out / "tiny" / "rooted_case.yaml"), "--miles-root", str(checkout), "--format", "json"
    )
    assert f"{checkout}/examples/adapters:{checkout}" in shown.out


HOSTILE = "\x1b[31mRED\x1b]0;TITLE\x07[bold]x[/bold]"
SHOWN = "\\x1b[31mRED\\x1b]0;TITLE\\x07[bold]x[/bold]"


def table_rows(text: str) -> dict[str, str]:
    """A rich table's rows as {first column: second}, a row's wrapped lines joined."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if not line.startswith("│"):
            continue
        first, second = (part.strip() for part in line.strip("│").split("│"))
        if second or not rows:
            rows.append([first, second])
        else:
            rows[-1][0] += " " + first
    return dict((first, second) for first, second in rows)


def test_a_reason_that_quotes_escape_codes_and_markup_is_printed_escaped(cli, checkout, out):
    wide = (checkout / FAMILY / "test_wide_case.py").read_text()
    (checkout / FAMILY / "test_hostile_case.py").write_text(f"import os\nos.system({HOSTILE!r})\n{wide}")
    result = cli("import", str(checkout / FAMILY), "-o", str(out / "tiny"), "--miles-root", str(checkout))
    assert result.code == ExitCode.SOME_REFUSED, result.err
    reason = f"starts a process or sends a signal: os.system ({SHOWN}), outside miles' helpers: nothing may run here"
    assert [line for line in result.err.splitlines() if "hostile" in line] == [
        f"refused  test_hostile_case.py: {reason}",
        f"left out test_hostile_case.py: {reason}",
    ]
    assert table_rows(result.out) == {
        "imported": "3",
        "never launching (nothing to import)": "0",
        f"refused: {reason}": "1",
    }
    assert not any(c in result.out + result.err for c in "\x1b\x07")
