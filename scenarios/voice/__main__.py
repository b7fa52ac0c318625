"""`python -m scenarios.voice serve [--port N] [--tier frontier | --platform FILE]`: the voice lab (or the frontier
tier's speech platform) as an MCP server, over stdio by default."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

from scenarios.base import FRONTIER, PAPER, TIERS


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
    s.add_argument("--seed", type=int, default=0,
                   help="seed of the preloaded user speech, or of the drawn platform with --tier frontier (default: 0)")
    s.add_argument("--recording", default=None, metavar="FILE.json",
                   help="preload this recorded speech instead: a JSON list of [speaker, words] segments, e.g. a "
                        "task's stored user_speech, so that an agent can do that task over MCP")
    s.add_argument("--tier", choices=TIERS, default=None,
                   help="which lab to serve (default: paper, or frontier when --platform is given); frontier "
                        "without --platform draws a platform from --seed")
    s.add_argument("--platform", default=None, metavar="FILE.json",
                   help="serve the frontier platform with this stored population: a frontier voice task's test "
                        "case asset of kind 'platform' (JSON), so that an agent can do that task over MCP")
    args = p.parse_args(argv)
    if args.platform and args.tier == PAPER:
        p.error("--platform serves the frontier tier; leave out --tier paper (or give --tier frontier)")
    if args.recording and (args.platform or args.tier == FRONTIER):
        p.error("--recording preloads the paper tier's lab; the frontier platform takes --platform instead")

    if importlib.util.find_spec("mcp") is None:
        print("the voice MCP server needs the `mcp` package; run: pip install mcp", file=sys.stderr)
        return 1
    recording = None
    if args.recording:
        try:
            recording = json.loads(Path(args.recording).read_text())
        except (OSError, ValueError) as exc:
            p.error(f"--recording {args.recording}: {exc} (give a JSON list of [speaker, words] segments)")
    platform = None
    if args.platform:
        try:
            platform = json.loads(Path(args.platform).read_text())
            if not isinstance(platform, dict) or not isinstance(platform.get("voices"), list):
                raise ValueError("no 'voices' list in it")
        except (OSError, ValueError) as exc:
            p.error(f"--platform {args.platform}: {exc} (give a frontier voice task's stored platform: JSON with "
                    "'voices', 'phone_numbers' and the quota)")
    elif args.tier == FRONTIER:
        import random

        from scenarios.voice.platform import draw_population

        platform = draw_population(random.Random(args.seed))
    from scenarios.voice.server import serve

    try:
        serve(args.port, args.host, args.seed, recording, platform)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
