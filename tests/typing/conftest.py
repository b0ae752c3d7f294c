# pass/ and fail/ are read by type checkers (tests/test_typing.py), never imported: fail/
# holds calls that raise.
collect_ignore = ["pass", "fail"]
