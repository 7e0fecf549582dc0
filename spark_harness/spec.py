"""What a campaign is, as plain data shared by the driver and the executors (no pyspark here).

A campaign is properties x a seed range x a budget per seed x a configuration. Its seeds are cut
into *chunks* (fixed per property when the campaign starts, stored with it, so a resumed run cuts
them the same way); a chunk is the unit of the results layout (``campaign=/property=/chunk=``)
and of resume. This module also defines the result row (:data:`COLUMNS`), the failure signature
and the reproduce command, so that the executors (``streamproof.spark_harness.executor``), the driver and the
report agree on them.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import asdict, dataclass, field
from typing import Any

SPEC_FORMAT = "streamproof.campaign/1"
VERDICTS = ("held", "failed", "timeout", "error")
DEFAULT_STEP_COUNT = 40  # explore()'s default and the ci profile's
PROFILE_STEP_COUNTS = {40: None, 30: "dev", 60: "campaign"}  # step count -> HYPOTHESIS_PROFILE

# The result row: (name, Spark SQL type, Arrow type). ``campaign``, ``property`` and ``chunk`` are
# the Parquet partition columns.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("campaign", "string", "string"),
    ("property", "string", "string"),
    ("chunk", "int", "int32"),
    ("seed", "bigint", "int64"),
    ("verdict", "string", "string"),          # held | failed | timeout | error
    ("examples", "int", "int32"),             # examples Hypothesis ran (shrinking included)
    ("steps", "bigint", "int64"),             # steps executed, all examples together
    ("duration", "double", "float64"),        # seconds for this seed, on the executor
    ("invariant", "string", "string"),        # what broke (failed), "timeout", or the error type
    ("message", "string", "string"),          # one line
    ("signature", "string", "string"),        # 16 hex digits; null when held
    ("signature_text", "string", "string"),   # what the signature hashes, readable
    ("scenario", "string", "string"),         # the minimal failing scenario (JSON), when recorded
    ("reproduce", "string", "string"),        # the command that reruns exactly this seed
    ("reproduce_blob", "string", "string"),   # Hypothesis's @reproduce_failure blob: not available
    ("inject", "string", "string"),           # the bug-zoo variant applied, if any
    ("budget_examples", "int", "int32"),      # the budget: examples per seed
    ("step_count", "int", "int32"),           # the budget: steps per example
    ("version", "string", "string"),          # streamproof version
    ("hypothesis", "string", "string"),       # Hypothesis version on the executor
    ("executor", "string", "string"),         # host:pid of the Python worker
    ("finished", "double", "float64"),        # when the seed ended (Unix time; throughput plot)
    ("states", "array<string>", "list<string>"),  # exhaustive mode: state fingerprints reached
)
PARTITION_COLUMNS = ("campaign", "property", "chunk")
COLUMN_NAMES = tuple(name for name, _, _ in COLUMNS)
DETERMINISTIC_COLUMNS = ("property", "seed", "verdict", "examples", "steps", "invariant", "message",
                         "signature", "scenario")  # equal on every target, seed for seed


def spark_ddl() -> str:
    return ", ".join(f"`{name}` {sql}" for name, sql, _ in COLUMNS)


# ------------------------------------------------------------------------------ the campaign

@dataclass
class CampaignSpec:
    """Everything that determines a campaign's results (its identity), plus the chunking."""

    name: str
    properties: list[str]
    seed_start: int
    seed_end: int                       # exclusive
    examples: int                       # budget per seed
    step_count: int = DEFAULT_STEP_COUNT
    timeout: float = 300.0              # seconds per seed
    inject: str | None = None           # a bug-zoo variant applied on the executors
    chunk_seeds: dict[str, int] = field(default_factory=dict)   # property -> seeds per chunk
    seed_seconds: dict[str, float] = field(default_factory=dict)  # property -> measured s per seed (waves)
    created: float = 0.0                # when the campaign (re)started from scratch: older run records are not its
    mode: str = "seeds"                 # "seeds" or "exhaustive"
    scope: dict = field(default_factory=dict)   # exhaustive mode: family, depth, bound, total
    version: str = ""
    format: str = SPEC_FORMAT

    IDENTITY = ("properties", "seed_start", "seed_end", "examples", "step_count", "timeout",
                "inject", "mode", "scope")

    @property
    def seeds(self) -> int:
        return self.seed_end - self.seed_start

    def chunks(self, prop: str) -> int:
        size = self.chunk_seeds[prop]
        return -(-self.seeds // size)

    def chunk_range(self, prop: str, chunk: int) -> tuple[int, int]:
        size = self.chunk_seeds[prop]
        lo = self.seed_start + chunk * size
        return lo, min(self.seed_end, lo + size)

    def chunk_of(self, prop: str, seed: int) -> int:
        return (seed - self.seed_start) // self.chunk_seeds[prop]

    def identity(self) -> dict:
        return {k: getattr(self, k) for k in self.IDENTITY}

    def differences(self, other: CampaignSpec) -> list[str]:
        mine, theirs = self.identity(), other.identity()
        return [f"{k} {theirs[k]!r} (stored: {mine[k]!r})" for k in self.IDENTITY if mine[k] != theirs[k]]

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CampaignSpec:
        data = json.loads(text)
        if data.get("format") != SPEC_FORMAT:
            raise ValueError(f"not a campaign description (format {data.get('format')!r})")
        return cls(**data)

    def executor_config(self, prop: str) -> dict:
        """What ``streamproof.spark_harness.executor.run_partition`` needs for one property (JSON-able)."""
        return {
            "campaign": self.name, "property": prop, "examples": self.examples,
            "step_count": self.step_count, "timeout": self.timeout, "inject": self.inject,
            "seed_start": self.seed_start, "chunk_seeds": self.chunk_seeds[prop],
            "version": self.version, "mode": self.mode, "scope": self.scope,
        }


def default_name(properties: list[str], seed_start: int, seed_end: int, examples: int, step_count: int,
                 inject: str | None) -> str:
    """A campaign's default name: a hash of what determines its results, so that the same command
    names the same campaign (and ``--resume`` finds it)."""
    key = json.dumps([sorted(properties), seed_start, seed_end, examples, step_count, inject])
    return "c-" + hashlib.sha1(key.encode()).hexdigest()[:10]


NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


# ------------------------------------------------------------------------ failure signatures

_QUOTED = re.compile(r"""(?<!\w)(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")(?!\w)""")  # not an apostrophe
_NUMBERS = re.compile(r"(?<![\w)\]])[-+](?=\d)|0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_CONSTANTS = re.compile(r"\b(?:True|False|None)\b")
# one item of a comma-separated list: a {...}, (...) or [...] without nesting, a key: value, a word
_ITEM = r"\{[^{}]*\}|\([^()]*\)|\[[^\[\]]*\]|[^\s,:\[\](){}]+: [^\s,\[\](){}]+|[^\s,\[\](){}]+"
_REPEATED = re.compile(rf"(?<![^\s\[({{])(?P<item>{_ITEM})(?:, (?P=item))+(?=[\s,\])}}]|$)")


def normalize_message(message: str | None) -> str:
    """The message's shape: quoted strings (keys, values, names) become ``S``, numbers (step
    indices, timestamps, ids, values, signs included) ``N``, ``True``/``False``/``None`` ``V``, a run
    of equal items of a list, tuple or dict one item, whitespace collapsed. Two failures of one bug
    with other keys, values, times or counts look alike."""
    text = _QUOTED.sub("S", message or "")
    text = _NUMBERS.sub(lambda m: "" if m.group() in "-+" else "N", text)
    text = _CONSTANTS.sub("V", text)
    previous = None
    while previous != text:  # inner runs first: [[N, N], [N, N, N]] -> [[N], [N]] -> [[N]]
        previous, text = text, _REPEATED.sub(lambda m: m.group("item"), text)
    return " ".join(text.split())[:400]


def signature(prop: str, verdict: str, invariant: str | None, message: str | None) -> tuple[str, str]:
    """``(hash, text)``: the text is ``verdict | invariant | normalized message``
    (:func:`normalize_message`); the hash is the first 16 hex digits of SHA-1 over the property
    and that text. One bug, one signature: not one per key, value or step it failed at."""
    text = f"{verdict} | {invariant or '-'} | {normalize_message(message)}"
    digest = hashlib.sha1(f"{prop}\n{text}".encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return digest, text


# --------------------------------------------------------------------------- reproduce

RERUN_DIR = "streamproof-out/rerun"  # beside the default outputs (streamproof/outputs.py)


def reproduce_command(prop: str, seed: int, examples: int, step_count: int, inject: str | None,
                      inject_caught_by: str | None = None) -> str:
    """The ``streamproof`` command that reruns exactly this seed on one machine (the seed determines
    the run): ``check``, ``bugzoo``, or a one-seed ``campaign`` on ``local[1]`` when neither can
    give the budget or the variant."""
    profile_known = step_count in PROFILE_STEP_COUNTS
    profile = PROFILE_STEP_COUNTS.get(step_count)
    env = f"HYPOTHESIS_PROFILE={profile} " if profile else ""
    if profile_known and inject is None:
        return f"{env}streamproof check {shlex.quote(prop)} --seed {seed} --examples {examples}"
    if profile_known and inject is not None and inject_caught_by == prop:
        return f"{env}streamproof bugzoo {shlex.quote(inject)} --seed {seed} --examples {examples}"
    # a step count no profile has, or a variant another property catches: the seed alone, on
    # embedded Spark (one core), its results in RERUN_DIR
    parts = ["streamproof", "campaign", prop, "--seeds", f"{seed}:{seed + 1}", "--examples", str(examples),
             "--step-count", str(step_count)] + (["--inject", inject] if inject is not None else []) \
        + ["--master", "local[1]", "--out", RERUN_DIR]
    return shlex.join(parts)


def plain(value: Any) -> Any:
    """JSON-able copy (for the campaign description)."""
    return json.loads(json.dumps(value))


# ------------------------------------------------------------------------------ outcomes

def result_status(per_property: list[dict], verified: bool) -> str:
    """``held`` (every seed held), ``failed`` (a seed failed or errored), ``timeout`` (nothing
    failed, but some seeds ran out of time: not checked to the end), ``incomplete`` (seeds missing)."""
    if any(p.get("failed") or p.get("error") for p in per_property):
        return "failed"
    if not verified:
        return "incomplete"
    if any(p.get("timeout") for p in per_property):
        return "timeout"
    return "held"


def split_by_verdict(rows: list[dict]) -> tuple[list[dict], list[dict], list[dict]]:
    """Deduplicated non-held rows -> (failures: verdict ``failed``, each with its scenario;
    timeouts; errors). A timed-out seed is never a failure."""
    return ([r for r in rows if r["verdict"] == "failed"], [r for r in rows if r["verdict"] == "timeout"],
            [r for r in rows if r["verdict"] not in ("failed", "timeout")])


def is_local_path(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def local_path(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path
