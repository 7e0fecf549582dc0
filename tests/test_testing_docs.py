"""docs/testing.md runs as written, and its claim about certification holds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "testing.md"


def test_every_example_of_the_testing_guide_runs():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) >= 8
    namespace: dict = {"__name__": "testing_guide"}
    for n, block in enumerate(blocks):
        try:
            exec(compile(block, f"{DOC.name} block {n + 1}", "exec"), namespace)  # noqa: S102 - the guide's own code
        except Exception as e:  # noqa: BLE001
            pytest.fail(f"docs/testing.md, python block {n + 1}: {type(e).__name__}: {e}", pytrace=False)


def test_the_session_counter_is_certified_although_its_examples_fail():
    """The guide's point: certification cannot see a functional bug an example shows."""
    from streamproof.properties.certify import certify
    from streamproof import testing
    from examples.testing.session_counter import SessionCounter

    assert certify("examples.testing.session_counter:SessionCounter", 60, seed=0).status == "certified"
    h = testing.for_keyed_process_function(SessionCounter, key_selector=lambda c: c[0], timestamp=lambda c: c[1])
    h.process_elements([("ann", 0), ("ann", 4)]).process_watermark(20).process_element(("ann", 40)).end_input()
    with pytest.raises(AssertionError, match=r"missing 1: \('ann', 1\); unexpected 1: \('ann', 3\)"):
        h.assert_output([("ann", 2), ("ann", 1)])
