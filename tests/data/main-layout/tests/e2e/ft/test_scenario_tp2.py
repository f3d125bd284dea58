from tests.e2e.ft.conftest_ft.scenario_deterministic import run_ci

if __name__ == "__main__":
    run_ci("tp2")
