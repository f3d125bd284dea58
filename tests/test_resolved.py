"""resolved: a path resolved once inside a memo, afresh outside it."""

from pathlib import Path

from runner.resolved import memo, resolved


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
