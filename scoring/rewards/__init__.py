"""The simple scorers (exact_match, contains, last_number, numeric_close): a drop-in for ``agentdescent.rewards``.

``scoring.rewards`` is the import path the simple-rewards spec names; the scorers live in
:mod:`.simple`, the number grammar in :mod:`.number_reading`, shared text helpers in :mod:`.text`.
May import: ``verifier`` (its solved threshold, so there is one).
"""

# The drop-in's names are exactly ``simple.__all__``: one list, kept beside the scorers.
from .simple import *  # noqa: F403
from .simple import __all__  # noqa: F401
