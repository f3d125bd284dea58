"""The one door to a miles checkout: everything run-matrix learns from one comes through here.

A checkout is code and data from elsewhere (a tarball, a shared folder, an image, a fork) and is
read as a stranger's:

* **Files** (:class:`Tree`): a path is relative to the root, resolved, and refused when it ends
  outside the tree (``..``, an absolute path, a link); a read takes a regular file only, opened
  without following a final link and without blocking, and at most its limit of bytes; a listing
  enters no linked folder and stops at its limit of entries.
* **Which checkout** (:func:`enclosing`): the miles tree a path stands in, for commands that take
  a path inside a checkout (``import``) and need no ``--miles-root`` then.
* **Git facts** (:func:`head_commit`, :func:`identity`, :func:`contains`): refs are read from
  ``.git`` as files and validated as git validates ref names (``refs.py``: nothing but object ids
  come out); what needs git itself runs a git that reads none of the checkout's configuration
  (``git.py`` says why that holds).
* **Code** of the checkout runs only in the sandbox (``runner.sandbox``): presets, launch
  conventions; never imported here.

Readers of particular files (presets, flags, a test's own checks, CI workflows) take a
:class:`Tree` and use only its methods: ``locate``, ``exists``, ``is_file``, ``is_dir``,
``read_bytes``/``read_text`` (bounded), ``files`` (bounded listing), ``digest`` and ``stamp``
(cache keys); a Python file is parsed by ``parsed`` (``source.py``: a parser's crash on a hostile
file is an error that names it, never a traceback). ``tests/test_checkout_door.py`` holds that no
module of ``runner/`` outside this package opens a file of a checkout or runs git.
"""

from runner.knowledge.checkout.enclosing import enclosing, is_miles_tree
from runner.knowledge.checkout.facts import Containment, contains, head_commit, identity
from runner.knowledge.checkout.refs import NotGit, valid_ref
from runner.knowledge.checkout.source import Unparsable, docstring, parsed
from runner.knowledge.checkout.tree import CheckoutError, OutsideCheckout, TooLarge, Tree

__all__ = [
    "CheckoutError",
    "Containment",
    "NotGit",
    "OutsideCheckout",
    "TooLarge",
    "Tree",
    "Unparsable",
    "contains",
    "docstring",
    "enclosing",
    "head_commit",
    "identity",
    "is_miles_tree",
    "parsed",
    "valid_ref",
]
