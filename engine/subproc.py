"""Ending a worker process: terminate, then kill if it will not go."""


def stop(proc, grace_s: float = 2.0) -> None:
    if proc.is_alive():
        proc.terminate()
        proc.join(grace_s)
        if proc.is_alive():
            proc.kill()
