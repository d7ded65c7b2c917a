# cython: language_level=3, boundscheck=False, wraparound=False
"""The walk of the records index's compiled plans, compiled (Cython).

The same walk as :func:`pubsift.models.records.plans.walk`, over the same plans: each
part of a plan that :mod:`~pubsift.models.records.plans` built with a ``spec`` (hashed
values, the string memo, one-sided runs, region tables, gathered segment-tree paths, a
bucket for any value, the residual tests, of which anything-but is run here itself) is
run here by a typed method, with no Python call per part; the other parts (prefixes,
suffixes, the other residual tests) stay Python closures called from here, and so does
everything about a node without a compiled plan (``step``) and values of other kinds than
strings and numbers (``probe``; for null, true and false once per plan, their answer kept
in the plan's entry). Answers are those of the Python walk:
``tests/records/test_plans.py`` runs every script both ways. ``_scan.pxi`` (included
below) is the selective scan of event texts (docs/records-syntax.md §5); ``match_text``
and ``match_texts`` read a text and walk its event in one call. The module is optional:
without it (no compiler at install time, or ``PUBSIFT_PURE_PYTHON=1``) the index walks in
Python.
"""

from cpython.dict cimport PyDict_GetItem
from cpython.list cimport PyList_Append, PyList_GET_ITEM, PyList_GET_SIZE
from cpython.number cimport PyNumber_InPlaceOr
from cpython.set cimport PySet_Add
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.object cimport PyObject, PyObject_RichCompareBool, Py_EQ, Py_LT
from cpython.dict cimport PyDict_Next

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_Tailmatch(object s, object sub, Py_ssize_t start, Py_ssize_t end, int direction) except -1
    Py_ssize_t PyUnicode_Find(object s, object sub, Py_ssize_t start, Py_ssize_t end, int direction) except -2
    Py_ssize_t PyUnicode_GET_LENGTH(object s)

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define PUBSIFT_PREFETCH(p) __builtin_prefetch(p)
    #else
    #define PUBSIFT_PREFETCH(p) ((void)(p))
    #endif
    """
    void PUBSIFT_PREFETCH(const void* p) nogil  # a no-op where the compiler has none

#: The layout of the plans' specs this module reads (plans.SPEC must be equal).
SPEC = 4

cdef object _step = None
cdef object _probe = None


def setup(step, probe):
    """``step(node, attrs, found, queue)``: one node in Python (no compiled plan);
    ``probe(ai, v, found, queue)``: a value of another kind through its attribute index
    (``found``: the answer set, ``queue``: the nodes to walk)."""
    global _step, _probe
    _step = step
    _probe = probe


cdef inline Py_ssize_t _left(list a, object x) except -1:
    """bisect_left (Python comparisons: exact across ints and floats)."""
    cdef Py_ssize_t lo = 0, hi = PyList_GET_SIZE(a), mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if PyObject_RichCompareBool(<object>PyList_GET_ITEM(a, mid), x, Py_LT):
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline Py_ssize_t _right(list a, object x) except -1:
    """bisect_right."""
    cdef Py_ssize_t lo = 0, hi = PyList_GET_SIZE(a), mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if PyObject_RichCompareBool(x, <object>PyList_GET_ITEM(a, mid), Py_LT):
            hi = mid
        else:
            lo = mid + 1
    return lo


#: Integers of at most this magnitude are exact as doubles.
cdef long long _EXACT = 9007199254740992  # 2 ** 53


cdef class Sorted:
    """Sorted bounds for bisect: compared as C doubles (one contiguous array, no pointer
    chase per comparison) when every bound and the value are floats or integers exact as
    doubles, where double comparisons are Python's; else with Python comparisons."""
    cdef list objs
    cdef double* d
    cdef Py_ssize_t n

    def __cinit__(self, list objs):
        self.objs = objs
        self.n = len(objs)
        self.d = NULL
        cdef Py_ssize_t i
        cdef double x
        for b in objs:
            if type(b) is not float and not (type(b) is int and -_EXACT <= b <= _EXACT):
                return
        self.d = <double*>PyMem_Malloc(max(self.n, 1) * sizeof(double))
        if self.d == NULL:
            raise MemoryError()
        for i in range(self.n):
            self.d[i] = <double>objs[i]

    def __dealloc__(self):
        PyMem_Free(self.d)

    cdef inline bint as_double(self, object v, double* out):
        """v as a double when the array may be used for it."""
        cdef long long iv
        cdef int overflow = 0
        if self.d == NULL:
            return False
        if type(v) is float:
            out[0] = PyFloat_AS_DOUBLE(v)
            return True
        iv = PyLong_AsLongLongAndOverflow(v, &overflow)
        if overflow or iv > _EXACT or iv < -_EXACT:
            return False
        out[0] = <double>iv
        return True

    cdef Py_ssize_t left(self, object v) except -1:
        """bisect_left."""
        cdef double x
        cdef Py_ssize_t lo = 0, hi = self.n, mid
        if self.as_double(v, &x):
            while lo < hi:
                mid = (lo + hi) >> 1
                if self.d[mid] < x:
                    lo = mid + 1
                else:
                    hi = mid
            return lo
        return _left(self.objs, v)

    cdef Py_ssize_t right(self, object v) except -1:
        """bisect_right."""
        cdef double x
        cdef Py_ssize_t lo = 0, hi = self.n, mid
        if self.as_double(v, &x):
            while lo < hi:
                mid = (lo + hi) >> 1
                if x < self.d[mid]:
                    hi = mid
                else:
                    lo = mid + 1
            return lo
        return _right(self.objs, v)

    cdef Py_ssize_t region(self, object v) except -1:
        """The elementary region of v: 2i + 1 if v equals the i-th point, else 2i with i
        the number of points below v."""
        cdef double x
        cdef Py_ssize_t i
        if self.as_double(v, &x):
            i = self.left(v)
            return 2 * i + 1 if i < self.n and self.d[i] == x else 2 * i
        i = _left(self.objs, v)
        # ``==`` as plans.py compares (RichCompareBool would take an object as equal to
        # itself, a NaN too)
        if i < self.n and (<object>PyList_GET_ITEM(self.objs, i)) == v:
            return 2 * i + 1
        return 2 * i


