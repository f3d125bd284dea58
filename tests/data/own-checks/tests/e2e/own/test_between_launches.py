from tests.e2e.own._launch import launch


def _note_step():
    print("step 2 saved")


def execute():
    launch(" --save /tmp/own-ckpt")
    _note_step()
    launch(" --load /tmp/own-ckpt")


if __name__ == "__main__":
    execute()
