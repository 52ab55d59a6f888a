"""The ``xlinalg`` command's parts; ``xlinalg.cli`` is its entry point (``main``).

``_common``: exit statuses, one-line errors, the console; ``_parser``: the argument
parser and its argument types; ``_info``: ``xlinalg info``; ``_bench``: ``xlinalg
bench``; ``_table``: the bench's progress and end table. Only the standard library is
imported at module level: the libraries load when a command needs them.
"""
