"""A seed gives the same examples in every process, whatever else the process imported (pytest's
test modules here, a bare interpreter in the subprocess): properties/determinism.py."""

import json
import subprocess
import sys

import pytest

from streamproof.properties import registry
from streamproof.properties.explore import explore

CASES = [("timers.differential", 26), ("timers.differential", 3), ("mailbox.differential", 5),
         ("termination.fires-once", 1)]
CHILD = """
import json, sys
from streamproof.properties import registry
from streamproof.properties.explore import explore
out = []
for name, seed in json.loads(sys.argv[1]):
    first = explore(registry.get(name), 2, seed=seed, step_count=40).steps
    import streamproof.impl.coordination.valve_pipeline, streamproof.properties.valve.job  # more local modules: more source constants
    out.append([first, explore(registry.get(name), 2, seed=seed, step_count=40).steps])
print(json.dumps(out))
"""


@pytest.mark.timeout(300)
def test_a_seed_gives_the_same_examples_in_any_process():
    here = [explore(registry.get(name), 2, seed=seed, step_count=40).steps for name, seed in CASES]
    child = subprocess.run([sys.executable, "-c", CHILD, json.dumps(CASES)], capture_output=True, text=True,
                           timeout=280, check=True)
    there = json.loads(child.stdout)
    assert [pair[0] for pair in there] == [pair[1] for pair in there] == here
