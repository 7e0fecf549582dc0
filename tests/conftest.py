"""Loads the streamproof Hypothesis profiles; ``--hypothesis-profile`` (default ci) picks one."""

from properties import profiles  # noqa: F401  (registers dev / ci / campaign)
from hypothesis import settings

settings.load_profile("ci")
