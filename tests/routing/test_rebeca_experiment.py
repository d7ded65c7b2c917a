"""Mühl's experiments (Mühl 2002, Large-Scale Content-Based Publish/Subscribe Systems, ch. 6:
the figures to reproduce) on the routing core.

Oracles: the seed's analytical values (106·x and 106 messages per change, P_avg = 3.73,
the factor 28.4, Table 6.2, the limits 212,000, |V| - 1 and one entry per neighbour), the
exact count of remote entries a perfect algorithm must hold for the generated consumers
(:mod:`pubsift.experiments.analytic`), differential runs (covering = identity with
quote subscriptions; merging with intervals = identity with quotes; the symbol-partitioned
index = the records index), and the linear scan for the index.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pubsift.core.index import LinearIndex
from pubsift.core.registry import load_model
from pubsift.core.topology import hierarchy
from pubsift.experiments import analytic
from pubsift.experiments.consumers import TABLE_6_3, quote, quote_interval, subnet_range
from pubsift.experiments.partitioned import PartitionedModel, SymbolIndex
from pubsift.experiments.rebeca import Experiment, Setup, axis
from pubsift.experiments.rebeca_cli import add_arguments
from pubsift.models.constraints.constraints import Constraint, Interval, Op
from pubsift.models.records.filters import RecordFilter
from rich.console import Console

V = 107
RECORDS = load_model("records")


def grown(setup: Setup, per_broker: int = 1) -> Experiment:
    exp = Experiment(setup)
    exp.grow(per_broker)
    return exp


# -- topology and analytical values -----------------------------------------------------------
def test_p_avg_is_3_73_with_the_source_at_the_root_and_6_78_at_a_leaf_local_broker():
    topo = hierarchy()
    assert (len(topo.routers), len(topo.access), len(topo.brokers)) == (40, 67, V)
    p = analytic.average_path_length(topo, "r0", topo.access)
    assert p == Fraction(54 * 4 + 9 * 3 + 3 * 2 + 1 * 1, 67) and round(float(p), 2) == 3.73
    assert round((V - 1) / float(p), 1) == 28.4
    leaf_local = next(b for b in topo.access if topo.level[topo.router_of[b]] == 4)
    worst = analytic.average_path_length(topo, leaf_local, topo.access)
    assert worst == Fraction(1 * 2 + 1 * 3 + 5 * 4 + 3 * 5 + 14 * 6 + 6 * 7 + 36 * 8, 67)
    assert round(float(worst), 2) == 6.78


def test_limits_of_the_seed():
    assert analytic.identity_limit(V, 1000, False) == 212_000
    assert analytic.identity_limit(V, 1000, True) == 106_000
    assert analytic.merging_limit(V, True) == V - 1
    assert analytic.merging_limit(V, False) == 2 * (V - 1)
    assert analytic.locality_limit(V, 1000, 1.0, True) == 105_000


@pytest.mark.parametrize(
    "d, ranges",
    [
        (Fraction(1, 3), [(0, 333), (333, 667), (667, 1000)]),
        (0.4, [(0, 400), (300, 700), (600, 1000)]),
        (0.5, [(0, 500), (250, 750), (500, 1000)]),
        (0.6, [(0, 600), (200, 800), (400, 1000)]),
        (0.7, [(0, 700), (150, 850), (300, 1000)]),
        (0.8, [(0, 800), (100, 900), (200, 1000)]),
        (0.9, [(0, 900), (50, 950), (100, 1000)]),
        (1.0, [(0, 1000)] * 3),
    ],
)
def test_table_6_3_subnet_interests(d, ranges):
    assert d in TABLE_6_3
    assert [subnet_range(i, float(d), 1000) for i in range(3)] == ranges


def test_bad_parameters_are_refused_clearly():
    with pytest.raises(ValueError, match="locality d must lie in"):
        subnet_range(0, 0.2, 1000)
    with pytest.raises(ValueError, match="unknown strategy 'flooding'"):
        Experiment(Setup("flooding", False))
    with pytest.raises(ValueError, match="at least 1"):
        axis(0, 10)
    assert axis(200, 20) == [1, *range(20, 201, 20)]


# -- simple routing (§6.3.1, §6.3.2, §6.4.1, §6.4.2) ------------------------------------------
def test_simple_routing_stores_every_subscription_on_every_other_broker():
    exp = grown(Setup("simple", False, per_consumer=2))
    p = exp.measure(toggles=3)
    assert p.active_subscriptions == 134
    assert p.remote_entries == (V - 1) * p.active_subscriptions == p.expected_entries
    assert p.admin_per_change == V - 1 and p.changes == 12


def test_simple_routing_with_advertisements_p_avg_factor_28_4_and_table_6_2():
    exp = grown(Setup("simple", True, per_consumer=3), per_broker=2)
    p = exp.measure(toggles=len(exp.consumers))  # every consumer: the exact average
    x = p.active_subscriptions
    assert x == 402
    assert p.remote_entries == Fraction(250, 67) * x == p.expected_entries
    assert p.admin_per_change == pytest.approx(250 / 67, abs=1e-4)
    assert round((V - 1) * x / p.remote_entries, 1) == 28.4
    # Table 6.2: a level-k router holds x / 3^(k-1) (1.00, 0.33, 0.10, 0.03); local brokers none
    assert p.root_entries == x
    assert [round(v / x, 2) for v in (p.level2_entries, p.level3_entries, p.level4_entries)] == [
        0.33,
        0.10,
        0.03,
    ]
    assert p.local_broker_entries == 0


# -- identity, covering, merging ----------------------------------------------------------------
@pytest.mark.parametrize("adv", [False, True])
def test_identity_based_routing_holds_one_entry_per_stock_and_side(adv):
    exp = grown(Setup("identity", adv, stocks=100, per_consumer=4))
    p = exp.measure(toggles=10)
    assert p.remote_entries == p.expected_entries
    assert p.remote_entries < analytic.identity_limit(V, 100, adv)
    simple = 250 * 4 if adv else (V - 1) * 268
    assert p.remote_entries < simple  # identical filters are stored once
    assert p.admin_per_change < (250 / 67 if adv else V - 1)


@pytest.mark.parametrize("adv", [False, True])
def test_covering_behaves_exactly_like_identity_with_quote_subscriptions(adv):
    """§6.3.5 / §6.4.5: a quote subscription covers another iff they are identical."""
    a = grown(Setup("identity", adv, stocks=100, per_consumer=3)).measure(toggles=5)
    b = grown(Setup("covering", adv, stocks=100, per_consumer=3)).measure(toggles=5)
    assert (a.remote_entries, a.admin_per_change) == (b.remote_entries, b.admin_per_change)


@pytest.mark.parametrize("adv", [False, True])
def test_merging_with_quote_intervals_equals_identity_with_quotes(adv):
    """§6.3.7 / §6.3.8: intervals of one stock always merge, so merging keeps one entry per
    stock and side; the consumers pick the same stocks in both runs."""
    small = {"stocks": 30, "per_consumer": 2}
    merging = grown(Setup("merging", adv, "quote-interval", **small)).measure(toggles=3)
    identity = grown(Setup("identity", adv, "quote", **small)).measure(toggles=3)
    assert merging.remote_entries == merging.expected_entries == identity.remote_entries
    covering = grown(Setup("covering", adv, "quote-interval", **small)).measure(toggles=3)
    assert covering.remote_entries >= merging.remote_entries


@pytest.mark.parametrize("adv", [False, True])
def test_merging_with_quote_subscriptions_one_entry_per_neighbour(adv):
    """§6.3.7: at most one remote entry per neighbour; with advertisements Σ|R| ≤ |V| - 1."""
    exp = Experiment(Setup("merging", adv, "quote", stocks=30, per_consumer=1))
    exp.grow(1)
    for name, (_, remote) in exp.net.table_sizes().items():
        assert remote <= len(exp.topology.neighbours(name))
    p = exp.measure(toggles=2)
    assert p.remote_entries == p.expected_entries == analytic.merging_limit(V, adv)


# -- locality (§6.5.1) ----------------------------------------------------------------------------
@pytest.mark.parametrize("adv", [False, True])
def test_locality_disjoint_interests(adv):
    d = 1 / 3
    small = {"stocks": 120, "per_consumer": 3}
    exp = grown(Setup("identity", adv, locality=d, **small))
    assert "l0" not in exp.brokers and len(exp.brokers) == 66
    p = exp.measure(toggles=5, traffic=True)
    assert p.remote_entries == p.expected_entries
    assert p.remote_entries <= analytic.locality_limit(V, 120, d, adv)
    uniform = grown(Setup("identity", adv, locality=1.0, **small)).measure(toggles=5, traffic=True)
    assert uniform.remote_entries == uniform.expected_entries
    assert 0 < uniform.saved_traffic < p.saved_traffic < 1


# -- the partitioned index ----------------------------------------------------------------------
def _filters() -> st.SearchStrategy[RecordFilter]:
    sym = st.integers(0, 4)
    t = st.sampled_from([0.0, 5.0, 10.0, 25.0])
    interval = st.builds(quote_interval, sym, t, t)
    merged = st.sets(sym, min_size=2, max_size=3).map(
        lambda s: RecordFilter.of(
            {"symbol": Constraint(Op.IN_SET, frozenset(("str", f"S{i:03d}") for i in s))}
        )
    )
    price_only = st.sampled_from([40.0, 50.0]).map(
        lambda lo: RecordFilter.of({"price": Constraint(Op.IN_RANGE, Interval(lo, 60.0))})
    )
    prefix = st.just(RecordFilter.of({"symbol": Constraint(Op.PREFIX, "S00")}))
    return st.one_of(
        st.builds(quote, sym), interval, merged, price_only, prefix, st.just(RecordFilter())
    )


@settings(max_examples=60, deadline=None)
@given(
    pairs=st.lists(st.tuples(_filters(), st.sampled_from("abc")), max_size=14),
    gone=st.integers(0, 4),
    probes=st.lists(_filters(), min_size=1, max_size=4),
    sym=st.integers(0, 5),
    price=st.sampled_from([30.0, 45.0, 50.0, 58.0]),
)
def test_symbol_index_answers_equal_the_linear_scan(pairs, gone, probes, sym, price):
    model = PartitionedModel(RECORDS)
    index, linear = model.new_index(), LinearIndex(RECORDS)
    assert isinstance(index, SymbolIndex)
    for f, k in pairs:
        index.add(f, k)
        linear.add(f, k)
    for f, k in list(dict.fromkeys(pairs))[:gone]:
        index.remove(f, k)
        linear.remove(f, k)
    assert sorted(map(repr, index)) == sorted(map(repr, linear)) and len(index) == len(linear)
    event = RECORDS.parse_event({"symbol": f"S{sym:03d}", "price": price})
    assert index.match(event) == linear.match(event)
    for f in probes:
        for q in ("covering", "covered_by", "identical", "overlapping", "merge_candidates"):
            assert getattr(index, q)(f) == getattr(linear, q)(f), q


@pytest.mark.parametrize(
    "strategy, kind",
    [("identity", "quote"), ("covering", "quote-interval"), ("merging", "quote-interval")],
)
def test_partitioned_index_gives_the_figures_of_the_records_index(strategy, kind):
    def figures(index):
        exp = Experiment(Setup(strategy, True, kind, stocks=20, per_consumer=2, index=index))
        exp.grow(1)
        p = exp.measure(toggles=4)
        return p.remote_entries, p.admin_per_change, exp.net.table_sizes()

    assert figures("partitioned") == figures("records")


# -- the command ----------------------------------------------------------------------------------
def test_command_writes_csv_and_plots(tmp_path):
    parser = argparse.ArgumentParser()
    add_arguments(parser.add_subparsers().add_parser("rebeca"))
    args = parser.parse_args(
        [
            "rebeca",
            "--strategies",
            "identity",
            "--consumers",
            "2",
            "--step",
            "1",
            "--toggles",
            "2",
            "--subscriptions",
            "2",
            "--stocks",
            "100",
            "--out",
            str(tmp_path),
        ]
    )
    assert args.func(args, Console()) == 0
    with open(tmp_path / "rebeca-tables.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["advertisements"], r["consumers_per_broker"]) for r in rows] == [
        ("False", "1"),
        ("False", "2"),
        ("True", "1"),
        ("True", "2"),
    ]
    assert all(r["remote_entries"] == r["expected_entries"] for r in rows)
    for name in ("fig6_2", "fig6_5", "fig6_7", "rebeca-tables"):
        assert (tmp_path / f"{name}.png").stat().st_size > 1000


def test_command_refuses_an_unknown_strategy(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_arguments(parser.add_subparsers().add_parser("rebeca"))
    args = parser.parse_args(["rebeca", "--strategies", "flooding", "--out", str(tmp_path)])
    assert args.func(args, Console()) == 2
    assert "flooding has no routing tables" in capsys.readouterr().err


def _command(tmp_path, *argv):
    parser = argparse.ArgumentParser()
    add_arguments(parser.add_subparsers().add_parser("rebeca"))
    args = parser.parse_args(["rebeca", *argv])
    return args.func(args, Console())


def _rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


SMALL = (
    "--consumers",
    "2",
    "--step",
    "1",
    "--toggles",
    "2",
    "--subscriptions",
    "2",
    "--stocks",
    "60",
)


def test_parallel_curves_give_the_points_of_the_sequential_run(tmp_path):
    """--jobs runs curves in worker processes; the exact figures are those of one process
    (the overhead may differ only where set order differs between processes)."""
    argv = ("--strategies", "identity,merging", "--advertisements", "on", *SMALL)
    assert _command(tmp_path, *argv, "--out", str(tmp_path / "one")) == 0
    assert _command(tmp_path, *argv, "--jobs", "2", "--out", str(tmp_path / "two")) == 0
    one, two = (_rows(tmp_path / d / "rebeca-tables.csv") for d in ("one", "two"))
    key = (
        "strategy",
        "advertisements",
        "consumers_per_broker",
        "active_subscriptions",
        "remote_entries",
        "expected_entries",
        "changes",
    )
    assert [tuple(r[k] for k in key) for r in one] == [tuple(r[k] for k in key) for r in two]
    assert [r["strategy"] for r in two] == ["identity"] * 2 + ["merging"] * 2


def test_from_csv_combines_runs_into_one_csv_and_plots(tmp_path):
    assert _command(tmp_path, "--strategies", "identity", *SMALL, "--out", str(tmp_path / "a")) == 0
    assert (
        _command(
            tmp_path,
            "--strategies",
            "merging",
            "--advertisements",
            "on",
            *SMALL,
            "--out",
            str(tmp_path / "b"),
        )
        == 0
    )
    a, b = tmp_path / "a" / "rebeca-tables.csv", tmp_path / "b" / "rebeca-tables.csv"
    assert _command(tmp_path, "--from-csv", str(a), str(b), "--out", str(tmp_path / "c")) == 0
    combined = _rows(tmp_path / "c" / "rebeca-tables.csv")
    assert combined == _rows(a) + _rows(b)  # read_csv round-trips every cell
    assert (tmp_path / "c" / "fig6_3.png").stat().st_size > 1000


def test_from_csv_reports_a_bad_file_with_its_line(tmp_path, capsys):
    good = tmp_path / "good.csv"
    assert (
        _command(
            tmp_path,
            "--strategies",
            "identity",
            "--advertisements",
            "on",
            *SMALL,
            "--out",
            str(tmp_path),
        )
        == 0
    )
    text = (tmp_path / "rebeca-tables.csv").read_text().splitlines()
    head, first = text[0], text[1].split(",")
    first[7] = "many"  # remote_entries
    good.write_text("\n".join([head, ",".join(first)]) + "\n")
    assert _command(tmp_path, "--from-csv", str(good), "--out", str(tmp_path / "o")) == 2
    err = " ".join(capsys.readouterr().err.split())  # rich wraps long lines
    assert "good.csv, line 2" in err and "expected an integer, got 'many'" in err
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    assert (
        _command(tmp_path, "--from-csv", str(tmp_path / "other.csv"), "--out", str(tmp_path / "o"))
        == 2
    )
    assert "not a rebeca CSV (missing columns: experiment" in " ".join(
        capsys.readouterr().err.split()
    )
    assert (
        _command(tmp_path, "--from-csv", str(tmp_path / "absent.csv"), "--out", str(tmp_path / "o"))
        == 2
    )
    assert "cannot read" in " ".join(capsys.readouterr().err.split())


def test_a_failing_curve_in_a_worker_is_reported_with_its_name(tmp_path, capsys):
    """Too few stocks for the subscriptions: the worker's error reaches the command line."""
    argv = (
        "--strategies",
        "identity",
        "--consumers",
        "1",
        "--subscriptions",
        "5",
        "--stocks",
        "3",
        "--jobs",
        "2",
        "--out",
        str(tmp_path),
    )
    assert _command(tmp_path, *argv) == 1
    err = " ".join(capsys.readouterr().err.split())
    # both curves fail; whichever worker reports first is named
    assert re.search(
        r"error: curve identity( \+ adv)? \(quote\): ValueError: 5 distinct "
        r"subscriptions need at least 5 stocks, got 3",
        err,
    ), err


