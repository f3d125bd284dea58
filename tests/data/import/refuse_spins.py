"""Spins until its CPU time is up (it lowers its own limit to 1 s, so the CPU limit comes first)."""

import resource

import _glm5

if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CPU, (1, 1))
    while True:
        pass
    _glm5.launch()
