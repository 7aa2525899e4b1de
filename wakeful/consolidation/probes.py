"""Probe questions: facts of a span with their answers, checkable without a model.

Each probe is a question, the content words of its subject, and the answer. A summary
*answers* a probe when one of its sentences holds the answer as a whole token and at least
``SUBJECT_SHARE`` of the subject's words — the same reading a person would do with the
summary in one hand and the question in the other. Probes come from:

* facts (``the staging DB port is 6543``): "What is the staging DB port?" → ``6543``; only
  the latest value per subject within the span is asked for;
* ``only <who> may <what>`` constraints: "Who may <what>?" → the first word of ``<who>``.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from wakeful.consolidation.facts import Fact, latest_facts
from wakeful.consolidation.items import SpanItem
from wakeful.consolidation.text import contains_token, content_words, overlap, sentences

SUBJECT_SHARE = 0.75  # of a 3-word subject: all 3 words; of a 4-word one: 3
_ONLY_MAY = re.compile(
    r"\bonly\s+(?:the\s+)?(?P<who>[\w@.-]+(?:\s+[\w@.-]+){0,3}?)\s+(?:may|can)\s+"
    r"(?P<what>[^.;]{3,80})",
    re.IGNORECASE,
)


class Probe(BaseModel):
    model_config = ConfigDict(frozen=True)

    question: str
    subject: tuple[str, ...]
    answer: str
    source_event: int


def probes_for(items: list[SpanItem], facts: list[Fact]) -> list[Probe]:
    """The span's probes, in order; ``facts`` are the span's extracted facts."""
    out = [
        Probe(
            question=f"What is the {f.subject}?",
            subject=tuple(sorted(content_words(f.subject))),
            answer=f.value,
            source_event=f.source_event,
        )
        for f in latest_facts(facts).values()
    ]
    for item in items:
        if not item.from_user:
            continue
        for sentence in sentences(item.text):
            m = _ONLY_MAY.search(sentence)
            if m is None:
                continue
            who = m.group("who").split()[-1]
            what = m.group("what").strip()
            out.append(
                Probe(
                    question=f"Who may {what}?",
                    subject=tuple(sorted(content_words(what))),
                    answer=who,
                    source_event=item.id,
                )
            )
    return out


def answers(text: str, probe: Probe) -> bool:
    """True when one sentence of ``text`` holds the answer and most of the subject."""
    subject = frozenset(probe.subject)
    return any(
        contains_token(s, probe.answer) and overlap(subject, content_words(s)) >= SUBJECT_SHARE
        for s in sentences(text)
    )
