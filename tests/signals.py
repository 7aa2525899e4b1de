"""Child processes that take Ctrl-C as a person's terminal sends it."""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """Run in the child before it starts (``Popen(preexec_fn=...)``): SIGINT back to its
    default. A test run started with SIGINT ignored (a job a non-interactive shell put in
    the background, as CI runners may) passes that to its children, and Python installs
    its KeyboardInterrupt handler only when SIGINT is not ignored at start: the child would
    never hear the Ctrl-C the test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
