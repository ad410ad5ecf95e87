# Cython declarations for truths.py (read only when it is compiled; the .py stays the source).
# The comparison recurses as a C function over typed positions: a Python-level call or an
# iterator object per node would cost as much as parsing the ground truth it saves.

cimport cython

@cython.locals(count=Py_ssize_t, position=Py_ssize_t)
cpdef bint same_plain_json(object a, object b, Py_ssize_t depth=*)
