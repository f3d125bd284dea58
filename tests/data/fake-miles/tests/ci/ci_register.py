"""Which CI suite runs a test (no effect outside CI)."""

SUITES: list[dict[str, object]] = []


def register_cuda_ci(**suite: object) -> None:
    SUITES.append(suite)
