"""Hybrid retrieval under a token cap: candidates for the compiler, never its decisions.

The compile activity calls :meth:`Retriever.retrieve` and hands the resulting
:class:`RetrievalHit` blocks to the compiler, which decides what enters the window. Steps:

1. **Rankings** from the vector store, each scoped to the tenant and agent: BM25 over the
   lexical sparse vectors, and the dense vectors of the collection's embedder. Which ones is
   the *mode*: chosen explicitly in :class:`RetrievalConfig`, or else by the embedder - a
   lexical embedder (:func:`~wakeful.substrate.embedders.is_lexical`, e.g. the default
   hashing one) encodes the words BM25 already sees, so its dense ranking mostly re-finds
   BM25's hits at the price of a second vector search: retrieval is then BM25 alone
   (``sparse``); a learned embedder brings synonyms and paraphrase, so both are fused
   (``hybrid``). The mode in force is recorded with every stored retrieval.
2. **Neighbour smoothing** within each ranking: a chunk's score gains a fraction of the
   scores of the turns just before and after it. In a conversation the answer often sits
   one turn away from the words that match the question.
3. **Reciprocal rank fusion** of the two rankings (``Σ w / (k + rank)``, k = 60); or, in
   sparse mode with a ``dense_share`` and a full BM25 ranking, the dense ranking's scores
   added to BM25's (each scaled onto 0..1 over its ranking), so the dense vectors reorder
   BM25's hits without BM25's scores being reduced to ranks.
4. **Time**: when the question names a month or a year, chunks from sessions on that date
   gain ``date_boost``; when it asks *when* something happened (or how long), chunks that
   say when (a date, a weekday, "yesterday", "last week", "two years ago", "for four
   years", "since 2019") gain ``when_boost``.
   Off by default, and left out of the recall bench's folds grid since none raised recall
   on the dev conversations when tried: a **second hop** (``hop_weight``:
   the names the first hits mention and the question does not, asked as a query of their
   own) and months next to a named one (``date_near``).
5. **Dedupe** by source hash, keeping the best-ranked copy.
6. **Packing** under ``token_cap``: hits in rank order, each bringing its neighbours (same
   session, seq ± 1, read back from the vector payload) when they fit. A hit that asks a
   question brings the turn after it (the reply) at once; every other neighbour waits until
   ``neighbour_lag`` more hits are packed. Measured on conversation recall, a plain neighbour
   finds a gold turn about a fifth as often per token as a hit near the top, and a reply to
   a matching question more often than a hit does: under a tight cap the next hits are worth
   more than the turns around the first ones, under a loose one every neighbour still fits.
   Neighbours are read in one batch for the hits expected to fit, and again only if packing
   runs past it. Off by default: neighbours further out (``neighbour_reach``) and only
   around strong hits (``neighbour_floor``).
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from wakeful.compiler.blocks import Block, BlockKind
from wakeful.substrate.embedders import Embedder, is_lexical
from wakeful.substrate.vectors.base import (
    FusionMode,
    SeqKey,
    VectorHit,
    VectorQuery,
    VectorStore,
    rrf_fuse,
    stable_by_score,
)

__all__ = ["Candidate", "RetrievalConfig", "RetrievalHit", "Retriever", "default_mode"]

TokenCounter = Callable[[str], int]
Key = SeqKey | str

_MONTHS = (
    "January February March April May June July August September October November December"
).split()
# Capitalised only: "may" the verb is not a month.
_MONTH_RE = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b")
_YEAR_RE = re.compile(r"\b(19\d\d|20\d\d)\b")
# A question about the time of something: "When did...", "What year...", "How long ago...".
_WHEN_RE = re.compile(
    r"^\W*when\b|\b(?:what|which) (?:year|month|week|day|date|time)\b|\bhow long ago\b",
    re.IGNORECASE,
)
# A text that places something in time. Not "may" (the verb), nor bare seasons ("fall").
_DAYS = "monday tuesday wednesday thursday friday saturday sunday"
_SPANS = "week weekend month year night morning evening summer winter spring fall autumn"
_TEMPORAL_RE = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|recently|(?:last|next|this|past) (?:"
    + "|".join((_SPANS + " " + _DAYS).split())
    + r")|19\d\d|20\d\d|"
    + "|".join(m.lower() for m in _MONTHS if m != "May")
    + "|"
    + "|".join(_DAYS.split())
    + r")\b",
    re.IGNORECASE,
)
# With ``when_durations``: a question about how long, and a text that gives a span of time
# ("for four years", "3 weeks", "since 2019", "a few months").
_HOW_LONG_RE = re.compile(r"\bhow (?:long|many (?:years|months|weeks|days))\b", re.IGNORECASE)
_COUNTS = "a an one two three four five six seven eight nine ten eleven twelve few several many"
_DURATION_RE = re.compile(
    r"\b(?:(?:\d+|"
    + "|".join(_COUNTS.split())
    + r") (?:days?|weeks?|months?|years?|decades?)|since (?:\d+|[A-Z][a-z]+))\b",
    re.IGNORECASE,
)
# A packed hit brings up to two neighbours: plan the first neighbour read for the hits whose
# own tokens fill this share of the cap (the rest is read only if packing gets there).
_NEIGHBOUR_SHARE = 0.4


class RetrievalConfig(BaseModel):
    """Knobs of the pipeline; the defaults are the ones measured best on conversation recall."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: FusionMode | None = Field(
        default=None,
        description="Rankings to use. None: chosen by the embedder (see default_mode).",
    )
    rrf_k: int = Field(default=60, gt=0)
    lexical_weight: float = Field(default=1.0, ge=0)
    dense_weight: float = Field(
        default=0.1,
        ge=0,
        description="Measured with HashingEmbedder, which mostly re-finds BM25's hits; "
        "a learned embedder (OpenAI, sentence-transformers) deserves a weight near 1.",
    )
    candidates: int = Field(default=100, gt=0, description="Least depth of each ranking.")
    tokens_per_candidate: int = Field(
        default=20, gt=0, description="Rankings go ``token_cap / this`` deep when that is more."
    )
    dense_fallback: bool = Field(
        default=True,
        description="In sparse mode, add the dense ranking when BM25 finds fewer chunks than "
        "the ranking depth, so a question in words the agent never used still finds turns.",
    )
    smoothing: float = Field(default=0.35, ge=0, description="Share of neighbours' scores.")
    neighbours: bool = Field(default=True, description="Pack the turns before and after a hit.")
    neighbour_relevance: float = Field(default=0.5, ge=0, le=1)
    neighbour_lag: int = Field(
        default=8,
        ge=0,
        description="Hits packed before a hit's neighbours join (0: right after their hit); "
        "the reply to a hit that asks a question never waits.",
    )
    neighbour_floor: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="A hit brings its neighbours only when its score is at least this share "
        "of the best candidate's (0: every packed hit does): the turns around a weak match "
        "are rarely worth their tokens.",
    )
    neighbour_reach: int = Field(
        default=1,
        ge=1,
        le=3,
        description="Turns either side of a hit that packing brings (seq ± this); each step "
        "further away is worth ``neighbour_relevance`` again of the step before.",
    )
    date_boost: float = Field(
        default=2.0,
        ge=0,
        description="Score factor (1 + this) for chunks of sessions on a month or year the "
        "question names: a question about May is first about May's sessions.",
    )
    when_boost: float = Field(
        default=0.5,
        ge=0,
        description="Score factor (1 + this) for chunks that say when something happened, "
        "when the question asks when.",
    )
    when_durations: bool = Field(
        default=True,
        description="Count a question about how long as asking when, and a span of time "
        '("for four years", "since 2019") as saying when, for ``when_boost``. On the five '
        "LoCoMo dev conversations it raises recall at 1k, 2k and 4k tokens and lowers it "
        "nowhere.",
    )
    date_near: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Share of ``date_boost`` for chunks of sessions in the month before or "
        "after a month the question names (what people say of May may be said in June).",
    )
    hop_weight: float = Field(
        default=0.0,
        ge=0,
        description="Second hop: the names the first hits mention and the question does not "
        "(capitalised words inside a sentence) are asked as a query of their own, and its "
        "hits gain this share of the best first score, times their BM25 score over the "
        "first query's best. 0: one hop.",
    )
    hop_hits: int = Field(default=5, gt=0, description="First hits whose names are read.")
    hop_names: int = Field(default=3, gt=0, description="Most frequent names asked again.")
    dense_share: float = Field(
        default=0.0,
        ge=0,
        description="In sparse mode, add this share of the dense ranking's scores to a full "
        "BM25 ranking's (each onto 0..1 over its ranking). 0: BM25's scores alone. On the "
        "five LoCoMo dev conversations 0.2 helps at 1k and 4k tokens and costs a little at "
        "2k and 8k, so it is left for the folds to choose.",
    )
    kinds: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    """A fused, deduplicated chunk before packing."""

    hit: VectorHit
    score: float


