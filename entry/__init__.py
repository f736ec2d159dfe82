"""Pipelines and the command line."""
