"""Imports a part of miles other than its command helpers."""

import _glm5
from miles.utils.misc import load_function

if __name__ == "__main__":
    load_function("os.getcwd")
    _glm5.launch()