class RetrievalHit(BaseModel):
    """A chunk chosen under the cap. ``relevance`` is ``score`` over the best score (0..1]."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    chunk_id: str
    text: str
    score: float
    relevance: float
    rank: int = Field(description="1-based position in packing order.")
    tokens: int
    seq: int
    session_id: str | None
    session_date: datetime | None
    external_id: str | None
    kind: str
    source_hash: str
    neighbour_of: str | None = Field(default=None, description="The hit that pulled it in.")

    def to_block(self) -> Block:
        meta = {"rank": str(self.rank), "score": f"{self.score:.6g}", "chunk_kind": self.kind}
        if self.neighbour_of is not None:
            meta["neighbour_of"] = self.neighbour_of
        return Block(
            id=f"retrieved:{self.chunk_id}",
            kind=BlockKind.RETRIEVED,
            text=self.text,
            source=f"chunk:{self.chunk_id}",
            seq=self.seq,
            relevance=self.relevance,
            captured_at=self.session_date,
            session_id=self.session_id,
            external_id=self.external_id,
            meta=meta,
        )


def default_mode(embedder: Embedder) -> FusionMode:
    """``sparse`` for a lexical embedder (its dense ranking adds a vector search, not
    recall), ``hybrid`` for any other."""
    return FusionMode.SPARSE if is_lexical(embedder) else FusionMode.HYBRID


class Retriever:
    """Hybrid retrieval over one :class:`VectorStore` and the embedder that filled it."""

    def __init__(
        self, store: VectorStore, embedder: Embedder, config: RetrievalConfig | None = None
    ) -> None:
        self._store = store
        self._embedder = embedder
        self.config = config or RetrievalConfig()
        self.mode: FusionMode = self.config.mode or default_mode(embedder)

    def retrieve(
        self,
        query: str,
        *,
        tenant: str,
        agent: str,
        token_cap: int,
        count_tokens: TokenCounter,
    ) -> list[RetrievalHit]:
        found = self.candidates(query, tenant=tenant, agent=agent, token_cap=token_cap)
        return self.pack(
            found, tenant=tenant, agent=agent, token_cap=token_cap, count_tokens=count_tokens
        )

    def candidates(
        self, query: str, *, tenant: str, agent: str, token_cap: int = 0
    ) -> list[Candidate]:
        """Fused, date-boosted, deduplicated candidates, best first.

        The rankings go deep enough to fill ``token_cap`` even when many chunks are skipped
        as duplicates or as too long.
        """
        cfg = self.config
        depth = max(cfg.candidates, token_cap // cfg.tokens_per_candidate)
        lists: list[list[VectorHit]] = []
        weights: list[float] = []
        common = {"tenant": tenant, "agent": agent, "limit": depth, "kinds": cfg.kinds}
        if self.mode is not FusionMode.DENSE:
            sparse = VectorQuery(mode=FusionMode.SPARSE, text=query, **common)
            lists.append(self._store.query(sparse))
            weights.append(cfg.lexical_weight)
        # BM25 ran dry (the question's words are rare or absent here): even a lexical
        # embedder's vectors match parts of words and variants, so let them fill the rest.
        dry = cfg.dense_fallback and len(lists[0]) < depth if lists else False
        # A full BM25 ranking takes a share of the dense scores; a short one is all BM25
        # found, and the dense ranking fills it by rank (above) or not at all.
        full = bool(lists) and len(lists[0]) >= depth
        share = cfg.dense_share > 0 and self.mode is FusionMode.SPARSE and full
        if self.mode is not FusionMode.SPARSE or dry or share:
            (vector,) = self._embedder.embed([query])
            dense = VectorQuery(
                mode=FusionMode.DENSE, dense=tuple(vector), embedder=self._embedder.name, **common
            )
            found = self._store.query(dense)
            if share and not dry:
                lists[0] = _added(lists[0], found, cfg.dense_share)
            else:
                lists.append(found)
                weights.append(cfg.dense_weight)
        rankings = [_smooth(hits, cfg.smoothing) for hits in lists]
        known = {_key(hit): hit for hits in lists for hit in hits}
        if len(rankings) == 1:
            fused = rankings[0]
        else:
            fused = rrf_fuse([[k for k, _ in r] for r in rankings], weights, cfg.rrf_k)
        fused = fused[:depth]
        missing = [k for k, _ in fused if k not in known and isinstance(k, SeqKey)]
        if missing:
            for hit in self._store.fetch(tenant, agent, missing):
                known[_key(hit)] = hit
        resolved = [(known[k], score) for k, score in fused if k in known]
        scored = _time_boost(
            query, resolved, cfg.date_boost, cfg.when_boost, cfg.date_near, cfg.when_durations
        )
        if cfg.hop_weight > 0:
            top = lists[0][0].score if lists and lists[0] else 0.0
            scored = self._second_hop(
                query, scored, tenant=tenant, agent=agent, depth=depth, first_top=top
            )
        seen: set[str] = set()
        out = []
        for hit, score in scored:
            if hit.source_hash not in seen:
                seen.add(hit.source_hash)
                out.append(Candidate(hit, score))
        return out

    def _second_hop(
        self,
        query: str,
        scored: list[tuple[VectorHit, float]],
        *,
        tenant: str,
        agent: str,
        depth: int,
        first_top: float,
    ) -> list[tuple[VectorHit, float]]:
        """``scored`` with the hits of a query made of the names the first hits mention
        and the question does not: what a question about two things finds through the
        first (re-sorted, stable). A second hit gains ``hop_weight`` of the best first
        score times its BM25 score over the first query's best (``first_top``), so a name
        that is everywhere (low IDF) moves little; without a first BM25 score, its
        ranking's 0..1 scale."""
        cfg = self.config
        names = hop_names([h.text for h, _ in scored[: cfg.hop_hits]], query, cfg.hop_names)
        if not names or not scored:
            return scored
        second = self._store.query(
            VectorQuery(
                mode=FusionMode.SPARSE,
                text=" ".join(names),
                tenant=tenant,
                agent=agent,
                limit=depth,
                kinds=cfg.kinds,
            )
        )
        if not second:
            return scored
        scale = (lambda x: min(x / first_top, 1.0)) if first_top > 0 else _unit(second)
        gain = cfg.hop_weight * max(s for _, s in scored)
        extra = {h.chunk_id: gain * scale(h.score) for h in second}
        out = [(h, s + extra.pop(h.chunk_id, 0.0)) for h, s in scored]
        out += [(h, extra[h.chunk_id]) for h in second if h.chunk_id in extra]
        return sorted(out, key=lambda x: x[1], reverse=True)

    def pack(
        self,
        candidates: Sequence[Candidate],
        *,
        tenant: str,
        agent: str,
        token_cap: int,
        count_tokens: TokenCounter,
    ) -> list[RetrievalHit]:
        """Greedy packing in rank order; a hit that does not fit is skipped, not truncated.

        A packed hit's neighbours are queued: the reply to a hit that asks a question is due
        at once, any other neighbour once ``neighbour_lag`` more hits are packed. Due
        neighbours are taken before the next hit, in the order they were queued.
        """
        if not candidates:
            return []
        cfg = self.config
        best = candidates[0].score or 1.0
        strong = cfg.neighbour_floor * candidates[0].score
        reach = cfg.neighbour_reach
        score_of = {c.hit.chunk_id: c.score for c in candidates}
        # Smoothing put most neighbours among the candidates already; fetch only the rest.
        around = {_key(c.hit): c.hit for c in candidates if c.hit.session_id is not None}
        fetched_upto = 0
        planned = token_cap * _NEIGHBOUR_SHARE
        taken: set[str] = set()
        hashes: set[str] = set()
        used = 0
        out: list[RetrievalHit] = []
        # (due after this many packed hits, queue order, neighbour, its score, its hit)
        queue: list[tuple[int, int, VectorHit, float, str]] = []
        queued = packed_hits = 0

        def take(hit: VectorHit, score: float, neighbour_of: str | None) -> bool:
            nonlocal used
            if hit.chunk_id in taken or hit.source_hash in hashes:
                return False
            tokens = count_tokens(hit.text)
            if used + tokens > token_cap:
                return False
            used += tokens
            taken.add(hit.chunk_id)
            hashes.add(hit.source_hash)
            out.append(_hit(hit, score, min(score / best, 1.0), len(out) + 1, tokens, neighbour_of))
            return True

        def release(upto: float) -> None:
            while queue and queue[0][0] <= upto:
                _, _, near, score, parent = heapq.heappop(queue)
                take(near, score, parent)

        for i, cand in enumerate(candidates):
            if used >= token_cap:
                break
            # A candidate already packed as someone's neighbour still brings its own.
            packed = cand.hit.chunk_id in taken or take(cand.hit, cand.score, None)
            if not packed or not cfg.neighbours:
                continue
            packed_hits += 1
            if cand.score < strong:  # a weak match: its neighbours are not worth their tokens
                release(packed_hits)
                continue
            if i >= fetched_upto:
                fetched_upto = _plan(candidates, i, planned, count_tokens)
                batch = [c.hit for c in candidates[i:fetched_upto]]
                around.update(self._neighbours(tenant, agent, batch, around, reach))
            asks = _asks(cand.hit)
            for key in _adjacent(cand.hit, reach):
                near = around.get(key)
                if near is None or near.chunk_id in taken:
                    continue
                reply = asks and near.seq == cand.hit.seq + 1
                steps = abs(near.seq - cand.hit.seq)
                # A turn further away waits longer: lag per step.
                due = packed_hits if reply else packed_hits + cfg.neighbour_lag * steps
                discounted = cand.score * cfg.neighbour_relevance**steps
                score = max(score_of.get(near.chunk_id, 0.0), discounted)
                queued += 1
                heapq.heappush(queue, (due, queued, near, score, cand.hit.chunk_id))
            release(packed_hits)
        if used < token_cap:
            release(math.inf)
        return out

    def _neighbours(
        self,
        tenant: str,
        agent: str,
        hits: Sequence[VectorHit],
        known: Mapping[Key, VectorHit],
        reach: int = 1,
    ) -> dict[Key, VectorHit]:
        keys = [key for hit in hits for key in _adjacent(hit, reach) if key not in known]
        found = self._store.fetch(tenant, agent, keys) if keys else []
        return {_key(h): h for h in found}


