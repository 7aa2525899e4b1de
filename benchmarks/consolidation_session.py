"""A long synthetic operations session with planted load-bearing content, for the
consolidation benchmark (and its tests).

Shape: ``turns`` events (500 by default) alternating user and assistant over ``days`` days
of one session. Mixed in, at seeded positions:

* 20 constraints the user gives — 18 at first, then two replacements that revoke an earlier
  one by id ("C-21: … this replaces C-7"), so 18 are live at the end;
* 50 facts ("FYI, the staging database port is 5433.") stated in the first 80 % of the
  session, 12 of them corrected later ("Correction: the … is now 6543.") but before the
  last 10 %;
* small talk in between — requests and progress reports, some with metrics (numbers the
  gate will insist on keeping), most without;
* tool traffic, as an operations agent has: about a third of the replies first query logs or
  a dashboard (a call and a 15-30 line result, marked resolved once the reply used it).

Everything is derived from ``seed``; nothing reads the clock (``start`` is an argument).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from wakeful.compiler.canonical import canonical_json
from wakeful.substrate.records import EventIn

SESSION = "ops:s0001"
CONSTRAINTS = (
    "C-1: You must never deploy the payments service on a Friday.",
    "C-2: Only the release manager may merge to the main branch.",
    "C-3: Do not run a database migration without a backup taken in the last 24 hours.",
    "C-4: Every pull request requires two approvals before merge.",
    "C-5: Never print customer email addresses in logs or chat.",
    "C-6: Agents are not allowed to rotate production credentials.",
    "C-7: Only on-call engineers may restart the queue workers.",
    "C-8: You must keep checkout availability above 99.5% during business hours.",
    "C-9: Do not touch the legacy-billing repository; it is frozen.",
    "C-10: Never disable the fraud checks, even during an incident.",
    "C-11: Only the data team may run backfills on the warehouse.",
    "C-12: You must page the database owner before failing over a primary.",
    "C-13: Do not scale the search cluster below 3 nodes.",
    "C-14: Every schema change requires a review from the platform team.",
    "C-15: You must tag every release with a semantic version such as v4.2.0.",
    "C-16: Never share dashboards outside the company workspace.",
    "C-17: Do not restart the ledger service during month-end close.",
    "C-18: Only the security team may change firewall rules.",
)
REPLACEMENTS = (
    (
        "C-7",
        "C-21: Only engineers on the incident rota may restart the queue workers; "
        "this replaces C-7.",
    ),
    (
        "C-12",
        "C-22: You must page the database owner and the incident lead before failing over "
        "a primary; this replaces C-12.",
    ),
)
_ENVS = ("staging", "production", "canary", "sandbox", "perf")
_PARTS = (
    ("database", "port", lambda r: str(r.randint(4000, 9999))),
    ("cache", "host", lambda r: f"cache-{r.randint(1, 40)}.internal"),
    ("queue", "version", lambda r: f"v{r.randint(1, 9)}.{r.randint(0, 20)}.{r.randint(0, 9)}"),
    ("gateway", "timeout", lambda r: f"{r.randint(2, 90)}s"),
    (
        "scheduler",
        "owner",
        lambda r: "@" + r.choice(("mira", "jonas", "ade", "lena", "kofi", "ines", "tariq")),
    ),
    ("search", "node count", lambda r: str(r.randint(3, 24))),
    (
        "ledger",
        "region",
        lambda r: r.choice(("eu-west-1", "us-east-2", "ap-south-1", "eu-central-1")),
    ),
    (
        "billing",
        "release",
        lambda r: f"v{r.randint(1, 5)}.{r.randint(0, 30)}.{r.randint(0, 9)}-rc{r.randint(1, 4)}",
    ),
    ("metrics", "retention", lambda r: f"{r.randint(7, 400)}d"),
    ("auth", "token ttl", lambda r: f"{r.randint(5, 120)}m"),
)
_ASKS = (
    "Can you look at the checkout latency graphs again and tell me what you see?",
    "Please keep watching the payment queue while I am in the planning meeting.",
    "What is your read on the overnight error spikes in the gateway?",
    "Could you summarise what changed in the scheduler since this morning?",
    "Please check whether the search cluster looks healthy after the reindex.",
    "Take a look at the billing dashboard and flag anything odd.",
    "How is the cache hit rate trending compared with yesterday?",
    "Please review the deploy log for the auth service and report back.",
)
_REPLIES = (
    "I went through the dashboards and the pattern looks much like yesterday. The queue drains "
    "steadily after the morning peak and the workers keep up. I will keep an eye on it and "
    "report anything unusual.",
    "The graphs look calm at the moment. Latency rose briefly during the batch window and "
    "settled again shortly after. Nothing needs action right now, I will check again later.",
    "I compared the current traffic with the usual weekday shape and it matches closely. The "
    "error rate is flat and the retries stay low. I will continue monitoring.",
    "Everything I can see points to normal behaviour. The alerts that fired earlier have "
    "cleared and the on-call channel is quiet. I will follow up if that changes.",
)
_METRIC_REPLIES = (
    "The p99 latency of checkout settled at {a} ms after the spike, with {b} retries in the "
    "last hour.",
    "The payment queue peaked at {a} messages and drained within {b} minutes.",
    "Cache hit rate is {c}.{d}% right now, close to the weekly average.",
)


_SERVICES = ("checkout-api", "payments", "queue-worker", "search", "ledger", "auth", "gateway")
_LEVELS = ("INFO", "INFO", "INFO", "WARN", "DEBUG")
_TOOLS = ("query_logs", "read_dashboard")


def _tool_output(rnd: random.Random, at: datetime, tool: str, service: str) -> str:
    lines = []
    for n in range(rnd.randint(15, 30)):
        stamp = (at - timedelta(seconds=37 * (30 - n))).strftime("%Y-%m-%dT%H:%M:%SZ")
        if tool == "query_logs":
            lines.append(
                f"{stamp} {rnd.choice(_LEVELS)} {service} request_id={rnd.getrandbits(32):08x}"
                f" route=/v{rnd.randint(1, 3)}/{rnd.choice(('orders', 'charges', 'items'))}"
                f" status={rnd.choice((200, 200, 200, 201, 204, 429, 503))}"
                f" latency_ms={rnd.randint(8, 900)}"
            )
        else:
            lines.append(
                f"{stamp} {service} rps={rnd.randint(50, 4000)} p50_ms={rnd.randint(5, 80)}"
                f" p99_ms={rnd.randint(90, 1500)} errors={rnd.randint(0, 40)}"
                f" saturation={rnd.randint(10, 95)}%"
            )
    return "\n".join(lines)


@dataclass(frozen=True)
class PlantedFact:
    key: str
    subject: str
    value: str
    statement: str
    turn: int
    new_value: str | None = None
    correction_turn: int | None = None


@dataclass
class Session:
    events: list[EventIn]
    day_of: list[int]
    constraints: list[tuple[str, str]] = field(default_factory=list)  # (id, text) planted
    revoked: list[str] = field(default_factory=list)
    facts: list[PlantedFact] = field(default_factory=list)

    @property
    def live_constraints(self) -> list[tuple[str, str]]:
        return [(i, t) for i, t in self.constraints if i not in self.revoked]


def _facts(rnd: random.Random, n: int, turns: int) -> list[PlantedFact]:
    subjects = [(env, part, attr, gen) for env in _ENVS for part, attr, gen in _PARTS]
    rnd.shuffle(subjects)
    positions = sorted(rnd.sample(range(2, int(turns * 0.8), 2), n))
    corrected = set(rnd.sample(range(n), 12))
    out = []
    for i, ((env, part, attr, gen), turn) in enumerate(zip(subjects[:n], positions, strict=True)):
        subject = f"{env} {part} {attr}"
        value = gen(rnd)
        new_value = correction = None
        if i in corrected:
            while new_value is None or new_value == value:
                new_value = gen(rnd)
            correction = rnd.randrange(turn + 6, int(turns * 0.9), 2)
        out.append(
            PlantedFact(
                key=subject,
                subject=subject,
                value=value,
                statement=f"FYI, the {subject} is {value}.",
                turn=turn,
                new_value=new_value,
                correction_turn=correction,
            )
        )
    return out


def generate_session(
    start: datetime, *, turns: int = 500, days: int = 3, seed: int = 11
) -> Session:
    """The session's events, each stamped with its day (0-based) for round-by-round loading."""
    rnd = random.Random(seed)
    facts = _facts(rnd, 50, turns)
    user_slots = list(range(0, int(turns * 0.85), 2))
    taken = {f.turn for f in facts} | {f.correction_turn for f in facts if f.correction_turn}
    free = [t for t in user_slots if t not in taken]
    constraint_at = sorted(rnd.sample([t for t in free if t < turns * 0.5], len(CONSTRAINTS)))
    replacement_at = sorted(rnd.sample([t for t in free if turns * 0.55 < t < turns * 0.85], 2))
    says: dict[int, list[str]] = {}
    session = Session(events=[], day_of=[])
    for text, turn in zip(CONSTRAINTS, constraint_at, strict=True):
        says.setdefault(turn, []).append(text)
        session.constraints.append((text.split(":")[0], text))
    for (old, text), turn in zip(REPLACEMENTS, replacement_at, strict=True):
        says.setdefault(turn, []).append(text)
        session.constraints.append((text.split(":")[0], text))
        session.revoked.append(old)
    for f in facts:
        says.setdefault(f.turn, []).append(f.statement)
        if f.correction_turn is not None:
            says.setdefault(f.correction_turn, []).append(
                f"Correction: the {f.subject} is now {f.new_value}."
            )
    session.facts = facts
    step = timedelta(days=days) / turns

    def add(event: EventIn) -> None:
        session.events.append(event)
        session.day_of.append(int((event.event_time - start) / timedelta(days=1)))

    for t in range(turns):
        user = t % 2 == 0
        at = start + t * step
        key = f"bench:{seed}:{t}"
        if not user and rnd.random() < 0.35:
            tool, service = rnd.choice(_TOOLS), rnd.choice(_SERVICES)
            args = {"service": service, "minutes": rnd.choice((15, 30, 60))}
            common = {"session_id": SESSION, "tool_call_id": f"call-{seed}-{t}", "tool_name": tool}
            add(
                EventIn(
                    step_key=f"{key}:call",
                    kind="tool_call",
                    role="assistant",
                    text=canonical_json(args),
                    tool_input=args,
                    event_time=at - step / 2,
                    **common,
                )
            )
            add(
                EventIn(
                    step_key=f"{key}:result",
                    kind="tool_result",
                    role="user",
                    text=_tool_output(rnd, at, tool, service),
                    resolved=True,
                    event_time=at - step / 3,
                    **common,
                )
            )
        if user:
            text = " ".join([*says.get(t, []), rnd.choice(_ASKS)])
        elif rnd.random() < 0.15:
            template = rnd.choice(_METRIC_REPLIES)
            text = template.format(
                a=rnd.randint(11, 950),
                b=rnd.randint(1, 59),
                c=rnd.randint(60, 99),
                d=rnd.randint(0, 9),
            )
        else:
            text = rnd.choice(_REPLIES)
        add(
            EventIn(
                step_key=key,
                kind="turn",
                role="user" if user else "assistant",
                text=text,
                session_id=SESSION,
                event_time=at,
            )
        )
    return session
