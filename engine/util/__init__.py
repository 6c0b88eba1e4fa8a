"""Infrastructure every stage uses: errors, the cache folder, output paths, child processes and
their logs, signals, faults of the environment, CPU counts and the machine's load."""
