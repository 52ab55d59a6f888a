"""Internals of xlinalg, the ground floor: the standard library and NumPy only.

Nothing here imports another part of xlinalg (``tests/architecture/test_layers.py``); what a
function needs from above is passed in. Nothing here is public API.
"""

__all__: list[str] = []
