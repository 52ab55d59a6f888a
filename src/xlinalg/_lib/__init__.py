"""Internals of xlinalg. Nothing here is public API."""

__all__: list[str] = []
