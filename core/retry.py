"""The backoff between attempts, for every client that retries a service (model endpoints, the Hub)."""

from __future__ import annotations

import math
import random
from typing import Callable


def backoff_s(attempt: int, base_s: float, cap_s: float = math.inf,
              jitter: Callable[[], float] = random.random) -> float:
    """Seconds to wait after failed attempt number `attempt` (1, 2, ...): `base_s` doubled each time, at most
    `cap_s`, times a random factor in [0.5, 1) so that clients that failed together do not retry together."""
    return min(cap_s, base_s * 2 ** (attempt - 1)) * (0.5 + jitter() / 2)
