# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""``string-similarity``'s ``compareTwoStrings``, compiled: the Dice coefficient of two strings'
bigrams of UTF-16 code units, ECMAScript whitespace removed.

In Python the whitespace removal, the UTF-16 re-spelling and the bigram count each took a pass
of their own over every character (a dict per bigram for short strings, numpy sorts for long
ones). Here one pass per string re-spells it, and the shared bigrams are counted in a table
indexed by the two units' places in the texts' alphabet (a few dozen distinct units in most
texts, so a few thousand cells); texts of more than ``_MAX_ALPHABET`` distinct units have their
bigrams sorted and merged instead.
"""

from cpython.mem cimport PyMem_Calloc, PyMem_Free, PyMem_Malloc
from libc.stdint cimport int32_t, uint16_t, uint32_t
from libc.string cimport memcmp, memset

cdef enum:
    _NONE = 0xFFFF  # a code unit with no place in the alphabet
    _MAX_ALPHABET = 1024  # a table of at most 1024 × 1024 counts (4 MB)

# Each code unit's place in the alphabet of the texts being compared (_NONE: absent). Filled
# and emptied again by each call, which holds the GIL throughout.
cdef uint16_t _place[65536]
memset(_place, 0xFF, sizeof(_place))


cdef inline bint _js_whitespace(Py_UCS4 c) noexcept:
    """ECMAScript WhiteSpace and LineTerminator (what ``\\s`` matches)."""
    if c <= 0x20:
        return c == 0x20 or 0x09 <= c <= 0x0D
    if c < 0xA0:
        return False
    return (c == 0xA0 or c == 0x1680 or 0x2000 <= c <= 0x200A or c == 0x2028 or c == 0x2029
            or c == 0x202F or c == 0x205F or c == 0x3000 or c == 0xFEFF)


cdef Py_ssize_t _units(str text, uint16_t* out) noexcept:
    """Write the text's UTF-16 code units, whitespace left out, to ``out`` (room for twice the
    text's length); returns how many."""
    cdef Py_ssize_t count = 0
    cdef Py_UCS4 c
    cdef uint32_t code
    for c in text:
        if _js_whitespace(c):
            continue
        code = <uint32_t> c
        if code > 0xFFFF:  # an astral character: its surrogate pair
            code -= 0x10000
            out[count] = <uint16_t> (0xD800 + (code >> 10))
            out[count + 1] = <uint16_t> (0xDC00 + (code & 0x3FF))
            count += 2
        else:
            out[count] = <uint16_t> code
            count += 1
    return count


cdef void _sorted_bigrams(const uint16_t* units, Py_ssize_t count, uint32_t* out, uint32_t* spare) noexcept:
    """The ``count - 1`` bigrams of ``units`` as ``first << 16 | second``, sorted into ``out``
    (least significant digit radix sort: three passes of 11, 11 and 10 bits)."""
    cdef Py_ssize_t size = count - 1, i
    cdef Py_ssize_t[2048] buckets
    cdef Py_ssize_t total, held
    cdef int shift
    cdef uint32_t* source = out
    cdef uint32_t* target = spare
    cdef uint32_t* swap
    for i in range(size):
        out[i] = (<uint32_t> units[i] << 16) | units[i + 1]
    for shift in (0, 11, 22):
        memset(buckets, 0, sizeof(buckets))
        for i in range(size):
            buckets[(source[i] >> shift) & 0x7FF] += 1
        total = 0
        for i in range(2048):
            held = buckets[i]
            buckets[i] = total
            total += held
        for i in range(size):
            target[buckets[(source[i] >> shift) & 0x7FF]] = source[i]
            buckets[(source[i] >> shift) & 0x7FF] += 1
        swap = source
        source = target
        target = swap
    # Three passes leave the result in ``spare``: copy it back.
    for i in range(size):
        out[i] = source[i]


cdef Py_ssize_t _add_to_alphabet(const uint16_t* units, Py_ssize_t count, uint16_t* alphabet,
                                 Py_ssize_t size) noexcept:
    """Give each unit not placed yet the next place; the alphabet's new size, or one past
    ``_MAX_ALPHABET`` when it would grow beyond (``alphabet`` then holds the placed ones)."""
    cdef Py_ssize_t i
    for i in range(count):
        if _place[units[i]] == _NONE:
            if size >= _MAX_ALPHABET:
                return _MAX_ALPHABET + 1
            _place[units[i]] = <uint16_t> size
            alphabet[size] = units[i]
            size += 1
    return size


