"""GLM-5 with its rollout data in the Mooncake store: miles' own hook starts the store's master
between `ray start` and the submission (it becomes launch.before_submit)."""

import _glm5
import miles.utils.external_utils.command_utils as U

if __name__ == "__main__":
    _glm5.prepare()
    _glm5.launch(before_ray_job_submit=U.start_mooncake_master)
