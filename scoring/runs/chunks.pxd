# Cython declarations for chunks.py (read only when it is compiled; the .py stays the source).
# _Chunk as an extension type with typed column buffers: tabulating a row stores each value
# with a C assignment instead of building a tuple that is transposed and converted later.
# Engine as an extension type: scoring a row reads the Row's fields and the engine's settings
# as struct members, and calls _score and _Chunk.add as C functions.

cimport cython
from scoring.rollouts.rows cimport Row

cdef class _Chunk:
    cdef public object display, unit, layout, scorer, threshold
    cdef public Py_ssize_t n, capacity
    cdef public list errors, logged, texts, category_codes, categories, templates, extra_diagnostics
    cdef public object code_buffer, integer_buffer, missing_buffer, number_buffer, response_buffer
    cdef public object diagnostic_buffer
    cdef public bytearray kwargs_json
    # typed views of the buffers above, which the row writers store through
    cdef int[:, ::1] codes
    cdef long long[:, ::1] integers
    cdef unsigned char[:, ::1] missing
    cdef double[:, ::1] numbers, response_values, diagnostic_values

    @cython.locals(i=Py_ssize_t)
    cpdef add(self, Row row, object line, tuple result)

    @cython.locals(j=Py_ssize_t, values=tuple, keys=tuple, diagnostics=tuple, positions=dict)
    cpdef _store_flat(self, Py_ssize_t i, object evaluation)

    @cython.locals(column=Py_ssize_t)
    cdef _code_all(self, Py_ssize_t i, tuple values)

    @cython.locals(codes=dict, categories=list)
    cdef Py_ssize_t _code(self, Py_ssize_t column, object value) except -1

    @cython.locals(column=Py_ssize_t, texts=list)
    cdef _append_texts(self, tuple values)

    @cython.locals(column=Py_ssize_t)
    cdef _store_numbers(self, Py_ssize_t i, tuple values)


cdef class Engine:
    cdef public object options, resolver, instances, mode_override, half_life_override, simple_reward, truths
    cdef public dict readers, run_options, resolved
    cdef public bint simple, read_image_sizes
    cdef public double threshold

    cpdef tuple _score(self, Row row, object job, object line)
    cpdef _options_for(self, object mode, object half_life)
