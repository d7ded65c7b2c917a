# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled cutter of batch frames (the wire-speed work: "the event's bytes travel
untouched"; DESIGN §2.6).

:func:`split` cuts the body of a ``pubs``, ``forwards`` or ``notifies`` frame
(docs/protocol.md §3.1, §3.2, §7) into its parts without building the events: the spans of
the top-level members other than ``pubs``, and for each ``[pub_id, event]`` pair of
``pubs`` the publisher, the sequence number, the event's bytes and the pair's bytes,
exactly as they came. Nothing here decides whether a part is valid JSON: every span is
read by orjson afterwards (:func:`pubsift.adapters.broker.frames.decode`), and the
structure between the spans — braces, brackets, colons, commas, whitespace — is checked
here byte for byte, so the frame is accepted exactly when orjson would accept the whole
body.

The common form only: ``split`` answers None for anything else and the caller reads the
body as it reads any frame (orjson, then each event written anew). That is a frame without
a top-level ``pubs`` member, or with two; a key with an escape; a ``pub_id`` that is not
``["publisher", n]`` with a publisher without escapes or control characters and ``n`` of
1-18 digits; an event (or a member other than ``pubs``) nested deeper than ``max_depth``;
a run of 19 or more digits outside a string (an integer
orjson may not read exactly); more than ``max_items`` pairs; an empty list; or anything
not well formed.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from libc.string cimport memcmp

cdef extern from "Python.h":
    object PyUnicode_DecodeUTF8(const char *s, Py_ssize_t size, const char *errors)
    object PyLong_FromLongLong(long long v)


cdef inline Py_ssize_t _ws(const unsigned char* s, Py_ssize_t i, Py_ssize_t n) noexcept:
    cdef unsigned char c
    while i < n:
        c = s[i]
        if c == 32 or c == 10 or c == 13 or c == 9:
            i += 1
        else:
            break
    return i


cdef inline Py_ssize_t _string_end(const unsigned char* s, Py_ssize_t i, Py_ssize_t n) noexcept:
    """At an opening quote: the offset past the closing quote (-1: unterminated)."""
    cdef unsigned char c
    i += 1
    while i < n:
        c = s[i]
        if c == 34:
            return i + 1
        if c == 92:
            i += 2
        else:
            i += 1
    return -1


cdef Py_ssize_t _value_end(
    const unsigned char* s, Py_ssize_t i, Py_ssize_t n, int max_depth
) noexcept:
    """The offset past the JSON value at ``i`` (found by nesting, strings and delimiters;
    its validity is orjson's to check), or -1: not the common form (see the module)."""
    cdef int depth = 0, run = 0
    cdef unsigned char c
    while i < n:
        c = s[i]
        if c == 34:
            i = _string_end(s, i, n)
            if i < 0:
                return -1
            run = 0
            if depth == 0:
                return i
            continue
        if c == 123 or c == 91:  # { [
            depth += 1
            if depth > max_depth:
                return -1
            run = 0
            i += 1
            continue
        if c == 125 or c == 93:  # } ]
            if depth == 0:
                return i  # the end of a scalar at the top (or nothing: orjson says)
            depth -= 1
            run = 0
            i += 1
            if depth == 0:
                return i
            continue
        if depth == 0 and (c == 44 or c == 32 or c == 10 or c == 13 or c == 9):
            return i  # the end of a scalar
        if 48 <= c <= 57:
            run += 1
            if run >= 19:
                return -1
        else:
            run = 0
        i += 1
    return i if depth == 0 else -1


cdef class _Names:
    """The last publisher decoded (a batch has one publisher, or a few): its bytes and
    its ``str``, so that a pair of the same publisher costs one comparison."""

    cdef bytes raw
    cdef object name

    cdef object get(self, const unsigned char* p, Py_ssize_t k):
        if self.raw is not None and PyBytes_GET_SIZE(self.raw) == k and memcmp(
            PyBytes_AS_STRING(self.raw), p, k
        ) == 0:
            return self.name
        self.raw = PyBytes_FromStringAndSize(<const char*>p, k)
        self.name = PyUnicode_DecodeUTF8(<const char*>p, k, "strict")
        return self.name


