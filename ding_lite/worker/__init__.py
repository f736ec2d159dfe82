"""Learner, collectors, evaluator and loggers."""
