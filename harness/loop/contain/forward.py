"""The forwarder inside a step with an allowlist: the step's only listener on its own
loopback, 127.0.0.1:<port>, which hands each connection to the egress proxy through its Unix
socket bound into the sandbox (docs/specs/sandbox.md, "Egress by name").

It runs as the step's first program, `python -I -S -c <this file's text> <socket> <argv…>`
(the standard library alone, and before the command starts only `os` and `_socket`, so it
costs about 15 ms and needs nothing of the harness's install to be visible): it binds a
free port, sets the proxy variables to it, starts the forwarding process, and then becomes
the step's command (exec), which keeps the command's pid, stdin and exit status. The forwarding process is a grandchild that the command never
sees as its child; it ends with the step's PID namespace. A program that cannot be started
is reported in bubblewrap's own words (`bwrap: execvp …`), so the harness reads its exit as
it reads any contained step's (`steps._bwrap_code`).

The forwarding process moves no bytes: it passes each accepted connection itself to the
proxy (one byte and the socket, `SCM_RIGHTS`), which reads the request from it and answers
on it, so a download crosses one relay, not two. The step can do what it likes with this
process: it holds no privilege the step lacks, and the proxy outside decides what gets
through (and takes only a TCP socket so passed, `proxy.py`).
"""

from __future__ import annotations

import _socket
import os
import sys

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
PASSED = b"\0"  # the one byte a passed connection comes with (proxy.py reads it so)


def _serve(fd: int, path: str) -> None:
    """The forwarding process: each connection to the step's port, handed to the proxy."""
    import socket

    null = os.open(os.devnull, os.O_RDWR)
    for std in (0, 1, 2):  # hold none of the step's pipes open
        os.dup2(null, std)
    with socket.socket(fileno=fd) as listener:
        while True:
            conn, _ = listener.accept()
            with conn, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as far:
                try:
                    far.connect(path)
                    socket.send_fds(far, [PASSED], [conn.fileno()])
                except OSError:
                    pass  # no proxy: the connection closes, as a refused one would


def main(argv: list[str]) -> None:
    path, command = argv[0], argv[1:]
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    for name in PROXY_VARIABLES:
        os.environ[name] = os.environ[name.lower()] = url
    child = os.fork()
    if child == 0:
        if os.fork() == 0:
            try:
                _serve(listener.detach(), path)
            finally:
                os._exit(0)
        os._exit(0)
    os.waitpid(child, 0)
    listener.close()
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"bwrap: execvp {command[0]}: {exc.strerror}\n")
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
