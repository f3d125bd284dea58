"""Import-only stand-ins for packages the miles oracle must import but never runs (see build.sh)."""

import importlib.abc
import importlib.machinery
import sys
import types

STUBBED = ("torchvision",)


class _Meta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return cls


class Anything(metaclass=_Meta):
    """Whatever is asked of it: a class to subclass, a value, a decorator; it never computes."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return self

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self


class _Module(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (Anything,), {"__module__": self.__name__})


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] not in STUBBED:
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        module = _Module(spec.name)
        module.__path__ = []
        module.__version__ = "0.0.0+stub"
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Finder())
