from pathlib import Path

from tests.e2e.own._launch import launch

DUMPS = Path("/tmp/own-dumps")


def execute():
    dump_dir = DUMPS / "dump"
    launch(f" --dump-details {dump_dir}")
    verify(dump_dir, samples=12)
    print("launched and checked")


def verify(dump_dir: Path, samples: int = 1):
    found = sorted((dump_dir / "rollout_data").glob("*.pt"))
    assert len(found) == samples, f"{len(found)} dumps in {dump_dir}, expected {samples}"


if __name__ == "__main__":
    execute()
