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


# -- the flat event of a JSON text ---------------------------------------------------------
# flat_event(data) reads the UTF-8 JSON text of one flat object of scalars in its common
# form, as the brokers receive events: members whose values are strings without escapes,
# numbers, true, false or null. It returns the mapping ``load_event(json.loads(data))``
# holds when that is flat (what flat_scalars accepts), else None: a text it does not
# read whole in one pass (an escape, a nested value, an integer of more than 18 digits, a
# float that overflows, a key twice, bytes that are not UTF-8, anything not JSON) goes to
# the general path, which reads it or says what is wrong. It never raises.

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_SetItem
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.string cimport memcmp
from libc.math cimport isinf

cdef extern from "Python.h":
    object PyUnicode_DecodeUTF8(const char *s, Py_ssize_t size, const char *errors)
    object PyUnicode_DecodeASCII(const char *s, Py_ssize_t size, const char *errors)
    void* PyUnicode_DATA(object)
    double PyOS_string_to_double(const char *s, char **endptr, PyObject *overflow_exception) except? -1.0
    object PyLong_FromLongLong(long long v)
    object PyFloat_FromDouble(double v)

#: short ASCII texts (keys, symbols) read before: a slot per hash of their bytes, so that
#: the same key is one str object from event to event (no new string, a cached hash)
cdef enum:
    SLOTS = 1024
    SHORT = 24

cdef PyObject* _slots[SLOTS]


cdef inline Py_ssize_t _ws(const unsigned char* s, Py_ssize_t i, Py_ssize_t n) noexcept:
    while i < n and (s[i] == 32 or s[i] == 10 or s[i] == 13 or s[i] == 9):
        i += 1
    return i


cdef inline Py_ssize_t _string_end(const unsigned char* s, Py_ssize_t i, Py_ssize_t n, bint* ascii) noexcept:
    """The position of the quote closing a string that starts at ``i`` (after its opening
    quote), or -1 where it holds an escape or a control character or does not end."""
    cdef unsigned char c
    cdef bint a = True
    while i < n:
        c = s[i]
        if c == 34:
            ascii[0] = a
            return i
        if c == 92 or c < 32:
            return -1
        if c >= 128:
            a = False
        i += 1
    return -1


cdef object _text(const unsigned char* p, Py_ssize_t size, bint ascii):
    """The str of ``size`` bytes at ``p`` (UTF-8, strict: raises on bad bytes)."""
    cdef unsigned int h
    cdef Py_ssize_t k
    cdef PyObject* hit
    if not ascii:
        return PyUnicode_DecodeUTF8(<const char*>p, size, NULL)
    if size > SHORT:
        return PyUnicode_DecodeASCII(<const char*>p, size, NULL)
    h = 2166136261u
    for k in range(size):
        h = (h ^ p[k]) * 16777619u
    h = (h ^ <unsigned int>size) & (SLOTS - 1)
    hit = _slots[h]
    if hit != NULL and PyUnicode_GET_LENGTH(<object>hit) == size and (
        memcmp(PyUnicode_DATA(<object>hit), p, size) == 0
    ):
        return <object>hit
    t = PyUnicode_DecodeASCII(<const char*>p, size, NULL)
    Py_INCREF(t)
    Py_XDECREF(hit)
    _slots[h] = <PyObject*>t
    return t


def flat_event(bytes data):
    """The flat mapping of the JSON text ``data``, or None (see above)."""
    try:
        return _flat_event(data)
    except Exception:  # bad UTF-8 (a UnicodeDecodeError), no memory: the general path says
        return None


cdef object _flat_event(bytes data):
    cdef const unsigned char* s = <const unsigned char*>PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    cdef Py_ssize_t i, j, start, digits, count = 0
    cdef unsigned char c
    cdef bint ascii = True, real, neg
    cdef long long whole
    cdef double d
    cdef char* end
    cdef dict out = {}
    i = _ws(s, 0, n)
    if i >= n or s[i] != 123:  # {
        return None
    i = _ws(s, i + 1, n)
    while True:
        if i >= n or s[i] != 34:  # a key (the empty object goes to the general path)
            return None
        j = _string_end(s, i + 1, n, &ascii)
        if j <= i + 1:  # an escape, no end, or the empty key
            return None
        key = _text(s + i + 1, j - i - 1, ascii)
        i = _ws(s, j + 1, n)
        if i >= n or s[i] != 58:  # :
            return None
        i = _ws(s, i + 1, n)
        if i >= n:
            return None
        c = s[i]
        if c == 34:
            j = _string_end(s, i + 1, n, &ascii)
            if j < 0:
                return None
            value = _text(s + i + 1, j - i - 1, ascii)
            i = j + 1
        elif c == 116:  # true
            if n - i < 4 or memcmp(s + i, b"true", 4) != 0:
                return None
            value = True
            i += 4
        elif c == 102:  # false
            if n - i < 5 or memcmp(s + i, b"false", 5) != 0:
                return None
            value = False
            i += 5
        elif c == 110:  # null
            if n - i < 4 or memcmp(s + i, b"null", 4) != 0:
                return None
            value = None
            i += 4
        elif c == 45 or 48 <= c <= 57:  # a number, RFC 8259's grammar
            start = i
            neg = c == 45
            if neg:
                i += 1
            if i >= n or not 48 <= s[i] <= 57:
                return None
            whole = 0
            digits = 0
            if s[i] == 48:
                i += 1
                digits = 1
            else:
                while i < n and 48 <= s[i] <= 57:
                    if digits < 18:
                        whole = whole * 10 + (s[i] - 48)
                    digits += 1
                    i += 1
            real = False
            if i < n and s[i] == 46:  # .
                i += 1
                if i >= n or not 48 <= s[i] <= 57:
                    return None
                while i < n and 48 <= s[i] <= 57:
                    i += 1
                real = True
            if i < n and (s[i] == 101 or s[i] == 69):  # e E
                i += 1
                if i < n and (s[i] == 43 or s[i] == 45):
                    i += 1
                if i >= n or not 48 <= s[i] <= 57:
                    return None
                while i < n and 48 <= s[i] <= 57:
                    i += 1
                real = True
            if real:
                d = PyOS_string_to_double(<const char*>(s + start), &end, NULL)
                if end != <char*>(s + i) or isinf(d):
                    return None
                value = PyFloat_FromDouble(d)
            else:
                if digits > 18:
                    return None
                value = PyLong_FromLongLong(-whole if neg else whole)
        else:
            return None
        PyDict_SetItem(out, key, value)
        count += 1
        i = _ws(s, i, n)
        if i >= n:
            return None
        if s[i] == 44:  # ,
            i = _ws(s, i + 1, n)
            continue
        if s[i] != 125:  # }
            return None
        break
    if _ws(s, i + 1, n) != n or len(out) != count:  # extra data, or a key twice
        return None
    return out
