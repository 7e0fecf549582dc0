"""``pyflink.datastream.timerservice``: the :class:`TimerService` interface."""

from abc import ABC, abstractmethod

__all__ = ["TimerService"]


class TimerService(ABC):
    """Querying time and registering timers of the current key."""

    @abstractmethod
    def current_processing_time(self):
        pass

    @abstractmethod
    def current_watermark(self):
        pass

    @abstractmethod
    def register_processing_time_timer(self, timestamp: int):
        pass

    @abstractmethod
    def register_event_time_timer(self, timestamp: int):
        pass

    def delete_processing_time_timer(self, timestamp: int):
        pass

    def delete_event_time_timer(self, timestamp: int):
        pass
