"""Runs code of its own between `ray start` and the job submission."""

import _glm5

if __name__ == "__main__":
    _glm5.launch(before_ray_job_submit=lambda: print("workers joined"))
