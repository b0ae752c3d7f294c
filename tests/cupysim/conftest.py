"""The simulator's packages are not test modules: never collect them (their names
would shadow the real ``cupy``)."""

collect_ignore = ["cupy", "cupyx", "cupysim"]
