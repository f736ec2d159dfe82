"""The serial pipelines: one seed (single), many seeds as one batched run (seeds, seed_axis), SQIL, and what they
share: the run's config input, parts, steps, start-up check, threads and life cycle."""
