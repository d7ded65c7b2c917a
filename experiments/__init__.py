"""Experiments on the routing core: Mühl's REBECA evaluation reproduced (000, ch. 6).

``pubsift experiment rebeca`` (:func:`~pubsift.experiments.rebeca.add_parser`,
:func:`~pubsift.experiments.rebeca.run`).
"""
