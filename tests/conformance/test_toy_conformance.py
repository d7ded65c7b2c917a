"""The conformance kit tested on a toy model (integer intervals, tests/conformance/
toy_intervals.py): the exact model passes every check, and each deliberately broken variant
is caught by the check for the rule it breaks — in-process, check by check, and end to end
through the pytest plugin in a separate pytest run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import toy_intervals as toy
from hypothesis import HealthCheck, Phase, settings
from pubsift.core.conformance import (
    HostileInputTests,
    ModelConformance,
    algebra,
    hostile,
    index,
    merging,
    soundness,
    wire,
)
from pubsift.core.conformance.kit import Kit, run
from pubsift.core.conformance.sandbox import Limits, run_isolated


@pytest.fixture
def model():
    return toy.IntervalModel()


@pytest.fixture
def filter_strategy():
    return toy.filters


@pytest.fixture
def event_strategy():
    return toy.events


@pytest.fixture
def matching_event():
    return toy.matching_event


class TestIntervalModel(ModelConformance):
    """The exact toy model passes the whole kit (nothing skipped: it claims everything)."""


@pytest.mark.slow
class TestIntervalModelHostileThorough(HostileInputTests):
    """The hostile-input suite with ten times the batches."""

    @pytest.fixture
    def hostile_batches(self):
        return 20


def _kit(model) -> Kit:
    return Kit(model, toy.filters, toy.events, toy.matching_event, model.capabilities)


# derandomized, so a catch is no fluke; no shrinking, which only costs time here
DETERMINISTIC = settings(
    max_examples=120,
    deadline=None,
    database=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)

CAUGHT = [
    (toy.BrokenMatches, soundness.matches_total),
    (toy.BrokenCovers, soundness.covers_sound),
    (toy.BrokenCovers, algebra.covering_implies_overlap),
    (toy.BrokenIdentical, soundness.identical_sound),
    (toy.BrokenIdentical, algebra.identical_is_mutual_covering),
    (toy.BrokenOverlaps, soundness.overlaps_sound),
    (toy.NonTransitive, algebra.covers_transitive),
    (toy.BrokenMerge, merging.perfect_merge),
    (toy.BrokenImperfectMerge, merging.imperfect_merge),
    (toy.BrokenFilterWire, wire.filter_roundtrip),
    (toy.BrokenEventWire, wire.event_roundtrip),
    (toy.BrokenFormat, wire.format_roundtrip),
    (toy.BrokenIndex, index.index_equals_linear_scan),
]


@pytest.mark.parametrize(
    "variant, check", CAUGHT, ids=[f"{v.__name__}-{c.__name__}" for v, c in CAUGHT]
)
def test_kit_catches_broken_model(variant, check):
    with pytest.raises((AssertionError, ExceptionGroup)) as caught:
        run(_kit(variant()), check, DETERMINISTIC)
    group = caught.value
    if isinstance(group, ExceptionGroup):  # hypothesis found several distinct failures
        assert group.subgroup(AssertionError) is not None, group


@pytest.mark.parametrize(
    "variant, check", CAUGHT, ids=[f"{v.__name__}-{c.__name__}" for v, c in CAUGHT]
)
def test_same_check_passes_exact_model(variant, check):
    run(_kit(toy.IntervalModel()), check, DETERMINISTIC)


# -- the hostile-input suite: raw exceptions, crashes, hangs and blow-ups are caught ---------

SHORT = Limits(case_timeout=1.0, memory=1 << 30)

HOSTILE_CAUGHT = [
    (toy.RawHugeInt, hostile.filter_texts, "ValueError: Exceeds the limit (4300 digits)"),
    (toy.RecursiveParser, hostile.filter_texts, "raised RecursionError"),
    (toy.CrashingParser, hostile.filter_texts, "crashed the process with SIGSEGV"),
    (toy.HangingParser, hostile.filter_texts, "did not finish within 1 s"),
    (toy.GreedyParser, hostile.filter_jsons, "raised MemoryError"),
]


@pytest.mark.parametrize(
    "variant, cases, message", HOSTILE_CAUGHT, ids=[v.__name__ for v, _, _ in HOSTILE_CAUGHT]
)
def test_hostile_suite_catches_and_names_the_input(variant, cases, message):
    check = hostile.hostile_batch(cases, 12, SHORT)
    with pytest.raises(AssertionError, match=re.escape(message)) as caught:
        run(_kit(variant()), check, settings(DETERMINISTIC, max_examples=60))
    assert "input: filter" in str(caught.value)


def test_kit_catches_a_failed_add_that_changes_the_index():
    with pytest.raises(
        AssertionError,
        match=r"index.add\(f\) raised a PubsiftError but "
        r"changed the index",
    ):
        run(
            _kit(toy.BrokenFailedAdd()),
            lambda kit, data: index.failed_add_changes_nothing(kit, data, 12, SHORT),
            settings(DETERMINISTIC, max_examples=60),
        )


def test_same_hostile_checks_pass_exact_model():
    for cases in (hostile.filter_texts, hostile.filter_jsons, hostile.raw_events):
        run(
            _kit(toy.IntervalModel()),
            hostile.hostile_batch(cases, 12, SHORT),
            settings(DETERMINISTIC, max_examples=8),
        )
    run(
        _kit(toy.IntervalModel()),
        lambda kit, data: index.failed_add_changes_nothing(kit, data, 12, SHORT),
        settings(DETERMINISTIC, max_examples=8),
    )


def test_sandbox_names_the_case_that_crashed_and_runs_the_ones_before():
    seen = []

    def work(case):
        seen.append(case)  # in the child: the parent's list stays empty
        if case == "boom":
            os.kill(os.getpid(), 11)
        return [f"problem with {case}"] if case == "bad" else []

    problems = run_isolated(["ok", "bad", "boom", "never"], work, lambda c: f"<{c}>", SHORT)
    assert problems == [
        "problem with bad\n    input: <bad>",
        "crashed the process with SIGSEGV (a C stack overflow or memory error?)\n    input: <boom>",
    ]
    assert seen == []


def test_builder_that_lies_is_reported():
    kit = Kit(
        toy.IntervalModel(),
        toy.filters,
        toy.events,
        lambda f: toy.events.filter(lambda e: e == f[1] + 1),
        frozenset(),
    )
    with pytest.raises(AssertionError, match=r"the builder .or matches. is wrong"):
        run(kit, soundness.covers_sound, DETERMINISTIC)


# -- end to end through the pytest plugin ---------------------------------------------------

RUN = textwrap.dedent("""
    import pytest
    from hypothesis import Phase, settings
    import toy_intervals as toy
    from pubsift.core.conformance import HostileInputTests, ModelConformance

    @pytest.fixture
    def conformance_settings():
        return settings(max_examples=60, deadline=None, database=None, derandomize=True,
                        phases=[Phase.explicit, Phase.generate])

    class Fixtures:
        @pytest.fixture
        def filter_strategy(self):
            return toy.filters

        @pytest.fixture
        def event_strategy(self):
            return toy.events

        @pytest.fixture
        def matching_event(self):
            return toy.matching_event

    class TestBrokenCovers(Fixtures, ModelConformance):
        @pytest.fixture
        def model(self):
            return toy.BrokenCovers()

    class TestClaimsNothing(Fixtures, ModelConformance):
        @pytest.fixture
        def model(self):
            m = toy.IntervalModel()
            m.capabilities = frozenset()
            return m

    class TestNoFixtures(ModelConformance):
        pass
