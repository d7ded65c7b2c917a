"""pubsift.adapters — the edges: feeds, files, Spark batch, networked runtime."""
