"""Starts a thread itself, in the function that launches: there is no function of its own to call
beside the job, so a spec cannot hold it."""

import threading

from tests.e2e.own._launch import launch


def execute() -> None:
    threading.Thread(target=threading.Event().wait, daemon=True).start()
    launch()


if __name__ == "__main__":
    execute()