def _plan(
    candidates: Sequence[Candidate], start: int, tokens: float, count_tokens: TokenCounter
) -> int:
    """End of the run of candidates from ``start`` whose own texts fill ``tokens``: whose
    neighbours to read in one go (at least one candidate)."""
    end, spent = start, 0.0
    while end < len(candidates) and (end == start or spent < tokens):
        spent += count_tokens(candidates[end].hit.text)
        end += 1
    return end


def _asks(hit: VectorHit) -> bool:
    """Whether a turn asks something: the turn after it is then likely its answer."""
    return hit.kind == "turn" and "?" in hit.text


def _adjacent(hit: VectorHit, reach: int = 1) -> list[SeqKey]:
    """The turns up to ``reach`` either side of ``hit`` in its session, nearest first."""
    if hit.session_id is None:
        return []
    seqs = [hit.seq + sign * step for step in range(1, reach + 1) for sign in (-1, 1)]
    return [SeqKey(hit.session_id, s) for s in seqs if s >= 0]


def _key(hit: VectorHit) -> Key:
    """Rank by position where there is one, so both rankings name a turn the same way."""
    return SeqKey(hit.session_id, hit.seq) if hit.session_id is not None else hit.chunk_id


def _smooth(hits: list[VectorHit], share: float) -> list[tuple[Key, float]]:
    """Each hit lends ``share`` of its score to the turns before and after it.

    Turns that did not match at all still enter the ranking when a neighbour scores well
    (the answer right after the question that matched), and are fetched only if they rank.
    """
    scores: dict[Key, float] = {_key(h): h.score for h in hits}
    if share:
        for h in hits:
            if h.session_id is None:
                continue
            for seq in (h.seq - 1, h.seq + 1):
                if seq >= 0:
                    key = SeqKey(h.session_id, seq)
                    scores[key] = scores.get(key, 0.0) + share * h.score
    return stable_by_score(scores)


