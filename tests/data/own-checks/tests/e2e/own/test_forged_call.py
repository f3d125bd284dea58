"""Writes into the recorder's own trace, which it can reach in the interpreter they share: an event
of a call of its own that names no function. Import reads what comes out of the sandbox as data a
script may have written, and refuses this."""

import sys

from tests.e2e.own._launch import launch

if __name__ == "__main__":
    sys.modules["runner.importer.trace"].TRACE.events.append({"kind": "beside-call", "at": None})
    launch()