cdef inline int _keys(set found, object keys) except -1:
    """A key set (a tuple of a few keys, else a frozenset) into the answer: a frozenset
    is merged table to table with its stored hashes, a tuple key by key; no bound method
    and no iterator is made."""
    cdef Py_ssize_t i
    if type(keys) is tuple:
        for i in range(PyTuple_GET_SIZE(keys)):
            PySet_Add(found, <object>PyTuple_GET_ITEM(keys, i))
    elif type(keys) is frozenset:
        PyNumber_InPlaceOr(found, keys)
    else:
        found.update(keys)
    return 0


cdef inline int _span(set found, list keys, Py_ssize_t lo, Py_ssize_t hi) except -1:
    """keys[lo:hi] into the answer, with no slice made."""
    cdef Py_ssize_t i
    for i in range(lo, hi):
        PySet_Add(found, <object>PyList_GET_ITEM(keys, i))
    return 0


cdef inline int _queue(list queue, list nodes, Py_ssize_t lo, Py_ssize_t hi) except -1:
    """nodes[lo:hi] queued, with no slice made."""
    cdef Py_ssize_t i
    for i in range(lo, hi):
        PyList_Append(queue, <object>PyList_GET_ITEM(nodes, i))
    return 0


cdef inline int _give(tuple r, set found, list queue) except -1:
    """A folded bucket (keys, inner): its keys to the answer, its inner nodes queued."""
    _keys(found, <object>PyTuple_GET_ITEM(r, 0))
    inner = <object>PyTuple_GET_ITEM(r, 1)
    if inner:
        queue.extend(inner)
    return 0


cdef class Part:
    cdef int run(self, object v, set found, list queue) except -1:
        return 0


cdef class Closure(Part):
    """A part without a spec: its Python closure."""
    cdef object fn

    def __init__(self, fn):
        self.fn = fn

    cdef int run(self, object v, set found, list queue) except -1:
        self.fn(v, found.update, queue.extend)
        return 0


