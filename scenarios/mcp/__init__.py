"""Any MCP server, made into a StateEval world from a server file alone (docs/services.md, "MCP servers").

- `serverfile`: the TOML file that says how to start and reset the server and what each test case starts with;
- `client`: a running server (`Server`), driven by the official SDK's stdio client: start, tools, call, reset;
- `model`: what the scenario is made of, derived from the tool listing and confirmed live (readers, keys, references);
- `machine`: the state machine (`McpScenario`), one API per kept tool; `world`: the sandbox side (`McpWorld`);
- `doc`: the documentation a model reads; `registration`: server files registered as scenarios.

Nothing here knows a particular server: all a server needs is in its file.
"""
