"""StateEval builder: fuzz stateful API-call programs, translate them, capture oracles, write the dataset."""

__version__ = "0.2.0"
