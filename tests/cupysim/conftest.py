"""The simulator's packages are not test modules; its own tests run under --cupy=sim only."""

collect_ignore = ["cupy", "cupyx", "cupysim"]
