"""Agent sessions of many shapes, built from real conversation text, for the cache bench.

Each shape is an :class:`~benchmarks.cache_session.AgentSession`, so the timeline and
every strategy replay it unchanged. A LoCoMo conversation (:mod:`benchmarks.cache_locomo`)
becomes an agent's session: speaker A's consecutive turns are one ask, speaker B's reply is
the model's scripted text. Around the dialogue:

* **tools** — some wakes make several calls whose tools return sizeable real text
  (600–6,000 tokens): ``read_notes`` quotes another day of the same conversation,
  ``search_journal`` a stretch of another conversation of the split, ``save_note`` a line;
* **time** — seconds to a few minutes between the wakes of a session; LoCoMo's dated
  sessions are days apart, so a new agent session opens after an idle gap past an hour
  (the worker's session idle limit), and the ``idle_gaps`` shape waits 6–50 minutes,
  past the 5-minute cache TTL and under the hour, between many wakes;
* **questions** — LoCoMo's questions whose evidence was said in an earlier session become
  asks (the reply is the dataset's answer), so that history or retrieval must reach back;
* **load-bearing facts** — 3–5 standing instructions (:data:`~benchmarks.cache_chat_text.RULES`)
  planted in the first wakes as ``DECISION`` lines, stated by the user in an ask or by the
  agent in a reply, as the synthetic session plants them;
* **no documents** — ``Wake.docs`` is empty: finding earlier sessions is the Wakeful
  strategy's own retrieval; the baselines hold the transcript instead.

``synthetic`` is :func:`~benchmarks.cache_session.generate_session` unchanged. Every
shape is deterministic for a seed; sizes keep the whole bench to a few minutes.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from benchmarks.cache_chat_text import RULES, chat_instructions, chat_tools
from benchmarks.cache_locomo import Conversation, Episode, Exchange, Line, Question
from benchmarks.cache_session import (
    MODEL,
    AgentSession,
    Decision,
    ToolUse,
    Turn,
    Wake,
    generate_session,
)
from wakeful.errors import UserError
from wakeful.testing.simulator.tokens import count_tokens

__all__ = [
    "SESSION_IDLE_S",
    "SHAPES",
    "TOOL_TOKENS",
    "Shape",
    "build_shape",
    "build_shapes",
]

SESSION_IDLE_S = 3600.0  # the worker opens a new session after an idle gap this long
TOOL_TOKENS = (600, 6000)  # sizes of the tools' sizeable results
SHAPES = (
    "short_chat",
    "long_session",
    "handoffs",
    "tool_heavy",
    "retrieval_heavy",
    "idle_gaps",
    "synthetic",
)
_PLANT_AT = (1, 2, 4, 6, 9)  # wake numbers that state the 1st..5th fact


@dataclass(frozen=True)
class Shape:
    """A named session and what it was built from."""

    name: str
    session: AgentSession
    source: str  # conversation id, or "synthetic"
    questions: int = 0  # asks that are questions about an earlier session
    # wake number of each question -> the text of the turns that answer it
    evidence: dict[int, tuple[str, ...]] = field(default_factory=dict)


def _fmt(line: Line) -> str:
    return f"[{line.dia_id}] {line.speaker}: {line.text}"


@dataclass
class _Builder:
    """Appends wakes to a session under construction, keeping time, ids and facts."""

    conv: Conversation
    other: Conversation  # the journal search_journal quotes
    rnd: random.Random
    rules: list[tuple[str, bool]]  # facts still to plant, in order
    seed: int
    wakes: list[Wake] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    said: dict[int, set[str]] = field(default_factory=dict)  # session -> dia ids replayed
    questions: int = 0
    evidence: dict[int, tuple[str, ...]] = field(default_factory=dict)
    now: float = 0.0
    index: int = 0
    session: int = 1
    tool_ids: int = 0

    # --- time ---------------------------------------------------------------------------

    def pause(self, seconds: float) -> None:
        """Idle time before the next wake; past the idle limit it opens a new session."""
        if not self.wakes:
            return
        self.now += seconds
        if seconds > SESSION_IDLE_S:
            self.session += 1

    def short_pause(self) -> None:
        self.pause(self.rnd.uniform(20, 240))

    def new_session(self, before: Episode, after: Episode) -> None:
        """The real days between two LoCoMo sessions, at least 1.5 h."""
        self.pause(max(1.5 * SESSION_IDLE_S, (after.date - before.date).total_seconds()))

    # --- tools --------------------------------------------------------------------------

    def _size(self, sizes: tuple[int, int]) -> int:
        lo, hi = sizes
        return int(math.exp(self.rnd.uniform(math.log(lo), math.log(hi))))

    @staticmethod
    def _quote(lines: Iterator[str], tokens: int, head: str) -> str:
        out, size = [head], count_tokens(head)
        for line in lines:
            out.append(line)
            size += count_tokens(line) + 1
            if size >= tokens:
                break
        return "\n".join(out)

    def _notes(self, conv: Conversation, episode: int) -> Iterator[str]:
        """That day's lines, then the following days' (wrapping), with day headers."""
        order = [e for e in conv.episodes if e.number >= episode]
        order += [e for e in conv.episodes if e.number < episode]
        for _ in range(2):
            for ep in order:
                yield f"--- {ep.date_text} ---"
                yield from (_fmt(line) for line in ep.lines)

    def _use(self, tool: str, episode: Episode, sizes: tuple[int, int]) -> ToolUse:
        self.tool_ids += 1
        ident = f"toolu_{self.tool_ids:04d}"
        seconds = self.rnd.uniform(1, 8)
        if tool == "read_notes":
            earlier = [e for e in self.conv.episodes if e.number < episode.number]
            pool = earlier or [e for e in self.conv.episodes if e.number != episode.number]
            source = self.rnd.choice(pool)
            text = self._quote(
                self._notes(self.conv, source.number),
                self._size(sizes),
                f"Notes with {self.conv.user}, from {source.date_text}:",
            )
            return ToolUse(ident, tool, {"date": source.date_text}, text, seconds=seconds)
        if tool == "search_journal":
            words = [w for w in self.rnd.choice(episode.lines).text.split() if len(w) > 4]
            query = " ".join(self.rnd.sample(words, min(3, len(words)))) or "weekend plans"
            start = self.rnd.choice(self.other.episodes)
            text = self._quote(
                self._notes(self.other, start.number),
                self._size(sizes),
                f"Journal matches for {query!r} (conversations with {self.other.user}):",
            )
            return ToolUse(ident, tool, {"query": query}, text, seconds=seconds)
        note = f"{self.conv.user} mentioned plans on {episode.date_text}."
        return ToolUse(ident, "save_note", {"text": note}, f"Saved note {ident[-4:]}.", seconds=1)

    def _tool_name(self) -> str:
        r = self.rnd.random()
        return "read_notes" if r < 0.55 else "search_journal" if r < 0.9 else "save_note"

    def steps(self, calls: int, episode: Episode, sizes: tuple[int, int]) -> list[list[ToolUse]]:
        """Tool uses of the first ``calls - 1`` calls of a wake (one, sometimes two)."""
        return [
            [self._use(self._tool_name(), episode, sizes) for _ in range(self._uses())]
            for _ in range(calls - 1)
        ]

    def _uses(self) -> int:
        return 2 if self.rnd.random() < 0.2 else 1

    # --- wakes --------------------------------------------------------------------------

    def _plant(self) -> tuple[str, bool] | None:
        n = len(self.wakes) + 1
        if self.rules and n in _PLANT_AT:
            text, by_user = self.rules.pop(0)
            return text.format(user=self.conv.user), by_user
        return None

    def wake(
        self,
        ask: str,
        reply: str,
        steps: Sequence[Sequence[ToolUse]] = (),
        *,
        said: Sequence[Line] = (),
        consolidate: bool = False,
    ) -> None:
        """One wake: the ask, then a call per tool step, then the reply."""
        number = len(self.wakes) + 1
        planted = self._plant()
        user_decision: Decision | None = None
        agent_decision: Decision | None = None
        if planted is not None:
            ident = f"D-{len(self.decisions) + 1}"
            stated = Decision(ident, planted[0], self.index, planted[1])
            self.decisions.append(stated)
            if planted[1]:
                user_decision, ask = stated, f"{ask}\nDECISION {ident}: {planted[0]}"
            else:
                agent_decision = stated
        turns: list[Turn] = []
        at = self.now + 0.5
        texts = [self._step_text(uses) for uses in steps] + [reply]
        for k, text in enumerate(texts):
            uses = tuple(steps[k]) if k < len(steps) else ()
            decision = agent_decision if k == 0 else None
            if decision is not None:
                text = f"{text}\nDECISION {decision.id}: {decision.text}"
            latency = 3 + len(text) / 400 + self.rnd.uniform(0, 4)
            turns.append(Turn(self.index, number, at, latency, text, uses, decision))
            at += latency + max((u.seconds for u in uses), default=0.0) + 0.3
            self.index += 1
        self.wakes.append(
            Wake(
                number,
                self.session,
                self.now,
                ask,
                (),
                tuple(turns),
                user_decision,
                consolidate,
            )
        )
        self.said.setdefault(self.session, set()).update(line.dia_id for line in said)
        self.now = self.wakes[-1].ended_at

    def _step_text(self, uses: Sequence[ToolUse]) -> str:
        if len(uses) > 1:
            return "Let me check a couple of things in my notes first."
        use = uses[0]
        if use.name == "read_notes":
            return f"Let me read my notes from {use.input['date']} before I answer."
        if use.name == "search_journal":
            return f"I'll search my journal for {use.input['query']!r} first."
        return "Let me save that so I don't forget."

    def exchange(
        self, ex: Exchange, episode: Episode, calls: int = 1, sizes: tuple[int, int] = TOOL_TOKENS
    ) -> None:
        self.wake(
            "\n".join(line.text for line in ex.ask),
            "\n".join(line.text for line in ex.reply),
            self.steps(calls, episode, sizes),
            said=ex.ask + ex.reply,
        )

    def question(self, q: Question, *, tool: bool) -> None:
        """A question about an earlier session; with ``tool``, the agent reads its notes."""
        source = next(
            e for e in self.conv.episodes if e.number == self.conv.episode_of(q.evidence[0])
        )
        prefix = self.rnd.choice(("", "Quick question: ", "Remind me, ", "Do you remember? "))
        steps: list[list[ToolUse]] = []
        if tool:
            self.tool_ids += 1
            ident = f"toolu_{self.tool_ids:04d}"
            text = self._quote(
                self._notes(self.conv, source.number),
                self._size((600, 2000)),
                f"Notes with {self.conv.user}, from {source.date_text}:",
            )
            steps.append(
                [ToolUse(ident, "read_notes", {"date": source.date_text}, text, seconds=2.0)]
            )
        reply = f"From what you told me on {source.date_text}: {q.answer}."
        lines = {line.dia_id: line.text for ep in self.conv.episodes for line in ep.lines}
        self.evidence[len(self.wakes) + 1] = tuple(lines[e] for e in q.evidence if e in lines)
        self.wake(prefix + q.text, reply, steps)
        self.questions += 1

    def earlier_questions(self, used: set[str]) -> list[Question]:
        """Unused questions whose every evidence turn was replayed in an earlier session."""
        before = set().union(*(ids for s, ids in self.said.items() if s < self.session))
        return [
            q
            for q in self.conv.questions
            if q.text not in used and before and set(q.evidence) <= before
        ]

    def session_of(self, shape: str) -> Shape:
        ordered = tuple(sorted(self.decisions, key=lambda d: d.id))
        session = AgentSession(
            MODEL,
            chat_instructions(self.conv.user, self.conv.agent),
            chat_tools(),
            tuple(self.wakes),
            ordered,
            self.seed,
        )
        return Shape(shape, session, self.conv.sample_id, self.questions, dict(self.evidence))


def _exchanges(conv: Conversation, first: int) -> Iterator[tuple[Episode, Exchange]]:
    """Every exchange from episode index ``first`` on, wrapping around, forever."""
    eps = conv.episodes
    n = first
    while True:
        ep = eps[n % len(eps)]
        for ex in ep.exchanges:
            yield ep, ex
        n += 1


def _chat_run(b: _Builder, calls: int, tool_share: float, gap: Callable[[], float]) -> None:
    """One session of consecutive exchanges, about ``calls`` model calls in all."""
    source = _exchanges(b.conv, b.rnd.randrange(len(b.conv.episodes)))
    while b.index < calls:
        episode, ex = next(source)
        b.pause(gap())
        n = b.rnd.choice((2, 2, 3, 4)) if b.rnd.random() < tool_share else 1
        b.exchange(ex, episode, max(1, min(n, calls - b.index)))


def _short_chat(b: _Builder) -> None:
    _chat_run(b, b.rnd.randint(10, 15), 0.0, lambda: b.rnd.uniform(20, 240))


def _long_session(b: _Builder) -> None:
    _chat_run(b, 120, 0.25, lambda: b.rnd.uniform(20, 240))
    # Consolidate once, at the first wake boundary past the middle (as the synthetic does).
    half = next(n for n, w in enumerate(b.wakes) if w.turns[-1].index + 1 >= 60)
    w = b.wakes[half]
    b.wakes[half] = Wake(w.number, w.session, w.at, w.ask, w.docs, w.turns, w.decision, True)


def _idle_gaps(b: _Builder) -> None:
    def gap() -> float:
        if b.rnd.random() < 0.45:
            return b.rnd.uniform(6 * 60, 50 * 60)
        return b.rnd.uniform(20, 240)

    _chat_run(b, 40, 0.2, gap)


def _tool_heavy(b: _Builder) -> None:
    source = _exchanges(b.conv, b.rnd.randrange(len(b.conv.episodes)))
    for n in range(12):
        episode, ex = next(source)
        b.short_pause()
        b.exchange(ex, episode, 1 if n in (0, 7) else b.rnd.randint(3, 6))


def _sessions(
    b: _Builder, episodes: Sequence[Episode], per_session: Callable[[int, Episode], None]
) -> None:
    for k, episode in enumerate(episodes):
        if k:
            b.new_session(episodes[k - 1], episode)
        per_session(k, episode)


def _handoffs(b: _Builder) -> None:
    used: set[str] = set()

    def session(k: int, episode: Episode) -> None:
        exchanges = list(episode.exchanges[:10])
        asks = b.rnd.randint(2, 3) if k else 0
        slots = set(b.rnd.sample(range(len(exchanges)), min(asks, len(exchanges))))
        for n, ex in enumerate(exchanges):
            if n:
                b.short_pause()
            if n in slots and (pool := b.earlier_questions(used)):
                q = b.rnd.choice(pool)
                used.add(q.text)
                b.question(q, tool=False)
                b.short_pause()
            calls = b.rnd.choice((2, 3)) if b.rnd.random() < 0.2 else 1
            b.exchange(ex, episode, calls)

    _sessions(b, b.conv.episodes[:6], session)


def _retrieval_heavy(b: _Builder) -> None:
    """Sessions that replay the exchanges holding the evidence of LoCoMo's questions, each
    opening with questions about the sessions before it; a last session only asks."""
    episodes = b.conv.episodes[:5]
    said = {line.dia_id for ep in episodes for ex in ep.exchanges for line in ex.ask + ex.reply}
    asked = [q for q in b.conv.questions if set(q.evidence) <= said]
    needed = {e for q in asked for e in q.evidence}
    used: set[str] = set()

    def questions(limit: int) -> None:
        pool = b.earlier_questions(used)
        for q in b.rnd.sample(pool, min(limit, len(pool))):
            used.add(q.text)
            b.short_pause()
            b.question(q, tool=b.rnd.random() < 0.3)

    for k, episode in enumerate(episodes):
        if k:
            b.new_session(episodes[k - 1], episode)
            questions(8)
        for ex in episode.exchanges:
            if needed & {line.dia_id for line in ex.ask + ex.reply}:
                b.short_pause()
                b.exchange(ex, episode)
    b.pause(1.5 * SESSION_IDLE_S)
    questions(len(asked))


_BUILDERS: dict[str, tuple[Callable[[_Builder], None], int]] = {
    # shape -> (builder, load-bearing facts planted)
    "short_chat": (_short_chat, 3),
    "long_session": (_long_session, 5),
    "handoffs": (_handoffs, 4),
    "tool_heavy": (_tool_heavy, 4),
    "retrieval_heavy": (_retrieval_heavy, 4),
    "idle_gaps": (_idle_gaps, 4),
}


def _rules(rnd: random.Random, n: int) -> list[tuple[str, bool]]:
    """``n`` standing instructions, alternately by the user and by the agent."""
    users = rnd.sample([r for r in RULES if r[1]], (n + 1) // 2)
    agents = rnd.sample([r for r in RULES if not r[1]], n // 2)
    return [(users if k % 2 == 0 else agents)[k // 2] for k in range(n)]


def build_shape(
    name: str, conversations: Sequence[Conversation], seed: int, *, synthetic_turns: int = 200
) -> Shape:
    """Shape ``name`` built from ``conversations`` (one split), deterministic for a seed."""
    if name == "synthetic":
        return Shape(name, generate_session(synthetic_turns, seed), "synthetic")
    if name not in _BUILDERS:
        raise UserError(f"unknown shape {name!r}: use one of {', '.join(SHAPES)}")
    if not conversations:
        raise UserError("no conversations to build the shape from: pass a LoCoMo split")
    pick = (zlib.crc32(name.encode()) + seed) % len(conversations)
    rnd = random.Random(f"{seed}:{name}")
    build, facts = _BUILDERS[name]
    b = _Builder(
        conversations[pick],
        conversations[(pick + 1) % len(conversations)],
        rnd,
        _rules(rnd, facts),
        seed,
    )
    build(b)
    return b.session_of(name)


def build_shapes(
    conversations: Sequence[Conversation],
    seed: int,
    names: Sequence[str] = SHAPES,
    *,
    synthetic_turns: int = 200,
) -> dict[str, Shape]:
    return {n: build_shape(n, conversations, seed, synthetic_turns=synthetic_turns) for n in names}
