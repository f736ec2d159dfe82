"""The run kit every pipeline is made of (serial, many seeds, SQIL, offline, search, parallel, the tools): the run's
config input and what each pipeline supports, its parts, its steps, the start-up check against the env, torch's
threads, and its life cycle (progress, timing, resume points, closing)."""
