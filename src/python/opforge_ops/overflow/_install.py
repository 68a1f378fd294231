"""Makes transformers use opforge's DebugUnderflowOverflow and detect_overflow.

transformers.trainer imports `DebugUnderflowOverflow` from `transformers.debug_utils` at module level
and calls `DebugUnderflowOverflow(self.model)` when `TrainingArguments(debug="underflow_overflow")`
(transformers 4.x and 5.x). install() rebinds both names in `transformers.debug_utils` (so modules
imported later bind opforge's) and in every transformers module already imported that holds
transformers' objects under those names (so `transformers.trainer`, imported before, uses opforge's
too). uninstall() puts transformers' objects back wherever opforge's are bound."""
from __future__ import annotations

import sys
from types import ModuleType
from typing import Any, Iterator

from . import debug

_NAMES = ("DebugUnderflowOverflow", "detect_overflow")
_originals: dict[str, Any] = {}  # name -> transformers' object, while installed
_replacements: dict[str, Any] = {}  # name -> opforge's object, while installed


def _transformers_modules() -> Iterator[ModuleType]:
    for name, mod in list(sys.modules.items()):
        if mod is not None and (name == "transformers" or name.startswith("transformers.")):
            yield mod


def _rebind(old: dict[str, Any], new: dict[str, Any]) -> None:
    """In every imported transformers module, binds new[name] where old[name] is bound."""
    for mod in _transformers_modules():
        d = getattr(mod, "__dict__", {})  # not getattr(mod, name): lazy modules would import on access
        for name in _NAMES:
            if name in d and d[name] is old[name]:
                setattr(mod, name, new[name])


class Installed:
    """What install() returns; `with install(): ...` uninstalls on leaving the block."""

    def __enter__(self) -> Installed:
        return self

    def __exit__(self, *exc: object) -> None:
        uninstall()


def install(**defaults: Any) -> Installed:
    """Makes transformers' `DebugUnderflowOverflow` and `detect_overflow` opforge's, in
    `transformers.debug_utils` and in every transformers module that imported them (the Trainer
    included). Keyword arguments become defaults of the class transformers constructs, e.g.
    `install(deferred=True, file="overflow_{rank}.txt")`. Installing again replaces the defaults.
    Raises ImportError when transformers is not installed."""
    import transformers.debug_utils as du  # noqa: F401  (binds the names that are replaced)
    if _originals:
        uninstall()
    cls: type[debug.DebugUnderflowOverflow] = debug.DebugUnderflowOverflow
    if defaults:
        base = cls

        class DebugUnderflowOverflow(base):  # type: ignore[valid-type,misc]  # noqa: N801  (transformers' name, with defaults)
            __doc__ = base.__doc__

            def __init__(self, model: Any, *args: Any, **kwargs: Any) -> None:
                super().__init__(model, *args, **{**defaults, **kwargs})

        DebugUnderflowOverflow.__module__ = base.__module__
        DebugUnderflowOverflow.__qualname__ = base.__qualname__
        cls = DebugUnderflowOverflow
    _originals.update({name: getattr(du, name) for name in _NAMES})
    _replacements.update({"DebugUnderflowOverflow": cls, "detect_overflow": debug.detect_overflow})
    _rebind(_originals, _replacements)
    return Installed()


def uninstall() -> None:
    """Puts transformers' own objects back wherever install() bound opforge's (a no-op when not
    installed)."""
    if not _originals:
        return
    _rebind(_replacements, _originals)
    _originals.clear()
    _replacements.clear()


def installed() -> bool:
    """True while install() is in effect."""
    return bool(_originals)