cdef class Hashed(Part):
    cdef dict table

    def __init__(self, dict table):
        self.table = table

    cdef int run(self, object v, set found, list queue) except -1:
        cdef PyObject* r = PyDict_GetItem(self.table, v)
        cdef tuple t
        if r != NULL:
            t = <tuple>r  # owned: the keys' __hash__ may run Python code
            _give(t, found, queue)
        return 0


cdef class Memo(Part):
    """The string memo: a hit here, a miss answered by the parts' compiled forms (as the
    Python part answers it: the folded keys and inner nodes of all parts, remembered, the
    memo emptied when it holds ``size`` strings)."""
    cdef dict memo
    cdef tuple parts
    cdef Py_ssize_t set_from, size

    def __init__(self, dict memo, tuple parts, Py_ssize_t size, Py_ssize_t set_from):
        self.memo = memo
        self.parts = tuple([_part(p) for p in parts])
        self.set_from = set_from  # plans.SET_FROM when the plan was made (key_set's test)
        self.size = size

    cdef int run(self, object v, set found, list queue) except -1:
        cdef PyObject* r = PyDict_GetItem(self.memo, v)
        cdef tuple t
        cdef set keys
        cdef list inner
        cdef Part p
        if r != NULL:
            # owned: the keys' __hash__ may run Python code that empties the memo (a
            # match from inside it), which would free a borrowed bucket
            t = <tuple>r
        else:
            keys = set()
            inner = []
            for p in self.parts:
                p.run(v, keys, inner)
            if len(self.memo) >= self.size:
                self.memo.clear()
            # plans.key_set, without the call: a frozenset from SET_FROM keys on
            t = (frozenset(keys) if len(keys) >= self.set_from else tuple(keys), tuple(inner))
            self.memo[v] = t
        _give(t, found, queue)
        return 0


cdef enum:
    # compiled.py's string tests of an anything-but (compiled.PREFIX, ...)
    T_PREFIX = 0
    T_SUFFIX = 1
    T_EQ_FOLDED = 2
    T_PREFIX_FOLDED = 3
    T_SUFFIX_FOLDED = 4
    T_GLOB = 5


