"""Lists the download in the function that launches: recorded as a prepare call, it does not run
here, and the import says the launch went with it."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch
from tests.e2e.own.rollouts import ROLLOUTS


def main() -> None:
    steps = len(list(ROLLOUTS.glob("*.pt")))
    launch(f" --num-epoch {steps}")


if __name__ == "__main__":
    U.exec_command("hf download own/rollouts --local-dir /root/datasets/own-rollouts")
    main()
