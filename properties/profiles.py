"""Hypothesis settings profiles: ``dev`` (quick loop), ``ci`` (the default test run) and
``campaign`` (long fuzzing, never in the default run). Select with
``pytest --hypothesis-profile=NAME`` or ``HYPOTHESIS_PROFILE=NAME``."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILES = {
    "dev": dict(max_examples=50, stateful_step_count=30),
    "ci": dict(max_examples=300, stateful_step_count=40),
    "campaign": dict(max_examples=20_000, stateful_step_count=60),
}

for _name, _values in PROFILES.items():
    settings.register_profile(
        _name, deadline=None, database=None, print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], **_values,
    )


def load_default() -> None:
    """Loads ``$HYPOTHESIS_PROFILE`` (default ``ci``)."""
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def current_examples() -> int:
    return settings().max_examples


def current_step_count() -> int:
    return settings().stateful_step_count
