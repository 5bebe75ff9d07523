"""``fastmcp-temporal codec-server``: decrypted payloads for operators who hold the key.

    FASTMCP_TEMPORAL_ENCRYPTION_KEY=... fastmcp-temporal codec-server --port 8081
    temporal server start-dev --ui-codec-endpoint http://127.0.0.1:8081
    temporal workflow show -w <workflow id> --codec-endpoint http://127.0.0.1:8081

With encryption on, Temporal stores only ciphertext, so its Web UI and CLI show
``binary/encrypted`` blobs. They can call a *codec server* to turn payloads
back into JSON (Temporal's remote codec contract): ``POST {endpoint}/decode``
and ``/encode`` (also under ``/{namespace}/``, for endpoints templated with
the namespace), body and answer ``{"payloads": [...]}`` in proto3 JSON. The
Web UI calls it *from the browser*, so it answers CORS preflights for the UI's
origin. An optional bearer token guards it (``temporal ... --codec-auth
"Bearer <token>"``); keep it on a network only operators reach either way,
since whoever can call ``/decode`` reads what the key protects.
"""

from __future__ import annotations

import argparse
import hmac
import logging
import os
from collections.abc import Sequence

from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from temporalio.api.common.v1 import Payload, Payloads

from fastmcp_temporal.server.core.codec import KEY_ENV, AesGcmCodec, PayloadDecryptionError
from fastmcp_temporal.server.core.settings import env_var, load_settings, revealed

logger = logging.getLogger(__name__)

#: The Web UI of ``temporal server start-dev`` (its default UI port, both host spellings).
DEFAULT_ORIGINS = ("http://localhost:8233", "http://127.0.0.1:8233")
TOKEN_ENV = env_var("codec_token")
DEFAULT_PORT = 8081


def create_app(
    codec: AesGcmCodec,
    *,
    allow_origins: Sequence[str] = DEFAULT_ORIGINS,
    token: str | None = None,
) -> Starlette:
    """The codec server as an ASGI app (``create_app`` + any ASGI server)."""

    def authorized(request: Request) -> bool:
        if token is None:
            return True
        expected = f"Bearer {token}".encode()
        given = request.headers.get("authorization", "").encode()
        return hmac.compare_digest(given, expected)

    async def payloads_in(request: Request) -> list[Payload] | JSONResponse:
        if not authorized(request):
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        try:
            body = json_format.Parse(await request.body(), Payloads(), ignore_unknown_fields=True)
        except (json_format.ParseError, UnicodeDecodeError):
            return JSONResponse({"error": 'expected {"payloads": [...]}'}, status_code=400)
        return list(body.payloads)

    async def decode(request: Request) -> JSONResponse:
        payloads = await payloads_in(request)
        if isinstance(payloads, JSONResponse):
            return payloads
        opened: list[Payload] = []
        for payload in payloads:
            try:
                opened.extend(await codec.decode([payload]))
            except PayloadDecryptionError as err:
                # For display only: show that one payload as stored, the rest decoded.
                logger.warning("codec server: %s", err.message)
                opened.append(payload)
        return _answer(opened)

    async def encode(request: Request) -> JSONResponse:
        payloads = await payloads_in(request)
        if isinstance(payloads, JSONResponse):
            return payloads
        return _answer(await codec.encode(payloads))

    return Starlette(
        routes=[
            Route("/decode", decode, methods=["POST"]),
            Route("/encode", encode, methods=["POST"]),
            Route("/{namespace}/decode", decode, methods=["POST"]),
            Route("/{namespace}/encode", encode, methods=["POST"]),
        ],
        middleware=[
            Middleware(
                CORSMiddleware,
                allow_origins=list(allow_origins),
                allow_methods=["POST"],
                allow_headers=["content-type", "x-namespace", "authorization"],
                # The UI's "include cross-origin credentials" option needs it.
                allow_credentials=True,
            )
        ],
    )


def _answer(payloads: Sequence[Payload]) -> JSONResponse:
    return JSONResponse({"payloads": [json_format.MessageToDict(p) for p in payloads]})


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``codec-server`` to the ``fastmcp-temporal`` command."""
    parser = commands.add_parser(
        "codec-server", help="serve /decode and /encode so the Temporal UI and CLI can decrypt"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument(
        "--key", help="the key configuration (visible to `ps`: prefer --env)", default=None
    )
    parser.add_argument(
        "--env", default=None, help=f"variable holding the key configuration (default {KEY_ENV})"
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        dest="allow_origins",
        help="a Web UI origin allowed to call it (repeatable; default: the dev server's UI)",
    )
    parser.add_argument(
        "--token",
        default=None,
        help=f"require 'Authorization: Bearer <token>' (default ${TOKEN_ENV})",
    )
    parser.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    spec = key_spec(args)
    if not spec:
        raise SystemExit(f"codec-server: no key; pass --key or set ${args.env or KEY_ENV}")
    try:
        codec = AesGcmCodec.from_spec(spec)
    except ValueError as err:
        raise SystemExit(f"codec-server: {err}") from None
    origins = args.allow_origins or DEFAULT_ORIGINS
    app = create_app(codec, allow_origins=origins, token=bearer_token(args))
    logger.warning(
        "codec server on http://%s:%d (keys %s; active %r)",
        args.host,
        args.port,
        ", ".join(codec.key_ids),
        codec.active_key_id,
    )
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return 0


def key_spec(args: argparse.Namespace) -> str | None:
    """``--key``, else the variable ``--env`` names, else ``FASTMCP_TEMPORAL_ENCRYPTION_KEY``."""
    if args.key is not None:
        return args.key
    if args.env is not None:
        return os.environ.get(args.env)
    return revealed(load_settings().encryption_key)


def bearer_token(args: argparse.Namespace) -> str | None:
    """``--token``, else ``FASTMCP_TEMPORAL_CODEC_TOKEN``."""
    return args.token if args.token is not None else revealed(load_settings().codec_token)