cdef bint _glob(str s, tuple parts) except -1:
    """regular.glob_matcher: the first part a prefix, the last a suffix, the middle ones
    in order between them (leftmost occurrences)."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(s), least = 0, at, end, i, k
    cdef Py_ssize_t np = PyTuple_GET_SIZE(parts)
    cdef object head = <object>PyTuple_GET_ITEM(parts, 0)
    cdef object tail = <object>PyTuple_GET_ITEM(parts, np - 1)
    cdef object m
    for k in range(np):
        least += PyUnicode_GET_LENGTH(<object>PyTuple_GET_ITEM(parts, k))
    if n < least:
        return False
    if not PyUnicode_Tailmatch(s, head, 0, n, -1) or not PyUnicode_Tailmatch(s, tail, 0, n, 1):
        return False
    at = PyUnicode_GET_LENGTH(head)
    end = n - PyUnicode_GET_LENGTH(tail)
    for k in range(1, np - 1):
        m = <object>PyTuple_GET_ITEM(parts, k)
        i = PyUnicode_Find(s, m, at, end, 1)
        if i < 0:
            return False
        at = i + PyUnicode_GET_LENGTH(m)
    return True


cdef class But:
    """compiled._anything_but's test from its spec: strings and numbers excluded by
    value, then the other members' string tests; a value of another kind (a list,
    ABSENT) through the Python test."""
    cdef frozenset strs, nums
    cdef tuple others
    cdef object fn

    def __init__(self, frozenset strs, frozenset nums, tuple others, fn):
        self.strs, self.nums, self.others, self.fn = strs, nums, others, fn

    cdef bint test(self, object v) except -1:
        cdef type t = type(v)
        cdef object folded = None, x
        cdef int kind
        cdef tuple o
        if t is str:
            if v in self.strs:
                return False
            for o in self.others:
                kind = <int>(<object>PyTuple_GET_ITEM(o, 0))
                x = <object>PyTuple_GET_ITEM(o, 1)
                if kind == T_PREFIX:
                    if PyUnicode_Tailmatch(v, x, 0, PyUnicode_GET_LENGTH(v), -1):
                        return False
                elif kind == T_SUFFIX:
                    if PyUnicode_Tailmatch(v, x, 0, PyUnicode_GET_LENGTH(v), 1):
                        return False
                elif kind == T_GLOB:
                    if _glob(<str>v, <tuple>x):
                        return False
                else:
                    if folded is None:
                        folded = (<str>v).casefold()
                    if kind == T_EQ_FOLDED:
                        if folded == x:
                            return False
                    elif kind == T_PREFIX_FOLDED:
                        if PyUnicode_Tailmatch(folded, x, 0, PyUnicode_GET_LENGTH(folded), -1):
                            return False
                    elif PyUnicode_Tailmatch(folded, x, 0, PyUnicode_GET_LENGTH(folded), 1):
                        return False
            return True
        if t is int or t is float:
            return v not in self.nums  # the other members test strings only
        if t is bool or v is None:
            return True
        return bool(self.fn(v))


cdef class Residual(Part):
    """plans._residual: each test that holds adds its folded bucket; an anything-but
    with a spec is tested here (But), any other test is its Python closure."""
    cdef tuple tests  # (test, folded, But or None)

    def __init__(self, tuple tests):
        out = []
        for test, r, spec in tests:
            b = None
            if spec is not None and spec[0] == "but":
                b = But(spec[1], spec[2], spec[3], test)
            out.append((test, r, b))
        self.tests = tuple(out)

    cdef int run(self, object v, set found, list queue) except -1:
        cdef tuple e
        cdef object b
        cdef bint ok
        for e in self.tests:
            b = <object>PyTuple_GET_ITEM(e, 2)
            if b is not None:
                ok = (<But>b).test(v)
            else:
                ok = bool((<object>PyTuple_GET_ITEM(e, 0))(v))
            if ok:
                _give(<tuple>PyTuple_GET_ITEM(e, 1), found, queue)
        return 0


cdef class Always(Part):
    cdef tuple r

    def __init__(self, tuple r):
        self.r = r

    cdef int run(self, object v, set found, list queue) except -1:
        _give(self.r, found, queue)
        return 0


cdef class Below(Part):
    """Lower bounds: the run items[:i]."""
    cdef Sorted bounds
    cdef list keys, koff, ioff, inner, heads
    cdef Py_ssize_t block
    cdef bint right

    def __init__(self, list bounds, list keys, list koff, list ioff, list inner, list heads,
                 Py_ssize_t block, bint right):
        self.bounds, self.keys, self.koff, self.ioff = Sorted(bounds), keys, koff, ioff
        self.inner, self.heads, self.block, self.right = inner, heads, block, right

    cdef int run(self, object v, set found, list queue) except -1:
        cdef Py_ssize_t i = self.bounds.right(v) if self.right else self.bounds.left(v)
        cdef Py_ssize_t k, b
        if i:
            k = self.koff[i]
            b = k // self.block
            if b:
                _keys(found, self.heads[b])
            _span(found, self.keys, b * self.block, k)
            _queue(queue, self.inner, 0, self.ioff[i])
        return 0


cdef class Above(Part):
    """Upper bounds: the run items[i:]."""
    cdef Sorted bounds
    cdef list keys, koff, ioff, inner, tails
    cdef Py_ssize_t block, nk, ni
    cdef bint right

    def __init__(self, list bounds, list keys, list koff, list ioff, list inner, list tails,
                 Py_ssize_t block, bint right):
        self.bounds, self.keys, self.koff, self.ioff = Sorted(bounds), keys, koff, ioff
        self.inner, self.tails, self.block, self.right = inner, tails, block, right
        self.nk = len(keys)
        self.ni = len(inner)

    cdef int run(self, object v, set found, list queue) except -1:
        cdef Py_ssize_t i = self.bounds.right(v) if self.right else self.bounds.left(v)
        cdef Py_ssize_t k = self.koff[i]
        cdef Py_ssize_t b = (k + self.block - 1) // self.block
        if b * self.block < self.nk:
            _span(found, self.keys, k, b * self.block)
            _keys(found, self.tails[b])
        else:
            _span(found, self.keys, k, self.nk)
        _queue(queue, self.inner, self.ioff[i], self.ni)
        return 0


cdef class Regions(Part):
    """Elementary regions of interval endpoints: one folded bucket (or None) each."""
    cdef Sorted points
    cdef list table

    def __init__(self, list points, list table):
        self.points, self.table = Sorted(points), table

    cdef int run(self, object v, set found, list queue) except -1:
        cdef object r = <object>PyList_GET_ITEM(self.table, self.points.region(v))
        if r is not None:
            _give(<tuple>r, found, queue)
        return 0


cdef class Paths(Part):
    """Regions of a segment tree: (key sets, inner nodes) gathered per region."""
    cdef Sorted points
    cdef list paths

    def __init__(self, list points, list paths):
        self.points, self.paths = Sorted(points), paths

    cdef int run(self, object v, set found, list queue) except -1:
        cdef object r = <object>PyList_GET_ITEM(self.paths, self.points.region(v))
        if r is not None:
            for keys in <tuple>((<tuple>r)[0]):
                _keys(found, keys)
            if (<tuple>r)[1]:
                queue.extend((<tuple>r)[1])
        return 0


cdef Part _part(object p):
    spec = getattr(p, "spec", None)
    if spec is None:
        return Closure(p)
    kind = spec[0]
    if kind == "hashed":
        return Hashed(spec[1])
    if kind == "memo":
        return Memo(spec[1], spec[2], spec[4], spec[5])  # (spec[3]: key_set, for Python)
    if kind == "residual":
        return Residual(spec[1])
    if kind == "always":
        return Always(spec[1])
    if kind == "below":
        return Below(*spec[1:])
    if kind == "above":
        return Above(*spec[1:])
    if kind == "regions":
        return Regions(spec[1], spec[2])
    if kind == "paths":
        return Paths(spec[1], spec[2])
    return Closure(p)


cdef class Entry:
    """One attribute of a node's plan."""
    cdef object name, absent, ai
    cdef tuple on_str, on_num
    # the folded answers of the attribute index for null, true and false, made on first
    # use (as the plan, a snapshot: a change below drops the plan and these with it)
    cdef tuple on_none, on_true, on_false

    def __init__(self, name, tuple on_str, tuple on_num, absent, ai):
        self.name = name
        self.on_str = tuple([_part(p) for p in on_str])
        self.on_num = tuple([_part(p) for p in on_num])
        self.absent = absent
        self.ai = ai
        self.on_none = self.on_true = self.on_false = None

    cdef tuple literal(self, object v):
        """The folded answer for the JSON literal ``v`` (None, True or False)."""
        cdef tuple r = self.on_none if v is None else self.on_true if v is True else self.on_false
        if r is None:
            r = _folded(self.ai.probe(v))
            if v is None:
                self.on_none = r
            elif v is True:
                self.on_true = r
            else:
                self.on_false = r
        return r


