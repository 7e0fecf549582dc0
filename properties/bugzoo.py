"""The bug zoo: known-bug variants of the implementation, each a patch applied in a context
manager (never a flag in ``impl/``), each naming its source and the property that must catch it.

``hunt(variant)`` explores the catching property with the patch applied and reports whether
the bug was caught, how fast, and the minimal counterexample.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Callable

from streamproof.properties import families, registry
from streamproof.properties.explore import Exploration, explore



@dataclass(frozen=True)
class BugVariant:
    name: str
    source: str          # a JIRA id, a seed document, or "streamproof" for a classic mistake
    description: str
    caught_by: str       # the property that must catch it
    patch: Callable[[], AbstractContextManager]


_VARIANTS: dict[str, BugVariant] = {}
_loaded = False


_CACHES: list[Callable[[], None]] = []


def clears_on_patch(cache_clear: Callable[[], None]) -> Callable[[], None]:
    """Registers a cache of results that a bug patch (applied or removed) makes stale."""
    _CACHES.append(cache_clear)
    return cache_clear


def variant(name: str, source: str, caught_by: str, description: str):
    """Decorator registering a ``@contextmanager`` function as a bug variant."""
    def register(patch: Callable[[], AbstractContextManager]) -> Callable[[], AbstractContextManager]:
        if name in _VARIANTS:
            raise ValueError(f"bug variant {name!r} is registered twice")

        @contextmanager
        def applied():
            for clear in _CACHES:
                clear()
            try:
                with patch():
                    yield
            finally:
                for clear in _CACHES:
                    clear()

        _VARIANTS[name] = BugVariant(name, source, description, caught_by, applied)
        return patch
    return register


def all_variants() -> list[BugVariant]:
    global _loaded
    if not _loaded:
        _loaded = True
        families.load("bugzoo")
    return sorted(_VARIANTS.values(), key=lambda v: v.name)


def get_variant(name: str) -> BugVariant:
    variants = {v.name: v for v in all_variants()}
    if name not in variants:
        raise KeyError(f"unknown bug variant {name!r}; known: {', '.join(variants)}")
    return variants[name]


def hunt(bug: BugVariant, examples: int, seed: int | None = 0, shrink: bool = True) -> Exploration:
    """Explores ``bug.caught_by`` with the bug applied; ``holds`` False means caught. Without
    ``shrink`` the first counterexample found is returned as it is (faster)."""
    prop = registry.get(bug.caught_by)
    with bug.patch():
        return explore(prop, examples, seed=seed, shrink=shrink)
