"""Known-bug variants of state TTL (streamproof/flink/state_ttl.py), each a plausible way to get
Flink's TTL semantics wrong."""

from __future__ import annotations

from contextlib import contextmanager

from streamproof.flink import state_ttl
from streamproof.properties.bugzoo import variant
from streamproof.properties.timers.bugzoo import patched

PROPERTY = "ttl.differential"


@variant("ttl-expiry-from-registration", "issue 29", PROPERTY,
         "A value's TTL is measured from its first write: overwriting a value (update, put, add to a "
         "reducing or aggregating state) keeps its original timestamp, so it expires too early.")
@contextmanager
def expiry_from_registration():
    def stamp(self, previous, now):
        return previous.last_access_timestamp if previous is not None else now  # BUG

    with patched(state_ttl._TtlHandle, _stamp=stamp):
        yield


@variant("ttl-read-refreshes-on-create-and-write", "issue 29", PROPERTY,
         "Reads refresh the last-access timestamp under UpdateType.OnCreateAndWrite too (only "
         "OnReadAndWrite does): values read regularly never expire.")
@contextmanager
def read_refreshes_on_create_and_write():
    with patched(state_ttl._TtlHandle, _refreshes_on_read=lambda self: True):  # BUG
        yield


@variant("ttl-full-snapshot-keeps-expired", "issue 29", PROPERTY,
         "cleanup_full_snapshot() is ignored: expired entries are written into full snapshots and come "
         "back after a restore (returned again under ReturnExpiredIfNotCleanedUp).")
@contextmanager
def full_snapshot_keeps_expired():
    with patched(state_ttl, cleanup_snapshot=lambda snapshot, registry: snapshot):  # BUG
        yield