def _unit(hits: Sequence[VectorHit]) -> Callable[[float], float]:
    """Scores of a ranking mapped onto 0..1, its worst to its best, so that rankings of two
    kinds of score (BM25's, and cosines crowding a narrow band) can be added."""
    if not hits:
        return lambda s: 0.0
    hi, lo = hits[0].score, hits[-1].score
    span = hi - lo
    return (lambda s: (s - lo) / span) if span > 0 else (lambda s: 1.0)


def _added(first: list[VectorHit], second: list[VectorHit], share: float) -> list[VectorHit]:
    """BM25's hits (``first``) with ``share`` of the dense ranking's scores added, each
    ranking scaled by :func:`_unit`; best first (ties keep BM25's order, then the dense
    one's), as deep as BM25's ranking; a hit only the dense ranking found enters on its
    share alone. Both rankings are full (as deep as asked), so the scale spans the same
    depth on both sides."""
    lexical, dense = _unit(first), _unit(second)
    score = {h.chunk_id: lexical(h.score) for h in first}
    hits = {h.chunk_id: h for h in first}
    for h in second:
        score[h.chunk_id] = score.get(h.chunk_id, 0.0) + share * dense(h.score)
        hits.setdefault(h.chunk_id, h)
    order = sorted(score, key=lambda c: -score[c])
    return [hits[c].model_copy(update={"score": score[c]}) for c in order][: len(first)]


