"""Units of measure: the ONE pint registry every context and conversion shares, unit
names in canonical form, and UN/ECE Recommendation 20 codes (as used by UBL's
``unitCode``) mapped to pint units.

Conversion functions "attached to the concept definition" (Cilia et al., 003 §4.1) are, for
quantities, pint conversions: they are fixed in time and order-preserving, so they take part
in covering (see :mod:`pubsift.models.concepts.covering`).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import pint

from pubsift.core.errors import ConversionError

UREG = pint.UnitRegistry(autoconvert_offset_to_baseunit=True)
"""The shared unit registry (pint quantities from different registries cannot be mixed)."""
UREG.define("dozen = 12 * count = dz")

#: UN/ECE Rec. 20 common codes (and the informal codes found in UBL 1.0 samples) -> pint.
#: :func:`unece_units_from_qudt` derives the full table from QUDT's ``qudt:uneceCommonCode``.
UNECE: dict[str, str] = {
    "KGM": "kilogram", "GRM": "gram", "MGM": "milligram", "TNE": "metric_ton",
    "LBR": "pound", "ONZ": "ounce", "STN": "short_ton", "LTN": "long_ton",
    "MTR": "meter", "CMT": "centimeter", "MMT": "millimeter", "KMT": "kilometer",
    "INH": "inch", "FOT": "foot", "YRD": "yard", "SMI": "mile", "NMI": "nautical_mile",
    "LTR": "liter", "MLT": "milliliter", "MTQ": "meter ** 3", "GLL": "gallon",
    "MTK": "meter ** 2", "FTK": "foot ** 2",
    "CEL": "degree_Celsius", "FAH": "degree_Fahrenheit", "KEL": "kelvin",
    "C62": "count", "EA": "count", "H87": "count", "DZN": "dozen",
    "SEC": "second", "MIN": "minute", "HUR": "hour", "DAY": "day",
    # informal codes in the UBL 1.0 examples
    "kg": "kilogram", "feet": "foot", "inches": "inch", "days": "day",
    "unit": "count", "UNIT": "count",
}


def canonical_unit(text: str) -> str:
    """The canonical pint name of a unit given as a pint expression or a UN/ECE code.

    Raises :class:`ConversionError` for an unknown unit."""
    return _canonical(text.strip())


@lru_cache(maxsize=4096)
def _canonical(text: str) -> str:
    if text in UNECE:
        text = UNECE[text]
    try:
        unit = UREG.parse_units(text)
    except Exception as exc:  # noqa: BLE001 - pint's parser raises many kinds of errors
        raise ConversionError(f"unknown unit {text!r} ({type(exc).__name__}: {exc})") \
            from None
    return str(unit)


@lru_cache(maxsize=4096)
def dimensionality(unit: str) -> str:
    """The pint dimensionality of a canonical unit, e.g. ``[mass]`` (``[]`` if none)."""
    dim = UREG.parse_units(unit).dimensionality
    return str(dim) if dim else "[]"


@lru_cache(maxsize=4096)
def same_dimension(dim: str, unit: str) -> bool:
    if dim == "[]":
        return not UREG.parse_units(unit).dimensionality
    return UREG.parse_units(unit).dimensionality == UREG.get_dimensionality(dim)


@lru_cache(maxsize=4096)
def unit_converter(src: str, dst: str) -> Callable[[float], float]:
    """A function converting magnitudes from unit ``src`` to unit ``dst`` (both canonical).

    Multiplicative units convert by one float multiplication (so a value and a filter
    constant in the same unit convert identically); offset units (°C, °F) go through pint.
    Raises :class:`ConversionError` when the dimensions differ."""
    if src == dst:
        return _identity
    s, d = UREG.parse_units(src), UREG.parse_units(dst)
    if s.dimensionality != d.dimensionality:
        raise ConversionError(f"cannot convert {src} ({dimensionality(src)}) to {dst} "
                              f"({dimensionality(dst)})")
    q = UREG.Quantity
    if _multiplicative(src) and _multiplicative(dst):
        factor = q(1.0, s).to(d).magnitude
        return lambda v: v * factor
    return lambda v: q(v, s).to(d).magnitude


def _multiplicative(unit: str) -> bool:
    return UREG.Quantity(1, unit)._is_multiplicative


def _identity(v: float) -> float:
    return v


def unece_units_from_qudt(graph) -> dict[str, str]:
    """UN/ECE code -> canonical pint unit for every QUDT unit (``qudt:uneceCommonCode``)
    for which :data:`UNECE`'s entry, the UCUM code or the symbol is a pint unit whose factor
    to the SI base unit agrees with ``qudt:conversionMultiplier`` (relative 1e-6). ``graph`` is an rdflib
    graph holding QUDT's VOCAB_QUDT-UNITS-ALL.ttl."""
    from rdflib import Namespace

    qudt = Namespace("http://qudt.org/schema/qudt/")
    out: dict[str, str] = {}
    for unit, code in graph.subject_objects(qudt.uneceCommonCode):
        mult = graph.value(unit, qudt.conversionMultiplier)
        offset = graph.value(unit, qudt.conversionOffset)
        if mult is None or (offset is not None and float(offset) != 0.0):
            continue
        for cand in (UNECE.get(str(code)), graph.value(unit, qudt.ucumCode),
                     graph.value(unit, qudt.symbol)):
            if cand is None:
                continue
            try:
                name = canonical_unit(str(cand))
                base = UREG.Quantity(1.0, name).to_base_units().magnitude
            except (ConversionError, pint.errors.PintError, ValueError, TypeError):
                continue
            if abs(base - float(mult)) <= 1e-6 * max(abs(base), abs(float(mult))):
                out[str(code)] = name
                break
    return out


def units_from_om(graph) -> dict[str, str]:
    """OM 2 unit IRI -> canonical pint unit, for every OM unit whose ``om:symbol`` pint
    understands and whose definition ``om:hasFactor`` × ``om:hasUnit`` agrees with pint
    (relative 1e-6). ``graph`` is an rdflib graph holding OM 2 (om-2.0.rdf)."""
    from rdflib import Namespace

    om = Namespace("http://www.ontology-of-units-of-measure.org/resource/om-2/")
    out: dict[str, str] = {}
    for unit, factor in graph.subject_objects(om.hasFactor):
        ref, sym = graph.value(unit, om.hasUnit), graph.value(unit, om.symbol)
        ref_sym = graph.value(ref, om.symbol) if ref is not None else None
        if sym is None or ref_sym is None:
            continue
        try:
            name, ref_name = canonical_unit(str(sym)), canonical_unit(str(ref_sym))
            got = UREG.Quantity(1.0, name).to(ref_name).magnitude
        except (ConversionError, pint.errors.PintError, ValueError, TypeError):
            continue
        want = float(factor)
        if abs(got - want) <= 1e-6 * max(abs(got), abs(want)):
            out[str(unit)] = name
            out.setdefault(str(ref), ref_name)
    return out
