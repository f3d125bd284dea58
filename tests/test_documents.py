"""Documents from outside, read within a size and a depth budget (issue 53, item 3): the readers of
``runner.spec.documents`` and every caller that reads a document run-matrix did not just write."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.errors import EnvironmentProblem, Location, Problem, SpecError, UsageError
from runner.spec import documents, yaml_documents
from runner.spec.documents import MAX_DEPTH, Unreadable

DEEP = 100_000
DEEPER = f"nests deeper than {MAX_DEPTH} levels"
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# (opening, closing) of one level of nesting, in JSON and in YAML's flow style; YAML's block style too
JSON_LEVELS = st.sampled_from([("[", "]"), ('{"a": ', "}"), ("[1, ", "]"), ('{"x": 1, "y": ', "}")])
YAML_LEVELS = st.sampled_from([("[", "]"), ("{a: ", "}"), ("[1, ", "]"), ("{x: 1, y: ", "}")])


def nested(level: tuple[str, str], depth: int, inner: str = "0") -> str:
    return level[0] * depth + inner + level[1] * depth


@FAST
@given(level=JSON_LEVELS, depth=st.sampled_from([MAX_DEPTH + 1, 1_000, DEEP]))
def test_json_nested_past_the_budget_is_refused_before_it_is_parsed(level, depth):
    with pytest.raises(Unreadable) as error:
        documents.json_data(nested(level, depth), 10_000_000)
    assert (error.value.reason, error.value.budget) == (DEEPER, True)


@FAST
@given(level=JSON_LEVELS, depth=st.integers(0, MAX_DEPTH))
def test_json_within_the_budget_reads_as_json_reads_it(level, depth):
    text = nested(level, depth)
    assert documents.json_data(text, 10_000_000) == json.loads(text)
    assert documents.json_data(text.encode(), 10_000_000) == json.loads(text)


TRICKY = st.text(alphabet=st.sampled_from([*'[]{}"\\ab,:é\n', "\u2028", "\ud800"]), max_size=12)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TRICKY,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY, inner, max_size=4),
    max_leaves=40,
)


@settings(max_examples=200, deadline=None)
@given(value=VALUES, ascii_only=st.booleans())
def test_any_json_value_within_the_budget_reads_back_whole(value, ascii_only):
    """Brackets, quotes and backslashes inside strings (escaped or not) never count as nesting."""
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert documents.json_data(text, 10_000_000) == value


@FAST
@given(value=VALUES, level=JSON_LEVELS)
def test_strings_around_deep_json_do_not_hide_it(value, level):
    text = nested(level, MAX_DEPTH + 1, json.dumps(value))
    with pytest.raises(Unreadable, match=DEEPER):
        documents.json_data(text, 10_000_000)


@FAST
@given(depth=st.sampled_from([MAX_DEPTH + 1, DEEP]), quoted=st.sampled_from(["[", "{", "[{", '\\"[']))
def test_brackets_inside_json_strings_do_not_count(depth, quoted):
    text = json.dumps({"a": quoted * depth, "b": [1, [2]]})
    assert documents.json_data(text, 10_000_000) == {"a": quoted * depth, "b": [1, [2]]}


@FAST
@given(
    read=st.sampled_from([yaml_documents.data, yaml_documents.node]),
    level=YAML_LEVELS,
    depth=st.sampled_from([MAX_DEPTH + 1, 1_000, DEEP]),
    key=st.sampled_from(["", "x: ", "jobs:\n  run: "]),
)
def test_yaml_nested_past_the_budget_is_refused_before_it_is_composed(read, level, depth, key):
    with pytest.raises(Unreadable) as error:
        read(key + nested(level, depth), 10_000_000)
    assert (error.value.reason, error.value.budget) == (DEEPER, True)


@FAST
@given(level=YAML_LEVELS, depth=st.integers(0, MAX_DEPTH - 1))  # the mapping of x: is one level
def test_yaml_within_the_budget_reads_as_safe_load_reads_it(level, depth):
    text = "x: " + nested(level, depth)
    assert yaml_documents.data(text, 10_000_000) == yaml.safe_load(text)


def test_yaml_nested_in_block_style_is_refused_too():
    text = "".join(f"{'  ' * i}a:\n" for i in range(MAX_DEPTH + 1)) + "  " * (MAX_DEPTH + 1) + "b: 1\n"
    with pytest.raises(Unreadable, match=DEEPER):
        yaml_documents.data(text, 10_000_000)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("a: &a [*a]\n", "an alias refers to a collection that contains it"),
        ("a: &a {<<: *a}\n", "an alias refers to a collection that contains it"),
        ("".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9) if i else 'x'}]\n" for i in range(8)), ""),
    ],
)
def test_aliases_that_nest_or_multiply_without_end_are_refused(text, reason):
    reason = (
        reason
        or f"expands to more than {yaml_documents.MAX_VALUES:,} values (aliases are expanded where used)"
    )
    with pytest.raises(Unreadable) as error:
        yaml_documents.data(text, 10_000_000)
    assert (error.value.reason, error.value.budget) == (reason, True)


@FAST
@given(
    read=st.sampled_from([documents.json_data, yaml_documents.data, yaml_documents.node]),
    limit=st.integers(1, 100_000),
    as_bytes=st.booleans(),
)
def test_a_document_past_its_size_is_refused_unread(read, limit, as_bytes):
    text = "[" + "0," * limit + "0]"
    with pytest.raises(Unreadable) as error:
        read(text.encode() if as_bytes else text, limit)
    assert (error.value.reason, error.value.budget) == (f"larger than {limit:,} bytes", True)


@pytest.mark.parametrize(
    ("read", "text", "reason", "line"),
    [
        (documents.json_data, '{"a": 1,\n nope}', "Expecting property name enclosed in double quotes: line 2 column 2 (char 10)", 2),
        (documents.json_data, b"\xff", "not UTF-8: byte 0xff at offset 0", None),
        (yaml_documents.data, "a: 1\nb: [\n", "expected the node content, but found '<stream end>'", 3),
        (yaml_documents.data, "a: \x07\n", "character 0x0007 is not allowed in YAML", None),
        (yaml_documents.data, "a: !!python/name:os.system x\n", "could not determine a constructor for the tag 'tag:yaml.org,2002:python/name:os.system'", 1),
    ],
)  # fmt: skip
def test_a_document_that_does_not_parse_says_why_and_where(read, text, reason, line):
    with pytest.raises(Unreadable) as error:
        read(text, 1000)
    assert (error.value.reason, error.value.line, error.value.budget) == (reason, line, False)


def test_a_file_that_is_no_regular_file_is_not_read(tmp_path):
    os.mkfifo(tmp_path / "fifo")  # a FIFO with no writer would block an open for reading
    with pytest.raises(OSError, match="is not a regular file"):
        documents.file_bytes(tmp_path / "fifo", 100)
    (tmp_path / "big").write_bytes(b"x" * 1000)
    assert documents.file_bytes(tmp_path / "big", 10) == b"x" * 11  # one past: the reader says too big


# -- every caller that reads a document from outside, fed a deep and a huge one ----------------------


def deep_and_huge(limit: int) -> list[str]:
    return [nested(("[", "]"), DEEP), nested(("{a: ", "}"), DEEP), "[" + "0," * limit + "0]"]


@pytest.mark.parametrize("which", range(3))
def test_a_checkout_workflow_deep_or_huge_is_a_problem_at_its_file(which):
    from runner.knowledge import ci_sources

    text = "x: " + deep_and_huge(ci_sources.MAX_WORKFLOW_BYTES)[which]
    found = ci_sources.read([".github/workflows/x.yml"], {".github/workflows/x.yml": text}.get)
    why = DEEPER if which < 2 else f"larger than {ci_sources.MAX_WORKFLOW_BYTES:,} bytes"
    line = 1 if which < 2 else None
    assert found.problems == [
        Problem(
            "ci-sources",
            f".github/workflows/x.yml does not parse as YAML: {why}",
            locations=(Location(Path(".github/workflows/x.yml"), line),),
        )
    ]


@pytest.mark.parametrize("which", range(3))
def test_a_forged_import_trace_deep_or_huge_is_unreadable(which):
    from runner import sandbox
    from runner.importer import capture

    limit = sandbox.Limits().results
    text = deep_and_huge(limit)[which].replace("{a: ", '{"a": ')
    why = DEEPER if which < 2 else f"larger than {limit:,} bytes"
    with pytest.raises(Unreadable, match=why):
        capture.read_trace(text.encode(), [])


def test_an_import_trace_that_is_no_object_is_unreadable():
    from runner.importer import capture

    with pytest.raises(Unreadable, match="a trace is a JSON object, not list"):
        capture.read_trace(b"[]", [])


@pytest.mark.parametrize("which", range(3))
def test_a_run_record_deep_or_huge_is_passed_over(tmp_path, which):
    from runner.run import cleanup

    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "r.json").write_text(deep_and_huge(cleanup.RECORD_BYTES)[which])
    (runs / "r.lock").write_text("")
    assert list(cleanup._dead_runs(runs)) == []


@pytest.mark.parametrize("which", range(3))
def test_an_import_marker_deep_or_huge_lists_nothing(tmp_path, which):
    from runner.importer import written
    from runner.spec.locate import ROOT_MARKER

    (tmp_path / ROOT_MARKER).write_text('{"files": ' + deep_and_huge(written.MAX_MARKER_BYTES)[which] + "}")
    assert written.earlier(tmp_path) == []


@pytest.mark.parametrize("which", range(3))
def test_a_kept_recording_deep_or_huge_is_a_miss(tmp_path, which):
    from runner.importer import recordings

    recordings.store(tmp_path, "k", {"trace": {}, "output": ""})  # the folder's secret made
    assert recordings.load(tmp_path, "k") == {"trace": {}, "output": "", "key": "k"}
    (tmp_path / "k.json").write_text(deep_and_huge(recordings.MAX_ENTRY)[which])
    assert recordings.load(tmp_path, "k") is None


@pytest.mark.parametrize("which", range(3))
def test_a_cached_checkout_reading_deep_or_huge_is_read_again(tmp_path, which):
    from runner.knowledge import cache

    path = tmp_path / "entry.json"
    path.write_text(
        deep_and_huge(cache.MAX_CACHED_BYTES)[which] if which < 2 else "0" * (cache.MAX_CACHED_BYTES + 1)
    )
    assert cache.cached(path, lambda: {"read": "now"}) == {"read": "now"}
    assert json.loads(path.read_text()) == {"read": "now"}


@pytest.mark.parametrize("which", range(3))
def test_a_hub_config_deep_or_huge_is_an_error_naming_it(tmp_path, which):
    from runner.knowledge import checkpoints

    path = tmp_path / "config.json"
    path.write_text(
        deep_and_huge(checkpoints.MAX_BYTES)[which] if which < 2 else " " * (checkpoints.MAX_BYTES + 1)
    )
    with pytest.raises(EnvironmentProblem) as error:
        checkpoints.read_config(path, "the config of org/m: ")
    if which < 2:
        assert str(error.value) == f"the config of org/m: {path}: not JSON ({DEEPER})"
    else:
        assert "Traceback" not in str(error.value) and str(path) in str(error.value)


@pytest.mark.parametrize("which", range(3))
def test_a_spec_hf_config_deep_or_huge_is_an_error_at_its_key(tmp_path, which):
    from runner.cells import build

    path = tmp_path / "config.json"
    path.write_text(deep_and_huge(build.MAX_CONFIG_BYTES)[which])
    why = DEEPER if which < 2 else f"larger than {build.MAX_CONFIG_BYTES:,} bytes"
    with pytest.raises(SpecError) as error:
        build._read_hf_config(path)
    assert [str(p) for p in error.value.problems] == [
        f"<spec>: error [L12] args.ckpt.hf-checkpoint: cannot read {path}: {why}"
    ]


@pytest.mark.parametrize("option", ["--cells", "--shard-of"])
def test_a_ci_plan_deep_or_huge_is_a_usage_error(tmp_path, option):
    from runner.ci import shard

    path = tmp_path / "plan.json"
    path.write_text(nested(("[", "]"), DEEP))
    with pytest.raises(UsageError) as error:
        shard.cells_file(path) if option == "--cells" else shard._json(path)
    assert str(error.value) == f"{option} {path}: JSON nested too deeply"


def test_a_runtime_env_a_checkout_submits_deep_is_no_env_it_can_read():
    from runner.knowledge import conventions

    deep = nested(('{"a": ', "}"), DEEP)
    command = f"ray job submit --runtime-env-json='{deep}' -- python3 train.py"
    with pytest.raises(
        conventions.ConventionsError, match="execute_train submits no runtime env run-matrix can read"
    ):
        conventions._submitted_env([command])


def test_a_verdict_line_from_the_sandbox_deep_is_passed_over(tmp_path):
    from runner.miles_parser import verdicts
    from runner.sandbox import Outcome

    lines = [nested(("[", "]"), DEEP), json.dumps({"id": "c", "ok": True})]
    outcome = Outcome(0, "", False, False, True, files={"verdicts.jsonl": "\n".join(lines).encode()})
    assert verdicts.replies(outcome, Path("/usr/bin/python3"), 10.0) == {"c": {"id": "c", "ok": True}}


@pytest.mark.parametrize("which", range(2))
def test_a_validate_cache_entry_deep_is_a_miss(tmp_path, monkeypatch, which):
    from runner.validate import replay

    monkeypatch.setenv("RUN_MATRIX_CACHE_DIR", str(tmp_path))
    path = replay._entry("validate", "k" * 64)
    path.parent.mkdir(parents=True)
    path.write_text(deep_and_huge(replay.MAX_ENTRY_BYTES)[which])
    assert replay.load("validate", "k" * 64) is None


def test_a_service_report_nested_deep_is_no_report():
    from runner.launch.programs import REPORT_BYTES
    from runner.run import services

    deep = nested(('{"state": ', "}"), REPORT_BYTES // 20)
    with pytest.raises(EnvironmentProblem) as error:
        services._state("the hook", deep.encode(), ["x"])
    assert str(error.value) == f"the report of the hook is no report run-matrix's program wrote: {deep[:200]}"
