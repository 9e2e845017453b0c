"""A language server driven as an editor drives it: JSON-RPC over the server's stdin and stdout.

Written on the standard library rather than taken from pygls (2.1, installed with
jedi-language-server): pygls's client pipes the server's stderr and never reads it, so a server that
logs there (pylsp does, at length) blocks once the pipe's buffer fills, and it hands back results
converted to lsprotocol's attrs classes, where these tests want the JSON an editor receives. Here
stderr goes to a file, a reader thread parses each ``Content-Length`` frame, and every request has a
timeout, so a server that stalls fails one check instead of hanging the suite.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

#: How long one request may take before the client gives up on it: a cold pyright answers its first
#: completion in a few seconds on the shared 2-core machine, a cold tvm analysis in tens of seconds.
REQUEST_TIMEOUT = 120.0

#: The commands of the four servers, each installed by its pip package into this interpreter's folder.
SERVERS: dict[str, list[str]] = {
    "basedpyright": ["basedpyright-langserver", "--stdio"],
    "pyright": ["pyright-langserver", "--stdio"],
    "jedi": ["jedi-language-server"],
    "pylsp": ["pylsp"],
}

#: What the client tells a server it can show: Markdown and plain text, snippets, signature help
#: with parameter offsets, and the resolve of a completion item's documentation and detail.
CLIENT_CAPABILITIES: dict[str, Any] = {
    "textDocument": {
        "synchronization": {"didSave": True},
        "completion": {
            "completionItem": {
                "documentationFormat": ["markdown", "plaintext"],
                "snippetSupport": False,
                "labelDetailsSupport": True,
                "resolveSupport": {"properties": ["documentation", "detail"]},
            },
            "contextSupport": True,
        },
        "hover": {"contentFormat": ["markdown", "plaintext"]},
        "signatureHelp": {
            "signatureInformation": {
                "documentationFormat": ["markdown", "plaintext"],
                "parameterInformation": {"labelOffsetSupport": True},
                "activeParameterSupport": True,
            },
        },
        "definition": {"linkSupport": False},
    },
    "workspace": {"configuration": True, "workspaceFolders": True},
}


class ServerError(RuntimeError):
    """The server answered a request with an error, exited, or did not answer in time."""


def path_uri(path: Path) -> str:
    """The ``file://`` URI of an absolute path, as an editor sends it."""
    return path.resolve().as_uri()


