"""Compile-policy TOML the tests share: the deploy trigger an intent fires, and intent rules.

A test builds its policy file from these pieces, so the rule a fired trigger brings (what
the tests look for in a window) is written once.
"""

from __future__ import annotations

import json

DEPLOY_RULE = "Check the rollback plan first."

# A trigger that fires on the intent ``deploy`` and brings DEPLOY_RULE.
DEPLOYS_TRIGGER = f"""
[[triggers]]
name = "deploys"
intents = ["deploy"]
rules = ["{DEPLOY_RULE}"]
"""


def intent_rule(name: str, *patterns: str) -> str:
    """An ``[[intents]]`` table: the intent ``name``, classified by the phrases ``patterns``."""
    return f'\n[[intents]]\nname = "{name}"\npatterns = {json.dumps(list(patterns))}\n'
