"""Loads the streamproof Hypothesis profiles; ``--hypothesis-profile`` (default ci) picks one."""

from hypothesis import settings

from streamproof.properties import profiles
from streamproof.properties import scenario

profiles.register()  # dev / ci / campaign (ours replacing Hypothesis's own ci)

scenario._ensure_families()  # every family registered before any test snapshots the registry
settings.load_profile("ci")
