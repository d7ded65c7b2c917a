"""pubsift.models — the built-in filter models (records, xml, concepts)."""
