from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from runner.run.processes import (
    Interrupted,
    cause_of,
    deferred_interrupt,
    in_session,
    signals_interrupt,
    stop_session,
)

# A leader that leaves two children behind when it exits: one in its own process group
# (as Ray's workers are), one in the leader's.
LEADER = "(set -m; sleep 300 &); sleep 300 & trap 'exit 0' TERM; echo ready; wait"


def wait_for(predicate, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.allow_subprocess
def test_stop_session_kills_the_whole_session_and_nothing_else():
    outsider = subprocess.Popen(["sleep", "300"], start_new_session=True)
    leader = subprocess.Popen(["bash", "-c", LEADER], start_new_session=True, stdout=subprocess.PIPE)
    try:
        assert leader.stdout is not None and leader.stdout.readline() == b"ready\n"
        wait_for(lambda: len(in_session(leader.pid)) == 3)
        children = sorted(set(in_session(leader.pid)) - {leader.pid})
        assert sorted(stop_session(leader, grace=0.5)) == children
        assert in_session(leader.pid) == []
        assert leader.returncode == 0  # it exited on SIGTERM; its children needed SIGKILL
        assert outsider.poll() is None
    finally:
        outsider.kill()
        outsider.wait()


def test_a_ctrl_c_during_clean_up_waits_for_its_end():
    finished = []
    with pytest.raises(KeyboardInterrupt), deferred_interrupt():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.1)  # the signal is delivered here, and only noted
        finished.append(True)
    assert finished == [True]


def test_sigterm_stops_the_run_as_ctrl_c_does():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), signals_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_signal_during_the_clean_up_of_an_interrupt_does_not_replace_it():
    with pytest.raises(KeyboardInterrupt) as caught:
        try:
            raise Interrupted("Ctrl-C")
        except KeyboardInterrupt:
            with deferred_interrupt(), deferred_interrupt():  # nested: the outer one decides
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.1)
            raise
    assert cause_of(caught.value) == "Ctrl-C"
    with pytest.raises(KeyboardInterrupt) as caught, deferred_interrupt():
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(0.1)
    assert cause_of(caught.value) == "SIGHUP"


def test_a_signal_the_caller_ignores_stays_ignored():
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        with signals_interrupt():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.1)
        with deferred_interrupt():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)
