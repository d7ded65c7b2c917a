# Included by _walk.pyx: the selective scanner of records events' JSON text.
#
# _Scanner reads JSON values from the UTF-8 bytes of a text: built (BUILD) or checked only
# (SKIP), every value checked as the full parse checks it, built or not: the grammar of
# RFC 8259 as Python's json module reads it (no NaN or Infinity), UTF-8 without overlong
# forms or surrogates, no lone surrogate escape, no control character in a string, no
# empty key, nesting of objects and arrays at most ``max_depth``, integers of at most
# ``max_digits`` digits, floats that do not overflow, and no key twice in one object; it
# notes whether some key anywhere holds a "." (``dotted``). A refusal is an EventError
# whose ``where`` is the byte offset. _RecordScanner (below) reads a records event of
# only the members on the paths an index reads.

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.string cimport memcmp
from libc.math cimport isinf
from libc.stdint cimport uint64_t

cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object o)
    void* PyUnicode_DATA(object o)
    object PyUnicode_DecodeUTF8(const char *s, Py_ssize_t size, const char *errors)
    double PyOS_string_to_double(const char *s, char **endptr, PyObject *overflow_exception) except? -1.0
    object PyLong_FromLongLong(long long v)

from pubsift.core.errors import EventError as _EventError
import json as _json

cdef enum:
    SPANS = 16
    SKIP = 0
    BUILD = 1
    SELECT = 2  # of _Entry.mode: a member whose path leads to read names

# the bytes a string holds as they are: printable ASCII but the quote and the backslash
cdef unsigned char _PLAIN[256]
# those of a key, for the fast skip: "." is not (a dotted key is for the checked skip)
cdef unsigned char _KEY_PLAIN[256]
for _b in range(256):
    _PLAIN[_b] = 32 <= _b < 128 and _b != 34 and _b != 92
    _KEY_PLAIN[_b] = _PLAIN[_b] and _b != 46


cdef inline bint _same(const unsigned char* a, const unsigned char* b, Py_ssize_t n) noexcept nogil:
    """The n >= 1 bytes at a and b are equal (the first compared before memcmp is
    called: the keys of one object mostly differ there)."""
    return a[0] == b[0] and memcmp(a, b, n) == 0


