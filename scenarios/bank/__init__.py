"""The worked example of docs/adding-a-scenario.md: a tiny bank. Not built by default (`Scenario.example`)."""
