# Cython declarations for hashing.py (read only when it is compiled; the .py stays the source).
# The hash's arithmetic in unsigned 64-bit C integers (the .py cuts each product to 64 bits to
# match), and the array's buffers read as typed memoryviews: a C loop over each value's bytes.

cimport cython

cdef unsigned long long _MULTIPLIER, _SEED, _MASK
cdef int _SHIFT

cdef unsigned long long _mixed(unsigned long long word)

@cython.locals(i=Py_ssize_t, start=Py_ssize_t, end=Py_ssize_t, k=Py_ssize_t, j=Py_ssize_t,
               h="unsigned long long", word="unsigned long long")
cpdef _hash_spans(const long long[::1] offsets, const unsigned char[::1] data, unsigned long long[::1] out)