def _time_boost(
    query: str,
    scored: list[tuple[VectorHit, float]],
    date_boost: float,
    when_boost: float,
    date_near: float = 0.0,
    durations: bool = False,
) -> list[tuple[VectorHit, float]]:
    """Boost chunks of the sessions the question dates (``date_near`` of the boost for the
    months either side of a named one), and chunks that say when if the question asks
    when (with ``durations``, also how long, and spans of time as saying when); re-sorted
    (stable: ties keep rank order)."""
    months = {_MONTHS.index(m) + 1 for m in _MONTH_RE.findall(query)} if date_boost else set()
    years = {int(y) for y in _YEAR_RE.findall(query)} if date_boost else set()
    dated = bool(months or years)
    asks = _WHEN_RE.search(query) is not None
    long = durations and _HOW_LONG_RE.search(query) is not None
    when = bool(when_boost) and (asks or long)
    if not (dated or when):
        return scored

    def factor(hit: VectorHit) -> float:
        f = 1.0
        date = hit.session_date
        if dated and date is not None and (not years or date.year in years):
            if not months or date.month in months:
                f *= 1.0 + date_boost
            elif date_near and _next_to(date.month, months):
                f *= 1.0 + date_boost * date_near
        if when and (
            _TEMPORAL_RE.search(hit.text) is not None
            or (durations and _DURATION_RE.search(hit.text) is not None)
        ):
            f *= 1.0 + when_boost
        return f

    boosted = [(h, s * factor(h)) for h, s in scored]
    return sorted(boosted, key=lambda x: x[1], reverse=True)


