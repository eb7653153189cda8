"""Carrying out a plan: the executor, and the targets it runs actions against."""