""")


@pytest.fixture(scope="module")
def plugin_run(tmp_path_factory) -> str:
    tmp = tmp_path_factory.mktemp("kit")
    (tmp / "test_run.py").write_text(RUN)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-rA",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            str(tmp / "test_run.py"),
        ],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.stdout + done.stderr


def _outcomes(out: str, cls: str) -> dict[str, str]:
    found = re.findall(rf"^(PASSED|FAILED|SKIPPED|ERROR)\S* .*?::{cls}::(\w+)", out, re.M)
    found += [(o, t) for o, t in re.findall(rf"^(SKIPPED) \[\d+\] .*?::{cls}::(\w+)", out, re.M)]
    return {test: outcome for outcome, test in found}


def test_plugin_runs_kit_and_catches_unsound_covers(plugin_run):
    got = _outcomes(plugin_run, "TestBrokenCovers")
    failed = {t for t, o in got.items() if o == "FAILED"}
    assert failed == {
        "test_covers_sound",
        "test_identical_is_mutual_covering",
        "test_covering_implies_overlap",
    }, plugin_run
    assert {t for t, o in got.items() if o == "PASSED"} >= {
        "test_matches_total",
        "test_perfect_merge",
        "test_index_equals_linear_scan",
    }


def test_plugin_skips_what_is_not_claimed(plugin_run):
    assert "does not claim covers" in plugin_run
    assert "does not claim merge" in plugin_run
    assert re.search(r"^PASSED .*TestClaimsNothing::test_covers_sound", plugin_run, re.M)


def test_plugin_says_which_fixture_to_provide(plugin_run):
    assert re.search(r"^ERROR .*TestNoFixtures::test_covers_sound", plugin_run, re.M)
    assert "provide a `model` fixture" in plugin_run


@pytest.mark.parametrize(
    "test, capability",
    [
        ("test_covers_sound", "covers"),
        ("test_overlaps_sound", "overlaps"),
        ("test_covers_transitive", "covers"),
        ("test_perfect_merge", "merge"),
    ],
)
def test_vacuous_run_of_a_claimed_capability_fails(test, capability):
    """With filters that are never related, the check would pass without testing anything:
    the kit says so instead. (Only the capability under test is claimed: the kit would
    otherwise add chains of imperfect mergers to the pools, which do cover each other.)"""
    far_apart = toy.filters.map(lambda f: (10 * f[0], 10 * f[0]))
    kit = Kit(
        toy.IntervalModel(), far_apart, toy.events, toy.matching_event, frozenset({capability})
    )
    with pytest.raises(pytest.fail.Exception, match="vacuous check"):
        getattr(ModelConformance(), test)(kit, DETERMINISTIC)


def test_no_demand_for_what_is_not_claimed():
    kit = Kit(toy.IntervalModel(), toy.filters, toy.events, toy.matching_event, frozenset())
    kit.expect_hit("something that never happened", "covers")
