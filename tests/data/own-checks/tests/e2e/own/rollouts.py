"""Debug rollout data cycled over more steps than a download holds, as miles' FT soak tests make it:
the folder of links is made where the test runs, and its path goes into the launch's flags."""

import tempfile
from pathlib import Path

ROLLOUTS = Path("/root/datasets/own-rollouts")


def cycled(count: int) -> str:
    available = sorted(int(p.stem) for p in ROLLOUTS.glob("*.pt") if p.stem.isdigit())
    if not available:
        raise FileNotFoundError(f"no rollout data in {ROLLOUTS}")
    folder = Path(tempfile.mkdtemp(prefix="own_cycled_"))
    for i in range(count):
        (folder / f"{i}.pt").symlink_to(ROLLOUTS / f"{available[i % len(available)]}.pt")
    return str(folder)
