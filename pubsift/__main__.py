"""``python -m pubsift ...``: the ``pubsift`` command (:mod:`pubsift.cli`)."""

import sys

from pubsift.cli import main

sys.exit(main())
