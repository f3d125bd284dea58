"""resolved: a path resolved (a question answered) once inside a memo, afresh outside it; the memos of the
process, each registered with its kind and why."""

from pathlib import Path

from runner.memos import MEMOS, Table, asked, forget, memo, remember, resolved


def test_a_link_moved_inside_a_memo_is_seen_where_it_was_and_afterwards_where_it_is(tmp_path):
    (tmp_path / "a.yaml").write_text("a: 1\n")
    (tmp_path / "b.yaml").write_text("b: 1\n")
    link = tmp_path / "spec.yaml"
    link.symlink_to(tmp_path / "a.yaml")
    with memo():
        assert resolved(link) == tmp_path / "a.yaml"
        link.unlink()
        link.symlink_to(tmp_path / "b.yaml")
        assert resolved(link) == tmp_path / "a.yaml"  # one read of a tree: one answer per path
        with memo():  # a nested block shares the outer memo
            assert resolved(link) == tmp_path / "a.yaml"
    assert resolved(link) == tmp_path / "b.yaml"  # a write after the read sees the tree as it is


def test_a_relative_path_is_keyed_by_the_folder_it_was_relative_to(tmp_path, monkeypatch):
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "spec.yaml").write_text("x: 1\n")
    with memo():
        monkeypatch.chdir(tmp_path / "one")
        first = resolved(Path("spec.yaml"))
        monkeypatch.chdir(tmp_path / "two")
        second = resolved(Path("spec.yaml"))
    assert (first, second) == (tmp_path / "one" / "spec.yaml", tmp_path / "two" / "spec.yaml")


def test_a_question_is_answered_once_inside_a_memo_and_afresh_outside_it():
    asked_of: list[str] = []

    def answer() -> int:
        asked_of.append("x")
        return len(asked_of)

    with memo() as reading:
        assert (asked("count", "x", answer), asked("count", "x", answer)) == (1, 1)
        assert reading.answers == {("count", "x"): 1}
    assert (asked("count", "x", answer), asked("count", "x", answer)) == (2, 3)


def test_a_memo_of_the_process_is_registered_with_its_kind_and_why_and_forgotten_on_demand():
    calls: list[int] = []

    @remember("pure", "a test's square, a function of its argument alone", maxsize=8)
    def square(n: int) -> int:
        calls.append(n)
        return n * n

    table: Table[str, int] = Table("tests.test_resolved.table", "stamped", "a test's table of two", 2)
    try:
        assert (square(3), square(3), calls) == (9, 9, [3])
        name = f"{__name__}.{square.__wrapped__.__qualname__}"
        assert (MEMOS[name].kind, MEMOS[name].why) == (
            "pure",
            "a test's square, a function of its argument alone",
        )
        table.put("a", 1)
        table.put("b", 2)
        assert (table.put("a", 10), len(table)) == (10, 2)  # a key already kept replaces its value
        table.put("c", 3)  # past the limit: all let go, then the new one kept
        assert (table.get("a"), table.get("c"), len(table)) == (None, 3, 1)
        forget()
        assert (len(table), square(3), calls) == (0, 9, [3, 3])
    finally:
        MEMOS.pop(f"{__name__}.{square.__wrapped__.__qualname__}")
        MEMOS.pop("tests.test_resolved.table")
