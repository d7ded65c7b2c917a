"""``python -m pubsift.cli ...``: the ``pubsift`` command."""

import sys

from pubsift.cli import main

sys.exit(main())
