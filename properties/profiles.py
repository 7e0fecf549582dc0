"""Hypothesis settings profiles: ``dev`` (quick loop), ``ci`` (the default test run) and
``campaign`` (long fuzzing, never in the default run). Select with
``pytest --hypothesis-profile=NAME`` or ``HYPOTHESIS_PROFILE=NAME``.

:func:`register` registers them, never replacing a profile of the same name registered before
(e.g. in a user's conftest.py): the CLI (:func:`load_default`) and the repository's tests/conftest.py,
where ``ci`` is ours, and the pytest plugin before Hypothesis's own plugin loads
``--hypothesis-profile``, where Hypothesis's own ``ci`` profile (which Hypothesis loads by itself
when it detects CI) is left as it is: a user's Hypothesis tests keep what Hypothesis documents."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis.errors import InvalidArgument

PROFILES = {
    "dev": dict(max_examples=50, stateful_step_count=30),
    "ci": dict(max_examples=300, stateful_step_count=40),
    "campaign": dict(max_examples=20_000, stateful_step_count=60),
}


def register(overwrite: bool = False, over_hypothesis: bool = True) -> list[str]:
    """Registers ``dev``, ``ci`` and ``campaign``; a profile of the same name already registered
    is kept unless ``overwrite``, Hypothesis's own ``ci`` too unless ``over_hypothesis``.
    Returns the names registered now."""
    registered = []
    for name, values in PROFILES.items():
        if not overwrite and _registered(name, over_hypothesis):
            continue
        settings.register_profile(
            name, deadline=None, database=None, print_blob=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], **values,
        )
        registered.append(name)
    return registered


def _registered(name: str, over_hypothesis: bool = True) -> bool:
    """Is ``name`` registered (by someone other than Hypothesis itself, when ``over_hypothesis``:
    Hypothesis registers a ``ci`` profile of its own)?"""
    from hypothesis import _settings

    try:
        existing = settings.get_profile(name)
    except InvalidArgument:
        return False
    return not over_hypothesis or existing is not getattr(_settings, name.upper(), None)


def load_default() -> None:
    """Loads ``$HYPOTHESIS_PROFILE`` (default ``ci``), the profiles registered first."""
    register()
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def current_examples() -> int:
    return settings().max_examples


def current_step_count() -> int:
    return settings().stateful_step_count