cdef inline bint _dotted(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """A "." in the n bytes at p (a key: a few bytes, no call)."""
    cdef Py_ssize_t i
    for i in range(n):
        if p[i] == 46:
            return True
    return False


# -- the fast skip --------------------------------------------------------------------
# _fast_skip checks a value that is not built as _Scanner.skip checks it, in one tight
# loop over local offsets (no attribute of the scanner written per byte, no exception
# check per call), for the usual values only: strings without a \u escape, numbers
# without an exponent, objects of at most SPANS keys without an escape or a ".". Anything
# else, an error included, it leaves to the checked skip (-1): that one then gives the
# answer or the refusal, with its message and offset, from the value's first byte.

cdef inline bint _ws(unsigned char c) noexcept nogil:
    return c == 32 or c == 10 or c == 13 or c == 9


cdef Py_ssize_t _fast_utf8(const unsigned char* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """Past the UTF-8 sequence at i, checked as _Scanner.utf8 checks it; -1 if not."""
    cdef unsigned char c = s[i], lo = 0x80, hi = 0xBF
    cdef Py_ssize_t need, k
    if 0xC2 <= c <= 0xDF:
        need = 1
    elif 0xE0 <= c <= 0xEF:
        need = 2
        if c == 0xE0:
            lo = 0xA0
        elif c == 0xED:
            hi = 0x9F
    elif 0xF0 <= c <= 0xF4:
        need = 3
        if c == 0xF0:
            lo = 0x90
        elif c == 0xF4:
            hi = 0x8F
    else:
        return -1
    if i + need >= n or s[i + 1] < lo or s[i + 1] > hi:
        return -1
    for k in range(2, need + 1):
        if s[i + k] < 0x80 or s[i + k] > 0xBF:
            return -1
    return i + need + 1


cdef Py_ssize_t _fast_string(const unsigned char* s, Py_ssize_t i, Py_ssize_t n, bint key) noexcept nogil:
    """At the opening quote: past the closing one; -1 for a ``\\u`` escape, any escape in a key,
    or an error."""
    cdef unsigned char c
    cdef const unsigned char* plain = &_PLAIN[0]
    if key:
        plain = &_KEY_PLAIN[0]
    i += 1
    while True:
        while i < n and plain[s[i]]:
            i += 1
        if i >= n:
            return -1
        c = s[i]
        if c == 34:
            return i + 1
        if c == 46:  # in a key
            return -1
        if c == 92:
            if key or i + 1 >= n:
                return -1
            c = s[i + 1]
            if c == 34 or c == 92 or c == 47 or c == 98 or c == 102 or c == 110 or c == 114 or c == 116:
                i += 2
                continue
            return -1
        if c < 128:  # a control character (the other ASCII bytes are plain)
            return -1
        i = _fast_utf8(s, i, n)
        if i < 0:
            return -1


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    /* past the run of ASCII digits at i, eight bytes a step while eight are digits
       (simdjson's test: each byte's high nibble 3, and no low nibble above 9) */
    static inline Py_ssize_t pubsift_digits(const unsigned char* s, Py_ssize_t i, Py_ssize_t n) {
        uint64_t x;
        while (i + 8 <= n) {
            memcpy(&x, s + i, 8);
            if (((x & 0xF0F0F0F0F0F0F0F0ULL)
                 | (((x + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4))
                != 0x3333333333333333ULL)
                break;
            i += 8;
        }
        while (i < n && (unsigned char)(s[i] - 48) < 10)
            i++;
        return i;
    }
    """
    Py_ssize_t pubsift_digits(const unsigned char* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil


# -- numbers built: Eisel and Lemire --------------------------------------------------
# A decimal of at most 19 significant digits is turned into the nearest double by the
# Eisel-Lemire algorithm (Lemire, "Number Parsing at a Gigabyte per Second", 2021, §5-6;
# the form of Go's strconv.eiselLemire64), one 64x128-bit product with the truncated
# 128-bit mantissa of 10^q (from a table made below at import, with Python's exact
# integers); where it cannot tell (a product too close to a halfway point, more digits,
# an exponent out of range, a subnormal or infinite result) PyOS_string_to_double
# decides, as before. Answers are those of float(text) (tests/records/test_float_text.py).
cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #define PUBSIFT_POW10_MIN (-348)
    #define PUBSIFT_POW10_MAX 347
    /* floor(10^q * 2^k) normalized to [2^127, 2^128): the high and low 64 bits */
    static uint64_t pubsift_pow10_hi[PUBSIFT_POW10_MAX - PUBSIFT_POW10_MIN + 1];
    static uint64_t pubsift_pow10_lo[PUBSIFT_POW10_MAX - PUBSIFT_POW10_MIN + 1];
    static int pubsift_pow10_ready = 0;

    #if defined(__GNUC__) && defined(__SIZEOF_INT128__)
    static int pubsift_eisel_lemire(uint64_t man, int q, int neg, double* out) {
        uint64_t bits;
        if (man == 0) {
            bits = neg ? 0x8000000000000000ULL : 0;
            memcpy(out, &bits, 8);
            return 1;
        }
        if (!pubsift_pow10_ready || q < PUBSIFT_POW10_MIN || q > PUBSIFT_POW10_MAX)
            return 0;
        int clz = __builtin_clzll(man);
        man <<= clz;
        /* floor(q * 217706 / 2^16) = floor(q log2(10)) over the table's range */
        int64_t scaled = (int64_t)217706 * q;
        int64_t floor2 = scaled >= 0 ? scaled >> 16 : -((-scaled + 65535) >> 16);
        uint64_t exp2 = (uint64_t)(floor2 + 64 + 1023) - (uint64_t)clz;
        uint64_t phi = pubsift_pow10_hi[q - PUBSIFT_POW10_MIN];
        uint64_t plo = pubsift_pow10_lo[q - PUBSIFT_POW10_MIN];
        __uint128_t x = (__uint128_t)man * phi;
        uint64_t xhi = (uint64_t)(x >> 64), xlo = (uint64_t)x;
        if ((xhi & 0x1FF) == 0x1FF && xlo + man < man) {  /* the wider product */
            __uint128_t y = (__uint128_t)man * plo;
            uint64_t yhi = (uint64_t)(y >> 64), ylo = (uint64_t)y;
            uint64_t mhi = xhi, mlo = xlo + yhi;
            if (mlo < xlo)
                mhi++;
            if ((mhi & 0x1FF) == 0x1FF && mlo + 1 == 0 && ylo + man < man)
                return 0;
            xhi = mhi;
            xlo = mlo;
        }
        uint64_t msb = xhi >> 63;
        uint64_t mant = xhi >> (msb + 9);
        exp2 -= 1 ^ msb;
        if (xlo == 0 && (xhi & 0x1FF) == 0 && (mant & 3) == 1)  /* halfway: undecided */
            return 0;
        mant += mant & 1;
        mant >>= 1;
        if (mant >> 53) {
            mant >>= 1;
            exp2 += 1;
        }
        if (exp2 - 1 >= 0x7FF - 1)  /* subnormal, zero or infinite */
            return 0;
        bits = exp2 << 52 | (mant & 0x000FFFFFFFFFFFFFULL);
        if (neg)
            bits |= 0x8000000000000000ULL;
        memcpy(out, &bits, 8);
        return 1;
    }
    #else
    /* no 128-bit product here: Python's conversion decides every number */
    static int pubsift_eisel_lemire(uint64_t man, int q, int neg, double* out) {
        (void)man; (void)q; (void)neg; (void)out;
        return 0;
    }
    #endif

    /* the double of the checked JSON number s[0:n]; 0 where Eisel-Lemire cannot tell */
    static int pubsift_fast_double(const unsigned char* s, Py_ssize_t n, double* out) {
        Py_ssize_t i = 0;
        int neg = 0, sig = 0, eneg = 0;
        uint64_t man = 0;
        long long q = 0, e = 0;
        if (s[0] == 45) {
            neg = 1;
            i = 1;
        }
        for (; i < n && (unsigned char)(s[i] - 48) < 10; i++) {
            if (man || s[i] != 48) {
                if (++sig > 19)
                    return 0;
                man = man * 10 + (s[i] - 48);
            }
        }
        if (i < n && s[i] == 46) {
            for (i++; i < n && (unsigned char)(s[i] - 48) < 10; i++) {
                if (man || s[i] != 48) {
                    if (++sig > 19)
                        return 0;
                    man = man * 10 + (s[i] - 48);
                }
                q--;
            }
        }
        if (i < n && (s[i] == 101 || s[i] == 69)) {
            i++;
            if (i < n && (s[i] == 43 || s[i] == 45)) {
                eneg = s[i] == 45;
                i++;
            }
            for (; i < n && (unsigned char)(s[i] - 48) < 10; i++)
                if (e < 100000)
                    e = e * 10 + (s[i] - 48);
            q += eneg ? -e : e;
        }
        if (q < -100000 || q > 100000)
            return man == 0 ? pubsift_eisel_lemire(0, 0, neg, out) : 0;
        return pubsift_eisel_lemire(man, (int)q, neg, out);
    }
    """
    int PUBSIFT_POW10_MIN
    int PUBSIFT_POW10_MAX
    uint64_t pubsift_pow10_hi[696]
    uint64_t pubsift_pow10_lo[696]
    int pubsift_pow10_ready
    int pubsift_fast_double(const unsigned char* s, Py_ssize_t n, double* out) noexcept nogil


def _fill_pow10():
    """The table of pubsift_eisel_lemire: floor(10^q * 2^k) in [2^127, 2^128), exactly."""
    global pubsift_pow10_ready
    cdef int j
    cdef object q, v, d, k, m, ten = 10  # Python integers: exact
    for q in range(PUBSIFT_POW10_MIN, PUBSIFT_POW10_MAX + 1):
        if q >= 0:
            v = ten ** q
            k = 128 - v.bit_length()
            m = v << k if k >= 0 else v >> -k
        else:
            d = ten ** -q
            k = 127 + d.bit_length()
            m = (1 << k) // d  # in [2^127, 2^128): d is no power of 2
        if m >> 127 != 1:
            raise AssertionError(f"10^{q}: not a 128-bit mantissa")
        j = q - PUBSIFT_POW10_MIN
        pubsift_pow10_hi[j] = m >> 64
        pubsift_pow10_lo[j] = m & 0xFFFFFFFFFFFFFFFF
    pubsift_pow10_ready = 1


_fill_pow10()


cdef inline Py_ssize_t _fast_number(
    const unsigned char* s, Py_ssize_t i, Py_ssize_t n, Py_ssize_t max_digits
) noexcept nogil:
    """At a "-" or a digit: past the number; -1 for an exponent, too many digits, an
    error."""
    cdef Py_ssize_t start, digits
    cdef bint is_float = False
    if s[i] == 45:
        i += 1
        if i >= n or not (48 <= s[i] <= 57):
            return -1
    if s[i] == 48:
        i += 1
        digits = 1
    else:
        start = i
        i = pubsift_digits(s, i, n)
        digits = i - start
    if i < n and s[i] == 46:
        is_float = True
        i += 1
        if i >= n or not (48 <= s[i] <= 57):
            return -1
        i = pubsift_digits(s, i, n)
    if i < n and (s[i] == 101 or s[i] == 69):
        return -1
    if digits > (299 if is_float else max_digits):
        return -1
    return i


cdef inline Py_ssize_t _fast_literal(const unsigned char* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """At a byte that starts no other value: past true, false or null; -1 if not."""
    cdef unsigned char c = s[i]
    if c == 116 and i + 4 <= n and memcmp(s + i, b"true", 4) == 0:
        return i + 4
    if c == 102 and i + 5 <= n and memcmp(s + i, b"false", 5) == 0:
        return i + 5
    if c == 110 and i + 4 <= n and memcmp(s + i, b"null", 4) == 0:
        return i + 4
    return -1


cdef inline Py_ssize_t _fast_value(
    const unsigned char* s, Py_ssize_t i, Py_ssize_t n, int depth, int max_depth,
    Py_ssize_t max_digits
) noexcept nogil:
    """The value at i (after whitespace): a scalar here, a container by _fast_skip."""
    cdef unsigned char c
    while i < n and _ws(s[i]):
        i += 1
    if i >= n:
        return -1
    c = s[i]
    if c == 34:
        return _fast_string(s, i, n, False)
    if c == 45 or 48 <= c <= 57:
        return _fast_number(s, i, n, max_digits)
    if c == 123 or c == 91:
        return _fast_skip(s, i, n, depth, max_depth, max_digits)
    return _fast_literal(s, i, n)


cdef Py_ssize_t _fast_skip(
    const unsigned char* s, Py_ssize_t i, Py_ssize_t n, int depth, int max_depth,
    Py_ssize_t max_digits
) noexcept nogil:
    """Past the value at i (after whitespace), checked; -1: for the checked skip. The
    scalars inside a container are read inline (a call per nested container only)."""
    cdef unsigned char c
    cdef Py_ssize_t start, nkeys = 0, klen, j
    cdef Py_ssize_t starts[SPANS]
    cdef Py_ssize_t lens[SPANS]
    while i < n and _ws(s[i]):
        i += 1
    if i >= n:
        return -1
    c = s[i]
    if c == 123:  # {
        depth += 1
        if depth > max_depth:
            return -1
        i += 1
        while i < n and _ws(s[i]):
            i += 1
        if i < n and s[i] == 125:
            return i + 1
        while True:
            while i < n and _ws(s[i]):
                i += 1
            if i >= n or s[i] != 34 or nkeys == SPANS:
                return -1
            start = i + 1
            i = _fast_string(s, i, n, True)
            if i < 0:
                return -1
            klen = i - 1 - start
            if klen == 0:
                return -1
            for j in range(nkeys):
                if lens[j] == klen and _same(s + starts[j], s + start, klen):
                    return -1
            starts[nkeys] = start
            lens[nkeys] = klen
            nkeys += 1
            while i < n and _ws(s[i]):
                i += 1
            if i >= n or s[i] != 58:
                return -1
            i = _fast_value(s, i + 1, n, depth, max_depth, max_digits)
            if i < 0:
                return -1
            while i < n and _ws(s[i]):
                i += 1
            if i >= n:
                return -1
            if s[i] == 44:
                i += 1
                continue
            if s[i] == 125:
                return i + 1
            return -1
    if c == 91:  # [
        depth += 1
        if depth > max_depth:
            return -1
        i += 1
        while i < n and _ws(s[i]):
            i += 1
        if i < n and s[i] == 93:
            return i + 1
        while True:
            i = _fast_value(s, i, n, depth, max_depth, max_digits)
            if i < 0:
                return -1
            while i < n and _ws(s[i]):
                i += 1
            if i >= n:
                return -1
            if s[i] == 44:
                i += 1
                continue
            if s[i] == 93:
                return i + 1
            return -1
    return _fast_value(s, i, n, depth, max_depth, max_digits)


cdef class _Scanner:
    cdef const unsigned char* s
    cdef Py_ssize_t n
    cdef Py_ssize_t pos
    cdef int depth
    cdef int max_depth
    cdef Py_ssize_t max_digits
    cdef bint strict
    cdef public bint dotted
    cdef bint checking  # inside a value the fast skip left to the checked one

    @cython.final
    cdef int fail(self, str message) except -1:
        raise _EventError(message, f"byte {self.pos}")

    @cython.final
    cdef inline void ws(self):
        cdef unsigned char c
        while self.pos < self.n:
            c = self.s[self.pos]
            if c == 32 or c == 10 or c == 13 or c == 9:
                self.pos += 1
            else:
                return

    @cython.final
    cdef inline unsigned char peek(self) except? 0:
        self.ws()
        if self.pos >= self.n:
            self.fail("invalid JSON: the text ends early")
        return self.s[self.pos]

    @cython.final
    cdef int enter(self) except -1:
        self.depth += 1
        if self.depth > self.max_depth:
            self.fail(f"JSON nested deeper than {self.max_depth} levels")
        return 0

    # -- strings ------------------------------------------------------------------
    @cython.final
    cdef Py_ssize_t string_end(self, bint* escaped) except -1:
        """At the opening quote: checks the string, returns the offset of its closing
        quote (self.pos is left past it)."""
        cdef const unsigned char* s = self.s
        cdef Py_ssize_t i = self.pos + 1, n = self.n, end
        cdef unsigned char c
        cdef unsigned int cp, lo
        escaped[0] = False
        while True:
            while i < n and _PLAIN[s[i]]:
                i += 1
            if i >= n:
                self.pos = i
                self.fail("invalid JSON: an unterminated string")
            c = s[i]
            if c == 34:  # "
                self.pos = i + 1
                return i
            if c == 92:  # backslash
                escaped[0] = True
                if i + 1 >= n:
                    self.pos = i
                    self.fail("invalid JSON: an unterminated string")
                c = s[i + 1]
                if c == 117:  # u
                    cp = self.hex4(i + 2)
                    i += 6
                    if 0xD800 <= cp <= 0xDBFF:
                        if i + 6 <= n and s[i] == 92 and s[i + 1] == 117:
                            lo = self.hex4(i + 2)
                            if 0xDC00 <= lo <= 0xDFFF:
                                i += 6
                                continue
                        self.pos = i - 6
                        self.fail("a lone surrogate in a string: text must be valid Unicode")
                    elif 0xDC00 <= cp <= 0xDFFF:
                        self.pos = i - 6
                        self.fail("a lone surrogate in a string: text must be valid Unicode")
                    continue
                if c in b'"\\/bfnrt':
                    i += 2
                    continue
                self.pos = i
                self.fail("invalid JSON: an invalid escape in a string")
            if c < 32:
                self.pos = i
                self.fail("invalid JSON: a control character in a string")
            if c < 128:
                i += 1
                continue
            i = self.utf8(i)

    @cython.final
    cdef unsigned int hex4(self, Py_ssize_t i) except? 0xFFFFFFFF:
        cdef unsigned int v = 0
        cdef Py_ssize_t j
        cdef unsigned char c
        if i + 4 > self.n:
            self.pos = i
            self.fail("invalid JSON: an invalid \\u escape")
        for j in range(i, i + 4):
            c = self.s[j]
            if 48 <= c <= 57:
                v = v * 16 + (c - 48)
            elif 97 <= c <= 102:
                v = v * 16 + (c - 87)
            elif 65 <= c <= 70:
                v = v * 16 + (c - 55)
            else:
                self.pos = i
                self.fail("invalid JSON: an invalid \\u escape")
        return v

    @cython.final
    cdef Py_ssize_t utf8(self, Py_ssize_t i) except -1:
        """The offset past the UTF-8 sequence at i (checked as Python's decoder does)."""
        cdef const unsigned char* s = self.s
        cdef unsigned char c = s[i], c1
        cdef Py_ssize_t k, need
        cdef unsigned char lo = 0x80, hi = 0xBF
        if 0xC2 <= c <= 0xDF:
            need = 1
        elif 0xE0 <= c <= 0xEF:
            need = 2
            if c == 0xE0:
                lo = 0xA0
            elif c == 0xED:
                hi = 0x9F  # no surrogates
        elif 0xF0 <= c <= 0xF4:
            need = 3
            if c == 0xF0:
                lo = 0x90
            elif c == 0xF4:
                hi = 0x8F
        else:
            self.pos = i
            self.fail(f"event is not UTF-8: invalid start byte 0x{c:02x}")
        if i + need >= self.n:
            self.pos = i
            self.fail("event is not UTF-8: unexpected end of data")
        c1 = s[i + 1]
        if c1 < lo or c1 > hi:
            self.pos = i
            self.fail("event is not UTF-8: invalid continuation byte")
        for k in range(2, need + 1):
            if s[i + k] < 0x80 or s[i + k] > 0xBF:
                self.pos = i
                self.fail("event is not UTF-8: invalid continuation byte")
        return i + need + 1

    @cython.final
    cdef object string(self):
        """At the opening quote: the string's value."""
        cdef Py_ssize_t start = self.pos + 1, end
        cdef bint escaped
        end = self.string_end(&escaped)
        return self.decode(start, end, escaped)

    @cython.final
    cdef object decode(self, Py_ssize_t start, Py_ssize_t end, bint escaped):
        """The value of the checked string between the quotes at start - 1 and end."""
        if not escaped:
            return PyUnicode_DecodeUTF8(<const char*>self.s + start, end - start, "strict")
        return _json.loads(PyUnicode_DecodeUTF8(<const char*>self.s + start - 1, end - start + 2, "strict"))

    # -- numbers and literals -----------------------------------------------------
    @cython.final
    cdef object number(self, bint build):
        cdef const unsigned char* s = self.s
        cdef Py_ssize_t start = self.pos, i = self.pos, n = self.n, digits = 0, int_digits
        cdef bint is_float = False, neg_exp = False
        cdef long long exp = 0, v = 0
        cdef double d
        cdef char* end
        if i < n and s[i] == 45:  # -
            i += 1
        if i >= n or not (48 <= s[i] <= 57):
            self.pos = i
            self.fail("invalid JSON: expecting a value")
        if s[i] == 48:
            i += 1
            digits = 1
        else:
            while i < n and 48 <= s[i] <= 57:
                i += 1
                digits += 1
        int_digits = digits
        if i < n and s[i] == 46:  # .
            is_float = True
            i += 1
            if i >= n or not (48 <= s[i] <= 57):
                self.pos = i
                self.fail("invalid JSON: a number needs digits after its point")
            while i < n and 48 <= s[i] <= 57:
                i += 1
        if i < n and (s[i] == 101 or s[i] == 69):  # e E
            is_float = True
            i += 1
            if i < n and (s[i] == 43 or s[i] == 45):
                neg_exp = s[i] == 45
                i += 1
            if i >= n or not (48 <= s[i] <= 57):
                self.pos = i
                self.fail("invalid JSON: a number needs digits in its exponent")
            while i < n and 48 <= s[i] <= 57:
                if exp < 100000:
                    exp = exp * 10 + (s[i] - 48)
                i += 1
        self.pos = i
        if not is_float:
            if digits > self.max_digits:
                self.pos = start
                self.fail(
                    f"integers have at most {self.max_digits} digits (this one has {digits})"
                )
            if not build:
                return None
            if digits <= 18:
                i = start + (1 if s[start] == 45 else 0)
                while i < self.pos:
                    v = v * 10 + (s[i] - 48)
                    i += 1
                return PyLong_FromLongLong(-v if s[start] == 45 else v)
            return int(PyUnicode_DecodeUTF8(<const char*>s + start, self.pos - start, "strict"))
        # below 10**300: finite (about 10**(int_digits ± exp); exp is capped at 100000,
        # which only ever makes a negative exponent look smaller: checked below then)
        if not build and ((int_digits - exp if neg_exp else int_digits + exp) < 300):
            return None
        if build and pubsift_fast_double(s + start, self.pos - start, &d):
            return d
        d = PyOS_string_to_double(<const char*>s + start, &end, NULL)
        if isinf(d):
            self.pos = start
            self.fail("a number too large for a 64-bit float; numbers must be finite")
        return d if build else None

    @cython.final
    cdef object literal(self, bint build):
        cdef const unsigned char* p = self.s + self.pos
        cdef Py_ssize_t left = self.n - self.pos
        if left >= 4 and memcmp(p, b"true", 4) == 0:
            self.pos += 4
            return True
        if left >= 5 and memcmp(p, b"false", 5) == 0:
            self.pos += 5
            return False
        if left >= 4 and memcmp(p, b"null", 4) == 0:
            self.pos += 4
            return None
        self.fail("invalid JSON: expecting a value")

    # -- values -------------------------------------------------------------------
    @cython.final
    cdef int skip(self) except -1:
        """The value at self.pos (after whitespace) checked as ``value`` checks it, not
        built (no Python object made but for the keys of a skipped object past SPANS or
        with an escape)."""
        cdef Py_ssize_t past
        if self.checking:
            return self.checked_skip()
        past = _fast_skip(self.s, self.pos, self.n, self.depth, self.max_depth, self.max_digits)
        if past >= 0:
            self.pos = past
            return 0
        # the value is read by the checked skip, none of its members by the fast one again
        # (else each level of a deep value would scan again what lies before the cause)
        self.checking = True
        try:
            self.checked_skip()
        finally:
            self.checking = False
        return 0

    @cython.final
    cdef int checked_skip(self) except -1:
        cdef unsigned char c
        cdef bint escaped
        c = self.peek()
        if c == 34:
            self.string_end(&escaped)
        elif c == 45 or 48 <= c <= 57:
            self.skip_number()
        elif c == 123:  # {
            self.skip_obj()
        elif c == 91:  # [
            self.skip_arr()
        else:
            self.literal(False)
        return 0

    @cython.final
    cdef int skip_number(self) except -1:
        """``number(False)`` without an object: the number at self.pos checked (grammar, digits of an
        integer, a float that does not overflow), not built."""
        cdef const unsigned char* s = self.s
        cdef Py_ssize_t start = self.pos, i = self.pos, n = self.n, digits = 0
        cdef bint is_float = False, neg_exp = False
        cdef long long exp = 0
        cdef double d
        cdef char* end
        if s[i] == 45:  # -
            i += 1
        if i >= n or not (48 <= s[i] <= 57):
            self.pos = i
            self.fail("invalid JSON: expecting a value")
        if s[i] == 48:
            i += 1
            digits = 1
        else:
            while i < n and 48 <= s[i] <= 57:
                i += 1
                digits += 1
        if i < n and s[i] == 46:  # .
            is_float = True
            i += 1
            if i >= n or not (48 <= s[i] <= 57):
                self.pos = i
                self.fail("invalid JSON: a number needs digits after its point")
            while i < n and 48 <= s[i] <= 57:
                i += 1
        if i < n and (s[i] == 101 or s[i] == 69):  # e E
            is_float = True
            i += 1
            if i < n and (s[i] == 43 or s[i] == 45):
                neg_exp = s[i] == 45
                i += 1
            if i >= n or not (48 <= s[i] <= 57):
                self.pos = i
                self.fail("invalid JSON: a number needs digits in its exponent")
            while i < n and 48 <= s[i] <= 57:
                if exp < 100000:
                    exp = exp * 10 + (s[i] - 48)
                i += 1
        self.pos = i
        if not is_float:
            if digits > self.max_digits:
                self.pos = start
                self.fail(
                    f"integers have at most {self.max_digits} digits (this one has {digits})"
                )
            return 0
        # as number(): below 10**300 a float is finite
        if (digits - exp if neg_exp else digits + exp) < 300:
            return 0
        d = PyOS_string_to_double(<const char*>s + start, &end, NULL)
        if isinf(d):
            self.pos = start
            self.fail("a number too large for a 64-bit float; numbers must be finite")
        return 0

    @cython.final
    cdef int skip_obj(self) except -1:
        """The object at self.pos checked, not built: its keys compared as spans of the
        text, byte for byte (which is comparing their values while none has an escape);
        past SPANS keys, or at a key with an escape, decoded into ``seen``."""
        cdef set seen = None
        cdef unsigned char c
        cdef str key
        cdef bint first = True, escaped
        cdef Py_ssize_t starts[SPANS]
        cdef Py_ssize_t lens[SPANS]
        cdef Py_ssize_t nspans = 0, start, end, j
        self.enter()
        self.pos += 1
        while True:
            c = self.peek()
            if c == 125:  # }
                if not first:
                    self.fail("invalid JSON: expecting a key after ','")
                self.pos += 1
                break
            if c != 34:
                self.fail("invalid JSON: expecting a key in double quotes")
            first = False
            start = self.pos + 1
            end = self.string_end(&escaped)
            if end == start:
                self.pos = start
                self.fail("attribute names are non-empty strings, got ''")
            if not escaped and seen is None and nspans < SPANS:
                if _dotted(self.s + start, end - start):
                    self.dotted = True
                if self.strict:
                    for j in range(nspans):
                        if lens[j] == end - start and _same(
                            self.s + starts[j], self.s + start, end - start
                        ):
                            self.pos = start
                            key = self.decode(start, end, False)
                            self.fail(f"duplicate key {key!r} in a JSON object of the event")
                    starts[nspans] = start
                    lens[nspans] = end - start
                    nspans += 1
            else:
                key = self.decode(start, end, escaped)
                if "." in key:
                    self.dotted = True
                if self.strict:
                    if seen is None:
                        seen = {self.decode(starts[j], starts[j] + lens[j], False) for j in range(nspans)}
                    if key in seen:
                        self.pos = start
                        self.fail(f"duplicate key {key!r} in a JSON object of the event")
                    seen.add(key)
            if self.peek() != 58:  # :
                self.fail("invalid JSON: expecting ':'")
            self.pos += 1
            self.skip()
            c = self.peek()
            if c == 44:  # ,
                self.pos += 1
                if self.peek() == 125:
                    self.fail("invalid JSON: expecting a key after ','")
                continue
            if c == 125:
                self.pos += 1
                break
            self.fail("invalid JSON: expecting ',' or '}'")
        self.depth -= 1
        return 0

    @cython.final
    cdef int skip_arr(self) except -1:
        """The array at self.pos checked, not built."""
        cdef unsigned char c
        self.enter()
        self.pos += 1
        if self.peek() == 93:  # ]
            self.pos += 1
            self.depth -= 1
            return 0
        while True:
            self.skip()
            c = self.peek()
            if c == 44:
                self.pos += 1
                continue
            if c == 93:
                self.pos += 1
                break
            self.fail("invalid JSON: expecting ',' or ']'")
        self.depth -= 1
        return 0

    @cython.final
    cdef object value(self, int mode):
        """The value at self.pos (after whitespace): built (BUILD) or checked only (SKIP:
        None)."""
        cdef unsigned char c
        cdef bint escaped
        if mode == SKIP:
            self.skip()
            return None
        c = self.peek()
        if c == 123:  # {
            return self.obj(mode)
        if c == 91:  # [
            return self.arr(mode)
        if c == 34:
            if mode == BUILD:
                return self.string()
            self.string_end(&escaped)
            return None
        if c == 45 or 48 <= c <= 57:
            return self.number(mode == BUILD)
        return self.literal(mode == BUILD)

    @cython.final
    cdef object obj(self, int mode):
        """The object at self.pos, built (``mode`` BUILD; skip_obj checks one only)."""
        cdef dict out = {}
        cdef unsigned char c
        cdef str key
        cdef bint first = True, escaped
        cdef Py_ssize_t start, end
        self.enter()
        self.pos += 1
        while True:
            c = self.peek()
            if c == 125:  # }
                if not first:
                    self.fail("invalid JSON: expecting a key after ','")
                self.pos += 1
                break
            if c != 34:
                self.fail("invalid JSON: expecting a key in double quotes")
            first = False
            start = self.pos + 1
            end = self.string_end(&escaped)
            if end == start:
                self.pos = start
                self.fail("attribute names are non-empty strings, got ''")
            key = self.decode(start, end, escaped)
            if "." in key:
                self.dotted = True
            if self.strict and key in out:
                self.pos = start
                self.fail(f"duplicate key {key!r} in a JSON object of the event")
            if self.peek() != 58:  # :
                self.fail("invalid JSON: expecting ':'")
            self.pos += 1
            out[key] = self.value(BUILD)
            c = self.peek()
            if c == 44:  # ,
                self.pos += 1
                if self.peek() == 125:
                    self.fail("invalid JSON: expecting a key after ','")
                continue
            if c == 125:
                self.pos += 1
                break
            self.fail("invalid JSON: expecting ',' or '}'")
        self.depth -= 1
        return out

    @cython.final
    cdef object arr(self, int mode):
        """The array at self.pos, built (``mode`` BUILD; skip_arr checks one only)."""
        cdef list out = []
        cdef unsigned char c
        self.enter()
        self.pos += 1
        if self.peek() == 93:  # ]
            self.pos += 1
            self.depth -= 1
            return out
        while True:
            out.append(self.value(BUILD))
            c = self.peek()
            if c == 44:
                self.pos += 1
                continue
            if c == 93:
                self.pos += 1
                break
            self.fail("invalid JSON: expecting ',' or ']'")
        self.depth -= 1
        return out


# -- the selective read into a records event ------------------------------------------
#
# scan_record(data, selection, max_depth, max_digits) reads one JSON object from ``data``
# with _Scanner's checks and refusals (strict: no key twice) and builds the records event
# of only the members on the read paths, as Record.of builds the whole event: a member
# whose dotted name some filter reads is built whole; one whose name is a proper prefix of
# such a name is descended into (an object's members join the event's attributes under
# their dotted names, an array's objects, inside nested arrays too, are the elements of
# its group, its scalars are checked and dropped: no filter reads the path itself); the
# rest is checked, not built. The dotted names are made once per selection, not per
# event: a selection is compiled into a tree of the keys on the read paths
# (compile_selection). Returns None where a key anywhere holds a "." (such a key may
# collide with a nested name: the full parse decides).

cdef class _Entry:
    cdef str name  # the dotted name of the member
    cdef int mode  # BUILD: a name some filter reads; SELECT: a proper prefix of one
    cdef _Node child  # the keys below it (SELECT)


cdef class _Node:
    cdef list keys  # the UTF-8 bytes of each entry's key, in entries' order
    cdef list entries
    cdef dict by_str  # key -> entry
    cdef unsigned char firsts[256]  # whether some key's UTF-8 bytes start with the byte


def compile_selection(names, prefixes):
    """The tree of keys of the dotted ``names`` and their ``prefixes`` (scan_record's
    selection): a name read whole is BUILD even where it is also a prefix (as in scan)."""
    cdef _Node root = _Node(), node
    cdef _Entry e
    root.keys, root.entries, root.by_str = [], [], {}
    for full in sorted(set(names) | set(prefixes)):
        node = root
        parts = full.split(".")
        for i, part in enumerate(parts):
            name = ".".join(parts[: i + 1])
            e = node.by_str.get(part)
            if e is None:
                e = _Entry()
                e.name = name
                e.mode = BUILD if name in names else SELECT
                e.child = None
                key = part.encode("utf-8", "surrogatepass")
                node.keys.append(key)
                if key:  # (an event's keys are never empty: an empty one is never found)
                    node.firsts[<unsigned char>key[0]] = 1
                node.entries.append(e)
                node.by_str[part] = e
            if i + 1 < len(parts):
                if e.mode == BUILD:
                    break  # read whole: nothing below it needs a path
                if e.child is None:
                    e.child = _Node()
                    e.child.keys, e.child.entries, e.child.by_str = [], [], {}
                node = e.child
    return root


cdef object _RecordType = None, _NoGroups = None, _build_fn = None


@cython.final
cdef class _RecordScanner(_Scanner):

    @cython.final
    cdef void start(self, const unsigned char* s, Py_ssize_t n):
        """Ready to read the text of n bytes at s."""
        self.s = s
        self.n = n
        self.pos = 0
        self.depth = 0
        self.dotted = False

    @cython.final
    cdef int read(self, _Node selection, dict attrs, dict groups) except -1:
        """The text: one JSON object, its members on the read paths into attrs and
        groups."""
        self.ws()
        if self.pos >= self.n or self.s[self.pos] != 123:
            if self.pos < self.n and self.s[self.pos] in b'["-0123456789tfn':
                self.fail("a records event is a JSON object")
            self.fail("invalid JSON: expecting an object")
        self.sel_obj(selection, attrs, groups)
        self.ws()
        if self.pos != self.n:
            self.fail("invalid JSON: extra data after the event")
        return 0

    @cython.final
    cdef object record(self, dict attrs, dict groups):
        r = _RecordType.__new__(_RecordType)
        r._attrs = attrs
        r.raw = attrs
        r.groups = groups if groups else _NoGroups
        return r

    @cython.final
    cdef _Entry find(self, _Node node, Py_ssize_t start, Py_ssize_t end, bint escaped):
        cdef Py_ssize_t i, k = PyList_GET_SIZE(node.keys), n = end - start
        cdef object key
        if not escaped and k <= 8:
            if not node.firsts[self.s[start]]:  # no key starts so (n >= 1: keys are not empty)
                return None
            for i in range(k):
                key = <object>PyList_GET_ITEM(node.keys, i)
                if PyBytes_GET_SIZE(key) == n and _same(
                    <const unsigned char*>PyBytes_AS_STRING(key), self.s + start, n
                ):
                    return <_Entry>PyList_GET_ITEM(node.entries, i)
            return None
        return node.by_str.get(self.decode(start, end, escaped))

    @cython.final
    cdef int put(self, dict attrs, dict groups, str name, object v) except -1:
        """A member read whole: a scalar or a list of scalars here, the rest as Record.of
        builds it."""
        cdef object t = type(v)
        if t is list:
            for x in <list>v:
                if type(x) is list or type(x) is dict:
                    break
            else:
                attrs[name] = tuple(<list>v)
                return 0
        elif t is not dict:
            attrs[name] = v
            return 0
        r = _build_fn({name: v}, "", 1, None)
        attrs.update(r._attrs)
        groups.update(r.groups)
        return 0

    @cython.final
    cdef int sel_obj(self, _Node node, dict attrs, dict groups) except -1:
        """The object at self.pos, its members on the read paths into attrs and groups."""
        cdef unsigned char c
        cdef bint first = True, escaped
        cdef set seen = None
        cdef Py_ssize_t starts[SPANS]
        cdef Py_ssize_t lens[SPANS]
        cdef Py_ssize_t nspans = 0, start, end, j
        cdef _Entry e
        cdef str key
        cdef list elements
        self.enter()
        self.pos += 1
        while True:
            c = self.peek()
            if c == 125:  # }
                if not first:
                    self.fail("invalid JSON: expecting a key after ','")
                self.pos += 1
                break
            if c != 34:
                self.fail("invalid JSON: expecting a key in double quotes")
            first = False
            start = self.pos + 1
            end = self.string_end(&escaped)
            if end == start:
                self.pos = start
                self.fail("attribute names are non-empty strings, got ''")
            # duplicates (as obj's skipped objects: spans, then a set of the decoded keys)
            if not escaped and seen is None and nspans < SPANS:
                if _dotted(self.s + start, end - start):
                    self.dotted = True
                for j in range(nspans):
                    if lens[j] == end - start and _same(
                        self.s + starts[j], self.s + start, end - start
                    ):
                        self.pos = start
                        key = self.decode(start, end, False)
                        self.fail(f"duplicate key {key!r} in a JSON object of the event")
                starts[nspans] = start
                lens[nspans] = end - start
                nspans += 1
            else:
                key = self.decode(start, end, escaped)
                if "." in key:
                    self.dotted = True
                if seen is None:
                    seen = {self.decode(starts[j], starts[j] + lens[j], False) for j in range(nspans)}
                if key in seen:
                    self.pos = start
                    self.fail(f"duplicate key {key!r} in a JSON object of the event")
                seen.add(key)
            if self.peek() != 58:  # :
                self.fail("invalid JSON: expecting ':'")
            self.pos += 1
            e = self.find(node, start, end, escaped)
            if e is None:
                self.skip()
            elif e.mode == BUILD:
                self.put(attrs, groups, e.name, self.value(BUILD))
            else:
                c = self.peek()
                if c == 123:
                    self.sel_obj(e.child, attrs, groups)
                elif c == 91:
                    elements = []
                    self.sel_arr(e.child, elements)
                    if elements:
                        groups[e.name] = tuple(elements)
                else:
                    self.skip()
            c = self.peek()
            if c == 44:  # ,
                self.pos += 1
                if self.peek() == 125:
                    self.fail("invalid JSON: expecting a key after ','")
                continue
            if c == 125:
                self.pos += 1
                break
            self.fail("invalid JSON: expecting ',' or '}'")
        self.depth -= 1
        return 0

    @cython.final
    cdef int sel_arr(self, _Node node, list elements) except -1:
        """The array at self.pos below a read path: its objects (inside nested arrays
        too) as elements, its scalars checked and dropped (no filter reads the path
        itself)."""
        cdef unsigned char c
        cdef dict a, g
        self.enter()
        self.pos += 1
        if self.peek() == 93:  # ]
            self.pos += 1
            self.depth -= 1
            return 0
        while True:
            c = self.peek()
            if c == 123:
                a = {}
                g = {}
                self.sel_obj(node, a, g)
                elements.append(self.record(a, g))
            elif c == 91:
                self.sel_arr(node, elements)
            else:
                self.skip()
            c = self.peek()
            if c == 44:
                self.pos += 1
                continue
            if c == 93:
                self.pos += 1
                break
            self.fail("invalid JSON: expecting ',' or ']'")
        self.depth -= 1
        return 0


cdef _RecordScanner _scanner(const unsigned char* s, Py_ssize_t n, int max_depth, Py_ssize_t max_digits):
    global _RecordType, _NoGroups, _build_fn
    cdef _RecordScanner sc = _RecordScanner()
    if _RecordType is None:
        from pubsift.models.records.events import _NO_GROUPS, Record, _build

        _RecordType, _NoGroups, _build_fn = Record, _NO_GROUPS, _build
    sc.max_depth = max_depth
    sc.max_digits = max_digits
    sc.strict = True
    sc.start(s, n)
    return sc


def scan_record(bytes data, _Node selection, int max_depth, Py_ssize_t max_digits):
    """See the comment above compile_selection."""
    cdef dict attrs = {}, groups = {}
    cdef _RecordScanner sc = _scanner(
        <const unsigned char*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), max_depth, max_digits
    )
    sc.read(selection, attrs, groups)
    if sc.dotted:
        return None
    return sc.record(attrs, groups)


def match_text(object text, _Node selection, int max_depth, Py_ssize_t max_digits, object root):
    """``RecordsIndex.match(parse_wire(text))`` in one call where it can: ``text`` (bytes,
    or a str of ASCII characters only: its own bytes) read as scan_record reads it (the
    same refusals), then the flat event walked (``match``): the answer set; the event
    (a Record) where it has groups (arrays of objects: the caller matches it); None where
    ``text`` is of another kind or a key holds a "." (the caller's general path
    decides)."""
    cdef dict attrs = {}, groups = {}
    cdef const unsigned char* s
    cdef Py_ssize_t n
    if type(text) is bytes:
        s = <const unsigned char*>PyBytes_AS_STRING(text)
        n = PyBytes_GET_SIZE(text)
    elif type(text) is str and PyUnicode_IS_ASCII(text):
        s = <const unsigned char*>PyUnicode_DATA(text)
        n = PyUnicode_GET_LENGTH(text)
    else:
        return None
    cdef _RecordScanner sc = _scanner(s, n, max_depth, max_digits)
    sc.read(selection, attrs, groups)
    if sc.dotted:
        return None
    if groups:
        return sc.record(attrs, groups)
    return _match(root, attrs)


cdef extern from "Python.h":
    object PyByteArray_FromStringAndSize(const char* s, Py_ssize_t n)


def match_texts(object blob, list offsets, _Node selection, int max_depth, Py_ssize_t max_digits, object root, object match, bint ints=False):
    """The texts ``blob[offsets[i] - offsets[0]:offsets[i + 1] - offsets[0]]`` (``blob``:
    bytes, or any contiguous buffer, an Arrow array's data buffer say) one after
    the other as ``match_text`` answers them (an event with groups answered by
    ``match(event)``): (counts, keys), ``counts[i]`` keys of text i's answer one after
    the other in ``keys``, or -1 where text i is for the caller (refused by the scan, a
    dotted key: its general path decides, or raises). ``keys``: a list; with ``ints``
    (every key the index holds is an int of int64's range) a bytearray of the keys as
    native int64s, no Python list made (TypeError at a key of another kind)."""
    cdef list counts = [], keys = []
    cdef Py_buffer view
    cdef Py_ssize_t i, a, b, base, size, nk = 0, cap = 0
    cdef const unsigned char* s
    cdef dict attrs, groups = None
    cdef set found
    cdef long long* buf = NULL
    cdef long long* grown
    cdef int overflow = 0
    cdef _RecordScanner sc
    if len(offsets) < 1:
        raise ValueError("offsets: one more than the texts")
    base = offsets[0]
    PyObject_GetBuffer(blob, &view, PyBUF_SIMPLE)  # the bytes, whatever their format
    size = view.len
    s = <const unsigned char*>view.buf
    try:
        sc = _scanner(s, 0, max_depth, max_digits)
        for i in range(len(offsets) - 1):
            a = <Py_ssize_t>offsets[i] - base
            b = <Py_ssize_t>offsets[i + 1] - base
            if a < 0 or b < a or b > size:
                raise ValueError("offsets out of the blob")
            attrs = {}
            if groups is None or groups:  # an empty one is used again (most events have none)
                groups = {}
            sc.start(s + a, b - a)
            try:
                sc.read(selection, attrs, groups)
            except _EventError:
                counts.append(-1)
                continue
            if sc.dotted:
                counts.append(-1)
                continue
            found = match(sc.record(attrs, groups)) if groups else _match(root, attrs)
            counts.append(len(found))
            if not ints:
                keys.extend(found)
                continue
            if nk + len(found) > cap:
                cap = max(2 * cap, nk + len(found), 1024)
                grown = <long long*>PyMem_Realloc(buf, cap * sizeof(long long))
                if grown == NULL:
                    raise MemoryError()
                buf = grown
            for k in found:
                if type(k) is not int:
                    raise TypeError(f"a key that is not an int: {k!r}")
                buf[nk] = PyLong_AsLongLongAndOverflow(k, &overflow)
                if overflow:
                    raise TypeError(f"a key beyond int64: {k!r}")
                nk += 1
        if ints:
            return counts, PyByteArray_FromStringAndSize(<const char*>buf, nk * sizeof(long long))
        return counts, keys
    finally:
        PyMem_Free(buf)
        PyBuffer_Release(&view)
