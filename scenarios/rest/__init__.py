"""Any REST service with an OpenAPI document, made into a StateEval world from a service file alone.

- `servicefile`: the TOML file that says how to start, reach and reset the service (`load`, `ServiceFile`);
- `draws`: the `{draw:...}` placeholders of the file's population;
- `schema` and `openapi`: a Swagger 2.0 or OpenAPI 3.x document read into `Operation`s;
- `dependencies`: which operation feeds which parameter of which, inferred from the document;
- `process`: a running instance (`Service`): start, ready, spec, reset, request, stop;
- `python -m scenarios.rest FILE` shows what a file gives. See docs/services.md.

Nothing here knows a particular service: all a service needs is in its file.
"""
