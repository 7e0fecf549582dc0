"""FLIP-331's operator attributes (Flink's ``OperatorAttributes`` and ``OperatorAttributesBuilder``): what an
operator declares so that the runtime may run it like batch (outputs only after end of stream,
an internal sorter)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OperatorAttributes:
    """What the runtime may use to optimise a job (Flink's ``OperatorAttributes``)."""

    output_only_after_end_of_stream: bool = False
    internal_sorter_supported: bool = False


class OperatorAttributesBuilder:
    """Builds :class:`OperatorAttributes`; unset attributes are False."""

    def __init__(self):
        self._output_only_after_end_of_stream = False
        self._internal_sorter_supported = False

    def set_output_only_after_end_of_stream(self, value: bool) -> "OperatorAttributesBuilder":
        self._output_only_after_end_of_stream = bool(value)
        return self

    def set_internal_sorter_supported(self, value: bool) -> "OperatorAttributesBuilder":
        self._internal_sorter_supported = bool(value)
        return self

    def build(self) -> OperatorAttributes:
        return OperatorAttributes(self._output_only_after_end_of_stream, self._internal_sorter_supported)


__all__ = ["OperatorAttributes", "OperatorAttributesBuilder"]
