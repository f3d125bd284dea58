from __future__ import annotations

import copy
from pathlib import Path

import pytest

from runner.errors import Location, SpecError
from runner.spec import load as load_module
from runner.spec.load import DELETE, WrittenFloat, load


def error_of(path: Path) -> str:
    with pytest.raises(SpecError) as caught:
        load(path)
    return str(caught.value)


def test_keys_remember_their_lines(write):
    doc = load(
        write(
            "spec.yaml",
            """
        a: 1
        b:
          c: [1, 2]
          d: !delete
    """,
        )
    )
    assert doc.data == {"a": 1, "b": {"c": [1, 2], "d": DELETE}}
    assert doc.lines == {("a",): 1, ("b",): 2, ("b", "c"): 3, ("b", "d"): 4}


def test_floats_render_as_written(write):
    doc = load(write("spec.yaml", "a: 0.70\nb: [0.00, 2.5]\nc: 1e-6\n"))
    assert [str(doc.data["a"]), *map(str, doc.data["b"]), doc.data["c"]] == ["0.70", "0.00", "2.5", "1e-6"]
    assert doc.data["a"] == 0.7 and isinstance(doc.data["a"], WrittenFloat)
    assert str(copy.deepcopy(doc.data)["a"]) == "0.70"


def test_empty_file_is_an_empty_spec(write):
    assert load(write("spec.yaml", "# nothing yet\n")).data == {}


def test_duplicate_key(write):
    assert error_of(write("spec.yaml", "args:\n  perf:\n    a: 1\n    a: 2\n")) == (
        "spec.yaml:3: error [duplicate-key] args.perf.a: key 'a' is written twice in one mapping\n"
        "  ==> also at spec.yaml:4\n"
        "  ==> YAML keeps only the last one; delete one of them."
    )


def test_python_tags_are_refused(write):
    assert error_of(write("spec.yaml", "a: !!python/object/apply:os.system [ls]\n")) == (
        "spec.yaml:1: error [yaml] a: tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed:"
        " specs are plain data (the only custom tag is !delete)"
    )


def test_unknown_tags_are_refused(write):
    assert error_of(write("spec.yaml", "a:\n  b: !include other.yaml\n")) == (
        "spec.yaml:2: error [yaml] a.b: tag '!include' is not allowed: specs are plain data"
        " (the only custom tag is !delete)"
    )


def test_delete_takes_no_value(write):
    assert error_of(write("spec.yaml", "a: !delete yes\n")) == (
        "spec.yaml:1: error [yaml] a: !delete takes no value\n  ==> write `key: !delete` on its own."
    )


def test_bad_yaml(write):
    assert error_of(write("spec.yaml", "a: [1, 2\nb: 3\n")) == (
        "spec.yaml:2: error [yaml]: not valid YAML: while parsing a flow sequence"
        " expected ',' or ']', but got ':'"
    )


def test_top_level_must_be_a_mapping(write):
    assert error_of(write("spec.yaml", "- a\n- b\n")) == (
        "spec.yaml:1: error [yaml]: a spec must be a mapping of keys to values, not a list"
    )


def test_keys_must_be_strings(write):
    assert error_of(write("spec.yaml", "env:\n  on: 1\n")) == (
        "spec.yaml:2: error [yaml] env: keys must be strings; 'on' reads as bool\n  ==> quote it: 'on':"
    )


def test_missing_file(tmp_path):
    assert (
        error_of(tmp_path / "nope.yaml")
        == f"{tmp_path}/nope.yaml: error [missing-file]: no such file: {tmp_path}/nope.yaml"
    )


def test_yaml_merge_keys_are_honoured(write):
    doc = load(write("spec.yaml", "x: &x {a: 1}\ny:\n  <<: *x\n  b: 2\n"))
    assert doc.data["y"] == {"a": 1, "b": 2}


def test_aliases_are_counted_while_they_expand(write):
    bomb = "a0: &a0 [x]\n" + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9))
    assert error_of(write("spec.yaml", bomb)) == (
        "spec.yaml:7: error [budget] a6: the file expands to more than 200,000 values (aliases are expanded"
        " where used)\n  ==> an alias of an alias multiplies: write the values out, or use extends:"
    )


def test_an_alias_inside_itself_is_refused(write):
    assert error_of(write("spec.yaml", "a: &a [1, *a]\n")) == (
        "spec.yaml:1: error [yaml] a: an alias refers to a collection that contains it"
    )


def test_nesting_has_a_budget(write):
    assert error_of(write("spec.yaml", "a: " + "[" * 70 + "]" * 70 + "\n")) == (
        "spec.yaml:1: error [budget] a: values nest deeper than 64 levels"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\x00\n", "spec.yaml:1: error [yaml]: character 0x0000 is not allowed in YAML"),
        ("a: 1\nb: \x07\n", "spec.yaml:2: error [yaml]: character 0x0007 is not allowed in YAML"),
    ],
)
def test_control_characters_are_located(write, text: str, message: str):
    assert error_of(write("spec.yaml", text)) == (
        f"{message}\n  ==> remove it (control characters other than tab and newline cannot appear in a spec)"
    )


