"""The explorer's local HTTP server and its JSON API.

The standard library's :class:`http.server.ThreadingHTTPServer` serves one page and a small
JSON API, bound to 127.0.0.1 only. Each request is checked before it is routed:

* the ``Host`` header must be exactly ``127.0.0.1:PORT`` or ``localhost:PORT`` (a page on
  another site that re-binds its own name to 127.0.0.1 sends its own name: refused, 403);
* an ``Origin`` header, when sent, must be ``http://127.0.0.1:PORT`` or
  ``http://localhost:PORT`` (403 otherwise), and a browser's ``Sec-Fetch-Site: cross-site``
  is refused;
* the page and every API call need the session's secret token (in the page's address, then
  the ``X-Quiltpriv-Token`` header), so other users of the machine cannot drive it;
* a body must be JSON (``Content-Type: application/json``), at most :data:`MAX_BODY` bytes
  (413 otherwise, before it is read), and parse into the checked values of
  :mod:`quiltpriv.explorer.state`; anything else is a 400 with ``{"error": "..."}`` naming the
  problem.

API (all JSON)::

    GET  /api/model                    the model, its drawing, edits made, initial inputs
    GET  /api/cpd?node=N&member=K      one node's conditional table
    POST /api/plan {sensitive, epsilon, query, time_limit, compare}  -> 202 {"job": ...}
    GET  /api/jobs/ID                  state, phase, progress, result or error
    POST /api/jobs/ID/cancel
    POST /api/edit/cell {member, node, column, row, value}     member: K or "all"
    POST /api/edit/strength {member, parent, child, factor}    member: K or "all"
    POST /api/undo
    POST /api/save {path[, member]}    .json (all of Theta) or .bif (one member), atomically
    POST /api/report {path, sensitive, epsilon, query, time_limit}  -> 202 {"job": ...}

The auditor's side (:mod:`quiltpriv.explorer.published`: a published plan or release record,
verified and audited, never planned or released again)::

    GET  /api/published                the loaded document's summary, or null
    POST /api/published {path | text[, name]}   load (at most MAX_UPLOAD bytes of body)
    POST /api/published/verify {data, ledger, audit, fragility, delta, time_limit} -> 202
    POST /api/published/report {path, ledger, audit}                              -> 202
    POST /api/published/clear
"""

from __future__ import annotations

import hmac
import json
import secrets
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from quiltpriv.errors import ParameterError, QuiltPrivError
from quiltpriv.explorer.compute import export_report, plan_payload, report_target
from quiltpriv.explorer.jobs import JobManager
from quiltpriv.explorer.published import MAX_DOCUMENT, PublishedSession, published_route
from quiltpriv.explorer.state import (
    ModelState,
    cpd_view,
    members_text,
    model_summary,
    parse_cell_edit,
    parse_plan_request,
    parse_strength_edit,
    save_model,
    scale_strength,
    set_cell,
)
from quiltpriv.model.network import Theta
from quiltpriv.utils.serialize import load_json

HOST = "127.0.0.1"
#: Largest request body accepted, in bytes.
MAX_BODY = 64 * 1024
#: Largest body of ``POST /api/published`` (an uploaded plan or release record).
MAX_UPLOAD = MAX_DOCUMENT + 64 * 1024
TOKEN_HEADER = "X-Quiltpriv-Token"

_STATIC = {"explorer.js": "text/javascript; charset=utf-8",
           "explorer.css": "text/css; charset=utf-8",
           "audit.js": "text/javascript; charset=utf-8"}
_SECURITY_HEADERS = {
    # Only this server's own files run; nothing is fetched from anywhere else.
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "img-src 'self' data:; connect-src 'self'; base-uri 'none'; "
                               "form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Cross-Origin-Resource-Policy": "same-origin",
}


