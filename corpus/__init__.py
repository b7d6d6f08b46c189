"""An offline corpus of sites shaped like the web, recorded with `testbed record`.

See corpus/__main__.py for the command line and docs/recording-and-corpus.md, "The corpus".
"""
