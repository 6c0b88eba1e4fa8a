"""Building and timing kernels and plans, the one stage that does (between schedules/ and planner/):
build (a Relax module, an applied plan with its tuning records and the schedule rules, a module of
kernels), tuned_store (MetaSchedule's best schedules per kernel, read by every build), timing (a
kernel alone with cold caches, a plan's `main`, a plan's kernel calls in place) and batch (many
kernels compiled a chunk at a time and timed, for measured planning)."""
