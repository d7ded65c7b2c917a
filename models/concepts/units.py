"""Units of measure: the ONE pint registry every context and conversion shares, unit
names in canonical form, and UN/ECE Recommendation 20 codes (as used by UBL's
``unitCode``) mapped to pint units.

Conversion functions "attached to the concept definition" (Cilia et al. 2004, §4.1) are, for
quantities, pint conversions: they are fixed in time and order-preserving, so they take part
in covering (see :mod:`pubsift.models.concepts.covering`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import lru_cache

import pint
from pubsift.core.errors import ConversionError
from pubsift.models.concepts.limits import MAX_EXPONENT, MAX_UNIT_LENGTH, text_problem

UREG: pint.UnitRegistry = pint.UnitRegistry(autoconvert_offset_to_baseunit=True)
"""The shared unit registry (pint quantities from different registries cannot be mixed)."""
UREG.define("dozen = 12 * count = dz")

#: UN/ECE Rec. 20 common codes (and the informal codes found in UBL 1.0 samples) -> pint.
#: :func:`unece_units_from_qudt` derives the full table from QUDT's ``qudt:uneceCommonCode``.
UNECE: dict[str, str] = {
    "KGM": "kilogram",
    "GRM": "gram",
    "MGM": "milligram",
    "TNE": "metric_ton",
    "LBR": "pound",
    "ONZ": "ounce",
    "STN": "short_ton",
    "LTN": "long_ton",
    "MTR": "meter",
    "CMT": "centimeter",
    "MMT": "millimeter",
    "KMT": "kilometer",
    "INH": "inch",
    "FOT": "foot",
    "YRD": "yard",
    "SMI": "mile",
    "NMI": "nautical_mile",
    "LTR": "liter",
    "MLT": "milliliter",
    "MTQ": "meter ** 3",
    "GLL": "gallon",
    "MTK": "meter ** 2",
    "FTK": "foot ** 2",
    "CEL": "degree_Celsius",
    "FAH": "degree_Fahrenheit",
    "KEL": "kelvin",
    "C62": "count",
    "EA": "count",
    "H87": "count",
    "DZN": "dozen",
    "SEC": "second",
    "MIN": "minute",
    "HUR": "hour",
    "DAY": "day",
    # informal codes in the UBL 1.0 examples
    "kg": "kilogram",
    "feet": "foot",
    "inches": "inch",
    "days": "day",
    "unit": "count",
    "UNIT": "count",
}


def canonical_unit(text: str) -> str:
    """The canonical pint name of a unit given as a pint expression or a UN/ECE code.

    Raises :class:`ConversionError` for an unknown unit or an expression beyond the limits
    of :mod:`~pubsift.models.concepts.limits` (checked before pint evaluates it)."""
    if not isinstance(text, str):
        raise ConversionError(f"a unit is a string, not {type(text).__name__}")
    text = text.strip()
    if not text:
        raise ConversionError("a unit is a non-empty string (e.g. kg)")
    if len(text) > MAX_UNIT_LENGTH:
        raise ConversionError(
            f"unit expression of {len(text)} characters (at most {MAX_UNIT_LENGTH})"
        )
    problem = text_problem(text)
    if problem:
        raise ConversionError(f"bad unit: {problem}")
    for m in _NUMBER.finditer(text):
        exponent = m.group(1) is not None
        if not _SMALL.fullmatch(m.group(2)) or (exponent and abs(float(m.group(2))) > MAX_EXPONENT):
            raise ConversionError(
                f"unit {text!r}: numbers in a unit expression are small "
                f"(exponents up to {MAX_EXPONENT}), not {m.group(2)!r}"
            )
    return _canonical(text)


_SHAPE = (
    "write unit names joined by '*' and '/', with integer or decimal exponents "
    "after '**', e.g. 'kg', 'km / h', 'meter ** 2'"
)
_OPERATOR = re.compile(r"\*\*|\^|[*/]")
_ZERO_EXPONENT = re.compile(r"(?:\*\*|\^)\s*[-+]?\s*(?:0+(?:\.0*)?|\.0+)(?![\d.])")


def _syntax_problem(text: str) -> str | None:
    """What is wrong with the shape of a unit expression, in the user's terms, for the
    mistakes pint reports in its own terms (or not at all: ``kg ** 0`` fails inside pint)."""
    if operator := _OPERATOR.match(text):
        return f"it starts with the operator {operator.group()!r}; {_SHAPE}"
    if re.search(r"(?:\*\*|\^|[*/])\s*$", text):
        return f"it ends with an operator; {_SHAPE}"
    if _ZERO_EXPONENT.search(text):
        return "an exponent of 0 leaves no unit; write the unit without it"
    return None


def _why(exc: Exception) -> str:
    """A pint failure in the user's terms (never pint's internal exception)."""
    if isinstance(exc, OverflowError):
        return "the result is out of range"
    if isinstance(exc, pint.errors.DimensionalityError):
        return "they measure different dimensions"
    if isinstance(exc, pint.errors.OffsetUnitCalculusError):
        return "units with an offset (°C, °F) cannot be combined with other units"
    return "the unit registry cannot convert them"


_NUMBER = re.compile(r"(\*\*|\^)?\s*[-+]?\s*(\d[\d.]*(?:[eE][-+]?\d*)?)")
_SMALL = re.compile(r"\d{1,3}(?:\.\d{1,6})?")


@lru_cache(maxsize=4096)
def _canonical(text: str) -> str:
    if text in UNECE:
        text = UNECE[text]
    problem = _syntax_problem(text)
    if problem:
        raise ConversionError(f"malformed unit {text!r}: {problem}")
    try:
        unit = UREG.parse_units(text)
    except pint.errors.UndefinedUnitError as exc:
        raise ConversionError(
            f"unknown unit {text!r}: {', '.join(map(repr, exc.unit_names))} "
            "is not a unit of the registry"
        ) from None
    except Exception as exc:
        hint = (
            "a unit has no numeric factor (write it in the value)"
            if "scaling factor" in str(exc)
            else _SHAPE
        )
        raise ConversionError(f"malformed unit {text!r}: {hint}") from None
    try:
        _factor_to_base(unit)
    except ConversionError as exc:
        raise ConversionError(f"unit {text!r}: {exc}") from None
    return str(unit)


def _factor_to_base(unit) -> float:
    """The finite, non-zero factor of a unit to its SI base unit (ConversionError: none)."""
    try:
        factor = float(UREG.Quantity(1.0, unit).to_base_units().magnitude)
    except Exception as exc:
        raise ConversionError(f"no conversion to base units ({_why(exc)})") from None
    if not (math.isfinite(factor) and factor != 0):
        raise ConversionError(f"its factor to base units ({factor!r}) is out of range")
    return factor


def base_unit(unit: str) -> str:
    """The SI base unit of a canonical unit (``pound`` -> ``kilogram``)."""
    try:
        return str(UREG.Quantity(1.0, unit).to_base_units().units)
    except Exception as exc:
        raise ConversionError(f"{unit} has no base unit ({_why(exc)})") from None


@lru_cache(maxsize=4096)
def dimensionality(unit: str) -> str:
    """The pint dimensionality of a canonical unit, e.g. ``[mass]`` (``[]`` if none)."""
    dim = UREG.parse_units(unit).dimensionality
    return str(dim) if dim else "[]"


@lru_cache(maxsize=4096)
def same_dimension(dim: str, unit: str) -> bool:
    """Whether ``unit`` measures dimensionality ``dim`` (False for a malformed ``dim``,
    e.g. from an ontology)."""
    try:
        if dim == "[]":
            return not UREG.parse_units(unit).dimensionality
        return UREG.parse_units(unit).dimensionality == UREG.get_dimensionality(dim)
    except Exception:
        return False


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
        raise ConversionError(
            f"cannot convert {src} ({dimensionality(src)}) to {dst} ({dimensionality(dst)})"
        )
    q = UREG.Quantity
    if _multiplicative(src) and _multiplicative(dst):
        try:
            factor = float(q(1.0, s).to(d).magnitude)
        except Exception as exc:
            raise ConversionError(f"cannot convert {src} to {dst} ({_why(exc)})") from None
        if not (math.isfinite(factor) and factor != 0):
            raise ConversionError(f"the factor from {src} to {dst} ({factor!r}) is out of range")
        return lambda v: v * factor

    def offset(v: float) -> float:
        try:
            return float(q(v, s).to(d).magnitude)
        except Exception as exc:
            raise ConversionError(f"cannot convert {v!r} {src} to {dst} ({_why(exc)})") from None

    offset(1.0)
    return offset


def _multiplicative(unit: str) -> bool:
    try:
        return UREG.Quantity(1, unit)._is_multiplicative
    except Exception:
        return False


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
        for cand in (
            UNECE.get(str(code)),
            graph.value(unit, qudt.ucumCode),
            graph.value(unit, qudt.symbol),
        ):
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
