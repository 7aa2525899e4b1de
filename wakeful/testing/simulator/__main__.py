"""``python -m wakeful.testing.simulator --port P [--script FILE]``: serve until stopped.

Time in a separate process is skipped through ``POST /_sim/advance``.
"""

from __future__ import annotations

import argparse
import sys

from wakeful.extras import MissingExtraError, require
from wakeful.testing.simulator.core import Simulator
from wakeful.testing.simulator.script import Script


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="wakeful-sim", description="Loopback Anthropic/OpenAI simulator (no network)."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--script", help="YAML/JSON script of replies (see script.py)")
    args = parser.parse_args(argv)
    try:
        require("python -m wakeful.testing.simulator", "uvicorn")
    except MissingExtraError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    import uvicorn

    from wakeful.testing.simulator.app import UVICORN_OPTIONS, create_app

    script = Script.load(args.script) if args.script else Script()
    app = create_app(Simulator(script=script))
    uvicorn.run(app, host=args.host, port=args.port, **UVICORN_OPTIONS)


if __name__ == "__main__":
    main()
