"""PyFlink's operator API on streamproof's runtime: change ``pyflink`` to ``streamproof.flink``
in an operator's imports (``streamproof.flink.datastream``, ``streamproof.flink.datastream.state``,
``streamproof.flink.common``, ...) and streamproof runs and certifies it (docs/flink-api.md).

:func:`adapt` makes a runtime function of an operator instance, :func:`adapt_class` of a class;
:func:`refusal_reason` says why an operator cannot be run faithfully. Imports nothing heavy."""

from streamproof.flink.adapter import PyFlinkFunctionAdapter, adapt, adapt_class, is_pyflink_style, refusal_reason
from streamproof.flink.errors import CallbackLimitExceeded, UnsupportedFeature, UserCodeError

__all__ = ["UnsupportedFeature", "UserCodeError", "CallbackLimitExceeded", "PyFlinkFunctionAdapter", "adapt",
           "adapt_class", "refusal_reason", "is_pyflink_style"]
