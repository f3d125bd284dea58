"""sandbox: the one place where code from a miles checkout runs.

Reading a miles test script (``import``), a ``scripts/models/*.py`` preset or a launcher means
running code that someone else wrote. ``run()`` runs such a command in a child that the operating
system isolates (``bwrap.py``):

* no network (a network namespace of its own, loopback only);
* a file system that holds only what the run needs, read-only: the system's ``/usr``, the Python
  installation, run-matrix's own package, and the paths the caller names (the checkout; for a script
  outside it, the script and the modules it imports: ``binds.py``) — plus a private, size-limited
  ``/tmp`` with the child's ``HOME``, and a results folder (``$RUN_MATRIX_OUT``) that is a bounded
  tmpfs of the sandbox's own, whose files ``collect.py`` sends back (``results.py``);
* a system call filter (``seccomp.py``): no keyrings, ptrace, io_uring, bpf, perf events,
  userfaultfd, mounts, namespaces, nor Unix sockets; and a fresh session keyring (``keyring.py``);
* its own PID namespace: it sees no process of the caller's (so no ``/proc/<pid>/environ``) and
  everything it starts dies with it;
* started as ``root``, run-matrix drops the child to the unprivileged ``nobody`` user;
* resource limits (``limits.py``): address space, CPU time, file size, processes, open files,
  wall-clock time, and a bounded capture of its output;
* an environment built from nothing: no variable of the caller's reaches it, and whatever it
  prints is scrubbed of the caller's secret values (``runner/redact.py``).

Inside the child, a package the interpreter lacks that the checkout's code imports is a stand-in
(``missing.py``, loaded by path by the import's harness and by ``knowledge/conventions_driver.py``).

Where the system cannot isolate (no bubblewrap, no namespaces) ``run()`` refuses with an
environment error unless the caller passes ``trust=True`` (``--trust-checkout``): then the child
runs as the caller with the same limits, environment and new process session, but sees the whole
file system and network.
"""

import sys

from runner.sandbox.bwrap import IsolationUnavailable, isolation_problem
from runner.sandbox.interpreter import Installation, installation
from runner.sandbox.limits import Limits
from runner.sandbox.run import BASE_ENV, OUT_VARIABLE, Outcome, run, shown

PYTHON = sys.executable  # the interpreter a Python child runs with (bound into the sandbox)

__all__ = [
    "BASE_ENV",
    "OUT_VARIABLE",
    "PYTHON",
    "Installation",
    "IsolationUnavailable",
    "Limits",
    "Outcome",
    "installation",
    "isolation_problem",
    "run",
    "shown",
]
