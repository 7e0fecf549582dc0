"""A Triggerable that records what fired (shared by the timer tests)."""


class Fired:
    def __init__(self):
        self.timers = []

    def on_event_time(self, timer):
        self.timers.append(("event", timer))

    def on_processing_time(self, timer):
        self.timers.append(("processing", timer))
