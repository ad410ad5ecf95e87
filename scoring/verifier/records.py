"""Building the scorer's NamedTuple records cheaply on the per-response hot path.

``Record(a, b)`` runs the Python-level ``__new__`` that ``typing.NamedTuple``
generates; ``new_record(Record, (a, b))`` calls ``tuple.__new__`` directly and
skips that frame, about half the cost. Every field must be given, in order (no
defaults), so use it only where a profile shows the construction matters.
"""

new_record = tuple.__new__

__all__ = ["new_record"]
