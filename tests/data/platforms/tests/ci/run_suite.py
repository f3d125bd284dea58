"""The suites each backend runs (a marker for run-matrix's reader; nothing here runs)."""

CI_SUITES = {
    HWBackend.CUDA: ["stage-c-4-gpu-h200"],  # noqa: F821
    HWBackend.ROCM: [  # noqa: F821
        "stage-c-4-gpu-mi350",
        "nightly-stage-c-8-gpu-mi350",
    ],
}
