"""A broker's TCP address (``host:port``, the default port) and :class:`ConfigError`, the
error of a configuration value that cannot be used: the values the broker's configuration
(:mod:`~pubsift.adapters.broker.config`), its TLS settings, its histories and the
client's broker URLs (:func:`~pubsift.adapters.broker.frames.parse_url`) are read into,
in a module of their own so that each of those imports it without importing the others."""

from __future__ import annotations

from dataclasses import dataclass

from pubsift.core.errors import PubsiftError

#: the port of ``pubsift://host`` and of a broker with no ``listen`` (docs/protocol.md)
DEFAULT_PORT = 7400


class ConfigError(PubsiftError, ValueError):
    """A broker configuration that cannot be used; the message names the file and key."""


@dataclass(frozen=True)
class Address:
    """A TCP address ``host:port``."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str, where: str = "address") -> Address:
        """``host:port`` (IPv6 hosts in brackets: ``[::1]:7400``)."""
        if not isinstance(text, str):
            raise ConfigError(f"{where}: expected a string 'host:port', got {text!r}")
        host, sep, port = text.rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise ConfigError(f"{where}: {text!r} is not 'host:port' with a port in 0-65535")
        return cls(host, int(port))

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
