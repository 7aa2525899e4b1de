"""Per-user memory: the user a wake is for, and what a wake of each scope may read.

A wake may name the user it serves (``Client.wake(..., user=...)``, ``wakeful trigger
--user``, a webhook body's ``user``). Everything that wake writes — its turns, tool traffic,
recorded evidence, handoff notes, the decisions the model records — is stored with that user.
A wake reads by its scope:

* a wake **for user U** reads the agent-wide knowledge (rows stored without a user) and U's
  own, never another user's;
* a wake **without a user** is the agent's own and reads the agent-wide knowledge only. An
  agent whose wakes never name a user has nothing else, so it reads exactly what it did
  before users existed.

Consolidation (summaries, memories captured from events, decisions promoted from a session)
works on agent-wide events only: what it writes is agent-wide, and so it never carries one
user's words into a window of another.
"""

from __future__ import annotations

import re

from wakeful.errors import UserError

__all__ = [
    "MAX_USER_CHARS",
    "USER_PATTERN",
    "USER_RULE",
    "check_user",
    "scope_label",
    "user_problem",
    "visible_to",
]

# Long enough for an email address or an external account id; short enough that it is an
# identifier, not content.
MAX_USER_CHARS = 128
# No control character (C0, DEL, C1), no line or paragraph separator, and no space at either
# end. A regular expression both Python and JSON Schema (ECMA-262) read alike: the webhook
# ingress publishes it in its event schema.
_VISIBLE_END = r"[^\x00-\x20\x7f-\x9f\u2028\u2029]"
_INNER = r"[^\x00-\x1f\x7f-\x9f\u2028\u2029]"
USER_PATTERN = rf"^{_VISIBLE_END}(?:{_INNER}*{_VISIBLE_END})?$"
USER_RULE = (
    f"1-{MAX_USER_CHARS} printable characters (no control characters or line breaks),"
    " not starting or ending with a space"
)


def user_problem(user: object) -> str | None:
    """Why ``user`` is not a valid user id, or None when it is: ``USER_RULE``."""
    if not isinstance(user, str):
        return f"user must be a string, not {type(user).__name__}"
    if not user:
        return "user is empty; give the user's id, or leave user out for an agent-wide wake"
    if len(user) > MAX_USER_CHARS:
        return f"user is {len(user)} characters; at most {MAX_USER_CHARS} are allowed"
    if re.fullmatch(USER_PATTERN, user) is None:
        return f"user {user!r} is invalid: use {USER_RULE}"
    return None


def check_user(user: str | None) -> str | None:
    """``user`` when it is None or valid; otherwise a :class:`UserError` in one line."""
    if user is None:
        return None
    problem = user_problem(user)
    if problem is not None:
        raise UserError(problem)
    return user


def visible_to(row_user: str | None, scope: str | None) -> bool:
    """Whether a row stored for ``row_user`` (None: agent-wide) may reach a wake of
    ``scope`` (None: the agent's own wake)."""
    return row_user is None or row_user == scope


def scope_label(scope: str | None) -> str:
    """The scope as the compile ledger names it: ``user <id>`` or ``agent``."""
    return "agent" if scope is None else f"user {scope}"
