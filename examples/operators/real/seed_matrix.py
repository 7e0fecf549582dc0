"""The corpus's verdicts per property and seed, against corpus.json (a check that no verdict
depends on the seed or the example count):

    python examples/operators/real/seed_matrix.py all 0,1,2,3,4              # every property
    python examples/operators/real/seed_matrix.py interruptible-timers 0 3000  # 3000 examples
    python examples/operators/real/seed_matrix.py same-output 0,1 - car_event  # some operators

One line per (operator, property): the expected verdict, OK or BAD, each seed's verdict (with the
example that refused), seconds. Run from the repository root.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from streamproof.properties import certify as cert

CORPUS = Path(__file__).resolve().parent / "corpus.json"


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    prop_name, seeds = argv[0], [int(x) for x in argv[1].split(",")]
    override = int(argv[2]) if len(argv) > 2 and argv[2] != "-" else None
    only = argv[3:]
    bad = 0
    for entry in json.loads(CORPUS.read_text()):
        if only and not any(o in entry["file"] for o in only):
            continue
        subject = cert.load(entry["operator"], stream=entry["stream"]) if entry.get("stream") else \
            cert.load(entry["operator"])
        refused_by = entry.get("refused_by") or []
        refused_by = [refused_by] if isinstance(refused_by, str) else refused_by
        examples = override or entry.get("examples", 60)
        started = time.time()
        for prop in cert.properties_for(subject):
            if prop_name != "all" and not prop.name.endswith(prop_name):
                continue
            expect = "refused" if prop.name in refused_by else "held"
            got = []
            for seed in seeds:
                found, _ = cert.explore_certification(subject, prop, examples, seed=seed, shrink=False)
                got.append("held" if found.holds else f"refused@{found.examples}")
            ok = all(g.split("@")[0] == expect for g in got)
            bad += not ok
            print(f"{entry['file'][:-3]:42} {prop.name.split('.')[1]:20} expect={expect:8} {'OK ' if ok else 'BAD'} "
                  f"{got} {time.time() - started:.0f}s", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, str(CORPUS.parent.parent.parent.parent))
    sys.exit(main(sys.argv[1:]))
