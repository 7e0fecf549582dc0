"""The keyed state backend's snapshot copy (impl/state/keyed_state_backend.py ``_deep_copy_tables``)
is ``copy.deepcopy``: equal values, the same sharing between values, nothing shared with the live
state."""

import copy

from hypothesis import given, settings, strategies as st

from streamproof.impl.state.keyed_state_backend import _deep_copy_tables

atoms = st.one_of(st.integers(), st.text(max_size=3), st.floats(allow_nan=False), st.booleans(), st.none(),
                  st.binary(max_size=2))
values = st.recursive(atoms, lambda inner: st.one_of(st.lists(inner, max_size=3), st.tuples(inner, inner),
                                                     st.dictionaries(atoms, inner, max_size=3)), max_leaves=6)
keys = st.one_of(atoms, st.tuples(atoms, atoms))


@settings(max_examples=300, deadline=None)
@given(tables=st.dictionaries(st.sampled_from(["a", "b"]), st.dictionaries(keys, values, max_size=4), max_size=2),
       share=st.booleans())
def test_copy_is_deepcopy(tables, share):
    mutable = [v for table in tables.values() for v in table.values() if isinstance(v, (list, dict))]
    if share and mutable:  # one value object under two keys: deepcopy keeps it one object
        tables.setdefault("a", {})["shared"] = mutable[0]
    got, want = _deep_copy_tables(tables), copy.deepcopy(tables)
    assert got == want
    got_values = [v for table in got.values() for v in table.values()]
    want_values = [v for table in want.values() for v in table.values()]
    assert [[a is b for b in got_values] for a in got_values] == [[a is b for b in want_values] for a in want_values]
    for name, table in tables.items():
        for key, value in table.items():
            if isinstance(value, (list, dict)):
                assert got[name][key] is not value
                assert got[name] is not table
    assert not _mutables(got) & _mutables(tables)  # at no depth (mutation testing: a dict of lists)


def _mutables(value, found=None) -> set:
    """The ids of every list and dict in ``value``, at any depth."""
    found = set() if found is None else found
    if isinstance(value, (list, dict, tuple)):
        if not isinstance(value, tuple):
            found.add(id(value))
        items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
        for k, v in items:
            _mutables(k, found)
            _mutables(v, found)
    return found
