# Cython declarations for rows.py (read only when it is compiled; the .py stays the source).
# Row as an extension type: the reader sets about twenty fields on every row, and on an
# extension type whose variable Cython knows to be a Row each is a store into the object
# instead of an attribute lookup through the type.

cdef class Row:
    cdef public object kind, response, prompt, answer_gt, annotation_gt, reward_contract
    cdef public object mode, image, image_bases, image_size, half_life, row_id, instance_id
    cdef public object task_id, step, run, sample_index, gold, meta, logged, warnings, joined
    cdef public object filter, metrics
