"""Prepares, never launches."""

import _glm5

if __name__ == "__main__":
    _glm5.prepare()
