"""Loads the streamproof Hypothesis profiles; ``--hypothesis-profile`` (default ci) picks one."""

from hypothesis import settings

from streamproof.properties import profiles  # noqa: F401  (registers dev / ci / campaign)
from streamproof.properties import scenario

scenario._ensure_families()  # every family registered before any test snapshots the registry
settings.load_profile("ci")
