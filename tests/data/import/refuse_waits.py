"""Waits for a server that never comes (blocked, using no CPU: the wall clock ends it)."""

import select

import _glm5

if __name__ == "__main__":
    select.select([], [], [], 3600)
    _glm5.launch()
