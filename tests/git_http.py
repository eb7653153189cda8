"""A git repository served over smart HTTP on loopback, readable only with a token, as a private one is.

``git http-backend`` (git's own CGI program) answers each request; the server in front of it asks for
HTTP basic authentication first and answers 401 without it, as GitHub does for a private repository.
"""
from __future__ import annotations

import base64
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType


class PrivateRepositories:
    """``with PrivateRepositories(root, token) as server``: ``server.url("origin.git")`` serves ``root/origin.git``."""

    def __init__(self, root: Path, token: str) -> None:
        expected = ("basic", base64.b64encode(f"x-access-token:{token}".encode()).decode())
        self.requests: list[tuple[str, bool]] = []  # (path, authenticated)
        served = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                scheme, _, credentials = (self.headers.get("Authorization") or "").partition(" ")
                authenticated = (scheme.lower(), credentials.strip()) == expected  # the scheme's case is free
                served.requests.append((self.path, authenticated))
                if not authenticated:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="private"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path, _, query = self.path.partition("?")
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                environment = {"GIT_PROJECT_ROOT": str(root), "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
                               "QUERY_STRING": query, "REQUEST_METHOD": self.command,
                               "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
                               "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""), "REMOTE_USER": "x-access-token"}
                ran = subprocess.run(["git", "http-backend"], input=body, env=environment, capture_output=True)
                head, _, content = ran.stdout.partition(b"\r\n\r\n")
                headers = [line.split(": ", 1) for line in head.decode().split("\r\n") if ": " in line]
                status = next((int(value.split()[0]) for name, value in headers if name.lower() == "status"), 200)
                self.send_response(status)
                for name, value in headers:
                    if name.lower() != "status":
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 -- the base class's name
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/{name}"

    @property
    def server_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> PrivateRepositories:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
