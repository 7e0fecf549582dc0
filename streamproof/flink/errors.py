"""The exceptions of :mod:`streamproof.flink` (all one line)."""

from __future__ import annotations

from streamproof.impl.operators.keyed_process_operator import CallbackLimitExceeded, UserCodeError


class UnsupportedFeature(Exception):
    """The operator uses a PyFlink feature streamproof cannot run faithfully (one line naming it),
    e.g. ``state TTL is not modelled (descriptor 'seen')``."""


__all__ = ["UnsupportedFeature", "UserCodeError", "CallbackLimitExceeded"]