def split(bytes body, int max_depth, Py_ssize_t max_items):
    """(members, items) of a batch frame's body, or None (see the module): ``members`` a
    list of ``(key, start, end)`` spans of the top-level members other than ``pubs``,
    ``items`` a list of ``(publisher, n, event bytes, pair bytes)``."""
    cdef const unsigned char* s = <const unsigned char*>PyBytes_AS_STRING(body)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(body)
    cdef Py_ssize_t i, j, k, start, end, item_start, ev_start, digits
    cdef long long seq
    cdef unsigned char c
    cdef list members = []
    cdef list items = None
    cdef _Names names = _Names()
    i = _ws(s, 0, n)
    if i >= n or s[i] != 123:
        return None
    i = _ws(s, i + 1, n)
    while True:
        # a key, without escapes
        if i >= n or s[i] != 34:
            return None
        start = i + 1
        j = start
        while j < n and s[j] != 34:
            if s[j] == 92 or s[j] < 32:
                return None
            j += 1
        if j >= n:
            return None
        i = _ws(s, j + 1, n)
        if i >= n or s[i] != 58:  # :
            return None
        i = _ws(s, i + 1, n)
        if j - start == 4 and memcmp(s + start, b"pubs", 4) == 0:
            if items is not None or i >= n or s[i] != 91:
                return None
            items = []
            i = _ws(s, i + 1, n)
            while True:
                # [ ["publisher", n], event ]
                if len(items) >= max_items or i >= n or s[i] != 91:
                    return None
                item_start = i
                i = _ws(s, i + 1, n)
                if i >= n or s[i] != 91:
                    return None
                i = _ws(s, i + 1, n)
                if i >= n or s[i] != 34:
                    return None
                k = i + 1
                while k < n and s[k] != 34:
                    if s[k] == 92 or s[k] < 32:
                        return None
                    k += 1
                if k >= n:
                    return None
                try:
                    who = names.get(s + i + 1, k - i - 1)
                except UnicodeDecodeError:
                    return None
                i = _ws(s, k + 1, n)
                if i >= n or s[i] != 44:
                    return None
                i = _ws(s, i + 1, n)
                digits = 0
                seq = 0
                while i < n and 48 <= s[i] <= 57:
                    seq = seq * 10 + (s[i] - 48)
                    digits += 1
                    i += 1
                if digits == 0 or digits > 18 or (digits > 1 and s[i - digits] == 48):
                    return None
                i = _ws(s, i, n)
                if i >= n or s[i] != 93:
                    return None
                i = _ws(s, i + 1, n)
                if i >= n or s[i] != 44:
                    return None
                ev_start = i = _ws(s, i + 1, n)
                end = _value_end(s, i, n, max_depth)
                if end < 0 or end == ev_start:
                    return None
                i = _ws(s, end, n)
                if i >= n or s[i] != 93:
                    return None
                i += 1
                items.append((
                    who,
                    PyLong_FromLongLong(seq),
                    PyBytes_FromStringAndSize(<const char*>s + ev_start, end - ev_start),
                    PyBytes_FromStringAndSize(<const char*>s + item_start, i - item_start),
                ))
                i = _ws(s, i, n)
                if i >= n:
                    return None
                c = s[i]
                if c == 44:
                    i = _ws(s, i + 1, n)
                    continue
                if c == 93:
                    i += 1
                    break
                return None
        else:
            end = _value_end(s, i, n, max_depth)
            if end < 0 or end == i:
                return None
            try:
                key = PyUnicode_DecodeUTF8(<const char*>s + start, j - start, "strict")
            except UnicodeDecodeError:
                return None
            members.append((key, i, end))
            i = end
        i = _ws(s, i, n)
        if i >= n:
            return None
        c = s[i]
        if c == 44:
            i = _ws(s, i + 1, n)
            continue
        if c == 125:
            i += 1
            break
        return None
    if _ws(s, i, n) != n or items is None:
        return None
    return members, items
