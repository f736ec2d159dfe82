"""Policies: the Policy base class and the registered SAC family."""
