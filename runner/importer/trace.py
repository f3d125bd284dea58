"""The trace of one script in the import sandbox: every helper call, command and refusal, as data.

Shared by ``harness.py`` (which installs the guards and writes the trace out) and ``recording.py``
and ``recorder.py`` (the helpers that record into it). Loaded by path inside the sandbox, where the
harness also registers it under this module's own name, so their imports find this same object
without run-matrix on the sandbox's path. Standard library only.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import itertools
import json
import os
import shlex
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

NVLINK_PROBE = "nvidia-smi topo -m"
# the options of `hf download` that take a value: the repo is the first word that is neither
HF_DOWNLOAD_VALUED = frozenset({"--repo-type", "--revision", "--local-dir", "--cache-dir", "--token"})
# miles' tools that write a checkpoint from another one, dequantized (the model is the same: its
# config.json's model_type and architecture are the source's): the script, its source's and its
# output's option. An output folder of a download's conversion holds what the download holds.
CONVERSIONS = (("tools/convert_kimi_int4_to_bf16.py", "--model-dir", "--output-dir"),)
# what a file a launch wrote reads as, when the script reads it after that launch: digits (miles'
# checkpoint tests check isdigit()), long and odd enough to occur nowhere else; capture.py checks
# that it reaches only a later launch's flags, and turns it into ${read-integer:PATH} there
READ_STAND_IN = "7{:03d}9035768249"


class Refused(BaseException):
    """The script did something the recorder cannot stand in for. A BaseException, so that a
    script's ``except Exception`` cannot swallow it."""


