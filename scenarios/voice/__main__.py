"""`python -m scenarios.voice serve [--port N]`: the voice lab as an MCP server (stdio by default)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m scenarios.voice",
        description="The StateEval voice lab (ElevenLabs-style speech tools) as a Model Context Protocol server.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = sub.add_parser(
        "serve", help="serve the six voice tools over MCP",
        description="Serve search_voice_library, text_to_speech, speech_to_speech, speech_to_text, isolate_audio "
                    "and make_outbound_call over MCP: over stdio by default, over streamable HTTP at "
                    "http://HOST:PORT/mcp with --port. The lab starts with one recorded user speech "
                    "(id 'user_speech'); its state is readable as the resources voice://speeches and voice://calls.",
    )
    s.add_argument("--port", type=int, default=None, help="serve streamable HTTP on this port instead of stdio")
    s.add_argument("--host", default="127.0.0.1", help="address to bind with --port (default: 127.0.0.1)")
    s.add_argument("--seed", type=int, default=0, help="seed of the preloaded user speech (default: 0)")
    s.add_argument("--recording", default=None, metavar="FILE.json",
                   help="preload this recorded speech instead: a JSON list of [speaker, words] segments, e.g. a "
                        "task's stored user_speech, so that an agent can do that task over MCP")
    args = p.parse_args(argv)

    if importlib.util.find_spec("mcp") is None:
        print("the voice MCP server needs the `mcp` package; run: pip install mcp", file=sys.stderr)
        return 1
    recording = None
    if args.recording:
        try:
            recording = json.loads(Path(args.recording).read_text())
        except (OSError, ValueError) as exc:
            p.error(f"--recording {args.recording}: {exc} (give a JSON list of [speaker, words] segments)")
    from scenarios.voice.server import serve

    try:
        serve(args.port, args.host, args.seed, recording)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
