"""Stage 1, the snapshot: a child process loads the library and reads what it registered into
typed, JSON-serialisable data (``snapshot.py``); the export readers (``binfmt/``) and the registry
facts the package generator and ``--stubs-for`` share (``facts.py``). Nothing above this stage
touches the library."""