# mutable: the one record of a run in the sandbox, which every guard and recorder writes as it runs
@dataclasses.dataclass
class Trace:
    """Everything the script did through miles' helpers, and everything refused, as JSON-able data."""

    script: str = ""
    own_files: set[str] = dataclasses.field(default_factory=set)  # recorder, harness, miles' helpers
    own_code: tuple[str, ...] = ()  # folders of the code under test (the script's, the checkout)
    library: tuple[str, ...] = ()  # folders of the checkout that are miles itself, not its tests
    gate_defaults: dict[str, Any] = dataclasses.field(default_factory=dict)  # metric -> steps, constraint
    built: dict[str, str] = dataclasses.field(default_factory=dict)  # flag variables of returned builders
    checkpoints: dict[str, Any] = dataclasses.field(default_factory=dict)  # repo -> file -> content
    downloads: dict[str, str] = dataclasses.field(default_factory=dict)  # local dir -> repo
    unknown_configs: list[str] = dataclasses.field(default_factory=list)  # looked up, content unknown: why
    events: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    env_reads: dict[str, list[Any]] = dataclasses.field(default_factory=dict)  # name -> where
    refusal: dict[str, Any] | None = None
    train: dict[str, Any] | None = None  # the execute_train call in progress
    captures: str = ""  # a private folder where files the test's own code writes go instead
    stdlib: tuple[str, ...] = ()  # the standard library's folders (tempfile's frames are the caller's)
    # the test's: thread, what it runs and where, the frames that started it
    threads: list[tuple[Any, str, list[FrameType]]] = dataclasses.field(default_factory=list)
    hooks: dict[str, tuple[Any, ...]] = dataclasses.field(
        default_factory=dict
    )  # name -> as it was (hooked())
    launchers: list[FrameType] = dataclasses.field(
        default_factory=list
    )  # the frames that called execute_train
    checkout: str = ""  # the miles checkout's root (--miles-root), where a hook of the test's is named
    # (PATH.py:function, the function) of each function of the test's own a spec names (hooks.rebound)
    named: list[tuple[str, Any]] = dataclasses.field(default_factory=list)
    hook_entry: Callable[[object], Any] | None = None  # a hook's launch.before_submit entry (hooks.py)
    # stand-in path -> function, of each prepare call own_calls.py recorded (its "prepare-call" event's)
    stand_ins: dict[str, str] = dataclasses.field(default_factory=dict)
    launching: Callable[[FrameType], None] | None = None  # told of each launch's caller (script_checks.py)
    # the top-level functions of the test's own from a frame outward, [file, name, id] (own_calls.py)
    functions: Callable[[FrameType | None], list[list[Any]]] | None = None
    # the function that started a thread, from its frames and the launch's (own_calls.py)
    beside: Callable[[list[FrameType], FrameType], list[str] | None] | None = None

    def where(self) -> list[Any]:
        """[file, line] of the script line that led here (else the nearest caller outside us)."""
        frame: FrameType | None = sys._getframe(1)
        nearest: list[Any] | None = None
        while frame is not None:
            name = frame.f_code.co_filename
            if name == self.script:
                return [name, frame.f_lineno]
            if nearest is None and name not in self.own_files:
                nearest = [name, frame.f_lineno]
            frame = frame.f_back
        return nearest or [self.script, None]

    def own_reader(self, name: str) -> list[Any] | None:
        """[file, line] of the code that asked (past ``os`` and the recorder) when it is the test's
        own (the script's folder, the checkout's tests and launchers); None for a library reading
        its own settings (Ray, protobuf, ...) or for miles itself (its helpers, its model presets)."""
        frame: FrameType | None = sys._getframe(2)
        while frame is not None and (
            (frame.f_code.co_filename in self.own_files and not self.is_library(frame.f_code.co_filename))
            or frame.f_code.co_filename.startswith("<frozen")
            or frame.f_globals.get("__name__") == "os"
        ):
            frame = frame.f_back
        if frame is None or not frame.f_code.co_filename.startswith(self.own_code):
            return None
        if self.is_library(frame.f_code.co_filename):
            return self._asked_for_by_test(frame, name)
        return [frame.f_code.co_filename, frame.f_lineno]

    def _asked_for_by_test(self, frame: FrameType | None, name: str) -> list[Any] | None:
        """A read by miles itself counts when the test's code that called it names the variable
        (``U.get_bool_env_var("MILES_TEST_USE_FP8_ROLLOUT")``), not when miles reads its own
        settings (``execute_train`` reading ``NCCL_DEBUG``)."""
        while frame is not None and not self.is_test_code(frame.f_code.co_filename):
            frame = frame.f_back
        if frame is None or name not in _source(frame.f_code.co_filename):
            return None
        return [frame.f_code.co_filename, frame.f_lineno]

    def capture(self, path: Any) -> str | None:
        """Where a file the test's own code writes goes instead (its text becomes a prepare step);
        None for a write by a library, which is only recorded. The nearest frame past the
        standard library and us decides, so a NamedTemporaryFile of the test's is the test's."""
        if not self.captures or not isinstance(path, (str, os.PathLike)) or self.downloaded(path):
            return None  # a downloaded file patched in place: its text here is a stand-in's
        written = os.path.abspath(os.fspath(path))
        if written.startswith(os.path.join(os.path.expanduser("~"), "")):
            return None  # the sandbox's own HOME: that path means nothing on a node
        if self._test_frame(sys._getframe(2)) is None:
            return None
        target = os.path.join(self.captures, str(len(self.events)))
        self.record("write", path=written, capture=target)
        return target

    def _in_stdlib(self, filename: str) -> bool:
        return filename.startswith(self.stdlib) and not (
            "site-packages" in filename or "dist-packages" in filename
        )

    def is_library(self, filename: str) -> bool:
        return bool(self.library) and filename.startswith(self.library)

    def is_test_code(self, filename: str) -> bool:
        """The script's folder, the checkout's tests and launchers; not miles itself."""
        return filename.startswith(self.own_code) and not self.is_library(filename)

    def record(self, kind: str, **data: Any) -> dict[str, Any]:
        event = {"kind": kind, "at": self.where(), **data}
        self.events.append(event)
        return event

    def prepared_in(self, text: str) -> list[tuple[str, str]]:
        """(stand-in, function) of each recorded prepare call whose result's stand-in ``text`` holds."""
        return [(stand_in, function) for stand_in, function in self.stand_ins.items() if stand_in in text]

    def refuse(self, reason: str) -> Refused:
        if self.refusal is None:  # the first reason is the one to report
            self.refusal = {"reason": reason, "at": self.where()}
        return Refused(reason)

    def command(self, helper: str, command: str, capture_output: bool) -> str | None:
        """A command a helper would run: recorded, never run."""
        if self.train is not None:
            self.train["commands"].append(command)
            if capture_output and NVLINK_PROBE in command:
                return "0"  # no NVLink links: the probe's answer on a machine without NVLink
        else:
            self.record("command", helper=helper, command=command, within=self.within(sys._getframe(1)))
            self._checkpoints(command)
        if capture_output:
            raise self.refuse(f"reads the output of `{command}`, which the recorder cannot know")
        return None

    def within(self, frame: FrameType) -> list[list[Any]]:
        """[[file, function, frame id]] of the innermost top-level function of the test's own code that
        led to ``frame``, as own_calls.py names it (none when that code runs in no such function)."""
        innermost = self._test_frame(frame)
        return self.functions(innermost)[:1] if self.functions and innermost else []

    def _checkpoints(self, command: str) -> None:
        """What a command says of the checkpoints: a download's folder, a conversion's output."""
        try:
            words = shlex.split(command)
        except ValueError:
            return
        self._download(words)
        self._conversion(words)

    def _download(self, words: list[str]) -> None:
        """``hf download [--repo-type T] REPO --local-dir DIR``: DIR holds REPO (its known files are
        readable)."""
        if words[:2] != ["hf", "download"] or "--local-dir" not in words[:-1]:
            return
        rest, repo = words[2:], None
        while rest and repo is None:
            word = rest.pop(0)
            if word in HF_DOWNLOAD_VALUED:
                rest = rest[1:]
            elif not word.startswith("-"):
                repo = word
        if repo is not None:
            self.downloads[os.path.abspath(words[words.index("--local-dir") + 1])] = repo

    def _conversion(self, words: list[str]) -> None:
        """``python .../tools/convert_kimi_int4_to_bf16.py --model-dir SRC --output-dir DST`` (a
        ``CONVERSIONS`` tool) of a download: DST holds what SRC does."""
        for tool, source, output in CONVERSIONS:
            if any(word.endswith("/" + tool) or word == tool for word in words):
                self.converted(_option(words, source), _option(words, output))

    def converted(self, source: str | None, output: str | None) -> None:
        """A checkpoint converted from ``source`` into ``output``: a download's conversion holds it too."""
        repo = self.downloads.get(os.path.abspath(source)) if source and output else None
        if repo is not None and output:
            self.downloads[os.path.abspath(output)] = repo

    def downloaded(self, path: Any) -> tuple[str, str] | None:
        """(repo, file) when ``path`` lies in a recorded download's folder (file "" for the folder):
        text or bytes, named from the root or from the working folder, as the download's was."""
        text = _absolute(path)
        for folder, repo in self.downloads.items():
            if text is not None and (text == folder or text.startswith(folder + os.sep)):
                return repo, text[len(folder) + 1 :]
        return None

    def download_in(self, path: Any) -> tuple[str, str] | None:
        """(folder, repo) of a recorded download inside the folder ``path``, which listing it shows."""
        text = _absolute(path)
        for folder, repo in self.downloads.items():
            if text is not None and folder.startswith(text.rstrip(os.sep) + os.sep):
                return folder, repo
        return None

    def test_caller(self) -> list[Any] | None:
        """[file, line] of the test's own code that led here, past the standard library and us;
        None when the nearest such frame is a library's (Ray, miles itself)."""
        frame = self._test_frame(sys._getframe(2))
        return None if frame is None else [frame.f_code.co_filename, frame.f_lineno]

    def _test_frame(self, frame: FrameType | None) -> FrameType | None:
        """The nearest frame from ``frame`` outward past the standard library and us, when it is the
        test's own code."""
        while frame is not None and (
            frame.f_code.co_filename in self.own_files
            or frame.f_code.co_filename.startswith("<frozen")
            or self._in_stdlib(frame.f_code.co_filename)
        ):
            frame = frame.f_back
        return frame if frame is not None and self.is_test_code(frame.f_code.co_filename) else None

    def launch_output(self, path: Any) -> str | None:
        """The stand-in text of a file an earlier launch writes (under its --save folder, say), read
        after it; None for any other file. Each file gets its own, the same on every read until the
        next launch, which may write it anew (save, load, async save, load: the second load's step is
        another value, which must reach a flag of its own)."""
        try:
            text = os.path.abspath(os.fspath(path))
        except TypeError:
            return None
        if not isinstance(text, str) or self.train is not None or not written_by(text, self.events):
            return None
        launches = sum(e["kind"] == "train" for e in self.events)
        known = [e for e in self.events if e["kind"] == "read"]
        same = next((e["stand_in"] for e in known if (e["path"], e["after"]) == (text, launches)), None)
        stand_in = same or READ_STAND_IN.format(len({(e["path"], e["after"]) for e in known}) + 1)
        reader = self._test_frame(sys._getframe(1))
        within = self.functions(reader) if self.functions and reader else []
        self.record("read", path=text, stand_in=stand_in, after=launches, within=within)
        return stand_in

    def stand_in(self, path: Any) -> str | None:
        """The content of a downloaded file import knows (``miles/import.yaml`` checkpoints)."""
        found = self.downloaded(path)
        content = self.checkpoints.get(found[0], {}).get(found[1]) if found else None
        return None if content is None else json.dumps(content)