cdef tuple _folded(list buckets):
    """``plans.apply_items``'s keys and inner nodes of the buckets of a probe, as a folded
    bucket (keys, inner)."""
    cdef list keys = [], inner = []
    for bucket in buckets:
        for n in bucket:
            entry = n.entry
            if entry is not None:
                keys.extend(entry.keys)
            if n.children:
                inner.append(n)
    return (tuple(keys), tuple(inner))


def convert(tuple plan):
    """The compiled form of a node's plan (plans.NodePlan)."""
    return tuple([Entry(*e) for e in plan])


def match(object root, dict attrs):
    """The keys of every filter below and at ``root`` that the flat event ``attrs``
    satisfies: ``RecordsIndex.match`` (plans.walk, the answer built as it goes)."""
    return _match(root, attrs)


def match_elements(object root, dict base, object elements, set out):
    """``out |= match(root, {**base, **el._attrs})`` for each element ``el`` (records
    events without groups): the views of an event over one array of flat objects
    (``RecordsIndex._match_arrays``), each made and walked here."""
    cdef dict view
    for el in elements:
        view = base.copy()
        view.update(<dict>el._attrs)
        out |= _match(root, view)


def match_rows(object root, list names, list columns, list rows):
    """``[match(root, {names[j]: columns[j][r] for each j where it is not None}) for r
    in rows]``: the rows of a batch held as columns (``columns[j]``: a list of the values
    of attribute ``names[j]``, None where the row has none), each row's event made here
    as a dict and walked (``columnar.match_table``)."""
    cdef list out = []
    cdef Py_ssize_t r, n = _rows_of(names, columns)
    for r in rows:
        out.append(_match(root, _row(names, columns, n, r)))
    return out


