"""The function base classes that both :mod:`.functions` and :mod:`.state` need (PyFlink has
them in ``pyflink.datastream.functions``; they live here so the two modules do not import each
other)."""

from __future__ import annotations

from abc import ABC, abstractmethod


class Function(ABC):
    """The base class for all user-defined functions."""

    def open(self, runtime_context):
        pass

    def close(self):
        pass


class ReduceFunction(Function):
    """Combines two values into one of the same type."""

    @abstractmethod
    def reduce(self, value1, value2):
        pass


class AggregateFunction(Function):
    """An aggregation with an accumulator: ``create_accumulator``, ``add(value, accumulator)``,
    ``get_result(accumulator)``, ``merge(acc_a, acc_b)``."""

    @abstractmethod
    def create_accumulator(self):
        pass

    @abstractmethod
    def add(self, value, accumulator):
        pass

    @abstractmethod
    def get_result(self, accumulator):
        pass

    @abstractmethod
    def merge(self, acc_a, acc_b):
        pass


class FunctionWrapper(Function):
    def __init__(self, func):
        self._func = func


class ReduceFunctionWrapper(FunctionWrapper):
    """A plain callable used as a :class:`ReduceFunction`."""

    def reduce(self, value1, value2):
        return self._func(value1, value2)
