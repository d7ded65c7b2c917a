# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled check of a flat records event (the wire-speed work: the broker and the client load
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
from libc.string cimport memcmp, memcpy
from libc.math cimport isinf

cdef extern from "Python.h":
    object PyUnicode_DecodeUTF8(const char *s, Py_ssize_t size, const char *errors)
    object PyUnicode_DecodeASCII(const char *s, Py_ssize_t size, const char *errors)
    void* PyUnicode_DATA(object)
    object PyLong_FromLongLong(long long v)
    object PyFloat_FromDouble(double v)
    object PyBytes_FromStringAndSize(const char *v, Py_ssize_t size)


cdef extern from *:
    """
    static int _el_double(unsigned long long w, long q, const unsigned long long* lo_t,
                          const unsigned long long* hi_t, long qmin, long qmax, double* out) {
        if (w == 0) { *out = 0.0; return 1; }
        if (q < qmin || q > qmax) return 0;
        int clz = __builtin_clzll(w);
        w <<= clz;
        unsigned long long exp2 = (unsigned long long)((217706 * q) >> 16) + 64 + 1023 - clz;
        unsigned __int128 p = (unsigned __int128)w * hi_t[q - qmin];
        unsigned long long xhi = (unsigned long long)(p >> 64), xlo = (unsigned long long)p;
        if ((xhi & 0x1FF) == 0x1FF && xlo + w < w) {
            unsigned __int128 p2 = (unsigned __int128)w * lo_t[q - qmin];
            unsigned long long yhi = (unsigned long long)(p2 >> 64), ylo = (unsigned long long)p2;
            unsigned long long mhi = xhi, mlo = xlo + yhi;
            if (mlo < xlo) mhi++;
            if ((mhi & 0x1FF) == 0x1FF && mlo + 1 == 0 && ylo + w < w) return 0;
            xhi = mhi; xlo = mlo;
        }
        unsigned long long msb = xhi >> 63;
        unsigned long long m = xhi >> (msb + 9);
        exp2 -= 1 ^ msb;
        if (xlo == 0 && (xhi & 0x1FF) == 0 && (m & 3) == 1) return 0;
        m += m & 1;
        m >>= 1;
        if (m >> 53) { m >>= 1; exp2 += 1; }
        if (exp2 - 1 >= 0x7FF - 1) return 0;
        unsigned long long bits = (exp2 << 52) | (m & 0x000FFFFFFFFFFFFFULL);
        memcpy(out, &bits, 8);
        return 1;
    }
    """
    # Eisel and Lemire's reading of a decimal (Lemire, "Number Parsing at a Gigabyte per
    # Second", 2021): the double nearest to w * 10^q from a 128-bit product with a
    # truncated power of five, or 0 for "not sure" (then orjson reads the number)
    int _el_double(unsigned long long w, long q, const unsigned long long* lo,
                   const unsigned long long* hi, long qmin, long qmax, double* out)

from orjson import loads as _loads

#: the 128-bit truncated powers of five of Eisel-Lemire for 10^QMIN .. 10^QMAX (made here
#: with Python's integers; a number outside that range is read by orjson)
cdef enum:
    QMIN = -64
    QMAX = 64
cdef unsigned long long _EL_LO[QMAX - QMIN + 1]
cdef unsigned long long _EL_HI[QMAX - QMIN + 1]


def _powers_of_five() -> None:
    for q in range(QMIN, QMAX + 1):
        if q >= 0:
            c = 5**q
            while c < (1 << 127):
                c *= 2
            while c >= (1 << 128):
                c //= 2
        else:
            p5 = 5 ** (-q)
            z = p5.bit_length()  # 2**z > p5: z = ceil(log2(p5)), p5 is not a power of 2
            b = z + 127 if q >= -27 else 2 * z + 128
            c = (1 << b) // p5 + 1
            while c >= (1 << 128):
                c //= 2
        _EL_HI[q - QMIN] = c >> 64
        _EL_LO[q - QMIN] = c & 0xFFFFFFFFFFFFFFFF


_powers_of_five()

#: the powers of ten a double holds exactly (Clinger's fast path)
cdef double _P10[23]
for _k, _p in enumerate((1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12,
                         1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22)):
    _P10[_k] = _p

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


cdef object _Record = None, _NO_GROUPS = None


def load_wire(data):
    """The records event of the JSON text ``data`` (bytes) when :func:`flat_event` reads
    it, else None: ``RecordsModel.load_wire`` itself, one call per event."""
    global _Record, _NO_GROUPS
    if type(data) is not bytes:
        return None
    try:
        flat = _flat_event(data)
    except Exception:
        return None
    if flat is None:
        return None
    if _Record is None:
        from pubsift.models.records.events import _NO_GROUPS as no_groups, Record

        _Record, _NO_GROUPS = Record, no_groups
    record = _Record.__new__(_Record)
    record._attrs = flat
    record.raw = flat
    record.groups = _NO_GROUPS
    return record


cdef object _flat_event(bytes data):
    cdef const unsigned char* s = <const unsigned char*>PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    cdef Py_ssize_t i, j, start, digits, count = 0
    cdef unsigned char c
    cdef bint ascii = True, real, neg, exact, eneg
    cdef unsigned long long sig
    cdef Py_ssize_t nsig, frac
    cdef long e10
    cdef double d
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
            sig = 0  # the significant digits (at most 19), exact while ``exact``
            nsig = digits = frac = 0
            exact = True
            if s[i] == 48:
                i += 1
                digits = 1
            else:
                while i < n and 48 <= s[i] <= 57:
                    if nsig < 19:
                        sig = sig * 10 + (s[i] - 48)
                        nsig += 1
                    else:
                        exact = False
                    digits += 1
                    i += 1
            real = False
            if i < n and s[i] == 46:  # .
                i += 1
                if i >= n or not 48 <= s[i] <= 57:
                    return None
                while i < n and 48 <= s[i] <= 57:
                    if sig == 0 and s[i] == 48:
                        frac += 1
                    elif nsig < 19:
                        sig = sig * 10 + (s[i] - 48)
                        nsig += 1
                        frac += 1
                    else:
                        exact = False
                    i += 1
                real = True
            e10 = 0
            if i < n and (s[i] == 101 or s[i] == 69):  # e E
                i += 1
                eneg = False
                if i < n and (s[i] == 43 or s[i] == 45):
                    eneg = s[i] == 45
                    i += 1
                if i >= n or not 48 <= s[i] <= 57:
                    return None
                while i < n and 48 <= s[i] <= 57:
                    if e10 < 100000:
                        e10 = e10 * 10 + (s[i] - 48)
                    i += 1
                if eneg:
                    e10 = -e10
                real = True
            if real:
                e10 -= frac
                if exact and sig <= 9007199254740992 and -22 <= e10 <= 22:
                    # Clinger's fast path: both operands exact, one correctly rounded step
                    d = <double>sig
                    d = d / _P10[-e10] if e10 < 0 else d * _P10[e10]
                    value = PyFloat_FromDouble(-d if neg else d)
                elif exact and _el_double(sig, e10, _EL_LO, _EL_HI, QMIN, QMAX, &d):
                    value = PyFloat_FromDouble(-d if neg else d)
                else:  # more than 19 digits, a far exponent, a halfway case: orjson reads it
                    value = _loads(PyBytes_FromStringAndSize(<const char*>(s + start), i - start))
                    if type(value) is not float or isinf(<double>value):
                        return None
            else:
                if digits > 18:
                    return None
                value = PyLong_FromLongLong(-<long long>sig if neg else <long long>sig)
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
