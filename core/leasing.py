"""Self-stabilization by leasing routing entries (Mühl 2002, "Large-Scale Content-Based
Publish/Subscribe Systems", §3.7).

Clients renew their subscriptions and advertisements every refresh period ρ by issuing
them again (idempotent resubscription, §3.7.2); every routing entry is granted for the
lease period π and dropped when its lease runs out. Leases must survive the renewal delay
along the longest path (3.21): π > ρ + d(δmax − δmin). From an arbitrary state the system
then delivers correctly within ΔT = δmax + d(δmax − δmin) + π (3.22).
"""

from __future__ import annotations

from dataclasses import dataclass

from pubsift.core.errors import PubsiftError


class LeaseTimingError(PubsiftError, ValueError):
    """The lease period is too short for the network's delays (condition 3.21)."""


@dataclass(frozen=True)
class Leasing:
    """Lease period π and refresh period ρ."""

    period: float
    refresh: float

    def check(self, diameter: int, delay_min: float, delay_max: float) -> None:
        """Raise :class:`LeaseTimingError` unless π > ρ + d(δmax − δmin) (3.21)."""
        if self.refresh <= 0 or self.period <= 0 or not 0 <= delay_min <= delay_max:
            raise LeaseTimingError(
                f"leasing needs π > 0, ρ > 0 and 0 ≤ δmin ≤ δmax (got π={self.period}, "
                f"ρ={self.refresh}, δ in [{delay_min}, {delay_max}])"
            )
        need = self.refresh + diameter * (delay_max - delay_min)
        if not self.period > need:
            raise LeaseTimingError(
                f"lease period π={self.period} is too short: with refresh period ρ={self.refresh}, "
                f"network diameter d={diameter} and link delays in [{delay_min}, {delay_max}], "
                f"a renewal can reach the far end of the longest path up to "
                f"ρ + d(δmax − δmin) = {need:g} after the previous one, so entries would expire "
                f"before they are renewed; choose π > {need:g} (Mühl 3.21) or a shorter ρ"
            )

    def stabilization_time(self, diameter: int, delay_min: float, delay_max: float) -> float:
        """ΔT = δmax + d(δmax − δmin) + π (3.22)."""
        return delay_max + diameter * (delay_max - delay_min) + self.period