def test_large_files_are_not_read(write):
    assert error_of(write("spec.yaml", "#" * 1_000_001)) == (
        "spec.yaml: error [budget]: the file is larger than 1,000,000 bytes\n"
        "  ==> a spec is a few kilobytes; split it or check that this is the file you meant"
    )


def test_an_impossible_date_is_located(write):
    assert error_of(write("spec.yaml", "a: 1\nexpires: 2026-02-30\n")).startswith(
        "spec.yaml:2: error [yaml] expires: '2026-02-30' is not a valid timestamp: day is out of range for month"
    )


def test_a_merge_key_may_be_overridden(write):
    doc = load(write("spec.yaml", "base: &b {x: 1, y: 2}\nover:\n  <<: *b\n  x: 3\n"))
    assert doc.data["over"] == {"x": 3, "y": 2}
    assert error_of(write("spec.yaml", "over:\n  x: 1\n  x: 2\n")).startswith(
        "spec.yaml:2: error [duplicate-key] over.x: key 'x' is written twice in one mapping"
    )


def test_a_file_is_parsed_once_however_its_path_is_spelt(write, monkeypatch):
    component = write("components/fp8.yaml", "args:\n  x: 1\n")
    other = component.parent.parent / "nv" / ".." / "components" / "fp8.yaml"
    (component.parent.parent / "nv").mkdir()
    parsed: list[Path] = []
    real = load_module._load
    monkeypatch.setattr(load_module, "_load", lambda path: parsed.append(path) or real(path))
    first, second = load(component), load(other)
    assert parsed == [component]
    assert (first.data, second.data) == ({"args": {"x": 1}}, {"args": {"x": 1}})
    assert (first.location(("args", "x")), second.location(("args", "x"))) == (
        Location(component, 2),
        Location(other, 2),  # each caller's spelling, as its problems will name the file
    )


def test_a_broken_file_reached_two_ways_is_named_as_each_way_spells_it(write, tmp_path, monkeypatch):
    broken = write("components/bad.yaml", "a: [1,\n")
    other = tmp_path / "nv" / ".." / "components" / "bad.yaml"
    (tmp_path / "nv").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # outside the current folder, a path is shown as given
    assert error_of(broken).startswith(f"{broken}:2: error [yaml]")
    assert error_of(other).startswith(f"{other}:2: error [yaml]")


def test_walk_gives_every_key_parents_first_in_the_order_written():
    from runner.spec.load import walk

    data = {"a": {"b": {"c": 1, "d": {}}, "e": 2}, "f": [{"g": 3}], "h": {"i": {"j": {"k": 4}}}}
    assert [key for key, _ in walk(data, ("x",))] == [
        ("x", "a"),
        ("x", "a", "b"),
        ("x", "a", "b", "c"),
        ("x", "a", "b", "d"),
        ("x", "a", "e"),
        ("x", "f"),  # a list is a value: its mappings are not walked
        ("x", "h"),
        ("x", "h", "i"),
        ("x", "h", "i", "j"),
        ("x", "h", "i", "j", "k"),
    ]
    deep: dict = {}
    inner = deep
    for _ in range(5000):  # deeper than the interpreter's recursion limit: walked without recursing
        inner["n"] = inner = {}
    assert len(list(walk(deep))) == 5000


def test_a_text_not_on_disk_is_parsed_once_per_text(tmp_path):
    from runner.spec.load import load_from

    path = tmp_path / "candidate.yaml"  # never written: a candidate an import checks in memory
    first = load_from(path, {path.resolve(): "a: 1\nb: {c: 2}\n"})
    again = load_from(path, {path.resolve(): "a: 1\nb: {c: 2}\n"})
    assert again is first and first.data == {"a": 1, "b": {"c": 2}} and first.lines[("b", "c")] == 2
    edited = load_from(path, {path.resolve(): "a: 1\nb: {c: 3}\n"})
    assert edited.data == {"a": 1, "b": {"c": 3}}
    assert load_from(path, {path.resolve(): "a: 1\nb: {c: 2}\n"}) is first
    with pytest.raises(SpecError):  # a text that does not load says so each time it is asked for
        load_from(path, {path.resolve(): "a: [\n"})
    with pytest.raises(SpecError):
        load_from(path, {path.resolve(): "a: [\n"})
    long = "a: 1\n" + "# a comment that makes the text long\n" * 2000  # over MAX_WRITTEN_CHARACTERS: not kept
    assert load_from(path, {path.resolve(): long}) is not load_from(path, {path.resolve(): long})
