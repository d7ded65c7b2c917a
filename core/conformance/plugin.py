"""The pytest plugin of the conformance kit (entry point ``pytest11``, docs/conformance.md).

Loaded by every pytest run wherever pubsift is installed, so it imports nothing heavy
(hypothesis is imported inside the ``conformance_settings`` fixture only). It registers the
``conformance`` marker and the ini option ``pubsift_conformance_examples``, and provides the
default fixtures of the kit. Plugin fixtures have the lowest precedence: a model's
``conftest.py``, test module or test class overrides them. The three a model must provide
(``model``, ``filter_strategy``, ``event_strategy``) may also be given as attributes of the
test class (``model_name``, ``filters``, ``events``); when neither is there they fail with
a message saying what to provide.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

ENV_EXAMPLES = "PUBSIFT_CONFORMANCE_EXAMPLES"
ENV_HOSTILE = "PUBSIFT_HOSTILE_BATCHES"
DEFAULT_HOSTILE_BATCHES = 2
DEFAULT_HOSTILE_BATCH_SIZE = 12
INI_EXAMPLES = "pubsift_conformance_examples"
DEFAULT_EXAMPLES = 40

_REQUIRED = {
    "model": (
        'the FilterModel instance under test, e.g. `return load_model("mymodel")`',
        "model_name",
    ),
    "filter_strategy": ("a hypothesis strategy generating the model's filters", "filters"),
    "event_strategy": ("a hypothesis strategy generating the model's (parsed) events", "events"),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        INI_EXAMPLES,
        f"hypothesis max_examples per conformance check (default {DEFAULT_EXAMPLES}; "
        f"the environment variable {ENV_EXAMPLES} overrides it)",
        default=str(DEFAULT_EXAMPLES),
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "conformance: a check of pubsift's filter-model conformance kit"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test class may list checks its model is known to fail today in
    ``known_failures = {"test_name": "reason (issue, item)"}``: they are marked
    ``xfail(strict=False)``, so the suite stays green and reports XPASS once fixed."""
    for item in items:
        known = getattr(getattr(item, "cls", None), "known_failures", None)
        name = getattr(item, "originalname", item.name)
        if known and name in known:
            item.add_marker(pytest.mark.xfail(reason=known[name], strict=False))


def _from_class(request: pytest.FixtureRequest, fixture: str) -> Any:
    """The test class's attribute standing for ``fixture`` (``model_name``, ``filters``,
    ``events``), or a failure saying what to provide."""
    what, attribute = _REQUIRED[fixture]
    value = getattr(request.cls, attribute, None)
    if value is None:
        pytest.fail(
            f"pubsift conformance kit: provide a `{fixture}` fixture ({what}) in your "
            f"conftest.py, test module or test class, or set `{attribute}` on the test "
            "class; see docs/conformance.md",
            pytrace=False,
        )
    return value


@pytest.fixture
def model(request: pytest.FixtureRequest) -> Any:
    """The filter model under test: the fixture of the model's tests, else the model
    registered under the test class's ``model_name`` (entry point ``pubsift.models``)."""
    from pubsift.core.registry import load_model

    return load_model(_from_class(request, "model"))


@pytest.fixture
def filter_strategy(request: pytest.FixtureRequest) -> Any:
    """Strategy of filters: the fixture of the model's tests, else the test class's
    ``filters``."""
    return _from_class(request, "filter_strategy")


@pytest.fixture
def event_strategy(request: pytest.FixtureRequest) -> Any:
    """Strategy of events: the fixture of the model's tests, else the test class's
    ``events``."""
    return _from_class(request, "event_strategy")


@pytest.fixture
def matching_event(model: Any, event_strategy: Any) -> Any:
    """f -> strategy of events matching f. Default: the events of ``event_strategy`` that
    match f (every event the kit builds is verified with ``matches`` anyway). Provide a
    builder when random events rarely match a filter: hypothesis then gives up on the
    example, and a claimed relation that never met a matching event fails as vacuous."""
    return lambda f: event_strategy.filter(lambda e: model.matches(f, e))


@pytest.fixture
def capabilities(model: Any) -> frozenset[str]:
    """What the model claims (see ``pubsift.core.model.CAPABILITIES``); the kit skips the
    checks of what is not claimed. Override to test less (or more) than the model claims."""
    return frozenset(model.capabilities)


@pytest.fixture
def max_examples(request: pytest.FixtureRequest) -> int:
    """hypothesis examples per check: ``$PUBSIFT_CONFORMANCE_EXAMPLES``, else the ini option
    ``pubsift_conformance_examples``, else 40."""
    raw = os.environ.get(ENV_EXAMPLES) or request.config.getini(INI_EXAMPLES)
    where = ENV_EXAMPLES if os.environ.get(ENV_EXAMPLES) else INI_EXAMPLES
    try:
        n = int(raw)
    except (TypeError, ValueError):
        n = 0
    if n < 1:
        pytest.fail(
            f"pubsift conformance kit: {where}={raw!r} is not a positive integer", pytrace=False
        )
    return n


@pytest.fixture
def conformance_settings(max_examples: int) -> Any:
    """The hypothesis settings every check runs under (no deadline, no example database)."""
    from hypothesis import HealthCheck, settings

    return settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
    )


@pytest.fixture
def conformance_kit(
    model: Any,
    filter_strategy: Any,
    event_strategy: Any,
    matching_event: Any,
    capabilities: frozenset[str],
) -> Any:
    """The model's fixtures bundled as a :class:`pubsift.core.conformance.kit.Kit`."""
    from pubsift.core.conformance.kit import Kit

    return Kit(model, filter_strategy, event_strategy, matching_event, frozenset(capabilities))


@pytest.fixture
def hostile_inputs() -> Any:
    """Optional: a hypothesis strategy of the model's own hostile inputs, as
    :class:`pubsift.core.conformance.mutations.Case` values, run by the hostile-input suite
    besides the generic ones. Default: None (that test is skipped)."""
    return None


@pytest.fixture
def hostile_batches() -> int:
    """Batches of hostile cases per hostile-input test (hypothesis examples):
    ``$PUBSIFT_HOSTILE_BATCHES``, else 2. Raise it in a slow-marked class for a deeper run."""
    raw = os.environ.get(ENV_HOSTILE) or str(DEFAULT_HOSTILE_BATCHES)
    if not raw.isdigit() or int(raw) < 1:
        pytest.fail(
            f"pubsift conformance kit: {ENV_HOSTILE}={raw!r} is not a positive integer",
            pytrace=False,
        )
    return int(raw)


@pytest.fixture
def hostile_batch_size() -> int:
    """Hostile cases run together in one sandboxed child process (default 12)."""
    return DEFAULT_HOSTILE_BATCH_SIZE


@pytest.fixture
def hostile_limits() -> Any:
    """Per-case bounds of the hostile-input suite: a
    :class:`pubsift.core.conformance.sandbox.Limits` (default: 10 s, 1 GiB of address space
    beyond what the test process already uses)."""
    from pubsift.core.conformance.sandbox import Limits

    return Limits()


@pytest.fixture
def hostile_settings(conformance_settings: Any, hostile_batches: int) -> Any:
    """The hypothesis settings of the hostile-input suite: ``conformance_settings`` with
    ``hostile_batches`` examples and no shrinking (a failure already names its input and
    how it was made; shrinking would re-run sandboxed batches for minutes)."""
    from hypothesis import Phase, settings

    return settings(
        conformance_settings,
        max_examples=hostile_batches,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
    )