def server_environment(python_path: Sequence[Path] = ()) -> dict[str, str]:
    """This process's environment with this interpreter's folder first on ``PATH`` (the checkers
    ask the ``python`` found there for its search paths) and ``python_path`` as ``PYTHONPATH``: the
    folders a user's environment holds besides site-packages (an installed stubs package)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("PYTHONPATH", None)
    if python_path:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in python_path)
    return env


class LanguageServer:
    """One server process over stdio, initialized on a workspace folder.

    Requests are synchronous (the editor's view: ask, wait for the answer); the server's own
    requests (``workspace/configuration``, capability registration, progress tokens) are answered
    as a plain editor without settings answers them, so the server runs on its defaults.
    """

    def __init__(self, name: str, root: Path, python_path: Sequence[Path] = (), timeout: float = REQUEST_TIMEOUT):
        self.name = name
        self.root = root
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._pending: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._versions: dict[str, int] = {}
        # the server's log: kept as long as the server runs, closed by close()
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        #: when the process was started (perf_counter): a cold answer is timed from here
        self.started = time.perf_counter()
        self._process = subprocess.Popen(
            SERVERS[name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=root,
            env=server_environment(python_path),
        )
        self._reader = threading.Thread(target=self._read_loop, name=f"lsp-{name}", daemon=True)
        self._reader.start()
        try:
            self.capabilities: dict[str, Any] = self.request(
                "initialize",
                {
                    "processId": os.getpid(),
                    "rootUri": path_uri(root),
                    "workspaceFolders": [{"uri": path_uri(root), "name": root.name}],
                    "capabilities": CLIENT_CAPABILITIES,
                },
            )["capabilities"]
            self.notify("initialized", {})
        except ServerError:
            self.close()
            raise

    # -- the wire -------------------------------------------------------------------------------

    def _send(self, message: Mapping[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        stdin = self._process.stdin
        assert stdin is not None
        with self._write_lock:
            try:
                stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
                stdin.flush()
            except (BrokenPipeError, ValueError) as error:
                raise ServerError(f"{self.name}: the server's stdin is closed ({error}){self.stderr_tail()}") from error

    def _read_message(self, stdout: IO[bytes]) -> dict[str, Any] | None:
        length = None
        while True:
            line = stdout.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                break
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        body = stdout.read(length) if length is not None else b""
        if len(body) != length:
            return None  # the server exited mid-message: the reader ends, the waiting requests fail
        message: dict[str, Any] = json.loads(body)
        return message

    def _read_loop(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        while (message := self._read_message(stdout)) is not None:
            if "method" in message and "id" in message:
                self._answer_server_request(message)
            elif "method" not in message:
                with self._lock:
                    waiting = self._pending.pop(message.get("id", -1), None)
                if waiting is not None:
                    waiting.put(message)
        with self._lock:
            for waiting in self._pending.values():
                waiting.put({"error": {"message": "the server exited"}})
            self._pending.clear()

    def _answer_server_request(self, message: Mapping[str, Any]) -> None:
        result: Any = None
        if message["method"] == "workspace/configuration":
            result = [None for _ in message["params"]["items"]]
        elif message["method"] == "workspace/workspaceFolders":
            result = [{"uri": path_uri(self.root), "name": self.root.name}]
        with contextlib.suppress(ServerError):
            self._send({"id": message["id"], "result": result})

    def stderr_tail(self, chars: int = 2000) -> str:
        """The end of what the server wrote to stderr, for an error message."""
        self._stderr.seek(0)
        text = self._stderr.read().decode(errors="replace")[-chars:]
        return f"\n{self.name} stderr:\n{text}" if text.strip() else ""

    # -- requests -------------------------------------------------------------------------------

    def request(self, method: str, params: Any, timeout: float | None = None) -> Any:
        """The result of one request; ServerError on an error answer, an exit or a timeout."""
        request_id = next(self._ids)
        answer: queue.Queue[dict[str, Any]] = queue.Queue(maxsize=1)
        with self._lock:
            self._pending[request_id] = answer
        self._send({"id": request_id, "method": method, "params": params})
        wait = self.timeout if timeout is None else timeout
        try:
            message = answer.get(timeout=wait)
        except queue.Empty:
            with self._lock:
                self._pending.pop(request_id, None)
            raise ServerError(f"{self.name}: no answer to {method} within {wait:.0f} s{self.stderr_tail()}") from None
        if "error" in message:
            raise ServerError(f"{self.name}: {method} failed: {message['error']}{self.stderr_tail()}")
        return message.get("result")

    def notify(self, method: str, params: Any) -> None:
        """Send a notification (no answer)."""
        self._send({"method": method, "params": params})

    def open(self, path: Path) -> str:
        """Tell the server the editor opened ``path`` (or changed it to what it now holds); its URI."""
        uri = path_uri(path)
        text = path.read_text()
        if uri in self._versions:
            self._versions[uri] += 1
            self.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": self._versions[uri]}, "contentChanges": [{"text": text}]},
            )
        else:
            self._versions[uri] = 1
            self.notify(
                "textDocument/didOpen",
                {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
            )
        return uri

    def at(self, method: str, uri: str, line: int, character: int) -> Any:
        """A ``textDocument/...`` request at a position (0-based line and UTF-16 column)."""
        params = {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}
        return self.request(f"textDocument/{method}", params)

    def close(self) -> None:
        """Shut the server down as an editor does, and kill it if it does not exit in time."""
        try:
            if self._process.poll() is None:
                self.request("shutdown", None, timeout=15)
                self.notify("exit", None)
                self._process.wait(timeout=15)
        except (ServerError, subprocess.TimeoutExpired):
            self._process.kill()
            self._process.wait(timeout=15)
        finally:
            for stream in (self._process.stdin, self._process.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            self._stderr.close()
