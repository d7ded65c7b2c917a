"""Published experiments, outside the routing core: Mühl's REBECA evaluation reproduced
(Mühl 2002, "Large-Scale Content-Based Publish/Subscribe Systems", ch. 6; ``pubsift
experiment rebeca``, :mod:`pubsift.experiments.rebeca_cli`) and the quote demo on S&P 500
quotes (``pubsift demo``, :mod:`pubsift.experiments.demo`).

The experiment (:mod:`~pubsift.experiments.rebeca`), its consumers
(:mod:`~pubsift.experiments.consumers`), the analytical values
(:mod:`~pubsift.experiments.analytic`), the per-stock index
(:mod:`~pubsift.experiments.partitioned`), the runners (:mod:`~pubsift.experiments.progress`,
:mod:`~pubsift.experiments.pool`), the CSV (:mod:`~pubsift.experiments.points_csv`), the
summary (:mod:`~pubsift.experiments.summary`) and the plots
(:mod:`~pubsift.experiments.figures`) are one module each.
"""