def test_a_missing_matplotlib_is_named_with_its_extra_before_any_work(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # find_spec: not installed
    assert _command(tmp_path, "--strategies", "identity", *SMALL, "--out", str(tmp_path / "o")) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "the plots need matplotlib" in err and "pip install 'pubsift[plot]'" in err
    assert not (tmp_path / "o").exists()  # nothing was run


def test_a_failure_while_plotting_keeps_the_csv_and_the_summary(tmp_path, capsys, monkeypatch):
    from pubsift.experiments import figures

    def broken(*_):
        raise RuntimeError("no display")

    monkeypatch.setattr(figures, "plot", broken)
    assert (
        _command(
            tmp_path,
            "--strategies",
            "identity",
            "--advertisements",
            "on",
            *SMALL,
            "--out",
            str(tmp_path),
        )
        == 1
    )
    captured = capsys.readouterr()
    assert "Mühl ch. 6 reproduced" in captured.out
    err = " ".join(captured.err.split())
    assert "the plots failed (RuntimeError: no display)" in err
    assert len(_rows(tmp_path / "rebeca-tables.csv")) == 2


def test_jobs_must_be_positive(tmp_path, capsys):
    assert _command(tmp_path, "--jobs", "0", "--out", str(tmp_path)) == 2
    assert "--jobs must be at least 1" in " ".join(capsys.readouterr().err.split())


# -- convergence (slow) ---------------------------------------------------------------------------
@pytest.mark.slow
def test_identity_based_routing_converges_to_212_000():
    """§6.3.3: Σ|R| converges to 2·m·(|V|-1) = 212,000 (m·(|V|-1) with advertisements).
    At 200 consumers per local broker (x = 134,000) a local broker's consumers name 1000 ·
    (1 - 0.99^200) ≈ 866 stocks, so Σ|R| is about 95 % (91 % with advertisements) of it."""
    for adv in (False, True):
        limit = analytic.identity_limit(V, 1000, adv)
        exp = Experiment(Setup("identity", adv))
        seen = []
        for n in (20, 100, 200):
            exp.grow(n)
            p = exp.measure(toggles=5)
            assert p.remote_entries == p.expected_entries <= limit
            seen.append(p.remote_entries)
        assert seen == sorted(seen) and seen[-1] > 0.9 * limit
