from tests.e2e.own._launch import launch


def _passed():
    with open("/tmp/own-dumps/passed") as f:
        return f.read() == "yes"


def execute():
    launch()
    assert _passed(), "the run did not pass"


if __name__ == "__main__":
    execute()
