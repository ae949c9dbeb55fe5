"""Starting the tests' real MCP servers: stdio specs, and HTTP servers on a free port."""

from __future__ import annotations

import contextlib
import os
import pathlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

HERE = pathlib.Path(__file__).resolve().parent
SERVER = HERE / "mcp_tool_server.py"


def stdio_spec(name: str | None = "t") -> str:
    """The --mcp spec of the test server over stdio."""
    prefix = f"{name}=" if name else ""
    return f"{prefix}stdio:{sys.executable} {SERVER}"


def obelisk_path() -> str:
    """PYTHONPATH for an ``obelisk`` subprocess: the folder holding the obelisk under test,
    and nothing else. Not this process's whole ``sys.path``: the full suite puts bench/
    there, whose ``mcp.py`` would hide the MCP SDK from the subprocess."""
    import obelisk

    return str(pathlib.Path(obelisk.__file__).resolve().parent.parent)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def http_server(script: pathlib.Path = SERVER, *args: str) -> Iterator[str]:
    """The test server over streamable HTTP on 127.0.0.1: its URL while it runs."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(script), "--http", str(port), *args],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if process.poll() is not None:
                raise RuntimeError(f"the MCP test server exited with {process.returncode}")
            time.sleep(0.05)
        else:
            raise RuntimeError("the MCP test server did not listen within 20 s")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
