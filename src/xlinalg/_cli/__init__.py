"""The ``xlinalg`` command's parts; ``xlinalg.cli`` is its entry point (``main``).

``_common``: the exit statuses (``ExitCode``), one-line errors, the console, the
study the commands compose with the harness; ``_parser``: the argument parser and
its argument types; ``_info``: ``xlinalg info``; ``_bench``: ``xlinalg bench``;
``_report``: ``xlinalg report``; ``_compare``: ``xlinalg compare``; ``_table``: the
bench's progress and end table. Only the standard library is
imported at module level: the libraries load when a command needs them.
"""