class HTTPError(Exception):
    """An HTTP error status with a message for the JSON body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _static(name: str) -> bytes:
    # One name per joinpath: Python 3.10's Traversable takes one.
    return resources.files("quiltpriv.explorer").joinpath("static").joinpath(name).read_bytes()


class Explorer:
    """The application: model state, jobs and request routing (no sockets here).

    Parameters
    ----------
    theta : Theta
        The model to explore.
    spec : str
        How the model was named on the command line (shown, and used in the equivalent
        command).
    sources : sequence of path
        Model files it was read from; they are never overwritten.
    initial : mapping, optional
        Initial inputs of the page (``sensitive``, ``epsilon``, ``query``), as a plan request.
    token : str, optional
        The session's secret (random by default).

    Examples
    --------
    The page's JSON API, called directly (the server checks the token and the request first):

    >>> import quiltpriv as qp
    >>> from quiltpriv.explorer import Explorer
    >>> app = Explorer(qp.load_model("student"), "student")
    >>> status, body = app.handle("GET", "/api/model", {}, None)
    >>> status, body["spec"], [node["name"] for node in body["nodes"]][:2]
    (200, 'student', ['gender', 'income'])
    """

    def __init__(self, theta: Theta, spec: str, sources: Any = (),
                 initial: Mapping[str, Any] | None = None, token: str | None = None) -> None:
        self.state = ModelState(theta, spec, sources)
        self.jobs = JobManager()
        self.token = token or secrets.token_urlsafe(24)
        self.initial = dict(initial or {})
        self.published = PublishedSession(theta)
        # A bad initial input fails at start-up; a partial one is only a starting point.
        if "sensitive" in self.initial:
            sens = self.initial["sensitive"]
            theta.check_sensitive(sens.split(",") if isinstance(sens, str) else sens)
        if {"sensitive", "epsilon", "query"} <= set(self.initial):
            parse_plan_request(self.initial, theta)

    # -- routing ------------------------------------------------------------------------------
    def handle(self, method: str, path: str, params: Mapping[str, list[str]],
               body: Any) -> tuple[int, Any]:
        """Route one checked request; return the status and a JSON-ready body."""
        parts = [p for p in path.split("/") if p][1:]  # after "api"
        if parts[:1] == ["published"]:
            return published_route(self, method, parts[1:], body)
        if method == "GET":
            if parts == ["model"]:
                return 200, dict(model_summary(self.state), initial=self.initial)
            if parts == ["cpd"]:
                return 200, cpd_view(self.state.theta, _param(params, "node"),
                                     _param(params, "member", "0"))
            if len(parts) == 2 and parts[0] == "jobs":
                return 200, self._job(parts[1]).snapshot()
        elif method == "POST":
            if parts == ["plan"]:
                return self._start_plan(body)
            if parts == ["report"]:
                return self._start_report(body)
            if len(parts) == 3 and parts[0] == "jobs" and parts[2] == "cancel":
                job = self._job(parts[1])
                job.cancel()
                return 200, {"id": job.id, "cancelling": True}
            if parts == ["edit", "cell"]:
                edit = parse_cell_edit(body, self.state.theta)
                self.state.apply(lambda t: set_cell(t, edit),
                                 f"P({edit.node} = state {edit.row} | column {edit.column}) "
                                 f"= {edit.value!r} "
                                 f"{members_text(edit.members, self.state.theta)}")
                return 200, model_summary(self.state)
            if parts == ["edit", "strength"]:
                strength = parse_strength_edit(body, self.state.theta)
                self.state.apply(lambda t: scale_strength(t, strength),
                                 f"strength of {strength.parent} -> {strength.child} x "
                                 f"{strength.factor!r} "
                                 f"{members_text(strength.members, self.state.theta)}")
                return 200, model_summary(self.state)
            if parts == ["undo"]:
                _empty(body, "undo")
                self.state.undo()
                return 200, model_summary(self.state)
            if parts == ["save"]:
                b = _fields(body, ("path", "member"), "save")
                return 200, save_model(self.state, b.get("path"), b.get("member"))
        else:
            raise HTTPError(405, f"method {method} is not used by this server")
        raise HTTPError(404, f"no such API endpoint: {method} {path}")

    def _job(self, job_id: str) -> Any:
        job = self.jobs.get(job_id)
        if job is None:
            raise HTTPError(404, f"no job {job_id!r} (finished jobs are kept for a while only)")
        return job

    def _start_plan(self, body: Any) -> tuple[int, Any]:
        theta = self.state.theta  # immutable: the job plans this version of the model
        req = parse_plan_request(body, theta)
        name = self.state.spec if theta.fingerprint() == self.state.original else \
            "EDITED_MODEL.json"
        job = self.jobs.start("plan", lambda j: plan_payload(theta, req, name, j.progress,
                                                             j.check, j.cancel_event))
        return 202, {"job": job.id}

    def _start_report(self, body: Any) -> tuple[int, Any]:
        b = _fields(body, ("path", "sensitive", "epsilon", "query", "time_limit"),
                    "export report")
        path = b.pop("path", None)
        theta = self.state.theta
        req = parse_plan_request(dict(b, compare=False), theta)
        target = report_target(self.state, path)  # refused before any work
        job = self.jobs.start("report", lambda j: export_report(self.state, theta, req, target,
                                                                j.progress, j.check,
                                                                j.cancel_event))
        return 202, {"job": job.id}


def _param(params: Mapping[str, list[str]], name: str, default: str | None = None) -> str:
    values = params.get(name)
    if not values:
        if default is not None:
            return default
        raise ParameterError(f"give the query parameter {name}=...")
    if len(values) > 1:
        raise ParameterError(f"the query parameter {name} is given twice")
    return values[0]


def _fields(body: Any, fields: tuple[str, ...], what: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ParameterError(f"{what}: expected a JSON object")
    unknown = [k for k in body if k not in fields]
    if unknown:
        raise ParameterError(f"{what}: unknown field(s) {', '.join(map(repr, unknown))}")
    return dict(body)


def _empty(body: Any, what: str) -> None:
    if body not in (None, {}):
        raise ParameterError(f"{what} takes no fields")


def _no_constant(name: str) -> Any:
    raise ParameterError(f"the request holds {name}, which is not a JSON number")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ParameterError(f"the request names {k!r} twice")
        out[k] = v
    return out


def parse_body(raw: bytes) -> Any:
    """The request body as JSON (strict: no NaN/Infinity, no repeated keys), or a 400."""
    if not raw:
        return None
    try:
        return load_json(raw, "the request body", error=ParameterError,
                         parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
    except ParameterError as exc:
        raise HTTPError(400, str(exc)) from None


class _Handler(BaseHTTPRequestHandler):
    server: ExplorerServer
    server_version = "quiltpriv-explorer"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        if self.server.verbose:
            super().log_message(format, *args)

    # -- responses ---------------------------------------------------------------------------
    def _send(self, status: int, body: bytes, content_type: str,
              extra: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in {**_SECURITY_HEADERS, **(extra or {})}.items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: Any) -> None:
        body = json.dumps(data, allow_nan=False, ensure_ascii=False).encode("utf-8")
        self._send(status, body, "application/json; charset=utf-8")

    def _error(self, status: int, message: str) -> None:
        self.close_connection = True
        self._json(status, {"error": message, "status": status})

    # -- checks --------------------------------------------------------------------------------
    def _check_origin(self) -> None:
        port = self.server.server_address[1]
        allowed = {f"{HOST}:{port}", f"localhost:{port}"}
        host = self.headers.get("Host")
        if host not in allowed:
            raise HTTPError(403, f"refused: Host {host!r} is not this explorer's address "
                                 f"(http://{HOST}:{port})")
        origin = self.headers.get("Origin")
        if origin is not None and origin not in {f"http://{h}" for h in allowed}:
            raise HTTPError(403, f"refused: requests from origin {origin!r} are not accepted "
                                 "(only this explorer's own page may call it)")
        if self.headers.get("Sec-Fetch-Site") == "cross-site":
            raise HTTPError(403, "refused: a cross-site request")

    def _check_token(self, given: str | None) -> None:
        if given is None or not hmac.compare_digest(given.encode(), self.server.app.token
                                                    .encode()):
            raise HTTPError(403, "refused: missing or wrong access token (open the address "
                                 "quiltpriv explore printed; it holds the token)")

    def _read_body(self) -> Any:
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding"):
            raise HTTPError(411, "send the body with a Content-Length (no chunked encoding)")
        if length is None:
            if self.command == "POST":
                raise HTTPError(411, "a POST request needs a Content-Length header")
            return None
        try:
            n = int(length)
        except ValueError:
            raise HTTPError(400, f"bad Content-Length {length!r}") from None
        if n < 0:
            raise HTTPError(400, f"bad Content-Length {length!r}")
        limit = MAX_UPLOAD if urlsplit(self.path).path == "/api/published" else MAX_BODY
        if n > limit:
            raise HTTPError(413, f"the request body ({n} bytes) is larger than the "
                                 f"{limit} bytes accepted")
        if n and (self.headers.get_content_type() != "application/json"):
            raise HTTPError(415, "the request body must be JSON (Content-Type: "
                                 "application/json)")
        return parse_body(self.rfile.read(n))

    # -- methods -------------------------------------------------------------------------------
    def _dispatch(self) -> None:
        try:
            self._check_origin()
            url = urlsplit(self.path)
            params = parse_qs(url.query, keep_blank_values=True)
            if url.path in ("/", "/index.html") and self.command in ("GET", "HEAD"):
                self._check_token(params.get("token", [None])[0])
                self._send(200, _static("index.html"), "text/html; charset=utf-8")
                return
            if url.path.startswith("/static/") and self.command in ("GET", "HEAD"):
                name = url.path[len("/static/"):]
                if name not in _STATIC:
                    raise HTTPError(404, f"no such file: {url.path}")
                self._send(200, _static(name), _STATIC[name])
                return
            if url.path == "/favicon.ico":
                self._send(204, b"", "image/x-icon")
                return
            if not url.path.startswith("/api/"):
                raise HTTPError(404, f"not found: {url.path}")
            self._check_token(self.headers.get(TOKEN_HEADER))
            body = self._read_body()
            status, data = self.server.app.handle(self.command, url.path, params, body)
            self._json(status, data)
        except HTTPError as exc:
            self._error(exc.status, str(exc))
        except QuiltPrivError as exc:
            self._error(400, str(exc))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the page went away
        except Exception as exc:  # a bug: keep serving, and say what happened
            import traceback

            traceback.print_exc()
            self._error(500, f"internal error ({type(exc).__name__}: {exc})")

    def do_GET(self) -> None:  # noqa: N802 - the base class's naming
        self._dispatch()

    def do_HEAD(self) -> None:  # noqa: N802
        self._dispatch()

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch()

    def _not_allowed(self) -> None:
        self._error(405, f"method {self.command} is not used by this server")

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed  # noqa: N815


class ExplorerServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer bound to 127.0.0.1 that serves one :class:`Explorer`.

    Parameters
    ----------
    app : Explorer
        The application served.
    port : int
        The port on 127.0.0.1 (0: any free port).
    verbose : bool
        Log every request on stderr.

    Examples
    --------
    >>> import urllib.request
    >>> import quiltpriv as qp
    >>> from quiltpriv.explorer import Explorer, ExplorerServer
    >>> server = ExplorerServer(Explorer(qp.load_model("student"), "student"))
    >>> thread = server.start_in_thread()
    >>> with urllib.request.urlopen(server.url) as page:
    ...     page.status, page.headers["Content-Type"]
    (200, 'text/html; charset=utf-8')
    >>> server.stop()
    """

    daemon_threads = True
    allow_reuse_address = False

    def __init__(self, app: Explorer, port: int = 0, verbose: bool = False) -> None:
        self.app = app
        self.verbose = verbose
        super().__init__((HOST, port), _Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        """The page's address, with the access token."""
        return f"http://{HOST}:{self.port}/?token={self.app.token}"

    def start_in_thread(self) -> threading.Thread:
        """Serve on a daemon thread (tests, notebooks); stop with :meth:`stop`."""
        t = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05},
                             name="quiltpriv-explorer", daemon=True)
        t.start()
        return t

    def stop(self) -> None:
        """Cancel running jobs, stop serving and close the socket."""
        self.app.jobs.cancel_all()
        self.shutdown()
        self.server_close()