def match_rows_flat(object root, list names, list columns, list rows):
    """``match_rows``'s answers as (counts, keys): ``counts[i]`` keys of row ``rows[i]``'s
    answer, one after the other in ``keys`` (``columnar.match_wire_batch``: no answer set
    outlives its row, so none is left for the cyclic collector to walk)."""
    cdef list counts = [], keys = []
    cdef Py_ssize_t r, n = _rows_of(names, columns)
    cdef set found
    for r in rows:
        found = _match(root, _row(names, columns, n, r))
        counts.append(len(found))
        keys.extend(found)
    return counts, keys


cdef Py_ssize_t _rows_of(list names, list columns) except -2:
    """The rows of the columns (checked: one list per name, all of one length)."""
    cdef Py_ssize_t n = -1
    if len(columns) != len(names):
        raise ValueError("one column per name")
    for col in columns:
        if type(col) is not list:
            raise TypeError("a column is a list")
        if n < 0:
            n = len(<list>col)
        elif len(<list>col) != n:
            raise ValueError("columns of one length")
    return n


cdef dict _row(list names, list columns, Py_ssize_t n, Py_ssize_t r):
    """Row r as a flat event: each column's value, where it is not None. Checked per row
    (a match runs Python code, a key's ``__hash__`` say, which could change the lists)."""
    cdef dict attrs = {}
    cdef Py_ssize_t j, nc = PyList_GET_SIZE(names)
    cdef object v, col
    if r < 0 or r >= n:
        raise IndexError(f"row {r} of {n}")
    if PyList_GET_SIZE(columns) != nc:
        raise ValueError("one column per name")
    for j in range(nc):
        col = <object>PyList_GET_ITEM(columns, j)
        if type(col) is not list or PyList_GET_SIZE(col) <= r:
            raise ValueError("the columns changed while their rows were matched")
        v = <object>PyList_GET_ITEM(col, r)
        if v is not None:
            attrs[<object>PyList_GET_ITEM(names, j)] = v
    return attrs


cdef set _match(object root, dict attrs):
    cdef set found = set()
    cdef Py_ssize_t pos = 0
    cdef PyObject* pk
    cdef PyObject* pval
    # the event's values are fetched into the cache together, before the walk reads
    # them one after the other (each a cache miss in a stream of events: +5-6% at 10k
    # quote subscriptions, A/B in one process, file and date order)
    while PyDict_Next(attrs, &pos, &pk, &pval):
        PUBSIFT_PREFETCH(pval)
    entry = root.entry
    if entry is not None:
        found.update(entry.keys)  # a dict (insertion order): its keys
    cdef list queue = [root]
    cdef Py_ssize_t qi = 0
    cdef object node, v, cplan
    cdef Entry e
    cdef Part p
    cdef PyObject* pv
    cdef type c
    cdef tuple r
    while qi < PyList_GET_SIZE(queue):
        node = <object>PyList_GET_ITEM(queue, qi)
        qi += 1
        cplan = node.cplan
        if cplan is None:
            _step(node, attrs, found, queue)
            continue
        for e in <tuple>cplan:
            pv = PyDict_GetItem(attrs, e.name)
            if pv == NULL:
                if e.absent is not None:
                    _give(<tuple>e.absent, found, queue)
                continue
            v = <object>pv
            c = type(v)
            if c is str:
                for p in e.on_str:
                    p.run(v, found, queue)
            elif c is float or c is int:
                for p in e.on_num:
                    p.run(v, found, queue)
            elif v is None or c is bool:  # the index's answer for it, made once per plan
                r = e.literal(v)
                _give(r, found, queue)
            else:
                _probe(e.ai, v, found, queue)
    return found


include "_scan.pxi"
