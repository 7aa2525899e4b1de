"""``python -m wakeful.testing.simulator [--port P] [--script FILE]``: serve until stopped.

It listens on port 8766 by default (``wakeful ui`` takes 8765, so both can run) and says
so in one line once it answers. Time in a separate process is skipped through
``POST /_sim/advance``.
"""

from __future__ import annotations

import argparse
import sys

from wakeful.extras import MissingExtraError, require
from wakeful.testing.simulator.script import Script
from wakeful.worker.ports import SIMULATOR_PORT


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="wakeful-sim", description="Loopback Anthropic/OpenAI simulator (no network)."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--port",
        type=int,
        default=SIMULATOR_PORT,
        help=f"Port to bind (default {SIMULATOR_PORT}); 0 takes any free one (it is printed).",
    )
    parser.add_argument("--script", help="YAML/JSON script of replies (see script.py)")
    parser.add_argument(
        "--stream-delay",
        type=float,
        default=0.0,
        help="Seconds between the events of a streamed reply (default 0: as fast as it can).",
    )
    args = parser.parse_args(argv)
    try:
        require("python -m wakeful.testing.simulator", "uvicorn")
    except MissingExtraError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    from wakeful.testing.simulator.server import SimulatorServer

    script = Script.load(args.script) if args.script else Script()
    server = SimulatorServer(script, port=args.port, host=args.host)
    server.simulator.pace.delay = max(args.stream_delay, 0.0)
    try:
        server.start()
    except OSError as exc:
        print(
            f"error: cannot listen on {args.host}:{args.port} ({exc.strerror}): pass another"
            " --port",
            file=sys.stderr,
        )
        raise SystemExit(3) from None
    url = server.base_url
    print(
        f"provider simulator on {url} (ANTHROPIC_BASE_URL={url}, OPENAI_BASE_URL={url}/v1);"
        " Ctrl-C stops it",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
