"""Waits for a server that never comes."""

import _glm5

if __name__ == "__main__":
    while True:
        pass
    _glm5.launch()
