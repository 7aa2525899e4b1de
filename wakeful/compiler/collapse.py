"""Pass 5 — collapse resolved tool output to a one-line note.

A tool result whose matter is settled (``resolved``) rarely needs its full text again, but
its call and result must stay a valid pair, so the result's text is replaced by a note
(tool name, original size, first line) and the call is left as it was. The current wake is
never collapsed. Collapsed pairs are the second class to go under pressure (DESIGN.md).
"""

from __future__ import annotations

from wakeful.compiler.framing import collapsed_note
from wakeful.compiler.work import BLOCK_OVERHEAD, CLASS_RESOLVED, CLASS_STALE, Work


def collapse(work: Work) -> None:
    rules = work.policy.eviction
    if not rules.collapse_resolved:
        return
    tail = set(work.tail)
    facts = work.facts
    for idx in work.lists["resolved"]:
        if idx in work.excluded or idx in tail:
            continue
        result = idx if facts[idx].kind_s == "tool_result" else work.partner.get(idx)
        if result is None or result in work.collapsed:
            continue
        original = facts[result]
        memo = original.note
        if memo is None or memo[0] != rules.note_chars:
            note = collapsed_note(original.block, original.tokens, rules.note_chars)
            memo = original.note = (
                rules.note_chars,
                note,
                work.counter.count(note) + BLOCK_OVERHEAD,
            )
        if memo[2] >= original.tokens:
            continue
        work.collapsed[result] = (memo[1], memo[2])
        head = work.partner.get(result, result)
        if facts[head].kind_s != "tool_call":
            head = result
        if work.class_override.get(head) != CLASS_STALE:
            work.class_override[head] = CLASS_RESOLVED
