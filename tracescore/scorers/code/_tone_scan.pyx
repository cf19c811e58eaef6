# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The per-token loops of the tone scorer, compiled (``tone.py`` says what they compute).

In Python each token costs tens of interpreter steps, which made VADER's sentiment of a
10,000-character text several times slower than Mastra's whole AFINN scorer under V8; here a
token costs a dictionary look-up and a few array reads. What is rare or intricate stays in
Python: classifying a token the first time it is seen (``tone._TokenTable``), texts whose emoji
descriptions hold terminators, and VADER's full rules for the lexicon words that a rule word
other than a plain negation acts on (the ``full_valence`` callback).
"""

from cpython.dict cimport PyDict_GetItem
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyObject

import numpy as np

# What a token is to VADER: bit flags of the token table.
cdef enum:
    _LEXICON = 1  # a lexicon word VADER scores (its valence is in the table)
    _RULE = 2  # acts on the lexicon words from its reach before it to 3 tokens after it
    _PLAIN = 4  # a rule word that is a plain negation: only VADER's negation check can follow from it
    _REACH_2 = 8  # a rule word whose reach is 2 tokens before it (an idiom's word), else 0
    _BUT = 16
    _ENDER = 32  # ends in a terminator: the group it is in ends with it
    _EXPAND = 64  # holds an emoji or a piece end: VADER reads other tokens (its parts) there
    _EMOJI_TERMINATOR = 128  # holds an emoji with a terminator in its description
    _UPPER = 256  # str.isupper: one of VADER's capitals

# The same flags for tone.py, which classifies the tokens.
LEXICON, RULE, PLAIN, REACH_2, BUT = _LEXICON, _RULE, _PLAIN, _REACH_2, _BUT
ENDER, EXPAND, EMOJI_TERMINATOR, UPPER = _ENDER, _EXPAND, _EMOJI_TERMINATOR, _UPPER

# Marks of lexicon words that rule words act on.
cdef enum:
    _ACTED_ON = 1  # a rule word other than a plain negation
    _NEGATED = 2  # a plain negation within its reach


cdef void* _allocate(Py_ssize_t count, size_t size) except NULL:
    cdef void* memory = PyMem_Malloc((count if count > 0 else 1) * size)
    if memory == NULL:
        raise MemoryError()
    return memory


def token_ids(list tokens, dict ids, const unsigned short[::1] flags_of, const Py_ssize_t[::1] part_start,
              const Py_ssize_t[::1] part_count, const Py_ssize_t[::1] parts, unsigned short expand):
    """The ids of the tokens VADER reads, and the OR of the tokens' flags, or ``(None, i)`` when
    ``tokens[i]`` is not in ``ids``. A token whose flags have ``expand`` stands for its parts,
    ``parts[part_start[id] : part_start[id] + part_count[id]]``.

    The arrays are read after ``ids`` was, so another thread may have added tokens to the
    table in between: a token whose id or parts lie beyond the arrays given counts as unknown
    too, and the caller asks again with the lock that adding tokens takes. During this call
    the GIL is held, so nothing changes.
    """
    cdef Py_ssize_t count = len(tokens), total = 0, i, k, at, j = 0
    cdef PyObject* found
    cdef unsigned short combined = 0
    cdef Py_ssize_t* found_ids = <Py_ssize_t*> _allocate(count, sizeof(Py_ssize_t))
    cdef Py_ssize_t[::1] out
    try:
        for i in range(count):
            found = PyDict_GetItem(ids, tokens[i])
            if found == NULL:
                return None, i
            at = found_ids[i] = <object> found
            if at >= flags_of.shape[0] or at >= part_count.shape[0] or (
                flags_of[at] & expand and part_start[at] + part_count[at] > parts.shape[0]
            ):
                return None, i
            combined |= flags_of[at]
            total += part_count[at] if flags_of[at] & expand else 1
        result = np.empty(total, dtype=np.intp)
        out = result
        for i in range(count):
            at = found_ids[i]
            if flags_of[at] & expand:
                for k in range(part_start[at], part_start[at] + part_count[at]):
                    out[j] = parts[k]
                    j += 1
            else:
                out[j] = at
                j += 1
        return result, combined
    finally:
        PyMem_Free(found_ids)


def group_scores(const Py_ssize_t[::1] ids, const unsigned short[::1] flags_of, const double[::1] valence_of,
                 list stops, object full_valence, double negation_scalar):
    """Σ valences and token count of each group of the tokens ``ids``: ``(totals, sizes)``.

    Groups end where ``stops`` says (exclusive ends), or, when it is None, after each token
    ending in a terminator and at the end. A lexicon word's valence is its table value, unless
    rule words act on it: ``full_valence(i, start, stop)`` when one other than a plain negation
    does, else × ``negation_scalar`` for each plain negation among the 3 tokens before it in
    its group. Then the "but" rule, then the sums, left to right from 0.0.
    """
    cdef Py_ssize_t count = ids.shape[0], groups, i, j, k, low, high, start, stop, first_but
    cdef unsigned short flags
    cdef unsigned char mark
    cdef double valence
    cdef unsigned short* token_flags = <unsigned short*> _allocate(count, sizeof(unsigned short))
    cdef double* valences = <double*> _allocate(count, sizeof(double))
    cdef unsigned char* marks = <unsigned char*> _allocate(count, sizeof(unsigned char))
    cdef Py_ssize_t* ends = <Py_ssize_t*> _allocate(max(count, 0 if stops is None else len(stops)) + 1, sizeof(Py_ssize_t))
    cdef unsigned short any_flags = 0
    try:
        for i in range(count):
            token_flags[i] = flags = flags_of[ids[i]]
            valences[i] = valence_of[ids[i]]
            marks[i] = 0
            any_flags |= flags
        groups = 0
        if stops is None:
            for i in range(count):
                if token_flags[i] & _ENDER:
                    ends[groups] = i + 1
                    groups += 1
            ends[groups] = count
            groups += 1
        else:
            for stop in stops:
                ends[groups] = stop
                groups += 1
        if any_flags & _RULE:
            for i in range(count):
                flags = token_flags[i]
                if flags & _RULE:
                    low = i - 2 if flags & _REACH_2 else i
                    high = i + 4 if i + 4 < count else count
                    for j in range(low if low > 0 else 0, high):
                        if token_flags[j] & _LEXICON:
                            marks[j] |= _NEGATED if flags & _PLAIN else _ACTED_ON
            start = 0
            k = 0
            for i in range(count):
                while i >= ends[k] and k < groups - 1:  # the group of token i
                    start = ends[k]
                    k += 1
                mark = marks[i]
                if mark & _ACTED_ON:
                    valences[i] = full_valence(i, start, ends[k])
                elif mark & _NEGATED:
                    valence = valences[i]
                    for j in range(i - 1, (i - 3 if i - 3 > start else start) - 1, -1):
                        if token_flags[j] & _PLAIN:
                            valence = valence * negation_scalar
                    valences[i] = valence
        if any_flags & _BUT:
            start = 0
            for k in range(groups):
                stop = ends[k]
                first_but = -1
                for i in range(start, stop):
                    if token_flags[i] & _BUT:
                        first_but = i
                        break
                if first_but >= 0:
                    for i in range(start, first_but):
                        valences[i] = valences[i] * 0.5
                    for i in range(first_but + 1, stop):
                        valences[i] = valences[i] * 1.5
                start = stop
        totals, sizes = [], []
        start = 0
        for k in range(groups):
            valence = 0.0
            for i in range(start, ends[k]):
                valence = valence + valences[i]
            totals.append(valence)
            sizes.append(ends[k] - start)
            start = ends[k]
        return totals, sizes
    finally:
        PyMem_Free(token_flags)
        PyMem_Free(valences)
        PyMem_Free(marks)
        PyMem_Free(ends)
