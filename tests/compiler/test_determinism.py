"""Byte-identical output across processes with different hash seeds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import hashlib, sys
sys.path.insert(0, {root!r})
from tests.compiler.test_render import _scenario
from tests.compiler.factory import snapshot
from tests.compiler.helpers import compile_
from wakeful.compiler import load_policy
policy = load_policy("[budget]\\ncontext_limit = 2500\\noutput_reserve = 300\\n"
                     "[[triggers]]\\nname='t'\\nintents=['x']\\nrules=['r1','r2']\\n")
out = []
for provider in ("anthropic", "openai_chat", "openai_responses"):
    w = compile_(snapshot(_scenario()), policy, provider=provider)
    out.append(w.request_json + w.ledger.model_dump_json())
print(hashlib.blake2b("".join(out).encode()).hexdigest())
"""


def test_output_is_identical_across_hash_seeds() -> None:
    root = str(Path(__file__).resolve().parents[2])
    digests = set()
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT.format(root=root)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=root,
        )
        digests.add(done.stdout.strip())
    assert len(digests) == 1 and len(digests.pop()) == 128
