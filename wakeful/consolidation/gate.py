"""The quality gate: a summary replaces raw history only if nothing load-bearing is lost.

Fail closed — each check lists what is missing, and any miss rejects the summary; the raw
span then stays in the compile and the reasons are recorded. The checks, all model-free:

``registry_ids``  every registry id of the span appears verbatim: ids promoted from it and
                  ids its text mentions (``C-7``, ``DEC-12``, ``CVE-2024-1234``).
``numerals``      every number, date and version string said in the span's turns (and in
                  the summaries a rollup merges) appears as a whole token (``2.4`` does not
                  stand in for ``2.4.1``). Raw tool output is exempt — it is what the compiler
                  collapses once resolved, and the facts it states are probed below — and so
                  are values the substrate already knows to be superseded.
``invented``      no number, date or version appears in the summary that the span (tool
                  output included) never had: a changed number is a lost one plus a new one,
                  and the new one must not go unnoticed when a citation covers the old.
``negations``     every load-bearing or factual sentence of a turn with a negation ("do
                  not", "never") reappears with a negation; and no summary sentence that
                  closely matches a span sentence flips its polarity.
``probes``        every probe question (see :mod:`wakeful.consolidation.probes`) is
                  answerable from the summary.
``size``          checked first (a summary that fails it is not read further): the
                  summary is much smaller than what it replaces — at most
                  :data:`MAX_SUMMARY_SHARE` of its span's tokens (a rollup: of the summaries
                  it merges; one of :data:`SMALL_SUMMARY_TOKENS` or fewer passes), and at
                  most ``window_tokens``, its share of the agent's window
                  (:func:`summary_token_limit`). A summary every later window carries must
                  earn its place: one as large as its span saves nothing and costs a model
                  call and a cache rewrite, and one larger than its share crowds out the
                  history it was written to make room for (an extractive summary of one
                  huge event can be most of the event).

A summary may cite a registry entry by id instead of repeating it: the texts of the entries
it cites count as part of the summary, because the registry is always in the window.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

# The most tokens a summary may take in a window: the compiler shows a larger one in part.
from wakeful.compiler.oversize import summary_token_limit as summary_token_limit
from wakeful.compiler.tokens import EstimatingCounter
from wakeful.consolidation.facts import extract_facts, parse_fact
from wakeful.consolidation.items import SpanItem
from wakeful.consolidation.probes import Probe, answers, probes_for
from wakeful.consolidation.rules import classify
from wakeful.consolidation.text import (
    contains_token,
    content_words,
    jaccard,
    negated,
    numerals,
    overlap,
    registry_ids,
    sentences,
)

MATCH_SHARE = 0.6  # share of a span sentence's words a summary sentence must restate
POLARITY_MATCH = 0.75  # Jaccard at which a summary sentence is "the same" as a span sentence
# A summary takes at most this share of the tokens it replaces. Half: each level of the
# hierarchy (turn span, session, period) at least halves what it rolls up, so all the
# summaries of any stretch of history together stay under the size of that history, and
# a summary that only trims its span (keeping every number of a long log, say) is
# refused, the span left raw for the compiler to show or leave out.
MAX_SUMMARY_SHARE = 0.5
# ...unless it is this short: a few lines restating a short span cost any window little, and
# the ratio alone would refuse the faithful restatement of two sentences.
SMALL_SUMMARY_TOKENS = 256


class GateCheck(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    passed: bool
    missing: tuple[str, ...] = ()


class GateResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    passed: bool
    checks: tuple[GateCheck, ...]
    probes: int = 0

    @property
    def reasons(self) -> list[str]:
        verb = {"invented": "new ", "size": ""}
        return [
            f"{c.name}: {verb.get(c.name, 'missing ')}{', '.join(c.missing)}"
            for c in self.checks
            if not c.passed
        ]


class GateInput(BaseModel):
    """What a summary is judged against."""

    model_config = ConfigDict(frozen=True)

    items: tuple[SpanItem, ...]
    promoted_ids: tuple[str, ...] = ()
    registry: dict[str, str] = Field(
        default_factory=dict, description="Registry id -> text, for ids a summary may cite."
    )
    superseded_values: tuple[str, ...] = Field(
        (), description="Values known to be superseded: exempt from the numerals check."
    )
    current_values: tuple[str, ...] = Field(
        (), description="The values that replaced them: a summary may state these."
    )
    window_tokens: int | None = Field(
        None,
        ge=0,
        description="The most tokens a summary may take in the agent's window (None: no "
        "window to fit; see summary_token_limit).",
    )


def estimate_tokens(text: str) -> int:
    """A tokenizer-free count, for callers without the agent's counter."""
    return EstimatingCounter().count(text)