cdef Py_ssize_t _shared_by_alphabet(const uint16_t* first, Py_ssize_t first_count, const uint16_t* second,
                                    Py_ssize_t second_count) except -2:
    """The number of shared bigrams, counted in a table of the alphabet's size squared; -1 when
    the texts have more than ``_MAX_ALPHABET`` distinct code units."""
    cdef uint16_t[_MAX_ALPHABET] alphabet
    cdef Py_ssize_t size = 0, i, shared = 0
    cdef int32_t* counts = NULL
    cdef int32_t held
    try:
        size = _add_to_alphabet(first, first_count, alphabet, 0)
        if size <= _MAX_ALPHABET:
            size = _add_to_alphabet(second, second_count, alphabet, size)
        if size > _MAX_ALPHABET:
            return -1
        counts = <int32_t*> PyMem_Calloc(size * size, sizeof(int32_t))
        if counts == NULL:
            raise MemoryError()
        for i in range(first_count - 1):
            counts[_place[first[i]] * size + _place[first[i + 1]]] += 1
        # Each bigram of the second string takes one left of the first (string-similarity's
        # greedy count): the size of the multisets' intersection. Without branches, which the
        # processor would mispredict.
        for i in range(second_count - 1):
            held = counts[_place[second[i]] * size + _place[second[i + 1]]]
            shared += held > 0
            counts[_place[second[i]] * size + _place[second[i + 1]]] = held - (held > 0)
        return shared
    finally:
        for i in range(size if size <= _MAX_ALPHABET else _MAX_ALPHABET):
            _place[alphabet[i]] = _NONE
        PyMem_Free(counts)


def compare_two_strings(str first, str second) -> float:
    """Dice coefficient of character bigrams, whitespace ignored, lengths in UTF-16 code units."""
    cdef Py_ssize_t first_count, second_count, i = 0, j = 0, shared = 0
    cdef uint32_t left, right
    cdef uint16_t* first_units = <uint16_t*> PyMem_Malloc((2 * len(first) + 1) * sizeof(uint16_t))
    cdef uint16_t* second_units = <uint16_t*> PyMem_Malloc((2 * len(second) + 1) * sizeof(uint16_t))
    cdef uint32_t* first_bigrams = NULL
    cdef uint32_t* second_bigrams = NULL
    cdef uint32_t* spare = NULL
    try:
        if first_units == NULL or second_units == NULL:
            raise MemoryError()
        first_count, second_count = _units(first, first_units), _units(second, second_units)
        if first_count == second_count and memcmp(first_units, second_units, first_count * sizeof(uint16_t)) == 0:
            return 1.0
        if first_count < 2 or second_count < 2:
            return 0.0
        shared = _shared_by_alphabet(first_units, first_count, second_units, second_count)
        if shared >= 0:
            return 2.0 * shared / (first_count + second_count - 2)
        shared = 0
        first_bigrams = <uint32_t*> PyMem_Malloc(first_count * sizeof(uint32_t))
        second_bigrams = <uint32_t*> PyMem_Malloc(second_count * sizeof(uint32_t))
        spare = <uint32_t*> PyMem_Malloc(max(first_count, second_count) * sizeof(uint32_t))
        if first_bigrams == NULL or second_bigrams == NULL or spare == NULL:
            raise MemoryError()
        _sorted_bigrams(first_units, first_count, first_bigrams, spare)
        _sorted_bigrams(second_units, second_count, second_bigrams, spare)
        # Each bigram of the second string takes one left of the first (string-similarity's
        # greedy count): the size of the multisets' intersection, by one merge of the sorted
        # bigrams, written without branches (which the processor would mispredict).
        while i < first_count - 1 and j < second_count - 1:
            left, right = first_bigrams[i], second_bigrams[j]
            shared += left == right
            i += left <= right
            j += left >= right
        return 2.0 * shared / (first_count + second_count - 2)
    finally:
        PyMem_Free(first_units)
        PyMem_Free(second_units)
        PyMem_Free(first_bigrams)
        PyMem_Free(second_bigrams)
        PyMem_Free(spare)
