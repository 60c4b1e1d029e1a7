"""The ``lmleak`` command line: a thin layer that parses options, calls one library function and
writes results. Each area registers its commands from its own module (see :mod:`lmleak.cli.main`)."""
