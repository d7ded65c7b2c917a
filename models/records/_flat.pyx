# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled check of a flat records event (issue 29: the broker and the client load
every event they route or deliver, and the check in Python was their largest cost).

:func:`flat_scalars` answers exactly as ``events._flat_scalars`` (Mühl 2002, §4.3.1: a
notification is a set of name/value attributes): a copy of the mapping when every key is a
non-empty string and every value a scalar the algebra accepts (a string without lone
surrogates, a finite float, an integer of at most ``MAX_INT_DIGITS`` digits, a boolean,
null), else None, and the Python path takes the event (and says what is wrong). Optional
like the compiled walk: without it the Python check runs, with the same answers.
"""

from cpython.dict cimport PyDict_Copy, PyDict_Next, PyDict_Size
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.object cimport PyObject

from pubsift.models.constraints.limits import has_surrogate, int_too_large

cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object)
    Py_ssize_t PyUnicode_GET_LENGTH(object)

cdef double _INF = float("inf")


def flat_scalars(dict m):
    """A copy of ``m`` if it is a flat event of scalars, else None (see the module)."""
    cdef Py_ssize_t pos = 0
    cdef PyObject* pk
    cdef PyObject* pv
    cdef object k, v
    cdef type t
    cdef double d
    cdef int overflow = 0
    if PyDict_Size(m) == 0:
        return None
    while PyDict_Next(m, &pos, &pk, &pv):
        k = <object>pk
        if type(k) is not str or PyUnicode_GET_LENGTH(k) == 0:
            return None
        if not PyUnicode_IS_ASCII(k) and has_surrogate(k):
            return None
        v = <object>pv
        t = type(v)
        if t is str:
            if not PyUnicode_IS_ASCII(v) and has_surrogate(v):
                return None
        elif t is float:
            d = PyFloat_AS_DOUBLE(v)
            if d != d or d == _INF or d == -_INF:
                return None
        elif t is int:
            PyLong_AsLongLongAndOverflow(v, &overflow)
            if overflow != 0 and int_too_large(v):
                return None
        elif v is not None and t is not bool:
            return None
    return PyDict_Copy(m)
