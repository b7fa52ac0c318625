"""The names the session scenario's programs share, defined once for the state machine (`machine.py`) and the
frontier programs (`tasks/`): the kinds of value a program's variables hold (`Var.type`) and the asset its stored
sessions travel in."""

SOURCE, DATA, EMAIL, SESSIONS, SID, STATUS = "source", "data", "email", "sessions", "sid", "status"
TITLE = "title"  # a session's title (the frontier programs' `title1`)
ASSET = "sessions"  # the stored initial sessions; `SessionWorld.reset` loads them into the service