def _next_to(month: int, months: set[int]) -> bool:
    """Whether ``month`` is the month before or after one of ``months`` (December and
    January included)."""
    return any((month - m) % 12 in (1, 11) for m in months)


def hop_names(texts: Sequence[str], question: str, limit: int) -> list[str]:
    """The ``limit`` names the ``texts`` mention most (ties: first met) that the question
    does not: capitalised words inside a sentence (not the first of a sentence or of what
    follows a colon, such as a speaker's label), a possessive "'s" dropped."""
    asked = {w.lower() for w in re.findall(r"\w+", question)}
    counts: dict[str, int] = {}
    for text in texts:
        for sentence in re.finditer(r"[^.!?:\n]+", text):
            words = re.findall(r"[A-Za-z][\w']*", sentence.group())
            for word in words[1:]:
                name = word.removesuffix("'s")
                if len(name) > 2 and name.isalpha() and name[0].isupper() and name[1:].islower():
                    if name.lower() not in asked:
                        counts[name] = counts.get(name, 0) + 1
    ranked = sorted(counts, key=lambda n: -counts[n])  # stable: ties keep first-met order
    return ranked[:limit]


def _hit(
    hit: VectorHit, score: float, relevance: float, rank: int, tokens: int, neighbour_of: str | None
) -> RetrievalHit:
    """The packed hit: the vector hit's fields (``extra="forbid"`` keeps the two models in
    step), its score after fusion and boosts, and where packing placed it."""
    return RetrievalHit(
        **hit.model_dump(exclude={"score"}),
        score=score,
        relevance=relevance,
        rank=rank,
        tokens=tokens,
        neighbour_of=neighbour_of,
    )