def serve(app: Explorer, port: int = 0, open_browser: bool = True,
          verbose: bool = False) -> int:
    """Serve ``app`` until Ctrl-C; print the address (and open it in a browser).

    What ``quiltpriv explore`` runs. It blocks (and handles SIGTERM like Ctrl-C), so the
    example is not run here; :func:`quiltpriv.explorer.explore` serves on a thread instead.

    Parameters
    ----------
    app : Explorer
        The application served.
    port : int
        The port on 127.0.0.1 (0: any free port).
    open_browser : bool
        Open the page in the default browser (not under CI).
    verbose : bool
        Log every request on stderr.

    Returns
    -------
    int
        The exit status, 0.

    Examples
    --------
    >>> import quiltpriv as qp
    >>> from quiltpriv.explorer import Explorer, serve
    >>> serve(Explorer(qp.load_model("student"), "student"))  # doctest: +SKIP
    quiltpriv explorer: http://127.0.0.1:.../?token=...
    (serving on 127.0.0.1 only; press Ctrl-C to stop)
    """
    import os

    server = ExplorerServer(app, port, verbose)
    print(f"quiltpriv explorer: {server.url}", flush=True)
    print("(serving on 127.0.0.1 only; press Ctrl-C to stop)", flush=True)
    if open_browser and not os.environ.get("CI"):
        import webbrowser

        try:
            webbrowser.open(server.url)  # quietly nothing when no browser is available
        except Exception:  # webbrowser errors must not stop the server
            pass
    def terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # SIGTERM stops as cleanly as Ctrl-C

    import signal

    old = signal.signal(signal.SIGTERM, terminate)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("quiltpriv explorer: stopped", file=sys.stderr, flush=True)
    finally:
        signal.signal(signal.SIGTERM, old)
        app.jobs.cancel_all()
        server.server_close()
    return 0
