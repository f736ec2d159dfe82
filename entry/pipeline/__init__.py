"""The serial pipelines: one seed (single), many seeds as one batched run (seeds, seed_axis), SQIL, offline
training and the hyperparameter search; the kit they share is ``entry.kit``."""