def _absolute(path: Any) -> str | None:
    """``path`` as an absolute, normal path text; None when it is no path."""
    try:
        return os.path.abspath(os.fsdecode(os.fspath(path)))
    except (TypeError, ValueError):
        return None


def written_by(path: str, events: list[dict[str, Any]]) -> tuple[str, int | None] | None:
    """(the flag or env var that points there, the line) of the first launch in ``events`` whose
    flags or env vars name ``path`` or a folder above it (absolute): that launch would write it."""
    for event in (e for e in events if e["kind"] == "train"):
        try:
            words = shlex.split(str(event["args"].get("train_args") or ""))
        except ValueError:
            words = []
        named = [(f, v) for f, v in itertools.pairwise(words) if f.startswith("--")]
        named += [(f"{k}=", str(v)) for k, v in (event["args"].get("extra_env_vars") or {}).items()]
        for name, value in named:
            folder = value.rstrip("/")
            if value.startswith("/") and (path + "/").startswith(folder + "/"):
                return (f"{name}{value}" if name.endswith("=") else f"{name} {value}"), event["at"][1]
    return None


@functools.lru_cache(maxsize=256)  # lasting state: importer/__init__.py says why
def _source(filename: str) -> str:
    try:
        with io.open_code(filename) as file:  # the guards leave reading alone
            return file.read().decode("utf-8", "replace")
    except OSError:
        return ""


TRACE = Trace()  # lasting state: importer/__init__.py says why


def _option(words: list[str], name: str) -> str | None:
    """The value of ``name`` among a command's words (``--name VALUE`` or ``--name=VALUE``)."""
    for index, word in enumerate(words):
        if word == name and index + 1 < len(words):
            return words[index + 1]
        if word.startswith(name + "="):
            return word[len(name) + 1 :]
    return None
