from tests.e2e.own._launch import launch


def _check(keep):
    assert keep("x")


def execute():
    launch()
    _check(keep=lambda name: True)


if __name__ == "__main__":
    execute()