def _load_bearing(sentence: str, item: SpanItem) -> bool:
    return (
        classify(sentence, from_user=item.from_user) is not None
        or parse_fact(sentence) is not None
        or bool(registry_ids(sentence))
    )


def _spoken(span: GateInput) -> list[SpanItem]:
    """What was said — turns, and summaries being rolled up — as opposed to tool traffic."""
    return [i for i in span.items if i.kind in ("turn", "summary")]


def check_registry_ids(span: GateInput, summary: str) -> GateCheck:
    wanted = list(span.promoted_ids)
    for item in span.items:
        wanted += registry_ids(item.text)
    missing = [i for i in dict.fromkeys(wanted) if not contains_token(summary, i)]
    return GateCheck(name="registry_ids", passed=not missing, missing=tuple(missing))


def check_numerals(span: GateInput, text: str) -> GateCheck:
    exempt = set()
    for value in span.superseded_values:
        exempt |= numerals(value) | {value}
    wanted: set[str] = set()
    for item in _spoken(span):
        wanted |= numerals(item.text)
    missing = sorted(n for n in wanted - exempt if not contains_token(text, n))
    return GateCheck(name="numerals", passed=not missing, missing=tuple(missing))


def check_invented(span: GateInput, summary: str, cited: list[str]) -> GateCheck:
    known: set[str] = set()
    for source in [*(i.text for i in span.items), *cited, *span.current_values]:
        known |= numerals(source)
    extra = sorted(n for n in numerals(summary) - known)
    return GateCheck(name="invented", passed=not extra, missing=tuple(extra))


def check_negations(span: GateInput, text: str, summary: str) -> GateCheck:
    said = [(s, content_words(s), negated(s)) for s in sentences(text)]
    missing = []
    for item in _spoken(span):
        for sentence in sentences(item.text):
            if not negated(sentence) or not _load_bearing(sentence, item):
                continue
            words = content_words(sentence)
            if not any(neg and overlap(words, w) >= MATCH_SHARE for _, w, neg in said):
                missing.append(f"{item.label}: {sentence[:80]!r}")
    span_sentences = [
        (s, content_words(s), negated(s)) for item in span.items for s in sentences(item.text)
    ]
    for s in sentences(summary):
        words, neg = content_words(s), negated(s)
        if len(words) < 3:
            continue
        close = [t for t in span_sentences if jaccard(words, t[1]) >= POLARITY_MATCH]
        if close and all(t[2] != neg for t in close):
            missing.append(f"polarity of {close[0][0][:80]!r}")
    return GateCheck(name="negations", passed=not missing, missing=tuple(missing))


def check_probes(probes: list[Probe], text: str) -> GateCheck:
    missing = [f"{p.question} ({p.answer})" for p in probes if not answers(text, p)]
    return GateCheck(name="probes", passed=not missing, missing=tuple(missing))


def check_size(span: GateInput, summary: str, count: Callable[[str], int]) -> GateCheck:
    replaced = sum(count(i.text) for i in span.items if i.kind != "evidence")
    tokens = count(summary)
    missing = []
    if tokens > max(SMALL_SUMMARY_TOKENS, replaced * MAX_SUMMARY_SHARE):
        missing.append(
            f"{tokens:,} tokens, over {MAX_SUMMARY_SHARE:.0%} of the {replaced:,} it replaces"
        )
    if span.window_tokens is not None and tokens > span.window_tokens:
        missing.append(f"{tokens:,} tokens, over its share of the window ({span.window_tokens:,})")
    return GateCheck(name="size", passed=not missing, missing=tuple(missing))


def run_gate(
    span: GateInput, summary: str, *, count: Callable[[str], int] = estimate_tokens
) -> GateResult:
    """Judge ``summary`` against its span, sizes counted with ``count`` (the agent's token
    counter); the result lists every miss.

    A summary too large to keep is not read further: the verdict is no whatever else it
    lost, and the loss checks cost the product of its and its span's sentences (minutes,
    for one as large as a 256 KiB webhook)."""
    size = check_size(span, summary, count)
    if not size.passed:
        return GateResult(passed=False, checks=(size,))
    cited = [t for i, t in sorted(span.registry.items()) if contains_token(summary, i)]
    text = "\n".join([summary, *cited])
    items = list(span.items)
    exempt = set(span.superseded_values)
    probes = [p for p in probes_for(items, extract_facts(items)) if p.answer not in exempt]
    empty = not summary.strip()
    checks = [
        GateCheck(name="non_empty", passed=not empty, missing=("text",) * empty),
        check_registry_ids(span, summary),
        check_numerals(span, text),
        check_invented(span, summary, cited),
        check_negations(span, text, summary),
        check_probes(probes, text),
        size,
    ]
    passed = all(c.passed for c in checks)
    return GateResult(passed=passed, checks=tuple(checks), probes=len(probes))
