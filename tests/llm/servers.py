"""A loopback HTTP server that plays OpenAI's and Anthropic's APIs from a script.

``ScriptedServer`` binds 127.0.0.1 on a free port, answers ``POST /v1/chat/completions``
and ``POST /v1/messages`` with the next scripted :class:`Answer` (any path takes the next
answer: the script is one queue), and records every request (path, headers, JSON body) so
tests can assert what the SDK sent. Nothing here touches the network.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs


@attrs.frozen
class Answer:
    """One scripted HTTP answer: status, JSON body, extra headers, and a delay in seconds
    before answering (to outlast a client's timeout)."""

    status: int = 200
    body: Any = attrs.Factory(dict)
    headers: dict[str, str] = attrs.Factory(dict)
    delay: float = 0.0
    #: Server-sent events instead of a JSON body: (event name or None, data), sent one by
    #: one, ``gap`` seconds apart (streaming replies).
    events: tuple[tuple[str | None, Any], ...] | None = None
    gap: float = 0.0
    #: A stream that breaks: it promises more bytes than it sends, stops before its last
    #: three events (the end, the usage, ``[DONE]``), and the connection closes (a
    #: transport error mid-stream, not a stream that ended).
    broken: bool = False
    #: Seconds between 16-byte pieces of a JSON body (a server trickling its answer).
    trickle: float = 0.0
    #: Seconds between a stream's headers and its first event.
    lead: float = 0.0
    #: The body's text as sent, instead of ``body`` as JSON (text no JSON encoder writes:
    #: nesting 100,000 levels deep, for example).
    raw: str | None = None


@attrs.frozen
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: Any


def openai_completion(content: str | None = None, *, refusal: str | None = None,
                      prompt_tokens: int = 11, completion_tokens: int = 7) -> Answer:
    """A chat completion whose message holds ``content`` (or a refusal)."""
    return Answer(body={
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": content, "refusal": refusal}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    })


def anthropic_message(tool_input: Any = None, *, name: str = "solution",
                      refusal: str | None = None, text_only: str | None = None,
                      input_tokens: int = 13, output_tokens: int = 5) -> Answer:
    """A messages reply: one ``tool_use`` block, a refusal, or text without the tool."""
    if refusal is not None:
        content: list[Any] = [{"type": "text", "text": refusal}]
        stop = "refusal"
    elif text_only is not None:
        content = [{"type": "text", "text": text_only}]
        stop = "end_turn"
    else:
        content = [{"type": "tool_use", "id": "toolu_1", "name": name, "input": tool_input}]
        stop = "tool_use"
    return Answer(body={
        "id": "msg_1", "type": "message", "role": "assistant", "model": "test-model",
        "content": content, "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    })


def pieces(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of ``size`` characters (the last one shorter)."""
    return [text[i:i + size] for i in range(0, len(text), size)]


def openai_stream(content: str, *, size: int = 7, gap: float = 0.0,
                  prompt_tokens: int = 11, completion_tokens: int = 7) -> Answer:
    """A streamed chat completion (SSE): ``content`` in pieces of ``size`` characters,
    then a usage chunk and ``[DONE]``."""
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
                "model": "test-model",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": ""}))]
    events += [(None, chunk({"content": piece})) for piece in pieces(content, size)]
    events.append((None, chunk({}, "stop")))
    events.append((None, {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
                          "model": "test-model", "choices": [],
                          "usage": {"prompt_tokens": prompt_tokens,
                                    "completion_tokens": completion_tokens,
                                    "total_tokens": prompt_tokens + completion_tokens}}))
    events.append((None, "[DONE]"))
    return Answer(events=tuple(events), gap=gap)


def anthropic_stream(tool_input: Any, *, name: str = "solution", size: int = 7,
                     gap: float = 0.0, input_tokens: int = 13, output_tokens: int = 5,
                     text: str | None = None) -> Answer:
    """A streamed messages reply (SSE): one ``tool_use`` block whose input arrives as
    ``input_json_delta`` pieces of ``size`` characters (or ``text`` pieces: a reply without
    the tool)."""
    events: list[tuple[str | None, Any]] = [("message_start", {
        "type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "test-model",
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1}}})]
    if text is None:
        events.append(("content_block_start", {
            "type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}}))
        events += [("content_block_delta", {
            "type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": piece}})
            for piece in pieces(json.dumps(tool_input), size)]
    else:
        events.append(("content_block_start", {
            "type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}))
        events += [("content_block_delta", {
            "type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": piece}}) for piece in pieces(text, size)]
    events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
               ("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": "tool_use" if text is None
                                            else "end_turn", "stop_sequence": None},
                                  "usage": {"output_tokens": output_tokens}}),
               ("message_stop", {"type": "message_stop"})]
    return Answer(events=tuple(events), gap=gap)


def error(status: int, message: str = "try again", *, retry_after: str | None = None,
          delay: float = 0.0) -> Answer:
    """An error answer in the providers' shape, with an optional ``retry-after``."""
    headers = {} if retry_after is None else {"retry-after": retry_after}
    return Answer(status=status, headers=headers, delay=delay, body={
        "type": "error", "error": {"type": "api_error", "message": message}})


class ScriptedServer:
    """The server; use :func:`serve`. ``requests`` lists what it received, in order."""

    def __init__(self, answers: list[Answer]) -> None:
        self.answers = list(answers)
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                with server._lock:
                    server.requests.append(Recorded(
                        self.path, {k.lower(): v for k, v in self.headers.items()},
                        json.loads(raw) if raw else None))
                    answer = server.answers.pop(0) if server.answers else error(
                        500, "the test server's script is used up")
                if answer.delay and server._stop.wait(answer.delay):
                    return
                if answer.events is not None:
                    self._stream(answer)
                    return
                payload = (json.dumps(answer.body) if answer.raw is None else answer.raw).encode()
                try:
                    self.send_response(answer.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for key, value in answer.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    step = 16 if answer.trickle else len(payload)
                    for start in range(0, len(payload), step):
                        self.wfile.write(payload[start:start + step])
                        self.wfile.flush()
                        if answer.trickle and server._stop.wait(answer.trickle):
                            return
                except OSError:
                    pass  # the client gave up (a timeout test): nothing to answer

            def _stream(self, answer: Answer) -> None:
                try:
                    self.send_response(answer.status)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("cache-control", "no-cache")
                    if answer.broken:
                        self.send_header("content-length", str(10 ** 6))
                    self.end_headers()
                    self.wfile.flush()
                    if answer.lead and server._stop.wait(answer.lead):
                        return
                    events = answer.events or ()
                    for name, data in events[:-3] if answer.broken else events:
                        text = data if isinstance(data, str) else json.dumps(data)
                        head = "" if name is None else f"event: {name}\n"
                        self.wfile.write(f"{head}data: {text}\n\n".encode())
                        self.wfile.flush()
                        if answer.gap and server._stop.wait(answer.gap):
                            return
                except OSError:
                    pass  # the client went away

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.root_url = f"http://127.0.0.1:{self.port}"  # Anthropic adds /v1/messages
        self.base_url = self.root_url + "/v1"  # OpenAI adds /chat/completions

    def close(self) -> None:
        """Stop answering and release the port."""
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def serve(answers: list[Answer]) -> Iterator[ScriptedServer]:
    """A running :class:`ScriptedServer` for the ``with`` block."""
    server = ScriptedServer(answers)
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.close()
        thread.join()
