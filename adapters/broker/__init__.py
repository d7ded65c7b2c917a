"""The broker daemon, its client library and command line: the
unchanged :class:`pubsift.core.broker.Broker` behind asyncio streams.

``config``      broker.toml -> :class:`BrokerConfig`
``frames``      the length-prefixed JSON frame format (docs/protocol.md)
``connection``  one peer (client or neighbour broker) over one stream
``backoff``     exponential backoff with jitter for re-dialling
``links``       neighbour links: reach sets, cycle refusal, dialling
``daemon``      :class:`BrokerDaemon`: the Broker, its Port, leases in real time
``auth``        identities (tokens, client certificates) and authorized filters
``tls``         ``[tls]``: TLS contexts, certificate names, the TLS port's listener
``client``      :class:`AsyncClient` and the synchronous :class:`Client`
``gateway``     the HTTP gateway: POST to publish, Server-Sent Events to subscribe
``feedpub``     polling feeds and publishing each new item once (``publish-feed``)
``cli``         ``pubsift broker``, ``sub``, ``pub``, ``publish-feed``

Nothing heavy is imported here: ``from pubsift.adapters.broker.client import connect``.
"""
