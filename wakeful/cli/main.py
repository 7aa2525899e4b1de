"""The ``wakeful`` command."""

from __future__ import annotations

import asyncio
from enum import StrEnum
from typing import Any

import typer

from wakeful.cli import agents, bench, data, inspect, stack
from wakeful.cli import approvals as approvals_cli
from wakeful.cli import codec as codec_cli
from wakeful.cli import consolidate as consolidate_cli
from wakeful.cli import decisions as decisions_cli
from wakeful.cli import docs as docs_cli
from wakeful.cli import ingress as ingress_cli
from wakeful.cli import schedules as schedules_cli
from wakeful.cli import ui as ui_cli
from wakeful.cli.common import friendly, run_then_exit, settings
from wakeful.extras import require


class DemoProvider(StrEnum):
    ANTHROPIC = "anthropic"
    OPENAI = "openai"


class _Program(typer.Typer):
    """The ``wakeful`` program: run as a process (the console script, ``python -m``), it
    exits through :func:`run_then_exit`, so its exit code is the command's, never an abort
    of the Temporal SDK's threads at interpreter exit. In-process runners (``CliRunner``)
    call the click command and are unaffected."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        run_then_exit(lambda: super(_Program, self).__call__(*args, **kwargs))


app = _Program(
    help="Wakeful: durable, event-driven runtime for long-running agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(stack.app, name="stack")
app.add_typer(agents.app, name="agent")
app.add_typer(bench.app, name="bench")
app.add_typer(inspect.handoff_app, name="handoff")
app.add_typer(schedules_cli.app, name="schedule")
app.add_typer(approvals_cli.app, name="approvals")
app.add_typer(decisions_cli.app, name="decisions")
app.add_typer(docs_cli.app, name="docs")
app.command()(approvals_cli.approve)
app.command()(agents.trigger)
app.command()(agents.worker)
app.command()(inspect.explain)
app.command()(inspect.diff)
app.command()(inspect.replay)
app.command()(consolidate_cli.consolidate)
app.command("import")(data.import_)
app.add_typer(ingress_cli.app, name="ingress")
app.command()(ingress_cli.health)
app.command("codec-server")(codec_cli.codec_server)
app.command()(ui_cli.ui)


@app.command()
@friendly
def demo(
    provider: DemoProvider = typer.Option(
        DemoProvider.ANTHROPIC,
        help="The API the simulator speaks to the demo agent, with its caching.",
    ),
) -> None:
    """Run the offline demo on the embedded stack: 5 wakes across 2 sessions."""
    # The provider simulator serves HTTP; the embedded stack watches its servers' processes.
    require("wakeful demo", "fastapi", "uvicorn", "psutil")
    from wakeful.demo.run import run_demo

    asyncio.run(run_demo(settings(), say=typer.echo, provider=provider.value))


if __name__ == "__main__":
    app()
