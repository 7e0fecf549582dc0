"""The result of checking one scenario against one property."""

from __future__ import annotations

from dataclasses import dataclass, field


class Violation(AssertionError):
    """A property does not hold: names the invariant and the step where it broke."""

    def __init__(self, invariant: str, message: str, step: int | None = None):
        where = f"step {step}: " if step is not None else ""
        super().__init__(f"{invariant}: {where}{message}")
        self.invariant, self.detail, self.step = invariant, message, step


@dataclass
class Verdict:
    """``holds`` is True when the property held on the scenario; ``observed`` is the
    implementation's trace in the family's vectors format."""

    property: str
    holds: bool
    observed: list = field(default_factory=list)
    invariant: str | None = None
    message: str = ""
    step: int | None = None

    @property
    def verdict(self) -> str:
        return "held" if self.holds else "failed"

    def to_json(self) -> dict:
        out = {"property": self.property, "verdict": self.verdict, "observed": self.observed}
        if not self.holds:
            out.update(invariant=self.invariant, message=self.message, step=self.step)
        return out
