"""Serve the simulator on 127.0.0.1 from a background thread.

The socket is bound before uvicorn starts (port 0 -> a free port chosen by the OS), so
``base_url`` is known up front and two servers never race for a port.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

from wakeful.errors import StackError
from wakeful.extras import require
from wakeful.testing.simulator.app import UVICORN_OPTIONS, create_app
from wakeful.testing.simulator.core import Simulator
from wakeful.testing.simulator.script import Script

if TYPE_CHECKING:
    import uvicorn

# Checked on import, so that the missing extra is one line before any server is built.
require("wakeful.testing.SimulatorServer", "uvicorn")

__all__ = ["SimulatorServer"]


class SimulatorServer:
    """``with SimulatorServer() as sim: AsyncAnthropic(base_url=sim.base_url, ...)``.

    ``base_url`` is the root (what the Anthropic SDK wants); ``openai_base_url`` adds
    ``/v1`` (what the OpenAI SDK wants). ``simulator`` is the live state: reset it, swap
    scripts, read call logs, or advance time.
    """

    def __init__(
        self,
        script: Script | None = None,
        *,
        clock: Callable[[], float] | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
        startup_timeout: float = 10.0,
    ) -> None:
        self.simulator = Simulator(script=script, clock=clock)
        self._port, self._host = port, host
        self._startup_timeout = startup_timeout
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._bound_port: int | None = None

    @property
    def port(self) -> int:
        if self._bound_port is None:
            raise StackError("the simulator is not running; use it as a context manager")
        return self._bound_port

    @property
    def base_url(self) -> str:
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    def start(self) -> SimulatorServer:
        import uvicorn

        family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self._host, self._port))
        except OSError:
            sock.close()
            raise
        self._socket = sock
        self._bound_port = int(sock.getsockname()[1])
        config = uvicorn.Config(
            create_app(self.simulator), access_log=False, loop="asyncio", **UVICORN_OPTIONS
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [sock]},
            name=f"wakeful-sim-{self.port}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + self._startup_timeout
        while not self._server.started and time.monotonic() < deadline:
            if not self._thread.is_alive():
                break
            time.sleep(0.005)
        if not self._server.started:
            self.stop()
            raise StackError(
                f"the provider simulator on {self._host}:{self._bound_port} did not start within "
                f"{self._startup_timeout:g}s; check that the port is free"
            )
        return self

    def wait(self) -> None:
        """Block until the server stops (it serves from a thread; Ctrl-C interrupts)."""
        if self._thread is not None:
            self._thread.join()

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        self._server, self._thread, self._socket = None, None, None

    def __enter__(self) -> SimulatorServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
